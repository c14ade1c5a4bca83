//! The junk filter's evidence packets: files an owner writes by hand (or edits), which decide
//! whether mail is kept out of the priority inbox.

use domain::junk::{CalibrationPacket, JunkReason, OFFLINE_JUNK_MODEL, PilotPacket};
use proptest::prelude::*;

use crate::{bounded, inputs, property};

fn corpus() -> Vec<Vec<u8>> {
    let observation = |index: usize| {
        format!(
            r#"{{"fingerprint": "{index:064x}", "category": "spam", "probability": 0.995, "owner_label": "junk",
                "source": "owner_review", "stratum": "random"}}"#
        )
    };
    let observations: Vec<String> = (0..3).map(observation).collect();
    [
        format!(
            r#"{{"policy": "steward-junk-1", "model": "steward-junk-rules-1", "observations": [{}]}}"#,
            observations.join(",")
        ),
        r#"{"policy": "steward-junk-pilot-1", "model": "steward-junk-rules-1", "tenant_id": "owner",
            "principal_id": "owner", "account_id": "work", "sample": "selected_live_inbox",
            "issued_at": "2026-11-20T09:00:00+01:00", "expires_at": "2026-11-27T09:00:00+01:00",
            "observations": [{"fingerprint": "00", "category": "keep", "owner_label": "keep", "source": "owner_review"}]}"#
            .to_owned(),
    ]
    .map(String::into_bytes)
    .to_vec()
}

#[test]
fn arbitrary_packets_are_admitted_only_at_their_floor() {
    property(file!(), inputs(corpus()), |raw| {
        let general = bounded(raw.len(), || CalibrationPacket::parse(&raw, OFFLINE_JUNK_MODEL));
        match general {
            // Whatever is admitted meets the floor: at least 100 distinct fingerprints.
            Ok(packet) => prop_assert!(packet.observations.len() >= 100),
            Err(refused) => prop_assert!(JunkReason::ALL.contains(&refused.reason())),
        }
        let pilot = bounded(raw.len(), || PilotPacket::parse(&raw, OFFLINE_JUNK_MODEL));
        if let Ok(packet) = pilot {
            prop_assert!(packet.observations.len() >= 43);
            prop_assert!(packet.expires_at > packet.issued_at);
        }
        Ok(())
    });
}
