//! Reading Email mode's projections as the owner's client sees them: the priority inbox
//! (Important: in the Inbox and assessed important, needing a reply first, then for your
//! attention, then the rest, newest first) and Other mail (everything else: unassessed, other,
//! archived, spam), each filtered by account and search and paged by keyset; and one thread
//! with its messages' text and attachment metadata.

use domain::email::{DraftStanding, Importance, InboxView, ReplyNeed};
use domain::feedback::ContentKind;
use domain::ids::{AccountId, DraftId, ThreadId};
use jiff::Timestamp;
use serde_json::Value;
use uuid::Uuid;

use crate::email::Email;
use crate::email::junk::{JunkFiltered, filtered};
use crate::email::projection::{EmailMessageRow, MESSAGE_COLUMNS, MessageRecord, stored_json};
use crate::{Result, StoreError, named_optional, timestamp};
use wire::email::{Correspondent, Feedback};

/// Where a page ends: the last row's ordering key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InboxPosition {
    pub priority: i16,
    pub latest_at: Timestamp,
    pub id: ThreadId,
}

/// One page request.
#[derive(Clone, Copy, Debug)]
pub struct InboxQuery<'a> {
    pub view: InboxView,
    pub account_id: Option<&'a AccountId>,
    /// Words looked for in the subject, correspondents, gist and message text
    /// (case-insensitive, as one phrase).
    pub search: Option<&'a str>,
    pub after: Option<InboxPosition>,
    pub limit: u32,
}

/// Columns of [`ThreadSummary`], in its order.
/// A thread's newest draft, and where it is: `draft` (being written, or waiting to be sent),
/// `check_send_status` (its send's outcome is unknown) or `sent`.
const SUMMARY_COLUMNS: &str = "t.id, t.account_id, t.provider_thread_id, t.subject, t.correspondents, t.latest_at,
     t.message_count, t.has_attachments, t.labels, t.in_inbox, t.in_spam, t.suspected_spam, t.importance, t.reply_need,
     t.gist, t.classifier, t.rule, t.handled_at IS NOT NULL AS handled, t.reported_at IS NOT NULL AS reported,
     t.priority,
     (SELECT d.id FROM email_drafts d WHERE d.thread = t.id ORDER BY d.created_at DESC, d.id DESC LIMIT 1) AS draft_id,
     (SELECT CASE WHEN i.state = 'succeeded' OR m.state = 'found' THEN 'sent'
                  WHEN i.state = 'outcome_unknown' THEN 'check_send_status' ELSE 'draft' END
      FROM email_drafts d LEFT JOIN tool_invocations i ON i.run_id = d.send_run
      LEFT JOIN mail_reconciliations m ON m.invocation_id = i.id
      WHERE d.thread = t.id ORDER BY d.created_at DESC, d.id DESC LIMIT 1) AS draft_state,
     t.kind,
     (SELECT coalesce(jsonb_agg(jsonb_build_object('feedback_id', f.id, 'scope', f.scope, 'signal', f.signal,
                 'thread_id', f.thread, 'person', f.person, 'kind', f.kind, 'created_at', f.created_at,
                 'retired', f.retired_at IS NOT NULL) ORDER BY f.created_at), '[]'::jsonb)
      FROM email_feedback f WHERE f.id IN (t.importance_feedback, t.reply_feedback)) AS reasons,
     t.junk_state, t.junk_category, t.junk_probability, t.junk_mode";

/// A thread as a row of the inbox shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct ThreadSummary {
    pub id: ThreadId,
    pub account_id: AccountId,
    pub provider_thread_id: String,
    pub subject: String,
    /// Each sender once.
    pub correspondents: Vec<Correspondent>,
    pub latest_at: Timestamp,
    pub message_count: i32,
    pub has_attachments: bool,
    pub labels: Vec<String>,
    pub in_inbox: bool,
    pub in_spam: bool,
    pub suspected_spam: bool,
    pub importance: Option<Importance>,
    pub reply_need: Option<ReplyNeed>,
    pub gist: Option<String>,
    pub classifier: Option<String>,
    pub rule: Option<String>,
    /// Archived by the owner through Steward.
    pub handled: bool,
    /// Reported as spam by the owner through Steward.
    pub reported: bool,
    pub priority: i16,
    /// The thread's newest draft.
    pub draft_id: Option<DraftId>,
    /// Where that draft is.
    pub draft_state: Option<DraftStanding>,
    /// What kind of content the newest message is.
    pub kind: Option<ContentKind>,
    /// The feedback rules that decided what shows.
    pub reasons: Vec<Feedback>,
    /// Why the junk first pass keeps the thread out of the priority inbox, when it does.
    pub junk: Option<JunkFiltered>,
}

impl ThreadSummary {
    /// This row's ordering key, for the next page.
    pub fn position(&self) -> InboxPosition {
        InboxPosition {
            priority: self.priority,
            latest_at: self.latest_at,
            id: self.id,
        }
    }
}

#[derive(sqlx::FromRow)]
struct SummaryRecord {
    id: Uuid,
    account_id: String,
    provider_thread_id: String,
    subject: String,
    correspondents: Value,
    latest_at: jiff_sqlx::Timestamp,
    message_count: i32,
    has_attachments: bool,
    labels: Vec<String>,
    in_inbox: bool,
    in_spam: bool,
    suspected_spam: bool,
    importance: Option<String>,
    reply_need: Option<String>,
    gist: Option<String>,
    classifier: Option<String>,
    rule: Option<String>,
    handled: bool,
    reported: bool,
    priority: i16,
    draft_id: Option<Uuid>,
    draft_state: Option<String>,
    kind: Option<String>,
    reasons: Value,
    junk_state: Option<String>,
    junk_category: Option<String>,
    junk_probability: Option<f64>,
    junk_mode: Option<String>,
}

impl TryFrom<SummaryRecord> for ThreadSummary {
    type Error = StoreError;

    fn try_from(record: SummaryRecord) -> Result<Self> {
        Ok(ThreadSummary {
            id: record.id.into(),
            account_id: record.account_id.into(),
            provider_thread_id: record.provider_thread_id,
            subject: record.subject,
            correspondents: stored_json("email_threads.correspondents", record.correspondents)?,
            latest_at: timestamp(record.latest_at),
            message_count: record.message_count,
            has_attachments: record.has_attachments,
            labels: record.labels,
            in_inbox: record.in_inbox,
            in_spam: record.in_spam,
            suspected_spam: record.suspected_spam,
            importance: named_optional(record.importance)?,
            reply_need: named_optional(record.reply_need)?,
            gist: record.gist,
            classifier: record.classifier,
            rule: record.rule,
            handled: record.handled,
            reported: record.reported,
            priority: record.priority,
            draft_id: record.draft_id.map(DraftId::from),
            draft_state: named_optional(record.draft_state)?,
            kind: named_optional(record.kind)?,
            reasons: stored_json("email_threads reasons", record.reasons)?,
            junk: filtered(
                record.junk_state.as_deref(),
                record.junk_category,
                record.junk_probability,
                record.junk_mode,
            )?,
        })
    }
}

/// `text` as a `LIKE` pattern matching it anywhere, its wildcards taken literally.
fn contains_pattern(text: &str) -> String {
    let escaped = text.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_");
    format!("%{escaped}%")
}

impl Email<'_> {
    /// One page of `query.view`, at most `query.limit` rows.
    pub async fn inbox(self, query: &InboxQuery<'_>) -> Result<Vec<ThreadSummary>> {
        let (filter, order, after) = match query.view {
            InboxView::Important => (
                "t.in_inbox AND t.importance = 'important'",
                "t.priority, t.latest_at DESC, t.id DESC",
                "($4::smallint IS NULL OR t.priority > $4 OR (t.priority = $4 AND (t.latest_at, t.id) < ($5, $6)))",
            ),
            InboxView::Other => (
                "NOT (t.in_inbox AND t.importance IS NOT DISTINCT FROM 'important')",
                "t.latest_at DESC, t.id DESC",
                "($4::smallint IS NULL OR (t.latest_at, t.id) < ($5, $6))",
            ),
        };
        let records: Vec<SummaryRecord> = sqlx::query_as(&format!(
            "SELECT {SUMMARY_COLUMNS} FROM email_threads t
             WHERE {filter} AND ($1::text IS NULL OR t.account_id = $1)
               AND ($2::text IS NULL OR t.subject ILIKE $2 OR t.correspondents::text ILIKE $2 OR t.gist ILIKE $2
                    OR EXISTS (SELECT 1 FROM email_messages m WHERE m.thread = t.id AND m.body ILIKE $2))
               AND {after}
             ORDER BY {order} LIMIT $3"
        ))
        .bind(query.account_id.map(AccountId::as_str))
        .bind(query.search.map(contains_pattern))
        .bind(i64::from(query.limit))
        .bind(query.after.map(|position| position.priority))
        .bind(
            query
                .after
                .map(|position| jiff_sqlx::Timestamp::from(position.latest_at)),
        )
        .bind(query.after.map(|position| position.id.as_uuid()))
        .fetch_all(&self.pool)
        .await?;
        records.into_iter().map(ThreadSummary::try_from).collect()
    }

    /// Clears the server's suspected-spam flag of `thread` (the owner said Not spam; nothing is
    /// written to the mailbox); the thread as it now is, `None` when there is no such thread.
    /// The conversation is protected from the junk first pass from then on, and one the filter
    /// kept out of the priority inbox is assessed the ordinary way on the next refresh.
    pub async fn clear_spam_flag(self, thread: ThreadId) -> Result<Option<ThreadSummary>> {
        let record: Option<SummaryRecord> = sqlx::query_as(&format!(
            "UPDATE email_threads t SET suspected_spam = false, not_spam_at = COALESCE(t.not_spam_at, $2),
                 junk_state = CASE WHEN t.junk_state IS NULL THEN NULL ELSE 'restoring' END
             WHERE t.id = $1 RETURNING {SUMMARY_COLUMNS}"
        ))
        .bind(thread.as_uuid())
        .bind(self.now_sql())
        .fetch_optional(&self.pool)
        .await?;
        record.map(ThreadSummary::try_from).transpose()
    }

    /// One thread and its messages, oldest first.
    pub async fn thread(self, id: ThreadId) -> Result<Option<(ThreadSummary, Vec<EmailMessageRow>)>> {
        let Some(summary) = self.thread_summary(id).await? else {
            return Ok(None);
        };
        Ok(Some((summary, self.thread_messages(id).await?)))
    }

    /// One thread as its row shows it.
    pub async fn thread_summary(self, id: ThreadId) -> Result<Option<ThreadSummary>> {
        let record: Option<SummaryRecord> = sqlx::query_as(&format!(
            "SELECT {SUMMARY_COLUMNS} FROM email_threads t WHERE t.id = $1"
        ))
        .bind(id.as_uuid())
        .fetch_optional(&self.pool)
        .await?;
        record.map(ThreadSummary::try_from).transpose()
    }

    /// A thread's messages, oldest first (empty when there is no such thread).
    pub async fn thread_messages(self, id: ThreadId) -> Result<Vec<EmailMessageRow>> {
        let messages: Vec<MessageRecord> = sqlx::query_as(&format!(
            "SELECT {MESSAGE_COLUMNS} FROM email_messages WHERE thread = $1 ORDER BY sent_at, provider_message_id"
        ))
        .bind(id.as_uuid())
        .fetch_all(&self.pool)
        .await?;
        messages.into_iter().map(EmailMessageRow::try_from).collect()
    }
}
