//! Email mode's provider writes against the stand-in, as the api login (requests) and the worker
//! login (writes): archive and move back, report spam and Not spam restoring exactly the
//! reported threads, and a write whose connection dropped settled by reading, never repeated.

use std::sync::Arc;
use std::time::Duration;

use domain::email::MailboxWrite;
use domain::ids::{EmailOperationId, ThreadId};
use email::refresh::Refresher;
use email::writes::{WritePace, Writer};
use mail_mcp::accounts::{Account, ReadAccount};
use mail_mcp::document::{CredentialDocument, MailScope};
use store::{Store, WriteRequest};
use testkit::TestDatabase;
use testkit::gmail::{FakeGmail, MODIFY, READONLY, SEND, SendFault};
use uuid::Uuid;

use crate::refresh::gmail;

/// A credential document for the `owner` mailbox with one scope.
pub fn document(fake: &FakeGmail, scope: MailScope, url: &str) -> CredentialDocument {
    let refresh = fake.grant("owner", url);
    let json =
        format!(r#"{{"client_id":"client","client_secret":"secret","refresh_token":"{refresh}","scope":"{url}"}}"#);
    CredentialDocument::parse(json.as_bytes(), scope, None).expect("document")
}

struct Mailbox {
    fake: FakeGmail,
    db: TestDatabase,
    api: Store,
    refresher: Refresher,
    reader: ReadAccount,
    writer: Writer,
}

async fn mailbox() -> Mailbox {
    let fake = FakeGmail::start().await;
    fake.mailbox("owner", "owner@example.org");
    let (db, refresher) = crate::refresh::recorded(&fake, 24).await;
    let account = Account {
        account_id: "personal".into(),
        read: document(&fake, MailScope::Read, READONLY),
        write: document(&fake, MailScope::Write, MODIFY),
        send: document(&fake, MailScope::Send, SEND),
    };
    let reader = ReadAccount {
        account_id: "personal".into(),
        read: account.read.clone(),
    };
    Mailbox {
        refresher,
        writer: Writer {
            store: db.store_as("worker").await,
            gmail: gmail(&fake),
            accounts: vec![account],
            worker_id: "worker-test".into(),
            pace: WritePace {
                poll: Duration::from_millis(20),
                lease: Duration::from_secs(30),
            },
        },
        api: db.store_as("api").await,
        reader,
        db,
        fake,
    }
}

impl Mailbox {
    async fn refresh(&self) {
        self.refresher.update(&self.reader).await.expect("refresh");
    }

    async fn thread(&self, subject: &str) -> ThreadId {
        let (id,): (Uuid,) = sqlx::query_as("SELECT id FROM email_threads WHERE subject = $1")
            .bind(subject)
            .fetch_one(&self.db.pool)
            .await
            .expect("thread");
        id.into()
    }

    /// (labels, handled, reported) of a projected thread.
    async fn place(&self, thread: ThreadId) -> (Vec<String>, bool, bool) {
        sqlx::query_as(
            "SELECT labels, handled_at IS NOT NULL, reported_at IS NOT NULL FROM email_threads WHERE id = $1",
        )
        .bind(thread.as_uuid())
        .fetch_one(&self.db.pool)
        .await
        .expect("thread")
    }

    async fn request(&self, thread: ThreadId, kind: MailboxWrite) -> EmailOperationId {
        match self.api.email().request_write(thread, kind).await.expect("request") {
            WriteRequest::Accepted(operation) => operation.id,
            other => panic!("{kind:?} refused: {other:?}"),
        }
    }

    async fn state(&self, operation: EmailOperationId) -> (String, Option<String>, bool) {
        let row = self.api.email().operation(operation).await.expect("read").expect("row");
        (row.state.to_string(), row.error, row.reconciled_at.is_some())
    }

    fn modify_calls(&self) -> usize {
        self.fake
            .calls()
            .iter()
            .filter(|(_, _, call)| call == "POST threads.modify")
            .count()
    }
}

fn strings(values: &[&str]) -> Vec<String> {
    values.iter().map(|value| (*value).to_owned()).collect()
}

#[tokio::test]
async fn archive_and_move_back_change_the_provider_labels_once_each() {
    let mail = mailbox().await;
    mail.fake.deliver(
        "owner",
        "ada@example.com",
        "Lunch",
        "Are you free on Friday?",
        &["INBOX", "UNREAD"],
    );
    mail.refresh().await;
    let lunch = mail.thread("Lunch").await;

    let archive = mail.request(lunch, MailboxWrite::Archive).await;
    // One write of a thread at a time.
    assert!(matches!(
        mail.api.email().request_write(lunch, MailboxWrite::MoveToInbox).await.expect("request"),
        WriteRequest::Pending(pending) if pending.id == archive
    ));
    assert_eq!(mail.state(archive).await, ("queued".into(), None, false));
    mail.writer.pass().await.expect("pass");
    assert_eq!(mail.state(archive).await, ("succeeded".into(), None, false));
    assert_eq!(mail.place(lunch).await, (strings(&["UNREAD"]), true, false));
    assert!(mail.fake.messages("owner", "INBOX").is_empty());
    // Archived: archiving again does not apply; moving back does.
    assert_eq!(
        mail.api
            .email()
            .request_write(lunch, MailboxWrite::Archive)
            .await
            .expect("request"),
        WriteRequest::NotApplicable("archived")
    );
    let back = mail.request(lunch, MailboxWrite::MoveToInbox).await;
    mail.writer.pass().await.expect("pass");
    assert_eq!(mail.state(back).await, ("succeeded".into(), None, false));
    assert_eq!(mail.place(lunch).await, (strings(&["INBOX", "UNREAD"]), false, false));
    assert_eq!(mail.modify_calls(), 2);
    assert_eq!(
        mail.api
            .email()
            .request_write(Uuid::now_v7().into(), MailboxWrite::Archive)
            .await
            .expect("request"),
        WriteRequest::UnknownThread
    );
    // The worker wrote with the modify document and read nothing with it.
    let calls = mail.fake.calls();
    assert!(
        calls
            .iter()
            .all(|(_, scope, call)| (call == "POST threads.modify") == (scope == MODIFY)),
        "{calls:?}"
    );
}

#[tokio::test]
async fn not_spam_returns_exactly_the_reported_threads() {
    let mail = mailbox().await;
    mail.fake
        .deliver("owner", "a@example.com", "First offer", "Buy now.", &["INBOX"]);
    mail.fake
        .deliver("owner", "b@example.com", "Second offer", "Buy later.", &["INBOX"]);
    mail.fake
        .deliver("owner", "c@example.com", "Filtered", "Already spam.", &["SPAM"]);
    mail.fake
        .deliver("owner", "d@example.com", "Keep me", "Hello.", &["INBOX"]);
    mail.refresh().await;
    let (first, second, filtered, kept) = (
        mail.thread("First offer").await,
        mail.thread("Second offer").await,
        mail.thread("Filtered").await,
        mail.thread("Keep me").await,
    );
    let reports = [
        mail.request(first, MailboxWrite::ReportSpam).await,
        mail.request(second, MailboxWrite::ReportSpam).await,
    ];
    mail.writer.pass().await.expect("pass");
    for (thread, report) in [(first, reports[0]), (second, reports[1])] {
        assert_eq!(mail.state(report).await.0, "succeeded");
        assert_eq!(mail.place(thread).await, (strings(&["SPAM"]), false, true));
    }
    // A reported thread cannot be archived or moved back; only Not spam applies.
    assert_eq!(
        mail.api
            .email()
            .request_write(first, MailboxWrite::MoveToInbox)
            .await
            .expect("request"),
        WriteRequest::NotApplicable("in_spam")
    );
    let undo = [
        mail.request(first, MailboxWrite::NotSpam).await,
        mail.request(second, MailboxWrite::NotSpam).await,
    ];
    mail.writer.pass().await.expect("pass");
    for (thread, undo) in [(first, undo[0]), (second, undo[1])] {
        assert_eq!(mail.state(undo).await.0, "succeeded");
        assert_eq!(mail.place(thread).await, (strings(&["INBOX"]), false, false));
    }
    // Exactly those: the provider's own spam stays, the untouched thread too.
    assert_eq!(mail.place(filtered).await, (strings(&["SPAM"]), false, false));
    assert_eq!(mail.place(kept).await, (strings(&["INBOX"]), false, false));
    let spam: Vec<String> = mail
        .fake
        .messages("owner", "SPAM")
        .into_iter()
        .map(|m| m.subject)
        .collect();
    assert_eq!(spam, ["Filtered"]);
    assert_eq!(mail.modify_calls(), 4);
}

#[tokio::test]
async fn a_dropped_connection_leaves_the_write_uncertain_until_the_labels_settle_it_never_repeated() {
    let mail = mailbox().await;
    mail.fake
        .deliver("owner", "ada@example.com", "Applied", "One.", &["INBOX"]);
    mail.fake
        .deliver("owner", "bob@example.com", "Lost", "Two.", &["INBOX"]);
    mail.refresh().await;
    let (applied, lost) = (mail.thread("Applied").await, mail.thread("Lost").await);

    // The provider applies the change, then the connection drops before the answer.
    mail.fake.fail_next_modify(SendFault::DropConnection);
    let first = mail.request(applied, MailboxWrite::Archive).await;
    mail.writer.pass().await.expect("pass");
    let (state, error, reconciled) = mail.state(first).await;
    assert_eq!(
        (state.as_str(), error, reconciled),
        ("succeeded", None, true),
        "reconciled by reading the labels in the same pass"
    );
    assert_eq!(mail.place(applied).await, (vec![], true, false));
    assert_eq!(mail.modify_calls(), 1, "never sent again");

    // The connection drops before the provider acts: the labels show nothing happened.
    mail.fake.fail_next_modify(SendFault::DropUnsent);
    let second = mail.request(lost, MailboxWrite::Archive).await;
    mail.writer.pass().await.expect("pass");
    assert_eq!(
        mail.state(second).await,
        ("failed".into(), Some(store::NOT_APPLIED.into()), true)
    );
    assert_eq!(mail.place(lost).await, (strings(&["INBOX"]), false, false));
    assert_eq!(mail.modify_calls(), 2, "never sent again");
    mail.writer.pass().await.expect("pass");
    assert_eq!(mail.modify_calls(), 2);
    // The owner may ask again: a new operation, sent once.
    let again = mail.request(lost, MailboxWrite::Archive).await;
    mail.writer.pass().await.expect("pass");
    assert_eq!(mail.state(again).await.0, "succeeded");
    assert_eq!(mail.modify_calls(), 3);
}

#[tokio::test]
async fn a_dispatch_left_by_a_stopped_worker_is_uncertain_and_reconciled() {
    let mail = mailbox().await;
    mail.fake
        .deliver("owner", "ada@example.com", "Stranded", "One.", &["INBOX"]);
    mail.refresh().await;
    let thread = mail.thread("Stranded").await;
    let operation = mail.request(thread, MailboxWrite::Archive).await;
    // A worker claims it, marks it dispatching, and dies before any request.
    let clock = Arc::new(testkit::ShiftedClock::default());
    let dead = mail.db.store_as("worker").await.with_clock(clock.clone());
    let claimed = dead
        .email()
        .claim_write("dead-worker", Duration::from_secs(30))
        .await
        .expect("claim")
        .expect("queued");
    assert!(
        dead.email()
            .mark_dispatching(claimed.operation.id, "dead-worker")
            .await
            .expect("mark")
    );
    // Within the lease nothing touches it.
    mail.writer.pass().await.expect("pass");
    assert_eq!(mail.state(operation).await.0, "dispatching");
    // After it, the dispatch is uncertain and the labels settle it: nothing was applied.
    clock.advance(jiff::SignedDuration::from_secs(31));
    let survivor = Writer {
        store: mail.db.store_as("worker").await.with_clock(clock.clone()),
        gmail: mail.writer.gmail.clone(),
        accounts: mail.writer.accounts.clone(),
        worker_id: "survivor".into(),
        pace: WritePace::default(),
    };
    survivor.pass().await.expect("pass");
    assert_eq!(
        mail.state(operation).await,
        ("failed".into(), Some(store::NOT_APPLIED.into()), true)
    );
    assert_eq!(
        mail.modify_calls(),
        0,
        "a dead worker's dispatch is never sent by another"
    );
}
