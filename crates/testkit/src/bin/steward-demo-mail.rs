//! The mail provider stand-in with the demo mailbox, for `cargo xtask dev --demo-mail` and the
//! web client's browser tests: `steward-demo-mail <directory>` starts the stand-in on a free
//! loopback port, fills the demo mailbox, writes the demo account's credential documents and
//! `accounts.json` under the directory, then `provider.env`, and serves until it is stopped
//! (SIGINT or SIGTERM).
//!
//! For unsubscribe assistance it also serves, on 127.0.0.1:
//!
//! - a DNS server publishing the newsletters' DKIM keys (made afresh on every start) and their
//!   hosts' address (`EMAIL_DNS_SERVER`);
//! - the newsletters' one-click unsubscribe endpoint over HTTPS, with a certificate for their
//!   hosts from an authority made at start (`unsubscribe-ca.pem`), answering `POST
//!   /unsubscribe/…` with 200 and printing the host and path of each request it took.
//!   `provider.env` names it (`EMAIL_UNSUBSCRIBE_LOCAL_ENDPOINT`,
//!   `EMAIL_UNSUBSCRIBE_LOCAL_CA_FILE`): the worker sends one-click requests there instead of
//!   port 443 of a public address, which an offline machine has none of.
//!
//! `provider.env` holds the provider's two addresses and those settings, for the roles to take.
//! Nothing here reaches a real provider: the documents' refresh tokens are grants of this
//! process's stand-in only, made afresh on every start.

use std::net::IpAddr;
use std::process::ExitCode;

use axum::http::{Method, StatusCode, Uri};
use testkit::demo;
use testkit::dns::DnsServer;
use testkit::gmail::FakeGmail;

/// The newsletters' one-click endpoint: every `POST` is an unsubscribe.
async fn unsubscribe(method: Method, uri: Uri, headers: axum::http::HeaderMap) -> (StatusCode, &'static str) {
    let host = headers.get("host").and_then(|host| host.to_str().ok()).unwrap_or("?");
    if method == Method::POST && uri.path().starts_with("/unsubscribe/") {
        println!("steward-demo-mail: unsubscribed at {host}{}", uri.path());
        (StatusCode::OK, "You are unsubscribed.")
    } else {
        (StatusCode::NOT_FOUND, "Nothing here.")
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let (Some(dir), None) = (args.next(), args.next()) else {
        eprintln!("usage: steward-demo-mail <directory>");
        return ExitCode::from(2);
    };
    let dir = std::path::PathBuf::from(dir);
    let localhost = IpAddr::from([127, 0, 0, 1]);
    let gmail = FakeGmail::start().await;
    let senders = demo::Senders::generate();
    let dns = DnsServer::start().await;
    senders.publish(&dns, localhost);
    let endpoint = testkit::serve(axum::Router::new().fallback(unsubscribe)).await;
    let (front, ca_pem, _front) = testkit::tls::front(localhost, &demo::hosts(), endpoint.address).await;
    let delivered = demo::fill(&gmail, "demo", jiff::Timestamp::now(), &senders);
    let ca_file = dir.join("unsubscribe-ca.pem");
    let written = std::fs::create_dir_all(&dir)
        .and_then(|()| demo::write_account(&dir, &gmail, "demo"))
        .and_then(|_| demo::write_evidence(&dir.join("junk-evidence.json"), &gmail, "demo"))
        .and_then(|()| std::fs::write(&ca_file, &ca_pem))
        .and_then(|()| {
            let provider = format!(
                "MAIL_API_BASE_URL={}\nMAIL_OAUTH_TOKEN_URL={}\nEMAIL_DNS_SERVER={}\n\
                 EMAIL_UNSUBSCRIBE_LOCAL_ENDPOINT={front}\nEMAIL_UNSUBSCRIBE_LOCAL_CA_FILE={}\n",
                gmail.base_url,
                gmail.token_url(),
                dns.address,
                ca_file.display(),
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
