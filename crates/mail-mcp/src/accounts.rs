//! The connected accounts, loaded fail-closed at role start from the mail environment: every
//! account's three documents (read, write, send) are checked and parsed before the role serves,
//! so a missing, shared, symlinked, mis-scoped or mis-tagged document stops the role instead of
//! surfacing later as a tool failure.
//!
//! Under systemd the worker runs as its own user and cannot read the service user's 0700
//! account directories: the unit loads each document as a credential named
//! `mail-<account_id>-<read|write|send>` (`LoadCredential=`, a private 0400 copy), and a
//! document found under that name in `$CREDENTIALS_DIRECTORY` is read instead of the manifest's
//! path.

use std::path::{Path, PathBuf};

use domain::mail_environment::{MailEnvironment, MailEnvironmentError};
use domain::manifest::{AccountFiles, AccountIds, Manifest};

use crate::document::{CredentialDocument, DocumentError, MailScope};

pub use domain::manifest::LEGACY_ACCOUNT_ID;

/// One connected account and its three credential documents.
#[derive(Clone, Debug)]
pub struct Account {
    pub account_id: String,
    pub read: CredentialDocument,
    pub write: CredentialDocument,
    pub send: CredentialDocument,
}

/// Every connected account, the default first.
#[derive(Clone, Debug)]
pub struct MailAccounts {
    pub default_account: String,
    pub accounts: Vec<Account>,
}

#[derive(Debug, thiserror::Error)]
pub enum AccountsError {
    #[error("{0}")]
    Environment(#[from] MailEnvironmentError),
    #[error("MAIL_ACCOUNTS_FILE {path}: {reason}")]
    Manifest { path: PathBuf, reason: String },
    #[error("mail account `{account}`, {file}: {source}")]
    Document {
        account: String,
        file: PathBuf,
        source: DocumentError,
    },
    #[error("mail account `{0}`: its three documents must share one directory of their own")]
    Directory(String),
    #[error("the credential `{0}` is loaded: this role holds read documents only")]
    HoldsWriteDocument(String),
}

/// One connected account as a reading role (the async worker) holds it: the read document,
/// and neither the write nor the send document.
#[derive(Clone, Debug)]
pub struct ReadAccount {
    pub account_id: domain::ids::AccountId,
    pub read: CredentialDocument,
}

/// The read documents of the accounts the environment configures (the same mail
/// configuration every application role gets), loaded fail-closed; `None` when mail is off.
/// The write and send documents are never opened, and a write or send document among the
/// role's systemd credentials (`mail-<id>-write`, `mail-<id>-send`) refuses the start: such a
/// unit was given what this role must never hold.
pub fn read_accounts_from_env(get: impl Fn(&str) -> Option<String>) -> Result<Option<Vec<ReadAccount>>, AccountsError> {
    if let Some(directory) = credentials_directory(&get)
        && let Ok(entries) = std::fs::read_dir(directory)
    {
        let mut names: Vec<String> = entries
            .filter_map(|entry| entry.ok())
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .filter(|name| name.starts_with("mail-") && (name.ends_with("-write") || name.ends_with("-send")))
            .collect();
        names.sort();
        if let Some(name) = names.into_iter().next() {
            return Err(AccountsError::HoldsWriteDocument(name));
        }
    }
    let Some(configured) = Configured::from_env(get)? else {
        return Ok(None);
    };
    configured
        .accounts
        .iter()
        .map(|files| {
            Ok(ReadAccount {
                account_id: files.account_id.clone().into(),
                read: configured.load(files, MailScope::Read)?,
            })
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// `$CREDENTIALS_DIRECTORY`, where systemd puts the unit's credentials.
fn credentials_directory(get: &impl Fn(&str) -> Option<String>) -> Option<PathBuf> {
    get("CREDENTIALS_DIRECTORY")
        .filter(|directory| !directory.is_empty())
        .map(PathBuf::from)
}

/// The accounts the environment configures with their documents' paths checked (each account's
/// three documents share one directory of their own); nothing is opened but the manifest.
struct Configured {
    default_account: String,
    accounts: Vec<AccountFiles>,
    /// Documents must carry no other account's tag (the manifest form; the legacy form has no
    /// configured id to hold a tag against).
    tagged: bool,
    credentials: Option<PathBuf>,
}

impl Configured {
    /// Loads the `scope` document of `files` (see [`load_document`]).
    fn load(&self, files: &AccountFiles, scope: MailScope) -> Result<CredentialDocument, AccountsError> {
        load_document(files, scope, self.tagged, self.credentials.as_deref())
    }

    fn from_env(get: impl Fn(&str) -> Option<String>) -> Result<Option<Configured>, AccountsError> {
        let credentials = credentials_directory(&get);
        let (default_account, accounts, tagged) = match MailEnvironment::parse(get)? {
            MailEnvironment::Off => return Ok(None),
            MailEnvironment::Legacy([read, write, send]) => (
                LEGACY_ACCOUNT_ID.to_owned(),
                vec![AccountFiles {
                    account_id: LEGACY_ACCOUNT_ID.into(),
                    read,
                    write,
                    send,
                }],
                false,
            ),
            MailEnvironment::Manifest(path) => {
                let manifest = read_manifest(Path::new(&path))?;
                (manifest.default_account, manifest.accounts, true)
            }
        };
        let mut directories = std::collections::BTreeSet::new();
        for files in &accounts {
            let parents: Vec<Option<&Path>> = [&files.read, &files.write, &files.send]
                .iter()
                .map(|path| Path::new(path.as_str()).parent())
                .collect();
            if parents.iter().any(|parent| *parent != parents[0]) || !directories.insert(parents[0]) {
                return Err(AccountsError::Directory(files.account_id.clone()));
            }
        }
        Ok(Some(Configured {
            default_account,
            accounts,
            tagged,
            credentials,
        }))
    }
}

impl MailAccounts {
    /// Loads the accounts the environment (read through `get`) configures; `None` when mail
    /// is off.
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Result<Option<MailAccounts>, AccountsError> {
        let Some(configured) = Configured::from_env(get)? else {
            return Ok(None);
        };
        let mut accounts = configured
            .accounts
            .iter()
            .map(|files| {
                Ok(Account {
                    account_id: files.account_id.clone(),
                    read: configured.load(files, MailScope::Read)?,
                    write: configured.load(files, MailScope::Write)?,
                    send: configured.load(files, MailScope::Send)?,
                })
            })
            .collect::<Result<Vec<_>, AccountsError>>()?;
        // Default first: tools are composed in this order.
        accounts.sort_by_key(|account| account.account_id != configured.default_account);
        Ok(Some(MailAccounts {
            default_account: configured.default_account,
            accounts,
        }))
    }

    /// The accounts' ids, as the API and the scheduler read them from the manifest.
    pub fn ids(&self) -> AccountIds {
        AccountIds {
            default_account: self.default_account.clone(),
            accounts: self.accounts.iter().map(|account| account.account_id.clone()).collect(),
        }
    }

    /// The default account.
    pub fn default(&self) -> &Account {
        self.accounts
            .iter()
            .find(|account| account.account_id == self.default_account)
            .unwrap_or(&self.accounts[0])
    }
}

fn read_manifest(path: &Path) -> Result<Manifest, AccountsError> {
    let refuse = |reason: String| AccountsError::Manifest {
        path: path.to_owned(),
        reason,
    };
    let bytes = hardening::config_file::read_protected(path).map_err(|error| refuse(error.to_string()))?;
    Manifest::parse(&bytes).map_err(|error| refuse(error.to_string()))
}

/// The systemd credential name of an account's document.
pub fn credential_name(account_id: &str, scope: MailScope) -> String {
    format!("mail-{account_id}-{}", scope.kind())
}

/// Loads the `scope` document of `files`: the systemd credential copy when there is one, else
/// the configured path.
fn load_document(
    files: &AccountFiles,
    scope: MailScope,
    tagged_check: bool,
    credentials: Option<&Path>,
) -> Result<CredentialDocument, AccountsError> {
    // The legacy form has no configured id to hold a tag against.
    let account = tagged_check.then_some(files.account_id.as_str());
    let path = match scope {
        MailScope::Read => &files.read,
        MailScope::Write => &files.write,
        MailScope::Send => &files.send,
    };
    let loaded = credentials
        .map(|directory| directory.join(credential_name(&files.account_id, scope)))
        .filter(|copy| std::fs::symlink_metadata(copy).is_ok())
        .unwrap_or_else(|| PathBuf::from(path));
    CredentialDocument::load(&loaded, scope, account).map_err(|source| AccountsError::Document {
        account: files.account_id.clone(),
        file: loaded,
        source,
    })
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn write_document(dir: &Path, scope: MailScope, tag: Option<&str>) -> String {
        let mut value = serde_json::json!({
            "client_id": "client", "client_secret": "secret", "refresh_token": "refresh", "scope": scope.url(),
        });
        if let Some(tag) = tag {
            value["account_id"] = tag.into();
        }
        let path = dir.join(scope.file_name());
        std::fs::write(&path, value.to_string()).expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        path.display().to_string()
    }

    fn account_dir(root: &Path, id: &str, tag: Option<&str>) -> [String; 3] {
        let dir = root.join(id);
        std::fs::create_dir(&dir).expect("dir");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).expect("chmod");
        MailScope::ALL.map(|scope| write_document(&dir, scope, tag))
    }

    fn manifest(root: &Path, accounts: &[(&str, &[String; 3])], default: &str) -> String {
        let accounts: Vec<_> = accounts
            .iter()
            .map(|(id, [read, write, send])| {
                serde_json::json!({"account_id": id, "read_credential_file": read,
                    "write_credential_file": write, "send_credential_file": send})
            })
            .collect();
        let path = root.join("accounts.json");
        std::fs::write(
            &path,
            serde_json::json!({"version": 1, "default_account": default, "accounts": accounts}).to_string(),
        )
        .expect("manifest");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        path.display().to_string()
    }

    fn load(vars: &[(&str, &str)]) -> Result<Option<MailAccounts>, AccountsError> {
        let vars: HashMap<String, String> = vars.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect();
        MailAccounts::from_env(|name| vars.get(name).cloned())
    }

    #[test]
    fn loads_the_manifest_with_the_default_account_first() {
        let root = tempfile::tempdir().expect("tempdir");
        let personal = account_dir(root.path(), "personal", Some("personal"));
        let work = account_dir(root.path(), "work", None);
        let path = manifest(root.path(), &[("work", &work), ("personal", &personal)], "personal");
        let accounts = load(&[("AGENT_EMAIL_ENABLED", "1"), ("MAIL_ACCOUNTS_FILE", &path)])
            .expect("loads")
            .expect("mail on");
        let ids: Vec<&str> = accounts.accounts.iter().map(|a| a.account_id.as_str()).collect();
        assert_eq!(ids, ["personal", "work"]);
        assert_eq!(accounts.default().send.scope, MailScope::Send);
        assert!(load(&[]).expect("off").is_none());
    }

    #[test]
    fn a_reading_role_opens_read_documents_only_and_refuses_a_loaded_write_or_send_document() {
        let root = tempfile::tempdir().expect("tempdir");
        let work = account_dir(root.path(), "work", Some("work"));
        let path = manifest(root.path(), &[("work", &work)], "work");
        // The write and send documents are never opened: gone from the host, nothing changes.
        std::fs::remove_file(&work[1]).expect("remove write");
        std::fs::remove_file(&work[2]).expect("remove send");
        let credentials = root.path().join("credentials");
        std::fs::create_dir(&credentials).expect("mkdir");
        let directory = credentials.display().to_string();
        let vars = |extra: &[(&str, &str)]| -> HashMap<String, String> {
            [
                ("AGENT_EMAIL_ENABLED", "1"),
                ("MAIL_ACCOUNTS_FILE", path.as_str()),
                ("CREDENTIALS_DIRECTORY", directory.as_str()),
            ]
            .iter()
            .chain(extra)
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect()
        };
        let load = |vars: HashMap<String, String>| read_accounts_from_env(|name| vars.get(name).cloned());
        let accounts = load(vars(&[])).expect("loads").expect("mail on");
        assert_eq!(accounts.len(), 1);
        assert_eq!(
            (accounts[0].account_id.as_str(), accounts[0].read.scope),
            ("work", MailScope::Read)
        );
        for scope in [MailScope::Write, MailScope::Send] {
            let copy = credentials.join(credential_name("work", scope));
            std::fs::write(&copy, "{}").expect("write");
            let error = load(vars(&[])).expect_err("refused");
            assert!(
                matches!(&error, AccountsError::HoldsWriteDocument(name) if *name == credential_name("work", scope)),
                "{error}"
            );
            std::fs::remove_file(&copy).expect("remove");
        }
        assert!(load(HashMap::new()).expect("off").is_none());
        // The same path rules as every role: two accounts in one directory are refused.
        let shared = manifest(root.path(), &[("work", &work), ("home", &work)], "work");
        let error = load(vars(&[("MAIL_ACCOUNTS_FILE", shared.as_str())])).expect_err("shared directory");
        assert!(
            matches!(&error, AccountsError::Directory(account) if account == "home"),
            "{error}"
        );
    }

    #[test]
    fn a_systemd_credential_copy_is_read_instead_of_the_manifest_path() {
        let root = tempfile::tempdir().expect("tempdir");
        let work = account_dir(root.path(), "work", Some("work"));
        let path = manifest(root.path(), &[("work", &work)], "work");
        // Under systemd the role cannot read the host's documents; it reads the copies.
        let credentials = root.path().join("credentials");
        std::fs::create_dir(&credentials).expect("mkdir");
        for scope in MailScope::ALL {
            let copy = credentials.join(credential_name("work", scope));
            std::fs::copy(root.path().join("work").join(scope.file_name()), &copy).expect("copy");
            std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o400)).expect("chmod");
        }
        std::fs::remove_file(&work[1]).expect("the host copy is not needed");
        let credentials = credentials.display().to_string();
        let accounts = load(&[
            ("AGENT_EMAIL_ENABLED", "1"),
            ("MAIL_ACCOUNTS_FILE", &path),
            ("CREDENTIALS_DIRECTORY", &credentials),
        ])
        .expect("loads")
        .expect("mail on");
        assert_eq!(accounts.default().write.scope, MailScope::Write);
        // Without the credentials, the missing host document stops the role.
        let error = load(&[("AGENT_EMAIL_ENABLED", "1"), ("MAIL_ACCOUNTS_FILE", &path)]).expect_err("missing");
        assert!(error.to_string().contains("does not exist"), "{error}");
        assert_eq!(credential_name("work", MailScope::Send), "mail-work-send");
    }

    #[test]
    fn loads_the_legacy_form_as_the_default_account() {
        let root = tempfile::tempdir().expect("tempdir");
        let [read, write, send] = account_dir(root.path(), "legacy", None);
        let accounts = load(&[
            ("AGENT_EMAIL_ENABLED", "1"),
            ("MAIL_READ_CREDENTIAL_FILE", &read),
            ("MAIL_WRITE_CREDENTIAL_FILE", &write),
            ("MAIL_SEND_CREDENTIAL_FILE", &send),
        ])
        .expect("loads")
        .expect("mail on");
        assert_eq!(accounts.default().account_id, LEGACY_ACCOUNT_ID);
    }

    #[test]
    fn fails_closed_on_every_bad_configuration() {
        let root = tempfile::tempdir().expect("tempdir");
        let work = account_dir(root.path(), "work", Some("work"));
        let path = manifest(root.path(), &[("work", &work)], "work");
        let on = |path: &str| load(&[("AGENT_EMAIL_ENABLED", "1"), ("MAIL_ACCOUNTS_FILE", path)]);

        // A tag for another account.
        let home = account_dir(root.path(), "home", Some("work"));
        let mismatched = manifest(root.path(), &[("home", &home)], "home");
        let error = on(&mismatched).expect_err("tag mismatch").to_string();
        assert!(error.contains("configured account id rejected"), "{error}");

        // A missing document while the flag is on.
        let path_ok = manifest(root.path(), &[("work", &work)], "work");
        std::fs::remove_file(&work[2]).expect("remove");
        let error = on(&path_ok).expect_err("missing").to_string();
        assert!(error.contains("does not exist"), "{error}");
        write_document(&root.path().join("work"), MailScope::Send, Some("work"));

        // A shared document, a symlinked one.
        std::fs::set_permissions(&work[0], std::fs::Permissions::from_mode(0o640)).expect("chmod");
        assert!(
            on(&path)
                .expect_err("shared")
                .to_string()
                .contains("must be owner-only")
        );
        std::fs::set_permissions(&work[0], std::fs::Permissions::from_mode(0o600)).expect("chmod");
        let link = root.path().join("work/link.json");
        std::os::unix::fs::symlink(&work[1], &link).expect("symlink");
        let linked = [work[0].clone(), link.display().to_string(), work[2].clone()];
        let with_link = manifest(root.path(), &[("work", &linked)], "work");
        assert!(
            on(&with_link)
                .expect_err("symlink")
                .to_string()
                .contains("symbolic link")
        );

        // A writable manifest, partial enablement, paths while off.
        let good = manifest(root.path(), &[("work", &work)], "work");
        std::fs::set_permissions(&good, std::fs::Permissions::from_mode(0o666)).expect("chmod");
        assert!(
            on(&good)
                .expect_err("writable")
                .to_string()
                .contains("group- or world-writable")
        );
        assert!(matches!(
            load(&[("AGENT_EMAIL_ENABLED", "1"), ("MAIL_READ_CREDENTIAL_FILE", &work[0])]),
            Err(AccountsError::Environment(MailEnvironmentError::Partial))
        ));
        assert!(matches!(
            load(&[("MAIL_ACCOUNTS_FILE", &good)]),
            Err(AccountsError::Environment(MailEnvironmentError::PathsWhileOff))
        ));
    }
}
