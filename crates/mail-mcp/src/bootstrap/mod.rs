//! `mail-mcp bootstrap`: the operator's three-consent OAuth ceremony that writes one account's
//! credential documents (`mail-read.json`, `mail-write.json`, `mail-send.json`).
//!
//! Each step refuses before the next one starts: the account id; the OAuth client file
//! (owner-only, a Desktop-app client); the output directory (absent, or empty and owner-only);
//! the three loopback ports, all bound up front; the data-use disclosure and the operator's
//! `CONTINUE`; then the read, write and send consents in that order, each an authorization code
//! flow with PKCE, a fresh `state` and exactly one scope, its code exchanged at once. The
//! documents are written only after all three grants came back exact, so a refusal leaves no
//! credential behind. The consents (code exchanges included) must end within five minutes of
//! `CONTINUE`, measured by an injected [`Clock`]; only a callback carrying its consent's `state`
//! can end a consent. The terminal, the browser and the clock come in through [`Host`].
//!
//! Nothing secret (client secret, authorization codes, tokens, documents) is printed, logged or
//! put in an error; the operator sees the disclosure and progress on the prompt stream and, on
//! success, one `path scope` line per document on the output stream.

mod callback;
mod client;
mod consent;
mod documents;
mod output;
#[cfg(test)]
mod tests;

use std::fmt;
use std::io::{ErrorKind, Write};
use std::net::{Ipv4Addr, SocketAddr};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use reqwest::Url;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::document::{CredentialDocument, MailScope};

use self::callback::*;
use self::client::*;
use self::consent::*;
use self::documents::*;
use self::output::*;

/// The provider's authorization endpoint unless [`AUTHORIZE_URL_VARIABLE`] overrides it.
pub const AUTHORIZE_URL: &str = "https://accounts.google.com/o/oauth2/v2/auth";
/// The provider's token endpoint unless [`TOKEN_URL_VARIABLE`] overrides it.
pub const TOKEN_URL: &str = "https://oauth2.googleapis.com/token";
pub const AUTHORIZE_URL_VARIABLE: &str = "MAIL_OAUTH_AUTHORIZE_URL";
/// The same variable points the roles' token refreshes elsewhere.
pub const TOKEN_URL_VARIABLE: &str = "MAIL_OAUTH_TOKEN_URL";
/// Loopback callback ports of the read, write and send consents, in that order.
pub const CONSENT_PORTS: [u16; 3] = [8765, 8766, 8767];
/// From the operator's `CONTINUE` to the last code exchange.
pub const CEREMONY_LIMIT: Duration = Duration::from_secs(5 * 60);
/// How often waiting for a callback consults the clock, so a clock that jumps is noticed.
pub const CLOCK_POLL: Duration = Duration::from_millis(250);
/// Where the operator revokes the grants (the provider's third-party access page).
pub const REVOKE_URL: &str = "https://myaccount.google.com/permissions";
/// The line the operator types to accept the disclosure.
pub const ACCEPT: &str = "CONTINUE";

const TOKEN_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// A browser may open a connection it never uses (preconnect); it must not hold a consent up.
const CALLBACK_READ_TIMEOUT: Duration = Duration::from_secs(10);
const REQUEST_HEAD_MAX_BYTES: usize = 16 * 1024;
/// The operator's answer to the disclosure is one short line.
const ANSWER_MAX_BYTES: u64 = 1024;

/// The operator's arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Arguments {
    /// The provider's Desktop-app client JSON; absolute, owner-only.
    pub client_file: PathBuf,
    /// Absent (created 0700) or empty, owned by the running user and 0700.
    pub output_directory: PathBuf,
    /// The routing id the documents are tagged with.
    pub account_id: Option<String>,
}

/// Where the ceremony talks to; the defaults are the provider's and the spec's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    pub authorize_url: String,
    pub token_url: String,
    /// Loopback ports of the read, write and send consents, in that order.
    pub ports: [u16; 3],
}

impl Default for Config {
    fn default() -> Config {
        Config {
            authorize_url: AUTHORIZE_URL.into(),
            token_url: TOKEN_URL.into(),
            ports: CONSENT_PORTS,
        }
    }
}

impl Config {
    /// The defaults with the endpoint overrides the environment (read through `get`) holds; a
    /// blank variable counts as unset. The ports are never overridden.
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Config {
        let set = |name: &str| get(name).filter(|value| !value.trim().is_empty());
        let defaults = Config::default();
        Config {
            authorize_url: set(AUTHORIZE_URL_VARIABLE).unwrap_or(defaults.authorize_url),
            token_url: set(TOKEN_URL_VARIABLE).unwrap_or(defaults.token_url),
            ports: defaults.ports,
        }
    }
}

/// "Now", for the five-minute limit.
pub trait Clock {
    fn now(&self) -> Instant;
}

/// The real monotonic clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
}

impl<F: Fn() -> Instant> Clock for F {
    fn now(&self) -> Instant {
        self()
    }
}

/// Shows the operator a consent's authorization URL (it holds no secret); called once per
/// consent, after its callback port is listening.
pub trait Browser {
    fn open(&mut self, scope: MailScope, url: &str);
}

impl<F: FnMut(MailScope, &str)> Browser for F {
    fn open(&mut self, scope: MailScope, url: &str) {
        self(scope, url)
    }
}

/// What the ceremony uses of the machine it runs on.
pub struct Host<'a> {
    /// The operator's answer to the disclosure.
    pub input: &'a mut (dyn AsyncBufRead + Unpin + Send),
    /// The disclosure and progress (standard error in the CLI).
    pub prompt: &'a mut (dyn Write + Send),
    /// The result lines only (standard output in the CLI).
    pub output: &'a mut (dyn Write + Send),
    pub browser: &'a mut (dyn Browser + Send),
    pub clock: &'a (dyn Clock + Sync),
}

/// One document written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Written {
    pub scope: MailScope,
    /// Absolute.
    pub path: PathBuf,
}

/// Why the ceremony stopped. The first words of each refusal the spec names are its exact
/// operator message; a detail may follow after `: `.
#[derive(Debug, thiserror::Error)]
pub enum BootstrapError {
    #[error("account id `{0}` must be lowercase letters, digits, `-` or `_`")]
    AccountId(String),
    /// The URL is not repeated: it might carry credentials.
    #[error("the OAuth {which} endpoint is not usable: {reason} (see {variable})")]
    Endpoint {
        which: &'static str,
        variable: &'static str,
        reason: &'static str,
    },
    #[error("OAuth client file must be owner-only: {0}")]
    ClientFileNotOwnerOnly(String),
    #[error("OAuth client file {path} is not a Desktop-app OAuth client: {reason}")]
    ClientFileShape { path: PathBuf, reason: &'static str },
    #[error("credential output already exists: {0}")]
    OutputExists(String),
    #[error("output directory {path} cannot be used: {reason}")]
    OutputDirectory { path: PathBuf, reason: String },
    #[error("bootstrap stopped: the data-use disclosure was not accepted (type {ACCEPT} to go ahead)")]
    NotAccepted,
    #[error("authorization did not complete: {0}")]
    Incomplete(String),
    #[error("token exchange omitted the exact grant: {0}")]
    OmittedGrant(String),
    #[error("credential documents were not written: {0}")]
    Write(String),
    #[error("terminal: {0}")]
    Terminal(std::io::Error),
    /// Everything succeeded but printing the result: the documents stay (the grants are good).
    #[error("credential documents were written to {directory}, but listing them failed: {source}")]
    Listing { directory: PathBuf, source: std::io::Error },
}

/// Runs the whole ceremony; on success the three documents exist and their lines were printed.
pub async fn run(arguments: &Arguments, config: &Config, host: Host<'_>) -> Result<Vec<Written>, BootstrapError> {
    let Host {
        input,
        prompt,
        output,
        browser,
        clock,
    } = host;
    let account_id = arguments.account_id.as_deref();
    if let Some(id) = account_id
        && !domain::manifest::valid_account_id(id)
    {
        return Err(BootstrapError::AccountId(id.to_owned()));
    }
    let authorize_url = endpoint("authorization", AUTHORIZE_URL_VARIABLE, &config.authorize_url)?;
    let token_url = endpoint("token", TOKEN_URL_VARIABLE, &config.token_url)?;
    let (client, running_uid) = read_client(&arguments.client_file)?;
    let directory =
        std::path::absolute(&arguments.output_directory).map_err(|error| BootstrapError::OutputDirectory {
            path: arguments.output_directory.clone(),
            reason: error.to_string(),
        })?;
    let existed = check_output(&directory, running_uid)?;
    let http = reqwest::Client::builder()
        // The code and the client secret go to the configured endpoint and nowhere else.
        .redirect(reqwest::redirect::Policy::none())
        .timeout(TOKEN_REQUEST_TIMEOUT)
        .build()
        .map_err(|_| BootstrapError::Incomplete("the HTTP client could not be set up".into()))?;
    // All three before the disclosure: an operator is not asked to read and accept it for a
    // ceremony that cannot finish.
    let listeners = bind(config.ports).await?;

    let ports: Vec<u16> = listeners.iter().map(|(_, port)| *port).collect();
    write!(prompt, "{}", disclosure(&directory, account_id, &ports)).map_err(BootstrapError::Terminal)?;
    prompt.flush().map_err(BootstrapError::Terminal)?;
    let mut line = String::new();
    let accepted = match (&mut *input).take(ANSWER_MAX_BYTES).read_line(&mut line).await {
        Ok(_) => {
            line.strip_suffix('\n')
                .map(|rest| rest.strip_suffix('\r').unwrap_or(rest))
                == Some(ACCEPT)
        }
        Err(_) => false,
    };
    if !accepted {
        if !line.ends_with('\n') {
            // End of input left the cursor after the question; the refusal gets its own line.
            let _ = writeln!(prompt);
        }
        return Err(BootstrapError::NotAccepted);
    }
    let deadline = clock.now() + CEREMONY_LIMIT;

    let mut grants = Vec::with_capacity(3);
    for (number, (scope, (listener, port))) in (1..).zip(MailScope::ALL.into_iter().zip(listeners)) {
        let consent = Consent {
            scope,
            number,
            port,
            client: &client,
            authorize_url: &authorize_url,
            token_url: &token_url,
            http: &http,
            deadline,
        };
        grants.push(consent.run(listener, prompt, browser, clock).await?);
    }

    let written = write_documents(&directory, existed, running_uid, &client, &grants, account_id)?;
    let listed = written
        .iter()
        .try_for_each(|document| writeln!(output, "{} {}", document.path.display(), document.scope.url()))
        .and_then(|()| output.flush());
    listed.map_err(|source| BootstrapError::Listing { directory, source })?;
    Ok(written)
}

/// The endpoint receives the code and the client secret (`crate::endpoint`).
fn endpoint(which: &'static str, variable: &'static str, url: &str) -> Result<Url, BootstrapError> {
    crate::endpoint::checked(url).map_err(|reason| BootstrapError::Endpoint {
        which,
        variable,
        reason,
    })
}
