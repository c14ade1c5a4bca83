//! What the browser role's egress proxy lets out. A hosted browser's every connection goes
//! through the proxy as an HTTPS tunnel (`CONNECT host:port`); the proxy admits a tunnel only
//! to one of the profile's origins (exact host and port) or to the vendor's account-list host
//! on 443, and only when every address the name resolves to is public. Everything else is
//! refused: plain HTTP, other hosts, IP literals, and names that resolve to loopback, private,
//! link-local or otherwise non-public addresses.

use std::collections::BTreeSet;
use std::fmt;
use std::net::IpAddr;

/// The browser vendor's account-list host: a hosted browser's one request of its own (at start,
/// a one-byte POST with no cookie). It has no switch, so the proxy lets it through.
pub const ACCOUNT_LIST_HOST: &str = "accounts.google.com";

/// An exact public HTTPS origin: `https://` and a DNS name, with its port (443 unless given).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Origin {
    host: String,
    port: u16,
}

/// Why a text is not an origin a profile may name.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OriginError {
    #[error("not an absolute URL")]
    NotUrl,
    #[error("only https origins are allowed")]
    NotHttps,
    #[error("an origin has no user name or password")]
    Userinfo,
    #[error("an origin has no path, query or fragment")]
    NotAnOrigin,
    #[error("an origin names a host, not an IP address")]
    AddressLiteral,
    #[error("`{0}` is not a public host name")]
    NotPublicName(String),
}

impl Origin {
    /// Parses `text`: `https://host` or `https://host:port`, with at most a trailing `/`.
    pub fn parse(text: &str) -> Result<Origin, OriginError> {
        let url = url::Url::parse(text).map_err(|_| OriginError::NotUrl)?;
        if url.scheme() != "https" {
            return Err(OriginError::NotHttps);
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(OriginError::Userinfo);
        }
        if url.path() != "/" || url.query().is_some() || url.fragment().is_some() {
            return Err(OriginError::NotAnOrigin);
        }
        // The name as DNS answers it, without the root's trailing dot (`a.example.` is
        // `a.example`), so one origin has one spelling.
        let host = match url.host() {
            Some(url::Host::Domain(name)) => name.strip_suffix('.').unwrap_or(name).to_owned(),
            Some(url::Host::Ipv4(_) | url::Host::Ipv6(_)) => return Err(OriginError::AddressLiteral),
            None => return Err(OriginError::NotUrl),
        };
        if !is_public_name(&host) {
            return Err(OriginError::NotPublicName(host));
        }
        let port = url.port_or_known_default().unwrap_or(443);
        if port == 0 {
            return Err(OriginError::NotAnOrigin);
        }
        Ok(Origin { host, port })
    }

    /// The host name, lower case.
    pub fn host(&self) -> &str {
        &self.host
    }

    pub fn port(&self) -> u16 {
        self.port
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.port == 443 {
            write!(formatter, "https://{}", self.host)
        } else {
            write!(formatter, "https://{}:{}", self.host, self.port)
        }
    }
}

/// A name that can only be public: at least two labels, and not a name reserved for local
/// use (`localhost`, `.local`, `.internal`, `.localhost`, `.home.arpa`, …).
fn is_public_name(host: &str) -> bool {
    const LOCAL: [&str; 8] = [
        "localhost",
        "local",
        "internal",
        "intranet",
        "lan",
        "home",
        "corp",
        "home.arpa",
    ];
    let labels: Vec<&str> = host.split('.').collect();
    labels.len() >= 2
        && labels.iter().all(|label| !label.is_empty())
        && !LOCAL
            .iter()
            .any(|suffix| host == *suffix || host.ends_with(&format!(".{suffix}")))
}

/// Whether `address` is public: the rule every request to a stranger's server follows
/// (`domain::address`; IPv4-mapped, NAT64 and 6to4 forms are refused rather than unwrapped).
pub use domain::address::is_public;

/// Why the proxy refuses a tunnel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Neither one of the profile's origins nor the account-list host.
    NotAllowed,
    /// The name resolves to an address that is not public.
    NotPublic,
}

/// The origins one browser may reach.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AllowList {
    origins: BTreeSet<Origin>,
}

impl AllowList {
    /// The profile's origins (and, always, the account-list host).
    pub fn new(origins: impl IntoIterator<Item = Origin>) -> AllowList {
        AllowList {
            origins: origins.into_iter().collect(),
        }
    }

    /// Whether a tunnel to `host:port` may be opened, before resolving the name: exactly one
    /// of the profile's origins, or the account-list host on 443.
    pub fn admits(&self, host: &str, port: u16) -> Result<(), Refusal> {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        let allowed = (host == ACCOUNT_LIST_HOST && port == 443)
            || self
                .origins
                .iter()
                .any(|origin| origin.host == host && origin.port == port);
        if allowed { Ok(()) } else { Err(Refusal::NotAllowed) }
    }

    /// Whether the addresses an admitted name resolved to may be connected to: all of them
    /// public (one private answer refuses the tunnel, so a name cannot be pointed inside).
    pub fn connects(addresses: &[IpAddr]) -> Result<(), Refusal> {
        if !addresses.is_empty() && addresses.iter().all(|address| is_public(*address)) {
            Ok(())
        } else {
            Err(Refusal::NotPublic)
        }
    }

    pub fn origins(&self) -> impl Iterator<Item = &Origin> {
        self.origins.iter()
    }
}

/// Whether the egress relay (the one way out of the browser role's private network) opens a
/// connection to `host:port`, before resolving the name. The relay does not know the profiles:
/// the role's proxy has already admitted the tunnel. It only keeps a compromised role to what
/// a website could be: a public host name (never an address literal or a local name) on 443 or
/// an unprivileged port (1024 and above: where an origin like `https://shop.example:8443`
/// lives), never a well-known service such as mail (25) or SSH (22). The addresses the name
/// resolves to must then be public, as for the proxy ([`AllowList::connects`]).
pub fn relays(host: &str, port: u16) -> Result<(), Refusal> {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    let literal = host.starts_with('[') || host.parse::<IpAddr>().is_ok();
    let name = host
        .chars()
        .all(|char| char.is_ascii_alphanumeric() || char == '-' || char == '.');
    if literal || !name || !is_public_name(&host) || (port != 443 && port < 1024) {
        return Err(Refusal::NotAllowed);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_origin_is_exact_public_https() {
        let origin = Origin::parse("https://Shop.Example.com/").expect("an origin");
        assert_eq!((origin.host(), origin.port()), ("shop.example.com", 443));
        assert_eq!(origin.to_string(), "https://shop.example.com");
        let origin = Origin::parse("https://shop.example.com:8443").expect("an origin");
        assert_eq!(origin.to_string(), "https://shop.example.com:8443");
        let dotted = Origin::parse("HTTPS://shop.example.com.").expect("an origin");
        assert_eq!(dotted, Origin::parse("https://shop.example.com").expect("an origin"));
        assert_eq!(
            AllowList::new([dotted]).admits("shop.example.com.", 443),
            Ok(()),
            "admitted however the name is spelled"
        );
        for (text, error) in [
            ("shop.example.com", OriginError::NotUrl),
            ("http://shop.example.com", OriginError::NotHttps),
            ("https://me:pw@shop.example.com", OriginError::Userinfo),
            ("https://shop.example.com/login", OriginError::NotAnOrigin),
            ("https://shop.example.com/?next=1", OriginError::NotAnOrigin),
            ("https://shop.example.com/#top", OriginError::NotAnOrigin),
            ("https://127.0.0.1", OriginError::AddressLiteral),
            ("https://[::1]", OriginError::AddressLiteral),
            ("https://10.0.0.8", OriginError::AddressLiteral),
            ("https://localhost", OriginError::NotPublicName("localhost".into())),
            (
                "https://printer.local",
                OriginError::NotPublicName("printer.local".into()),
            ),
            (
                "https://nas.home.arpa",
                OriginError::NotPublicName("nas.home.arpa".into()),
            ),
            ("https://intranet", OriginError::NotPublicName("intranet".into())),
            ("https://shop.example:0", OriginError::NotAnOrigin),
        ] {
            assert_eq!(Origin::parse(text), Err(error), "{text}");
        }
        for empty_label in ["https://.com", "https://shop..example"] {
            assert!(Origin::parse(empty_label).is_err(), "{empty_label}");
        }
    }

    #[test]
    fn the_shared_rule_refuses_the_hosts_own_networks() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "169.254.169.254",
            "::1",
            "fd12:3456::1",
            "::ffff:93.184.216.34",
        ] {
            assert!(!is_public(private.parse().expect("an address")), "{private}");
        }
        assert!(is_public("93.184.216.34".parse().expect("an address")));
    }

    #[test]
    fn a_tunnel_goes_only_to_a_profile_origin_or_the_account_list_host() {
        let list = AllowList::new([Origin::parse("https://shop.example.com").expect("an origin")]);
        assert_eq!(list.admits("shop.example.com", 443), Ok(()));
        assert_eq!(list.admits("SHOP.example.com.", 443), Ok(()));
        assert_eq!(list.admits(ACCOUNT_LIST_HOST, 443), Ok(()));
        for (host, port) in [
            ("shop.example.com", 80),
            ("shop.example.com", 8443),
            ("www.shop.example.com", 443),
            ("example.com", 443),
            ("accounts.google.com", 80),
            ("clients2.google.com", 443),
            ("127.0.0.1", 443),
            ("localhost", 443),
        ] {
            assert_eq!(list.admits(host, port), Err(Refusal::NotAllowed), "{host}:{port}");
        }
    }

    #[test]
    fn the_relay_opens_public_names_on_https_or_unprivileged_ports_only() {
        for (host, port) in [
            ("shop.example.com", 443),
            ("Shop.Example.com.", 8443),
            ("a.example", 65535),
        ] {
            assert_eq!(relays(host, port), Ok(()), "{host}:{port}");
        }
        for (host, port) in [
            ("shop.example.com", 80),
            ("shop.example.com", 25),
            ("shop.example.com", 22),
            ("shop.example.com", 0),
            ("93.184.216.34", 443),
            ("[2606:2800:220:1::]", 443),
            ("::1", 443),
            ("localhost", 443),
            ("printer.local", 443),
            ("intranet", 443),
            ("shop.example.com/x", 443),
            ("", 443),
        ] {
            assert_eq!(relays(host, port), Err(Refusal::NotAllowed), "{host}:{port}");
        }
    }

    #[test]
    fn an_admitted_name_resolving_inside_is_refused() {
        let public: IpAddr = "93.184.216.34".parse().expect("an address");
        let loopback: IpAddr = "127.0.0.1".parse().expect("an address");
        assert_eq!(AllowList::connects(&[public]), Ok(()));
        assert_eq!(AllowList::connects(&[public, loopback]), Err(Refusal::NotPublic));
        assert_eq!(AllowList::connects(&[]), Err(Refusal::NotPublic));
    }
}
