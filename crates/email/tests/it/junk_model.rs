//! The junk first pass with the agent's model as judge: the last pilot slot lost while it
//! judges, a failed judgment, and the owner's protections given while it judges.

use std::sync::Arc;

use domain::junk::{JunkMode, JunkOutcome, Protection};
use email::refresh::Refresher;
use serde_json::json;

use crate::junk::{calibration, packet_dir, pilot, settings, setup, spam, write_packet};
use crate::refresh::account;

#[tokio::test]
async fn losing_the_last_pilot_slot_while_judging_gives_normal_assessment() {
    use testkit::model::{FakeModel, Reply};
    let setup = setup(settings(JunkMode::Off, None)).await;
    let day = setup.refresher.store.now().to_zoned(jiff::tz::TimeZone::UTC).date();
    sqlx::query("INSERT INTO email_junk_pilot_days (day, used) VALUES ($1::date, 49)")
        .bind(day.to_string())
        .execute(&setup.db.pool)
        .await
        .expect("used");
    // While the model judges, another conversation takes the day's last slot (a separate
    // connection, committed before the answer comes back).
    let url = setup.db.url.clone();
    let model = FakeModel::start(move |_, body| {
        let system = body["messages"][0]["content"].as_str().unwrap_or_default();
        let answer = if system.contains("screen one email for junk") {
            let url = url.clone();
            std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("runtime");
                runtime.block_on(async {
                    use sqlx::Connection;
                    let mut connection = sqlx::PgConnection::connect(&url).await.expect("connect");
                    sqlx::query("UPDATE email_junk_pilot_days SET used = 50")
                        .execute(&mut connection)
                        .await
                        .expect("the last slot");
                });
            })
            .join()
            .expect("taken");
            json!({"category": "spam", "probability": 0.999}).to_string()
        } else {
            json!({"importance": "other", "reply_need": null, "gist": "Assessed"}).to_string()
        };
        Reply::frames(vec![
            json!({ "choices": [{ "index": 0, "delta": { "role": "assistant", "content": answer } }] }),
            testkit::model::finish("stop"),
        ])
    })
    .await;
    let dir = packet_dir();
    let issued = setup.refresher.store.now() - jiff::SignedDuration::from_hours(1);
    let mut packet = pilot(issued, 2);
    packet["model"] = json!("judge-1");
    let packet = write_packet(&dir, "pilot.json", &packet);
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
            prices: email::classify::Prices {
                input_per_mtok: domain::run::Cost::parse("1").expect("cost"),
                output_per_mtok: domain::run::Cost::parse("1").expect("cost"),
            },
            allowances: email::allowance::Allowances::default(),
        })),
        junk: settings(JunkMode::Pilot, Some(packet)),
        ..setup.refresher.clone()
    };
    setup.fake.deliver_raw("owner", &spam("Last slot"), &["INBOX"], None);
    refresher.update(&account(&setup.fake, "owner")).await.expect("update");
    assert_eq!(setup.status().await.in_force, JunkMode::Pilot);
    let (importance, rule, state, suspected) = setup.thread("Last slot").await;
    assert_eq!(
        (importance.as_deref(), rule.as_deref(), state, suspected),
        (Some("other"), Some("model"), None, false),
        "the model's ordinary assessment"
    );
    assert_eq!(
        setup.judgments().await,
        vec![("Last slot".into(), JunkOutcome::NoSlot, None)]
    );
    assert_eq!(
        setup.refresher.store.email().pilot_slots_used(day).await.expect("used"),
        50
    );
}

/// A model classifier at `url` named `judge-1`, whose requests give up after `timeout`.
fn judge(url: &str, timeout: std::time::Duration) -> email::classify::Classifier {
    email::classify::Classifier::Model(email::classify::ModelClassifier {
        provider: model_client::openai::provider(
            model_client::endpoint::OpenAiEndpoint {
                base_url: url.to_owned(),
                api_key: None,
            },
            reqwest::Client::builder().timeout(timeout).build().expect("client"),
        ),
        model: "judge-1".into(),
        prices: email::classify::Prices {
            input_per_mtok: domain::run::Cost::parse("1").expect("cost"),
            output_per_mtok: domain::run::Cost::parse("1").expect("cost"),
        },
        allowances: email::allowance::Allowances::default(),
    })
}

#[tokio::test]
async fn a_judgment_that_fails_is_uncertain_and_ordinary_assessment_goes_on() {
    use testkit::model::{FakeModel, Reply};
    // Junk requests never answer; assessments do.
    let model = FakeModel::start(|_, body| {
        let system = body["messages"][0]["content"].as_str().unwrap_or_default();
        if system.contains("screen one email for junk") {
            return Reply::held();
        }
        let answer = json!({"importance": "other", "reply_need": null, "gist": "Assessed"}).to_string();
        Reply::frames(vec![
            json!({ "choices": [{ "index": 0, "delta": { "role": "assistant", "content": answer } }] }),
            testkit::model::finish("stop"),
        ])
    })
    .await;
    let setup = setup(settings(JunkMode::Shadow, None)).await;
    let refresher = Refresher {
        classifier: Arc::new(judge(&model.url, std::time::Duration::from_secs(1))),
        ..setup.refresher.clone()
    };
    setup.fake.deliver_raw("owner", &spam("Held"), &["INBOX"], None);
    refresher.update(&account(&setup.fake, "owner")).await.expect("update");
    assert_eq!(
        setup.judgments().await,
        vec![("Held".into(), JunkOutcome::Protected, Some(Protection::Uncertain))]
    );
    assert_eq!(
        setup.thread("Held").await.1.as_deref(),
        Some("model"),
        "assessed all the same"
    );
    // Charged at its ceiling, and never asked again.
    let outcome: String =
        sqlx::query_scalar("SELECT outcome FROM email_junk_events WHERE kind = 'email.junk.completed'")
            .fetch_one(&setup.db.pool)
            .await
            .expect("completed");
    assert_eq!(outcome, "failed");
    let before = model.requests().len();
    refresher.update(&account(&setup.fake, "owner")).await.expect("update");
    assert_eq!(model.requests().len(), before);
}

#[tokio::test]
async fn a_kind_rule_protects_and_restores_and_a_rule_given_while_judging_protects() {
    use testkit::model::{FakeModel, Reply};
    let dir = packet_dir();
    let setup = setup(settings(JunkMode::Off, None)).await;
    // While the model judges "Raced", the owner marks its sender Important (committed on a
    // separate connection before the answer comes back).
    let url = setup.db.url.clone();
    let model = FakeModel::start(move |_, body| {
        let system = body["messages"][0]["content"].as_str().unwrap_or_default();
        let user = body["messages"][1]["content"].as_str().unwrap_or_default().to_owned();
        let answer = if system.contains("screen one email for junk") {
            if user.contains("Subject: Raced") {
                let url = url.clone();
                std::thread::spawn(move || {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .expect("runtime");
                    runtime.block_on(async {
                        use sqlx::Connection;
                        let mut connection = sqlx::PgConnection::connect(&url).await.expect("connect");
                        sqlx::query(
                            "INSERT INTO email_feedback (id, scope, signal, thread, person, created_at)
                             SELECT gen_random_uuid(), 'person', 'important', id, 'racer@win.example', now()
                             FROM email_threads WHERE subject = 'Raced'",
                        )
                        .execute(&mut connection)
                        .await
                        .expect("the rule");
                    });
                })
                .join()
                .expect("given");
            }
            json!({"category": "spam", "probability": 0.999}).to_string()
        } else {
            json!({"importance": "other", "reply_need": null, "gist": "Assessed"}).to_string()
        };
        Reply::frames(vec![
            json!({ "choices": [{ "index": 0, "delta": { "role": "assistant", "content": answer } }] }),
            testkit::model::finish("stop"),
        ])
    })
    .await;
    let packet = write_packet(&dir, "calibration.json", &calibration("judge-1"));
    let refresher = Refresher {
        classifier: Arc::new(judge(&model.url, std::time::Duration::from_secs(10))),
        junk: settings(JunkMode::Filter, Some(packet)),
        ..setup.refresher.clone()
    };
    let owner = account(&setup.fake, "owner");
    for subject in ["First prize", "Second prize"] {
        setup.fake.deliver_raw("owner", &spam(subject), &["INBOX"], None);
    }
    let raced = mail_builder::MessageBuilder::new()
        .from("racer@win.example")
        .to("owner@example.org")
        .subject("Raced")
        .text_body("You have won! Claim your prize!!!")
        .write_to_vec()
        .expect("built");
    setup.fake.deliver_raw("owner", &raced, &["INBOX"], None);
    refresher.update(&owner).await.expect("update");
    for subject in ["First prize", "Second prize"] {
        assert_eq!(setup.thread(subject).await.2.as_deref(), Some("filtered"), "{subject}");
    }
    let (importance, rule, state, _) = setup.thread("Raced").await;
    assert_eq!(
        (importance.as_deref(), rule.as_deref(), state),
        (Some("important"), Some("model"), None),
        "protected by the rule given while it was judged: assessed the ordinary way"
    );
    assert!(
        setup
            .judgments()
            .await
            .contains(&("Raced".into(), JunkOutcome::Protected, Some(Protection::Important)))
    );

    // A rule about a whole kind of content returns every filtered conversation of that kind,
    // and protects the kind's later mail.
    let api = setup.db.store_as("api").await;
    let first: uuid::Uuid = sqlx::query_scalar("SELECT id FROM email_threads WHERE subject = 'First prize'")
        .fetch_one(&setup.db.pool)
        .await
        .expect("thread");
    let given = api
        .email()
        .give_feedback(store::NewFeedback {
            thread: first.into(),
            scope: domain::feedback::FeedbackScope::Kind,
            signal: domain::feedback::FeedbackSignal::Important,
            person: None,
        })
        .await
        .expect("feedback");
    assert!(matches!(given, store::GiveFeedback::Given(_)), "{given:?}");
    for subject in ["First prize", "Second prize"] {
        let (_, _, state, suspected) = setup.thread(subject).await;
        assert_eq!((state.as_deref(), suspected), (Some("restoring"), false), "{subject}");
    }
    setup.fake.deliver_raw("owner", &spam("Third prize"), &["INBOX"], None);
    refresher.update(&owner).await.expect("update");
    assert!(setup.judgments().await.contains(&(
        "Third prize".into(),
        JunkOutcome::Protected,
        Some(Protection::Important)
    )));
    for subject in ["First prize", "Second prize", "Third prize"] {
        let (importance, _, state, _) = setup.thread(subject).await;
        assert_eq!((importance.as_deref(), state), (Some("important"), None), "{subject}");
    }
    setup.no_provider_write();
}
