//! Feedback and learning over HTTP, with new mail recorded and assessed as the async worker does
//! it (the store's `email_record_assessment`, which applies the rules in force): a person's rule
//! changes the next assessment of their new mail and Undo restores it, even of mail being
//! assessed in that instant; an excluded source never reaches learning; paused learning forms
//! no rule; scoped resets; endorsing a saved draft's wording as the owner's style.

use reqwest::Method;
use serde_json::{Value, json};
use store::{NewAssessment, Store};

use crate::email::{Letter, app, completed_update, deliver, send};
use crate::support::TestApp;

/// The owner's `personal` account, updated, with the classifier's answers recorded as given.
async fn account(app: &TestApp) -> Store {
    let store = app.db.store_as("async-worker").await;
    store
        .email()
        .ensure_accounts(&["personal".into()])
        .await
        .expect("accounts");
    completed_update(&store).await;
    store
}

/// New mail from `from` in a thread of its own, assessed by the classifier as Other with no
/// reply need (an unknown sender); the conversation's id.
async fn mail_from(app: &TestApp, store: &Store, id: &str, from: &str, minute: i64, labels: &[&str]) -> String {
    deliver(
        store,
        "personal",
        &Letter {
            id,
            from,
            subject: &format!("Note {id}"),
            body: "Just so you know.",
            minute,
            labels,
            importance: Some("other"),
            reply_need: None,
        },
    )
    .await;
    let thread: uuid::Uuid = sqlx::query_scalar("SELECT id FROM email_threads WHERE provider_thread_id = $1")
        .bind(id)
        .fetch_one(&app.db.pool)
        .await
        .expect("thread");
    thread.to_string()
}

async fn thread(app: &TestApp, id: &str) -> Value {
    app.get_json(&format!("/v1/email/threads/{id}")).await.1
}

async fn feedback(app: &TestApp, thread: &str, body: Value) -> (u16, Value) {
    send(app, Method::POST, &format!("/v1/email/threads/{thread}/feedback"), body).await
}

/// Feedback that must be given (201).
async fn given(app: &TestApp, thread: &str, body: Value) {
    let (status, answer) = feedback(app, thread, body).await;
    assert_eq!(status, 201, "{answer}");
}

/// How many learnt rules are in force.
async fn rule_count(app: &TestApp) -> Option<usize> {
    app.get_json("/v1/email/learning").await.1["rules"]
        .as_array()
        .map(Vec::len)
}

#[tokio::test]
async fn a_persons_rule_changes_the_next_assessment_of_their_new_mail_and_undo_restores_it() {
    let app = app().await;
    let store = account(&app).await;
    let first = mail_from(&app, &store, "a1", "ada@example.com", 0, &["INBOX"]).await;
    assert_eq!(thread(&app, &first).await["importance"], "other");

    // Person feedback names the person explicitly, one of the conversation's senders.
    let (status, missing) = feedback(&app, &first, json!({ "scope": "person", "signal": "important" })).await;
    assert_eq!((status, missing["code"].as_str()), (422, Some("validation_failed")));
    let (status, stranger) = feedback(
        &app,
        &first,
        json!({ "scope": "person", "signal": "important", "person": "eve@example.com" }),
    )
    .await;
    assert_eq!(
        (status, stranger["code"].as_str()),
        (409, Some("email_feedback_person_unknown"))
    );

    let (status, given) = feedback(
        &app,
        &first,
        json!({ "scope": "person", "signal": "important", "person": "Ada@Example.com" }),
    )
    .await;
    assert_eq!(status, 201, "{given}");
    assert_eq!(given["feedback"]["scope"], "person", "the scope applied");
    assert_eq!(given["feedback"]["person"], "ada@example.com");
    // Applied to the conversation it was given on at once, with the rule as its reason.
    assert_eq!(given["thread"]["importance"], "important");
    assert_eq!(
        given["thread"]["reasons"][0]["feedback_id"],
        given["feedback"]["feedback_id"]
    );
    let rule = given["feedback"]["feedback_id"].as_str().expect("id").to_owned();

    // Ada's next mail: the classifier says Other, the rule makes it Important.
    let second = mail_from(&app, &store, "a2", "ada@example.com", 1, &["INBOX"]).await;
    let shown = thread(&app, &second).await;
    assert_eq!(shown["importance"], "important", "{shown}");
    assert_eq!(shown["reasons"][0]["scope"], "person");
    // Someone else's mail is untouched.
    let other = mail_from(&app, &store, "b1", "bob@example.com", 2, &["INBOX"]).await;
    assert_eq!(thread(&app, &other).await["importance"], "other");

    // Undo: the rule applies nowhere; what it decided shows the classifier's answer again.
    let (status, undone) = send(&app, Method::DELETE, &format!("/v1/email/feedback/{rule}"), json!(null)).await;
    assert_eq!(status, 200, "{undone}");
    assert_eq!(undone["feedback"]["retired"], true);
    assert_eq!(undone["thread"]["importance"], "other");
    assert_eq!(undone["thread"]["reasons"], json!([]));
    assert_eq!(thread(&app, &second).await["importance"], "other");
    let third = mail_from(&app, &store, "a3", "ada@example.com", 3, &["INBOX"]).await;
    assert_eq!(thread(&app, &third).await["importance"], "other");
    // Undoing again answers the same.
    let (status, again) = send(&app, Method::DELETE, &format!("/v1/email/feedback/{rule}"), json!(null)).await;
    assert_eq!((status, again["feedback"]["retired"].as_bool()), (200, Some(true)));

    // The conversation's own rule wins over a person's; reply need is decided on its own.
    let (_, person) = feedback(
        &app,
        &third,
        json!({ "scope": "person", "signal": "important", "person": "ada@example.com" }),
    )
    .await;
    let (_, own) = feedback(&app, &third, json!({ "scope": "thread", "signal": "less_important" })).await;
    assert_eq!(own["thread"]["importance"], "other");
    let (_, reply) = feedback(&app, &third, json!({ "scope": "thread", "signal": "needs_reply" })).await;
    assert_eq!(reply["thread"]["state"], "needs_reply");
    assert_eq!(reply["thread"]["reasons"].as_array().map(Vec::len), Some(2));
    // Other conversations of Ada's keep what they show until their next assessment.
    assert_eq!(thread(&app, &second).await["importance"], "other", "{person}");
}

/// Polls until a backend of this test's database waits as `wait`, e.g. `Lock/advisory`.
async fn until_waiting(app: &TestApp, wait: &str) {
    for _ in 0..400 {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity
             WHERE datname = current_database() AND wait_event_type || '/' || wait_event = $1",
        )
        .bind(wait)
        .fetch_one(&app.db.pool)
        .await
        .expect("activity");
        if waiting > 0 {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    panic!("nothing waited as {wait}");
}

#[tokio::test]
async fn a_retirement_waits_for_an_assessment_being_recorded_so_the_rule_decides_nothing_after_it() {
    let app = app().await;
    let store = account(&app).await;
    let first = mail_from(&app, &store, "c1", "cy@example.com", 0, &["INBOX"]).await;
    let (status, given) = feedback(
        &app,
        &first,
        json!({ "scope": "person", "signal": "important", "person": "cy@example.com" }),
    )
    .await;
    assert_eq!(status, 201, "{given}");
    let rule = given["feedback"]["feedback_id"].as_str().expect("id").to_owned();

    // Cy's next mail waits for its assessment.
    deliver(
        &store,
        "personal",
        &Letter {
            id: "c2",
            from: "cy@example.com",
            subject: "Note c2",
            body: "Just so you know.",
            minute: 1,
            labels: &["INBOX"],
            importance: None,
            reply_need: None,
        },
    )
    .await;
    let waiting = store
        .email()
        .waiting_threads(&"personal".into(), 100)
        .await
        .expect("waiting");
    let second = waiting
        .iter()
        .find(|thread| thread.message.provider_message_id == "c2")
        .expect("waits")
        .thread;

    // The assessment begins and is held inside its transaction (the test holds the row).
    let mut holder = app.db.pool.begin().await.expect("begin");
    sqlx::query("SELECT 1 FROM email_threads WHERE id = $1 FOR UPDATE")
        .bind(second.as_uuid())
        .execute(&mut *holder)
        .await
        .expect("row");
    let assessing = tokio::spawn({
        let store = store.clone();
        async move {
            store
                .email()
                .record_assessment(
                    second,
                    "c2",
                    &NewAssessment {
                        classifier: "jev-1.13.0",
                        importance: domain::email::Importance::Other,
                        reply_need: None,
                        gist: "Gist of Note c2",
                        rule: "known_correspondent",
                        kind: domain::feedback::ContentKind::Personal,
                    },
                )
                .await
                .expect("assessment")
        }
    });
    until_waiting(&app, "Lock/transactionid").await;
    // Undo meanwhile waits for it, rather than recomputing what the rule decided before the
    // assessment lands; then the assessment lands, and the undo recomputes it.
    let path = format!("/v1/email/feedback/{rule}");
    let ((status, undone), ()) = tokio::join!(send(&app, Method::DELETE, &path, json!(null)), async {
        until_waiting(&app, "Lock/advisory").await;
        holder.rollback().await.expect("rollback");
    });
    assert!(assessing.await.expect("assessing"));
    assert_eq!(
        (status, undone["feedback"]["retired"].as_bool()),
        (200, Some(true)),
        "{undone}"
    );
    let shown = thread(&app, &second.to_string()).await;
    assert_eq!(shown["importance"], "other", "{shown}");
    assert_eq!(shown["reasons"], json!([]));
}

#[tokio::test]
async fn an_excluded_source_never_reaches_learning() {
    let app = app().await;
    let store = account(&app).await;
    let carol = mail_from(&app, &store, "c1", "carol@example.com", 0, &["INBOX", "Label_9"]).await;
    given(
        &app,
        &carol,
        json!({ "scope": "person", "signal": "important", "person": "carol@example.com" }),
    )
    .await;
    given(&app, &carol, json!({ "scope": "kind", "signal": "needs_reply" })).await;
    assert_eq!(rule_count(&app).await, Some(2));

    // Excluding the label Carol's mail carries retires the rules learnt from it.
    let (status, excluded) = send(
        &app,
        Method::POST,
        "/v1/email/learning/exclusions",
        json!({ "kind": "label", "value": "Label_9" }),
    )
    .await;
    assert_eq!(status, 201, "{excluded}");
    let learning = app.get_json("/v1/email/learning").await.1;
    assert_eq!(learning["rules"], json!([]), "{learning}");
    assert_eq!(learning["exclusions"][0]["value"], "Label_9");
    let restored = thread(&app, &carol).await;
    assert_eq!(
        (restored["importance"].as_str(), restored["state"].as_str()),
        (Some("other"), None)
    );

    // An excluded sender: nothing is learnt from their mail, only the conversation itself changes.
    let (status, _) = send(
        &app,
        Method::POST,
        "/v1/email/learning/exclusions",
        json!({ "kind": "sender", "value": "Dan@Example.com" }),
    )
    .await;
    assert_eq!(status, 201);
    let dan = mail_from(&app, &store, "d1", "dan@example.com", 1, &["INBOX"]).await;
    for body in [
        json!({ "scope": "person", "signal": "important", "person": "dan@example.com" }),
        json!({ "scope": "kind", "signal": "important" }),
    ] {
        let (status, refused) = feedback(&app, &dan, body).await;
        assert_eq!((status, refused["code"].as_str()), (409, Some("email_source_excluded")));
    }
    let (status, own) = feedback(&app, &dan, json!({ "scope": "thread", "signal": "important" })).await;
    assert_eq!((status, own["feedback"]["scope"].as_str()), (201, Some("thread")));
    assert_eq!(own["thread"]["importance"], "important");
    let later = mail_from(&app, &store, "d2", "dan@example.com", 2, &["INBOX"]).await;
    assert_eq!(
        thread(&app, &later).await["importance"],
        "other",
        "nothing learnt from Dan"
    );
    assert_eq!(app.get_json("/v1/email/learning").await.1["rules"], json!([]));
    let rows: i64 =
        sqlx::query_scalar("SELECT count(*) FROM email_feedback WHERE scope <> 'thread' AND retired_at IS NULL")
            .fetch_one(&app.db.pool)
            .await
            .expect("count");
    assert_eq!(rows, 0);

    // Removing an exclusion brings no retired rule back.
    let id = excluded["exclusion_id"].as_str().expect("id");
    let response = app
        .request(Method::DELETE, &format!("/v1/email/learning/exclusions/{id}"))
        .send()
        .await
        .expect("send");
    assert_eq!(response.status(), 204);
    assert_eq!(thread(&app, &carol).await["importance"], "other");
}

#[tokio::test]
async fn paused_learning_forms_no_rule_and_resets_are_scoped() {
    let app = app().await;
    let store = account(&app).await;
    let news = mail_from(&app, &store, "n1", "news@letters.example", 0, &["INBOX"]).await;
    let ada = mail_from(&app, &store, "a1", "ada@example.com", 1, &["INBOX"]).await;

    let (status, paused) = send(&app, Method::PUT, "/v1/email/learning", json!({ "paused": true })).await;
    assert_eq!((status, paused["paused"].as_bool()), (200, Some(true)));
    let (status, refused) = feedback(&app, &ada, json!({ "scope": "kind", "signal": "important" })).await;
    assert_eq!((status, refused["code"].as_str()), (409, Some("email_learning_paused")));
    let (status, _) = feedback(&app, &ada, json!({ "scope": "thread", "signal": "important" })).await;
    assert_eq!(status, 201, "a conversation's own feedback still applies");
    send(&app, Method::PUT, "/v1/email/learning", json!({ "paused": false })).await;

    given(&app, &news, json!({ "scope": "kind", "signal": "important" })).await;
    given(
        &app,
        &ada,
        json!({ "scope": "person", "signal": "needs_reply", "person": "ada@example.com" }),
    )
    .await;
    assert_eq!(rule_count(&app).await, Some(2));

    // A reset of one kind forgets that kind's rule only.
    let (status, reset) = send(
        &app,
        Method::POST,
        "/v1/email/learning/reset",
        json!({ "scope": "kind", "kind": "personal" }),
    )
    .await;
    assert_eq!((status, reset["retired"].as_u64()), (200, Some(1)));
    let rules = app.get_json("/v1/email/learning").await.1["rules"].clone();
    assert_eq!(rules.as_array().map(Vec::len), Some(1));
    assert_eq!(rules[0]["scope"], "person");
    let (status, invalid) = send(
        &app,
        Method::POST,
        "/v1/email/learning/reset",
        json!({ "scope": "person" }),
    )
    .await;
    assert_eq!((status, invalid["field"].as_str()), (422, Some("person")));
    let (status, reset) = send(
        &app,
        Method::POST,
        "/v1/email/learning/reset",
        json!({ "scope": "person", "person": "ada@example.com" }),
    )
    .await;
    assert_eq!((status, reset["retired"].as_u64()), (200, Some(1)));
    assert_eq!(app.get_json("/v1/email/learning").await.1["rules"], json!([]));
    // The conversation's own feedback stays through resets.
    assert_eq!(thread(&app, &ada).await["importance"], "important");
}

#[tokio::test]
async fn wording_is_endorsed_from_the_newest_saved_revision_only() {
    let app = app().await;
    let store = account(&app).await;
    let ada = mail_from(&app, &store, "a1", "ada@example.com", 0, &["INBOX"]).await;
    let (_, created) = send(
        &app,
        Method::POST,
        "/v1/email/drafts",
        json!({ "thread_id": ada, "to": ["ada@example.com"], "subject": "Re: Note", "body": "Thanks!" }),
    )
    .await;
    let draft = created["draft_id"].as_str().expect("id");
    let (_, saved) = send(
        &app,
        Method::PUT,
        &format!("/v1/email/drafts/{draft}"),
        json!({ "expected_revision": 1, "to": ["ada@example.com"], "subject": "Re: Note",
                "body": "Thanks, Ada.\nWarm wishes, Sam" }),
    )
    .await;
    assert_eq!(saved["revision"], 2);
    let endorse = |revision: u32, text: &str| {
        let body = json!({ "revision": revision, "text": text });
        let app = &app;
        async move { send(app, Method::POST, &format!("/v1/email/drafts/{draft}/style"), body).await }
    };
    // A save came after revision 1: the conflict prevents it.
    let (status, stale) = endorse(1, "Thanks!").await;
    assert_eq!((status, stale["code"].as_str()), (409, Some("revision_mismatch")));
    let (status, absent) = endorse(2, "Kind regards").await;
    assert_eq!(
        (status, absent["code"].as_str()),
        (409, Some("email_style_not_in_draft"))
    );
    let (status, sample) = endorse(2, "Warm wishes, Sam").await;
    assert_eq!(status, 201, "{sample}");
    assert_eq!(sample["text"], "Warm wishes, Sam");
    assert_eq!(app.get_json("/v1/email/learning").await.1["style_samples"], 1);
    assert_eq!(
        app.app_store.email().style(5).await.expect("style"),
        ["Warm wishes, Sam"]
    );

    send(&app, Method::PUT, "/v1/email/learning", json!({ "paused": true })).await;
    let (status, paused) = endorse(2, "Thanks, Ada.").await;
    assert_eq!((status, paused["code"].as_str()), (409, Some("email_learning_paused")));
    send(&app, Method::PUT, "/v1/email/learning", json!({ "paused": false })).await;
    let (status, reset) = send(
        &app,
        Method::POST,
        "/v1/email/learning/reset",
        json!({ "scope": "everything" }),
    )
    .await;
    assert_eq!((status, reset["retired"].as_u64()), (200, Some(1)));
    assert_eq!(app.get_json("/v1/email/learning").await.1["style_samples"], 0);
}
