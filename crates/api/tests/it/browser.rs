//! Website Access over a browser role's real control plane and handoff address (in this test's
//! process, without Chromium: ceremonies launch no browser): routes mounted only with the flag,
//! a profile made with its first ceremony (and rolled back when it cannot begin), a device
//! handoff making it ready, a rejected handoff removing it, `Start over`, and removal.

use std::sync::Arc;

use domain::flags::{FeatureFlags, Flag};
use reqwest::Method;
use serde_json::{Value, json};
use steward_browser::ceremony::{Ceremonies, system_clock};
use steward_browser::control::{Control, router};
use steward_browser::handoff::{self, Handoff};
use steward_browser::proxy::Upstream;
use steward_browser::storage::Vault;
use steward_browser::tasks::{Browsers, Template};

use crate::support::{Env, TestApp, expect_problem, json};

const CREDENTIAL: &str = "a-control-plane-credential-for-these-tests";

/// A browser role's control plane and outside address, and its vault.
struct Role {
    control: String,
    public: String,
    vault: Arc<Vault>,
    _dir: tempfile::TempDir,
    _served: (testkit::Served, testkit::Served),
}

async fn role() -> Role {
    let dir = tempfile::tempdir().expect("a directory");
    let vault = Arc::new(Vault::new(&[3; 32], dir.path().join("sealed")));
    std::fs::create_dir(vault.directory()).expect("the vault's directory");
    let ceremonies = Arc::new(Ceremonies::new(system_clock()));
    let browsers = Arc::new(Browsers::new(
        Template {
            executable: "/usr/lib/chromium/chromium".into(),
            display: ":0".into(),
            sandbox: false,
            local_site_keys: Vec::new(),
            upstream: Upstream::Local(([127, 0, 0, 1], 9).into()),
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
    let public = testkit::serve(handoff::router(Arc::new(Handoff {
        ceremonies,
        vault: Arc::clone(&vault),
        browsers,
    })))
    .await;
    Role {
        control: control.url(""),
        public: public.url(""),
        vault,
        _dir: dir,
        _served: (control, public),
    }
}

async fn app_for(role: &Role) -> TestApp {
    let control = url::Url::parse(&role.control).expect("a url");
    let public = url::Url::parse(&role.public).expect("a url");
    TestApp::spawn_configured(Env::default(), move |config| {
        config.flags = FeatureFlags::with(&[Flag::Browser]).expect("flags");
        config.browser =
            Some(api::browser_access::BrowserAccess::new(control, CREDENTIAL.to_owned(), public).expect("a client"));
    })
    .await
}

fn session() -> Value {
    json!({"cookies": [{"name": "sid", "value": "s1", "domain": "shop.example", "path": "/", "secure": true}]})
}

async fn hand_over(handoff_url: &str, capability: &str, body: &Value) -> u16 {
    reqwest::Client::new()
        .post(handoff_url)
        .bearer_auth(capability)
        .json(body)
        .send()
        .await
        .expect("the handoff address answers")
        .status()
        .as_u16()
}

#[tokio::test]
async fn the_website_access_routes_exist_only_with_the_browser_flag() {
    let off = TestApp::spawn_with(Env::default()).await;
    expect_problem(off.send(Method::GET, "/v1/browser/profiles").await, 404, "not_found").await;
    let role = role().await;
    let on = app_for(&role).await;
    let (status, list) = json(on.send(Method::GET, "/v1/browser/profiles").await).await;
    assert_eq!((status, list), (200, json!({"profiles": []})));
    let anonymous = reqwest::Client::new()
        .get(on.url("/v1/browser/profiles"))
        .send()
        .await
        .expect("answer");
    assert_eq!(anonymous.status(), 401);
}

#[tokio::test]
async fn a_device_ceremony_makes_the_profile_ready_and_removal_forgets_it() {
    let role = role().await;
    let app = app_for(&role).await;
    let (status, created) = json(
        app.request(Method::POST, "/v1/browser/profiles")
            .json(&json!({
                "primary_origin": "https://Shop.Example/",
                "additional_origins": ["https://login.shop.example", "https://shop.example"],
                "ceremony": {"kind": "device"},
            }))
            .send()
            .await
            .expect("answer"),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["profile"]["state"], "PENDING");
    assert_eq!(created["profile"]["primary_origin"], "https://shop.example");
    assert_eq!(
        created["profile"]["allowedOrigins"],
        json!(["https://shop.example", "https://login.shop.example"])
    );
    let ceremony = &created["ceremony"];
    assert_eq!(ceremony["state"], "open");
    assert_eq!(
        ceremony["handoff_url"],
        format!("{}/handoff", role.public.trim_end_matches('/'))
    );
    let capability = ceremony["capability"].as_str().expect("a capability");
    let ceremony_id = ceremony["ceremony_id"].as_str().expect("an id");
    let profile_id = created["profile"]["profile_id"].as_str().expect("an id");

    // The capability is in that answer only.
    let (status, read) = json(
        app.send(Method::GET, &format!("/v1/browser/ceremonies/{ceremony_id}"))
            .await,
    )
    .await;
    assert_eq!(status, 200);
    assert!(
        read.get("capability").is_none() && !read.to_string().contains(capability),
        "{read}"
    );
    assert_eq!(
        (read["state"].as_str(), read["profile_state"].as_str()),
        (Some("open"), Some("PENDING"))
    );

    let handoff_url = ceremony["handoff_url"].as_str().expect("a url");
    assert_eq!(hand_over(handoff_url, capability, &session()).await, 204);
    let (_, read) = json(
        app.send(Method::GET, &format!("/v1/browser/ceremonies/{ceremony_id}"))
            .await,
    )
    .await;
    assert_eq!(
        (read["state"].as_str(), read["profile_state"].as_str()),
        (Some("completed"), Some("READY"))
    );
    let (_, list) = json(app.send(Method::GET, "/v1/browser/profiles").await).await;
    assert_eq!(list["profiles"][0]["state"], "READY");
    assert!(role.vault.open(profile_id).expect("open").is_some());

    // Sign in again, then start over: the first new ceremony is cancelled by the second.
    let path = format!("/v1/browser/profiles/{profile_id}/ceremonies");
    let (status, again) = json(
        app.request(Method::POST, &path)
            .json(&json!({"kind": "device"}))
            .send()
            .await
            .expect("answer"),
    )
    .await;
    assert_eq!(status, 201, "{again}");
    let (_, over) = json(
        app.request(Method::POST, &path)
            .json(&json!({"kind": "device"}))
            .send()
            .await
            .expect("answer"),
    )
    .await;
    let first = again["ceremony_id"].as_str().expect("id");
    let (_, read) = json(app.send(Method::GET, &format!("/v1/browser/ceremonies/{first}")).await).await;
    assert_eq!(read["state"], "cancelled");
    assert_eq!(
        hand_over(
            handoff_url,
            again["capability"].as_str().expect("capability"),
            &session()
        )
        .await,
        409
    );
    let over_id = over["ceremony_id"].as_str().expect("id");

    // A remote ceremony's link carries its capability in the fragment only.
    let (status, remote) = json(
        app.request(Method::POST, &path)
            .json(&json!({"kind": "remote", "login_url": "https://shop.example/login"}))
            .send()
            .await
            .expect("answer"),
    )
    .await;
    assert_eq!(status, 201, "{remote}");
    let link = remote["continue_url"].as_str().expect("a link");
    assert!(
        link.starts_with(&format!("{}/sign-in#c=", role.public.trim_end_matches('/'))),
        "{link}"
    );
    assert!(remote.get("capability").is_none());
    // The remote ceremony replaced the one before it (`Start over`).
    let (_, read) = json(
        app.send(Method::GET, &format!("/v1/browser/ceremonies/{over_id}"))
            .await,
    )
    .await;
    assert_eq!(read["state"], "cancelled");
    assert_eq!(
        hand_over(
            handoff_url,
            over["capability"].as_str().expect("capability"),
            &session()
        )
        .await,
        409
    );

    // Removal while a ceremony is open: it is cancelled with the profile.
    let remote_id = remote["ceremony_id"].as_str().expect("id");
    let (_, read) = json(
        app.send(Method::GET, &format!("/v1/browser/ceremonies/{remote_id}"))
            .await,
    )
    .await;
    assert_eq!(read["state"], "open");
    // Removal: the session is forgotten, the profile revoked; again is fine; no more sign-ins.
    let removed = app
        .send(Method::DELETE, &format!("/v1/browser/profiles/{profile_id}"))
        .await;
    assert_eq!(removed.status(), 204);
    assert!(
        role.vault.open(profile_id).expect("open").is_none(),
        "the session is gone"
    );
    let (_, list) = json(app.send(Method::GET, "/v1/browser/profiles").await).await;
    assert_eq!(list["profiles"][0]["state"], "REVOKED");
    let (_, read) = json(
        app.send(Method::GET, &format!("/v1/browser/ceremonies/{remote_id}"))
            .await,
    )
    .await;
    assert_eq!(
        (read["state"].as_str(), read["profile_state"].as_str()),
        (Some("cancelled"), Some("REVOKED"))
    );
    assert!(
        role.vault.open(profile_id).expect("open").is_none(),
        "nothing was sealed after removal"
    );
    assert_eq!(
        app.send(Method::DELETE, &format!("/v1/browser/profiles/{profile_id}"))
            .await
            .status(),
        204
    );
    expect_problem(
        app.request(Method::POST, &path)
            .json(&json!({"kind": "device"}))
            .send()
            .await
            .expect("answer"),
        409,
        "browser_profile_revoked",
    )
    .await;
}

#[tokio::test]
async fn a_rejected_handoff_or_a_failed_creation_leaves_no_profile() {
    let role = role().await;
    let app = app_for(&role).await;
    let create = |body: Value| app.request(Method::POST, "/v1/browser/profiles").json(&body).send();

    // A login page off the profile's origins: the browser role refuses, nothing is kept.
    expect_problem(
        create(json!({
            "primary_origin": "https://shop.example",
            "ceremony": {"kind": "remote", "login_url": "https://elsewhere.example/login"},
        }))
        .await
        .expect("answer"),
        422,
        "browser_origin_refused",
    )
    .await;
    expect_problem(
        create(json!({"primary_origin": "http://shop.example", "ceremony": {"kind": "device"}}))
            .await
            .expect("answer"),
        422,
        "browser_origin_refused",
    )
    .await;
    let (_, list) = json(app.send(Method::GET, "/v1/browser/profiles").await).await;
    assert_eq!(list, json!({"profiles": []}));

    // A handoff of another site's session is rejected: the unused profile goes with it.
    let (status, created) = json(
        create(json!({"primary_origin": "https://shop.example", "ceremony": {"kind": "device"}}))
            .await
            .expect("answer"),
    )
    .await;
    assert_eq!(status, 201);
    let ceremony = &created["ceremony"];
    let mut foreign = session();
    foreign["cookies"][0]["domain"] = json!("tracker.example");
    assert_eq!(
        hand_over(
            ceremony["handoff_url"].as_str().expect("url"),
            ceremony["capability"].as_str().expect("capability"),
            &foreign
        )
        .await,
        422
    );
    let id = ceremony["ceremony_id"].as_str().expect("id");
    let (_, read) = json(app.send(Method::GET, &format!("/v1/browser/ceremonies/{id}")).await).await;
    assert_eq!(read["state"], "rejected");
    assert!(read.get("profile_state").is_none_or(Value::is_null), "{read}");
    let (_, list) = json(app.send(Method::GET, "/v1/browser/profiles").await).await;
    assert_eq!(list, json!({"profiles": []}));
}

#[tokio::test]
async fn an_unreachable_browser_role_leaves_no_profile_behind() {
    let role = role().await;
    // The control plane is somewhere nothing listens.
    let public = url::Url::parse(&role.public).expect("a url");
    let app = TestApp::spawn_configured(Env::default(), move |config| {
        config.flags = FeatureFlags::with(&[Flag::Browser]).expect("flags");
        config.browser = Some(
            api::browser_access::BrowserAccess::new(
                url::Url::parse("http://127.0.0.1:9/").expect("a url"),
                CREDENTIAL.to_owned(),
                public,
            )
            .expect("a client"),
        );
    })
    .await;
    expect_problem(
        app.request(Method::POST, "/v1/browser/profiles")
            .json(&json!({"primary_origin": "https://shop.example", "ceremony": {"kind": "device"}}))
            .send()
            .await
            .expect("answer"),
        503,
        "browser_unavailable",
    )
    .await;
    let (_, list) = json(app.send(Method::GET, "/v1/browser/profiles").await).await;
    assert_eq!(list, json!({"profiles": []}));
}

#[tokio::test]
async fn a_rejected_ceremony_removes_the_profile_only_when_no_newer_ceremony_is_open() {
    let role = role().await;
    let app = app_for(&role).await;
    let begin = |profile: String| {
        app.request(Method::POST, &format!("/v1/browser/profiles/{profile}/ceremonies"))
            .json(&json!({"kind": "device"}))
            .send()
    };
    let read = async |id: &str| {
        json(app.send(Method::GET, &format!("/v1/browser/ceremonies/{id}")).await)
            .await
            .1
    };
    let mut foreign = session();
    foreign["cookies"][0]["domain"] = json!("tracker.example");

    // Rejected while a newer ceremony (Start over, begun before the rejection was read) is open:
    // the profile stays for the newer one, which then makes it ready.
    let (_, created) = json(
        app.request(Method::POST, "/v1/browser/profiles")
            .json(&json!({"primary_origin": "https://shop.example", "ceremony": {"kind": "device"}}))
            .send()
            .await
            .expect("answer"),
    )
    .await;
    let profile = created["profile"]["profile_id"].as_str().expect("id").to_owned();
    let first = &created["ceremony"];
    let handoff_url = first["handoff_url"].as_str().expect("url");
    assert_eq!(
        hand_over(handoff_url, first["capability"].as_str().expect("capability"), &foreign).await,
        422
    );
    let (status, newer) = json(begin(profile.clone()).await.expect("answer")).await;
    assert_eq!(status, 201, "{newer}");
    let rejected = read(first["ceremony_id"].as_str().expect("id")).await;
    assert_eq!(rejected["state"], "rejected");
    let (_, list) = json(app.send(Method::GET, "/v1/browser/profiles").await).await;
    assert_eq!(
        list["profiles"][0]["state"], "PENDING",
        "kept for the newer ceremony: {list}"
    );
    assert_eq!(
        hand_over(
            handoff_url,
            newer["capability"].as_str().expect("capability"),
            &session()
        )
        .await,
        204
    );
    let done = read(newer["ceremony_id"].as_str().expect("id")).await;
    assert_eq!(
        (done["state"].as_str(), done["profile_state"].as_str()),
        (Some("completed"), Some("READY"))
    );

    // An older ceremony whose row still reads open (Start over cancelled it at the role, and
    // nobody read it since) does not keep a rejected profile alive.
    let (_, created) = json(
        app.request(Method::POST, "/v1/browser/profiles")
            .json(&json!({"primary_origin": "https://store.example", "ceremony": {"kind": "device"}}))
            .send()
            .await
            .expect("answer"),
    )
    .await;
    let second = created["profile"]["profile_id"].as_str().expect("id").to_owned();
    let (_, over) = json(begin(second.clone()).await.expect("answer")).await;
    let mut foreign = foreign.clone();
    foreign["cookies"][0]["domain"] = json!("tracker.example");
    assert_eq!(
        hand_over(handoff_url, over["capability"].as_str().expect("capability"), &foreign).await,
        422
    );
    assert_eq!(
        read(over["ceremony_id"].as_str().expect("id")).await["state"],
        "rejected"
    );
    let (_, list) = json(app.send(Method::GET, "/v1/browser/profiles").await).await;
    let ids: Vec<&str> = list["profiles"]
        .as_array()
        .expect("profiles")
        .iter()
        .filter_map(|profile| profile["profile_id"].as_str())
        .collect();
    assert_eq!(ids, vec![profile.as_str()], "the rejected profile is gone: {list}");
    assert!(role.vault.open(&second).expect("open").is_none());
}
