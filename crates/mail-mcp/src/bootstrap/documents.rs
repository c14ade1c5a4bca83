//! The three credential documents, written only once every grant came back exact; a failed
//! write removes every document it wrote.

use super::*;

#[derive(Serialize)]
pub(super) struct DocumentOut<'a> {
    pub(super) client_id: &'a str,
    pub(super) client_secret: &'a str,
    pub(super) refresh_token: &'a str,
    pub(super) scope: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) account_id: Option<&'a str>,
}

/// Writes the three documents, each created exclusively, and checks each as the roles will load
/// it; on any failure removes what it wrote (and the directory it created).
pub(super) fn write_documents(
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
