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

/// The client id and secret; the secret stays out of `Debug`.
struct Client {
    id: String,
    secret: String,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("id", &self.id)
            .field("secret", &"<redacted>")
            .finish()
    }
}

#[derive(Deserialize)]
struct ClientFile {
    installed: Option<InstalledClient>,
    web: Option<serde::de::IgnoredAny>,
}

#[derive(Deserialize)]
struct InstalledClient {
    client_id: String,
    client_secret: String,
}

/// Reads the client file through the secret-file checks; also returns the running user's uid.
fn read_client(path: &Path) -> Result<(Client, u32), BootstrapError> {
    use hardening::secret_file::{SecretFileError, read_owner_only};
    if !path.is_absolute() {
        return Err(BootstrapError::ClientFileNotOwnerOnly(format!(
            "{} is not an absolute path",
            path.display()
        )));
    }
    let bytes = read_owner_only(path).map_err(|error| match error {
        SecretFileError::Missing(path) => {
            BootstrapError::ClientFileNotOwnerOnly(format!("{} does not exist", path.display()))
        }
        other => BootstrapError::ClientFileNotOwnerOnly(other.to_string()),
    })?;
    // The secret-file rule also takes 0400 (systemd's credential copies); the spec wants 0600.
    let mode = std::fs::symlink_metadata(path)
        .map_err(|error| BootstrapError::ClientFileNotOwnerOnly(format!("{}: {error}", path.display())))?
        .mode()
        & 0o7777;
    if mode != 0o600 {
        return Err(BootstrapError::ClientFileNotOwnerOnly(format!(
            "{} has mode {mode:04o}; it must be 0600",
            path.display()
        )));
    }
    let uid = hardening::process::effective_uid();
    let shape = |reason| BootstrapError::ClientFileShape {
        path: path.to_owned(),
        reason,
    };
    // serde's messages may quote the file; they are not passed on.
    let file: ClientFile = serde_json::from_slice(&bytes)
        .map_err(|_| shape("expected the JSON the provider's console downloads, {\"installed\": {...}}"))?;
    let installed = match (file.installed, file.web) {
        (Some(installed), _) => installed,
        (None, Some(_)) => return Err(shape("it is a web-application client; create a Desktop-app client")),
        (None, None) => return Err(shape("it has no \"installed\" object")),
    };
    if installed.client_id.trim().is_empty() || installed.client_secret.trim().is_empty() {
        return Err(shape("client_id and client_secret must be non-empty"));
    }
    Ok((
        Client {
            id: installed.client_id,
            secret: installed.client_secret,
        },
        uid,
    ))
}

/// Refuses output that exists and a directory the documents must not go into; returns whether
/// the directory already exists (empty, ours, 0700).
fn check_output(directory: &Path, running_uid: u32) -> Result<bool, BootstrapError> {
    let unusable = |reason: String| BootstrapError::OutputDirectory {
        path: directory.to_owned(),
        reason,
    };
    for scope in MailScope::ALL {
        let path = directory.join(scope.file_name());
        match std::fs::symlink_metadata(&path) {
            // Whatever it is (a dangling symlink too), it is not replaced.
            Ok(_) => return Err(BootstrapError::OutputExists(path.display().to_string())),
            Err(error) if matches!(error.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {}
            Err(error) => return Err(unusable(format!("{}: {error}", path.display()))),
        }
    }
    let meta = match std::fs::symlink_metadata(directory) {
        Ok(meta) => meta,
        Err(error) if error.kind() == ErrorKind::NotFound => {
            let parent = directory.parent().unwrap_or(Path::new("/"));
            return match std::fs::metadata(parent) {
                Ok(meta) if meta.is_dir() => Ok(false),
                _ => Err(unusable(format!(
                    "its parent {} is not an existing directory",
                    parent.display()
                ))),
            };
        }
        Err(error) => return Err(unusable(error.to_string())),
    };
    if meta.file_type().is_symlink() {
        return Err(unusable("it is a symbolic link; name the directory itself".into()));
    }
    if !meta.is_dir() {
        return Err(BootstrapError::OutputExists(format!(
            "{} exists and is not a directory",
            directory.display()
        )));
    }
    let mut entries = std::fs::read_dir(directory).map_err(|error| unusable(error.to_string()))?;
    if entries.next().is_some() {
        return Err(BootstrapError::OutputExists(format!(
            "{} is not empty",
            directory.display()
        )));
    }
    if meta.uid() != running_uid {
        return Err(unusable(format!(
            "it is owned by uid {}, not by the running user (uid {running_uid}); use a new empty directory",
            meta.uid()
        )));
    }
    let mode = meta.mode() & 0o7777;
    if mode != 0o700 {
        return Err(unusable(format!(
            "it has mode {mode:04o}; an existing directory must already be 0700 (or name a new one)"
        )));
    }
    let extended = hardening::acl::extended_entries(directory).map_err(|error| unusable(error.to_string()))?;
    if !extended.is_empty() {
        return Err(unusable(
            "it has extended ACL entries; use a new owner-only directory".into(),
        ));
    }
    Ok(true)
}

/// Binds every consent's port on 127.0.0.1, refusing when any is taken.
async fn bind(ports: [u16; 3]) -> Result<Vec<(TcpListener, u16)>, BootstrapError> {
    let mut listeners = Vec::with_capacity(3);
    for port in ports {
        let listener = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port)))
            .await
            .map_err(|error| {
                BootstrapError::Incomplete(format!(
                    "loopback port 127.0.0.1:{port} is not free ({}); free ports {}, {} and {} and run again",
                    error.kind(),
                    ports[0],
                    ports[1],
                    ports[2]
                ))
            })?;
        let bound = listener
            .local_addr()
            .map_err(|error| BootstrapError::Incomplete(format!("loopback port 127.0.0.1:{port}: {error}")))?;
        listeners.push((listener, bound.port()));
    }
    Ok(listeners)
}

fn disclosure(directory: &Path, account_id: Option<&str>, ports: &[u16]) -> String {
    let account = account_id.map(|id| format!(" (account `{id}`)")).unwrap_or_default();
    let ports = ports.iter().map(u16::to_string).collect::<Vec<_>>().join(", ");
    format!(
        "\
Steward mail bootstrap{account}: data-use disclosure

Steward, the self-hosted agent service, asks for three separate grants on the mailbox you choose
in the browser, one consent each, in this order, and for no other scope:

  1. read   {read}
     The grant allows reading all your mail and settings (messages, threads, attachments,
     labels). Steward searches threads and lists labels with it; it never downloads attachments.
  2. write  {write}
     The grant allows reading, composing, sending and changing mail (labels, archive, spam,
     trash), everything but deleting it permanently. Steward uses it only to create drafts, each
     after you approve its exact recipients, subject and body.
  3. send   {send}
     The grant allows sending mail as you. Steward sends only after you approve the exact
     recipients, subject and body, and never sends a message twice.

AI provider transfer: mail content the agent reads (senders, recipients, subjects, bodies and the
attachments it opens) is sent to the AI model provider configured for this service, which
processes it under that provider's terms.

Retention: each grant is kept in its own credential document (OAuth client id and secret, refresh
token, scope) in {directory}: mail-read.json, mail-write.json, mail-send.json, owner-only (files
0600, directory 0700), on this host only and until you delete them. Mail the agent already used
stays in the service's conversations until you delete them.

Deletion: to end access, revoke the grants at {REVOKE_URL}
and delete the three files.

Finish the three consents within five minutes, in a browser on this machine; the provider returns
each to 127.0.0.1 on ports {ports}.

Type {ACCEPT} to start the consents, anything else to stop: ",
        read = MailScope::Read.url(),
        write = MailScope::Write.url(),
        send = MailScope::Send.url(),
        directory = directory.display(),
    )
}

/// A CSPRNG token of 122 random bits per UUID (`uuid` v4 draws from the OS generator),
/// base64url without padding, so only unreserved characters.
fn random_token(uuids: usize) -> String {
    let bytes: Vec<u8> = (0..uuids).flat_map(|_| *uuid::Uuid::new_v4().as_bytes()).collect();
    URL_SAFE_NO_PAD.encode(bytes)
}

/// One scope's granted refresh token; kept out of `Debug`.
struct Grant {
    scope: MailScope,
    refresh_token: String,
}

struct Consent<'a> {
    scope: MailScope,
    number: u32,
    port: u16,
    client: &'a Client,
    authorize_url: &'a Url,
    token_url: &'a Url,
    http: &'a reqwest::Client,
    deadline: Instant,
}

impl Consent<'_> {
    async fn run(
        &self,
        listener: TcpListener,
        prompt: &mut (dyn Write + Send),
        browser: &mut (dyn Browser + Send),
        clock: &(dyn Clock + Sync),
    ) -> Result<Grant, BootstrapError> {
        let name = self.scope.kind();
        let redirect_uri = format!("http://127.0.0.1:{}/", self.port);
        // 48 random bytes: a 64-character verifier, inside RFC 7636's 43 to 128.
        let verifier = random_token(3);
        let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
        let state = random_token(2);
        let mut url = self.authorize_url.clone();
        // No `include_granted_scopes`: each token must hold its own scope only, never the
        // account's earlier grants.
        url.query_pairs_mut()
            .append_pair("response_type", "code")
            .append_pair("client_id", &self.client.id)
            .append_pair("redirect_uri", &redirect_uri)
            .append_pair("scope", self.scope.url())
            .append_pair("state", &state)
            .append_pair("code_challenge", &challenge)
            .append_pair("code_challenge_method", "S256")
            .append_pair("access_type", "offline")
            .append_pair("prompt", "consent");
        expired(clock, self.deadline, name)?;
        writeln!(
            prompt,
            "\nConsent {} of 3, {name} ({}): waiting on 127.0.0.1:{}.",
            self.number,
            self.scope.url(),
            self.port
        )
        .map_err(BootstrapError::Terminal)?;
        prompt.flush().map_err(BootstrapError::Terminal)?;
        browser.open(self.scope, url.as_str());
        let code = wait_for_callback(&listener, &state, self.scope, self.deadline, clock).await?;
        drop(listener);
        // The exchange is part of the five minutes: bounded by what is left, and checked after.
        let left = self.deadline.saturating_duration_since(clock.now());
        let grant = tokio::time::timeout(left, self.exchange(&code, &redirect_uri, &verifier))
            .await
            .map_err(|_| limit_passed(name))??;
        expired(clock, self.deadline, name)?;
        writeln!(prompt, "Consent {} of 3, {name}: granted.", self.number).map_err(BootstrapError::Terminal)?;
        Ok(grant)
    }

    async fn exchange(&self, code: &str, redirect_uri: &str, verifier: &str) -> Result<Grant, BootstrapError> {
        let name = self.scope.kind();
        let response = self
            .http
            .post(self.token_url.clone())
            .form(&[
                ("grant_type", "authorization_code"),
                ("code", code),
                ("redirect_uri", redirect_uri),
                ("client_id", &self.client.id),
                ("client_secret", &self.client.secret),
                ("code_verifier", verifier),
            ])
            .send()
            .await
            .map_err(|error| {
                let why = if error.is_timeout() {
                    "timed out"
                } else if error.is_connect() {
                    "could not connect"
                } else {
                    "failed"
                };
                BootstrapError::Incomplete(format!("the {name} code exchange {why}"))
            })?;
        let status = response.status();
        let body = response
            .bytes()
            .await
            .map_err(|_| BootstrapError::Incomplete(format!("the {name} code exchange answer was cut off")))?;
        if !status.is_success() {
            #[derive(Deserialize)]
            struct Refusal {
                error: Option<String>,
            }
            let provider_code = serde_json::from_slice::<Refusal>(&body)
                .ok()
                .and_then(|refusal| refusal.error)
                .filter(|error| plain_code(error))
                .map(|error| format!(", {error}"))
                .unwrap_or_default();
            return Err(BootstrapError::Incomplete(format!(
                "the token endpoint refused the {name} code (HTTP {}{provider_code})",
                status.as_u16()
            )));
        }
        #[derive(Deserialize)]
        struct Token {
            refresh_token: Option<String>,
            scope: Option<String>,
        }
        let token: Token = serde_json::from_slice(&body).map_err(|_| {
            BootstrapError::Incomplete(format!(
                "the token endpoint's {name} answer is not a JSON token response"
            ))
        })?;
        let Some(refresh_token) = token.refresh_token.filter(|token| !token.trim().is_empty()) else {
            return Err(BootstrapError::OmittedGrant(format!(
                "the {name} consent returned no refresh token"
            )));
        };
        let granted: Vec<&str> = token.scope.as_deref().unwrap_or_default().split_whitespace().collect();
        if granted != [self.scope.url()] {
            return Err(BootstrapError::OmittedGrant(format!(
                "the {name} grant is not exactly {} ({} scope(s) granted)",
                self.scope.url(),
                granted.len()
            )));
        }
        Ok(Grant {
            scope: self.scope,
            refresh_token,
        })
    }
}

/// A provider error code safe to show: RFC 6749's codes are lowercase words and underscores.
fn plain_code(code: &str) -> bool {
    !code.is_empty() && code.len() <= 64 && code.chars().all(|c| c.is_ascii_lowercase() || c == '_')
}

fn limit_passed(name: &str) -> BootstrapError {
    BootstrapError::Incomplete(format!(
        "the five-minute limit passed before the {name} consent completed; run again and finish all three in time"
    ))
}

fn expired(clock: &(dyn Clock + Sync), deadline: Instant, name: &str) -> Result<(), BootstrapError> {
    if clock.now() >= deadline {
        return Err(limit_passed(name));
    }
    Ok(())
}

/// What a callback request ended the consent with.
enum Callback {
    Code(String),
    Refused(String),
}

/// Serves the loopback until the callback arrives or the deadline passes. Connections are
/// served concurrently (a preconnected idle one must not block the real callback); requests
/// other than the callback (another path, or another `state`) are answered and the wait goes on.
async fn wait_for_callback(
    listener: &TcpListener,
    state: &str,
    scope: MailScope,
    deadline: Instant,
    clock: &(dyn Clock + Sync),
) -> Result<String, BootstrapError> {
    let name = scope.kind();
    let state: Arc<str> = state.into();
    let (sender, mut callbacks) = mpsc::channel(4);
    // Dropped on return, which aborts whatever connections are still open.
    let mut connections = JoinSet::new();
    let mut tick = tokio::time::interval(CLOCK_POLL);
    loop {
        expired(clock, deadline, name)?;
        tokio::select! {
            accepted = listener.accept() => {
                if let Ok((stream, _)) = accepted {
                    connections.spawn(serve(stream, state.clone(), scope, sender.clone()));
                }
            }
            Some(callback) = callbacks.recv() => {
                return match callback {
                    Callback::Code(code) => Ok(code),
                    Callback::Refused(reason) => Err(BootstrapError::Incomplete(reason)),
                };
            }
            _ = tick.tick() => {}
        }
        while connections.try_join_next().is_some() {}
    }
}

async fn serve(mut stream: TcpStream, state: Arc<str>, scope: MailScope, sender: mpsc::Sender<Callback>) {
    let Ok(Some(head)) = tokio::time::timeout(CALLBACK_READ_TIMEOUT, read_head(&mut stream)).await else {
        return;
    };
    let (status, page, callback) = classify(&head, &state, scope);
    let body = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>Steward mail bootstrap</title></head>\
         <body><p>{page}</p></body></html>\n"
    );
    let answer = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\n\
         Cache-Control: no-store\r\nReferrer-Policy: no-referrer\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    // The page is answered before the consent moves on, so the browser is not left hanging.
    let _ = stream.write_all(answer.as_bytes()).await;
    let _ = stream.shutdown().await;
    if let Some(callback) = callback {
        let _ = sender.send(callback).await;
    }
}

/// The request line and headers, or `None` when the peer sent no complete head.
async fn read_head(stream: &mut TcpStream) -> Option<String> {
    let mut head = Vec::new();
    let mut chunk = [0u8; 2048];
    loop {
        let read = stream.read(&mut chunk).await.ok()?;
        if read == 0 {
            return None;
        }
        head.extend_from_slice(&chunk[..read]);
        if head.windows(4).any(|window| window == b"\r\n\r\n") || head.windows(2).any(|window| window == b"\n\n") {
            return Some(String::from_utf8_lossy(&head).into_owned());
        }
        if head.len() > REQUEST_HEAD_MAX_BYTES {
            return None;
        }
    }
}

/// The status line, the page text and, for the callback itself, what it ends the consent with.
/// The page never echoes the request.
fn classify(head: &str, expected_state: &str, scope: MailScope) -> (&'static str, String, Option<Callback>) {
    let name = scope.kind();
    let not_callback = |status| (status, "This is not a consent callback.".to_owned(), None);
    let mut request_line = head.lines().next().unwrap_or_default().split(' ');
    let (Some(method), Some(target)) = (request_line.next(), request_line.next()) else {
        return not_callback("400 Bad Request");
    };
    if method != "GET" {
        return not_callback("405 Method Not Allowed");
    }
    let Some(url) = target
        .starts_with('/')
        .then(|| Url::parse(&format!("http://127.0.0.1{target}")).ok())
        .flatten()
    else {
        return not_callback("400 Bad Request");
    };
    if url.path() != "/" {
        return not_callback("404 Not Found");
    }
    let first = |key: &str| {
        url.query_pairs()
            .find(|(found, _)| found == key)
            .map(|(_, value)| value.into_owned())
    };
    let (code, state, error) = (first("code"), first("state"), first("error"));
    if code.is_none() && state.is_none() && error.is_none() {
        return not_callback("404 Not Found");
    }
    // Only a request carrying this consent's state can end it: anything else (a page or a local
    // process guessing at the port) is answered and the wait goes on.
    if state.as_deref() != Some(expected_state) {
        return (
            "400 Bad Request",
            "This is not the callback of the consent in progress.".to_owned(),
            None,
        );
    }
    let refused = |reason: String| {
        (
            "200 OK",
            format!(
                "The {name} consent did not complete. You can close this window; the terminal says what to do next."
            ),
            Some(Callback::Refused(reason)),
        )
    };
    if let Some(error) = error {
        let shown = if plain_code(&error) { error } else { "an error".into() };
        return refused(format!("the provider answered the {name} consent with {shown}"));
    }
    match code.filter(|code| !code.is_empty()) {
        None => refused(format!("the {name} callback carried no authorization code")),
        Some(code) => (
            "200 OK",
            format!("Steward received the {name} consent. You can close this window and return to the terminal."),
            Some(Callback::Code(code)),
        ),
    }
}

#[derive(Serialize)]
struct DocumentOut<'a> {
    client_id: &'a str,
    client_secret: &'a str,
    refresh_token: &'a str,
    scope: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    account_id: Option<&'a str>,
}

/// Writes the three documents, each created exclusively, and checks each as the roles will load
/// it; on any failure removes what it wrote (and the directory it created).
fn write_documents(
    directory: &Path,
    existed: bool,
    running_uid: u32,
    client: &Client,
    grants: &[Grant],
    account_id: Option<&str>,
) -> Result<Vec<Written>, BootstrapError> {
    let failed = |what: &str, error: &dyn fmt::Display| BootstrapError::Write(format!("{what}: {error}"));
    if existed {
        // It may have changed while the consents ran.
        if !check_output(directory, running_uid)? {
            return Err(BootstrapError::Write(format!("{} disappeared", directory.display())));
        }
    } else {
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(directory)
            .map_err(|error| match error.kind() {
                ErrorKind::AlreadyExists => {
                    BootstrapError::OutputExists(format!("{} appeared while the consents ran", directory.display()))
                }
                _ => failed(&directory.display().to_string(), &error),
            })?;
    }
    let mut written = Vec::with_capacity(grants.len());
    let result = (|| {
        if !existed {
            // The umask only ever removes bits; this one directory gets exactly 0700.
            std::fs::set_permissions(directory, std::fs::Permissions::from_mode(0o700))
                .map_err(|error| failed(&directory.display().to_string(), &error))?;
        }
        for grant in grants {
            let path = directory.join(grant.scope.file_name());
            let document = serde_json::to_vec_pretty(&DocumentOut {
                client_id: &client.id,
                client_secret: &client.secret,
                refresh_token: &grant.refresh_token,
                scope: grant.scope.url(),
                account_id,
            })
            .map_err(|error| failed("serializing a document", &error))?;
            let shown = path.display().to_string();
            // Exclusive create: never a file already there, never through a symbolic link.
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)
                .map_err(|error| match error.kind() {
                    ErrorKind::AlreadyExists => BootstrapError::OutputExists(shown.clone()),
                    _ => failed(&shown, &error),
                })?;
            written.push(Written {
                scope: grant.scope,
                path: path.clone(),
            });
            file.set_permissions(std::fs::Permissions::from_mode(0o600))
                .and_then(|()| file.write_all(&document))
                .and_then(|()| file.write_all(b"\n"))
                .and_then(|()| file.sync_all())
                .map_err(|error| failed(&shown, &error))?;
            // A default ACL on the directory would give the file extended entries the roles
            // refuse; find out now rather than at role start.
            CredentialDocument::load(&path, grant.scope, account_id).map_err(|error| failed(&shown, &error))?;
        }
        std::fs::File::open(directory)
            .and_then(|handle| handle.sync_all())
            .map_err(|error| failed(&directory.display().to_string(), &error))
    })();
    if let Err(error) = result {
        for document in &written {
            let _ = std::fs::remove_file(&document.path);
        }
        if !existed {
            let _ = std::fs::remove_dir(directory);
        }
        return Err(error);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    //! The ceremony against a real OAuth stand-in on 127.0.0.1 (authorization and token
    //! endpoints, PKCE checked) with a test "browser" that follows the redirect to the loopback
    //! callback by hand. Every secret the stand-in hands out, and the client secret, contain
    //! [`MARK`], so one search proves none reached the operator's terminal.

    use std::collections::{BTreeSet, HashMap};
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

    use axum::extract::{RawQuery, State};
    use axum::http::{StatusCode, header};
    use axum::response::{IntoResponse, Response};

    use super::*;
    use crate::document::DocumentError;

    const MARK: &str = "SENTINEL";
    const CLIENT_ID: &str = "steward-test.apps.example";
    const CLIENT_SECRET: &str = "SENTINEL-client-secret";

    /// How the stand-in misbehaves; every misbehaviour hits the write consent, after the read
    /// consent succeeded, so "nothing written" also covers a half-finished ceremony.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Behaviour {
        Exact,
        Denied,
        /// The write code's exchange takes three seconds.
        SlowExchange,
        NoRefreshToken,
        TwoScopes,
        OtherScope,
        RefusedCode,
    }

    struct Issued {
        challenge: String,
        redirect_uri: String,
        scope: String,
    }

    struct Fake {
        behaviour: Behaviour,
        ports: [u16; 3],
        issued: Mutex<HashMap<String, Issued>>,
        /// Refresh tokens handed out, by scope URL.
        granted: Mutex<HashMap<String, String>>,
        problems: Mutex<Vec<String>>,
        authorizations: AtomicUsize,
        exchanges: AtomicUsize,
    }

    fn pairs(query: &str) -> Vec<(String, String)> {
        Url::parse(&format!("http://fake/?{query}"))
            .expect("query")
            .query_pairs()
            .map(|(key, value)| (key.into_owned(), value.into_owned()))
            .collect()
    }

    fn single(pairs: &[(String, String)], key: &str) -> Result<String, String> {
        let mut values = pairs.iter().filter(|(found, _)| found == key);
        match (values.next(), values.next()) {
            (Some((_, value)), None) => Ok(value.clone()),
            (None, _) => Err(format!("{key} missing")),
            _ => Err(format!("{key} repeated")),
        }
    }

    fn misbehaves(fake: &Fake, scope: &str) -> Option<Behaviour> {
        (scope == MailScope::Write.url() && fake.behaviour != Behaviour::Exact).then_some(fake.behaviour)
    }

    impl Fake {
        fn refuse(&self, problem: String) -> Response {
            self.problems.lock().expect("lock").push(problem.clone());
            (StatusCode::BAD_REQUEST, problem).into_response()
        }

        fn authorization(&self, query: &[(String, String)]) -> Result<String, String> {
            for (key, expected) in [
                ("response_type", "code"),
                ("client_id", CLIENT_ID),
                ("code_challenge_method", "S256"),
                ("access_type", "offline"),
                ("prompt", "consent"),
            ] {
                let value = single(query, key)?;
                if value != expected {
                    return Err(format!("{key} is {value}"));
                }
            }
            if query.iter().any(|(key, _)| key == "include_granted_scopes") {
                return Err("include_granted_scopes would merge the grants".into());
            }
            let scope = single(query, "scope")?;
            let index = MailScope::ALL
                .iter()
                .position(|designed| designed.url() == scope)
                .ok_or(format!("scope `{scope}` is not exactly one designed scope"))?;
            let redirect_uri = single(query, "redirect_uri")?;
            let expected = format!("http://127.0.0.1:{}/", self.ports[index]);
            if redirect_uri != expected {
                return Err(format!("redirect_uri {redirect_uri}, expected {expected}"));
            }
            let state = single(query, "state")?;
            if state.len() < 22 {
                return Err("state too short".into());
            }
            let challenge = single(query, "code_challenge")?;
            if challenge.len() != 43 || URL_SAFE_NO_PAD.decode(&challenge).is_err() {
                return Err("code_challenge is not a base64url SHA-256".into());
            }
            self.authorizations.fetch_add(1, Ordering::SeqCst);
            let code = format!("{MARK}-code-{}", uuid::Uuid::new_v4());
            let mut location = Url::parse(&redirect_uri).map_err(|error| error.to_string())?;
            match misbehaves(self, &scope) {
                Some(Behaviour::Denied) => {
                    location
                        .query_pairs_mut()
                        .append_pair("error", "access_denied")
                        .append_pair("state", &state);
                }
                _ => {
                    location
                        .query_pairs_mut()
                        .append_pair("code", &code)
                        .append_pair("state", &state);
                }
            }
            self.issued.lock().expect("lock").insert(
                code,
                Issued {
                    challenge,
                    redirect_uri,
                    scope,
                },
            );
            Ok(location.to_string())
        }

        fn exchange(&self, form: &[(String, String)]) -> Result<Response, String> {
            self.exchanges.fetch_add(1, Ordering::SeqCst);
            if single(form, "grant_type")? != "authorization_code" {
                return Err("grant_type".into());
            }
            if single(form, "client_id")? != CLIENT_ID || single(form, "client_secret")? != CLIENT_SECRET {
                return Err("client credentials".into());
            }
            let code = single(form, "code")?;
            let issued = self
                .issued
                .lock()
                .expect("lock")
                .remove(&code)
                .ok_or("unknown or reused code")?;
            if single(form, "redirect_uri")? != issued.redirect_uri {
                return Err("redirect_uri differs from the authorization's".into());
            }
            let verifier = single(form, "code_verifier")?;
            if !(43..=128).contains(&verifier.len()) {
                return Err("code_verifier length".into());
            }
            if URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes())) != issued.challenge {
                return Err("code_verifier does not match the challenge".into());
            }
            let refresh_token = format!("{MARK}-refresh-{}", uuid::Uuid::new_v4());
            let mut answer = serde_json::json!({
                "access_token": format!("{MARK}-access"),
                "expires_in": 3599,
                "refresh_token": refresh_token,
                "scope": issued.scope,
                "token_type": "Bearer",
            });
            match misbehaves(self, &issued.scope) {
                Some(Behaviour::NoRefreshToken) => {
                    answer.as_object_mut().expect("object").remove("refresh_token");
                }
                Some(Behaviour::TwoScopes) => {
                    answer["scope"] = format!("{} https://www.googleapis.com/auth/userinfo.email", issued.scope).into();
                }
                Some(Behaviour::OtherScope) => answer["scope"] = "https://mail.google.com/".into(),
                Some(Behaviour::RefusedCode) => {
                    let refusal =
                        serde_json::json!({"error": "invalid_grant", "error_description": format!("{MARK} {code}")});
                    return Ok((StatusCode::BAD_REQUEST, axum::Json(refusal)).into_response());
                }
                _ => {}
            }
            self.granted
                .lock()
                .expect("lock")
                .insert(issued.scope.clone(), refresh_token);
            Ok(axum::Json(answer).into_response())
        }
    }

    async fn authorize(State(fake): State<Arc<Fake>>, RawQuery(query): RawQuery) -> Response {
        match fake.authorization(&pairs(&query.unwrap_or_default())) {
            Ok(location) => (StatusCode::FOUND, [(header::LOCATION, location)]).into_response(),
            Err(problem) => fake.refuse(problem),
        }
    }

    async fn token(State(fake): State<Arc<Fake>>, body: String) -> Response {
        // The read code was exchanged first; this is the write code's.
        if fake.behaviour == Behaviour::SlowExchange && fake.exchanges.load(Ordering::SeqCst) == 1 {
            tokio::time::sleep(Duration::from_secs(3)).await;
        }
        match fake.exchange(&pairs(&body)) {
            Ok(response) => response,
            Err(problem) => fake.refuse(problem),
        }
    }

    /// Every port this test process chose or bound for itself: parallel tests never choose the
    /// same "free" port, nor one another test's stand-in holds.
    static CHOSEN: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());

    fn fresh_listener() -> std::net::TcpListener {
        loop {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
            let port = listener.local_addr().expect("address").port();
            if CHOSEN.lock().expect("lock").insert(port) {
                return listener;
            }
        }
    }

    /// Three distinct ports nothing listens on, for one ceremony's consents.
    fn free_ports() -> [u16; 3] {
        let held = [fresh_listener(), fresh_listener(), fresh_listener()];
        held.map(|listener| listener.local_addr().expect("address").port())
    }

    struct Setup {
        _root: tempfile::TempDir,
        root: PathBuf,
        client_file: PathBuf,
        output: PathBuf,
        config: Config,
        fake: Arc<Fake>,
    }

    fn set_mode(path: &Path, mode: u32) {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
    }

    async fn setup(behaviour: Behaviour) -> Setup {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().to_path_buf();
        let client_file = root.join("client_secret.json");
        let client = serde_json::json!({"installed": {
            "client_id": CLIENT_ID,
            "project_id": "steward-test",
            "auth_uri": "https://accounts.google.com/o/oauth2/auth",
            "token_uri": "https://oauth2.googleapis.com/token",
            "client_secret": CLIENT_SECRET,
            "redirect_uris": ["http://localhost"],
        }});
        std::fs::write(&client_file, client.to_string()).expect("client file");
        set_mode(&client_file, 0o600);
        let ports = free_ports();
        let fake = Arc::new(Fake {
            behaviour,
            ports,
            issued: Mutex::default(),
            granted: Mutex::default(),
            problems: Mutex::default(),
            authorizations: AtomicUsize::new(0),
            exchanges: AtomicUsize::new(0),
        });
        let app = axum::Router::new()
            .route("/auth", axum::routing::get(authorize))
            .route("/token", axum::routing::post(token))
            .with_state(fake.clone());
        let listener = fresh_listener();
        listener.set_nonblocking(true).expect("nonblocking");
        let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
        let address = listener.local_addr().expect("address");
        tokio::spawn(async move { axum::serve(listener, app).await });
        Setup {
            output: root.join("mail"),
            _root: dir,
            root,
            client_file,
            config: Config {
                authorize_url: format!("http://{address}/auth"),
                token_url: format!("http://{address}/token"),
                ports,
            },
            fake,
        }
    }

    /// The operator's browser: requests the authorization URL, follows its redirect by hand to
    /// the loopback, asking it for a favicon first as browsers do.
    fn browser(visits: Arc<AtomicUsize>) -> impl FnMut(MailScope, &str) + Send {
        forging_browser(visits, &[])
    }

    /// The same, but before the genuine callback a hostile page (or local process) sends each
    /// of `forged` (queries) to the callback's port; each must be turned away with 400.
    fn forging_browser(visits: Arc<AtomicUsize>, forged: &[&str]) -> impl FnMut(MailScope, &str) + Send {
        let forged: Vec<String> = forged.iter().map(|query| (*query).to_owned()).collect();
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("client");
        move |_scope: MailScope, url: &str| {
            visits.fetch_add(1, Ordering::SeqCst);
            let (http, url, forged) = (http.clone(), url.to_owned(), forged.clone());
            tokio::spawn(async move {
                let answer = http.get(&url).send().await.expect("authorization endpoint");
                if answer.status().as_u16() != 302 {
                    return; // The stand-in recorded the problem.
                }
                let location = answer.headers()["location"].to_str().expect("location").to_owned();
                let callback = Url::parse(&location).expect("callback URL");
                assert_eq!(callback.host_str(), Some("127.0.0.1"));
                for query in &forged {
                    let mut target = callback.clone();
                    target.set_query(Some(query));
                    let turned_away = http.get(target).send().await.expect("forged callback");
                    assert_eq!(turned_away.status().as_u16(), 400, "{query}");
                }
                let favicon = http
                    .get(callback.join("/favicon.ico").expect("favicon URL"))
                    .send()
                    .await
                    .expect("favicon");
                assert_eq!(favicon.status().as_u16(), 404);
                let page = http.get(callback).send().await.expect("callback");
                assert_eq!(page.status().as_u16(), 200);
                assert!(page.text().await.expect("page").contains("close this window"));
            });
        }
    }

    struct Finished {
        result: Result<Vec<Written>, BootstrapError>,
        stdout: String,
        stderr: String,
    }

    async fn ceremony(
        setup: &Setup,
        account: Option<&str>,
        answer: &str,
        browser: &mut (dyn Browser + Send),
        clock: &(dyn Clock + Sync),
    ) -> Finished {
        let arguments = Arguments {
            client_file: setup.client_file.clone(),
            output_directory: setup.output.clone(),
            account_id: account.map(str::to_owned),
        };
        let mut input = answer.as_bytes();
        let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
        let host = Host {
            input: &mut input,
            prompt: &mut stderr,
            output: &mut stdout,
            browser,
            clock,
        };
        let result = tokio::time::timeout(Duration::from_secs(20), run(&arguments, &setup.config, host))
            .await
            .expect("the ceremony ends on its own");
        let finished = Finished {
            result,
            stdout: String::from_utf8(stdout).expect("utf-8"),
            stderr: String::from_utf8(stderr).expect("utf-8"),
        };
        assert!(
            !finished.stdout.contains(MARK) && !finished.stderr.contains(MARK),
            "a secret reached the terminal:\n{}\n{}",
            finished.stdout,
            finished.stderr
        );
        if let Err(error) = &finished.result {
            assert!(!error.to_string().contains(MARK), "{error}");
        }
        finished
    }

    /// Runs with the real clock and the following browser; returns the browser's visit count.
    async fn follow(setup: &Setup, account: Option<&str>, answer: &str) -> (Finished, usize) {
        let visits = Arc::new(AtomicUsize::new(0));
        let mut browser = browser(visits.clone());
        let finished = ceremony(setup, account, answer, &mut browser, &SystemClock).await;
        (finished, visits.load(Ordering::SeqCst))
    }

    fn refusal(finished: &Finished, message: &str) -> String {
        let error = finished.result.as_ref().expect_err("refused").to_string();
        assert!(error.starts_with(message), "expected `{message}`, got `{error}`");
        assert!(finished.stdout.is_empty(), "{}", finished.stdout);
        error
    }

    fn assert_nothing_written(setup: &Setup) {
        for scope in MailScope::ALL {
            let path = setup.output.join(scope.file_name());
            assert!(
                std::fs::symlink_metadata(&path).is_err(),
                "{} was written",
                path.display()
            );
        }
    }

    fn assert_no_problems(setup: &Setup) {
        let problems = setup.fake.problems.lock().expect("lock");
        assert!(problems.is_empty(), "the OAuth stand-in saw: {problems:?}");
    }

    fn mode(path: &Path) -> u32 {
        std::fs::symlink_metadata(path).expect("metadata").mode() & 0o7777
    }

    #[tokio::test]
    async fn three_consents_write_three_owner_only_documents_tagged_for_the_account() {
        let setup = setup(Behaviour::Exact).await;
        let (finished, visits) = follow(&setup, Some("work"), "CONTINUE\n").await;
        let written = finished.result.expect("the ceremony succeeds");
        assert_no_problems(&setup);
        assert_eq!(visits, 3);
        assert_eq!(setup.fake.exchanges.load(Ordering::SeqCst), 3);

        let expected: Vec<String> = MailScope::ALL
            .iter()
            .map(|scope| format!("{} {}", setup.output.join(scope.file_name()).display(), scope.url()))
            .collect();
        assert_eq!(finished.stdout.lines().collect::<Vec<_>>(), expected);
        assert_eq!(
            written.iter().map(|document| document.scope).collect::<Vec<_>>(),
            MailScope::ALL
        );

        assert_eq!(mode(&setup.output), 0o700);
        let granted = setup.fake.granted.lock().expect("lock").clone();
        for scope in MailScope::ALL {
            let path = setup.output.join(scope.file_name());
            assert_eq!(mode(&path), 0o600, "{}", path.display());
            let bytes = std::fs::read(&path).expect("document");
            let keys: BTreeSet<String> = serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(&bytes)
                .expect("object")
                .keys()
                .cloned()
                .collect();
            assert_eq!(
                keys,
                ["account_id", "client_id", "client_secret", "refresh_token", "scope"]
                    .map(String::from)
                    .into()
            );
            let document = CredentialDocument::parse(&bytes, scope, Some("work")).expect("parses as its scope");
            assert_eq!(document.account_id.as_deref(), Some("work"));
            assert_eq!(document.client_id, CLIENT_ID);
            assert_eq!(document.client_secret(), CLIENT_SECRET);
            assert_eq!(
                Some(document.refresh_token()),
                granted.get(scope.url()).map(String::as_str)
            );
            assert!(matches!(
                CredentialDocument::parse(&bytes, scope, Some("home")),
                Err(DocumentError::AccountMismatch)
            ));
            assert!(CredentialDocument::load(&path, scope, Some("work")).is_ok());
        }

        // The disclosure came first, with what the operator must know.
        for needed in [
            MailScope::Read.url(),
            MailScope::Write.url(),
            MailScope::Send.url(),
            "AI model provider",
            "Retention",
            REVOKE_URL,
            "delete the three files",
            "five minutes",
            "Type CONTINUE",
        ] {
            assert!(finished.stderr.contains(needed), "disclosure lacks `{needed}`");
        }
    }

    #[tokio::test]
    async fn an_existing_empty_owner_only_directory_receives_untagged_documents() {
        let setup = setup(Behaviour::Exact).await;
        std::fs::create_dir(&setup.output).expect("mkdir");
        set_mode(&setup.output, 0o700);
        let (finished, _) = follow(&setup, None, "CONTINUE\r\n").await;
        finished.result.expect("the ceremony succeeds");
        assert_no_problems(&setup);
        assert_eq!(finished.stdout.lines().count(), 3);
        for scope in MailScope::ALL {
            let bytes = std::fs::read(setup.output.join(scope.file_name())).expect("document");
            let document = CredentialDocument::parse(&bytes, scope, Some("any")).expect("parses");
            assert_eq!(document.account_id, None);
        }
    }

    #[tokio::test]
    async fn the_client_file_must_be_an_owner_only_desktop_client() {
        let mut setup = setup(Behaviour::Exact).await;
        let original = setup.client_file.clone();
        let check = |finished: &Finished, setup: &Setup, visits: usize| {
            assert_eq!(visits, 0);
            assert!(
                finished.stderr.is_empty(),
                "the disclosure was shown: {}",
                finished.stderr
            );
            assert!(!setup.output.exists(), "the output directory was created");
        };

        set_mode(&original, 0o644);
        let (finished, visits) = follow(&setup, None, "CONTINUE\n").await;
        refusal(&finished, "OAuth client file must be owner-only");
        check(&finished, &setup, visits);
        set_mode(&original, 0o600);

        setup.client_file = setup.root.join("linked.json");
        std::os::unix::fs::symlink(&original, &setup.client_file).expect("symlink");
        let (finished, visits) = follow(&setup, None, "CONTINUE\n").await;
        refusal(&finished, "OAuth client file must be owner-only");
        check(&finished, &setup, visits);

        setup.client_file = PathBuf::from("client_secret.json");
        let (finished, visits) = follow(&setup, None, "CONTINUE\n").await;
        refusal(&finished, "OAuth client file must be owner-only");
        check(&finished, &setup, visits);

        set_mode(&original, 0o400);
        setup.client_file = original.clone();
        let (finished, visits) = follow(&setup, None, "CONTINUE\n").await;
        assert!(refusal(&finished, "OAuth client file must be owner-only").contains("0400"));
        check(&finished, &setup, visits);
        set_mode(&original, 0o600);

        setup.client_file = setup.root.join("absent.json");
        let (finished, visits) = follow(&setup, None, "CONTINUE\n").await;
        assert!(refusal(&finished, "OAuth client file must be owner-only").contains("does not exist"));
        check(&finished, &setup, visits);

        setup.client_file = setup.root.join("web.json");
        std::fs::write(
            &setup.client_file,
            format!(r#"{{"web": {{"client_id": "{CLIENT_ID}", "client_secret": "{CLIENT_SECRET}"}}}}"#),
        )
        .expect("web client");
        set_mode(&setup.client_file, 0o600);
        let (finished, visits) = follow(&setup, None, "CONTINUE\n").await;
        assert!(refusal(&finished, "OAuth client file").contains("Desktop-app client"));
        check(&finished, &setup, visits);
    }

    #[tokio::test]
    async fn existing_output_is_refused_before_the_disclosure() {
        let setup = setup(Behaviour::Exact).await;
        std::fs::create_dir(&setup.output).expect("mkdir");
        set_mode(&setup.output, 0o700);
        let existing = setup.output.join(MailScope::Send.file_name());
        std::fs::write(&existing, "keep").expect("existing document");
        let (finished, visits) = follow(&setup, None, "CONTINUE\n").await;
        refusal(&finished, "credential output already exists");
        assert_eq!((visits, finished.stderr.as_str()), (0, ""));
        assert_eq!(std::fs::read_to_string(&existing).expect("kept"), "keep");
        for scope in [MailScope::Read, MailScope::Write] {
            assert!(!setup.output.join(scope.file_name()).exists());
        }
        std::fs::remove_file(&existing).expect("remove");

        std::fs::write(setup.output.join("notes.txt"), "x").expect("other file");
        let (finished, visits) = follow(&setup, None, "CONTINUE\n").await;
        assert!(refusal(&finished, "credential output already exists").contains("not empty"));
        assert_eq!((visits, finished.stderr.as_str()), (0, ""));
        assert_nothing_written(&setup);
        std::fs::remove_file(setup.output.join("notes.txt")).expect("remove");

        // An empty directory others can read is not tightened behind the operator's back.
        set_mode(&setup.output, 0o755);
        let (finished, _) = follow(&setup, None, "CONTINUE\n").await;
        assert!(refusal(&finished, "output directory").contains("0755"));
        assert_eq!(mode(&setup.output), 0o755);
        std::fs::remove_dir(&setup.output).expect("rmdir");

        std::fs::write(&setup.output, "a file").expect("file in the way");
        let (finished, _) = follow(&setup, None, "CONTINUE\n").await;
        assert!(refusal(&finished, "credential output already exists").contains("is not a directory"));
        std::fs::remove_file(&setup.output).expect("remove");

        let nested = Setup {
            output: setup.root.join("absent/mail"),
            ..setup
        };
        let (finished, _) = follow(&nested, None, "CONTINUE\n").await;
        assert!(refusal(&finished, "output directory").contains("parent"));
        assert!(!nested.root.join("absent").exists());
    }

    #[tokio::test]
    async fn a_busy_consent_port_is_refused_before_the_disclosure() {
        let setup = setup(Behaviour::Exact).await;
        let busy = setup.config.ports[1];
        let _taken = std::net::TcpListener::bind(("127.0.0.1", busy)).expect("take the write port");
        let (finished, visits) = follow(&setup, None, "CONTINUE\n").await;
        let error = refusal(&finished, "authorization did not complete");
        assert!(error.contains(&format!("127.0.0.1:{busy}")), "{error}");
        assert_eq!((visits, finished.stderr.as_str()), (0, ""));
        assert_nothing_written(&setup);
        assert!(!setup.output.exists());
    }

    #[tokio::test]
    async fn anything_but_continue_stops_before_any_consent() {
        let setup = setup(Behaviour::Exact).await;
        for answer in [
            "continue\n",
            "CONTINUE \n",
            " CONTINUE\n",
            "yes\n",
            "\n",
            "",
            "CONTINUE",
        ] {
            let (finished, visits) = follow(&setup, Some("work"), answer).await;
            let error = refusal(&finished, "bootstrap stopped");
            assert!(error.contains("CONTINUE"), "{error}");
            assert!(
                finished.stderr.contains(MailScope::Send.url()),
                "the disclosure is shown first"
            );
            assert_eq!(visits, 0, "answer {answer:?}");
            assert_nothing_written(&setup);
            assert!(!setup.output.exists());
        }
        assert_eq!(setup.fake.authorizations.load(Ordering::SeqCst), 0);
        // The loopback ports were released.
        for port in setup.config.ports {
            std::net::TcpListener::bind(("127.0.0.1", port)).expect("port released");
        }
    }

    #[tokio::test]
    async fn callbacks_without_the_consents_state_are_turned_away_and_cannot_end_it() {
        let setup = setup(Behaviour::Exact).await;
        let visits = Arc::new(AtomicUsize::new(0));
        let mut browser = forging_browser(
            visits.clone(),
            &[
                "error=access_denied",
                "error=access_denied&state=forged",
                "code=forged-code&state=forged",
                "code=forged-code",
            ],
        );
        let finished = ceremony(&setup, None, "CONTINUE\n", &mut browser, &SystemClock).await;
        finished.result.expect("the genuine callbacks complete the ceremony");
        assert_eq!(visits.load(Ordering::SeqCst), 3);
        // Only the genuine codes reached the token endpoint (a forged one would be a problem).
        assert_eq!(setup.fake.exchanges.load(Ordering::SeqCst), 3);
        assert_no_problems(&setup);
    }

    #[tokio::test]
    async fn a_refused_consent_does_not_complete() {
        let setup = setup(Behaviour::Denied).await;
        let (finished, _) = follow(&setup, None, "CONTINUE\n").await;
        assert!(refusal(&finished, "authorization did not complete").contains("access_denied"));
        assert_nothing_written(&setup);
        assert!(!setup.output.exists());
        assert_no_problems(&setup);
    }

    #[tokio::test]
    async fn the_five_minute_limit_follows_the_injected_clock() {
        let setup = setup(Behaviour::Exact).await;
        let start = Instant::now();
        let skipped = Arc::new(AtomicU64::new(0));
        let clock = {
            let skipped = skipped.clone();
            move || start + Duration::from_secs(skipped.load(Ordering::SeqCst))
        };
        let visits = Arc::new(AtomicUsize::new(0));
        let mut follow_browser = browser(visits.clone());
        // The read consent completes; at the write consent the operator walks away and the
        // clock moves past the limit while no callback arrives.
        let mut browser = |scope: MailScope, url: &str| match scope {
            MailScope::Read => follow_browser(scope, url),
            _ => skipped.store(CEREMONY_LIMIT.as_secs() + 1, Ordering::SeqCst),
        };
        let real = Instant::now();
        let finished = ceremony(&setup, None, "CONTINUE\n", &mut browser, &clock).await;
        assert!(refusal(&finished, "authorization did not complete").contains("five-minute"));
        assert!(
            real.elapsed() < Duration::from_secs(10),
            "noticed at the next clock poll"
        );
        assert_eq!(visits.load(Ordering::SeqCst), 1);
        assert_eq!(setup.fake.exchanges.load(Ordering::SeqCst), 1);
        assert_nothing_written(&setup);
        assert!(!setup.output.exists());
    }

    #[tokio::test]
    async fn the_five_minute_limit_covers_the_code_exchanges() {
        // The clock passes the limit while the write code is being exchanged: the grant that
        // came back late is not used.
        let late = setup(Behaviour::Exact).await;
        let start = Instant::now();
        let fake = late.fake.clone();
        let clock = move || {
            let passed = fake.exchanges.load(Ordering::SeqCst) >= 2;
            start + if passed { CEREMONY_LIMIT } else { Duration::ZERO }
        };
        let mut browser_ = browser(Arc::new(AtomicUsize::new(0)));
        let finished = ceremony(&late, None, "CONTINUE\n", &mut browser_, &clock).await;
        let error = refusal(&finished, "authorization did not complete");
        assert!(error.contains("five-minute") && error.contains("write"), "{error}");
        assert_eq!(late.fake.exchanges.load(Ordering::SeqCst), 2);
        assert_nothing_written(&late);
        assert!(!late.output.exists());

        // One second is left when the write consent starts, and its exchange takes three: the
        // exchange is abandoned when the time is up.
        let slow = setup(Behaviour::SlowExchange).await;
        let start = Instant::now();
        let skipped = Arc::new(AtomicU64::new(0));
        let clock = {
            let skipped = skipped.clone();
            move || start + Duration::from_secs(skipped.load(Ordering::SeqCst))
        };
        let mut follow_browser = browser(Arc::new(AtomicUsize::new(0)));
        let mut browser_ = |scope: MailScope, url: &str| {
            if scope == MailScope::Write {
                skipped.store(CEREMONY_LIMIT.as_secs() - 1, Ordering::SeqCst);
            }
            follow_browser(scope, url);
        };
        let real = Instant::now();
        let finished = ceremony(&slow, None, "CONTINUE\n", &mut browser_, &clock).await;
        let error = refusal(&finished, "authorization did not complete");
        assert!(error.contains("five-minute") && error.contains("write"), "{error}");
        assert!(
            real.elapsed() < Duration::from_secs(3),
            "the exchange was not waited out"
        );
        assert_nothing_written(&slow);
        assert!(!slow.output.exists());
    }

    #[test]
    fn a_failed_write_removes_every_document_it_wrote() {
        let dir = tempfile::tempdir().expect("tempdir");
        let client = Client {
            id: CLIENT_ID.into(),
            secret: CLIENT_SECRET.into(),
        };
        // The third document collides with the second: the first two are written, then removed.
        let grants = [MailScope::Read, MailScope::Write, MailScope::Write].map(|scope| Grant {
            scope,
            refresh_token: format!("{MARK}-refresh"),
        });
        let uid = hardening::process::effective_uid();
        let created = dir.path().join("created");
        let error = write_documents(&created, false, uid, &client, &grants, None).expect_err("collides");
        assert!(matches!(error, BootstrapError::OutputExists(_)), "{error}");
        assert!(!created.exists(), "the directory it created is removed too");

        let existing = dir.path().join("existing");
        std::fs::create_dir(&existing).expect("mkdir");
        set_mode(&existing, 0o700);
        let error = write_documents(&existing, true, uid, &client, &grants, Some("work")).expect_err("collides");
        assert!(matches!(error, BootstrapError::OutputExists(_)), "{error}");
        assert_eq!(
            std::fs::read_dir(&existing).expect("list").count(),
            0,
            "an existing directory is left as it was: empty"
        );
    }

    #[tokio::test]
    async fn a_grant_without_a_refresh_token_or_the_exact_scope_is_refused() {
        for behaviour in [Behaviour::NoRefreshToken, Behaviour::TwoScopes, Behaviour::OtherScope] {
            let setup = setup(behaviour).await;
            let (finished, _) = follow(&setup, Some("work"), "CONTINUE\n").await;
            let error = refusal(&finished, "token exchange omitted the exact grant");
            assert!(error.contains("write"), "{behaviour:?}: {error}");
            assert_eq!(setup.fake.exchanges.load(Ordering::SeqCst), 2, "{behaviour:?}");
            assert_nothing_written(&setup);
            assert!(!setup.output.exists());
            assert_no_problems(&setup);
        }
    }

    #[tokio::test]
    async fn a_token_endpoint_refusal_does_not_complete_and_is_not_echoed() {
        let setup = setup(Behaviour::RefusedCode).await;
        let (finished, _) = follow(&setup, None, "CONTINUE\n").await;
        let error = refusal(&finished, "authorization did not complete");
        assert!(error.contains("invalid_grant") && error.contains("HTTP 400"), "{error}");
        assert_nothing_written(&setup);
        assert_no_problems(&setup);
    }

    #[tokio::test]
    async fn the_account_id_and_the_endpoints_are_checked_first() {
        let setup = setup(Behaviour::Exact).await;
        for id in ["Work", "", "work@example.com", "wörk"] {
            let (finished, _) = follow(&setup, Some(id), "CONTINUE\n").await;
            refusal(&finished, "account id");
            assert!(finished.stderr.is_empty());
        }
        for (url, accepted) in [
            ("https://accounts.example/auth", true),
            ("http://127.0.0.1:9/token", true),
            ("http://[::1]:9/token", true),
            ("http://localhost:9/token", true),
            ("http://accounts.example/auth", false),
            ("https://user:pass@accounts.example/auth", false),
            ("ftp://accounts.example/", false),
            ("accounts.example/auth", false),
        ] {
            let checked = endpoint("token", TOKEN_URL_VARIABLE, url);
            assert_eq!(checked.is_ok(), accepted, "{url}");
            if let Err(error) = checked {
                assert!(!error.to_string().contains("pass"), "{error}");
            }
        }
        let insecure = Setup {
            config: Config {
                token_url: "http://oauth.example/token".into(),
                ..setup.config.clone()
            },
            ..setup
        };
        let (finished, _) = follow(&insecure, None, "CONTINUE\n").await;
        let error = refusal(&finished, "the OAuth token endpoint");
        assert!(error.contains(TOKEN_URL_VARIABLE), "{error}");
    }

    #[test]
    fn only_the_callback_ends_a_consent() {
        let head = |target: &str| format!("GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
        let outcome = |head: &str| {
            let (status, page, callback) = classify(head, "expected", MailScope::Read);
            let callback = callback.map(|callback| match callback {
                Callback::Code(code) => Ok(code),
                Callback::Refused(reason) => Err(reason),
            });
            (status, page, callback)
        };
        for target in ["/favicon.ico", "/", "/?foo=bar", "/other?code=a&state=expected"] {
            assert!(outcome(&head(target)).2.is_none(), "{target}");
        }
        assert_eq!(
            outcome("POST /?code=a&state=expected HTTP/1.1\r\n\r\n").0,
            "405 Method Not Allowed"
        );
        assert_eq!(outcome("garbage\r\n\r\n").0, "400 Bad Request");
        let (status, page, callback) = outcome(&head("/?code=the%2Fcode&state=expected&scope=x"));
        assert_eq!((status, callback), ("200 OK", Some(Ok("the/code".to_owned()))));
        assert!(page.contains("close this window") && !page.contains("the/code"));
        // Without this consent's state, nothing ends it: not a code, not an error.
        for target in [
            "/?code=a&state=other",
            "/?code=a",
            "/?error=access_denied",
            "/?error=access_denied&state=other",
        ] {
            let (status, page, callback) = outcome(&head(target));
            assert_eq!((status, callback), ("400 Bad Request", None), "{target}");
            assert!(!page.contains("did not complete"), "{page}");
        }
        for target in [
            "/?state=expected",
            "/?code=&state=expected",
            "/?error=access_denied&state=expected",
            "/?error=%3Cscript%3E&state=expected",
        ] {
            let (_, page, callback) = outcome(&head(target));
            let reason = callback.expect("ends the consent").expect_err("refused");
            assert!(!reason.contains('<'), "{reason}");
            assert!(page.contains("did not complete") && !page.contains("script"), "{page}");
        }
    }

    #[test]
    fn the_environment_overrides_only_the_endpoints() {
        assert_eq!(Config::from_env(|_| None), Config::default());
        assert_eq!(Config::default().ports, [8765, 8766, 8767]);
        let vars = HashMap::from([
            (AUTHORIZE_URL_VARIABLE, "http://127.0.0.1:1/auth"),
            (TOKEN_URL_VARIABLE, " "),
        ]);
        let config = Config::from_env(|name| vars.get(name).map(|value| (*value).to_owned()));
        assert_eq!(config.authorize_url, "http://127.0.0.1:1/auth");
        assert_eq!(config.token_url, TOKEN_URL);
        assert_eq!(config.ports, CONSENT_PORTS);
    }

    #[test]
    fn pkce_values_are_long_random_and_unreserved() {
        let verifier = random_token(3);
        assert_eq!(verifier.len(), 64);
        assert!(
            verifier
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        );
        assert_ne!(verifier, random_token(3));
        assert_eq!(random_token(2).len(), 43);
    }
}
