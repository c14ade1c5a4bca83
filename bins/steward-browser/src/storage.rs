//! A profile's website session, sealed: the cookies and local storage a sign-in ceremony hands
//! over ([`SiteData`], checked against the profile's origins by [`SiteData::check`]) are kept
//! only encrypted, one file per profile (`<profile>.sealed`, mode 0600) under the role's state
//! directory, with AES-256-GCM under the storage key only this role loads
//! (`BROWSER_STORAGE_KEY_FILE`), a fresh random nonce per write and the profile's id as
//! associated data (a file copied to another profile's name does not open). Nothing of a
//! session is ever logged.

use std::fs;
use std::io::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use browser_policy::egress::Origin;
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use serde::{Deserialize, Serialize};

/// The largest website session a ceremony may hand over (bytes of its JSON).
pub const MAX_SESSION_BYTES: usize = 1024 * 1024;
/// The most cookies a session may carry.
pub const MAX_COOKIES: usize = 3000;

/// One cookie, as the client read it from its sign-in window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CookieData {
    pub name: String,
    pub value: String,
    /// The cookie's domain (a leading dot allowed).
    pub domain: String,
    #[serde(default = "root_path")]
    pub path: String,
    #[serde(default)]
    pub secure: bool,
    #[serde(default)]
    pub http_only: bool,
    /// `Strict`, `Lax` or `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub same_site: Option<String>,
    /// Seconds since the Unix epoch; absent for a session cookie.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires: Option<f64>,
}

fn root_path() -> String {
    "/".to_owned()
}

/// One origin's local storage.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OriginStorage {
    pub origin: String,
    pub items: Vec<(String, String)>,
}

/// A website session: what a ceremony hands over, and what the vault keeps.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SiteData {
    #[serde(default)]
    pub cookies: Vec<CookieData>,
    #[serde(default)]
    pub local_storage: Vec<OriginStorage>,
}

/// Why a handed-over session is refused (the reason names no value).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("the session carries nothing")]
    Empty,
    #[error("the session carries more than {MAX_COOKIES} cookies")]
    TooManyCookies,
    #[error("a cookie has no name")]
    Unnamed,
    #[error("a cookie's domain is not one of the profile's origins")]
    ForeignCookie,
    #[error("local storage of an origin that is not the profile's")]
    ForeignStorage,
    #[error("a cookie's SameSite is not Strict, Lax or None")]
    SameSite,
}

/// Whether a cookie for `domain` is sent to `host` (RFC 6265 §5.1.3 domain-match; the
/// profile's origins are DNS names, never IP literals). A parent domain of the host counts (a
/// sign-in on `login.example.com` may set its session on `example.com`), a single label (a
/// top-level domain) never does.
pub fn domain_matches(host: &str, domain: &str) -> bool {
    let domain = domain
        .trim_start_matches('.')
        .trim_end_matches('.')
        .to_ascii_lowercase();
    let host = host.to_ascii_lowercase();
    domain.contains('.') && (host == domain || host.ends_with(&format!(".{domain}")))
}

impl SiteData {
    /// Accepts a session only when every cookie belongs to (domain-matches) one of `origins`
    /// and every local storage to one of them, exactly; each storage's origin is then written
    /// the one way the browser writes it (`https://host[:port]`).
    pub fn check(&mut self, origins: &[Origin]) -> Result<(), Refused> {
        if self.cookies.is_empty() && self.local_storage.is_empty() {
            return Err(Refused::Empty);
        }
        if self.cookies.len() > MAX_COOKIES {
            return Err(Refused::TooManyCookies);
        }
        for cookie in &self.cookies {
            if cookie.name.is_empty() {
                return Err(Refused::Unnamed);
            }
            if !origins
                .iter()
                .any(|origin| domain_matches(origin.host(), &cookie.domain))
            {
                return Err(Refused::ForeignCookie);
            }
            if cookie
                .same_site
                .as_deref()
                .is_some_and(|same_site| !matches!(same_site, "Strict" | "Lax" | "None"))
            {
                return Err(Refused::SameSite);
            }
        }
        for storage in &mut self.local_storage {
            let origin = Origin::parse(&storage.origin).map_err(|_| Refused::ForeignStorage)?;
            if !origins.contains(&origin) {
                return Err(Refused::ForeignStorage);
            }
            storage.origin = origin.to_string();
        }
        Ok(())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum VaultError {
    #[error("the sealed session of a profile cannot be written or read: {0}")]
    Io(#[from] std::io::Error),
    #[error("the sealed session does not open (another key, another profile's file, or damaged)")]
    Unsealed,
    #[error("the operating system's random source failed")]
    Random,
}

/// The sealed sessions, one file per profile. A sign-in's seal and a removal advance the
/// profile's **generation**, in memory: a writer that read the generation earlier (a closing
/// browser keeping its refreshed cookies, a handoff in flight) writes only if no sign-in or
/// removal happened meanwhile ([`Vault::seal_if`], [`Vault::keep_if`]), so it never brings back
/// a forgotten profile's session or overwrites a newer sign-in. Keeping refreshed cookies does
/// not advance it, so a task closing never refuses a concurrent sign-in. Writes are serialised.
pub struct Vault {
    key: LessSafeKey,
    directory: PathBuf,
    generations: std::sync::Mutex<std::collections::HashMap<String, u64>>,
}

impl Vault {
    /// The vault in `directory` (existing, owner-only) under the 32-byte `key`.
    pub fn new(key: &[u8; 32], directory: PathBuf) -> Vault {
        let key = UnboundKey::new(&AES_256_GCM, key).map(LessSafeKey::new);
        Vault {
            key: key.unwrap_or_else(|_| unreachable!("a 32-byte key is an AES-256 key")),
            directory,
            generations: std::sync::Mutex::new(std::collections::HashMap::new()),
        }
    }

    fn path(&self, profile: &str) -> PathBuf {
        self.directory.join(format!("{profile}.sealed"))
    }

    fn generations(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, u64>> {
        self.generations
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The profile's generation now.
    pub fn generation(&self, profile: &str) -> u64 {
        self.generations().get(profile).copied().unwrap_or(0)
    }

    /// Seals `data` for `profile`, replacing what was kept.
    pub fn seal(&self, profile: &str, data: &SiteData) -> Result<(), VaultError> {
        let mut generations = self.generations();
        self.write(profile, data)?;
        *generations.entry(profile.to_owned()).or_insert(0) += 1;
        Ok(())
    }

    /// Seals `data` for `profile` only if its generation is still `generation`; `false` (and
    /// nothing written) otherwise.
    pub fn seal_if(&self, profile: &str, data: &SiteData, generation: u64) -> Result<bool, VaultError> {
        let mut generations = self.generations();
        if generations.get(profile).copied().unwrap_or(0) != generation {
            return Ok(false);
        }
        self.write(profile, data)?;
        *generations.entry(profile.to_owned()).or_insert(0) += 1;
        Ok(true)
    }

    /// Updates the session kept for `profile` in place with `merge`, only if its generation is
    /// still `generation` and a session is kept; `false` (and nothing written) otherwise. Unlike
    /// a sign-in, keeping a task's refreshed cookies does not advance the generation: a sign-in
    /// begun meanwhile still seals its newer session, and two closing tasks' keeps are
    /// serialised (each reads what the other wrote).
    pub fn keep_if(
        &self,
        profile: &str,
        generation: u64,
        merge: impl FnOnce(&mut SiteData),
    ) -> Result<bool, VaultError> {
        let generations = self.generations();
        if generations.get(profile).copied().unwrap_or(0) != generation {
            return Ok(false);
        }
        let Some(mut kept) = self.open(profile)? else {
            return Ok(false);
        };
        merge(&mut kept);
        self.write(profile, &kept)?;
        drop(generations);
        Ok(true)
    }

    /// Writes the sealed file: to a fresh file beside it, synced, renamed over it, and the
    /// directory synced.
    fn write(&self, profile: &str, data: &SiteData) -> Result<(), VaultError> {
        let mut nonce = [0u8; NONCE_LEN];
        getrandom::fill(&mut nonce).map_err(|_| VaultError::Random)?;
        let mut sealed = serde_json::to_vec(data).map_err(|error| VaultError::Io(error.into()))?;
        self.key
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(profile.as_bytes()),
                &mut sealed,
            )
            .map_err(|_| VaultError::Unsealed)?;
        let mut file = tempfile::Builder::new()
            .prefix(".sealing-")
            .permissions(fs::Permissions::from_mode(0o600))
            .tempfile_in(&self.directory)?;
        file.write_all(&nonce)?;
        file.write_all(&sealed)?;
        file.as_file().sync_all()?;
        file.persist(self.path(profile))
            .map_err(|error| VaultError::Io(error.error))?;
        fs::File::open(&self.directory)?.sync_all()?;
        Ok(())
    }

    /// The session kept for `profile`, if any.
    pub fn open(&self, profile: &str) -> Result<Option<SiteData>, VaultError> {
        let bytes = match fs::read(self.path(profile)) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(error.into()),
        };
        if bytes.len() < NONCE_LEN {
            return Err(VaultError::Unsealed);
        }
        let (nonce, sealed) = bytes.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| VaultError::Unsealed)?;
        let mut sealed = sealed.to_vec();
        let plain = self
            .key
            .open_in_place(nonce, Aad::from(profile.as_bytes()), &mut sealed)
            .map_err(|_| VaultError::Unsealed)?;
        serde_json::from_slice(plain)
            .map(Some)
            .map_err(|_| VaultError::Unsealed)
    }

    /// Whether a session is kept for `profile`.
    pub fn holds(&self, profile: &str) -> bool {
        self.path(profile).is_file()
    }

    /// Removes what is kept for `profile` (advancing its generation); `false` when nothing was.
    pub fn remove(&self, profile: &str) -> Result<bool, VaultError> {
        let mut generations = self.generations();
        *generations.entry(profile.to_owned()).or_insert(0) += 1;
        match fs::remove_file(self.path(profile)) {
            Ok(()) => Ok(true),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(error) => Err(error.into()),
        }
    }

    pub fn directory(&self) -> &Path {
        &self.directory
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origins() -> Vec<Origin> {
        vec![Origin::parse("https://shop.example").expect("origin")]
    }

    fn cookie(domain: &str) -> CookieData {
        CookieData {
            name: "sid".into(),
            value: "v".into(),
            domain: domain.into(),
            path: "/".into(),
            secure: true,
            http_only: true,
            same_site: Some("Lax".into()),
            expires: None,
        }
    }

    #[test]
    fn a_session_belongs_to_the_profiles_origins_only() {
        let mut data = SiteData {
            cookies: vec![cookie("shop.example"), cookie(".shop.example")],
            local_storage: vec![OriginStorage {
                origin: "https://shop.example".into(),
                items: vec![("k".into(), "v".into())],
            }],
        };
        assert_eq!(data.check(&origins()), Ok(()));
        data.cookies.push(cookie("tracker.example"));
        assert_eq!(data.check(&origins()), Err(Refused::ForeignCookie));
        data.cookies.pop();
        // A top-level domain's cookie would go to every site under it: refused.
        data.cookies.push(cookie("example"));
        assert_eq!(data.check(&origins()), Err(Refused::ForeignCookie));
        data.cookies.pop();
        data.local_storage[0].origin = "https://shop.example:8443".into();
        assert_eq!(data.check(&origins()), Err(Refused::ForeignStorage));
        assert_eq!(SiteData::default().check(&origins()), Err(Refused::Empty));
        // An origin written another way is accepted and written the browser's way.
        let mut data = SiteData {
            cookies: Vec::new(),
            local_storage: vec![OriginStorage {
                origin: "https://Shop.Example:443/".into(),
                items: vec![("k".into(), "v".into())],
            }],
        };
        assert_eq!(data.check(&origins()), Ok(()));
        assert_eq!(data.local_storage[0].origin, "https://shop.example");
    }

    #[test]
    fn a_sealed_session_opens_only_with_its_key_and_for_its_profile() {
        let dir = tempfile::tempdir().expect("dir");
        let vault = Vault::new(&[7; 32], dir.path().to_owned());
        let data = SiteData {
            cookies: vec![cookie("shop.example")],
            local_storage: Vec::new(),
        };
        vault.seal("p1", &data).expect("seal");
        let raw = fs::read(dir.path().join("p1.sealed")).expect("read");
        assert!(!raw.windows(3).any(|window| window == b"sid"), "the file is not plain");
        assert_eq!(vault.open("p1").expect("open"), Some(data.clone()));
        fs::copy(dir.path().join("p1.sealed"), dir.path().join("p2.sealed")).expect("copy");
        assert!(matches!(vault.open("p2"), Err(VaultError::Unsealed)));
        let other = Vault::new(&[8; 32], dir.path().to_owned());
        assert!(matches!(other.open("p1"), Err(VaultError::Unsealed)));
        assert_eq!(vault.open("p3").expect("nothing kept"), None);
        // A writer that read generation g seals only while it is still g.
        let read = vault.generation("p1");
        vault.seal("p1", &data).expect("a newer sign-in");
        assert!(!vault.seal_if("p1", &data, read).expect("refused"));
        let read = vault.generation("p1");
        assert!(vault.remove("p1").expect("remove"));
        assert!(!vault.seal_if("p1", &data, read).expect("refused after removal"));
        assert_eq!(
            vault.open("p1").expect("open"),
            None,
            "a removed session does not come back"
        );
        assert!(!vault.remove("p1").expect("gone"));
        // Keeping a task's refreshed cookies needs a kept session, refuses a changed generation
        // and does not advance it: a sign-in that read the generation before still seals.
        let read = vault.generation("p1");
        assert!(!vault.keep_if("p1", read, |_| ()).expect("nothing kept to update"));
        vault.seal("p1", &data).expect("signed in");
        let read = vault.generation("p1");
        let refreshed = cookie("login.shop.example");
        assert!(
            vault
                .keep_if("p1", read, |kept| kept.cookies.push(refreshed.clone()))
                .expect("kept")
        );
        assert_eq!(vault.generation("p1"), read, "keeping does not advance the generation");
        assert_eq!(vault.open("p1").expect("open").map(|kept| kept.cookies.len()), Some(2));
        assert!(
            !vault
                .keep_if("p1", read - 1, |_| ())
                .expect("an older reader is refused")
        );
        assert!(
            vault
                .seal_if("p1", &data, read)
                .expect("a sign-in begun before the keep still seals")
        );
        assert!(
            !vault
                .keep_if("p1", read, |_| ())
                .expect("and a keep after it is refused")
        );
        let leftovers: Vec<_> = fs::read_dir(dir.path())
            .expect("list")
            .filter_map(Result::ok)
            .filter(|entry| entry.file_name().to_string_lossy().starts_with(".sealing-"))
            .collect();
        assert!(leftovers.is_empty());
    }
}
