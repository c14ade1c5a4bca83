//! Authentication (the static bearer token, or a web session cookie) and per-route scope checks.
//!
//! The presented token is compared with the configured one through their SHA-256 digests in
//! constant time, so neither the content nor the length of the token leaks through timing.
//!
//! A web session (see [`crate::handlers::web_session`]) is the web client's credential: the page
//! exchanges the bearer token once for an `HttpOnly`, `SameSite=Strict` cookie holding a random
//! secret, and no script of the page can read a credential afterwards. The server keeps only the
//! secret's digest, the scopes the token had, an expiry and a binding to the configured token, so
//! replacing the token ends every web session. A cookie-authenticated request that can change
//! state (any method but GET, HEAD and OPTIONS) must also carry [`CSRF_HEADER`]: a page of another
//! origin cannot set a custom header without a CORS preflight, which this server never grants.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, header};
use axum::middleware::Next;
use axum::response::Response;
use domain::ErrorCode;
use domain::ids::PrincipalId;
use domain::scope::{Scope, ScopeSet};
use sha2::{Digest, Sha256};
use store::Store;
use subtle::ConstantTimeEq;

use crate::problem::ApiError;

/// The header a cookie-authenticated state-changing request must carry, with the value `1`.
pub const CSRF_HEADER: &str = "x-steward-csrf";
/// The web session cookie's name on a loopback host, where the page is plain HTTP.
pub const LOOPBACK_COOKIE: &str = "steward_session";
/// The web session cookie's name elsewhere: `Secure`, and the `__Host-` prefix makes the browser
/// refuse it unless it is also host-only with `Path=/`, so no sibling host can plant one.
pub const SECURE_COOKIE: &str = "__Host-steward_session";

/// Knows the token digest and the scopes it grants.
pub struct Authenticator {
    token_digest: [u8; 32],
    /// Derived from the token: recorded with each web session and required to match.
    web_binding: [u8; 32],
    scopes: ScopeSet,
    principal: PrincipalId,
    web_session_ttl: Duration,
    web_origin: WebOrigin,
}

/// Where the owner opens the web client (`API_WEB_ORIGIN`): what the session cookie is, decided
/// by configuration and never by the request's `Host` (a reverse proxy may rewrite it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WebOrigin {
    /// No HTTPS origin: web sessions only for a page on a loopback address over plain HTTP
    /// (cookie [`LOOPBACK_COOKIE`], not `Secure`). An exchange whose `Host` or `Origin` is not
    /// loopback is refused.
    Loopback,
    /// An HTTPS origin (`https://host[:port]`): cookie [`SECURE_COOKIE`] (`Secure`, host-only),
    /// `Strict-Transport-Security` on every answer, and an exchange from a page of another origin
    /// refused.
    Https(String),
}

impl WebOrigin {
    /// `API_WEB_ORIGIN`'s value: unset (or empty) is [`WebOrigin::Loopback`]; `http://` only on a
    /// loopback host; otherwise `https://host[:port]`, without a path, query or user info.
    pub fn parse(value: Option<&str>) -> Result<WebOrigin, String> {
        let Some(value) = value.map(str::trim).filter(|value| !value.is_empty()) else {
            return Ok(WebOrigin::Loopback);
        };
        let uri: axum::http::Uri = value
            .parse()
            .map_err(|_| format!("`{value}` is not an origin such as https://steward.example"))?;
        let (Some(scheme), Some(authority)) = (uri.scheme_str(), uri.authority()) else {
            return Err(format!("`{value}` is not an origin such as https://steward.example"));
        };
        if authority.as_str().contains('@') || uri.query().is_some() || !matches!(uri.path(), "" | "/") {
            return Err(format!(
                "`{value}` must be an origin only (scheme, host and port), such as https://steward.example"
            ));
        }
        match scheme.to_ascii_lowercase().as_str() {
            // As browsers serialize an origin: lowercase, and without the default port.
            "https" => Ok(WebOrigin::Https(match authority.port_u16() {
                Some(443) => format!("https://{}", authority.host().to_ascii_lowercase()),
                _ => format!("https://{}", authority.as_str().to_ascii_lowercase()),
            })),
            "http" if is_loopback_host(authority.as_str()) => Ok(WebOrigin::Loopback),
            "http" => Err(format!(
                "`{value}`: plain http is allowed only on a loopback host; the web client elsewhere needs https"
            )),
            _ => Err(format!("`{value}` must be an https origin")),
        }
    }
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authenticator")
            .field("scopes", &self.scopes)
            .field("principal", &self.principal)
            .field("web_session_ttl", &self.web_session_ttl)
            .field("web_origin", &self.web_origin)
            .finish_non_exhaustive()
    }
}

/// How the caller authenticated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Credential {
    Bearer,
    /// A web session cookie: its record's id and expiry.
    WebSession {
        id: uuid::Uuid,
        expires_at: jiff::Timestamp,
    },
}

/// The authenticated caller, available to handlers as a request extension.
#[derive(Clone, Debug)]
pub struct Caller {
    pub principal: PrincipalId,
    /// What this request may do: the token's scopes, or for a web session the scopes recorded at
    /// its exchange that the token still has.
    pub scopes: ScopeSet,
    pub credential: Credential,
}

impl Authenticator {
    /// `web_binding` is a key derived from `token` (an HMAC of a fixed label): stored with each
    /// web session, so a session made under another token never matches.
    pub fn new(
        token: &[u8],
        scopes: ScopeSet,
        principal: PrincipalId,
        web_binding: [u8; 32],
        web_session_ttl: Duration,
        web_origin: WebOrigin,
    ) -> Authenticator {
        Authenticator {
            token_digest: Sha256::digest(token).into(),
            web_binding,
            scopes,
            principal,
            web_session_ttl,
            web_origin,
        }
    }

    pub fn web_origin(&self) -> &WebOrigin {
        &self.web_origin
    }

    /// Whether a web session may be made for this request: with an HTTPS origin, unless the
    /// page is of another origin; without one, only for a page on loopback (both `Host` and,
    /// when the browser sends it, `Origin`).
    pub fn admits_exchange(&self, headers: &HeaderMap) -> Result<(), ApiError> {
        let origin = headers.get(header::ORIGIN).and_then(|value| value.to_str().ok());
        match &self.web_origin {
            WebOrigin::Https(configured) => match origin {
                Some(origin) if !origin.eq_ignore_ascii_case(configured) => {
                    Err(ApiError::new(ErrorCode::WebOriginRefused).detail(format!(
                        "this server's web client is at {configured} (API_WEB_ORIGIN), not {origin}"
                    )))
                }
                _ => Ok(()),
            },
            WebOrigin::Loopback => {
                let host_ok = headers
                    .get(header::HOST)
                    .and_then(|value| value.to_str().ok())
                    .is_some_and(is_loopback_host);
                let origin_ok =
                    origin.is_none_or(|origin| origin.strip_prefix("http://").is_some_and(is_loopback_host));
                if host_ok && origin_ok {
                    Ok(())
                } else {
                    Err(ApiError::new(ErrorCode::WebOriginRefused).detail(
                        "web sessions off loopback need the https origin the owner opens the web client at: set \
                         API_WEB_ORIGIN (for example https://steward.example) and serve it over HTTPS",
                    ))
                }
            }
        }
    }

    /// The web session cookie's name.
    fn cookie_name(&self) -> &'static str {
        match self.web_origin {
            WebOrigin::Loopback => LOOPBACK_COOKIE,
            WebOrigin::Https(_) => SECURE_COOKIE,
        }
    }

    /// A `Set-Cookie` value for the session `secret`, lasting the session's lifetime.
    pub fn session_cookie(&self, secret: &str) -> HeaderValue {
        self.cookie(secret, self.web_session_ttl.as_secs())
    }

    /// A `Set-Cookie` value that makes the browser drop the session cookie.
    pub fn clear_cookie(&self) -> HeaderValue {
        self.cookie("", 0)
    }

    fn cookie(&self, value: &str, max_age: u64) -> HeaderValue {
        let secure = match self.web_origin {
            WebOrigin::Loopback => "",
            WebOrigin::Https(_) => "; Secure",
        };
        let text = format!(
            "{}={value}; Path=/; Max-Age={max_age}; HttpOnly; SameSite=Strict{secure}",
            self.cookie_name()
        );
        HeaderValue::from_str(&text).expect("a cookie of fixed characters and a base64url secret")
    }

    /// The web session secret the request's `Cookie` headers carry under this origin's cookie
    /// name, if any. The header's syntax (RFC 6265, section 4.2) is `name=value` pairs separated
    /// by `; `; one name is all this needs, so it is read here rather than through a cookie
    /// library.
    fn session_secret<'a>(&self, headers: &'a HeaderMap) -> Option<&'a str> {
        let name = self.cookie_name();
        headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(|value| value.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .find(|(key, value)| *key == name && !value.is_empty())
            .map(|(_, value)| value.trim_matches('"'))
    }

    pub fn principal(&self) -> &PrincipalId {
        &self.principal
    }

    pub fn scopes(&self) -> &ScopeSet {
        &self.scopes
    }

    pub fn web_binding(&self) -> &[u8; 32] {
        &self.web_binding
    }

    pub fn web_session_ttl(&self) -> Duration {
        self.web_session_ttl
    }

    fn bearer(&self, value: &HeaderValue) -> Result<Caller, ApiError> {
        let token = value
            .to_str()
            .ok()
            .and_then(|text| text.split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim());
        let Some(token) = token.filter(|token| !token.is_empty()) else {
            return Err(unauthenticated(
                Some("invalid_request"),
                "the Authorization header must use the Bearer scheme",
            ));
        };
        let presented: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if presented.ct_eq(&self.token_digest).unwrap_u8() != 1 {
            return Err(unauthenticated(Some("invalid_token"), "the bearer token is not valid"));
        }
        Ok(Caller {
            principal: self.principal.clone(),
            scopes: self.scopes.clone(),
            credential: Credential::Bearer,
        })
    }

    async fn web_session(
        &self,
        store: &Store,
        method: &Method,
        headers: &HeaderMap,
        secret: &str,
    ) -> Result<Caller, ApiError> {
        let digest: [u8; 32] = Sha256::digest(secret.as_bytes()).into();
        let Some(row) = store.web_session(&digest, &self.web_binding).await? else {
            return Err(
                unauthenticated(Some("invalid_token"), "the web session has ended; connect again")
                    .header(header::SET_COOKIE, self.clear_cookie()),
            );
        };
        let safe = matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS);
        if !safe && headers.get(CSRF_HEADER).is_none_or(|value| value != "1") {
            return Err(ApiError::new(ErrorCode::CsrfHeaderRequired)
                .detail(format!(
                    "a request authenticated by the web session cookie must send `{CSRF_HEADER}: 1`"
                ))
                .field(CSRF_HEADER));
        }
        // Scopes removed from the token since the exchange are gone from its sessions too; names
        // this build no longer knows grant nothing.
        let scopes = row
            .scopes
            .iter()
            .filter_map(|name| Scope::parse(name))
            .filter(|scope| self.scopes.contains(*scope))
            .collect();
        Ok(Caller {
            principal: row.principal,
            scopes,
            credential: Credential::WebSession {
                id: row.id,
                expires_at: row.expires_at,
            },
        })
    }
}

fn unauthenticated(error: Option<&str>, detail: &str) -> ApiError {
    let challenge = match error {
        Some(error) => format!("Bearer realm=\"steward\", error=\"{error}\""),
        None => "Bearer realm=\"steward\"".to_owned(),
    };
    ApiError::new(ErrorCode::Unauthenticated).detail(detail).header(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_str(&challenge).unwrap_or(HeaderValue::from_static("Bearer")),
    )
}

/// Whether `host` (a `Host` header's value or an origin's authority: a name or address and an
/// optional port) is a loopback host: `localhost`, `127.0.0.0/8` or `[::1]`.
pub fn is_loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split_once(']').map_or(rest, |(address, _)| address),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|address| address.is_loopback())
}

/// Which credentials a route takes, and the scope it needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Needs {
    /// The bearer token or a web session, holding this scope.
    Scope(Scope),
    /// The bearer token or a web session, whatever its scopes.
    Credential,
    /// The bearer token itself: exchanging it for a web session.
    BearerToken,
}

/// What one route requires of its caller.
#[derive(Clone, Debug)]
pub struct Guard {
    pub authenticator: Arc<Authenticator>,
    pub store: Store,
    pub needs: Needs,
}

impl Guard {
    async fn identify(&self, method: &Method, headers: &HeaderMap) -> Result<Caller, ApiError> {
        if let Some(value) = headers.get(header::AUTHORIZATION) {
            return self.authenticator.bearer(value);
        }
        if self.needs == Needs::BearerToken {
            return Err(unauthenticated(
                None,
                "a web session is made from the bearer token: send Authorization: Bearer <token>",
            ));
        }
        match self.authenticator.session_secret(headers) {
            Some(secret) => {
                self.authenticator
                    .web_session(&self.store, method, headers, secret)
                    .await
            }
            None => Err(unauthenticated(
                None,
                "an Authorization: Bearer token (or the web client's session) is required",
            )),
        }
    }
}

/// Middleware: 401 without a valid credential, 403 when it lacks the route's scope (or, on a
/// web session, the CSRF header a state-changing request needs).
pub async fn require(State(guard): State<Guard>, mut request: Request, next: Next) -> Result<Response, ApiError> {
    let caller = guard.identify(request.method(), request.headers()).await?;
    if let Needs::Scope(scope) = guard.needs
        && !caller.scopes.contains(scope)
    {
        let challenge = format!("Bearer realm=\"steward\", error=\"insufficient_scope\", scope=\"{scope}\"");
        return Err(ApiError::new(ErrorCode::InsufficientScope)
            .detail(format!("this operation requires the `{scope}` scope"))
            .required_scope(scope)
            .header(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_str(&challenge).unwrap_or(HeaderValue::from_static("Bearer")),
            ));
    }
    request.extensions_mut().insert(caller);
    Ok(next.run(request).await)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn authenticator(origin: WebOrigin) -> Authenticator {
        Authenticator::new(
            b"0123456789abcdef0123456789abcdef",
            ScopeSet::default(),
            PrincipalId::owner(),
            [0; 32],
            Duration::from_secs(60),
            origin,
        )
    }

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(name.clone(), HeaderValue::from_str(value).expect("value"));
        }
        headers
    }

    #[test]
    fn loopback_hosts_are_recognized() {
        for loopback in [
            "localhost",
            "localhost:8080",
            "127.0.0.1:3000",
            "127.1.2.3",
            "[::1]:8080",
            "[::1]",
        ] {
            assert!(is_loopback_host(loopback), "{loopback}");
        }
        for other in [
            "steward.example",
            "steward.example:443",
            "10.0.0.2:8080",
            "[fe80::1]:80",
            "localhost.evil",
            "",
        ] {
            assert!(!is_loopback_host(other), "{other}");
        }
    }

    #[test]
    fn the_origin_is_parsed_from_configuration() {
        assert_eq!(WebOrigin::parse(None), Ok(WebOrigin::Loopback));
        assert_eq!(WebOrigin::parse(Some(" ")), Ok(WebOrigin::Loopback));
        assert_eq!(WebOrigin::parse(Some("http://127.0.0.1:8080")), Ok(WebOrigin::Loopback));
        assert_eq!(
            WebOrigin::parse(Some("https://Steward.Example")),
            Ok(WebOrigin::Https("https://steward.example".into()))
        );
        assert_eq!(
            WebOrigin::parse(Some("https://steward.example:8443/")),
            Ok(WebOrigin::Https("https://steward.example:8443".into()))
        );
        // A browser's Origin never names the default port.
        assert_eq!(
            WebOrigin::parse(Some("https://steward.example:443")),
            Ok(WebOrigin::Https("https://steward.example".into()))
        );
        for bad in [
            "http://steward.example",
            "https://steward.example/app",
            "https://user@steward.example",
            "https://steward.example/?a=b",
            "ftp://steward.example",
            "steward.example",
        ] {
            assert!(WebOrigin::parse(Some(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_cookie_is_decided_by_the_configured_origin_not_the_host() {
        let loopback = authenticator(WebOrigin::Loopback);
        assert_eq!(
            loopback.session_cookie("s3cret"),
            "steward_session=s3cret; Path=/; Max-Age=60; HttpOnly; SameSite=Strict"
        );
        let https = authenticator(WebOrigin::Https("https://steward.example".into()));
        assert_eq!(
            https.clear_cookie(),
            "__Host-steward_session=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict; Secure"
        );
        // A proxy that rewrote Host to loopback changes nothing.
        let proxied = headers(&[
            (header::HOST, "127.0.0.1:8080"),
            (header::ORIGIN, "https://steward.example"),
        ]);
        assert!(https.admits_exchange(&proxied).is_ok());
        assert_eq!(
            https.session_cookie("x").to_str().expect("ascii").split('=').next(),
            Some("__Host-steward_session")
        );
    }

    #[test]
    fn without_an_https_origin_only_a_loopback_page_gets_a_session() {
        let loopback = authenticator(WebOrigin::Loopback);
        assert!(
            loopback
                .admits_exchange(&headers(&[(header::HOST, "127.0.0.1:8080")]))
                .is_ok()
        );
        assert!(
            loopback
                .admits_exchange(&headers(&[
                    (header::HOST, "localhost:8080"),
                    (header::ORIGIN, "http://localhost:8080")
                ]))
                .is_ok()
        );
        for refused in [
            headers(&[(header::HOST, "steward.example")]),
            headers(&[
                (header::HOST, "127.0.0.1:8080"),
                (header::ORIGIN, "https://steward.example"),
            ]),
            headers(&[
                (header::HOST, "127.0.0.1:8080"),
                (header::ORIGIN, "http://steward.example"),
            ]),
            HeaderMap::new(),
        ] {
            assert!(loopback.admits_exchange(&refused).is_err(), "{refused:?}");
        }
        let https = authenticator(WebOrigin::Https("https://steward.example".into()));
        assert!(
            https
                .admits_exchange(&headers(&[(header::ORIGIN, "https://evil.example")]))
                .is_err()
        );
    }

    #[test]
    fn the_secret_is_read_from_the_cookie_of_the_configured_name() {
        let https = authenticator(WebOrigin::Https("https://steward.example".into()));
        let mut cookies = headers(&[(header::COOKIE, "theme=dark; steward_session=planted")]);
        assert_eq!(
            https.session_secret(&cookies),
            None,
            "a plain-named cookie is not taken"
        );
        cookies.append(
            header::COOKIE,
            HeaderValue::from_static("__Host-steward_session=abc; x=y"),
        );
        assert_eq!(https.session_secret(&cookies), Some("abc"));
        let loopback = authenticator(WebOrigin::Loopback);
        let local = headers(&[(header::COOKIE, "a=b;steward_session=xyz")]);
        assert_eq!(loopback.session_secret(&local), Some("xyz"));
    }
}
