//! A profile's website session in a hosted browser: put in before the task's first page
//! ([`restore`]) and read back when the browser closes ([`cookies`]).
//!
//! Cookies go in through the DevTools protocol (`Network.setCookies`). Local storage belongs to
//! an origin's documents, so for each origin with storage a page is opened on an address of
//! that origin whose request the browser answers itself (`Fetch.fulfillRequest`: nothing goes
//! out, through the proxy or otherwise), the items are set there, and the page closes. No
//! session value is logged.

use base64::Engine as _;
use chromiumoxide::cdp::browser_protocol::fetch::{
    DisableParams, EnableParams, EventRequestPaused, FulfillRequestParams, HeaderEntry, RequestPattern,
};
use chromiumoxide::cdp::browser_protocol::network::{CookieParam, CookieSameSite, SetCookiesParams, TimeSinceEpoch};
use chromiumoxide::error::CdpError;
use chromiumoxide::{Browser, Page};
use futures_util::StreamExt as _;

use browser_policy::egress::Origin;

use crate::storage::{CookieData, OriginStorage, SiteData, domain_matches};

/// The address on each origin where its local storage is put (answered by the browser itself).
pub const STORAGE_PATH: &str = "/.steward-session";

/// Puts `session` into `browser`, through a page opened for it, and returns that page (blank)
/// for the task to use: closing it would close the browser's last window, and with it the
/// session's cookies that have no expiry.
pub async fn restore(browser: &Browser, session: &SiteData) -> Result<Page, CdpError> {
    let page = browser.new_page("about:blank").await?;
    if !session.cookies.is_empty() {
        let cookies = session
            .cookies
            .iter()
            .map(cookie_param)
            .collect::<Result<Vec<_>, _>>()?;
        page.execute(SetCookiesParams::new(cookies)).await?;
        // Checked, not assumed: every cookie handed over is in the browser's store now.
        let stored = browser.get_cookies().await?;
        let missing = session
            .cookies
            .iter()
            .filter(|wanted| !stored.iter().any(|cookie| cookie.name == wanted.name))
            .count();
        if missing > 0 {
            return Err(CdpError::msg(format!(
                "{missing} of the session's cookies were not stored"
            )));
        }
    }
    for storage in &session.local_storage {
        if storage.items.is_empty() {
            continue;
        }
        on_origin(&page, &storage.origin).await?;
        let items = serde_json::to_string(&storage.items).map_err(|error| CdpError::msg(error.to_string()))?;
        page.evaluate_expression(format!(
            "(() => {{ for (const [key, value] of {items}) localStorage.setItem(key, value); return true; }})()"
        ))
        .await?;
    }
    page.goto("about:blank").await?;
    Ok(page)
}

/// Puts `page` on a document of `origin` without a request: the browser answers the
/// navigation to [`STORAGE_PATH`] on that origin itself, with an empty page.
async fn on_origin(page: &Page, origin: &str) -> Result<(), CdpError> {
    let address = format!("{}{STORAGE_PATH}", origin.trim_end_matches('/'));
    page.execute(
        EnableParams::builder()
            .pattern(RequestPattern::builder().url_pattern(address.clone()).build())
            .build(),
    )
    .await?;
    let mut paused = page.event_listener::<EventRequestPaused>().await?;
    let answer = async {
        if let Some(event) = paused.next().await {
            let fulfil = FulfillRequestParams::builder()
                .request_id(event.request_id.clone())
                .response_code(200)
                .response_header(HeaderEntry::new("Content-Type", "text/html"))
                .body(base64::engine::general_purpose::STANDARD.encode("<!doctype html><title></title>"))
                .build()
                .map_err(CdpError::msg)?;
            page.execute(fulfil).await?;
        }
        Ok::<(), CdpError>(())
    };
    let (answered, navigated) = tokio::join!(answer, page.goto(address.as_str()));
    answered?;
    navigated?;
    page.execute(DisableParams::default()).await?;
    Ok(())
}

/// The website session `browser` holds for `origins`: their cookies, and each origin's local
/// storage (read on a page of that origin opened without a request).
pub async fn harvest(browser: &Browser, origins: &[Origin]) -> Result<SiteData, CdpError> {
    // Local storage first: a page that stored something after signing in had its cookies
    // already, so the cookies read after it are never older than the storage.
    let page = browser.new_page("about:blank").await?;
    let mut local_storage = Vec::new();
    for origin in origins {
        let origin = origin.to_string();
        on_origin(&page, &origin).await?;
        let entries = page
            .evaluate_expression("JSON.stringify(Object.entries(localStorage))")
            .await?
            .into_value::<String>()
            .map_err(|error| CdpError::msg(error.to_string()))?;
        let items: Vec<(String, String)> =
            serde_json::from_str(&entries).map_err(|error| CdpError::msg(error.to_string()))?;
        if !items.is_empty() {
            local_storage.push(OriginStorage { origin, items });
        }
    }
    page.close().await?;
    let cookies = cookies(browser, origins).await?;
    Ok(SiteData { cookies, local_storage })
}

/// A cookie as the protocol sets it: a domain cookie (`.example.com`) with its domain; a
/// host-only one by its address alone, so it stays host-only (and a `__Host-` cookie, which
/// may carry no domain, is accepted).
fn cookie_param(cookie: &CookieData) -> Result<CookieParam, CdpError> {
    let mut builder = CookieParam::builder()
        .name(cookie.name.clone())
        .value(cookie.value.clone());
    builder = if cookie.domain.starts_with('.') {
        builder.domain(cookie.domain.clone())
    } else {
        builder.url(format!("https://{}{}", cookie.domain, cookie.path))
    };
    builder = builder
        .path(cookie.path.clone())
        .secure(cookie.secure)
        .http_only(cookie.http_only);
    if let Some(same_site) = &cookie.same_site {
        builder = builder.same_site(match same_site.as_str() {
            "Strict" => CookieSameSite::Strict,
            "None" => CookieSameSite::None,
            _ => CookieSameSite::Lax,
        });
    }
    if let Some(expires) = cookie.expires {
        builder = builder.expires(TimeSinceEpoch::new(expires));
    }
    builder.build().map_err(CdpError::msg)
}

/// The browser's cookies that belong to `origins` (the others are not the profile's).
pub async fn cookies(browser: &Browser, origins: &[Origin]) -> Result<Vec<CookieData>, CdpError> {
    Ok(browser
        .get_cookies()
        .await?
        .into_iter()
        .filter(|cookie| {
            origins
                .iter()
                .any(|origin| domain_matches(origin.host(), &cookie.domain))
        })
        .map(|cookie| CookieData {
            name: cookie.name,
            value: cookie.value,
            domain: cookie.domain,
            path: cookie.path,
            secure: cookie.secure,
            http_only: cookie.http_only,
            same_site: cookie.same_site.map(|same_site| same_site.as_ref().to_owned()),
            expires: (!cookie.session).then_some(cookie.expires),
        })
        .collect())
}
