//! The calibration tool's replay against the stand-in and a real database: its thread and cost
//! bounds, protected mail skipped, no label or change written, the packet a review makes, and
//! the demo's packet checked against the offline rules.

use std::sync::Arc;

use domain::junk::{JUNK_POLICY, JunkMode, JunkReason, OFFLINE_JUNK_MODEL};
use email::refresh::Refresher;
use serde_json::json;
use testkit::gmail::FakeGmail;

use crate::junk::{deliver_mix, settings, setup, spam};

/// A mailbox for the replay: spam, receipts, strangers writing personally, newsletters, and a
/// known correspondent (protected).
fn deliver_replay_mix(fake: &FakeGmail) {
    deliver_mix(fake);
    for index in 0..6 {
        fake.deliver_raw("owner", &spam(&format!("Prize {index}")), &["INBOX"], None);
        fake.deliver(
            "owner",
            "receipts@shop.example",
            &format!("Receipt {index}"),
            "Thank you for your order.",
            &["INBOX"],
        );
        fake.deliver(
            "owner",
            &format!("neighbour{index}@street.example"),
            &format!("Street party {index}"),
            "Would you join us on Saturday?",
            &["INBOX"],
        );
    }
}

#[tokio::test]
async fn the_replay_stays_within_its_thread_bound_skips_protected_mail_and_writes_no_label() {
    let setup = setup(settings(JunkMode::Off, None)).await;
    deliver_replay_mix(&setup.fake);
    setup.update().await;
    let threads_before = setup.threads().await;
    let bounds = email::calibrate::ReplayBounds {
        max_threads: 12,
        max_cost: domain::run::Cost::parse("0").expect("cost"),
        account: None,
        inbox_only: false,
    };
    let review = setup.refresher.replay(&bounds).await.expect("replay");
    assert_eq!(
        review.observations.len(),
        12,
        "the bound, with more eligible mail than that"
    );
    assert_eq!(review.review.len(), 12);
    assert_eq!(
        (review.policy.as_str(), review.model.as_str()),
        (JUNK_POLICY, OFFLINE_JUNK_MODEL)
    );
    // The known correspondent's mail (and the owner's own, and the PDF) is skipped, never a keep.
    assert_eq!(review.skipped_protected, 3);
    assert!(
        review
            .review
            .iter()
            .all(|row| row.from.as_deref() != Some("ada@example.com"))
    );
    assert!(
        review.observations.iter().all(|o| o.owner_label.is_none()),
        "no label is ever written"
    );
    let strata = |stratum| review.observations.iter().filter(|o| o.stratum == stratum).count();
    // A quarter of a bound of 12 each at most: 3 personal outreach, 3 receipts, 6 at random.
    assert_eq!(strata(domain::junk::Stratum::PersonalOutreach), 3);
    assert_eq!(strata(domain::junk::Stratum::Transactional), 3);
    assert_eq!(strata(domain::junk::Stratum::Random), 6);
    assert_eq!(review.stopped, None);
    // Nothing changed: no judgment, no thread, no provider write.
    assert!(setup.judgments().await.is_empty());
    assert_eq!(setup.threads().await, threads_before);
    setup.no_provider_write();

    // The owner labels every observation; the packet leaves the review columns out.
    let mut reviewed = serde_json::to_value(&review).expect("json");
    let text = reviewed.to_string();
    assert!(
        email::calibrate::packet_from_review(text.as_bytes(), None)
            .expect_err("unlabelled")
            .starts_with("12 observation(s) have no owner_label")
    );
    for observation in reviewed["observations"].as_array_mut().expect("observations") {
        let label = if observation["category"] == "keep" {
            "keep"
        } else {
            "junk"
        };
        observation["owner_label"] = json!(label);
    }
    let packet = email::calibrate::packet_from_review(reviewed.to_string().as_bytes(), None).expect("packet");
    assert!(packet.get("review").is_none() && packet["observations"][0].get("thread_id").is_none());
    // Its shape is the packet's; twelve observations are far below the floor.
    let refused = domain::junk::CalibrationPacket::parse(packet.to_string().as_bytes(), OFFLINE_JUNK_MODEL)
        .expect_err("below the floor");
    assert_eq!(refused.reason(), JunkReason::FloorNotMet);
    // A pilot packet is a sample of one account's live inbox, for at most seven days.
    let binding = email::calibrate::PilotBinding {
        principal: "owner".into(),
        issued_at: setup.refresher.store.now(),
        days: 7,
    };
    let refused = email::calibrate::packet_from_review(reviewed.to_string().as_bytes(), Some(&binding))
        .expect_err("not an inbox sample");
    assert!(refused.contains("--inbox"), "{refused}");
    let inbox = email::calibrate::ReplayBounds {
        max_threads: 100,
        max_cost: domain::run::Cost::parse("0").expect("cost"),
        account: Some("personal".into()),
        inbox_only: true,
    };
    let mut reviewed = serde_json::to_value(setup.refresher.replay(&inbox).await.expect("replay")).expect("json");
    let mut uncertain = 0;
    for observation in reviewed["observations"].as_array_mut().expect("observations") {
        let category = observation["category"].as_str().expect("category").to_owned();
        let probability = observation["probability"].as_f64().expect("probability");
        uncertain += usize::from(category != "keep" && probability < 0.99);
        observation["owner_label"] = json!(if category == "keep" { "keep" } else { "junk" });
    }
    assert!(uncertain > 0, "the one-signal sale is uncertain");
    let pilot = email::calibrate::packet_from_review(reviewed.to_string().as_bytes(), Some(&binding)).expect("pilot");
    assert_eq!(pilot["account_id"], "personal");
    assert_eq!(pilot["sample"], "selected_live_inbox");
    assert_eq!(
        pilot["observations"].as_array().expect("observations").len(),
        reviewed["observations"].as_array().expect("observations").len() - uncertain,
        "uncertain judgments are no classifications"
    );
    let refused = domain::junk::PilotPacket::parse(pilot.to_string().as_bytes(), OFFLINE_JUNK_MODEL)
        .expect_err("below the pilot floor");
    assert!(
        matches!(refused, domain::junk::PacketRefused::Floor { .. }),
        "{refused:?}"
    );
}

#[tokio::test]
async fn the_replay_stops_before_a_request_that_would_pass_its_cost_bound() {
    use testkit::model::{FakeModel, Reply};
    let model = FakeModel::start(|_, _| {
        let answer = json!({"category": "spam", "probability": 0.999}).to_string();
        Reply::frames(vec![
            json!({ "choices": [{ "index": 0, "delta": { "role": "assistant", "content": answer } }] }),
            testkit::model::finish("stop"),
        ])
    })
    .await;
    let setup = setup(settings(JunkMode::Off, None)).await;
    deliver_replay_mix(&setup.fake);
    setup.update().await;
    let refresher = Refresher {
        classifier: Arc::new(email::classify::Classifier::Model(email::classify::ModelClassifier {
            provider: model_client::openai::provider(
                model_client::endpoint::OpenAiEndpoint {
                    base_url: model.url.clone(),
                    api_key: None,
                },
                reqwest::Client::new(),
            ),
            model: "judge-1".into(),
            // USD 10 per million tokens: each request's ceiling is a little over USD 0.01.
            prices: email::classify::Prices {
                input_per_mtok: domain::run::Cost::parse("10").expect("cost"),
                output_per_mtok: domain::run::Cost::parse("10").expect("cost"),
            },
            allowances: email::allowance::Allowances::default(),
        })),
        ..setup.refresher.clone()
    };
    let bounds = email::calibrate::ReplayBounds {
        max_threads: 100,
        max_cost: domain::run::Cost::parse("0.05").expect("cost"),
        account: Some("personal".into()),
        inbox_only: false,
    };
    let review = refresher.replay(&bounds).await.expect("replay");
    assert_eq!(review.stopped.as_deref(), Some("max_cost"));
    let requests = model.requests().len();
    assert!((1..10).contains(&requests), "{requests}");
    assert_eq!(review.observations.len(), requests);
    let spent = domain::run::Cost::parse(&review.spent_usd).expect("amount");
    assert!(spent.micros() <= 50_000, "{spent:?}");
    // Every request was journaled before it left, as a calibration, and charged.
    let kinds: Vec<(String, String)> =
        sqlx::query_as("SELECT kind, purpose FROM email_junk_events ORDER BY at, kind DESC")
            .fetch_all(&setup.db.pool)
            .await
            .expect("events");
    assert_eq!(kinds.len(), 2 * requests);
    assert!(kinds.iter().all(|(_, purpose)| purpose == "calibration"));
    let charged: i64 = sqlx::query_scalar("SELECT coalesce(sum(micros), 0)::bigint FROM email_charges")
        .fetch_one(&setup.db.pool)
        .await
        .expect("charges");
    assert_eq!(charged, spent.micros());
    assert!(
        setup.judgments().await.is_empty(),
        "a replay judges nothing into the mailbox"
    );
}

#[tokio::test]
async fn the_demo_packet_is_the_offline_rules_judgment_of_the_demo_mailbox_and_is_admitted() {
    let fake = FakeGmail::start().await;
    let senders = testkit::demo::Senders::generate();
    testkit::demo::fill(&fake, "demo", jiff::Timestamp::now(), &senders);
    let packet = testkit::demo::evidence(&fake, "demo");
    domain::junk::CalibrationPacket::parse(packet.to_string().as_bytes(), OFFLINE_JUNK_MODEL)
        .expect("the demo's packet meets the general floor");
    let observations: std::collections::HashMap<String, (String, f64)> = packet["observations"]
        .as_array()
        .expect("observations")
        .iter()
        .map(|o| {
            (
                o["fingerprint"].as_str().expect("fingerprint").to_owned(),
                (
                    o["category"].as_str().expect("category").to_owned(),
                    o["probability"].as_f64().expect("probability"),
                ),
            )
        })
        .collect();
    let account = domain::ids::AccountId::from(testkit::demo::ACCOUNT_ID);
    let mut checked = 0;
    let mut spam = 0;
    for stored in fake.stored("demo") {
        let Some((category, probability)) = observations.get(&email::junk::fingerprint(&account, &stored.id)) else {
            continue;
        };
        let message = email::project::project(stored.raw.as_deref().expect("raw")).expect("projects");
        let judged = email::junk::judge_offline(&message);
        assert_eq!(
            (judged.category.as_str(), judged.probability),
            (category.as_str(), *probability),
            "{}",
            stored.subject
        );
        checked += 1;
        spam += usize::from(judged.category == domain::junk::JunkCategory::Spam);
    }
    assert_eq!(checked, 100, "every observation is a message of the demo mailbox");
    assert_eq!(spam, 8);
}
