//! The packets' floors, one short at a time, and their strict shapes.

use serde_json::{Value, json};

use super::*;

const MODEL: &str = "junk-rules-1";

fn print(index: usize) -> String {
    format!("{index:064x}")
}

fn observation(index: usize, category: &str, probability: f64, label: &str, stratum: &str) -> Value {
    json!({"fingerprint": print(index), "category": category, "probability": probability,
           "owner_label": label, "source": "owner_review", "stratum": stratum})
}

/// Exactly the general floor: 80 random (20 nominated junk, 60 keep), 10 personal outreach
/// and 10 transactional (all keep, none nominated).
fn general() -> Value {
    let mut observations = Vec::new();
    for index in 0..80 {
        observations.push(if index < 20 {
            observation(
                index,
                if index % 2 == 0 { "spam" } else { "bulk" },
                0.995,
                "junk",
                "random",
            )
        } else {
            observation(index, "keep", 0.9, "keep", "random")
        });
    }
    for index in 80..90 {
        observations.push(observation(index, "keep", 0.97, "keep", "personal_outreach"));
    }
    for index in 90..100 {
        observations.push(observation(index, "bulk", 0.03, "keep", "transactional"));
    }
    json!({"policy": JUNK_POLICY, "model": MODEL, "observations": observations})
}

fn calibrate(packet: &Value) -> Result<CalibrationPacket, PacketRefused> {
    CalibrationPacket::parse(packet.to_string().as_bytes(), MODEL)
}

fn floor_of(result: Result<CalibrationPacket, PacketRefused>) -> (&'static str, usize, usize) {
    match result {
        Err(PacketRefused::Floor { what, needed, found }) => (what, needed, found),
        other => panic!("expected a floor refusal, got {other:?}"),
    }
}

#[test]
fn a_judgment_nominates_at_the_combined_threshold_and_keep_never_does() {
    assert!(nominates(JunkCategory::Spam, 0.99));
    assert!(nominates(JunkCategory::Bulk, 0.999));
    assert!(!nominates(JunkCategory::Spam, 0.989));
    // A confident keep is no nomination, nor is an unconfident one.
    assert!(!nominates(JunkCategory::Keep, 0.001));
    assert!((junk_probability(JunkCategory::Keep, 0.25) - 0.75).abs() < 1e-9);
    assert!(is_fingerprint(&print(7)));
    assert!(!is_fingerprint("ada@example.com"));
    assert!(!is_fingerprint(&print(0xabc).to_uppercase()));
}

#[test]
fn the_general_packet_at_the_floor_is_admitted() {
    let packet = calibrate(&general()).expect("admitted");
    assert_eq!(packet.observations.len(), 100);
}

#[test]
fn each_general_floor_one_short_is_refused() {
    // One random observation fewer: 99 reviewed.
    let mut short = general();
    short["observations"].as_array_mut().expect("array").remove(50);
    assert_eq!(floor_of(calibrate(&short)), ("unique reviewed observations", 100, 99));
    // 100 reviewed, but one random turned personal outreach: 79 random.
    let mut random = general();
    random["observations"][50]["stratum"] = json!("personal_outreach");
    assert_eq!(floor_of(calibrate(&random)), ("random observations", 80, 79));
    let mut personal = general();
    personal["observations"][85]["stratum"] = json!("random");
    assert_eq!(
        floor_of(calibrate(&personal)),
        ("personal-outreach observations", 10, 9)
    );
    let mut transactional = general();
    transactional["observations"][95]["stratum"] = json!("random");
    assert_eq!(
        floor_of(calibrate(&transactional)),
        ("transactional observations", 10, 9)
    );
    // One of the 20 nominations just under the threshold.
    let mut junk = general();
    junk["observations"][3]["probability"] = json!(0.9899);
    assert_eq!(floor_of(calibrate(&junk)), ("predicted junk", 20, 19));
}

#[test]
fn a_single_false_positive_or_too_much_protected_topic_relevance_is_refused() {
    let mut wrong = general();
    wrong["observations"][0]["owner_label"] = json!("keep");
    assert_eq!(calibrate(&wrong), Err(PacketRefused::FalsePositives { count: 1 }));
    // A confident keep judgment of mail the owner calls junk is a miss, not a false positive.
    let mut missed = general();
    missed["observations"][30]["owner_label"] = json!("junk");
    assert!(calibrate(&missed).is_ok());
    // The kept personal-outreach and transactional mail judged at junk probability 0.03
    // on average; leaning to 0.2 on two of the twenty makes it 0.047, to 0.3 on two 0.057.
    let mut leaning = general();
    for index in [81, 91] {
        leaning["observations"][index]["category"] = json!("keep");
        leaning["observations"][index]["probability"] = json!(0.8);
    }
    assert!(calibrate(&leaning).is_ok(), "0.047 is admitted");
    for index in [81, 91] {
        leaning["observations"][index]["probability"] = json!(0.7);
    }
    let refused = calibrate(&leaning).expect_err("too relevant");
    assert!(matches!(refused, PacketRefused::Relevance { found, .. } if (found - 0.057).abs() < 1e-9));
    assert_eq!(refused.reason(), JunkReason::FloorNotMet);
    // Spam in the personal-outreach stratum, labelled junk by the owner, is no protected
    // topic: it does not count.
    let mut spam = general();
    for index in 80..90 {
        spam["observations"][index]["category"] = json!("spam");
        spam["observations"][index]["probability"] = json!(0.999);
        spam["observations"][index]["owner_label"] = json!("junk");
    }
    assert!(calibrate(&spam).is_ok());
    // Every one of them labelled junk leaves no relevance to measure: refused.
    let mut none_kept = spam;
    for index in 90..100 {
        none_kept["observations"][index]["owner_label"] = json!("junk");
        none_kept["observations"][index]["category"] = json!("bulk");
        none_kept["observations"][index]["probability"] = json!(0.999);
    }
    assert_eq!(
        floor_of(calibrate(&none_kept)),
        ("kept personal-outreach or transactional observations", 1, 0)
    );
    // Exactly 0.05 (offline keep judgments at 0.95) is admitted.
    let mut edge = general();
    for index in 80..100 {
        edge["observations"][index]["category"] = json!("keep");
        edge["observations"][index]["probability"] = json!(0.95);
    }
    assert!(calibrate(&edge).is_ok());
}

#[test]
fn unknown_members_repeats_content_and_other_policies_or_models_are_refused() {
    let mut extra = general();
    extra["observations"][4]["subject"] = json!("Win a prize");
    let refused = calibrate(&extra).expect_err("unknown member");
    assert!(
        matches!(&refused, PacketRefused::Shape(text) if text.contains("subject")),
        "{refused:?}"
    );
    let mut top = general();
    top["notes"] = json!("reviewed on Sunday");
    assert!(matches!(calibrate(&top), Err(PacketRefused::Shape(_))));
    let mut repeated = general();
    repeated["observations"][9]["fingerprint"] = json!(print(8));
    assert_eq!(calibrate(&repeated), Err(PacketRefused::Duplicate { index: 9 }));
    let mut address = general();
    address["observations"][9]["fingerprint"] = json!("ada@example.com");
    assert_eq!(calibrate(&address), Err(PacketRefused::Fingerprint { index: 9 }));
    let mut source = general();
    source["observations"][9]["source"] = json!("model");
    assert!(matches!(calibrate(&source), Err(PacketRefused::Shape(_))));
    let mut probability = general();
    probability["observations"][9]["probability"] = json!(1.5);
    assert_eq!(calibrate(&probability), Err(PacketRefused::Probability { index: 9 }));
    let mut policy = general();
    policy["policy"] = json!("steward-junk-0");
    let refused = calibrate(&policy).expect_err("other policy");
    assert_eq!(refused.reason(), JunkReason::PacketMismatched);
    let refused = CalibrationPacket::parse(general().to_string().as_bytes(), "gpt-4o-mini").expect_err("model");
    assert_eq!(
        refused,
        PacketRefused::Model {
            expected: "gpt-4o-mini".into(),
            found: MODEL.into()
        }
    );
    assert_eq!(
        calibrate(&json!([])).map_err(|refused| refused.reason()),
        Err(JunkReason::PacketInvalid)
    );
}

fn pilot_observation(index: usize, category: &str, label: &str) -> Value {
    json!({"fingerprint": print(index), "category": category, "owner_label": label, "source": "owner_review"})
}

/// Exactly the pilot floor: 43 classifications, 20 junk nominations, 23 keep.
fn pilot() -> Value {
    let observations: Vec<Value> = (0..43)
        .map(|index| {
            if index < 20 {
                pilot_observation(index, "spam", "junk")
            } else {
                pilot_observation(index, "keep", "keep")
            }
        })
        .collect();
    json!({"policy": JUNK_PILOT_POLICY, "model": MODEL, "tenant_id": "owner", "principal_id": "owner",
           "account_id": "work", "sample": "selected_live_inbox",
           "issued_at": "2026-11-20T09:00:00+01:00", "expires_at": "2026-11-27T09:00:00+01:00",
           "observations": observations})
}

fn read_pilot(packet: &Value) -> Result<PilotPacket, PacketRefused> {
    PilotPacket::parse(packet.to_string().as_bytes(), MODEL)
}

fn at(text: &str) -> Timestamp {
    text.parse().expect("instant")
}

#[test]
fn the_pilot_is_admitted_for_the_owner_on_its_account_while_valid() {
    let packet = read_pilot(&pilot()).expect("valid");
    let owner = PrincipalId::owner();
    assert_eq!(packet.admitted(&owner, "work", at("2026-11-20T08:00:00Z")), Ok(()));
    assert_eq!(
        packet.admitted(&owner, "work", at("2026-11-20T07:59:59Z")),
        Err(PacketRefused::NotNow("it is not yet issued"))
    );
    let expired = packet
        .admitted(&owner, "work", at("2026-11-27T08:00:00Z"))
        .expect_err("expired");
    assert_eq!(expired.reason(), JunkReason::PacketExpired);
    assert_eq!(
        packet
            .admitted(&owner, "personal", at("2026-11-21T00:00:00Z"))
            .map_err(|refused| refused.reason()),
        Err(JunkReason::NotPilotAccount)
    );
    assert_eq!(
        packet.admitted(
            &PrincipalId::from_stored("guest".into()),
            "work",
            at("2026-11-21T00:00:00Z")
        ),
        Err(PacketRefused::NotTheOwner { what: "principal" })
    );
    let mut tenant = pilot();
    tenant["tenant_id"] = json!("acme");
    let packet = read_pilot(&tenant).expect("valid shape");
    assert_eq!(
        packet.admitted(&owner, "work", at("2026-11-21T00:00:00Z")),
        Err(PacketRefused::NotTheOwner { what: "tenant" })
    );
}

#[test]
fn each_pilot_floor_one_short_and_every_malformed_pilot_is_refused() {
    let mut short = pilot();
    short["observations"].as_array_mut().expect("array").pop();
    assert_eq!(floor_of_pilot(read_pilot(&short)), ("unique classifications", 43, 42));
    let mut nominations = pilot();
    nominations["observations"][0] = pilot_observation(0, "keep", "junk");
    assert_eq!(floor_of_pilot(read_pilot(&nominations)), ("junk nominations", 20, 19));
    // 43 classifications with 37 nominations leaves 6 keep labels.
    let mut keep = pilot();
    for index in 20..37 {
        keep["observations"][index] = pilot_observation(index, "bulk", "junk");
    }
    assert_eq!(floor_of_pilot(read_pilot(&keep)), ("keep labels", 7, 6));
    let mut wrong = pilot();
    wrong["observations"][5]["owner_label"] = json!("keep");
    assert_eq!(read_pilot(&wrong), Err(PacketRefused::FalsePositives { count: 1 }));
    // A pilot observation carries no probability or stratum.
    let mut extra = pilot();
    extra["observations"][5]["probability"] = json!(0.99);
    assert!(matches!(read_pilot(&extra), Err(PacketRefused::Shape(_))));
    let mut sample = pilot();
    sample["sample"] = json!("random");
    assert!(matches!(read_pilot(&sample), Err(PacketRefused::Shape(_))));
    // Seven days and a second is too long; exactly seven is not.
    let mut long = pilot();
    long["expires_at"] = json!("2026-11-27T09:00:01+01:00");
    assert_eq!(read_pilot(&long), Err(PacketRefused::ValidityTooLong));
    let mut backwards = pilot();
    backwards["expires_at"] = json!("2026-11-20T09:00:00+01:00");
    assert_eq!(read_pilot(&backwards), Err(PacketRefused::EmptyValidity));
    // A civil time without an offset is not timezone-aware.
    let mut naive = pilot();
    naive["issued_at"] = json!("2026-11-20T09:00:00");
    assert!(matches!(
        read_pilot(&naive),
        Err(PacketRefused::Time { field: "issued_at", .. })
    ));
    let mut policy = pilot();
    policy["policy"] = json!(JUNK_POLICY);
    assert_eq!(
        read_pilot(&policy).map_err(|refused| refused.reason()),
        Err(JunkReason::PacketMismatched)
    );
}

fn floor_of_pilot(result: Result<PilotPacket, PacketRefused>) -> (&'static str, usize, usize) {
    match result {
        Err(PacketRefused::Floor { what, needed, found }) => (what, needed, found),
        other => panic!("expected a floor refusal, got {other:?}"),
    }
}
