//! The unsubscribe offer: a sender's `List-Unsubscribe` and `List-Unsubscribe-Post` headers,
//! which name where Steward may send a request on the owner's behalf.

use email::offer::{MAX_URIS, MailtoTarget, OneClickTarget, read};
use proptest::prelude::*;

use crate::{bounded, inputs, property};

fn corpus() -> Vec<Vec<u8>> {
    [
        "<https://news.example/u/1?token=abc>, <mailto:leave@news.example?subject=stop&body=bye>",
        "<mailto:list@host.example?subject=unsubscribe>",
        "<https://user:pw@127.0.0.1:8443/u>, <http://plain.example/u>, <ftp://x.example/>",
        " < https://spaced.example/u > ,<mailto:a@b.example,c@d.example>",
    ]
    .map(|text| text.as_bytes().to_vec())
    .to_vec()
}

#[test]
fn arbitrary_headers_offer_only_safe_targets() {
    property(file!(), inputs(corpus()), |raw| {
        let value = String::from_utf8_lossy(&raw).into_owned();
        let offer = bounded(raw.len(), || read(&[value.as_str()], &["List-Unsubscribe=One-Click"]));
        if let Some(offer) = offer {
            prop_assert!(offer.https.len() + offer.mailto.len() <= MAX_URIS);
            for target in &offer.https {
                // Every kept target parses again the same, with a dotted host and no port or user.
                let again = OneClickTarget::parse(target.as_str());
                prop_assert_eq!(again.as_ref(), Some(target));
                prop_assert!(target.host().contains('.'));
                prop_assert!(target.host().parse::<std::net::IpAddr>().is_err());
                prop_assert!(target.url().port().is_none() && target.url().username().is_empty());
            }
            for target in &offer.mailto {
                prop_assert_eq!(target.address.matches('@').count(), 1);
                prop_assert!(!target.address.contains(','));
                prop_assert!(MailtoTarget::parse(target.as_str()).is_some());
            }
        }
        Ok(())
    });
}
