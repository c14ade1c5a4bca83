//! The disclosure the operator accepts, then each consent: an authorization code flow with
//! PKCE, a fresh `state` and exactly one scope, its code exchanged at once, within the limit.

use super::*;

pub(super) fn disclosure(directory: &Path, account_id: Option<&str>, ports: &[u16]) -> String {
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
pub(super) fn random_token(uuids: usize) -> String {
    let bytes: Vec<u8> = (0..uuids).flat_map(|_| *uuid::Uuid::new_v4().as_bytes()).collect();
    URL_SAFE_NO_PAD.encode(bytes)
}

/// One scope's granted refresh token; kept out of `Debug`.
pub(super) struct Grant {
    pub(super) scope: MailScope,
    pub(super) refresh_token: String,
}

pub(super) struct Consent<'a> {
    pub(super) scope: MailScope,
    pub(super) number: u32,
    pub(super) port: u16,
    pub(super) client: &'a Client,
    pub(super) authorize_url: &'a Url,
    pub(super) token_url: &'a Url,
    pub(super) http: &'a reqwest::Client,
    pub(super) deadline: Instant,
}

impl Consent<'_> {
    pub(super) async fn run(
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
pub(super) fn plain_code(code: &str) -> bool {
    !code.is_empty() && code.len() <= 64 && code.chars().all(|c| c.is_ascii_lowercase() || c == '_')
}

pub(super) fn limit_passed(name: &str) -> BootstrapError {
    BootstrapError::Incomplete(format!(
        "the five-minute limit passed before the {name} consent completed; run again and finish all three in time"
    ))
}

pub(super) fn expired(clock: &(dyn Clock + Sync), deadline: Instant, name: &str) -> Result<(), BootstrapError> {
    if clock.now() >= deadline {
        return Err(limit_passed(name));
    }
    Ok(())
}
