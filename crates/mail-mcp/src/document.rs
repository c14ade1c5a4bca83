//! Mail credential documents: owner-only JSON files holding one OAuth grant of exactly one
//! scope, written by `mail-mcp bootstrap` and never edited. Keys are exactly `client_id`,
//! `client_secret`, `refresh_token` and `scope` (all non-empty strings), plus `account_id` in
//! a document bootstrapped with `--account-id`; such a tagged document is refused under any
//! other account id. The secrets are kept out of `Debug` output.

use std::fmt;
use std::path::Path;

use serde::Deserialize;

/// The three designed scopes, one per document.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MailScope {
    /// `mail-read.json`: read-only.
    Read,
    /// `mail-write.json`: modify (drafts, labels).
    Write,
    /// `mail-send.json`: send only.
    Send,
}

impl MailScope {
    pub const ALL: [MailScope; 3] = [MailScope::Read, MailScope::Write, MailScope::Send];

    /// The provider scope URL the document must hold.
    pub fn url(self) -> &'static str {
        match self {
            MailScope::Read => "https://www.googleapis.com/auth/gmail.readonly",
            MailScope::Write => "https://www.googleapis.com/auth/gmail.modify",
            MailScope::Send => "https://www.googleapis.com/auth/gmail.send",
        }
    }

    /// `read`, `write` or `send`.
    pub fn kind(self) -> &'static str {
        match self {
            MailScope::Read => "read",
            MailScope::Write => "write",
            MailScope::Send => "send",
        }
    }

    /// The document's file name as bootstrap writes it.
    pub fn file_name(self) -> &'static str {
        match self {
            MailScope::Read => "mail-read.json",
            MailScope::Write => "mail-write.json",
            MailScope::Send => "mail-send.json",
        }
    }

    fn from_url(url: &str) -> Option<MailScope> {
        MailScope::ALL.into_iter().find(|scope| scope.url() == url)
    }
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum DocumentError {
    #[error("mail credential document is not valid: {0}")]
    Shape(String),
    #[error("mail credential document has an empty `{0}`")]
    Empty(&'static str),
    #[error("mail credential document holds an unknown scope; it must be exactly one of the three designed scopes")]
    UnknownScope,
    #[error("mail credential document holds the {found:?} scope where the {expected:?} scope belongs")]
    WrongScope { expected: MailScope, found: MailScope },
    #[error("configured account id rejected: the document is tagged for another account")]
    AccountMismatch,
    #[error("{0}")]
    File(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    client_id: String,
    client_secret: String,
    refresh_token: String,
    scope: String,
    #[serde(default)]
    account_id: Option<String>,
}

/// A checked credential document.
#[derive(Clone, PartialEq, Eq)]
pub struct CredentialDocument {
    pub client_id: String,
    client_secret: String,
    refresh_token: String,
    pub scope: MailScope,
    /// The account the document was bootstrapped for, when tagged.
    pub account_id: Option<String>,
}

impl fmt::Debug for CredentialDocument {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CredentialDocument")
            .field("client_id", &self.client_id)
            .field("client_secret", &"<redacted>")
            .field("refresh_token", &"<redacted>")
            .field("scope", &self.scope)
            .field("account_id", &self.account_id)
            .finish()
    }
}

impl CredentialDocument {
    /// Parses a document that must hold `expected` and, when `account` is given, be untagged or
    /// tagged for that account.
    pub fn parse(
        bytes: &[u8],
        expected: MailScope,
        account: Option<&str>,
    ) -> Result<CredentialDocument, DocumentError> {
        // serde's message may quote a value; name the problem without echoing the document.
        let raw: Raw = serde_json::from_slice(bytes).map_err(|error| {
            DocumentError::Shape(match error.classify() {
                serde_json::error::Category::Data => {
                    "keys must be exactly client_id, client_secret, refresh_token, scope (and account_id when tagged), all strings".into()
                }
                _ => "it is not a JSON object".into(),
            })
        })?;
        for (name, value) in [
            ("client_id", &raw.client_id),
            ("client_secret", &raw.client_secret),
            ("refresh_token", &raw.refresh_token),
            ("scope", &raw.scope),
        ] {
            if value.trim().is_empty() {
                return Err(DocumentError::Empty(name));
            }
        }
        if raw.account_id.as_deref().is_some_and(|tag| tag.trim().is_empty()) {
            return Err(DocumentError::Empty("account_id"));
        }
        let found = MailScope::from_url(raw.scope.trim()).ok_or(DocumentError::UnknownScope)?;
        if found != expected {
            return Err(DocumentError::WrongScope { expected, found });
        }
        if let (Some(tag), Some(account)) = (raw.account_id.as_deref(), account)
            && tag != account
        {
            return Err(DocumentError::AccountMismatch);
        }
        Ok(CredentialDocument {
            client_id: raw.client_id,
            client_secret: raw.client_secret,
            refresh_token: raw.refresh_token,
            scope: found,
            account_id: raw.account_id,
        })
    }

    /// Reads `path` after the owner-only checks every secret passes, then parses it.
    pub fn load(path: &Path, expected: MailScope, account: Option<&str>) -> Result<CredentialDocument, DocumentError> {
        let bytes =
            hardening::secret_file::read_owner_only(path).map_err(|error| DocumentError::File(error.to_string()))?;
        CredentialDocument::parse(&bytes, expected, account)
    }

    pub fn client_secret(&self) -> &str {
        &self.client_secret
    }

    pub fn refresh_token(&self) -> &str {
        &self.refresh_token
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn document(scope: MailScope, tag: Option<&str>) -> String {
        let mut value = serde_json::json!({
            "client_id": "client.apps.example",
            "client_secret": "client-secret-value",
            "refresh_token": "refresh-token-value",
            "scope": scope.url(),
        });
        if let Some(tag) = tag {
            value["account_id"] = tag.into();
        }
        value.to_string()
    }

    #[test]
    fn accepts_each_scope_in_its_own_document() {
        for scope in MailScope::ALL {
            let parsed =
                CredentialDocument::parse(document(scope, None).as_bytes(), scope, Some("work")).expect("valid");
            assert_eq!(parsed.scope, scope);
            assert_eq!(parsed.refresh_token(), "refresh-token-value");
        }
    }

    #[test]
    fn refuses_the_wrong_scope_unknown_scopes_and_extra_or_missing_keys() {
        let read = document(MailScope::Read, None);
        assert_eq!(
            CredentialDocument::parse(read.as_bytes(), MailScope::Send, None),
            Err(DocumentError::WrongScope {
                expected: MailScope::Send,
                found: MailScope::Read
            })
        );
        let broad = read.replace("gmail.readonly", "gmail");
        assert_eq!(
            CredentialDocument::parse(broad.as_bytes(), MailScope::Read, None),
            Err(DocumentError::UnknownScope)
        );
        let two = read.replace(
            "gmail.readonly",
            "gmail.readonly https://www.googleapis.com/auth/gmail.send",
        );
        assert_eq!(
            CredentialDocument::parse(two.as_bytes(), MailScope::Read, None),
            Err(DocumentError::UnknownScope)
        );
        let extra = read.replace("\"scope\"", "\"label\":\"x\",\"scope\"");
        assert!(matches!(
            CredentialDocument::parse(extra.as_bytes(), MailScope::Read, None),
            Err(DocumentError::Shape(_))
        ));
        let empty = read.replace("refresh-token-value", " ");
        assert_eq!(
            CredentialDocument::parse(empty.as_bytes(), MailScope::Read, None),
            Err(DocumentError::Empty("refresh_token"))
        );
        assert!(matches!(
            CredentialDocument::parse(b"not json", MailScope::Read, None),
            Err(DocumentError::Shape(_))
        ));
    }

    #[test]
    fn a_tagged_document_is_refused_under_another_account() {
        let tagged = document(MailScope::Write, Some("work"));
        assert!(CredentialDocument::parse(tagged.as_bytes(), MailScope::Write, Some("work")).is_ok());
        let refused = CredentialDocument::parse(tagged.as_bytes(), MailScope::Write, Some("home"));
        assert_eq!(refused, Err(DocumentError::AccountMismatch));
        assert!(
            refused
                .expect_err("mismatch")
                .to_string()
                .starts_with("configured account id rejected")
        );
    }

    #[test]
    fn secrets_never_reach_debug_output_or_errors() {
        let parsed = CredentialDocument::parse(document(MailScope::Send, None).as_bytes(), MailScope::Send, None)
            .expect("valid");
        let debug = format!("{parsed:?}");
        assert!(
            !debug.contains("client-secret-value") && !debug.contains("refresh-token-value"),
            "{debug}"
        );
        let numeric = document(MailScope::Send, None).replace("\"refresh-token-value\"", "12345");
        let error = CredentialDocument::parse(numeric.as_bytes(), MailScope::Send, None).expect_err("not a string");
        assert!(!error.to_string().contains("client-secret-value"), "{error}");
    }

    #[test]
    fn loading_checks_the_file_before_parsing() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(MailScope::Read.file_name());
        std::fs::write(&path, document(MailScope::Read, None)).expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let error = CredentialDocument::load(&path, MailScope::Read, None).expect_err("shared");
        assert!(error.to_string().contains("must be owner-only"), "{error}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        assert!(CredentialDocument::load(&path, MailScope::Read, None).is_ok());
    }
}
