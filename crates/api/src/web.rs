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

/// `Strict-Transport-Security` for a server whose web origin is https (`API_WEB_ORIGIN`): a
/// year, without subdomains (the owner's other hosts are not this server's to decide). HSTS
/// covers every port of the host name, so other services on it are then reached over HTTPS
/// only too.
pub async fn strict_transport(mut response: Response) -> Response {
    response.headers_mut().insert(
        header::STRICT_TRANSPORT_SECURITY,
        HeaderValue::from_static("max-age=31536000"),
    );
    response
}

/// Whether `path` names a content-hashed file (`<stem>.<16 hex digits>.<ext>`, see the build
/// script): its bytes can never change under that name.
pub fn is_hashed(path: &str) -> bool {
    let Some((rest, _extension)) = path.rsplit_once('.') else {
        return false;
    };
    rest.rsplit_once('.')
        .is_some_and(|(_, hash)| hash.len() == 16 && hash.bytes().all(|byte| byte.is_ascii_hexdigit()))
}

/// Content-hashed files are cached for a year without revalidation; the rest keep `no-cache`.
async fn cache_hashed(request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let hashed = is_hashed(request.uri().path());
    let mut response = next.run(request).await;
    if hashed && response.status().is_success() {
        response.headers_mut().insert(
            header::CACHE_CONTROL,
            HeaderValue::from_static("public, max-age=31536000, immutable"),
        );
    }
    response
}

/// The router of the embedded assets, compressed in every profile. Scripts and styles have
/// content-hashed names and are cached for good; the page, the service worker, the manifest and
/// the icon are revalidated (`no-cache`: the `ETag` makes that a 304), so a new build is picked
/// up at once. It is built once per process and cloned: memory-serve decompresses the assets and
/// leaks its configuration each time it builds one.
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
                .layer(axum::middleware::from_fn(cache_hashed))
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

    async fn text(response: Response) -> String {
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .expect("body");
        String::from_utf8(body.to_vec()).expect("UTF-8")
    }

    /// The hashed path the page names for `prefix` (e.g. `/vendor/preact.`).
    fn named(page: &str, prefix: &str) -> String {
        let start = page.find(prefix).unwrap_or_else(|| panic!("the page names {prefix}…"));
        let end = start + page[start..].find('"').expect("a closing quote");
        page[start..end].to_owned()
    }

    #[test]
    fn only_names_with_a_sixteen_digit_hash_are_hashed() {
        assert!(is_hashed("/vendor/preact.0123456789abcdef.mjs"));
        assert!(is_hashed("/app.fedcba9876543210.css"));
        assert!(!is_hashed("/vendor/preact.mjs"));
        assert!(!is_hashed("/sw.js"));
        assert!(!is_hashed("/app/main.0123456789abcde.js"));
        assert!(!is_hashed("/app/main.0123456789abcdeg.js"));
    }

    #[tokio::test]
    async fn scripts_have_hashed_names_cached_for_good_and_the_page_names_them() {
        let router = router();
        let page = get(&router, "/", &[]).await;
        assert_eq!(page.headers()[header::CACHE_CONTROL], "no-cache");
        let page = text(page).await;
        let main = named(&page, "/app/main.");
        assert!(is_hashed(&main), "{main}");
        assert!(
            !page.contains("\"/app/main.js\""),
            "the page names the hashed entry only"
        );
        let entry = get(&router, &main, &[]).await;
        assert_eq!(entry.status(), StatusCode::OK);
        assert_eq!(
            entry.headers()[header::CACHE_CONTROL],
            "public, max-age=31536000, immutable"
        );
        // Its imports name hashed files too, each of them served.
        let entry = text(entry).await;
        let api = named(&entry, "./api.");
        assert!(is_hashed(&api), "{api}");
        let api = get(&router, &format!("/app/{}", api.trim_start_matches("./")), &[]).await;
        assert_eq!(api.status(), StatusCode::OK);
        // The service worker keeps its name, is revalidated, and caches the hashed shell.
        let worker = get(&router, "/sw.js", &[]).await;
        assert_eq!(worker.headers()[header::CACHE_CONTROL], "no-cache");
        let worker = text(worker).await;
        assert!(worker.contains(&format!("\"{main}\"")), "the worker caches {main}");
        // The unhashed names and the type declarations are not served.
        assert_eq!(get(&router, "/app/main.js", &[]).await.status(), StatusCode::NOT_FOUND);
        assert_eq!(
            get(&router, "/vendor/preact.d.mts", &[]).await.status(),
            StatusCode::NOT_FOUND
        );
    }

    #[tokio::test]
    async fn assets_carry_the_security_headers_a_strong_etag_and_answer_revalidation_with_304() {
        let router = router();
        let preact = named(&text(get(&router, "/", &[]).await).await, "/vendor/preact.");
        let response = get(&router, &preact, &[]).await;
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

        let again = get(&router, &preact, &[("if-none-match", &etag)]).await;
        assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
        assert_eq!(
            again.headers()[header::CONTENT_SECURITY_POLICY],
            CONTENT_SECURITY_POLICY
        );

        let compressed = get(&router, &preact, &[("accept-encoding", "br")]).await;
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
