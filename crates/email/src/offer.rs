//! What a bulk message offers to stop it, read from its headers: RFC 2369 `List-Unsubscribe`
//! (every URI; `https` and `mailto` kept, any other scheme ignored) and RFC 8058
//! `List-Unsubscribe-Post: List-Unsubscribe=One-Click`. Pure parsing of a stranger's text: no
//! request is made here, and a value that does not meet the rules below is ignored, never
//! repaired.
//!
//! - A one-click target is an `https` URL naming a host by a dotted name (never an IP literal,
//!   nor a single label a search domain could complete into a local name), with no
//!   user name or password, on the default port (443). Anything else cannot be sent safely.
//! - A mailto target names exactly one address; of its header fields only `subject` and `body`
//!   are kept (never `to`, `cc`, `bcc` or any other), each bounded.
//! - A message carrying either header more than once offers nothing: which copy a signature
//!   covers cannot be told from the one a reader sees.

use reqwest::Url;

/// URIs read from one header at most; the rest are ignored.
pub const MAX_URIS: usize = 8;
/// The longest URI kept, in bytes.
pub const MAX_URI_BYTES: usize = 2048;
/// The longest mailto subject kept, in characters (RFC 5322's line limit).
pub const MAX_SUBJECT_CHARS: usize = 998;
/// The longest mailto body kept, in characters.
pub const MAX_BODY_CHARS: usize = 4000;

/// The exact value RFC 8058 §3.1 asks of `List-Unsubscribe-Post`.
pub const ONE_CLICK_POST: &str = "List-Unsubscribe=One-Click";

/// What one message offers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Offer {
    /// `https` targets, in header order.
    pub https: Vec<OneClickTarget>,
    /// `mailto` targets, in header order.
    pub mailto: Vec<MailtoTarget>,
    /// `List-Unsubscribe-Post: List-Unsubscribe=One-Click` is present.
    pub one_click: bool,
    /// `List-Unsubscribe-Post` is present, with whatever value: a signature must cover it too.
    pub post_header: bool,
}

impl Offer {
    /// The one-click request this offer allows (RFC 8058: the `Post` header and an `https`
    /// URI), the first `https` URI.
    pub fn one_click_target(&self) -> Option<&OneClickTarget> {
        self.one_click.then(|| self.https.first()).flatten()
    }
}

/// A URL a one-click request may be sent to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OneClickTarget {
    url: Url,
}

impl OneClickTarget {
    /// Parses `text` as a one-click target; `None` when it breaks a rule above.
    pub fn parse(text: &str) -> Option<OneClickTarget> {
        if text.len() > MAX_URI_BYTES {
            return None;
        }
        let url = Url::parse(text).ok()?;
        // The URL parser writes any IPv4 form (`0x7f.1`, `2130706433`) as dotted decimals and
        // an IPv6 one between brackets, so these two checks find every IP literal.
        let named_host = url.host_str().is_some_and(|host| {
            host.contains('.') && !host.starts_with('[') && host.parse::<std::net::Ipv4Addr>().is_err()
        });
        (url.scheme() == "https"
            && named_host
            && url.username().is_empty()
            && url.password().is_none()
            && url.port().is_none())
        .then_some(OneClickTarget { url })
    }

    /// The host the request goes to: all a client or a log ever sees of the target.
    pub fn host(&self) -> &str {
        self.url.host_str().unwrap_or_default()
    }

    pub fn url(&self) -> &Url {
        &self.url
    }

    pub fn as_str(&self) -> &str {
        self.url.as_str()
    }
}

/// A message a mailto unsubscribe sends: one recipient, and at most a subject and a body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MailtoTarget {
    /// The one recipient, lowercased.
    pub address: String,
    pub subject: Option<String>,
    pub body: Option<String>,
    uri: String,
}

impl MailtoTarget {
    /// Parses `text` as a mailto target; `None` when it breaks a rule above.
    pub fn parse(text: &str) -> Option<MailtoTarget> {
        if text.len() > MAX_URI_BYTES {
            return None;
        }
        let url = Url::parse(text).ok()?;
        if url.scheme() != "mailto" {
            return None;
        }
        let address = percent_decode(url.path())?.trim().to_lowercase();
        if !plausible_address(&address) {
            return None;
        }
        let (mut subject, mut body) = (None, None);
        for (name, value) in url.query_pairs() {
            match name.to_ascii_lowercase().as_str() {
                "subject" if subject.is_none() => {
                    subject = Some(
                        value
                            .chars()
                            .filter(|c| !c.is_control())
                            .take(MAX_SUBJECT_CHARS)
                            .collect(),
                    );
                }
                "body" if body.is_none() => body = Some(value.chars().take(MAX_BODY_CHARS).collect()),
                _ => {}
            }
        }
        Some(MailtoTarget {
            address,
            subject,
            body,
            uri: url.to_string(),
        })
    }

    pub fn as_str(&self) -> &str {
        &self.uri
    }
}

/// One addr-spec: one `@` with something on both sides, no spaces, commas, angle brackets or
/// control characters (a list of recipients is refused, not split).
fn plausible_address(address: &str) -> bool {
    let mut halves = address.split('@');
    let (Some(local), Some(domain), None) = (halves.next(), halves.next(), halves.next()) else {
        return false;
    };
    !local.is_empty()
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && address.len() <= 254
        && !address
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || matches!(c, ',' | ';' | '<' | '>' | '"' | '(' | ')'))
}

fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] == b'%' {
            let hex = std::str::from_utf8(bytes.get(at + 1..at + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            at += 3;
        } else {
            out.push(bytes[at]);
            at += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The URIs of one `List-Unsubscribe` value: each between angle brackets, whitespace inside
/// ignored (RFC 2369 §2), at most [`MAX_URIS`].
fn uris(value: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = value;
    while let Some(open) = rest.find('<') {
        let Some(close) = rest[open..].find('>') else {
            break;
        };
        let inside: String = rest[open + 1..open + close]
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        if !inside.is_empty() {
            found.push(inside);
        }
        rest = &rest[open + close + 1..];
        if found.len() == MAX_URIS {
            break;
        }
    }
    found
}

/// What the message's headers offer: `list_unsubscribe` and `list_unsubscribe_post` are every
/// value of each header, in order. `None` when there is no `List-Unsubscribe`, or either header
/// appears more than once.
pub fn read(list_unsubscribe: &[&str], list_unsubscribe_post: &[&str]) -> Option<Offer> {
    let [value] = list_unsubscribe else {
        return None;
    };
    if list_unsubscribe_post.len() > 1 {
        return None;
    }
    let mut offer = Offer {
        one_click: list_unsubscribe_post
            .first()
            .is_some_and(|post| post.trim() == ONE_CLICK_POST),
        post_header: !list_unsubscribe_post.is_empty(),
        ..Offer::default()
    };
    for uri in uris(value) {
        let scheme = uri.split(':').next().unwrap_or_default().to_ascii_lowercase();
        match scheme.as_str() {
            "https" => offer.https.extend(OneClickTarget::parse(&uri)),
            "mailto" => offer.mailto.extend(MailtoTarget::parse(&uri)),
            _ => {}
        }
    }
    Some(offer)
}

/// What the parsed `message` offers (see [`read`]).
pub fn of_message(message: &mail_parser::Message<'_>) -> Option<Offer> {
    let values = |name: &str| -> Vec<&str> {
        message
            .headers()
            .iter()
            .filter(|header| header.name().eq_ignore_ascii_case(name))
            .filter_map(|header| {
                message
                    .raw_message()
                    .get(header.offset_start() as usize..header.offset_end() as usize)
            })
            .filter_map(|bytes| std::str::from_utf8(bytes).ok())
            .collect()
    };
    read(&values("List-Unsubscribe"), &values("List-Unsubscribe-Post"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_https_and_mailto_uri_is_kept_in_order_and_others_are_ignored() {
        let offer = read(
            &[" <https://news.example/u?id=1>, <mailto:leave@news.example?subject=stop%20it&body=bye&cc=x@y.example>,\r\n <ftp://news.example/u>, <http://news.example/plain>"],
            &[" List-Unsubscribe=One-Click"],
        )
        .expect("an offer");
        assert!(offer.one_click);
        assert_eq!(offer.https.len(), 1);
        assert_eq!(offer.one_click_target().map(OneClickTarget::host), Some("news.example"));
        assert_eq!(offer.mailto.len(), 1);
        let mailto = &offer.mailto[0];
        assert_eq!(mailto.address, "leave@news.example");
        assert_eq!(mailto.subject.as_deref(), Some("stop it"));
        assert_eq!(mailto.body.as_deref(), Some("bye"));
    }

    #[test]
    fn one_click_needs_the_exact_post_value() {
        let offer = read(&["<https://news.example/u>"], &["List-Unsubscribe=Yes"]).expect("an offer");
        assert!(!offer.one_click);
        assert_eq!(offer.one_click_target(), None);
        let offer = read(&["<https://news.example/u>"], &[]).expect("an offer");
        assert_eq!(offer.one_click_target(), None);
    }

    #[test]
    fn repeated_headers_offer_nothing() {
        assert_eq!(
            read(&["<https://a.example/u>", "<https://b.example/u>"], &[ONE_CLICK_POST]),
            None
        );
        assert_eq!(
            read(&["<https://a.example/u>"], &[ONE_CLICK_POST, ONE_CLICK_POST]),
            None
        );
        assert_eq!(read(&[], &[ONE_CLICK_POST]), None);
    }

    #[test]
    fn unsafe_https_targets_are_refused() {
        for refused in [
            "https://127.0.0.1/u",
            "https://[::1]/u",
            "https://0x7f.1/u",
            "https://2130706433/u",
            "https://user:pw@news.example/u",
            "https://news.example:8443/u",
            "http://news.example/u",
            "https:///u",
            "https://intranet/u",
        ] {
            assert_eq!(OneClickTarget::parse(refused), None, "{refused}");
        }
        assert!(OneClickTarget::parse("https://news.example:443/u").is_some());
        assert!(OneClickTarget::parse(&format!("https://news.example/{}", "a".repeat(MAX_URI_BYTES))).is_none());
    }

    #[test]
    fn a_mailto_names_exactly_one_address() {
        for refused in [
            "mailto:a@x.example,b@x.example",
            "mailto:?to=a@x.example",
            "mailto:nobody",
            "mailto:a%20b@x.example",
            "mailto:a@localhost",
        ] {
            assert_eq!(MailtoTarget::parse(refused), None, "{refused}");
        }
        let target =
            MailtoTarget::parse("mailto:Leave@X.Example?to=other@x.example&bcc=spy@x.example").expect("a target");
        assert_eq!(target.address, "leave@x.example");
        assert_eq!((target.subject, target.body), (None, None));
    }
}
