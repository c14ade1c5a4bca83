//! The web client is served beside the API: `/` is its page, its assets carry the strict
//! headers, and the API's own paths still answer as the API.

use crate::support::{TestApp, expect_problem};

#[tokio::test]
async fn the_page_is_served_at_the_root_with_strict_headers_and_the_api_keeps_its_paths() {
    let app = TestApp::spawn().await;
    let page = app.client.get(app.url("/")).send().await.expect("send");
    assert_eq!(page.status(), 200);
    let headers = page.headers().clone();
    assert_eq!(headers["content-security-policy"], api::web::CONTENT_SECURITY_POLICY);
    assert_eq!(headers["referrer-policy"], "no-referrer");
    assert_eq!(headers["x-content-type-options"], "nosniff");
    assert!(headers["content-type"].to_str().expect("type").starts_with("text/html"));
    let html = page.text().await.expect("body");
    assert!(html.contains(r#"<script type="module" src="/app/main."#), "{html}");
    assert!(
        !html.contains("<script>") && !html.contains("style="),
        "no inline script or style"
    );

    // The page names its script and style by their content-hashed names.
    let named = |prefix: &str| {
        let start = html.find(prefix).unwrap_or_else(|| panic!("the page names {prefix}…"));
        html[start..start + html[start..].find('"').expect("quote")].to_owned()
    };
    let (script, style) = (named("/app/main."), named("/app."));
    assert!(
        api::web::is_hashed(&script) && api::web::is_hashed(&style),
        "{script} {style}"
    );
    for asset in [
        script.as_str(),
        style.as_str(),
        "/manifest.webmanifest",
        "/sw.js",
        "/icon.svg",
    ] {
        let response = app.client.get(app.url(asset)).send().await.expect("send");
        assert_eq!(response.status(), 200, "{asset}");
        assert!(response.headers().contains_key("etag"), "{asset}");
    }

    // API paths are the API's: a problem document, with the same strict headers.
    let missing = app.client.get(app.url("/v1/nothing-here")).send().await.expect("send");
    assert_eq!(missing.headers()["x-content-type-options"], "nosniff");
    expect_problem(missing, 404, "not_found").await;
    let (status, _) = app.get_json("/v1/sessions").await;
    assert_eq!(status, 200);
}
