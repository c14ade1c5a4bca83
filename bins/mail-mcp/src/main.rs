//! `mail-mcp`: the mail integration's operator command, run on the owner's machine with a
//! browser on the same machine.
//!
//! Usage: `mail-mcp bootstrap --client-file <path> --output-directory <dir> [--account-id <id>]`
//! runs the three-consent ceremony of `mail_mcp::bootstrap` with this terminal: the disclosure
//! and progress go to standard error, the `CONTINUE` answer comes from standard input, and on
//! success standard output holds only one `path scope` line per document. Each consent's URL is
//! printed to standard error and handed to `xdg-open` (`open` on macOS) when there is one.
//! `MAIL_OAUTH_AUTHORIZE_URL` and `MAIL_OAUTH_TOKEN_URL` override the provider's endpoints; the
//! loopback ports are always 8765, 8766 and 8767.
//!
//! Exit status: 0 done, 1 refused or failed (one `mail-mcp: <message>` line), 2 usage error.

use std::path::PathBuf;
use std::process::{ExitCode, Stdio};
use std::time::Duration;

use mail_mcp::bootstrap::{self, Arguments, Browser, Config, Host, SystemClock};
use mail_mcp::document::MailScope;

const USAGE: &str =
    "usage: mail-mcp bootstrap --client-file <path> --output-directory <dir> [--account-id <account_id>]";

#[derive(Debug, PartialEq, Eq)]
enum Command {
    Help,
    /// The build's release identity.
    Version,
    Bootstrap(Arguments),
}

fn parse(args: impl IntoIterator<Item = String>) -> Result<Command, String> {
    let mut args = args.into_iter();
    match args.next().as_deref() {
        Some("bootstrap") => {}
        Some("-h" | "--help" | "help") => return Ok(Command::Help),
        Some("--version") => return Ok(Command::Version),
        Some(other) => return Err(format!("unknown command `{other}`; {USAGE}")),
        None => return Err(USAGE.into()),
    }
    let (mut client_file, mut output_directory, mut account_id) = (None, None, None);
    while let Some(argument) = args.next() {
        if matches!(argument.as_str(), "-h" | "--help") {
            return Ok(Command::Help);
        }
        // `--flag value` and `--flag=value` both, as the spec's Python command would take.
        let (flag, inline) = match argument.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag.to_owned(), Some(value.to_owned())),
            _ => (argument, None),
        };
        let slot = match flag.as_str() {
            "--client-file" => &mut client_file,
            "--output-directory" => &mut output_directory,
            "--account-id" => &mut account_id,
            other => return Err(format!("unknown argument `{other}`; {USAGE}")),
        };
        let value = inline
            .or_else(|| args.next())
            .filter(|value| !value.is_empty())
            .ok_or(format!("{flag} needs a value; {USAGE}"))?;
        if slot.replace(value).is_some() {
            return Err(format!("{flag} given twice; {USAGE}"));
        }
    }
    let required = |value: Option<String>, flag: &str| value.ok_or(format!("{flag} is required; {USAGE}"));
    Ok(Command::Bootstrap(Arguments {
        client_file: PathBuf::from(required(client_file, "--client-file")?),
        output_directory: PathBuf::from(required(output_directory, "--output-directory")?),
        account_id,
    }))
}

/// Shows each consent's URL on the terminal and offers it to the desktop's URL opener.
struct TerminalBrowser;

impl Browser for TerminalBrowser {
    fn open(&mut self, scope: MailScope, url: &str) {
        let name = match scope {
            MailScope::Read => "read",
            MailScope::Write => "write",
            MailScope::Send => "send",
        };
        eprintln!("Open this address in a browser on this machine to give the {name} consent:\n\n  {url}\n");
        let opener = if cfg!(target_os = "macos") { "open" } else { "xdg-open" };
        // Best effort: without an opener (or a display) the printed URL is the way.
        if let Ok(mut child) = std::process::Command::new(opener)
            .arg(url)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
        {
            std::thread::spawn(move || child.wait());
        }
    }
}

fn main() -> ExitCode {
    let arguments = match parse(std::env::args().skip(1)) {
        Ok(Command::Bootstrap(arguments)) => arguments,
        Ok(Command::Help) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Ok(Command::Version) => {
            println!("{}", release::version_line("mail-mcp"));
            return ExitCode::SUCCESS;
        }
        Err(error) => {
            eprintln!("mail-mcp: {error}");
            return ExitCode::from(2);
        }
    };
    let config = Config::from_env(|name| std::env::var(name).ok());
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("mail-mcp: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let mut input = tokio::io::BufReader::new(tokio::io::stdin());
    let (mut prompt, mut output) = (std::io::stderr(), std::io::stdout());
    let host = Host {
        input: &mut input,
        prompt: &mut prompt,
        output: &mut output,
        browser: &mut TerminalBrowser,
        clock: &SystemClock,
    };
    let result = runtime.block_on(bootstrap::run(&arguments, &config, host));
    // A read of standard input still blocked in tokio's pool must not keep the process alive.
    runtime.shutdown_timeout(Duration::from_millis(100));
    match result {
        Ok(_) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("mail-mcp: {error}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Result<Command, String> {
        parse(list.iter().map(|arg| (*arg).to_owned()))
    }

    #[test]
    fn parses_the_bootstrap_command() {
        let expected = Command::Bootstrap(Arguments {
            client_file: "/etc/client.json".into(),
            output_directory: "/srv/mail".into(),
            account_id: Some("work".into()),
        });
        let spaced = [
            "bootstrap",
            "--client-file",
            "/etc/client.json",
            "--output-directory",
            "/srv/mail",
            "--account-id",
            "work",
        ];
        assert_eq!(args(&spaced), Ok(expected));
        let joined = args(&[
            "bootstrap",
            "--output-directory=/srv/mail",
            "--client-file=/etc/client.json",
        ])
        .expect("parses");
        assert!(matches!(joined, Command::Bootstrap(Arguments { account_id: None, .. })));
        assert_eq!(args(&["--help"]), Ok(Command::Help));
        assert_eq!(args(&["--version"]), Ok(Command::Version));
        assert_eq!(args(&["bootstrap", "-h"]), Ok(Command::Help));
    }

    #[test]
    fn refuses_what_it_does_not_know() {
        let lists: [&[&str]; 9] = [
            &[],
            &["boot"],
            &["bootstrap"],
            &["bootstrap", "--client-file", "/c"],
            &["bootstrap", "--client-file", "/c", "--output-directory"],
            &[
                "bootstrap",
                "--client-file",
                "/c",
                "--output-directory",
                "/o",
                "--scope",
                "x",
            ],
            &[
                "bootstrap",
                "--client-file",
                "/c",
                "--client-file",
                "/d",
                "--output-directory",
                "/o",
            ],
            &["bootstrap", "--client-file=", "--output-directory", "/o"],
            &["bootstrap", "/c", "/o"],
        ];
        for list in lists {
            let error = args(list).expect_err("usage error");
            assert!(error.contains("usage: mail-mcp bootstrap"), "{list:?}: {error}");
        }
    }
}
