//! The web client's assets (`web/public`), embedded at build time by memory-serve: text assets
//! brotli-compressed at build time (served as brotli, gzip or plain as the browser accepts), a
//! strong `ETag` on every file with `If-None-Match` answered 304, and the security headers below
//! on every response. Mounted at `/` beside the API (see `routes::router`); `/` serves
//! `index.html`.

use axum::Router;
use axum::http::{HeaderName, HeaderValue, header};
use axum::response::Response;
use memory_serve::CacheControl;

/// Scripts, styles, images, fonts, connections and workers from this origin only: no inline
/// script or style, no `eval`, no plugin, never framed, no `<base>`, forms post here only.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' blob: data:; font-src 'self'; connect-src 'self'; manifest-src 'self'; \
     worker-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/// The headers every page and asset carries.
pub fn security_headers() -> [(HeaderName, HeaderValue); 4] {
    [
        (
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CONTENT_SECURITY_POLICY),
        ),
        (header::REFERRER_POLICY, HeaderValue::from_static("no-referrer")),
        (header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")),
        (header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY")),
    ]
}

/// Middleware adding [`security_headers`] to every response (the whole app's, API included)
/// that has not set them itself.
pub async fn secure(request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    // A response that set its own (stricter) policy keeps it: artifact bytes are `sandbox`ed.
    for (name, value) in security_headers() {
        headers.entry(name).or_insert(value);
    }
    response
}

/// The router of the embedded assets, compressed in every profile. Files are revalidated
/// (`no-cache`: the `ETag` makes that a 304), so a new build is picked up at once. It is built
/// once per process and cloned: memory-serve decompresses the assets and leaks its configuration
/// each time it builds one.
pub fn router() -> Router {
    static ROUTER: std::sync::OnceLock<Router> = std::sync::OnceLock::new();
    ROUTER
        .get_or_init(|| {
            memory_serve::load!()
                .index_file(Some("/index.html"))
                .enable_brotli(true)
                .enable_gzip(true)
                .cache_control(CacheControl::NoCache)
                .html_cache_control(CacheControl::NoCache)
                .into_router()
                .layer(axum::middleware::from_fn(secure))
        })
        .clone()
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use axum::http::{Request, StatusCode};
    use tower::ServiceExt;

    use super::*;

    async fn get(router: &Router, path: &str, headers: &[(&str, &str)]) -> Response {
        let mut request = Request::get(path);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        router
            .clone()
            .oneshot(request.body(Body::empty()).expect("request"))
            .await
            .expect("infallible")
    }

    #[tokio::test]
    async fn assets_carry_the_security_headers_a_strong_etag_and_answer_revalidation_with_304() {
        let router = router();
        let response = get(&router, "/vendor/preact.mjs", &[]).await;
        assert_eq!(response.status(), StatusCode::OK);
        let headers = response.headers();
        assert_eq!(headers[header::CONTENT_SECURITY_POLICY], CONTENT_SECURITY_POLICY);
        assert_eq!(headers[header::REFERRER_POLICY], "no-referrer");
        assert_eq!(headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
        assert!(
            headers[header::CONTENT_TYPE]
                .to_str()
                .is_ok_and(|kind| kind.starts_with("text/javascript") || kind.starts_with("application/javascript")),
            "{:?}",
            headers[header::CONTENT_TYPE]
        );
        let etag = headers[header::ETAG].to_str().expect("etag").to_owned();
        assert!(
            etag.starts_with('"') && !etag.starts_with("W/"),
            "a strong ETag: {etag}"
        );
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .expect("body");
        let vendored = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../web/public/vendor/preact.mjs"
        ))
        .expect("vendored file");
        assert_eq!(body.as_ref(), vendored.as_slice());

        let again = get(&router, "/vendor/preact.mjs", &[("if-none-match", &etag)]).await;
        assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
        assert_eq!(
            again.headers()[header::CONTENT_SECURITY_POLICY],
            CONTENT_SECURITY_POLICY
        );

        let compressed = get(&router, "/vendor/preact.mjs", &[("accept-encoding", "br")]).await;
        assert_eq!(compressed.status(), StatusCode::OK);
        assert_eq!(compressed.headers()[header::CONTENT_ENCODING], "br");
        let compressed = axum::body::to_bytes(compressed.into_body(), usize::MAX)
            .await
            .expect("body");
        assert!(
            compressed.len() < vendored.len() / 2,
            "{} of {} bytes",
            compressed.len(),
            vendored.len()
        );

        let missing = get(&router, "/vendor/nothing.mjs", &[]).await;
        assert_eq!(missing.status(), StatusCode::NOT_FOUND);
        assert_eq!(
            missing.headers()[header::CONTENT_SECURITY_POLICY],
            CONTENT_SECURITY_POLICY
        );
    }
}
