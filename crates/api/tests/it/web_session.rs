//! Web sessions: the bearer token exchanged for an HttpOnly cookie, the cookie accepted beside
//! the token (with the CSRF header on state-changing requests), revocation, expiry, and the
//! binding to the configured token and its scopes.

use api::routes::{Access, catalog};
use reqwest::Method;
use reqwest::header::{COOKIE, HOST, ORIGIN, SET_COOKIE};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::matrix::{every_flag_used, sample_path};
use crate::support::{Env, TestApp, expect_problem, json};

/// A web session made from the app's token: its `Set-Cookie` value and body.
async fn exchange(app: &TestApp) -> (String, Value) {
    let response = app.send(Method::POST, "/v1/web/session").await;
    assert_eq!(response.status(), 201);
    assert_eq!(response.headers()["cache-control"], "no-store");
    let set_cookie = response.headers()[SET_COOKIE].to_str().expect("ascii").to_owned();
    let (_, body) = json(response).await;
    (set_cookie, body)
}

/// The `name=value` pair a `Set-Cookie` value sets.
fn pair(set_cookie: &str) -> String {
    set_cookie.split(';').next().expect("a pair").to_owned()
}

/// A request carrying only the cookie pair (no bearer token).
fn with_cookie(app: &TestApp, method: Method, path: &str, cookie: &str) -> reqwest::RequestBuilder {
    app.client.request(method, app.url(path)).header(COOKIE, cookie)
}

#[tokio::test]
async fn the_token_becomes_an_http_only_strict_cookie_whose_secret_is_stored_only_as_a_digest() {
    let app = TestApp::spawn_with(Env::default().set("AUTH_SCOPES", "sessions.read,sessions.write")).await;
    let (set_cookie, body) = exchange(&app).await;
    // The test talks to 127.0.0.1: the loopback name, and no `Secure` over plain HTTP.
    let attributes: Vec<&str> = set_cookie.split("; ").skip(1).collect();
    assert_eq!(
        attributes,
        [
            "Path=/",
            &format!("Max-Age={}", 30 * 86_400),
            "HttpOnly",
            "SameSite=Strict"
        ]
    );
    let cookie = pair(&set_cookie);
    let secret = cookie
        .strip_prefix("steward_session=")
        .expect("the loopback cookie name");
    assert!(secret.len() >= 43, "a 256-bit secret");
    assert!(!secret.contains(&app.token) && !app.token.contains(secret));
    assert_eq!(body["credential"], "web_session");
    assert_eq!(body["scopes"], serde_json::json!(["sessions.read", "sessions.write"]));
    let expires_at: jiff::Timestamp = body["expires_at"].as_str().expect("expiry").parse().expect("timestamp");
    let days = (expires_at - jiff::Timestamp::now()).get_seconds() as f64 / 86_400.0;
    assert!((29.9..=30.1).contains(&days), "{days} days");

    let (digest, scopes): (Vec<u8>, Vec<String>) = sqlx::query_as("SELECT secret_digest, scopes FROM web_sessions")
        .fetch_one(&app.db.pool)
        .await
        .expect("one web session");
    assert_eq!(digest, Sha256::digest(secret.as_bytes()).to_vec());
    assert_eq!(scopes, ["sessions.read", "sessions.write"]);

    // The cookie reads what the token reads, and reports itself.
    let (status, page) = json(
        with_cookie(&app, Method::GET, "/v1/sessions", &cookie)
            .send()
            .await
            .expect("send"),
    )
    .await;
    assert_eq!((status, page["sessions"].is_array()), (200, true));
    let (status, current) = json(
        with_cookie(&app, Method::GET, "/v1/web/session", &cookie)
            .send()
            .await
            .expect("send"),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(current, body);
    let (_, bearer) = app.get_json("/v1/web/session").await;
    assert_eq!(bearer["credential"], "bearer");
    assert_eq!(bearer["expires_at"], Value::Null);

    // A session is made from the token only, never from another session.
    let refused = with_cookie(&app, Method::POST, "/v1/web/session", &cookie)
        .header("x-steward-csrf", "1")
        .send()
        .await
        .expect("send");
    expect_problem(refused, 401, "unauthenticated").await;
    assert_eq!(app.count("web_sessions").await, 1);
}

#[tokio::test]
async fn a_cookie_changes_state_only_with_the_csrf_header() {
    let app = TestApp::spawn().await;
    let (set_cookie, _) = exchange(&app).await;
    let cookie = pair(&set_cookie);
    let create = |csrf: Option<&str>| {
        let mut request = with_cookie(&app, Method::POST, "/v1/sessions", &cookie)
            .json(&serde_json::json!({ "agent_id": "default" }));
        if let Some(value) = csrf {
            request = request.header("x-steward-csrf", value);
        }
        request.send()
    };
    let body = expect_problem(create(None).await.expect("send"), 403, "csrf_header_required").await;
    assert_eq!(body["field"], "x-steward-csrf");
    expect_problem(create(Some("yes")).await.expect("send"), 403, "csrf_header_required").await;
    assert_eq!(app.count("sessions").await, 0, "nothing was created");
    let (status, session) = json(create(Some("1")).await.expect("send")).await;
    assert_eq!(status, 201, "{session}");
    // The bearer token needs no such header.
    app.new_session().await;
    assert_eq!(app.count("sessions").await, 2);
}

#[tokio::test]
async fn every_route_takes_the_cookie_and_every_state_changing_one_wants_the_header() {
    let app = crate::matrix::spawn_every_flag(every_flag_used()).await;
    let (set_cookie, _) = exchange(&app).await;
    let cookie = pair(&set_cookie);
    for route in catalog() {
        let label = format!("{route:?}");
        let path = sample_path(&route);
        let send = |csrf: bool| {
            let mut request = with_cookie(&app, route.method.clone(), &path, &cookie);
            if csrf {
                request = request.header("x-steward-csrf", "1");
            }
            request.send()
        };
        match route.access {
            Access::Public => {}
            Access::BearerToken => {
                expect_problem(send(true).await.expect("send"), 401, "unauthenticated").await;
            }
            Access::Scoped(_) | Access::Authenticated => {
                if route.changes_state() {
                    expect_problem(send(false).await.expect("send"), 403, "csrf_header_required").await;
                }
                if route.method == Method::DELETE && route.path == "/v1/web/session" {
                    continue; // revoking is checked below; it would end the cookie used here
                }
                let response = send(true).await.expect("send");
                let status = response.status().as_u16();
                let text = response.text().await.expect("body");
                for refusal in [
                    "\"unauthenticated\"",
                    "\"insufficient_scope\"",
                    "\"csrf_header_required\"",
                    "\"not_found\"",
                    "\"method_not_allowed\"",
                ] {
                    assert!(!text.contains(refusal), "{label}: answered {status} {text}");
                }
            }
        }
    }
}

#[tokio::test]
async fn revoking_ends_the_session_and_clears_the_cookie() {
    let app = TestApp::spawn().await;
    let (set_cookie, _) = exchange(&app).await;
    let cookie = pair(&set_cookie);
    let (other, _) = exchange(&app).await;
    let other = pair(&other);

    let revoke = |cookie: &str, csrf: bool| {
        let mut request = with_cookie(&app, Method::DELETE, "/v1/web/session", cookie);
        if csrf {
            request = request.header("x-steward-csrf", "1");
        }
        request.send()
    };
    expect_problem(revoke(&cookie, false).await.expect("send"), 403, "csrf_header_required").await;
    let response = revoke(&cookie, true).await.expect("send");
    assert_eq!(response.status(), 204);
    assert_eq!(
        response.headers()[SET_COOKIE],
        "steward_session=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict"
    );
    assert_eq!(app.count("web_sessions").await, 1, "only this session ended");

    // The ended cookie is refused, and the refusal tells the browser to drop it.
    let refused = with_cookie(&app, Method::GET, "/v1/sessions", &cookie)
        .send()
        .await
        .expect("send");
    assert_eq!(
        refused.headers()[SET_COOKIE],
        "steward_session=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict"
    );
    expect_problem(refused, 401, "unauthenticated").await;
    let ok = with_cookie(&app, Method::GET, "/v1/sessions", &other)
        .send()
        .await
        .expect("send");
    assert_eq!(ok.status(), 200, "the other browser's session goes on");

    // With the bearer token there is nothing to end; the answer is the same.
    let response = app.send(Method::DELETE, "/v1/web/session").await;
    assert_eq!(response.status(), 204);
    assert_eq!(app.count("web_sessions").await, 1);
}

#[tokio::test]
async fn an_expired_session_is_refused_and_swept_at_the_next_exchange() {
    let app = TestApp::spawn().await;
    let (set_cookie, _) = exchange(&app).await;
    let cookie = pair(&set_cookie);
    sqlx::query(
        "UPDATE web_sessions SET created_at = now() - interval '2 days', expires_at = now() - interval '1 second'",
    )
    .execute(&app.db.pool)
    .await
    .expect("age the session");
    let refused = with_cookie(&app, Method::GET, "/v1/sessions", &cookie)
        .send()
        .await
        .expect("send");
    expect_problem(refused, 401, "unauthenticated").await;
    exchange(&app).await;
    assert_eq!(app.count("web_sessions").await, 1, "the expired row is gone");
}

#[tokio::test]
async fn a_new_token_ends_every_session_and_a_narrowed_token_narrows_them() {
    let app = TestApp::spawn().await;
    let (set_cookie, _) = exchange(&app).await;
    let cookie = pair(&set_cookie);
    let (db, token) = app.stop();

    // The same token with fewer scopes: the session holds only what the token still grants.
    let narrowed = TestApp::spawn_with_token(db, Env::default().set("AUTH_SCOPES", "sessions.read"), token).await;
    let (status, current) = json(
        with_cookie(&narrowed, Method::GET, "/v1/web/session", &cookie)
            .send()
            .await
            .expect("send"),
    )
    .await;
    assert_eq!(
        (status, current["scopes"].clone()),
        (200, serde_json::json!(["sessions.read"]))
    );
    let forbidden = with_cookie(&narrowed, Method::POST, "/v1/sessions", &cookie)
        .header("x-steward-csrf", "1")
        .json(&serde_json::json!({ "agent_id": "default" }))
        .send()
        .await
        .expect("send");
    let body = expect_problem(forbidden, 403, "insufficient_scope").await;
    assert_eq!(body["required_scope"], "sessions.write");
    let (db, _) = narrowed.stop();

    // Another token: the old session never matches again, and the next exchange sweeps it.
    let replaced = TestApp::spawn_on(db, Env::default()).await;
    let refused = with_cookie(&replaced, Method::GET, "/v1/sessions", &cookie)
        .send()
        .await
        .expect("send");
    expect_problem(refused, 401, "unauthenticated").await;
    exchange(&replaced).await;
    assert_eq!(replaced.count("web_sessions").await, 1);
}

#[tokio::test]
async fn off_loopback_without_an_https_origin_no_session_is_made() {
    let app = TestApp::spawn().await;
    for (host, origin) in [
        ("steward.example", None),
        ("127.0.0.1", Some("https://steward.example")),
        ("localhost:8080", Some("http://192.0.2.7:8080")),
    ] {
        let mut request = app.request(Method::POST, "/v1/web/session").header(HOST, host);
        if let Some(origin) = origin {
            request = request.header(ORIGIN, origin);
        }
        let response = request.send().await.expect("send");
        assert!(response.headers().get(SET_COOKIE).is_none(), "{host} {origin:?}");
        expect_problem(response, 403, "web_origin_refused").await;
    }
    assert_eq!(app.count("web_sessions").await, 0);
}

/// A reverse proxy in the test: forwards every request to `upstream` as it came, except that
/// `Host` becomes the upstream's own (as proxies commonly rewrite it). Returns its base URL.
async fn host_rewriting_proxy(upstream: String) -> testkit::Served {
    let client = reqwest::Client::new();
    let proxy = axum::Router::new().fallback(move |request: axum::extract::Request| {
        let (client, upstream) = (client.clone(), upstream.clone());
        async move {
            let (parts, body) = request.into_parts();
            let body = axum::body::to_bytes(body, usize::MAX).await.expect("body");
            let mut headers = parts.headers;
            headers.remove(HOST);
            let answer = client
                .request(parts.method, format!("{upstream}{}", parts.uri))
                .headers(headers)
                .body(body)
                .send()
                .await
                .expect("upstream");
            let mut response = axum::http::Response::builder().status(answer.status());
            for (name, value) in answer.headers() {
                response = response.header(name, value);
            }
            response
                .body(axum::body::Body::from(answer.bytes().await.expect("bytes")))
                .expect("response")
        }
    });
    testkit::serve(proxy).await
}

#[tokio::test]
async fn behind_a_proxy_that_rewrites_host_the_configured_https_origin_decides_the_cookie() {
    let app = TestApp::spawn_with(Env::default().set("API_WEB_ORIGIN", "https://steward.example")).await;
    let served = host_rewriting_proxy(app.base.clone()).await;
    let proxy = served.url("");
    let post = |origin: &str| {
        app.client
            .post(format!("{proxy}/v1/web/session"))
            .header(HOST, "steward.example")
            .header(ORIGIN, origin)
            .bearer_auth(&app.token)
            .send()
    };
    let response = post("https://steward.example").await.expect("send");
    assert_eq!(response.status(), 201);
    assert_eq!(response.headers()["strict-transport-security"], "max-age=31536000");
    let set_cookie = response.headers()[SET_COOKIE].to_str().expect("ascii").to_owned();
    assert!(set_cookie.starts_with("__Host-steward_session="), "{set_cookie}");
    assert!(
        set_cookie.ends_with("; Path=/; Max-Age=2592000; HttpOnly; SameSite=Strict; Secure"),
        "{set_cookie}"
    );
    let secret = pair(&set_cookie).split_once('=').expect("pair").1.to_owned();

    // Through the proxy, the cookie of the configured name is the credential; a plain-named one
    // planted beside it is not taken.
    let get = |cookie: String| {
        app.client
            .get(format!("{proxy}/v1/sessions"))
            .header(HOST, "steward.example")
            .header(COOKIE, cookie)
            .send()
    };
    let planted = get(format!("steward_session={secret}")).await.expect("send");
    expect_problem(planted, 401, "unauthenticated").await;
    let ok = get(format!("other=1; __Host-steward_session={secret}"))
        .await
        .expect("send");
    assert_eq!(ok.status(), 200);
    assert_eq!(ok.headers()["strict-transport-security"], "max-age=31536000");

    // A page of another origin gets no session.
    let other = post("https://evil.example").await.expect("send");
    expect_problem(other, 403, "web_origin_refused").await;
}
