//! The remote ceremony's sign-in page: opened once with the capability, the owner signs in to
//! the website in the role's browser through pictures, clicks and typed text, and `I'm signed
//! in` keeps the session for the profile; a reloaded page, an expired link, a closed page and a
//! replaced ceremony keep nothing and close their browser.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{Fixture, PASSWORD_FIELD, SHOP, USER_FIELD, answer};

async fn begin(fixture: &Fixture, ceremony: &str, profile: &str) -> String {
    let (status, begun) = fixture
        .call(
            Method::PUT,
            &format!("/control/v1/ceremonies/{ceremony}"),
            Some(json!({
                "profile": profile,
                "origins": [format!("https://{SHOP}")],
                "login_url": format!("https://{SHOP}/signin"),
            })),
        )
        .await;
    assert_eq!(status, 201, "{begun}");
    begun["capability"].as_str().expect("a capability").to_owned()
}

async fn state(fixture: &Fixture, ceremony: &str) -> Value {
    let (_, answer) = fixture
        .call(Method::GET, &format!("/control/v1/ceremonies/{ceremony}"), None)
        .await;
    answer["state"].clone()
}

/// A sign-in page call with `credential` (the capability or the page token).
async fn page(fixture: &Fixture, method: Method, path: &str, credential: &str, body: Option<Value>) -> (u16, Value) {
    let mut request = fixture
        .client
        .request(method, format!("{}{path}", fixture.public))
        .bearer_auth(credential);
    if let Some(body) = body {
        request = request.json(&body);
    }
    answer(request.send().await.expect("the sign-in page's address answers")).await
}

async fn start(fixture: &Fixture, capability: &str) -> String {
    let (status, opened) = page(fixture, Method::POST, "/sign-in/start", capability, None).await;
    assert_eq!(status, 200, "{opened}");
    opened["token"].as_str().expect("a page token").to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_owner_signs_in_remotely_and_the_profile_keeps_the_session() {
    let fixture = Fixture::start().await;
    // The login page must be on the profile's origins.
    let (status, problem) = fixture
        .call(
            Method::PUT,
            "/control/v1/ceremonies/c-0",
            Some(json!({"profile": "p-9", "origins": [format!("https://{SHOP}")], "login_url": "https://elsewhere.example/signin"})),
        )
        .await;
    assert_eq!(
        (status, problem["code"].as_str()),
        (422, Some("browser.origin_not_allowed"))
    );

    let capability = begin(&fixture, "c-1", "p-1").await;

    // The page holds no secret, and loads nothing from anywhere else.
    let served = fixture
        .client
        .get(format!("{}/sign-in", fixture.public))
        .send()
        .await
        .expect("the page");
    assert_eq!(served.status(), 200);
    let policy = served
        .headers()
        .get("content-security-policy")
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    assert!(
        policy.contains("default-src 'none'") && policy.contains("frame-ancestors 'none'"),
        "{policy}"
    );
    assert!(served.text().await.expect("html").contains("Sign in for Steward"));

    // A remote ceremony's capability is not a handoff's.
    let (status, _) = fixture.hand_over(&capability, &json!({"cookies": []})).await;
    assert_eq!(status, 401);

    let token = start(&fixture, &capability).await;
    assert_eq!(state(&fixture, "c-1").await, "active");
    // Opened once: a reloaded page cannot open it again.
    let (status, problem) = page(&fixture, Method::POST, "/sign-in/start", &capability, None).await;
    assert_eq!(
        (status, problem["code"].as_str()),
        (409, Some("browser.capability_used"))
    );
    let (status, _) = page(&fixture, Method::GET, "/sign-in/screen", "not-the-token", None).await;
    assert_eq!(status, 401);
    let picture = fixture
        .client
        .get(format!("{}/sign-in/screen", fixture.public))
        .bearer_auth(&token)
        .send()
        .await
        .expect("a picture");
    assert_eq!(picture.status(), 200);
    assert!(picture.bytes().await.expect("bytes").starts_with(b"\x89PNG"));

    // Nothing to keep before signing in.
    let (status, problem) = page(&fixture, Method::POST, "/sign-in/finish", &token, None).await;
    assert_eq!(
        (status, problem["code"].as_str()),
        (422, Some("browser.not_signed_in")),
        "{problem}"
    );
    assert_eq!(state(&fixture, "c-1").await, "active", "the owner may still sign in");

    for input in [
        json!({"kind": "click", "x": USER_FIELD.0, "y": USER_FIELD.1}),
        json!({"kind": "text", "text": "ada"}),
        json!({"kind": "click", "x": PASSWORD_FIELD.0, "y": PASSWORD_FIELD.1}),
        json!({"kind": "text", "text": "tea"}),
        json!({"kind": "key", "key": "Enter"}),
    ] {
        let (status, problem) = page(&fixture, Method::POST, "/sign-in/input", &token, Some(input)).await;
        assert_eq!(status, 204, "{problem}");
    }
    let (status, problem) = page(
        &fixture,
        Method::POST,
        "/sign-in/input",
        &token,
        Some(json!({"kind": "scroll"})),
    )
    .await;
    assert_eq!((status, problem["code"].as_str()), (400, Some("invalid_request")));

    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let (status, problem) = page(&fixture, Method::POST, "/sign-in/finish", &token, None).await;
        if status == 204 {
            break;
        }
        assert_eq!(problem["code"], "browser.not_signed_in", "{problem}");
        assert!(Instant::now() < deadline, "the sign-in never completed");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(state(&fixture, "c-1").await, "completed");
    assert_eq!(fixture.browsers.open_count().await, 0, "the sign-in browser closed");
    let (status, _) = page(&fixture, Method::GET, "/sign-in/screen", &token, None).await;
    assert_eq!(status, 409, "the page's token is spent");
    let kept = fixture.vault.open("p-1").expect("open").expect("kept");
    assert!(
        kept.cookies.iter().any(|cookie| cookie.name == "sid"),
        "{:?} {:?}",
        kept.cookies.len(),
        kept.local_storage
    );
    assert_eq!(kept.local_storage.len(), 1);
    assert_eq!(
        kept.local_storage[0].items,
        [("note".to_owned(), "signed in remotely".to_owned())]
    );

    // The profile's task browser is signed in.
    let task = "/control/v1/tasks/t-1";
    fixture
        .call(
            Method::PUT,
            task,
            Some(json!({"origins": [format!("https://{SHOP}")], "profile": "p-1"})),
        )
        .await;
    let (_, account) = fixture
        .call(
            Method::POST,
            &format!("{task}/navigate"),
            Some(json!({"url": format!("https://{SHOP}/account")})),
        )
        .await;
    assert_eq!(account["title"], "Account", "{account}");
    fixture.call(Method::DELETE, task, None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_closed_or_replaced_sign_in_keeps_nothing_and_closes_its_browser() {
    let fixture = Fixture::start().await;

    // Not opened within five minutes.
    let capability = begin(&fixture, "c-2", "p-2").await;
    fixture.clock.fetch_add(300, Ordering::SeqCst);
    let (status, problem) = page(&fixture, Method::POST, "/sign-in/start", &capability, None).await;
    assert_eq!(
        (status, problem["code"].as_str()),
        (410, Some("browser.ceremony_expired"))
    );

    // Closed by the owner.
    let capability = begin(&fixture, "c-3", "p-2").await;
    let token = start(&fixture, &capability).await;
    assert_eq!(fixture.browsers.open_count().await, 1);
    let (status, _) = page(&fixture, Method::POST, "/sign-in/close", &token, None).await;
    assert_eq!(status, 204);
    assert_eq!(state(&fixture, "c-3").await, "cancelled");
    assert_eq!(fixture.browsers.open_count().await, 0);

    // Open past its sign-in time: expired, and the sweep closes the browser.
    let capability = begin(&fixture, "c-4", "p-2").await;
    let token = start(&fixture, &capability).await;
    fixture.clock.fetch_add(15 * 60, Ordering::SeqCst);
    let (status, problem) = page(&fixture, Method::GET, "/sign-in/screen", &token, None).await;
    assert_eq!(
        (status, problem["code"].as_str()),
        (410, Some("browser.ceremony_expired"))
    );
    assert_eq!(state(&fixture, "c-4").await, "expired");
    steward_browser::signin::sweep(&fixture.handoff_state).await;
    assert_eq!(fixture.browsers.open_count().await, 0);

    // Start over while a page is open: the old page is refused and its browser closes.
    let capability = begin(&fixture, "c-5", "p-2").await;
    let token = start(&fixture, &capability).await;
    let _fresh = begin(&fixture, "c-6", "p-2").await;
    assert_eq!(state(&fixture, "c-5").await, "cancelled");
    let (status, _) = page(&fixture, Method::GET, "/sign-in/screen", &token, None).await;
    assert_eq!(status, 409);
    steward_browser::signin::sweep(&fixture.handoff_state).await;
    assert_eq!(fixture.browsers.open_count().await, 0);
    assert!(fixture.vault.open("p-2").expect("open").is_none(), "nothing was kept");
}
