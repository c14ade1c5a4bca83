//! A hosted browser fixture: a tea shop on loopback behind TLS for `shop.example` (orders, an
//! account page that needs a session cookie, local storage shown on the page), Xvfb, the
//! browsers with a vault, the control plane and the handoff address, and a clock the test moves.

use std::net::IpAddr;
use std::os::unix::fs::MetadataExt as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use axum::Router;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{Html, IntoResponse};
use axum::routing::get;
use serde_json::Value;
use steward_browser::ceremony::Ceremonies;
use steward_browser::chromium::CHROMIUM;
use steward_browser::control::{Control, router};
use steward_browser::display::VirtualDisplay;
use steward_browser::handoff::{self, Handoff};
use steward_browser::proxy::Upstream;
use steward_browser::storage::Vault;
use steward_browser::tasks::{Browsers, Template};

pub const SHOP: &str = "shop.example";
pub const CREDENTIAL: &str = "a-control-plane-credential-of-enough-bytes";
/// The session cookie the shop's account page wants, and the one it rotates it to.
pub const SESSION: &str = "s1";
pub const ROTATED: &str = "s2";

pub type Orders = Arc<Mutex<Vec<Vec<(String, String)>>>>;

fn shop(orders: Orders) -> Router {
    Router::new()
        .route(
            "/",
            get(|| async {
                Html(
                    r#"<!doctype html><title>The shop</title>
<h1>Tea</h1>
<form method="post" action="/order">
  <label for="name">Your name</label> <input id="name" name="name">
  <label for="size">Size</label> <select id="size" name="size"><option value="small">Small</option><option value="large">Large</option></select>
  <button type="submit">Place order</button>
</form>
<a href="/about">About us</a>"#,
                )
            }),
        )
        .route(
            "/order",
            axum::routing::post(|State(orders): State<Orders>, body: String| async move {
                let fields = url::form_urlencoded::parse(body.as_bytes()).into_owned().collect();
                orders.lock().expect("orders").push(fields);
                Html("<!doctype html><title>Ordered</title><p>Thank you for your order")
            }),
        )
        .route(
            "/about",
            get(|| async { Html("<!doctype html><title>About</title><p>A small tea shop") }),
        )
        .route("/account", get(account))
        .route("/signin", get(sign_in_form).post(sign_in))
        .with_state(orders)
}

/// Signed in with the session cookie (which it then rotates); the page also shows what local
/// storage holds under `note`.
async fn account(headers: HeaderMap) -> impl IntoResponse {
    let cookies = headers
        .get_all("cookie")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .collect::<Vec<_>>()
        .join("; ");
    let signed_in = cookies
        .split("; ")
        .any(|pair| pair == format!("sid={SESSION}") || pair == format!("sid={ROTATED}"));
    let note = "<p id=note></p><script>document.getElementById('note').textContent = 'Note: ' + localStorage.getItem('note')</script>";
    if signed_in {
        (
            [(
                "set-cookie",
                format!("sid={ROTATED}; Path=/; Secure; HttpOnly; SameSite=Lax; Max-Age=86400"),
            )],
            Html(format!(
                "<!doctype html><title>Account</title><p>Signed in as Ada</p>{note}"
            )),
        )
            .into_response()
    } else {
        Html(format!(
            "<!doctype html><title>Sign in</title><p>Please sign in</p>{note}"
        ))
        .into_response()
    }
}

/// Where the sign-in form's fields are on the page (CSS pixels): the remote sign-in test clicks
/// there.
pub const USER_FIELD: (f64, f64) = (120.0, 115.0);
pub const PASSWORD_FIELD: (f64, f64) = (120.0, 165.0);

async fn sign_in_form() -> Html<&'static str> {
    Html(
        r#"<!doctype html><title>Sign in to the shop</title><body style="margin:0">
<form method="post" action="/signin">
<input name="user" aria-label="User" style="position:absolute;left:20px;top:100px;width:200px;height:30px">
<input name="password" type="password" aria-label="Password" style="position:absolute;left:20px;top:150px;width:200px;height:30px">
<button style="position:absolute;left:20px;top:200px">Sign in</button>
</form>"#,
    )
}

/// `ada` / `tea` signs in: the session cookie, and a note in local storage.
async fn sign_in(body: String) -> axum::response::Response {
    let fields: Vec<(String, String)> = url::form_urlencoded::parse(body.as_bytes()).into_owned().collect();
    let field = |name: &str| {
        fields
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    };
    if field("user") == Some("ada") && field("password") == Some("tea") {
        (
            [("set-cookie", format!("sid={SESSION}; Path=/; Secure; HttpOnly; SameSite=Lax; Max-Age=86400"))],
            Html("<!doctype html><title>Welcome</title><p>Welcome back<script>localStorage.setItem('note', 'signed in remotely')</script>"),
        )
            .into_response()
    } else {
        Html("<!doctype html><title>Sign in to the shop</title><p>Wrong user or password").into_response()
    }
}

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
        let orders: Orders = Arc::default();
        let site = testkit::serve(shop(Arc::clone(&orders))).await;
        let issued = testkit::tls::issue(&[SHOP], &[]);
        let localhost: IpAddr = [127, 0, 0, 1].into();
        let (front, front_task) = testkit::tls::serve_front(localhost, issued.acceptor, site.address).await;
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
                local_site_keys: vec![issued.spki_sha256],
                upstream: Upstream::Local(front),
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
            orders,
            browsers,
            vault,
            clock,
            _display: display,
            _dir: dir,
            _served: vec![
                Box::new(site),
                Box::new(front_task),
                Box::new(control),
                Box::new(handoff),
            ],
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
