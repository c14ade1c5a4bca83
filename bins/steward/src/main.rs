//! `steward`: the terminal client. Chat with streamed answers and inline approvals, and every
//! other resource as a command with `--json` for scripts. Errors are one line on standard error
//! with a non-zero exit: 1 for a command that could not be done, 2 for a command line that does
//! not parse, 3 and 4 for a chat run that failed or was cancelled, 130 after Ctrl-C.

mod chat;
mod commands;
mod connection;
mod render;
mod visible;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use uuid::Uuid;

#[derive(Parser)]
#[command(name = "steward", version = release::IDENTITY, about = "Talk to your Steward from the terminal")]
struct Cli {
    /// Print JSON (the API's own shapes) instead of text, for scripts.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Connect to a server: the token is read without echo (or from standard input) and kept in
    /// the OS credential store.
    Connect {
        /// The server's HTTPS address (plain HTTP only on this machine: 127.0.0.1, ::1, localhost).
        url: String,
    },
    /// Forget the connection: revoke this device's registration and clear the token.
    Forget,
    /// Chat: interactive, or one message with -m.
    Chat {
        /// The conversation to continue (an id from `steward sessions`).
        session: Option<Uuid>,
        /// Continue the latest conversation.
        #[arg(long = "continue", short = 'c', conflicts_with = "session")]
        resume: bool,
        /// Send this one message, print the answer and exit with the run's outcome.
        #[arg(short = 'm', long = "message")]
        message: Option<String>,
        /// The agent of a new conversation.
        #[arg(long, default_value = "default")]
        agent: String,
    },
    /// Conversations.
    Sessions {
        #[command(subcommand)]
        action: Option<commands::SessionsAction>,
    },
    /// Folders, and filing conversations into them.
    Folders {
        #[command(subcommand)]
        action: Option<commands::FoldersAction>,
    },
    /// Schedules and their occurrences.
    Schedules {
        #[command(subcommand)]
        action: Option<commands::SchedulesAction>,
    },
    /// Pending approvals, and deciding them.
    Approvals {
        #[command(subcommand)]
        action: Option<commands::ApprovalsAction>,
        /// The conversation (default: the latest one).
        #[arg(long, global = true)]
        session: Option<Uuid>,
    },
    /// Notifications not yet acknowledged.
    Notifications {
        #[command(subcommand)]
        action: Option<commands::NotificationsAction>,
    },
    /// Model settings.
    Settings {
        #[command(subcommand)]
        action: Option<commands::SettingsAction>,
    },
    /// Upload a file to a conversation.
    Upload {
        session: Uuid,
        file: PathBuf,
        /// Its media type (default: from the file name's extension).
        #[arg(long)]
        media_type: Option<String>,
    },
    /// Download an attachment.
    Download {
        session: Uuid,
        artifact: Uuid,
        /// Where to write it (default: its own name in the current directory; `-` for standard
        /// output).
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("steward: start: {error}");
            return ExitCode::FAILURE;
        }
    };
    let code = match runtime.block_on(run(cli)) {
        Ok(code) => code,
        Err(error) => {
            say!("steward: {}", one_line(&error));
            ExitCode::FAILURE
        }
    };
    // A read of standard input may still be blocked (Ctrl-C at the prompt): do not wait for it.
    runtime.shutdown_background();
    code
}

/// Writes a line to standard output, every control character in it made visible
/// ([`visible::visible`]); a closed pipe (`steward sessions | head -1`) ends the command quietly
/// instead of panicking as `println!` would.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let line = format!($($arg)*);
        let mut stdout = std::io::stdout().lock();
        if let Err(error) = writeln!(stdout, "{}", $crate::visible::visible(&line)) {
            if error.kind() == std::io::ErrorKind::BrokenPipe {
                std::process::exit(0);
            }
            return Err(anyhow::Error::new(error).context("write standard output"));
        }
    }};
}
pub(crate) use out;

/// Writes a line to standard error, every control character in it made visible.
macro_rules! say {
    () => {
        eprintln!()
    };
    ($($arg:tt)*) => {
        eprintln!("{}", $crate::visible::visible(&format!($($arg)*)))
    };
}
pub(crate) use say;

/// The error and its causes on one line.
pub(crate) fn one_line(error: &anyhow::Error) -> String {
    let mut text = error.to_string();
    for cause in error.chain().skip(1) {
        let cause = cause.to_string();
        if !text.contains(&cause) {
            text.push_str(": ");
            text.push_str(&cause);
        }
    }
    text.replace('\n', " ")
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let json = cli.json;
    match cli.command {
        Command::Connect { url } => commands::connect(&url, json).await,
        Command::Forget => commands::forget(json).await,
        command => {
            let client = commands::connected()?;
            match command {
                Command::Chat {
                    session,
                    resume,
                    message,
                    agent,
                } => {
                    let options = chat::Options {
                        session,
                        resume_latest: resume,
                        message,
                        agent,
                    };
                    chat::run(&client, options).await
                }
                Command::Sessions { action } => commands::sessions(&client, action, json).await,
                Command::Folders { action } => commands::folders(&client, action, json).await,
                Command::Schedules { action } => commands::schedules(&client, action, json).await,
                Command::Approvals { action, session } => commands::approvals(&client, action, session, json).await,
                Command::Notifications { action } => commands::notifications(&client, action, json).await,
                Command::Settings { action } => commands::settings(&client, action, json).await,
                Command::Upload {
                    session,
                    file,
                    media_type,
                } => commands::upload(&client, session, &file, media_type, json).await,
                Command::Download {
                    session,
                    artifact,
                    output,
                } => commands::download(&client, session, artifact, output, json).await,
                Command::Connect { .. } | Command::Forget => unreachable!("handled above"),
            }
        }
    }
}
