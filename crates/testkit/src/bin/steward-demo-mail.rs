//! The mail provider stand-in with the demo mailbox, for `cargo xtask dev --demo-mail` and the
//! web client's browser tests: `steward-demo-mail <directory>` starts the stand-in on a free
//! loopback port, fills the demo mailbox, writes the demo account's credential documents and
//! `accounts.json` under the directory, then `provider.env` (the two provider addresses the
//! reading and writing roles take), and serves until it is stopped (SIGINT or SIGTERM).
//!
//! Nothing here reaches a real provider: the documents' refresh tokens are grants of this
//! process's stand-in only, made afresh on every start.

use std::process::ExitCode;

use testkit::demo;
use testkit::gmail::FakeGmail;

#[tokio::main]
async fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let (Some(dir), None) = (args.next(), args.next()) else {
        eprintln!("usage: steward-demo-mail <directory>");
        return ExitCode::from(2);
    };
    let dir = std::path::PathBuf::from(dir);
    let gmail = FakeGmail::start().await;
    let delivered = demo::fill(&gmail, "demo", jiff::Timestamp::now());
    let written = std::fs::create_dir_all(&dir)
        .and_then(|()| demo::write_account(&dir, &gmail, "demo"))
        .and_then(|_| {
            let provider = format!(
                "MAIL_API_BASE_URL={}\nMAIL_OAUTH_TOKEN_URL={}\n",
                gmail.base_url,
                gmail.token_url()
            );
            // Written last and renamed into place: its presence says everything is ready.
            let partial = dir.join("provider.env.partial");
            std::fs::write(&partial, provider)?;
            std::fs::rename(&partial, dir.join("provider.env"))
        });
    if let Err(error) = written {
        eprintln!("steward-demo-mail: cannot write {}: {error}", dir.display());
        return ExitCode::FAILURE;
    }
    println!(
        "steward-demo-mail: {delivered} messages for {} at {}",
        demo::OWNER,
        gmail.base_url
    );
    let mut terminate = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(signal) => signal,
        Err(error) => {
            eprintln!("steward-demo-mail: cannot listen for SIGTERM: {error}");
            return ExitCode::FAILURE;
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate.recv() => {}
    }
    ExitCode::SUCCESS
}
