//! The evidence behind an unsubscribe offer: the message's DKIM signature, verified with
//! `mail-auth` (ring; keys looked up in DNS). An offer is acted on only when a signature
//!
//! - verifies (`pass`), over the whole body (no `l=` tag: a signature that covers only a prefix
//!   lets anyone append to the message),
//! - is aligned with the From address (its `d=` is the From domain or a parent of it, so a
//!   stranger cannot sign someone else's newsletter with their own key), and
//! - covers `From`, `List-Unsubscribe` and (when the message has it) `List-Unsubscribe-Post` in
//!   its `h=` (RFC 8058 §4: a one-click request needs both covered by the same signature; a
//!   header the signature leaves out could have been added by anyone on the way).
//!
//! A DNS failure that may pass (a timeout, a server failure) leaves the offer
//! [`Verdict::Unavailable`], checked again on a later refresh; anything else that falls short is
//! [`Verdict::Failed`] until a newer message from the sender brings new evidence. Either way the
//! row reads `Checking…` and nothing can be sent.

use std::net::SocketAddr;

use mail_auth::dkim::Signature;
use mail_auth::{AuthenticatedMessage, DkimResult, MessageAuthenticator, Parameters};
use mail_parser::MessageParser;

use crate::dns::{DnsSetupError, Resolver};
use crate::offer::{self, MailtoTarget, Offer, OneClickTarget};

/// How one message's evidence came out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// A signature as above verifies.
    Verified,
    /// None does, or the message offers nothing.
    Failed,
    /// A key could not be looked up for now: checked again later.
    Unavailable,
}

/// What an owner may ask for, once the evidence verifies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mechanism {
    /// An RFC 8058 one-click `POST` to this URL.
    OneClick(OneClickTarget),
    /// One message to this address.
    Mailto(MailtoTarget),
}

impl Mechanism {
    /// The stored name of the mechanism.
    pub fn kind(&self) -> domain::email::UnsubscribeMechanism {
        match self {
            Mechanism::OneClick(_) => domain::email::UnsubscribeMechanism::OneClick,
            Mechanism::Mailto(_) => domain::email::UnsubscribeMechanism::Mailto,
        }
    }

    /// The full target (never shown to a client or logged).
    pub fn target(&self) -> &str {
        match self {
            Mechanism::OneClick(target) => target.as_str(),
            Mechanism::Mailto(target) => target.as_str(),
        }
    }

    /// What a client may see of the target: the host, or the address.
    pub fn destination(&self) -> &str {
        match self {
            Mechanism::OneClick(target) => target.host(),
            Mechanism::Mailto(target) => &target.address,
        }
    }
}

/// The outcome of examining one message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Examined {
    pub verdict: Verdict,
    /// What may be sent: only with [`Verdict::Verified`], and `None` when the verified offer
    /// holds nothing Steward can send (a web page only, say).
    pub mechanism: Option<Mechanism>,
}

impl Examined {
    fn failed() -> Examined {
        Examined {
            verdict: Verdict::Failed,
            mechanism: None,
        }
    }
}

/// The DKIM verifier, with its DNS resolver.
#[derive(Clone)]
pub struct Dkim {
    authenticator: MessageAuthenticator,
}

impl std::fmt::Debug for Dkim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Dkim")
    }
}

impl Dkim {
    /// Keys looked up through `resolver`.
    pub fn new(resolver: &Resolver) -> Dkim {
        Dkim {
            authenticator: MessageAuthenticator(resolver.0.clone()),
        }
    }

    /// Keys looked up through the DNS server at `server`.
    pub fn with_server(server: SocketAddr) -> Dkim {
        Dkim::new(&Resolver::with_server(server))
    }

    /// The verifier the environment (`lookup`) asks for (see [`crate::dns`]).
    pub fn from_env(lookup: impl Fn(&str) -> Option<String>) -> Result<Dkim, DnsSetupError> {
        Resolver::from_env(lookup).map(|resolver| Dkim::new(&resolver))
    }

    /// Examines the RFC 5322 message `raw`: what it offers, and whether its signature proves it.
    pub async fn examine(&self, raw: &[u8]) -> Examined {
        let Some((offer, from_domain)) = offer_and_domain(raw) else {
            return Examined::failed();
        };
        let Some(message) = AuthenticatedMessage::parse(raw) else {
            return Examined::failed();
        };
        let outputs = self.authenticator.verify_dkim(Parameters::new(&message)).await;
        let mut unavailable = false;
        let mut verified = false;
        for output in &outputs {
            match output.result() {
                DkimResult::Pass => {
                    verified |= output
                        .signature()
                        .is_some_and(|signature| covers(signature, &from_domain, &offer));
                }
                DkimResult::TempError(_) => unavailable = true,
                _ => {}
            }
        }
        match verified {
            true => Examined {
                verdict: Verdict::Verified,
                mechanism: choose(&offer),
            },
            false if unavailable => Examined {
                verdict: Verdict::Unavailable,
                mechanism: None,
            },
            false => Examined::failed(),
        }
    }
}

/// Whether `signature` is one `offer` may rest on (see the module).
fn covers(signature: &Signature, from_domain: &str, offer: &Offer) -> bool {
    let signs = |name: &str| {
        signature
            .h
            .iter()
            .any(|header| header.trim().eq_ignore_ascii_case(name))
    };
    let domain = signature.d.trim().trim_end_matches('.').to_ascii_lowercase();
    let aligned = !domain.is_empty()
        && (from_domain == domain || from_domain.ends_with(&format!(".{domain}")))
        && domain.contains('.');
    signature.l == 0
        && aligned
        && signs("From")
        && signs("List-Unsubscribe")
        && (!offer.post_header || signs("List-Unsubscribe-Post"))
}

/// The mechanism a verified `offer` allows: one-click first (RFC 8058), then mailto.
fn choose(offer: &Offer) -> Option<Mechanism> {
    let one_click = offer.one_click_target().cloned().map(Mechanism::OneClick);
    one_click.or_else(|| offer.mailto.first().cloned().map(Mechanism::Mailto))
}

/// What the message offers and its From domain (lowercased); `None` when it offers nothing or
/// has no From address.
fn offer_and_domain(raw: &[u8]) -> Option<(Offer, String)> {
    std::panic::catch_unwind(|| {
        let message = MessageParser::default().parse(raw)?;
        let from = message.from()?.first()?.address()?.trim().to_ascii_lowercase();
        let domain = from.rsplit_once('@')?.1.trim_end_matches('.').to_owned();
        let offer = offer::of_message(&message)?;
        Some((offer, domain))
    })
    .ok()
    .flatten()
}
