//! A profile's website session in a hosted browser: put in before the task's first page
//! ([`restore`]) and read back when the browser closes ([`cookies`]).
//!
//! Cookies go in through the DevTools protocol (`Network.setCookies`). Local storage belongs to
//! an origin's documents, so for each origin with storage a page is opened on an address of
//! that origin whose request the browser answers itself (`Fetch.fulfillRequest`: nothing goes
//! out, through the proxy or otherwise), the items are set there, and the page closes. No
//! session value is logged.

use base64::Engine as _;
use chromiumoxide::Browser;
use chromiumoxide::cdp::browser_protocol::fetch::{
    DisableParams, EnableParams, EventRequestPaused, FulfillRequestParams, HeaderEntry, RequestPattern,
};
use chromiumoxide::cdp::browser_protocol::network::{CookieParam, CookieSameSite, SetCookiesParams, TimeSinceEpoch};
use chromiumoxide::error::CdpError;
use futures_util::StreamExt as _;

use browser_policy::egress::Origin;

use crate::storage::{CookieData, SiteData, domain_matches};

/// The address on each origin where its local storage is put (answered by the browser itself).
pub const STORAGE_PATH: &str = "/.steward-session";

/// Puts `session` into `browser`, through one page opened for it and closed after.
pub async fn restore(browser: &Browser, session: &SiteData) -> Result<(), CdpError> {
    let page = browser.new_page("about:blank").await?;
    if !session.cookies.is_empty() {
        let cookies = session
            .cookies
            .iter()
            .map(cookie_param)
            .collect::<Result<Vec<_>, _>>()?;
        page.execute(SetCookiesParams::new(cookies)).await?;
    }
    for storage in &session.local_storage {
        if storage.items.is_empty() {
            continue;
        }
        let address = format!("{}{STORAGE_PATH}", storage.origin.trim_end_matches('/'));
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
        let items = serde_json::to_string(&storage.items).map_err(|error| CdpError::msg(error.to_string()))?;
        page.evaluate_expression(format!(
            "(() => {{ for (const [key, value] of {items}) localStorage.setItem(key, value); return true; }})()"
        ))
        .await?;
        page.execute(DisableParams::default()).await?;
    }
    page.close().await?;
    Ok(())
}

fn cookie_param(cookie: &CookieData) -> Result<CookieParam, CdpError> {
    let mut builder = CookieParam::builder()
        .name(cookie.name.clone())
        .value(cookie.value.clone())
        .domain(cookie.domain.clone())
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
