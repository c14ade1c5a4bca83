//! The mail accounts manifest. The schedule role reads account ids only ([`AccountIds`]): it
//! never holds or opens a credential document, and the paths are not even kept. Preflight and
//! the mail roles read the whole [`Manifest`], with every account's [`AccountFiles`].

use serde::Deserialize;

/// The account id of the legacy single-account form (the three `MAIL_*_CREDENTIAL_FILE` paths).
pub const LEGACY_ACCOUNT_ID: &str = "default";

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ManifestError {
    #[error("the accounts manifest is not valid JSON of the expected shape: {0}")]
    Shape(String),
    #[error("the accounts manifest must have version 1")]
    Version,
    #[error("account id `{0}` must be lowercase letters, digits, `-` or `_`")]
    AccountId(String),
    #[error("account id `{0}` is listed twice")]
    DuplicateAccount(String),
    #[error("default_account `{0}` is not one of the accounts")]
    DefaultAccount(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAccount {
    account_id: String,
    read_credential_file: String,
    write_credential_file: String,
    send_credential_file: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawManifest {
    version: u32,
    default_account: String,
    accounts: Vec<RawAccount>,
}

/// The connected accounts' ids.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccountIds {
    pub default_account: String,
    pub accounts: Vec<String>,
}

/// An account id: a lowercase routing id of ASCII letters, digits, `-` and `_` (not necessarily
/// the mailbox address).
pub fn valid_account_id(id: &str) -> bool {
    !id.is_empty()
        && id
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

fn validated(bytes: &[u8]) -> Result<RawManifest, ManifestError> {
    let raw: RawManifest = serde_json::from_slice(bytes).map_err(|error| ManifestError::Shape(error.to_string()))?;
    if raw.version != 1 {
        return Err(ManifestError::Version);
    }
    for (index, account) in raw.accounts.iter().enumerate() {
        let id = &account.account_id;
        if !valid_account_id(id) {
            return Err(ManifestError::AccountId(id.clone()));
        }
        if raw.accounts[..index].iter().any(|earlier| earlier.account_id == *id) {
            return Err(ManifestError::DuplicateAccount(id.clone()));
        }
    }
    if !raw
        .accounts
        .iter()
        .any(|account| account.account_id == raw.default_account)
    {
        return Err(ManifestError::DefaultAccount(raw.default_account));
    }
    Ok(raw)
}

/// One account's three credential documents, as paths (never opened here).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccountFiles {
    pub account_id: String,
    pub read: String,
    pub write: String,
    pub send: String,
}

/// The whole manifest: the default account and every account's credential paths.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Manifest {
    pub default_account: String,
    /// In manifest order.
    pub accounts: Vec<AccountFiles>,
}

impl Manifest {
    pub fn parse(bytes: &[u8]) -> Result<Manifest, ManifestError> {
        let raw = validated(bytes)?;
        Ok(Manifest {
            default_account: raw.default_account,
            accounts: raw
                .accounts
                .into_iter()
                .map(|account| AccountFiles {
                    account_id: account.account_id,
                    read: account.read_credential_file,
                    write: account.write_credential_file,
                    send: account.send_credential_file,
                })
                .collect(),
        })
    }
}

impl AccountIds {
    pub fn parse(bytes: &[u8]) -> Result<AccountIds, ManifestError> {
        let raw = validated(bytes)?;
        Ok(AccountIds {
            default_account: raw.default_account,
            accounts: raw.accounts.into_iter().map(|account| account.account_id).collect(),
        })
    }

    /// The single account of the legacy three-path form.
    pub fn legacy() -> AccountIds {
        AccountIds {
            default_account: LEGACY_ACCOUNT_ID.to_owned(),
            accounts: vec![LEGACY_ACCOUNT_ID.to_owned()],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MANIFEST: &str = r#"{"version": 1, "default_account": "personal", "accounts": [
        {"account_id": "personal", "read_credential_file": "/etc/x/r.json", "write_credential_file": "/etc/x/w.json",
         "send_credential_file": "/etc/x/s.json"}]}"#;

    #[test]
    fn reads_ids_only_and_checks_the_shape() {
        let ids = AccountIds::parse(MANIFEST.as_bytes()).expect("valid");
        assert_eq!(
            ids,
            AccountIds {
                default_account: "personal".into(),
                accounts: vec!["personal".into()]
            }
        );
        assert_eq!(
            AccountIds::parse(MANIFEST.replace("\"version\": 1", "\"version\": 2").as_bytes()),
            Err(ManifestError::Version)
        );
        assert!(matches!(
            AccountIds::parse(
                MANIFEST
                    .replace("\"default_account\": \"personal\"", "\"default_account\": \"work\"")
                    .as_bytes()
            ),
            Err(ManifestError::DefaultAccount(_))
        ));
        assert!(matches!(
            AccountIds::parse(MANIFEST.replace("personal", "Personal").as_bytes()),
            Err(ManifestError::AccountId(_))
        ));
        let twice = MANIFEST.replace(
            "}]}",
            r#"}, {"account_id": "personal", "read_credential_file": "/etc/y/r.json",
                 "write_credential_file": "/etc/y/w.json", "send_credential_file": "/etc/y/s.json"}]}"#,
        );
        assert_eq!(
            AccountIds::parse(twice.as_bytes()),
            Err(ManifestError::DuplicateAccount("personal".into()))
        );
        assert!(matches!(
            AccountIds::parse(
                MANIFEST
                    .replace("\"version\": 1,", "\"version\": 1, \"extra\": 1,")
                    .as_bytes()
            ),
            Err(ManifestError::Shape(_))
        ));
    }
}
