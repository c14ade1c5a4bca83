//! The one-click unsubscribe transport (RFC 8058), owned by the worker: the only code that
//! sends a request to a stranger's server on the owner's behalf. One request is
//!
//! - an HTTPS `POST` of `List-Unsubscribe=One-Click` (form-encoded) to the stored target, which
//!   is parsed again by [`OneClickTarget::parse`] (a dotted host name, port 443, no user name);
//! - to an address the host resolved to, every one of which is public ([`is_public`]): a name
//!   with any loopback, private, link-local, CGNAT, multicast, documentation, reserved,
//!   IPv4-mapped, NAT64 or 6to4 address is refused whole. The connection goes to exactly the
//!   vetted addresses (the client's resolver answers only the vetted host with them), so the
//!   name cannot be rebound between the check and the connection;
//! - without following redirects (a 3xx is [`REDIRECT_REFUSED`]), cookies, credentials, a
//!   referer or a proxy, within [`TIMEOUT`], reading at most [`MAX_ANSWER_BYTES`] of the answer.
//!
//! Each request leaves one audit line (target `steward::audit`) with the destination host, the
//! port and the decision: never the path or query, which often carry a token. An answer that
//! proves nothing after the request may have left (a timeout, a reset) is
//! [`Outcome::Uncertain`], and nothing here sends anything twice.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use crate::dns::Resolver;
use crate::offer::{ONE_CLICK_POST, OneClickTarget};

/// The one port a one-click request goes to.
pub const PORT: u16 = 443;
/// The whole request's bound, connection included.
pub const TIMEOUT: Duration = Duration::from_secs(10);
/// The connection's bound (DNS excluded).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How much of an answer is read; the rest is left unread.
pub const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// The sender answered with a redirect, which is never followed.
pub const REDIRECT_REFUSED: &str = "unsubscribe.redirect_refused";
/// The target is not a one-click target, or its host resolved to an address that is not public.
pub const DESTINATION_REFUSED: &str = "unsubscribe.destination_refused";
/// The host has no address, or DNS failed.
pub const UNRESOLVED: &str = "unsubscribe.unresolved";
/// No connection (or no TLS session) could be made: nothing was sent.
pub const UNREACHABLE: &str = "unsubscribe.unreachable";
/// The sender answered with an error status.
pub const REJECTED: &str = "unsubscribe.rejected";
/// The request may have left, and no answer came: uncertain, never repeated by itself.
pub const NO_ANSWER: &str = "unsubscribe.no_answer";

pub use domain::address::is_public;

/// What became of one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The sender answered 2xx.
    Succeeded,
    /// Nothing was sent, or the sender refused (a stable code).
    Failed(&'static str),
    /// The request may have left and no answer proves either way (a stable code).
    Uncertain(&'static str),
}

/// The audit decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// The destination passed every check; the request was attempted.
    Allowed,
    /// Refused before any connection.
    Refused,
}

impl Decision {
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allowed => "allowed",
            Decision::Refused => "refused",
        }
    }
}

/// The audit line of one request: destination host, port and decision, nothing else.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Audit {
    pub host: String,
    pub port: u16,
    pub decision: Decision,
}

impl Audit {
    fn log(&self) {
        tracing::info!(target: "steward::audit", host = %self.host, port = self.port,
            decision = %self.decision.as_str(), "unsubscribe request");
    }
}

/// One request's outcome and its audit line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sent {
    pub outcome: Outcome,
    pub audit: Audit,
}

/// How the transport is set up. [`OneClickTransport::public`] is the worker's; tests and the
/// demo name a local server's port, address and authority.
#[derive(Clone, Debug)]
pub struct Settings {
    pub resolver: Resolver,
    /// The port connected to (the target's URL names none: 443).
    pub port: u16,
    /// Addresses allowed besides public ones (none in the worker).
    pub also_allowed: Vec<IpAddr>,
    /// Certificate authorities trusted instead of the built-in web roots (`None`: those).
    pub roots: Option<Vec<reqwest::Certificate>>,
    pub timeout: Duration,
    pub connect_timeout: Duration,
}

/// The transport.
#[derive(Clone, Debug)]
pub struct OneClickTransport {
    settings: Settings,
}

/// The client's resolver: the vetted host, and only it, resolves to the vetted addresses.
struct Pinned {
    host: String,
    addresses: Vec<SocketAddr>,
}

impl Resolve for Pinned {
    fn resolve(&self, name: Name) -> Resolving {
        let answer: Result<Addrs, Box<dyn std::error::Error + Send + Sync>> =
            if name.as_str().trim_end_matches('.').eq_ignore_ascii_case(&self.host) {
                Ok(Box::new(self.addresses.clone().into_iter()))
            } else {
                Err("not the vetted host".into())
            };
        Box::pin(std::future::ready(answer))
    }
}

impl OneClickTransport {
    /// The worker's transport: port 443, public addresses only, the built-in web roots.
    pub fn public(resolver: Resolver) -> OneClickTransport {
        OneClickTransport::new(Settings {
            resolver,
            port: PORT,
            also_allowed: Vec::new(),
            roots: None,
            timeout: TIMEOUT,
            connect_timeout: CONNECT_TIMEOUT,
        })
    }

    pub fn new(settings: Settings) -> OneClickTransport {
        OneClickTransport { settings }
    }

    /// Whether a request may go to `address`.
    fn allowed(&self, address: IpAddr) -> bool {
        is_public(address) || self.settings.also_allowed.contains(&address)
    }

    /// Sends one one-click request to the stored `target`, and logs its audit line.
    pub async fn send(&self, target: &str) -> Sent {
        let sent = self.attempt(target).await;
        sent.audit.log();
        sent
    }

    async fn attempt(&self, target: &str) -> Sent {
        let port = self.settings.port;
        let refused = |host: &str, code| Sent {
            outcome: Outcome::Failed(code),
            audit: Audit {
                host: host.to_owned(),
                port,
                decision: Decision::Refused,
            },
        };
        let Some(target) = OneClickTarget::parse(target) else {
            return refused("", DESTINATION_REFUSED);
        };
        let host = target.host().to_ascii_lowercase();
        // Fully qualified: no search domain completes it into a local name.
        let addresses = match self.settings.resolver.addresses(&format!("{host}.")).await {
            Ok(addresses) if !addresses.is_empty() => addresses,
            _ => return refused(&host, UNRESOLVED),
        };
        if !addresses.iter().all(|address| self.allowed(*address)) {
            return refused(&host, DESTINATION_REFUSED);
        }
        let audit = Audit {
            host: host.clone(),
            port,
            decision: Decision::Allowed,
        };
        let pinned = Pinned {
            host: host.clone(),
            addresses: addresses
                .iter()
                .map(|address| SocketAddr::new(*address, port))
                .collect(),
        };
        let outcome = self.post(&target, pinned).await;
        Sent { outcome, audit }
    }

    fn client(&self, pinned: Pinned) -> Result<reqwest::Client, reqwest::Error> {
        let mut builder = reqwest::Client::builder()
            .use_rustls_tls()
            .https_only(true)
            .redirect(reqwest::redirect::Policy::none())
            .referer(false)
            .no_proxy()
            .pool_max_idle_per_host(0)
            .http1_only()
            .user_agent(concat!(
                "Steward/",
                env!("CARGO_PKG_VERSION"),
                " (RFC 8058 unsubscribe)"
            ))
            .timeout(self.settings.timeout)
            .connect_timeout(self.settings.connect_timeout)
            .dns_resolver(Arc::new(pinned));
        if let Some(roots) = &self.settings.roots {
            builder = builder.tls_built_in_root_certs(false);
            for root in roots {
                builder = builder.add_root_certificate(root.clone());
            }
        }
        builder.build()
    }

    async fn post(&self, target: &OneClickTarget, pinned: Pinned) -> Outcome {
        let Ok(client) = self.client(pinned) else {
            return Outcome::Failed(UNREACHABLE);
        };
        let mut url = target.url().clone();
        if self.settings.port != PORT && url.set_port(Some(self.settings.port)).is_err() {
            return Outcome::Failed(DESTINATION_REFUSED);
        }
        let answer = client
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(ONE_CLICK_POST)
            .send()
            .await;
        let mut response = match answer {
            Ok(response) => response,
            // Nothing left: no connection, or no TLS session with the named host.
            Err(error) if error.is_connect() => return Outcome::Failed(UNREACHABLE),
            Err(_) => return Outcome::Uncertain(NO_ANSWER),
        };
        let status = response.status();
        // Read a bounded part of the answer (so the sender sees a well-behaved client), and
        // leave the rest: the status has already decided.
        let mut read = 0;
        while read < MAX_ANSWER_BYTES {
            match response.chunk().await {
                Ok(Some(chunk)) => read += chunk.len(),
                _ => break,
            }
        }
        if status.is_success() {
            Outcome::Succeeded
        } else if status.is_redirection() {
            Outcome::Failed(REDIRECT_REFUSED)
        } else {
            Outcome::Failed(REJECTED)
        }
    }
}
