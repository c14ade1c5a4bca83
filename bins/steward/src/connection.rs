//! Where the command keeps its connection: the base URL and this device's id in
//! `<config dir>/steward/connection.json` (never the token), and the token in the OS credential
//! store, or, where no credential store service runs, in an owner-only file beside it (said once,
//! when connecting).

use std::fs;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};

const SERVICE: &str = "steward";

/// Where the token lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenStore {
    /// The OS credential store (Secret Service, Keychain, Credential Manager).
    Keyring,
    /// `<config dir>/steward/token`, mode 0600, because no credential store service answered.
    File,
}

/// `connection.json`: what is not secret.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Connection {
    pub base_url: String,
    /// This device's id, minted at connect, sent only to revoke its registration.
    pub client_device_id: String,
    pub token_store: TokenStore,
}

/// The command's configuration directory: `$XDG_CONFIG_HOME/steward` (or the platform's).
pub fn directory() -> anyhow::Result<PathBuf> {
    let base = dirs::config_dir().context("no configuration directory (set HOME or XDG_CONFIG_HOME)")?;
    Ok(base.join("steward"))
}

fn connection_file(dir: &Path) -> PathBuf {
    dir.join("connection.json")
}

fn token_file(dir: &Path) -> PathBuf {
    dir.join("token")
}

/// The saved connection, if any.
pub fn load() -> anyhow::Result<Option<Connection>> {
    let path = connection_file(&directory()?);
    let text = match fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(error).with_context(|| format!("read {}", path.display())),
    };
    let connection = serde_json::from_str(&text).with_context(|| format!("{} is not readable", path.display()))?;
    Ok(Some(connection))
}

/// The saved connection and its token; an error that says to connect when there is none.
pub fn load_with_token() -> anyhow::Result<(Connection, String)> {
    let Some(connection) = load()? else {
        bail!("not connected; run `steward connect <URL>` first");
    };
    let token = read_token(&connection)?;
    Ok((connection, token))
}

/// The token of a saved connection.
pub fn read_token(connection: &Connection) -> anyhow::Result<String> {
    match connection.token_store {
        TokenStore::Keyring => keyring::Entry::new(SERVICE, &connection.base_url)
            .and_then(|entry| entry.get_password())
            .context("the token is not in the credential store; run `steward connect` again"),
        TokenStore::File => {
            // Opened without following links, then checked on the open file: a regular file
            // of this user's, mode 0600 or 0400, no extended ACL entries.
            let path = token_file(&directory()?);
            let bytes = hardening::secret_file::read_owner_only(&path).context("read the token file")?;
            let token = String::from_utf8(bytes).context("the token file is not UTF-8")?;
            Ok(token.trim().to_owned())
        }
    }
}

/// Keeps `token` for `base_url`: in the credential store, or in the owner-only file when no
/// store answers. The saved connection replaces any earlier one.
pub fn save(base_url: &str, token: &str) -> anyhow::Result<Connection> {
    let dir = directory()?;
    fs::create_dir_all(&dir).with_context(|| format!("create {}", dir.display()))?;
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o700))
        .with_context(|| format!("make {} owner-only", dir.display()))?;
    let previous = load().ok().flatten();
    if let Some(previous) = previous.as_ref().filter(|previous| previous.base_url != base_url) {
        // The token of the server connected before goes with the connection it belonged to.
        clear(previous)?;
    }
    let token_store = match keyring::Entry::new(SERVICE, base_url).and_then(|entry| entry.set_password(token)) {
        Ok(()) => {
            let _ = fs::remove_file(token_file(&dir));
            TokenStore::Keyring
        }
        Err(error) => {
            let path = token_file(&dir);
            write_owner_only(&path, token)?;
            crate::say!(
                "steward: no credential store answered ({error}); the token is kept in {}, readable only by you",
                path.display()
            );
            TokenStore::File
        }
    };
    let connection = Connection {
        base_url: base_url.to_owned(),
        client_device_id: previous.filter(|previous| previous.base_url == base_url).map_or_else(
            || uuid::Uuid::new_v4().to_string(),
            |previous| previous.client_device_id,
        ),
        token_store,
    };
    let text = serde_json::to_string_pretty(&connection).context("encode the connection")?;
    let path = connection_file(&dir);
    let staging = dir.join("connection.json.new");
    fs::write(&staging, text).with_context(|| format!("write {}", staging.display()))?;
    fs::rename(&staging, &path).with_context(|| format!("write {}", path.display()))?;
    Ok(connection)
}

/// Writes `token` to a new owner-only file (replacing an old one whole).
fn write_owner_only(path: &Path, token: &str) -> anyhow::Result<()> {
    let staging = path.with_extension("new");
    let _ = fs::remove_file(&staging);
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&staging)
        .with_context(|| format!("create {}", staging.display()))?;
    file.write_all(token.as_bytes())
        .and_then(|()| file.sync_all())
        .with_context(|| format!("write {}", staging.display()))?;
    fs::rename(&staging, path).with_context(|| format!("write {}", path.display()))
}

/// Removes the token and the connection, wherever they are; what could not be removed is an
/// error only when something is left behind.
pub fn clear(connection: &Connection) -> anyhow::Result<()> {
    let dir = directory()?;
    if connection.token_store == TokenStore::Keyring {
        match keyring::Entry::new(SERVICE, &connection.base_url).and_then(|entry| entry.delete_credential()) {
            Ok(()) | Err(keyring::Error::NoEntry) => {}
            Err(error) => bail!("the token could not be removed from the credential store: {error}"),
        }
    }
    for path in [token_file(&dir), connection_file(&dir)] {
        match fs::remove_file(&path) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(error).with_context(|| format!("remove {}", path.display())),
        }
    }
    Ok(())
}
