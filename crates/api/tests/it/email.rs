//! Email mode's routes over projections written as the async worker writes them: accounts with
//! freshness, the priority inbox's first five and its pages, Other mail, account and search
//! filters, a thread's reading pane, conversation changes as durable operations (settled by the
//! worker login), the refresh admission interval and the suspected-spam flag.

use reqwest::Method;
use serde_json::{Value, json};
use store::{ClaimedWrite, NewAssessment, NewEmailMessage, Store, WriteOutcome};
use wire::email::{AttachmentMeta, Correspondent};

use crate::support::{Env, TestApp, expect_problem, json};

pub(crate) async fn app() -> TestApp {
    TestApp::spawn_with(Env::default().set("AGENT_EMAIL_MODE_ENABLED", "1")).await
}

/// One delivered message of its own thread, `minute` minutes into the day, assessed as
/// `importance` with `reply_need` unless `importance` is `None`.
pub(crate) struct Letter<'a> {
    pub id: &'a str,
    pub from: &'a str,
    pub subject: &'a str,
    pub body: &'a str,
    pub minute: i64,
    pub labels: &'a [&'a str],
    pub importance: Option<&'a str>,
    pub reply_need: Option<&'a str>,
}

pub(crate) async fn deliver(store: &Store, account: &str, letter: &Letter<'_>) {
    let labels: Vec<String> = letter.labels.iter().map(|label| (*label).to_owned()).collect();
    let attachments = if letter.subject.contains("Slides") {
        vec![AttachmentMeta {
            filename: Some("slides.pdf".into()),
            media_type: "application/pdf".into(),
            size_bytes: 2048,
        }]
    } else {
        Vec::new()
    };
    let sender = Correspondent {
        name: None,
        address: letter.from.into(),
    };
    let owner = Correspondent {
        name: Some("Owner".into()),
        address: "owner@example.org".into(),
    };
    store
        .email()
        .record_message(
            &account.into(),
            &NewEmailMessage {
                provider_message_id: letter.id,
                provider_thread_id: letter.id,
                sender: Some(&sender),
                recipients: &[owner],
                copied: &[],
                sent_at: jiff::Timestamp::from_second(1_780_000_000 + 60 * letter.minute).expect("time"),
                subject: letter.subject,
                body: letter.body,
                text_cut: false,
                attachments: &attachments,
                bulk: json!({}),
                labels: &labels,
            },
        )
        .await
        .expect("message");
    let Some(importance) = letter.importance else {
        return;
    };
    let waiting = store
        .email()
        .waiting_threads(&account.into(), 100)
        .await
        .expect("waiting");
    let thread = waiting
        .iter()
        .find(|thread| thread.message.provider_message_id == letter.id)
        .expect("waits");
    let recorded = store
        .email()
        .record_assessment(
            thread.thread,
            letter.id,
            &NewAssessment {
                classifier: "jev-1.13.0",
                importance: domain::email::Importance::parse(importance).expect("an importance"),
                reply_need: letter
                    .reply_need
                    .map(|need| domain::email::ReplyNeed::parse(need).expect("a reply need")),
                gist: &format!("Gist of {}", letter.subject),
                rule: "known_correspondent",
                kind: domain::feedback::ContentKind::Personal,
            },
        )
        .await
        .expect("assessment");
    assert!(recorded);
}

/// Two accounts: `personal` updated, with seven important letters (two needing a reply), one
/// other and one unassessed; `work` awaiting its first update.
async fn mailbox(app: &TestApp) -> Store {
    let store = app.db.store_as("async-worker").await;
    store
        .email()
        .ensure_accounts(&["personal".into(), "work".into()])
        .await
        .expect("accounts");
    let letters = [
        ("m1", "ada@example.com", "Question one", Some("needs_reply")),
        ("m2", "bob@example.com", "Note one", Some("for_your_attention")),
        ("m3", "ada@example.com", "Question two", Some("needs_reply")),
        ("m4", "bob@example.com", "Note two", None),
        ("m5", "cy@example.com", "Slides", Some("for_your_attention")),
        ("m6", "dee@example.com", "Dinner", None),
        ("m7", "eve@example.com", "Garden", None),
    ];
    for (minute, (id, from, subject, reply_need)) in (0_i64..).zip(letters) {
        let letter = Letter {
            id,
            from,
            subject,
            body: "Plain words; 100% real_text.",
            minute,
            labels: &["INBOX"],
            importance: Some("important"),
            reply_need,
        };
        deliver(&store, "personal", &letter).await;
    }
    let news = Letter {
        id: "m8",
        from: "news@letters.example",
        subject: "This week",
        body: "Ten things.",
        minute: 10,
        labels: &["INBOX"],
        importance: Some("other"),
        reply_need: None,
    };
    deliver(&store, "personal", &news).await;
    let fresh = Letter {
        id: "m9",
        from: "fay@example.com",
        subject: "Unassessed",
        body: "Just in.",
        minute: 11,
        labels: &["INBOX"],
        importance: None,
        reply_need: None,
    };
    deliver(&store, "personal", &fresh).await;
    completed_update(&store).await;
    store
}

/// Records the `personal` account's first update as completed (owner@example.org).
pub(crate) async fn completed_update(store: &Store) {
    store
        .email()
        .update_completed(
            &"personal".into(),
            Some("owner@example.org"),
            "100",
            Some(jiff::Timestamp::UNIX_EPOCH),
        )
        .await
        .expect("updated");
}

fn subjects(page: &Value) -> Vec<&str> {
    page["threads"]
        .as_array()
        .expect("threads")
        .iter()
        .map(|thread| thread["subject"].as_str().expect("subject"))
        .collect()
}

fn thread_id<'a>(page: &'a Value, subject: &str) -> &'a str {
    page["threads"]
        .as_array()
        .expect("threads")
        .iter()
        .find(|thread| thread["subject"] == subject)
        .and_then(|thread| thread["thread_id"].as_str())
        .expect("thread")
}

#[tokio::test]
async fn accounts_report_freshness_and_the_inbox_pages_filters_and_reads() {
    let app = app().await;
    mailbox(&app).await;

    let (status, accounts) = app.get_json("/v1/email/accounts").await;
    assert_eq!(status, 200);
    let accounts = accounts["accounts"].as_array().expect("accounts").clone();
    assert_eq!(accounts.len(), 2);
    assert_eq!(accounts[0]["account_id"], "personal");
    assert_eq!(accounts[0]["freshness"], "current");
    assert_eq!(accounts[0]["address"], "owner@example.org");
    assert_eq!(accounts[0]["spam_supported"], true);
    assert_eq!(accounts[0]["unsubscribe_supported"], false);
    assert_eq!(accounts[1]["freshness"], "pending");
    assert_eq!(accounts[1]["updated_at"], Value::Null);
    // The junk first pass is off, and the async worker has not looked yet.
    assert_eq!(
        accounts[0]["junk_filter"],
        json!({"mode": "off", "in_force": null, "reason": null})
    );

    // The initial request: the five most important, needing a reply first.
    let (status, first) = app.get_json("/v1/email/threads").await;
    assert_eq!(status, 200);
    assert_eq!(
        subjects(&first),
        ["Question two", "Question one", "Slides", "Note one", "Garden"]
    );
    assert_eq!(first["threads"][0]["state"], "needs_reply");
    assert_eq!(first["threads"][2]["state"], "for_your_attention");
    assert_eq!(first["threads"][4]["state"], Value::Null);
    assert_eq!(first["threads"][0]["place"], "inbox");
    assert_eq!(first["threads"][0]["classifier"], "jev-1.13.0");
    assert_eq!(first["threads"][0]["gist"], "Gist of Question two");
    assert_eq!(
        first["threads"][0]["correspondents"],
        json!([{ "name": null, "address": "ada@example.com" }])
    );
    let cursor = first["next_cursor"].as_str().expect("more follow");
    let (_, second) = app.get_json(&format!("/v1/email/threads?cursor={cursor}")).await;
    assert_eq!(subjects(&second), ["Dinner", "Note two"]);
    assert_eq!(second["next_cursor"], Value::Null);

    // An empty cursor is the first page.
    let (status, again) = app.get_json("/v1/email/threads?cursor=").await;
    assert_eq!(status, 200);
    assert_eq!(subjects(&again), subjects(&first));

    // A cursor of one view is refused by the other; an altered one too; a page too large.
    for (path, status, code) in [
        (
            format!("/v1/email/threads?view=other&cursor={cursor}"),
            400,
            "invalid_cursor",
        ),
        ("/v1/email/threads?cursor=AAAA".to_owned(), 400, "invalid_cursor"),
        ("/v1/email/threads?limit=101".to_owned(), 400, "invalid_request"),
        (
            "/v1/email/threads?account_id=nobody".to_owned(),
            404,
            "email_account_not_found",
        ),
        (
            "/v1/email/threads?account_id=Not%20an%20id".to_owned(),
            400,
            "invalid_request",
        ),
        ("/v1/email/threads?q=".to_owned(), 400, "invalid_request"),
        (
            format!("/v1/email/threads?q={}", "w".repeat(201)),
            400,
            "invalid_request",
        ),
        ("/v1/email/threads?q=a%00b".to_owned(), 400, "invalid_request"),
        ("/v1/email/threads?view=all".to_owned(), 400, "invalid_request"),
    ] {
        expect_problem(get(&app, &path).await, status, code).await;
    }

    // Other mail: everything else, newest first.
    let (_, other) = app.get_json("/v1/email/threads?view=other").await;
    assert_eq!(subjects(&other), ["Unassessed", "This week"]);
    assert_eq!(other["threads"][0]["importance"], Value::Null);
    assert_eq!(other["threads"][1]["importance"], "other");

    // Filters: an account (unknown → 404, one without mail → nothing) and words, literally.
    let (_, work) = app.get_json("/v1/email/threads?account_id=work").await;
    assert_eq!(subjects(&work), Vec::<&str>::new());
    let (_, found) = app.get_json("/v1/email/threads?q=question&limit=10").await;
    assert_eq!(subjects(&found), ["Question two", "Question one"]);
    let (_, literal) = app.get_json("/v1/email/threads?q=100%25%20real_text&limit=10").await;
    assert_eq!(subjects(&literal).len(), 7);
    let (_, none) = app.get_json("/v1/email/threads?q=100_%25&limit=10").await;
    assert_eq!(subjects(&none), Vec::<&str>::new());

    // The reading pane: text and attachment metadata, never bytes.
    let slides = thread_id(&first, "Slides");
    let (status, detail) = app.get_json(&format!("/v1/email/threads/{slides}")).await;
    assert_eq!(status, 200);
    assert_eq!(detail["subject"], "Slides");
    assert_eq!(detail["messages"][0]["text"], "Plain words; 100% real_text.");
    assert_eq!(
        detail["messages"][0]["attachments"],
        json!([{ "filename": "slides.pdf", "media_type": "application/pdf", "size_bytes": 2048 }])
    );
    assert_eq!(detail["messages"][0]["to"][0]["address"], "owner@example.org");
    not_found(&app, &[(Method::GET, "/v1/email/threads/{}")], "email_thread_not_found").await;
}

/// Email answers hold mail (subjects, correspondents, text, gists): no cache keeps any of them,
/// errors included.
#[tokio::test]
async fn email_answers_are_never_stored_by_a_cache() {
    let app = app().await;
    mailbox(&app).await;
    let (_, first) = app.get_json("/v1/email/threads").await;
    let thread = first["threads"][0]["thread_id"].as_str().expect("thread id").to_owned();
    for path in [
        "/v1/email/accounts".to_owned(),
        "/v1/email/threads".to_owned(),
        "/v1/email/threads?view=other".to_owned(),
        format!("/v1/email/threads/{thread}"),
        "/v1/email/threads/00000000-0000-0000-0000-000000000000".to_owned(),
        "/v1/email/learning".to_owned(),
    ] {
        let response = get(&app, &path).await;
        assert_eq!(
            response
                .headers()
                .get("cache-control")
                .map(|value| value.to_str().expect("ascii")),
            Some("no-store"),
            "{path} answered {}",
            response.status()
        );
    }
    let unauthenticated = reqwest::get(format!("{}/v1/email/accounts", app.base))
        .await
        .expect("send");
    assert_eq!(unauthenticated.status(), 401);
}

async fn post(app: &TestApp, path: &str) -> reqwest::Response {
    app.send(Method::POST, path).await
}

/// Each of `paths` (`{}` standing for the id) answers 404 `code`, for an id that is no UUID and
/// for one nothing has.
async fn not_found(app: &TestApp, paths: &[(Method, &str)], code: &str) {
    for missing in ["not-an-id".to_owned(), uuid::Uuid::new_v4().to_string()] {
        for (method, path) in paths {
            let path = path.replace("{}", &missing);
            let response = app.request(method.clone(), &path).send().await.expect("send");
            expect_problem(response, 404, code).await;
        }
    }
}

async fn get(app: &TestApp, path: &str) -> reqwest::Response {
    app.send(Method::GET, path).await
}

/// The operation an accepted write answered with, read again.
async fn operation(app: &TestApp, accepted: &Value) -> (u16, Value) {
    let id = accepted["operation_id"].as_str().expect("an operation id");
    app.get_json(&format!("/v1/email/operations/{id}")).await
}

/// The next queued write, claimed by `worker-1`.
async fn claim(worker: &Store) -> ClaimedWrite {
    let claimed = worker
        .email()
        .claim_write("worker-1", std::time::Duration::from_secs(30))
        .await
        .expect("claim");
    claimed.expect("queued")
}

/// Marks the claimed write dispatching: whether it was still `worker-1`'s.
async fn dispatch(worker: &Store, claimed: &ClaimedWrite) -> bool {
    let email = worker.email();
    email
        .mark_dispatching(claimed.operation.id, "worker-1")
        .await
        .expect("mark")
}

async fn settle(worker: &Store, claimed: &ClaimedWrite, outcome: WriteOutcome) {
    worker.email().settle_write(claimed, &outcome).await.expect("settle");
}

#[tokio::test]
async fn archive_and_spam_are_operations_the_worker_settles() {
    let app = app().await;
    mailbox(&app).await;
    let worker = app.db.store_as("worker").await;
    let (_, first) = app.get_json("/v1/email/threads?limit=20").await;
    let garden = thread_id(&first, "Garden").to_owned();

    let (status, archive) = json(post(&app, &format!("/v1/email/threads/{garden}/archive")).await).await;
    assert_eq!(status, 202, "{archive}");
    assert_eq!(archive["kind"], "archive");
    assert_eq!(archive["state"], "queued");
    assert_eq!(archive["thread_id"], garden.as_str());
    // One unsettled change per conversation.
    let pending = expect_problem(
        post(&app, &format!("/v1/email/threads/{garden}/spam")).await,
        409,
        "email_write_pending",
    )
    .await;
    assert!(
        pending["detail"]
            .as_str()
            .expect("detail")
            .contains(archive["operation_id"].as_str().expect("id"))
    );

    // The worker runs it: claimed, dispatching, settled with the labels the provider answered.
    let claimed = claim(&worker).await;
    assert!(dispatch(&worker, &claimed).await);
    let (_, dispatching) = operation(&app, &archive).await;
    assert_eq!(dispatching["state"], "dispatching");
    settle(&worker, &claimed, WriteOutcome::Succeeded(vec![("m7".into(), vec![])])).await;
    let (status, settled) = operation(&app, &archive).await;
    assert_eq!(status, 200);
    assert_eq!(settled["state"], "succeeded");
    assert_eq!(settled["error"], Value::Null);

    // Handled: gone from the priority inbox, in Other mail with its state line.
    let (_, inbox) = app.get_json("/v1/email/threads?limit=20").await;
    assert!(!subjects(&inbox).contains(&"Garden"));
    let (_, other) = app.get_json("/v1/email/threads?view=other").await;
    let row = other["threads"]
        .as_array()
        .expect("threads")
        .iter()
        .find(|thread| thread["thread_id"] == garden.as_str())
        .expect("in Other mail")
        .clone();
    assert_eq!(
        (row["place"].as_str(), row["state"].as_str()),
        (Some("archived"), Some("handled"))
    );
    // Archived: not archivable or reportable again, but movable back.
    for path in ["archive", "spam", "not-spam"] {
        expect_problem(
            post(&app, &format!("/v1/email/threads/{garden}/{path}")).await,
            409,
            "email_write_not_applicable",
        )
        .await;
    }
    let (status, back) = json(post(&app, &format!("/v1/email/threads/{garden}/move-to-inbox")).await).await;
    assert_eq!((status, back["kind"].as_str()), (202, Some("move_to_inbox")));

    // An uncertain outcome is a settled status the client can read, and blocks a second write.
    let dinner = thread_id(&first, "Dinner").to_owned();
    let (_, spam) = json(post(&app, &format!("/v1/email/threads/{dinner}/spam")).await).await;
    assert_eq!(spam["kind"], "report_spam");
    let claimed = loop {
        let claimed = claim(&worker).await;
        if claimed.operation.id.to_string() == spam["operation_id"] {
            break claimed;
        }
        dispatch(&worker, &claimed).await;
        settle(&worker, &claimed, WriteOutcome::Failed("mail.refused".into())).await;
    };
    assert!(dispatch(&worker, &claimed).await);
    settle(
        &worker,
        &claimed,
        WriteOutcome::Uncertain("mail.outcome_unknown".into()),
    )
    .await;
    let (_, uncertain) = operation(&app, &spam).await;
    assert_eq!(
        (uncertain["state"].as_str(), uncertain["error"].as_str()),
        (Some("uncertain"), Some("mail.outcome_unknown"))
    );
    expect_problem(
        post(&app, &format!("/v1/email/threads/{dinner}/spam")).await,
        409,
        "email_write_pending",
    )
    .await;

    not_found(
        &app,
        &[(Method::GET, "/v1/email/operations/{}")],
        "email_operation_not_found",
    )
    .await;
    not_found(
        &app,
        &[(Method::POST, "/v1/email/threads/{}/archive")],
        "email_thread_not_found",
    )
    .await;
}

#[tokio::test]
async fn a_refresh_is_admitted_once_a_minute_and_the_spam_flag_clears_without_a_write() {
    let app = app().await;
    mailbox(&app).await;
    let (status, first) = json(post(&app, "/v1/email/accounts/personal/refresh").await).await;
    assert_eq!(status, 202);
    assert_eq!(first["admitted"], true);
    assert_eq!(first["operation"]["kind"], "refresh");
    assert_eq!(first["operation"]["thread_id"], Value::Null);
    let (status, again) = json(post(&app, "/v1/email/accounts/personal/refresh").await).await;
    assert_eq!(status, 202);
    assert_eq!(again["admitted"], false);
    assert_eq!(again["operation"]["operation_id"], first["operation"]["operation_id"]);
    // Another account is admitted on its own.
    let (_, work) = json(post(&app, "/v1/email/accounts/work/refresh").await).await;
    assert_eq!(work["admitted"], true);
    for nobody in ["nobody", "Not%20an%20id", "a%00b"] {
        expect_problem(
            post(&app, &format!("/v1/email/accounts/{nobody}/refresh")).await,
            404,
            "email_account_not_found",
        )
        .await;
    }

    // The junk first pass keeps the unassessed conversation out as spam, as the async worker
    // records it: in Other mail, flagged, with its explanation.
    let worker = app.db.store_as("async-worker").await;
    let waiting = worker
        .email()
        .waiting_threads(&"personal".into(), 10)
        .await
        .expect("waiting");
    let fresh = waiting
        .iter()
        .find(|thread| thread.message.provider_message_id == "m9")
        .expect("m9 waits");
    let account: domain::ids::AccountId = "personal".into();
    let print = format!("{:064x}", 9);
    let filtered = worker
        .email()
        .record_filtered(
            &store::NewJudgment {
                account_id: &account,
                thread: fresh.thread,
                provider_message_id: "m9",
                fingerprint: &print,
                mode: domain::junk::JunkMode::Filter,
                policy: domain::junk::JUNK_POLICY,
                model: "steward-junk-rules-1",
                judgment: Some((domain::junk::JunkCategory::Spam, 0.9995)),
                protection: None,
                outcome: domain::junk::JunkOutcome::Filtered,
            },
            &NewAssessment {
                classifier: "jev-1.13.0",
                importance: domain::email::Importance::Other,
                reply_need: None,
                gist: "Just in.",
                rule: "junk_filter",
                kind: domain::feedback::ContentKind::Personal,
            },
            Some("fay@example.com"),
            jiff::civil::date(2026, 11, 26),
        )
        .await
        .expect("filtered");
    assert_eq!(filtered, store::Filtering::Filtered);
    let suspect = fresh.thread.as_uuid().to_string();
    let (_, other) = app.get_json("/v1/email/threads?view=other&limit=20").await;
    let row = other["threads"]
        .as_array()
        .expect("threads")
        .iter()
        .find(|thread| thread["thread_id"] == suspect.as_str())
        .expect("in Other mail");
    assert_eq!(row["suspected_spam"], true);
    assert_eq!(row["importance"], "other");
    assert_eq!(row["junk"]["category"], "spam");
    assert_eq!(row["junk"]["mode"], "filter");
    assert_eq!(
        row["junk"]["explanation"],
        "Kept out of Important by the junk filter: it reads as spam (99.9% sure). Mark it Important or Not spam to bring it back."
    );
    let (_, flagged) = app.get_json(&format!("/v1/email/threads/{suspect}")).await;
    assert_eq!(flagged["suspected_spam"], true);
    let operations_before = app.count("email_operations").await;
    let (status, cleared) = json(post(&app, &format!("/v1/email/threads/{suspect}/spam-flag")).await).await;
    assert_eq!(status, 200);
    assert_eq!(cleared["suspected_spam"], false);
    assert_eq!(cleared["junk"], Value::Null, "no longer kept out");
    assert_eq!(cleared["place"], "inbox");
    assert_eq!(
        app.count("email_operations").await,
        operations_before,
        "no mailbox write"
    );
}

pub(crate) async fn send(app: &TestApp, method: Method, path: &str, body: Value) -> (u16, Value) {
    json(app.request(method, path).json(&body).send().await.expect("send")).await
}

#[tokio::test]
async fn drafts_are_versioned_and_a_stale_save_gets_both_versions() {
    let app = app().await;
    mailbox(&app).await;
    let (_, first) = app.get_json("/v1/email/threads").await;
    let thread = thread_id(&first, "Question two").to_owned();

    // Exactly one place, known, and plausible addresses.
    for (body, status, code, field) in [
        (
            json!({ "to": ["ada@example.com"] }),
            422,
            "validation_failed",
            "account_id",
        ),
        (
            json!({ "account_id": "personal", "thread_id": thread, "to": [] }),
            422,
            "validation_failed",
            "account_id",
        ),
        (
            json!({ "account_id": "nobody" }),
            409,
            "unknown_email_account",
            "account_id",
        ),
        (
            json!({ "thread_id": uuid::Uuid::new_v4() }),
            409,
            "unknown_email_thread",
            "thread_id",
        ),
        (
            json!({ "thread_id": thread, "to": ["Ada <ada@example.com>"] }),
            422,
            "validation_failed",
            "to.0",
        ),
        (
            json!({ "thread_id": thread, "subject": "Two\r\nBcc: eve@example.com" }),
            422,
            "validation_failed",
            "subject",
        ),
    ] {
        let response = app
            .request(Method::POST, "/v1/email/drafts")
            .json(&body)
            .send()
            .await
            .expect("send");
        let problem = expect_problem(response, status, code).await;
        assert_eq!(problem["field"], field, "{body}");
    }
    assert_eq!(app.count("email_drafts").await, 0, "nothing stored");

    let (location, created) = app
        .create(
            "/v1/email/drafts",
            json!({ "thread_id": thread, "to": ["ada@example.com"], "subject": "Re: Question two", "body": "Yes." }),
        )
        .await;
    assert_eq!(
        location,
        format!("/v1/email/drafts/{}", created["draft_id"].as_str().expect("id"))
    );
    assert_eq!(
        (created["revision"].as_u64(), created["author"].as_str()),
        (Some(1), Some("owner"))
    );
    assert_eq!(created["account_id"], "personal");
    assert_eq!(created["thread_id"], thread.as_str());

    let (status, second) = send(
        &app,
        Method::PUT,
        &location,
        json!({ "expected_revision": 1, "to": ["ada@example.com"], "subject": "Re: Question two", "body": "Yes, Friday." }),
    )
    .await;
    assert_eq!((status, second["revision"].as_u64()), (200, Some(2)));

    // Another tab saves from revision 1: refused, with both versions.
    let response = app
        .request(Method::PUT, &location)
        .json(&json!({ "expected_revision": 1, "body": "No." }))
        .send()
        .await
        .expect("send");
    let conflict = expect_problem(response, 409, "revision_mismatch").await;
    assert_eq!(conflict["revision"], 2);
    assert_eq!(conflict["server"]["body"], "Yes, Friday.");
    assert_eq!(conflict["server"]["revision"], 2);
    assert_eq!(conflict["local"]["body"], "No.");
    let (_, read) = app.get_json(&location).await;
    assert_eq!(read["body"], "Yes, Friday.");

    let (status, restored) = send(
        &app,
        Method::POST,
        &format!("{location}/revisions/1/restore"),
        json!({ "expected_revision": 2 }),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        (restored["revision"].as_u64(), restored["restored_from"].as_u64()),
        (Some(3), Some(1))
    );
    assert_eq!(restored["body"], "Yes.");
    let (_, history) = app.get_json(&format!("{location}/revisions")).await;
    let bodies: Vec<&str> = history["revisions"]
        .as_array()
        .expect("revisions")
        .iter()
        .map(|revision| revision["body"].as_str().expect("body"))
        .collect();
    assert_eq!(bodies, ["Yes.", "Yes, Friday.", "Yes."]);

    let (status, _) = send(
        &app,
        Method::POST,
        &format!("{location}/revisions/9/restore"),
        json!({ "expected_revision": 3 }),
    )
    .await;
    assert_eq!(status, 404);
    let stale = app
        .request(Method::POST, &format!("{location}/revisions/2/restore"))
        .json(&json!({ "expected_revision": 2 }))
        .send()
        .await
        .expect("send");
    let conflict = expect_problem(stale, 409, "revision_mismatch").await;
    assert_eq!(
        (
            conflict["server"]["revision"].as_u64(),
            conflict["local"]["body"].as_str()
        ),
        (Some(3), Some("Yes, Friday."))
    );
    not_found(
        &app,
        &[
            (Method::GET, "/v1/email/drafts/{}"),
            (Method::GET, "/v1/email/drafts/{}/revisions"),
        ],
        "email_draft_not_found",
    )
    .await;
    assert_eq!(
        app.count("email_operations").await,
        0,
        "saving a draft writes nothing to the mailbox"
    );
}

#[tokio::test]
async fn an_account_reports_the_junk_mode_in_force_and_why() {
    let app = TestApp::spawn_with(
        Env::default()
            .set("AGENT_EMAIL_MODE_ENABLED", "1")
            .set("AGENT_EMAIL_JUNK_FILTER_MODE", "filter"),
    )
    .await;
    let store = mailbox(&app).await;
    let (_, accounts) = app.get_json("/v1/email/accounts").await;
    assert_eq!(
        accounts["accounts"][0]["junk_filter"],
        json!({"mode": "filter", "in_force": null, "reason": null}),
        "the async worker has not looked yet"
    );
    // As the async worker found it: no packet, so filter behaves as shadow.
    let found = |configured, in_force, reason| store::JunkStatus {
        configured,
        in_force,
        reason,
    };
    use domain::junk::{JunkMode, JunkReason};
    store
        .email()
        .set_junk_status(
            &"personal".into(),
            found(JunkMode::Filter, JunkMode::Shadow, Some(JunkReason::PacketMissing)),
        )
        .await
        .expect("status");
    let (_, accounts) = app.get_json("/v1/email/accounts").await;
    assert_eq!(
        accounts["accounts"][0]["junk_filter"],
        json!({"mode": "filter", "in_force": "shadow", "reason": "packet_missing"})
    );
    // What it found under another configuration says nothing about this one.
    store
        .email()
        .set_junk_status(&"personal".into(), found(JunkMode::Pilot, JunkMode::Pilot, None))
        .await
        .expect("status");
    let (_, accounts) = app.get_json("/v1/email/accounts").await;
    assert_eq!(accounts["accounts"][0]["junk_filter"]["in_force"], Value::Null);
}
