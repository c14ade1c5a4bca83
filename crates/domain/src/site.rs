//! The public site's addresses (`SITE_URL`, `DOCS_URL`): where the home page, privacy policy,
//! terms and `release.txt` are published, which the mail provider's app verification reads.
//!
//! `steward-api` serves the site under the *path* of its address, beside the owner's web client
//! at `/` and the API at `/v1`: `https://steward.example/site/` is served at `/site/`. A reverse
//! proxy may publish that path at another host's root (`https://example.org/` →
//! `http://127.0.0.1:8080/site/`): the pages link to each other relatively, so they work either
//! way. The path is therefore never `/` (the web client's) and never begins with a segment the
//! API or the web client uses.

use std::fmt;

/// The first path segments the site may not take: the API, readiness, the call webhooks and
/// the web client's own directories (its files all have a dot in their names, which a segment
/// here may not start with either).
const RESERVED: [&str; 5] = ["v1", "health", "webhooks", "app", "vendor"];

/// The path the site is served at when `SITE_URL` is unset.
pub const DEFAULT_SITE_PATH: &str = "/site/";
/// The path `release.txt` of the documentation is served at when `DOCS_URL` is unset.
pub const DEFAULT_DOCS_PATH: &str = "/docs/";

/// A public address of the site or the documentation: `https://` (or `http://` on loopback),
/// no credentials, query or fragment, and a path of one or more plain segments, kept with a
/// trailing `/`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PublicUrl {
    url: String,
    path: String,
}

impl PublicUrl {
    /// Parses `text`; the error says what is wrong with it.
    pub fn parse(text: &str) -> Result<PublicUrl, String> {
        let parsed = url::Url::parse(text.trim()).map_err(|error| format!("`{text}` is not a URL ({error})"))?;
        let loopback = match parsed.host() {
            Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
            Some(url::Host::Ipv4(address)) => address.is_loopback(),
            Some(url::Host::Ipv6(address)) => address.is_loopback(),
            None => return Err("must name a host".into()),
        };
        match parsed.scheme() {
            "https" => {}
            "http" if loopback => {}
            "http" => return Err("must be https:// (plain http only on loopback)".into()),
            _ => return Err("must be an https:// URL".into()),
        }
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return Err("must not hold credentials".into());
        }
        if parsed.query().is_some() || parsed.fragment().is_some() {
            return Err("must not have a query or a fragment".into());
        }
        let mut path = parsed.path().to_owned();
        if !path.ends_with('/') {
            path.push('/');
        }
        let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
        if path == "/" {
            return Err(
                "needs a path (for example https://steward.example/site/): `/` is the owner's web client; a proxy may publish that path at another host's root"
                    .into(),
            );
        }
        for segment in &segments {
            let plain = !segment.is_empty()
                && !segment.starts_with('.')
                && segment
                    .bytes()
                    .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~'));
            if !plain {
                return Err(format!(
                    "path segment `{segment}` must be letters, digits, `-`, `_`, `.` or `~`"
                ));
            }
        }
        if let Some(first) = segments
            .first()
            .filter(|first| RESERVED.contains(first) || first.contains('.'))
        {
            return Err(format!(
                "path `/{first}/` is the API's or the web client's: choose another, such as /site/"
            ));
        }
        let mut url = parsed.to_string();
        if !url.ends_with('/') {
            url.push('/');
        }
        Ok(PublicUrl { url, path })
    }

    /// The whole address, ending in `/`.
    pub fn as_str(&self) -> &str {
        &self.url
    }

    /// The path `steward-api` serves it at, beginning and ending with `/`.
    pub fn path(&self) -> &str {
        &self.path
    }
}

impl fmt::Display for PublicUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.url)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_keep_their_path_with_a_trailing_slash() {
        let site = PublicUrl::parse("https://Steward.Example/site").expect("valid");
        assert_eq!(
            (site.as_str(), site.path()),
            ("https://steward.example/site/", "/site/")
        );
        let docs = PublicUrl::parse("https://docs.example:8443/steward/docs/").expect("valid");
        assert_eq!(
            (docs.as_str(), docs.path()),
            ("https://docs.example:8443/steward/docs/", "/steward/docs/")
        );
        let local = PublicUrl::parse("http://127.0.0.1:8080/site/").expect("loopback may be http");
        assert_eq!(local.path(), "/site/");
    }

    #[test]
    fn unsafe_or_colliding_addresses_are_refused_with_a_reason() {
        for (text, reason) in [
            ("http://steward.example/site/", "must be https://"),
            ("ftp://steward.example/site/", "must be an https:// URL"),
            ("https://user:pw@steward.example/site/", "must not hold credentials"),
            ("https://steward.example/site/?a=b", "must not have a query"),
            (
                "https://steward.example/site/#top",
                "must not have a query or a fragment",
            ),
            ("https://steward.example/", "needs a path"),
            ("https://steward.example", "needs a path"),
            ("https://steward.example/v1/", "is the API's or the web client's"),
            (
                "https://steward.example/health/site/",
                "is the API's or the web client's",
            ),
            (
                "https://steward.example/index.html/",
                "is the API's or the web client's",
            ),
            ("https://steward.example/a%20b/", "must be letters, digits"),
            ("https://steward.example/site//x/", "must be letters, digits"),
            ("steward.example/site/", "is not a URL"),
        ] {
            let error = PublicUrl::parse(text).expect_err(text);
            assert!(error.contains(reason), "{text}: {error}");
        }
    }
}
