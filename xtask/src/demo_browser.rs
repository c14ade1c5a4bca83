//! The hosted browser in the local stacks (`cargo xtask dev --demo-browser`, the web client's
//! browser tests): the tea shop stand-in (`steward-demo-shop`, `https://shop.example` on
//! loopback) and the browser role (`steward-browser`, on its own Xvfb) sending every admitted
//! tunnel to it, with a control-plane credential and a storage key made afresh in a private
//! directory; and the environment that turns Website Access and `browser.act` on in the api and
//! the worker ([`DemoBrowser::environment`]). Nothing reaches the network.

use std::fs;
use std::io::Read as _;
use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};

use anyhow::{Context, bail};

/// The stand-in and the role, running.
pub struct DemoBrowser {
    shop: Child,
    role: Child,
    control: SocketAddr,
    handoff: SocketAddr,
    credential: PathBuf,
    shop_provided: Vec<(String, String)>,
}

/// A free loopback address (bound, then released for the role to bind).
fn free_address() -> anyhow::Result<SocketAddr> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .context("find a free port")
}

/// `bytes` random bytes from the kernel.
fn random(bytes: usize) -> anyhow::Result<Vec<u8>> {
    let mut random = vec![0u8; bytes];
    fs::File::open("/dev/urandom")
        .and_then(|mut source| source.read_exact(&mut random))
        .context("read /dev/urandom")?;
    Ok(random)
}

impl DemoBrowser {
    /// Starts the shop stand-in under `dir/shop` and the browser role with its secrets and
    /// directories under `dir/role` (both made afresh, owner-only), and waits until the role's
    /// control plane is ready.
    pub fn start(bin: &Path, dir: &Path, log_level: &str) -> anyhow::Result<DemoBrowser> {
        // The role's Chromium (Debian's package) and its display.
        crate::postgres::ensure_chromium()?;
        if !Path::new("/usr/bin/Xvfb").exists() {
            crate::postgres::install(&["xvfb"], "Xvfb for the hosted browser")?;
        }
        let (mut shop, shop_provided) = crate::stand_in::start(bin, "steward-demo-shop", &dir.join("shop"), &[])?;
        let role_dir = dir.join("role");
        let prepared = (|| {
            let _ = fs::remove_dir_all(&role_dir);
            for directory in [role_dir.clone(), role_dir.join("state"), role_dir.join("data")] {
                fs::create_dir_all(&directory).with_context(|| format!("create {}", directory.display()))?;
                fs::set_permissions(&directory, fs::Permissions::from_mode(0o700))
                    .with_context(|| format!("chmod {}", directory.display()))?;
            }
            let credential = role_dir.join("browser-control");
            let hex: String = random(32)?.iter().map(|byte| format!("{byte:02x}")).collect();
            crate::stand_in::write_private(&credential, hex)
                .with_context(|| format!("write {}", credential.display()))?;
            let key = role_dir.join("browser-storage-key");
            crate::stand_in::write_private(&key, random(32)?).with_context(|| format!("write {}", key.display()))?;
            let provided = |name: &str| {
                shop_provided
                    .iter()
                    .find(|(variable, _)| variable == name)
                    .map(|(_, value)| value.clone())
                    .with_context(|| format!("steward-demo-shop wrote no {name}"))
            };
            Ok::<_, anyhow::Error>((
                credential,
                key,
                provided("BROWSER_DEMO_SITE")?,
                provided("BROWSER_DEMO_SITE_KEY")?,
                free_address()?,
                free_address()?,
            ))
        })();
        let (credential, key, site, site_key, control, handoff) = match prepared {
            Ok(prepared) => prepared,
            Err(error) => {
                crate::stop(&mut shop);
                return Err(error);
            }
        };
        let (allow_root, allow) = crate::postgres::ALLOW_ROOT;
        // A clean environment: the role refuses model keys, the owner's bearer and scopes.
        let started = Command::new(bin.join("steward-browser"))
            .env_clear()
            .envs(std::env::var_os("PATH").map(|path| ("PATH", path)))
            .env("LOG_LEVEL", log_level)
            .env(allow_root, allow)
            .env("BROWSER_CONTROL_CREDENTIAL_FILE", &credential)
            .env("BROWSER_STORAGE_KEY_FILE", &key)
            .env("BROWSER_CONTROL_LISTEN", control.to_string())
            .env("BROWSER_HANDOFF_LISTEN", handoff.to_string())
            .env("BROWSER_STATE_DIRECTORY", role_dir.join("state"))
            .env("BROWSER_DATA_DIRECTORY", role_dir.join("data"))
            .env("BROWSER_DEMO_SITE", site)
            .env("BROWSER_DEMO_SITE_KEY", site_key)
            .spawn()
            .context("start steward-browser");
        let mut role = match started {
            Ok(role) => role,
            Err(error) => {
                crate::stop(&mut shop);
                return Err(error);
            }
        };
        if let Err(error) = crate::stand_in::wait_healthy("steward-browser", control, &mut role, "") {
            crate::stop(&mut role);
            crate::stop(&mut shop);
            return Err(error);
        }
        Ok(DemoBrowser {
            shop,
            role,
            control,
            handoff,
            credential,
            shop_provided,
        })
    }

    /// Website Access and `browser.act` on, for the api and the worker: the role's control plane
    /// and its credential, and where clients reach its sign-in page. (The call roles refuse the
    /// credential: they never get this.)
    pub fn environment(&self) -> Vec<(String, String)> {
        vec![
            ("AGENT_BROWSER_ENABLED".to_owned(), "1".to_owned()),
            ("BROWSER_CONTROL_URL".to_owned(), format!("http://{}", self.control)),
            (
                "BROWSER_CONTROL_CREDENTIAL_FILE".to_owned(),
                self.credential.display().to_string(),
            ),
            ("BROWSER_PUBLIC_URL".to_owned(), format!("http://{}/", self.handoff)),
        ]
    }

    /// What the shop stand-in provided (its origin, sign-in page and orders address among them).
    pub fn shop(&self, name: &str) -> Option<&str> {
        self.shop_provided
            .iter()
            .find(|(variable, _)| variable == name)
            .map(|(_, value)| value.as_str())
    }

    /// An error when the stand-in or the role has exited on its own.
    pub fn check(&mut self) -> anyhow::Result<()> {
        for (name, child) in [
            ("steward-demo-shop", &mut self.shop),
            ("steward-browser", &mut self.role),
        ] {
            if let Some(status) = child.try_wait().with_context(|| format!("check {name}"))? {
                bail!("{name} exited on its own ({status})");
            }
        }
        Ok(())
    }

    pub fn stop(&mut self) {
        crate::stop(&mut self.role);
        crate::stop(&mut self.shop);
    }
}
