//! A hosted browser fixture: a tea shop on loopback behind TLS for `shop.example` (orders, an
//! account page that needs a session cookie, local storage shown on the page), Xvfb, the
//! browsers with a vault, the control plane and the handoff address, and a clock the test moves.

use std::os::unix::fs::MetadataExt as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use serde_json::Value;
use steward_browser::ceremony::Ceremonies;
use steward_browser::chromium::CHROMIUM;
use steward_browser::control::{Control, router};
use steward_browser::display::VirtualDisplay;
use steward_browser::handoff::{self, Handoff};
use steward_browser::proxy::Upstream;
use steward_browser::storage::Vault;
use steward_browser::tasks::{Browsers, Template};

pub use testkit::shop::{Orders, PASSWORD_FIELD, ROTATED, SESSION, SHOP, USER_FIELD};
pub const CREDENTIAL: &str = "a-control-plane-credential-of-enough-bytes";

pub struct Fixture {
    pub base: String,
    pub handoff: String,
    /// The handoff listener's base address (the sign-in page).
    pub public: String,
    pub handoff_state: Arc<Handoff>,
    pub client: reqwest::Client,
    pub orders: Orders,
    pub browsers: Arc<Browsers>,
    pub vault: Arc<Vault>,
    /// Seconds since the epoch, as the ceremonies' clock reads them.
    pub clock: Arc<AtomicU64>,
    _display: VirtualDisplay,
    _dir: tempfile::TempDir,
    _served: Vec<Box<dyn std::any::Any + Send>>,
}

impl Fixture {
    pub async fn start() -> Fixture {
        let shop = testkit::shop::Shop::start().await;
        let display = tokio::task::spawn_blocking(|| VirtualDisplay::start(std::path::Path::new("/usr/bin/Xvfb")))
            .await
            .expect("join")
            .expect("Xvfb");
        let dir = tempfile::tempdir().expect("a directory");
        let root = std::fs::metadata("/proc/self").expect("/proc/self").uid() == 0;
        let vault = Arc::new(Vault::new(&[9; 32], dir.path().join("sealed")));
        std::fs::create_dir(vault.directory()).expect("the vault's directory");
        let clock = Arc::new(AtomicU64::new(1_800_000_000));
        let read = Arc::clone(&clock);
        let ceremonies = Arc::new(Ceremonies::new(Arc::new(move || {
            SystemTime::UNIX_EPOCH + Duration::from_secs(read.load(Ordering::SeqCst))
        })));
        let browsers = Arc::new(Browsers::new(
            Template {
                executable: PathBuf::from(CHROMIUM),
                display: display.name().to_owned(),
                sandbox: !root,
                local_site_keys: vec![shop.spki_sha256.clone()],
                upstream: Upstream::Local(shop.front),
                data_root: dir.path().to_owned(),
            },
            Arc::clone(&vault),
        ));
        let control = testkit::serve(router(Arc::new(Control::new(
            Arc::clone(&browsers),
            Arc::clone(&ceremonies),
            CREDENTIAL.as_bytes(),
        ))))
        .await;
        let handoff_state = Arc::new(Handoff {
            ceremonies,
            vault: Arc::clone(&vault),
            browsers: Arc::clone(&browsers),
        });
        let handoff = testkit::serve(handoff::router(Arc::clone(&handoff_state))).await;
        Fixture {
            base: format!("http://{}", control.address),
            handoff: format!("http://{}/handoff", handoff.address),
            public: format!("http://{}", handoff.address),
            handoff_state,
            client: reqwest::Client::new(),
            orders: Arc::clone(&shop.orders),
            browsers,
            vault,
            clock,
            _display: display,
            _dir: dir,
            _served: vec![Box::new(shop), Box::new(control), Box::new(handoff)],
        }
    }

    /// A control-plane call with the credential: the status and the JSON answer.
    pub async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut request = self
            .client
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(CREDENTIAL);
        if let Some(body) = body {
            request = request.json(&body);
        }
        answer(request.send().await.expect("the control plane answers")).await
    }

    /// A handoff with `capability` and `session`.
    pub async fn hand_over(&self, capability: &str, session: &Value) -> (u16, Value) {
        let response = self
            .client
            .post(&self.handoff)
            .bearer_auth(capability)
            .json(session)
            .send()
            .await
            .expect("the handoff address answers");
        answer(response).await
    }
}

pub async fn answer(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let text = response.text().await.expect("a body");
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

/// The reference of the element labelled `label` in a snapshot.
pub fn element<'a>(snapshot: &'a Value, label: &str) -> &'a str {
    snapshot["elements"]
        .as_array()
        .and_then(|elements| elements.iter().find(|element| element["label"] == label))
        .and_then(|element| element["ref"].as_str())
        .unwrap_or_else(|| panic!("no element `{label}` in {snapshot}"))
}
