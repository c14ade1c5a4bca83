//! The public site: served without authentication under the path of `SITE_URL` (and
//! `release.txt` under `DOCS_URL`'s), with the web client's Content-Security-Policy, the
//! operator's templates, and `/v1` and the web client unaffected.

use reqwest::Method;

use crate::support::{Env, TestApp, expect_problem};

const CSP: &str = api::web::CONTENT_SECURITY_POLICY;

async fn public_get(app: &TestApp, path: &str) -> reqwest::Response {
    // No bearer, no cookie: what the mail provider's verifier sends.
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
        .get(app.url(path))
        .send()
        .await
        .expect("send")
}

#[tokio::test]
async fn the_default_site_is_public_strict_and_leaves_the_api_and_the_web_client_alone() {
    let app = TestApp::spawn().await;
    for (path, title, links) in [
        ("/site/", "<h1>Steward</h1>", &["href=\"privacy\"", "href=\"tos\""][..]),
        ("/site/privacy", "<h1>Privacy policy</h1>", &["Limited Use"][..]),
        ("/site/tos", "<h1>Terms of service</h1>", &[][..]),
    ] {
        let response = public_get(&app, path).await;
        assert_eq!(response.status(), 200, "{path}");
        assert_eq!(response.headers()["content-type"], "text/html; charset=utf-8");
        assert_eq!(response.headers()["content-security-policy"], CSP, "{path}");
        assert_eq!(response.headers()["x-content-type-options"], "nosniff");
        let body = response.text().await.expect("text");
        assert!(body.contains(title), "{path}: {body}");
        for link in links {
            assert!(body.contains(link), "{path} has {link}");
        }
        assert!(!body.contains("{{"), "{path}: every placeholder is filled");
    }
    for (path, body) in [
        ("/site/release.txt", "test-release\n"),
        ("/docs/release.txt", "test-release\n"),
    ] {
        let response = public_get(&app, path).await;
        assert_eq!(response.status(), 200, "{path}");
        assert_eq!(response.headers()["content-type"], "text/plain; charset=utf-8");
        assert_eq!(response.text().await.expect("text"), body);
    }
    let css = public_get(&app, "/site/site.css").await;
    assert_eq!(css.headers()["content-type"], "text/css; charset=utf-8");
    let bare = public_get(&app, "/site").await;
    assert_eq!(
        (bare.status().as_u16(), &bare.headers()["location"]),
        (308, &"/site/".parse().expect("value"))
    );

    // The API still needs its credentials, and the web client is still at `/`.
    expect_problem(public_get(&app, "/v1/sessions").await, 401, "unauthenticated").await;
    let index = public_get(&app, "/").await;
    assert_eq!(index.status(), 200);
    assert!(index.text().await.expect("text").contains("<html"), "the web client");
    expect_problem(public_get(&app, "/site/nothing").await, 404, "not_found").await;
    // A write to a page is not a thing.
    let post = app.request(Method::POST, "/site/privacy").send().await.expect("send");
    assert_eq!(post.status(), 405);
}

#[tokio::test]
async fn the_configured_addresses_and_the_operators_templates_are_served() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("home.html"),
        "<!doctype html><title>{{deployment}}</title><h1>{{deployment}}</h1><p>Run by {{operator}}; write to {{contact}}. <a href=\"privacy\">Privacy</a></p>",
    )
    .expect("write");
    let app = TestApp::spawn_with(
        Env::default()
            .set("SITE_URL", "https://steward.example/about/")
            .set("DOCS_URL", "https://steward.example/handbook/")
            .set("SITE_NAME", "Ada's <Steward>")
            .set("SITE_OPERATOR", "Ada Lovelace")
            .set("SITE_CONTACT", "ada@example.org")
            .set("SITE_TEMPLATES_DIR", &dir.path().display().to_string()),
    )
    .await;
    let home = public_get(&app, "/about/").await;
    assert_eq!(home.status(), 200);
    assert_eq!(home.headers()["content-security-policy"], CSP);
    assert_eq!(
        home.text().await.expect("text"),
        "<!doctype html><title>Ada&#39;s &lt;Steward&gt;</title><h1>Ada&#39;s &lt;Steward&gt;</h1><p>Run by Ada Lovelace; write to ada@example.org. <a href=\"privacy\">Privacy</a></p>"
    );
    // The pages the operator did not replace keep their defaults, with the configured values.
    let privacy = public_get(&app, "/about/privacy").await.text().await.expect("text");
    assert!(
        privacy.contains("run by Ada Lovelace") && privacy.contains("ada@example.org"),
        "{privacy}"
    );
    assert_eq!(
        public_get(&app, "/about/release.txt").await.text().await.expect("text"),
        "test-release\n"
    );
    assert_eq!(
        public_get(&app, "/handbook/release.txt")
            .await
            .text()
            .await
            .expect("text"),
        "test-release\n"
    );
    // The default paths are not served once addresses are configured.
    assert_eq!(public_get(&app, "/site/").await.status(), 404);
    assert_eq!(public_get(&app, "/docs/release.txt").await.status(), 404);
}
