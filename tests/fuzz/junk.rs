//! The junk filter's evidence packets: files an owner writes by hand (or edits), which decide
//! whether mail is kept out of the priority inbox.

use domain::junk::{CalibrationPacket, OFFLINE_JUNK_MODEL, OwnerLabel, PilotPacket, Stratum, nominates};
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
        // Whatever is admitted meets the floor: 100 observations, 80 random, no false positive.
        if let Ok(packet) = general {
            let observations = &packet.observations;
            prop_assert!(observations.len() >= 100);
            prop_assert!(observations.iter().filter(|o| o.stratum == Stratum::Random).count() >= 80);
            prop_assert!(
                !observations
                    .iter()
                    .any(|o| nominates(o.category, o.probability) && o.owner_label == OwnerLabel::Keep)
            );
        }
        let pilot = bounded(raw.len(), || PilotPacket::parse(&raw, OFFLINE_JUNK_MODEL));
        if let Ok(packet) = pilot {
            prop_assert!(packet.observations.len() >= 43);
            prop_assert!(packet.expires_at > packet.issued_at);
            prop_assert!(packet.expires_at.duration_since(packet.issued_at) <= domain::junk::PILOT_VALIDITY);
        }
        Ok(())
    });
}
