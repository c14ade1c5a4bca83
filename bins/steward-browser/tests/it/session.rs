//! Sign-in ceremonies end to end on the role's side: a ceremony begun over the control plane,
//! its capability presented once at the handoff address with a website session, the session
//! sealed into the profile and carried by the task's browser (signed in, with its local
//! storage), kept refreshed when the browser closes, and forgotten with the profile.

use std::sync::atomic::Ordering;

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{Fixture, ROTATED, SESSION, SHOP};

fn session() -> Value {
    json!({
        "cookies": [{"name": "sid", "value": SESSION, "domain": SHOP, "path": "/", "secure": true, "http_only": true, "same_site": "Lax"}],
        "local_storage": [{"origin": format!("https://{SHOP}"), "items": [["note", "remember the oolong"]]}],
    })
}

async fn begin(fixture: &Fixture, ceremony: &str, profile: &str) -> String {
    let (status, begun) = fixture
        .call(
            Method::PUT,
            &format!("/control/v1/ceremonies/{ceremony}"),
            Some(json!({"profile": profile, "origins": [format!("https://{SHOP}")]})),
        )
        .await;
    assert_eq!(status, 201, "{begun}");
    assert_eq!(begun["expires_at"], 1_800_000_000 + 300);
    begun["capability"].as_str().expect("a capability").to_owned()
}

async fn state(fixture: &Fixture, ceremony: &str) -> Value {
    let (status, answer) = fixture
        .call(Method::GET, &format!("/control/v1/ceremonies/{ceremony}"), None)
        .await;
    assert_eq!(status, 200, "{answer}");
    assert!(answer.get("capability").is_none(), "status is secret-free: {answer}");
    answer["state"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handed_over_session_signs_the_task_browser_in_and_is_kept_refreshed() {
    let fixture = Fixture::start().await;
    let capability = begin(&fixture, "c-1", "p-1").await;
    assert_eq!(state(&fixture, "c-1").await, "open");

    // Not the API credential: only the ceremony's capability hands over.
    let (status, problem) = fixture.hand_over(crate::support::CREDENTIAL, &session()).await;
    assert_eq!(
        (status, problem["code"].as_str()),
        (401, Some("browser.capability_invalid"))
    );
    let (status, _) = fixture.hand_over(&capability, &session()).await;
    assert_eq!(status, 204);
    assert_eq!(state(&fixture, "c-1").await, "completed");
    // Single use.
    let (status, problem) = fixture.hand_over(&capability, &session()).await;
    assert_eq!(
        (status, problem["code"].as_str()),
        (409, Some("browser.capability_used"))
    );
    let kept = std::fs::read(fixture.vault.directory().join("p-1.sealed")).expect("sealed");
    assert!(
        !kept
            .windows(SESSION.len() + 4)
            .any(|window| window == format!("sid={SESSION}").as_bytes())
    );
    assert!(
        !kept.windows(6).any(|window| window == b"oolong"),
        "the sealed file is not plain"
    );

    // The task's browser carries the profile's session: signed in, with its local storage.
    let task = "/control/v1/tasks/t-1";
    let (status, _) = fixture
        .call(
            Method::PUT,
            task,
            Some(json!({"origins": [format!("https://{SHOP}")], "profile": "p-1"})),
        )
        .await;
    assert_eq!(status, 201);
    let (status, page) = fixture
        .call(
            Method::POST,
            &format!("{task}/navigate"),
            Some(json!({"url": format!("https://{SHOP}/account")})),
        )
        .await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["title"], "Account", "{page}");
    let text = page["text"].as_str().unwrap_or_default();
    assert!(
        text.contains("Signed in as Ada") && text.contains("Note: remember the oolong"),
        "{text}"
    );

    // The site rotated its cookie; closing keeps the new one.
    let (status, _) = fixture.call(Method::DELETE, task, None).await;
    assert_eq!(status, 204);
    let sealed = fixture.vault.open("p-1").expect("open").expect("kept");
    let values: Vec<&str> = sealed.cookies.iter().map(|cookie| cookie.value.as_str()).collect();
    assert_eq!(values, [ROTATED]);
    assert_eq!(sealed.local_storage.len(), 1);

    // Without the profile a browser is not signed in.
    let other = "/control/v1/tasks/t-2";
    fixture
        .call(
            Method::PUT,
            other,
            Some(json!({"origins": [format!("https://{SHOP}")]})),
        )
        .await;
    let (_, page) = fixture
        .call(
            Method::POST,
            &format!("{other}/navigate"),
            Some(json!({"url": format!("https://{SHOP}/account")})),
        )
        .await;
    assert_eq!(page["title"], "Sign in", "{page}");
    fixture.call(Method::DELETE, other, None).await;

    // Forgetting the profile removes its session.
    let (status, _) = fixture.call(Method::DELETE, "/control/v1/profiles/p-1", None).await;
    assert_eq!(status, 204);
    assert!(fixture.vault.open("p-1").expect("open").is_none());
}

#[tokio::test]
async fn a_rejected_handoff_ends_the_ceremony_and_keeps_nothing() {
    let fixture = Fixture::start().await;
    let capability = begin(&fixture, "c-2", "p-2").await;
    let mut foreign = session();
    foreign["cookies"][0]["domain"] = json!("tracker.example");
    let (status, problem) = fixture.hand_over(&capability, &foreign).await;
    assert_eq!(
        (status, problem["code"].as_str()),
        (422, Some("browser.handoff_rejected")),
        "{problem}"
    );
    assert!(
        !problem.to_string().contains(SESSION),
        "no value in the answer: {problem}"
    );
    assert_eq!(state(&fixture, "c-2").await, "rejected");
    // The capability is spent: even a good session is refused now.
    let (status, _) = fixture.hand_over(&capability, &session()).await;
    assert_eq!(status, 409);
    assert!(fixture.vault.open("p-2").expect("open").is_none());

    // Too large a session is refused whole, and spends the ceremony too.
    let capability = begin(&fixture, "c-3", "p-2").await;
    let mut large = session();
    large["cookies"][0]["value"] = json!("x".repeat(2 * 1024 * 1024));
    let (status, problem) = fixture.hand_over(&capability, &large).await;
    assert_eq!(
        (status, problem["code"].as_str()),
        (413, Some("browser.session_too_large")),
        "{problem}"
    );
    assert_eq!(state(&fixture, "c-3").await, "rejected");
    assert!(fixture.vault.open("p-2").expect("open").is_none());
}

#[tokio::test]
async fn a_ceremony_expires_at_five_minutes_and_starting_over_replaces_it() {
    let fixture = Fixture::start().await;
    let first = begin(&fixture, "c-4", "p-3").await;
    // Start over: a fresh ceremony for the profile cancels the first.
    fixture.clock.fetch_add(60, Ordering::SeqCst);
    let (status, begun) = fixture
        .call(
            Method::PUT,
            "/control/v1/ceremonies/c-5",
            Some(json!({"profile": "p-3", "origins": [format!("https://{SHOP}")]})),
        )
        .await;
    assert_eq!(status, 201);
    let second = begun["capability"].as_str().expect("a capability").to_owned();
    assert_eq!(state(&fixture, "c-4").await, "cancelled");
    let (status, _) = fixture.hand_over(&first, &session()).await;
    assert_eq!(status, 409, "the replaced ceremony's capability is spent");

    fixture.clock.fetch_add(299, Ordering::SeqCst);
    assert_eq!(state(&fixture, "c-5").await, "open");
    fixture.clock.fetch_add(1, Ordering::SeqCst);
    assert_eq!(state(&fixture, "c-5").await, "expired");
    let (status, problem) = fixture.hand_over(&second, &session()).await;
    assert_eq!(
        (status, problem["code"].as_str()),
        (410, Some("browser.ceremony_expired"))
    );
    assert!(fixture.vault.open("p-3").expect("open").is_none());

    let (status, problem) = fixture.call(Method::DELETE, "/control/v1/ceremonies/c-9", None).await;
    assert_eq!((status, problem["code"].as_str()), (404, Some("browser.no_ceremony")));
}
