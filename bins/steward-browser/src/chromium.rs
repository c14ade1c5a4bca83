//! One hosted browser: Debian's Chromium, headed, launched by the DevTools driver
//! (`chromiumoxide`) with the launch policy of `browser_policy::launch`, its own data
//! directory, and every connection through the role's egress proxy.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use browser_policy::{Display, launch};
use chromiumoxide::cdp::browser_protocol::browser::{SetDownloadBehaviorBehavior, SetDownloadBehaviorParams};
use chromiumoxide::{Browser, BrowserConfig};
use futures_util::StreamExt as _;
use tokio::task::JoinHandle;

/// Debian's Chromium itself. Not `/usr/bin/chromium`: that wrapper script adds the flags in
/// `/etc/chromium.d` (remote extensions, the packaged extensions, Google API keys), which would
/// make the browser ask for extension updates on start.
pub const CHROMIUM: &str = "/usr/lib/chromium/chromium";

/// How long a browser may take to close before it is killed.
pub const CLOSE_WITHIN: std::time::Duration = std::time::Duration::from_secs(10);

/// How one browser is started.
#[derive(Clone, Debug)]
pub struct Launch {
    /// The Chromium executable.
    pub executable: PathBuf,
    /// The X display it draws on (`DISPLAY`).
    pub display: String,
    /// The egress proxy: `--proxy-server`, with loopback no longer bypassed, so every
    /// connection (loopback included) goes through it.
    pub proxy: SocketAddr,
    /// Its data directory (`--user-data-dir`), private to this browser.
    pub data_directory: PathBuf,
    /// Chromium's own sandbox. It cannot run as root, so only a development run as root turns
    /// it off (`--no-sandbox`); the unit runs the role as its own user, sandboxed.
    pub sandbox: bool,
    /// The public key (Base64 SHA-256 of the SubjectPublicKeyInfo) of a local site's
    /// certificate that Chromium accepts without a public authority: the offline demo's sites
    /// only. Empty in a deployment.
    pub local_site_keys: Vec<String>,
}

/// How long Chromium has to start and answer its DevTools connection.
pub const LAUNCH_WITHIN: std::time::Duration = std::time::Duration::from_secs(60);

impl Launch {
    /// The driver's configuration: the launch policy's switches for a headed browser, then
    /// the proxy, and (only when set) the local sites' keys.
    pub fn config(&self) -> Result<BrowserConfig, LaunchError> {
        let policy = launch(Display::Headed);
        let mut builder = BrowserConfig::builder()
            .chrome_executable(&self.executable)
            .with_head()
            .user_data_dir(&self.data_directory)
            .env("DISPLAY", &self.display)
            // The browser's own files (its certificate store, caches) stay in its private
            // directory, removed with it, and never in the role user's home, which a unit does
            // not let it write.
            .env(
                "HOME",
                self.data_directory
                    .parent()
                    .unwrap_or(&self.data_directory)
                    .display()
                    .to_string(),
            )
            .viewport(None)
            // A host busy with other work (a shared machine, a test suite) can take longer than
            // the driver's 20 s to start Chromium; a task waits for it rather than failing.
            .launch_timeout(LAUNCH_WITHIN)
            // The driver's default is to tell every page to ignore certificate errors: a
            // hosted browser never does (only the local sites' keys below are accepted).
            .respect_https_errors();
        if policy.replaces_driver_defaults {
            builder = builder.disable_default_args();
        }
        for switch in &policy.switches {
            builder = builder.arg((switch.name, switch.values.as_slice()));
        }
        let proxy = format!("http://{}", self.proxy);
        builder = builder
            .arg(("proxy-server", proxy.as_str()))
            .arg(("proxy-bypass-list", "<-loopback>"))
            .arg("no-startup-window")
            .arg("disable-component-update")
            // WebRTC would otherwise send UDP (STUN) straight to any address, around the proxy.
            .arg(("force-webrtc-ip-handling-policy", "disable_non_proxied_udp"));
        if !self.local_site_keys.is_empty() {
            builder = builder.arg((
                "ignore-certificate-errors-spki-list",
                self.local_site_keys.join(",").as_str(),
            ));
        }
        if !self.sandbox {
            builder = builder.no_sandbox();
        }
        builder.build().map_err(LaunchError::Configuration)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error("the browser's configuration: {0}")]
    Configuration(String),
    #[error("the browser did not start: {0}")]
    Start(#[from] chromiumoxide::error::CdpError),
}

/// The profile preferences a hosted browser starts with: WebRTC may use no UDP the proxy does
/// not carry (the switch alone does not stop a page's STUN requests).
pub const PREFERENCES: &str = r#"{"webrtc":{"ip_handling_policy":"disable_non_proxied_udp","multiple_routes_enabled":false,"nonproxied_udp_enabled":false}}"#;

/// Writes [`PREFERENCES`] into a new data directory's default profile.
fn preferences(data_directory: &Path) -> std::io::Result<()> {
    let profile = data_directory.join("Default");
    std::fs::create_dir_all(&profile)?;
    let path = profile.join("Preferences");
    if !path.exists() {
        std::fs::write(path, PREFERENCES)?;
    }
    Ok(())
}

/// A running hosted browser and the task that drives its DevTools connection.
pub struct Hosted {
    browser: Browser,
    driver: JoinHandle<()>,
    data_directory: PathBuf,
}

impl Hosted {
    /// Starts Chromium as `settings` say and connects to it; downloads are refused (nothing a
    /// page offers lands on the host).
    pub async fn launch(settings: &Launch) -> Result<Hosted, LaunchError> {
        preferences(&settings.data_directory).map_err(|error| LaunchError::Configuration(error.to_string()))?;
        let (mut browser, mut handler) = Browser::launch(settings.config()?).await?;
        let driver = tokio::spawn(async move {
            while let Some(event) = handler.next().await {
                if event.is_err() {
                    tracing::debug!("the hosted browser's connection reported an error");
                }
            }
        });
        let deny = SetDownloadBehaviorParams::builder()
            .behavior(SetDownloadBehaviorBehavior::Deny)
            .build()
            .map_err(|error| LaunchError::Configuration(error.to_string()));
        let denied = match deny {
            Ok(deny) => browser.execute(deny).await.map(|_| ()).map_err(LaunchError::Start),
            Err(error) => Err(error),
        };
        if let Err(error) = denied {
            let _ = browser.kill().await;
            let _ = browser.wait().await;
            driver.abort();
            return Err(error);
        }
        Ok(Hosted {
            browser,
            driver,
            data_directory: settings.data_directory.clone(),
        })
    }

    pub fn browser(&self) -> &Browser {
        &self.browser
    }

    pub fn data_directory(&self) -> &Path {
        &self.data_directory
    }

    /// Closes the browser and waits for its process to end: asked to close, it has
    /// [`CLOSE_WITHIN`]; then it is killed.
    pub async fn close(mut self) {
        let closed = tokio::time::timeout(CLOSE_WITHIN, async {
            self.browser.close().await.is_ok() && self.browser.wait().await.is_ok()
        })
        .await;
        if !matches!(closed, Ok(true)) {
            let _ = self.browser.kill().await;
            let _ = tokio::time::timeout(CLOSE_WITHIN, self.browser.wait()).await;
        }
        self.driver.abort();
    }
}
