//! Email mode's versioned drafts (migration 0018), as the api keeps them for the owner: a draft
//! replies in a thread of its account or starts a new message there. A save names the revision
//! its author had (optimistic): it becomes the next revision only if that is still the newest;
//! otherwise it is refused with the newest, so the client can keep both. A restore copies an
//! earlier revision as a new one. The history is never rewritten. Saving is not a mailbox write,
//! and voids a Review & Send freeze nobody approved yet (`email_sends`).

use domain::email::DraftAuthor;
use domain::ids::{AccountId, DraftId, ThreadId};
use domain::mail_tools::DraftMessage;
use jiff::Timestamp;
use uuid::Uuid;
use wire::email::SendState;

use crate::email::Email;
use crate::email::sends::{DraftSend, Freeze, begin_send, clear_for_freeze, draft_send, locked_send, void_unapproved};
use crate::{Result, StoreError, timestamp};

/// What a revision holds: the contract's own type, stored as it is shown.
pub use wire::email::DraftContent;

/// One saved version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DraftRevision {
    pub revision: i32,
    pub content: DraftContent,
    pub author: DraftAuthor,
    /// The revision this one restores.
    pub restored_from: Option<i32>,
    pub created_at: Timestamp,
}

/// A draft with its newest revision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DraftRow {
    pub id: DraftId,
    pub account_id: AccountId,
    /// The thread it replies in; `None` for a new message.
    pub thread: Option<ThreadId>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub newest: DraftRevision,
}

/// A save's (or restore's) answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SaveDraft {
    Saved(DraftRow),
    /// The saver's revision is not the newest: here is the newest, nothing was saved.
    Conflict(DraftRow),
    NotFound,
    /// A restore named a revision the draft does not have.
    UnknownRevision,
    /// The draft may not change: its send was approved and is on its way, was sent, or has an
    /// unknown outcome still being looked for.
    Sending(DraftSend),
}

/// A freeze's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReviewDraft {
    /// Frozen now, or already frozen at this revision and waiting for the owner.
    Frozen(DraftRow, DraftSend),
    /// The reviewed revision is not the newest: here is the newest, nothing was frozen.
    Conflict(DraftRow),
    /// The draft's newest freeze is on its way, sent, or of unknown outcome.
    Busy(DraftSend),
    /// The draft names nobody to send to.
    NoRecipients,
    /// The draft's send session has another active run (a message the owner sent there).
    SessionBusy,
    /// The send tool would refuse the message: why.
    Unsendable(String),
    NotFound,
}

/// Wording the owner endorsed as their writing style.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StyleSampleRow {
    pub id: Uuid,
    pub draft: DraftId,
    pub revision: i32,
    pub text: String,
    pub created_at: Timestamp,
}

#[derive(sqlx::FromRow)]
struct StyleRecord {
    id: Uuid,
    draft: Uuid,
    revision: i32,
    text: String,
    created_at: jiff_sqlx::Timestamp,
}

/// An endorsement's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EndorseStyle {
    Endorsed(StyleSampleRow),
    /// The revision is not the newest (a save came between): nothing is endorsed.
    Conflict(DraftRow),
    /// The revision does not show that wording.
    NotShown,
    /// Learning is paused.
    Paused,
    NotFound,
}

/// Where a new draft goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DraftPlace<'a> {
    /// A new message from this account.
    Account(&'a AccountId),
    /// A reply in this thread, from the thread's account.
    Thread(ThreadId),
}

/// Columns of a draft with its newest revision, `d` and `r`.
const DRAFT_COLUMNS: &str = "d.id, d.account_id, d.thread, d.created_at, d.updated_at, r.revision, r.recipients,
     r.copied, r.subject, r.body, r.author, r.restored_from, r.created_at AS revision_created_at";

#[derive(sqlx::FromRow)]
struct DraftRecord {
    id: Uuid,
    account_id: String,
    thread: Option<Uuid>,
    created_at: jiff_sqlx::Timestamp,
    updated_at: jiff_sqlx::Timestamp,
    #[sqlx(flatten)]
    newest: RevisionRecord,
}

#[derive(sqlx::FromRow)]
struct RevisionRecord {
    revision: i32,
    recipients: Vec<String>,
    copied: Vec<String>,
    subject: String,
    body: String,
    #[sqlx(try_from = "String")]
    author: DraftAuthor,
    restored_from: Option<i32>,
    #[sqlx(rename = "revision_created_at")]
    created_at: jiff_sqlx::Timestamp,
}

impl From<RevisionRecord> for DraftRevision {
    fn from(record: RevisionRecord) -> Self {
        DraftRevision {
            revision: record.revision,
            content: DraftContent {
                to: record.recipients,
                cc: record.copied,
                subject: record.subject,
                body: record.body,
            },
            author: record.author,
            restored_from: record.restored_from,
            created_at: timestamp(record.created_at),
        }
    }
}

impl From<DraftRecord> for DraftRow {
    fn from(record: DraftRecord) -> Self {
        DraftRow {
            id: record.id.into(),
            account_id: record.account_id.into(),
            thread: record.thread.map(ThreadId::from),
            created_at: timestamp(record.created_at),
            updated_at: timestamp(record.updated_at),
            newest: record.newest.into(),
        }
    }
}

/// Locks the draft `id` (lock order: the draft, then its send run); its send session, or `None`
/// when there is no such draft.
pub(crate) async fn lock_draft(conn: &mut sqlx::PgConnection, id: DraftId) -> Result<Option<Option<Uuid>>> {
    let locked: Option<(Option<Uuid>,)> =
        sqlx::query_as("SELECT session_id FROM email_drafts WHERE id = $1 FOR UPDATE")
            .bind(id.as_uuid())
            .fetch_optional(conn)
            .await?;
    Ok(locked.map(|(session,)| session))
}

/// The draft `id` with its newest revision, on `conn`.
pub(crate) async fn read_draft(conn: &mut sqlx::PgConnection, id: DraftId) -> Result<Option<DraftRow>> {
    let record: Option<DraftRecord> = sqlx::query_as(&format!(
        "SELECT {DRAFT_COLUMNS} FROM email_drafts d
         JOIN email_draft_revisions r ON r.draft = d.id AND r.revision = d.revision
         WHERE d.id = $1"
    ))
    .bind(id.as_uuid())
    .fetch_optional(conn)
    .await?;
    Ok(record.map(DraftRow::from))
}

/// Appends revision `revision` of `draft` and makes it the newest, at `now`.
pub(crate) async fn append(
    conn: &mut sqlx::PgConnection,
    draft: DraftId,
    revision: i32,
    content: &DraftContent,
    author: DraftAuthor,
    restored_from: Option<i32>,
    now: jiff_sqlx::Timestamp,
) -> Result<()> {
    sqlx::query(
        "INSERT INTO email_draft_revisions (draft, revision, recipients, copied, subject, body, author, restored_from, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(draft.as_uuid())
    .bind(revision)
    .bind(&content.to)
    .bind(&content.cc)
    .bind(&content.subject)
    .bind(&content.body)
    .bind(author.as_str())
    .bind(restored_from)
    .bind(now)
    .execute(&mut *conn)
    .await?;
    sqlx::query("UPDATE email_drafts SET revision = $2, updated_at = $3 WHERE id = $1")
        .bind(draft.as_uuid())
        .bind(revision)
        .bind(now)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// Creates a draft at `place` with `content` as revision 1, on `conn`; `None` when the account
/// or thread is unknown.
pub(crate) async fn create_draft(
    conn: &mut sqlx::PgConnection,
    place: DraftPlace<'_>,
    content: &DraftContent,
    author: DraftAuthor,
    now: jiff_sqlx::Timestamp,
) -> Result<Option<DraftRow>> {
    let (account_id, thread) = match place {
        DraftPlace::Account(account_id) => {
            let known: Option<(String,)> =
                sqlx::query_as("SELECT account_id FROM email_accounts WHERE account_id = $1")
                    .bind(account_id.as_str())
                    .fetch_optional(&mut *conn)
                    .await?;
            match known {
                Some((account_id,)) => (account_id, None),
                None => return Ok(None),
            }
        }
        DraftPlace::Thread(thread) => {
            let known: Option<(String,)> = sqlx::query_as("SELECT account_id FROM email_threads WHERE id = $1")
                .bind(thread.as_uuid())
                .fetch_optional(&mut *conn)
                .await?;
            match known {
                Some((account_id,)) => (account_id, Some(thread)),
                None => return Ok(None),
            }
        }
    };
    let id = DraftId::from_uuid(Uuid::now_v7());
    sqlx::query(
        "INSERT INTO email_drafts (id, account_id, thread, revision, created_at, updated_at)
         VALUES ($1, $2, $3, 1, $4, $4)",
    )
    .bind(id.as_uuid())
    .bind(&account_id)
    .bind(thread.map(ThreadId::as_uuid))
    .bind(now)
    .execute(&mut *conn)
    .await?;
    append(conn, id, 1, content, author, None, now).await?;
    read_draft(conn, id).await
}

impl Email<'_> {
    /// Creates a draft at `place` with `content` as revision 1; `None` when the account or
    /// thread is unknown.
    pub async fn create_draft(
        self,
        place: DraftPlace<'_>,
        content: &DraftContent,
        author: DraftAuthor,
    ) -> Result<Option<DraftRow>> {
        let now = self.now_sql();
        self.transaction(
            async |conn| create_draft(conn, place, content, author, now).await,
            |_| true,
        )
        .await
    }

    /// The draft `id` with its newest revision.
    pub async fn draft(self, id: DraftId) -> Result<Option<DraftRow>> {
        let mut conn = self.pool.acquire().await?;
        read_draft(&mut conn, id).await
    }

    /// Saves `content` as the next revision of `id` if `expected_revision` is still the newest.
    pub async fn save_draft(
        self,
        id: DraftId,
        expected_revision: i32,
        content: &DraftContent,
        author: DraftAuthor,
    ) -> Result<SaveDraft> {
        self.next_revision(id, expected_revision, author, || Some((content.clone(), None)))
            .await
    }

    /// Copies revision `from` of `id` as its next revision, if `expected_revision` is still the
    /// newest.
    pub async fn restore_draft(self, id: DraftId, from: i32, expected_revision: i32) -> Result<SaveDraft> {
        let history = self.draft_history(id).await?;
        let earlier = history.into_iter().find(|revision| revision.revision == from);
        self.next_revision(id, expected_revision, DraftAuthor::Owner, move || {
            earlier.map(|earlier| (earlier.content, Some(from)))
        })
        .await
    }

    /// The one way a draft gets a new revision: under the draft's row lock, refused with the
    /// newest when `expected_revision` is not it; `next` gives the content (and the revision
    /// it restores), `None` when there is nothing to save.
    async fn next_revision(
        self,
        id: DraftId,
        expected_revision: i32,
        author: DraftAuthor,
        next: impl FnOnce() -> Option<(DraftContent, Option<i32>)> + Send,
    ) -> Result<SaveDraft> {
        let now = self.now_sql();
        self.transaction(
            async |conn| {
                if lock_draft(conn, id).await?.is_none() {
                    return Ok(SaveDraft::NotFound);
                }
                let Some(current) = read_draft(&mut *conn, id).await? else {
                    return Ok(SaveDraft::NotFound);
                };
                let newest = current.newest.revision;
                if newest != expected_revision {
                    return Ok(SaveDraft::Conflict(current));
                }
                let Some((content, restored_from)) = next() else {
                    return Ok(SaveDraft::UnknownRevision);
                };
                // Any later save voids a freeze nobody approved yet.
                if let Err(send) = void_unapproved(conn, id, now).await? {
                    return Ok(SaveDraft::Sending(send));
                }
                append(conn, id, newest + 1, &content, author, restored_from, now).await?;
                Ok(match read_draft(conn, id).await? {
                    Some(saved) => SaveDraft::Saved(saved),
                    None => SaveDraft::NotFound,
                })
            },
            |outcome| matches!(outcome, SaveDraft::Saved(_)),
        )
        .await
    }

    /// Every revision of `id`, oldest first (empty when there is no such draft).
    pub async fn draft_history(self, id: DraftId) -> Result<Vec<DraftRevision>> {
        let records: Vec<RevisionRecord> = sqlx::query_as(
            "SELECT revision, recipients, copied, subject, body, author, restored_from, created_at AS revision_created_at
             FROM email_draft_revisions WHERE draft = $1 ORDER BY revision",
        )
        .bind(id.as_uuid())
        .fetch_all(&self.pool)
        .await?;
        Ok(records.into_iter().map(DraftRevision::from).collect())
    }

    /// Review & Send: freezes the draft's newest revision, if it is still the one reviewed, into
    /// a queued `draft_send` run holding one `send_message` call with exactly its content (see
    /// [`DraftMessage::arguments`]); the worker parks it for the owner's approval.
    pub async fn review_draft(self, freeze: Freeze<'_>) -> Result<ReviewDraft> {
        let now = self.now_sql();
        self.transaction(
            async |conn| {
                let Some(session) = lock_draft(conn, freeze.draft).await? else {
                    return Ok(ReviewDraft::NotFound);
                };
                let Some(draft) = read_draft(conn, freeze.draft).await? else {
                    return Ok(ReviewDraft::NotFound);
                };
                if draft.newest.revision != freeze.revision {
                    return Ok(ReviewDraft::Conflict(draft));
                }
                if let Some(send) = locked_send(conn, freeze.draft).await? {
                    // Asking again for what already waits is answered with it.
                    if matches!(send.state, SendState::Preparing | SendState::AwaitingApproval)
                        && send.revision == freeze.revision
                    {
                        return Ok(ReviewDraft::Frozen(draft, send));
                    }
                    if let Err(send) = clear_for_freeze(conn, send, now).await? {
                        return Ok(ReviewDraft::Busy(send));
                    }
                }
                let content = &draft.newest.content;
                if content.to.is_empty() {
                    return Ok(ReviewDraft::NoRecipients);
                }
                let provider_thread: Option<String> = match draft.thread {
                    Some(thread) => {
                        sqlx::query_scalar("SELECT provider_thread_id FROM email_threads WHERE id = $1")
                            .bind(thread.as_uuid())
                            .fetch_optional(&mut *conn)
                            .await?
                    }
                    None => None,
                };
                let message = DraftMessage {
                    account_id: draft.account_id.as_str(),
                    provider_thread: provider_thread.as_deref(),
                    to: &content.to,
                    cc: &content.cc,
                    subject: &content.subject,
                    body: &content.body,
                };
                if let Some(why) = message.unsendable() {
                    return Ok(ReviewDraft::Unsendable(why));
                }
                let arguments = message.arguments();
                let frozen = begin_send(conn, &freeze, session, &content.subject, &arguments, now).await?;
                let send = draft_send(conn, freeze.draft)
                    .await?
                    .ok_or_else(|| StoreError::Corrupt("a freeze just made is gone".into()))?;
                Ok(if frozen {
                    ReviewDraft::Frozen(draft, send)
                } else {
                    ReviewDraft::SessionBusy
                })
            },
            |outcome| matches!(outcome, ReviewDraft::Frozen(..)),
        )
        .await
    }

    /// Endorses `text`, shown in the saved revision `revision` of `draft`, as the owner's writing
    /// style: only while that revision is the newest (a save conflict prevents it), only wording
    /// it shows, and only while learning runs.
    pub async fn endorse_style(self, draft: DraftId, revision: i32, text: &str) -> Result<EndorseStyle> {
        let now = self.now_sql();
        self.transaction(
            async |conn| {
                if lock_draft(conn, draft).await?.is_none() {
                    return Ok(EndorseStyle::NotFound);
                }
                let Some(current) = read_draft(conn, draft).await? else {
                    return Ok(EndorseStyle::NotFound);
                };
                if current.newest.revision != revision {
                    return Ok(EndorseStyle::Conflict(current));
                }
                let paused: bool = sqlx::query_scalar("SELECT paused_at IS NOT NULL FROM email_learning")
                    .fetch_one(&mut *conn)
                    .await?;
                if paused {
                    return Ok(EndorseStyle::Paused);
                }
                let text = text.trim();
                let shown = &current.newest.content;
                if text.is_empty() || !(shown.body.contains(text) || shown.subject.contains(text)) {
                    return Ok(EndorseStyle::NotShown);
                }
                let record: StyleRecord = sqlx::query_as(
                    "INSERT INTO email_style_samples (id, draft, revision, text, created_at) VALUES ($1, $2, $3, $4, $5)
                     RETURNING id, draft, revision, text, created_at",
                )
                .bind(Uuid::now_v7())
                .bind(draft.as_uuid())
                .bind(revision)
                .bind(text)
                .bind(now)
                .fetch_one(&mut *conn)
                .await?;
                Ok(EndorseStyle::Endorsed(StyleSampleRow {
                    id: record.id,
                    draft: record.draft.into(),
                    revision: record.revision,
                    text: record.text,
                    created_at: timestamp(record.created_at),
                }))
            },
            |outcome| matches!(outcome, EndorseStyle::Endorsed(_)),
        )
        .await
    }

    /// The endorsed wording in force, newest first, at most `limit` passages.
    pub async fn style(self, limit: i64) -> Result<Vec<String>> {
        Ok(sqlx::query_scalar(
            "SELECT text FROM email_style_samples WHERE retired_at IS NULL ORDER BY created_at DESC, id DESC LIMIT $1",
        )
        .bind(limit)
        .fetch_all(&self.pool)
        .await?)
    }
}
