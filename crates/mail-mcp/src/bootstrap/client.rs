//! The OAuth client file: owner-only, a Desktop-app client.

use super::*;

/// The client id and secret; the secret stays out of `Debug`.
pub(super) struct Client {
    pub(super) id: String,
    pub(super) secret: String,
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
pub(super) struct ClientFile {
    pub(super) installed: Option<InstalledClient>,
    pub(super) web: Option<serde::de::IgnoredAny>,
}

#[derive(Deserialize)]
pub(super) struct InstalledClient {
    pub(super) client_id: String,
    pub(super) client_secret: String,
}

/// Reads the client file through the secret-file checks; also returns the running user's uid.
pub(super) fn read_client(path: &Path) -> Result<(Client, u32), BootstrapError> {
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
