//! The control plane over a real hosted browser: a task's browser opens for a profile's
//! origins, navigates within them (nowhere else), reads the page as a snapshot, and acts on one
//! element at a time (type, select, click, submit), refusing an element whose label changed.

use std::net::IpAddr;
use std::os::unix::fs::MetadataExt as _;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::response::Html;
use axum::routing::get;
use serde_json::{Value, json};
use steward_browser::chromium::CHROMIUM;
use steward_browser::control::{Control, router};
use steward_browser::display::VirtualDisplay;
use steward_browser::proxy::Upstream;
use steward_browser::tasks::{Browsers, Template};

const SHOP: &str = "shop.example";
const CREDENTIAL: &str = "a-control-plane-credential-of-enough-bytes";

type Orders = Arc<Mutex<Vec<Vec<(String, String)>>>>;

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
        .with_state(orders)
}

struct Fixture {
    base: String,
    client: reqwest::Client,
    orders: Orders,
    browsers: Arc<Browsers>,
    _display: VirtualDisplay,
    _dir: tempfile::TempDir,
    _served: Vec<Box<dyn std::any::Any + Send>>,
}

impl Fixture {
    async fn start() -> Fixture {
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
        let browsers = Arc::new(Browsers::new(Template {
            executable: PathBuf::from(CHROMIUM),
            display: display.name().to_owned(),
            sandbox: !root,
            local_site_keys: vec![issued.spki_sha256],
            upstream: Upstream::Local(front),
            data_root: dir.path().to_owned(),
        }));
        let control = testkit::serve(router(Arc::new(Control::new(
            Arc::clone(&browsers),
            CREDENTIAL.as_bytes(),
        ))))
        .await;
        Fixture {
            base: format!("http://{}", control.address),
            client: reqwest::Client::new(),
            orders,
            browsers,
            _display: display,
            _dir: dir,
            _served: vec![Box::new(site), Box::new(front_task), Box::new(control)],
        }
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut request = self
            .client
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(CREDENTIAL);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.expect("the control plane answers");
        let status = response.status().as_u16();
        let text = response.text().await.expect("a body");
        (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
    }
}

fn element<'a>(snapshot: &'a Value, label: &str) -> &'a str {
    snapshot["elements"]
        .as_array()
        .and_then(|elements| elements.iter().find(|element| element["label"] == label))
        .and_then(|element| element["ref"].as_str())
        .unwrap_or_else(|| panic!("no element `{label}` in {snapshot}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_browser_reads_and_acts_on_its_profiles_origin_only() {
    let fixture = Fixture::start().await;
    let task = "/control/v1/tasks/task-1";

    // Without the credential, nothing.
    let anonymous = fixture
        .client
        .put(format!("{}{task}", fixture.base))
        .json(&json!({"origins": ["https://shop.example"]}))
        .send()
        .await
        .expect("answer");
    assert_eq!(anonymous.status().as_u16(), 401);
    assert_eq!(fixture.browsers.open_count().await, 0);

    let origins = json!({"origins": [format!("https://{SHOP}")]});
    let (status, _) = fixture.call(reqwest::Method::PUT, task, Some(origins.clone())).await;
    assert_eq!(status, 201);
    let (status, _) = fixture.call(reqwest::Method::PUT, task, Some(origins)).await;
    assert_eq!(status, 200, "already open with the same origins");
    let (status, problem) = fixture
        .call(
            reqwest::Method::PUT,
            task,
            Some(json!({"origins": ["https://other.example"]})),
        )
        .await;
    assert_eq!((status, problem["code"].as_str()), (409, Some("browser.task_conflict")));

    // Navigation stays on the profile's origins: not another site, not the account list, not
    // plain HTTP.
    for elsewhere in [
        "https://elsewhere.example/",
        "https://accounts.google.com/",
        "http://shop.example/",
        "https://shop.example:8443/",
    ] {
        let (status, problem) = fixture
            .call(
                reqwest::Method::POST,
                &format!("{task}/navigate"),
                Some(json!({"url": elsewhere})),
            )
            .await;
        assert_eq!(
            (status, problem["code"].as_str()),
            (422, Some("browser.origin_not_allowed")),
            "{elsewhere}: {problem}"
        );
    }

    let (status, page) = fixture
        .call(
            reqwest::Method::POST,
            &format!("{task}/navigate"),
            Some(json!({"url": "https://shop.example/"})),
        )
        .await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["title"], "The shop");
    assert_eq!(page["url"], "https://shop.example/");
    assert!(page["text"].as_str().is_some_and(|text| text.contains("Tea")), "{page}");
    let name = element(&page, "Your name").to_owned();
    let size = element(&page, "Size").to_owned();
    let order = element(&page, "Place order").to_owned();

    // An element whose label is not the one named is refused, and nothing happens.
    let act = |element: &str, label: &str, action: Value| json!({"element": element, "label": label, "action": action});
    let (status, problem) = fixture
        .call(
            reqwest::Method::POST,
            &format!("{task}/act"),
            Some(act(&order, "Cancel order", json!({"kind": "click"}))),
        )
        .await;
    assert_eq!(
        (status, problem["code"].as_str()),
        (409, Some("browser.page_changed")),
        "{problem}"
    );
    let (status, problem) = fixture
        .call(
            reqwest::Method::POST,
            &format!("{task}/act"),
            Some(act("e99", "Place order", json!({"kind": "click"}))),
        )
        .await;
    assert_eq!(
        (status, problem["code"].as_str()),
        (404, Some("browser.no_element")),
        "{problem}"
    );
    let (status, problem) = fixture
        .call(
            reqwest::Method::POST,
            &format!("{task}/act"),
            Some(act(&size, "Size", json!({"kind": "select", "value": "huge"}))),
        )
        .await;
    assert_eq!(
        (status, problem["code"].as_str()),
        (422, Some("browser.unsupported_action")),
        "{problem}"
    );
    assert!(fixture.orders.lock().expect("orders").is_empty());

    // Type, select, submit: the site receives exactly that order.
    let (status, _) = fixture
        .call(
            reqwest::Method::POST,
            &format!("{task}/act"),
            Some(act(&name, "Your name", json!({"kind": "type", "text": "Ada"}))),
        )
        .await;
    assert_eq!(status, 200);
    let (status, _) = fixture
        .call(
            reqwest::Method::POST,
            &format!("{task}/act"),
            Some(act(&size, "Size", json!({"kind": "select", "value": "large"}))),
        )
        .await;
    assert_eq!(status, 200);
    let (status, after) = fixture
        .call(
            reqwest::Method::POST,
            &format!("{task}/act"),
            Some(act(&order, "Place order", json!({"kind": "click"}))),
        )
        .await;
    assert_eq!(status, 200, "{after}");
    assert_eq!(after["title"], "Ordered", "{after}");
    assert_eq!(
        *fixture.orders.lock().expect("orders"),
        vec![vec![
            ("name".to_owned(), "Ada".to_owned()),
            ("size".to_owned(), "large".to_owned())
        ]]
    );

    // Reading needs no action; a link is followed by a click.
    let (status, page) = fixture
        .call(
            reqwest::Method::POST,
            &format!("{task}/navigate"),
            Some(json!({"url": "https://shop.example/"})),
        )
        .await;
    assert_eq!(status, 200);
    let about = element(&page, "About us").to_owned();
    let (_, after) = fixture
        .call(
            reqwest::Method::POST,
            &format!("{task}/act"),
            Some(act(&about, "About us", json!({"kind": "click"}))),
        )
        .await;
    assert_eq!(after["title"], "About", "{after}");
    let (status, read) = fixture.call(reqwest::Method::GET, &format!("{task}/page"), None).await;
    assert_eq!(
        (status, read["url"].as_str()),
        (200, Some("https://shop.example/about"))
    );

    // Closing ends the browser; the task is gone.
    let (status, _) = fixture.call(reqwest::Method::DELETE, task, None).await;
    assert_eq!(status, 204);
    assert_eq!(fixture.browsers.open_count().await, 0);
    let (status, problem) = fixture.call(reqwest::Method::GET, &format!("{task}/page"), None).await;
    assert_eq!((status, problem["code"].as_str()), (404, Some("browser.no_task")));
    let (status, _) = fixture.call(reqwest::Method::DELETE, task, None).await;
    assert_eq!(status, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_problems() {
    let fixture = Fixture::start().await;
    let (status, problem) = fixture
        .call(
            reqwest::Method::PUT,
            "/control/v1/tasks/task-2",
            Some(json!({"origins": ["http://shop.example"]})),
        )
        .await;
    assert_eq!(
        (status, problem["code"].as_str()),
        (422, Some("browser.origin_not_allowed")),
        "{problem}"
    );
    let (status, problem) = fixture
        .call(
            reqwest::Method::PUT,
            "/control/v1/tasks/task-2",
            Some(json!({"origins": []})),
        )
        .await;
    assert_eq!((status, problem["code"].as_str()), (400, Some("invalid_request")));
    let (status, problem) = fixture
        .call(
            reqwest::Method::PUT,
            "/control/v1/tasks/a%20b",
            Some(json!({"origins": ["https://shop.example"]})),
        )
        .await;
    assert_eq!((status, problem["code"].as_str()), (400, Some("invalid_request")));
    let (status, problem) = fixture
        .call(
            reqwest::Method::PUT,
            "/control/v1/tasks/task-2",
            Some(json!({"origin": "x"})),
        )
        .await;
    assert_eq!((status, problem["code"].as_str()), (400, Some("invalid_request")));
    assert_eq!(fixture.browsers.open_count().await, 0);
}
