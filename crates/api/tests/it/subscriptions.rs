//! Unsubscribe assistance's routes over a census written as the async worker writes it: the
//! routes mounted only with the flag, rows in server order without any URI, the command that
//! refuses a stale target while the others run, Keep and its undo, and Report spam / Not spam
//! returning exactly the conversations it moved.

use reqwest::Method;
use serde_json::{Value, json};
use store::{CensusCandidate, CensusEntry, Store, WriteOutcome};

use crate::email::{Letter, deliver};
use crate::support::{Env, TestApp, expect_problem, json};

async fn app() -> TestApp {
    TestApp::spawn_with(
        Env::default()
            .with_mail()
            .set("AGENT_EMAIL_MODE_ENABLED", "1")
            .set("AGENT_EMAIL_UNSUBSCRIBE_ENABLED", "1"),
    )
    .await
}

const ONE_CLICK: &str = "https://letters.example/u/1?token=secret-token";

/// A census row for `sender` of `account`, written as the async worker does.
async fn census(
    worker: &Store,
    account: &str,
    sender: &str,
    minute: i64,
    verified: bool,
    mechanism: Option<(&str, &str, &str)>,
) {
    let candidate = CensusCandidate {
        sender: sender.to_owned(),
        sender_name: Some(format!("News from {sender}")),
        conversations: 2,
        last_arrival_at: jiff::Timestamp::from_second(1_780_000_000 + 60 * minute).expect("time"),
        newest_message: format!("{sender}-newest"),
        protected: sender.starts_with("friend"),
    };
    let check = if verified {
        domain::email::EvidenceCheck::Verified
    } else {
        domain::email::EvidenceCheck::Failed
    };
    let digest = format!("{:0>64}", format!("{minute:x}"));
    let mechanism = mechanism.map(|(kind, target, destination)| {
        (
            domain::email::UnsubscribeMechanism::parse(kind).expect("a mechanism"),
            target,
            destination,
        )
    });
    worker
        .email()
        .record_census(
            &account.into(),
            &CensusEntry {
                candidate: &candidate,
                evidence_message: &candidate.newest_message,
                check,
                mechanism,
                digest: &digest,
            },
        )
        .await
        .expect("census row");
}

/// `personal`: four senders (one-click, mailto, unverified, protected); `work`: one.
async fn senders(app: &TestApp) -> Store {
    let worker = app.db.store_as("async-worker").await;
    worker
        .email()
        .ensure_accounts(&["personal".into(), "work".into()])
        .await
        .expect("accounts");
    let one_click = Some(("one_click", ONE_CLICK, "letters.example"));
    census(&worker, "personal", "news@letters.example", 40, true, one_click).await;
    let mailto = Some(("mailto", "mailto:leave@club.example?subject=stop", "leave@club.example"));
    census(&worker, "personal", "list@club.example", 30, true, mailto).await;
    census(&worker, "personal", "deals@shop.example", 20, false, None).await;
    census(&worker, "personal", "friend@pals.example", 10, true, one_click).await;
    census(&worker, "work", "digest@work.example", 50, true, one_click).await;
    worker
}

async fn rows(app: &TestApp, query: &str) -> Vec<Value> {
    let (status, page) = app.get_json(&format!("/v1/email/subscriptions{query}")).await;
    assert_eq!(status, 200, "{page}");
    page["subscriptions"].as_array().expect("rows").clone()
}

fn row<'a>(rows: &'a [Value], sender: &str) -> &'a Value {
    rows.iter()
        .find(|row| row["sender"]["address"] == sender)
        .unwrap_or_else(|| panic!("a row for {sender}"))
}

async fn post(app: &TestApp, path: &str, body: Value) -> reqwest::Response {
    app.request(Method::POST, path).json(&body).send().await.expect("send")
}

fn target(row: &Value) -> Value {
    json!({
        "subscription_id": row["subscription_id"],
        "evidence_digest": row["evidence_digest"],
        "expected_revision": row["revision"],
    })
}

#[tokio::test]
async fn the_routes_exist_only_with_the_flag_and_need_credentials() {
    let without = TestApp::spawn_with(Env::default().set("AGENT_EMAIL_MODE_ENABLED", "1")).await;
    expect_problem(
        without.send(Method::GET, "/v1/email/subscriptions").await,
        404,
        "not_found",
    )
    .await;
    let (_, accounts) = without.get_json("/v1/email/accounts").await;
    assert!(
        accounts["accounts"]
            .as_array()
            .expect("accounts")
            .iter()
            .all(|account| account["unsubscribe_supported"] == false)
    );

    let app = app().await;
    senders(&app).await;
    let anonymous = reqwest::get(app.url("/v1/email/subscriptions")).await.expect("send");
    assert_eq!(anonymous.status(), 401);
    let (_, accounts) = app.get_json("/v1/email/accounts").await;
    assert_eq!(accounts["accounts"][0]["unsubscribe_supported"], true, "{accounts}");
}

#[tokio::test]
async fn rows_come_in_server_order_by_account_and_state_and_never_carry_a_uri() {
    let app = app().await;
    senders(&app).await;
    let (status, page) = app.get_json("/v1/email/subscriptions").await;
    assert_eq!(status, 200);
    let text = page.to_string();
    assert!(
        !text.contains("https://") && !text.contains("token") && !text.contains("mailto:"),
        "no URI in a projection: {text}"
    );
    let order: Vec<&str> = page["subscriptions"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|row| row["sender"]["address"].as_str().expect("a sender"))
        .collect();
    assert_eq!(
        order,
        [
            "digest@work.example",
            "news@letters.example",
            "list@club.example",
            "deals@shop.example",
            "friend@pals.example"
        ]
    );
    let all = rows(&app, "?account_id=personal").await;
    assert_eq!(all.len(), 4);
    let news = row(&all, "news@letters.example");
    assert_eq!(
        (&news["mechanism"], &news["destination"], &news["state"]),
        (&json!("one_click"), &json!("letters.example"), &json!("eligible"))
    );
    let mailto = row(&all, "list@club.example");
    assert_eq!(
        (&mailto["mechanism"], &mailto["destination"]),
        (&json!("mailto"), &json!("leave@club.example"))
    );
    let deals = row(&all, "deals@shop.example");
    assert_eq!(
        (&deals["state"], &deals["mechanism"]),
        (&json!("unverified"), &Value::Null)
    );
    assert_eq!(row(&all, "friend@pals.example")["protected"], true);

    let unverified = rows(&app, "?state=unverified").await;
    assert_eq!(unverified.len(), 1);
    // Pages of two, by cursor, in the same order.
    let (_, first) = app.get_json("/v1/email/subscriptions?limit=2").await;
    let cursor = first["next_cursor"].as_str().expect("a next page");
    let (_, second) = app
        .get_json(&format!("/v1/email/subscriptions?limit=2&cursor={cursor}"))
        .await;
    assert_eq!(second["subscriptions"][0]["sender"]["address"], "list@club.example");
    expect_problem(
        app.send(Method::GET, "/v1/email/subscriptions?cursor=forged").await,
        400,
        "invalid_cursor",
    )
    .await;
    expect_problem(
        app.send(Method::GET, "/v1/email/subscriptions?account_id=nobody").await,
        404,
        "email_account_not_found",
    )
    .await;
}

#[tokio::test]
async fn a_stale_or_ineligible_target_is_refused_while_the_others_run() {
    let app = app().await;
    let worker = senders(&app).await;
    let all = rows(&app, "?account_id=personal").await;
    let news = row(&all, "news@letters.example").clone();
    let list = row(&all, "list@club.example").clone();
    let deals = row(&all, "deals@shop.example").clone();
    let friend = row(&all, "friend@pals.example").clone();

    // The mailto row moved after it was shown (new evidence): its confirmation is stale.
    census(
        &worker,
        "personal",
        "list@club.example",
        31,
        true,
        Some(("mailto", "mailto:other@club.example", "other@club.example")),
    )
    .await;
    let mut stale_digest = target(&friend);
    stale_digest["evidence_digest"] = json!("0".repeat(64));
    let (status, answer) = json(
        post(
            &app,
            "/v1/email/subscriptions/unsubscribe",
            json!({ "targets": [target(&news), target(&list), target(&deals), stale_digest] }),
        )
        .await,
    )
    .await;
    assert_eq!(status, 202, "{answer}");
    let operation = &answer["operation"];
    assert_eq!(
        (&operation["kind"], &operation["state"]),
        (&json!("unsubscribe"), &json!("queued"))
    );
    let accepted: Vec<&Value> = operation["targets"]
        .as_array()
        .expect("targets")
        .iter()
        .map(|target| &target["subscription_id"])
        .collect();
    assert_eq!(accepted, [&news["subscription_id"]]);
    assert_eq!(operation["targets"][0]["destination"], "letters.example");
    assert!(!answer.to_string().contains("token"), "{answer}");
    let refused: Vec<(&Value, &Value)> = answer["refused"]
        .as_array()
        .expect("refused")
        .iter()
        .map(|refused| (&refused["subscription_id"], &refused["reason"]))
        .collect();
    assert_eq!(
        refused,
        [
            (&list["subscription_id"], &json!("changed")),
            (&deals["subscription_id"], &json!("not_eligible")),
            (&friend["subscription_id"], &json!("changed")),
        ]
    );
    let all = rows(&app, "?account_id=personal").await;
    assert_eq!(row(&all, "news@letters.example")["state"], "unsubscribing");
    assert_eq!(
        row(&all, "list@club.example")["state"],
        "eligible",
        "a refused row is untouched"
    );
    let id = operation["operation_id"].as_str().expect("an id");
    let (status, status_now) = app.get_json(&format!("/v1/email/operations/{id}")).await;
    assert_eq!(status, 200);
    assert_eq!(status_now["targets"][0]["state"], "queued");

    // Confirmed again, the same row is no longer eligible: nothing runs.
    expect_problem(
        post(
            &app,
            "/v1/email/subscriptions/unsubscribe",
            json!({ "targets": [target(&news)] }),
        )
        .await,
        409,
        "email_subscription_changed",
    )
    .await;
    // Bad commands are refused whole.
    let too_many: Vec<Value> = (0..26)
        .map(|index| {
            json!({ "subscription_id": uuid::Uuid::new_v4(), "evidence_digest": "a".repeat(64),
                     "expected_revision": index + 1 })
        })
        .collect();
    for body in [
        json!({ "targets": too_many }),
        json!({ "targets": [] }),
        json!({ "targets": [target(&list), target(&list)] }),
        json!({ "targets": [{ "subscription_id": list["subscription_id"], "evidence_digest": "x",
                              "expected_revision": 1 }] }),
        json!({ "targets": [target(&list)], "unsubscribe_uri": "https://evil.example" }),
    ] {
        let response = post(&app, "/v1/email/subscriptions/unsubscribe", body.clone()).await;
        assert!(matches!(response.status().as_u16(), 400 | 422), "{body}");
    }
    let work = rows(&app, "?account_id=work").await;
    let list = row(&rows(&app, "?account_id=personal").await, "list@club.example").clone();
    expect_problem(
        post(
            &app,
            "/v1/email/subscriptions/unsubscribe",
            json!({ "targets": [target(&list), target(&work[0])] }),
        )
        .await,
        422,
        "validation_failed",
    )
    .await;
}

#[tokio::test]
async fn keep_is_reversible_and_checks_the_revision() {
    let app = app().await;
    senders(&app).await;
    let deals = row(&rows(&app, "").await, "deals@shop.example").clone();
    let id = deals["subscription_id"].as_str().expect("an id").to_owned();
    let stale = json!({ "expected_revision": deals["revision"].as_i64().expect("a revision") + 1 });
    expect_problem(
        post(&app, &format!("/v1/email/subscriptions/{id}/keep"), stale).await,
        409,
        "email_subscription_changed",
    )
    .await;
    // A whole number written as `2.0` is the same revision (JSON Schema's `integer`).
    let revision = deals["revision"].as_i64().expect("a revision") as f64;
    let (status, kept) = json(
        post(
            &app,
            &format!("/v1/email/subscriptions/{id}/keep"),
            json!({ "expected_revision": revision }),
        )
        .await,
    )
    .await;
    assert_eq!(status, 200, "{kept}");
    assert_eq!(kept["subscription"]["state"], "kept");
    let revision = kept["subscription"]["revision"].clone();
    expect_problem(
        post(
            &app,
            &format!("/v1/email/subscriptions/{id}/keep"),
            json!({ "expected_revision": revision }),
        )
        .await,
        409,
        "email_subscription_not_applicable",
    )
    .await;
    let (status, undone) = json(
        post(
            &app,
            &format!("/v1/email/subscriptions/{id}/undo-keep"),
            json!({ "expected_revision": revision }),
        )
        .await,
    )
    .await;
    assert_eq!(status, 200, "{undone}");
    assert_eq!(undone["subscription"]["state"], "unverified");
    expect_problem(
        post(
            &app,
            &format!("/v1/email/subscriptions/{}/keep", uuid::Uuid::new_v4()),
            json!({ "expected_revision": 1 }),
        )
        .await,
        404,
        "email_subscription_not_found",
    )
    .await;
}

#[tokio::test]
async fn not_spam_returns_exactly_the_conversations_report_spam_moved() {
    let app = app().await;
    let census_writer = senders(&app).await;
    let letter = |id, from, minute, labels| Letter {
        id,
        from,
        subject: "News",
        body: "This week.",
        minute,
        labels,
        importance: None,
        reply_need: None,
    };
    deliver(
        &census_writer,
        "personal",
        &letter("n1", "news@letters.example", 1, &["INBOX"]),
    )
    .await;
    deliver(
        &census_writer,
        "personal",
        &letter("n2", "news@letters.example", 2, &["INBOX"]),
    )
    .await;
    // Already in Spam by the owner's own hand: not this row's to return.
    deliver(
        &census_writer,
        "personal",
        &letter("n3", "news@letters.example", 3, &["SPAM"]),
    )
    .await;
    let worker = app.db.store_as("worker").await;
    let news = row(&rows(&app, "").await, "news@letters.example").clone();
    // The reading pane's projection carries the sender's row (without its URI).
    let (_, page) = app.get_json("/v1/email/threads?view=other&limit=50").await;
    let thread = page["threads"]
        .as_array()
        .expect("threads")
        .iter()
        .find(|thread| thread["provider_thread_id"] == "n1")
        .expect("the first newsletter")["thread_id"]
        .as_str()
        .expect("an id")
        .to_owned();
    let (_, detail) = app.get_json(&format!("/v1/email/threads/{thread}")).await;
    assert_eq!(
        detail["subscription"]["subscription_id"], news["subscription_id"],
        "{detail}"
    );
    assert_eq!(detail["subscription"]["destination"], "letters.example");
    assert!(!detail.to_string().contains("secret-token"));
    let id = news["subscription_id"].as_str().expect("an id").to_owned();
    let (status, reported) = json(
        post(
            &app,
            &format!("/v1/email/subscriptions/{id}/spam"),
            json!({ "expected_revision": news["revision"] }),
        )
        .await,
    )
    .await;
    assert_eq!(status, 200, "{reported}");
    assert_eq!(reported["subscription"]["state"], "reported_spam");
    let operations = reported["operations"].as_array().expect("operations");
    assert_eq!(operations.len(), 2, "one write per Inbox conversation: {reported}");
    assert!(operations.iter().all(|operation| operation["kind"] == "report_spam"));
    let moved: Vec<Value> = operations
        .iter()
        .map(|operation| operation["thread_id"].clone())
        .collect();
    // The worker applies them.
    while let Some(claimed) = worker
        .email()
        .claim_write("worker-1", std::time::Duration::from_secs(30))
        .await
        .expect("claim")
    {
        assert!(
            worker
                .email()
                .mark_dispatching(claimed.operation.id, "worker-1")
                .await
                .expect("mark")
        );
        let labels = vec![(claimed.provider_thread_id.clone(), vec!["SPAM".to_owned()])];
        worker
            .email()
            .settle_write(&claimed, &WriteOutcome::Succeeded(labels))
            .await
            .expect("settle");
    }

    let revision = reported["subscription"]["revision"].clone();
    let (status, returned) = json(
        post(
            &app,
            &format!("/v1/email/subscriptions/{id}/not-spam"),
            json!({ "expected_revision": revision }),
        )
        .await,
    )
    .await;
    assert_eq!(status, 200, "{returned}");
    assert_eq!(returned["subscription"]["state"], "kept");
    let mut back: Vec<Value> = returned["operations"]
        .as_array()
        .expect("operations")
        .iter()
        .map(|operation| {
            assert_eq!(operation["kind"], "not_spam");
            operation["thread_id"].clone()
        })
        .collect();
    let mut moved = moved;
    back.sort_by_key(Value::to_string);
    moved.sort_by_key(Value::to_string);
    assert_eq!(back, moved, "exactly the conversations Report spam moved");
}
