//! Email mode's mailbox projections (migration 0017), as the async worker keeps them: each
//! connected account's refresh state, its threads and their messages, the assessment of each
//! thread's newest message. Message content is stored
//! for the owner's reading pane and the model only; nothing here logs it.

use domain::email::{AllowanceWait, Importance, ReplyNeed};
use domain::feedback::ContentKind;
use domain::ids::{AccountId, ThreadId};
use jiff::Timestamp;
use serde_json::Value;
use sqlx::PgConnection;
use sqlx::types::Json;
use uuid::Uuid;
use wire::email::{AttachmentMeta, Correspondent};

use crate::email::Email;
use crate::{Result, StoreError, named_optional, timestamp};

/// Columns of [`EmailAccountRow`], in its order.
const ACCOUNT_COLUMNS: &str =
    "account_id, address, history_id, coverage_from, updated_at, last_error, last_error_at, waiting, junk_mode,
     junk_in_force, junk_reason";

/// A connected account's refresh state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EmailAccountRow {
    pub account_id: AccountId,
    pub address: Option<String>,
    /// Where the next incremental update starts; `None`: a full backfill is due.
    pub history_id: Option<String>,
    /// The start of the backfilled window.
    pub coverage_from: Option<Timestamp>,
    /// The end of the last completed update; `None` while the first is awaited.
    pub updated_at: Option<Timestamp>,
    pub last_error: Option<String>,
    pub last_error_at: Option<Timestamp>,
    /// Why new mail waits unassessed.
    pub waiting: Option<AllowanceWait>,
    /// The junk first pass's mode in force, as the async worker last found it (`None` before
    /// it first looked).
    pub junk: Option<crate::email::JunkStatus>,
}

#[derive(sqlx::FromRow)]
struct AccountRecord {
    account_id: String,
    address: Option<String>,
    history_id: Option<String>,
    coverage_from: Option<jiff_sqlx::Timestamp>,
    updated_at: Option<jiff_sqlx::Timestamp>,
    last_error: Option<String>,
    last_error_at: Option<jiff_sqlx::Timestamp>,
    waiting: Option<String>,
    junk_mode: Option<String>,
    junk_in_force: Option<String>,
    junk_reason: Option<String>,
}

impl TryFrom<AccountRecord> for EmailAccountRow {
    type Error = StoreError;

    fn try_from(record: AccountRecord) -> Result<Self> {
        Ok(EmailAccountRow {
            account_id: record.account_id.into(),
            address: record.address,
            history_id: record.history_id,
            coverage_from: record.coverage_from.map(timestamp),
            updated_at: record.updated_at.map(timestamp),
            last_error: record.last_error,
            last_error_at: record.last_error_at.map(timestamp),
            waiting: named_optional(record.waiting)?,
            junk: match (named_optional(record.junk_mode)?, named_optional(record.junk_in_force)?) {
                (Some(configured), Some(in_force)) => Some(crate::email::JunkStatus {
                    configured,
                    in_force,
                    reason: named_optional(record.junk_reason)?,
                }),
                _ => None,
            },
        })
    }
}

/// One message as projected, ready to store.
#[derive(Clone, Debug)]
pub struct NewEmailMessage<'a> {
    pub provider_message_id: &'a str,
    pub provider_thread_id: &'a str,
    pub sender: Option<&'a Correspondent>,
    pub recipients: &'a [Correspondent],
    pub copied: &'a [Correspondent],
    pub sent_at: Timestamp,
    pub subject: &'a str,
    pub body: &'a str,
    pub text_cut: bool,
    pub attachments: &'a [AttachmentMeta],
    /// The bulk headers it carries (the `email` crate's shape).
    pub bulk: Value,
    pub labels: &'a [String],
}

/// Columns of [`EmailMessageRow`] (of `email_messages`), in its order.
pub(crate) const MESSAGE_COLUMNS: &str =
    "provider_message_id, sender, recipients, copied, sent_at, subject, body, text_cut, attachments, bulk";

/// One stored message: correspondents, date, text, attachment metadata (never bytes) and the
/// bulk headers it carries.
#[derive(Clone, Debug, PartialEq)]
pub struct EmailMessageRow {
    pub provider_message_id: String,
    pub sender: Option<Correspondent>,
    pub recipients: Vec<Correspondent>,
    pub copied: Vec<Correspondent>,
    pub sent_at: Timestamp,
    pub subject: String,
    pub body: String,
    pub text_cut: bool,
    pub attachments: Vec<AttachmentMeta>,
    /// The bulk headers it carries (the `email` crate's shape).
    pub bulk: Value,
}

#[derive(sqlx::FromRow)]
pub(crate) struct MessageRecord {
    provider_message_id: String,
    sender: Value,
    recipients: Value,
    copied: Value,
    sent_at: jiff_sqlx::Timestamp,
    subject: String,
    body: String,
    text_cut: bool,
    attachments: Value,
    bulk: Value,
}

impl TryFrom<MessageRecord> for EmailMessageRow {
    type Error = StoreError;

    fn try_from(record: MessageRecord) -> Result<Self> {
        Ok(EmailMessageRow {
            sender: stored_json("email_messages.sender", record.sender)?,
            recipients: stored_json("email_messages.recipients", record.recipients)?,
            copied: stored_json("email_messages.copied", record.copied)?,
            attachments: stored_json("email_messages.attachments", record.attachments)?,
            provider_message_id: record.provider_message_id,
            sent_at: timestamp(record.sent_at),
            subject: record.subject,
            body: record.body,
            text_cut: record.text_cut,
            bulk: record.bulk,
        })
    }
}

/// A stored JSON column in the shape the projection writes; any other shape is corruption.
pub(crate) fn stored_json<T: serde::de::DeserializeOwned>(column: &str, value: Value) -> Result<T> {
    serde_json::from_value(value).map_err(|error| StoreError::Corrupt(format!("{column}: {error}")))
}

/// A thread whose newest message waits for assessment, with that message.
#[derive(Clone, Debug, PartialEq)]
pub struct WaitingThread {
    pub thread: ThreadId,
    pub message: EmailMessageRow,
}

#[derive(sqlx::FromRow)]
struct WaitingRecord {
    thread: Uuid,
    #[sqlx(flatten)]
    message: MessageRecord,
}

/// An assessment to record on a thread (the `email` crate's classifier output).
#[derive(Clone, Copy, Debug)]
pub struct NewAssessment<'a> {
    pub classifier: &'a str,
    pub importance: Importance,
    pub reply_need: Option<ReplyNeed>,
    pub gist: &'a str,
    pub rule: &'a str,
    /// What kind of content the message is.
    pub kind: ContentKind,
}

impl Email<'_> {
    /// Records the configured accounts that have no row yet (awaiting their first update).
    pub async fn ensure_accounts(self, account_ids: &[AccountId]) -> Result<()> {
        let account_ids: Vec<&str> = account_ids.iter().map(AccountId::as_str).collect();
        sqlx::query("INSERT INTO email_accounts (account_id) SELECT unnest($1::text[]) ON CONFLICT DO NOTHING")
            .bind(&account_ids)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Every account Email mode knows, by id.
    pub async fn accounts(self) -> Result<Vec<EmailAccountRow>> {
        let records: Vec<AccountRecord> = sqlx::query_as(&format!(
            "SELECT {ACCOUNT_COLUMNS} FROM email_accounts ORDER BY account_id"
        ))
        .fetch_all(&self.pool)
        .await?;
        records.into_iter().map(EmailAccountRow::try_from).collect()
    }

    pub async fn account(self, account_id: &AccountId) -> Result<Option<EmailAccountRow>> {
        let record: Option<AccountRecord> = sqlx::query_as(&format!(
            "SELECT {ACCOUNT_COLUMNS} FROM email_accounts WHERE account_id = $1"
        ))
        .bind(account_id.as_str())
        .fetch_optional(&self.pool)
        .await?;
        record.map(EmailAccountRow::try_from).transpose()
    }

    /// Stores `message` in its thread (made on first sight) unless it is already stored, then
    /// recomputes the thread from its messages; a new message clears the thread's assessment,
    /// so its newest message is assessed again. True when the message was new.
    pub async fn record_message(self, account_id: &AccountId, message: &NewEmailMessage<'_>) -> Result<bool> {
        let mut tx = self.pool.begin().await?;
        let (thread,): (Uuid,) = sqlx::query_as(
            "INSERT INTO email_threads (account_id, provider_thread_id, latest_at) VALUES ($1, $2, $3)
             ON CONFLICT (account_id, provider_thread_id) DO UPDATE SET account_id = EXCLUDED.account_id
             RETURNING id",
        )
        .bind(account_id.as_str())
        .bind(message.provider_thread_id)
        .bind(jiff_sqlx::Timestamp::from(message.sent_at))
        .fetch_one(&mut *tx)
        .await?;
        let inserted = sqlx::query(
            "INSERT INTO email_messages (account_id, provider_message_id, thread, sender, recipients, copied,
                 sent_at, subject, body, text_cut, attachments, bulk, labels, projected_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
             ON CONFLICT (account_id, provider_message_id) DO NOTHING",
        )
        .bind(account_id.as_str())
        .bind(message.provider_message_id)
        .bind(thread)
        .bind(Json(message.sender))
        .bind(Json(message.recipients))
        .bind(Json(message.copied))
        .bind(jiff_sqlx::Timestamp::from(message.sent_at))
        .bind(message.subject)
        .bind(message.body)
        .bind(message.text_cut)
        .bind(Json(message.attachments))
        .bind(&message.bulk)
        .bind(message.labels)
        .bind(jiff_sqlx::Timestamp::from(self.now()))
        .execute(&mut *tx)
        .await?
        .rows_affected()
            == 1;
        if inserted {
            recompute_thread(&mut tx, thread, true).await?;
        }
        tx.commit().await?;
        Ok(inserted)
    }

    /// Sets the labels of the stored messages of `provider_thread_id` (each message's own, by
    /// provider message id) and the thread's union of them; messages not named keep theirs.
    /// False when the thread is not projected.
    pub async fn set_labels(
        self,
        account_id: &AccountId,
        provider_thread_id: &str,
        labels: &[(String, Vec<String>)],
    ) -> Result<bool> {
        let mut tx = self.pool.begin().await?;
        let thread: Option<(Uuid,)> =
            sqlx::query_as("SELECT id FROM email_threads WHERE account_id = $1 AND provider_thread_id = $2 FOR UPDATE")
                .bind(account_id.as_str())
                .bind(provider_thread_id)
                .fetch_optional(&mut *tx)
                .await?;
        let Some((thread,)) = thread else {
            return Ok(false);
        };
        apply_labels(&mut tx, thread, labels).await?;
        tx.commit().await?;
        Ok(true)
    }

    /// The provider message ids of the account already stored, among `ids`.
    pub async fn known_messages(self, account_id: &AccountId, ids: &[String]) -> Result<Vec<String>> {
        let rows: Vec<(String,)> = sqlx::query_as(
            "SELECT provider_message_id FROM email_messages WHERE account_id = $1 AND provider_message_id = ANY($2)",
        )
        .bind(account_id.as_str())
        .bind(ids)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().map(|(id,)| id).collect())
    }

    /// Addresses the owner has written to from this account (recipients of its sent mail).
    pub async fn known_correspondents(self, account_id: &AccountId) -> Result<Vec<String>> {
        let rows: Vec<(String,)> = sqlx::query_as(
            "SELECT DISTINCT lower(person->>'address') FROM email_messages,
                 jsonb_array_elements(recipients || copied) AS person
             WHERE account_id = $1 AND 'SENT' = ANY (labels)",
        )
        .bind(account_id.as_str())
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().map(|(address,)| address).collect())
    }

    /// Up to `limit` threads of the account awaiting assessment, oldest first, each with its
    /// newest message: new mail, and threads the junk filter no longer keeps out (`restoring`).
    pub async fn waiting_threads(self, account_id: &AccountId, limit: i64) -> Result<Vec<WaitingThread>> {
        let records: Vec<WaitingRecord> = sqlx::query_as(&format!(
            "SELECT t.id AS thread, m.* FROM email_threads t
             CROSS JOIN LATERAL (SELECT {MESSAGE_COLUMNS} FROM email_messages WHERE thread = t.id
                                 ORDER BY sent_at DESC, provider_message_id DESC LIMIT 1) m
             WHERE t.account_id = $1 AND (t.importance IS NULL OR t.junk_state = 'restoring')
             ORDER BY t.latest_at, t.id LIMIT $2"
        ))
        .bind(account_id.as_str())
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        records
            .into_iter()
            .map(|record| {
                Ok(WaitingThread {
                    thread: record.thread.into(),
                    message: record.message.try_into()?,
                })
            })
            .collect()
    }

    /// Records the assessment of `thread`'s newest message, unless a newer message arrived
    /// since it was read (`provider_message_id` is no longer the newest); true when recorded.
    /// An ordinary assessment ends whatever the junk filter had decided of the thread.
    pub async fn record_assessment(
        self,
        thread: ThreadId,
        provider_message_id: &str,
        assessment: &NewAssessment<'_>,
    ) -> Result<bool> {
        let now = self.now_sql();
        self.transaction(
            async |conn| {
                // A retirement of rules waits for this one, or this one for it.
                crate::email::feedback::share_rules(conn).await?;
                // The classifier's answer is kept as it is; the owner's feedback rules then
                // decide what shows.
                let recorded = sqlx::query(
                    "UPDATE email_threads t SET importance = $3, reply_need = $4, assessed_importance = $3,
                         assessed_reply_need = $4, gist = $5, classifier = $6, rule = $7, kind = $8, assessed_at = $9,
                         suspected_spam = CASE WHEN t.junk_state IS NULL THEN t.suspected_spam ELSE false END,
                         junk_state = NULL, junk_category = NULL, junk_probability = NULL, junk_mode = NULL
                     WHERE t.id = $1 AND (t.importance IS NULL OR t.junk_state = 'restoring')
                       AND $2 = (SELECT provider_message_id FROM email_messages WHERE thread = t.id
                                 ORDER BY sent_at DESC, provider_message_id DESC LIMIT 1)",
                )
                .bind(thread.as_uuid())
                .bind(provider_message_id)
                .bind(assessment.importance.as_str())
                .bind(assessment.reply_need.map(ReplyNeed::as_str))
                .bind(assessment.gist)
                .bind(assessment.classifier)
                .bind(assessment.rule)
                .bind(assessment.kind.as_str())
                .bind(now)
                .execute(&mut *conn)
                .await?
                .rows_affected()
                    == 1;
                if recorded {
                    crate::email::feedback::apply_rules(conn, thread.as_uuid()).await?;
                }
                Ok(recorded)
            },
            |recorded| *recorded,
        )
        .await
    }

    /// Records a completed update of the account: its address (kept when `None`), where its history now stands,
    /// the coverage (kept when `coverage_from` is `None`), the time (this store's clock), and no
    /// refresh error.
    pub async fn update_completed(
        self,
        account_id: &AccountId,
        address: Option<&str>,
        history_id: &str,
        coverage_from: Option<Timestamp>,
    ) -> Result<()> {
        sqlx::query(
            "UPDATE email_accounts SET address = COALESCE($2, address), history_id = $3,
                 coverage_from = COALESCE($4, coverage_from), updated_at = $5,
                 last_error = NULL, last_error_at = NULL
             WHERE account_id = $1",
        )
        .bind(account_id.as_str())
        .bind(address)
        .bind(history_id)
        .bind(coverage_from.map(jiff_sqlx::Timestamp::from))
        .bind(self.now_sql())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// The charges of Email mode's automatic model requests (every account's) made after
    /// `since`, oldest first: when, and USD micros. A junk request journaled as started and
    /// never completed counts at its ceiling (its usage is unknown).
    pub async fn charges_since(self, since: Timestamp) -> Result<Vec<(Timestamp, i64)>> {
        let rows: Vec<(jiff_sqlx::Timestamp, i64)> = sqlx::query_as(
            "SELECT charged_at, micros FROM email_charges WHERE charged_at > $1
             UNION ALL
             SELECT s.at, s.ceiling_micros FROM email_junk_events s
             WHERE s.kind = 'email.junk.started' AND s.at > $1
               AND NOT EXISTS (SELECT 1 FROM email_junk_events c WHERE c.request = s.request
                               AND c.kind = 'email.junk.completed')
             ORDER BY 1",
        )
        .bind(jiff_sqlx::Timestamp::from(since))
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().map(|(at, micros)| (timestamp(at), micros)).collect())
    }

    /// Records one automatic model request's charge at this store's clock; `reported` is false
    /// when the provider reported no usage and the request's ceiling was charged.
    pub async fn record_charge(self, account_id: &AccountId, micros: i64, reported: bool) -> Result<()> {
        sqlx::query("INSERT INTO email_charges (account_id, charged_at, micros, reported) VALUES ($1, $2, $3, $4)")
            .bind(account_id.as_str())
            .bind(self.now_sql())
            .bind(micros)
            .bind(reported)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Records why new mail of the account waits unassessed (`daily_allowance_spent`,
    /// `monthly_allowance_spent`), or that nothing waits for that reason (`None`).
    pub async fn set_waiting(self, account_id: &AccountId, waiting: Option<AllowanceWait>) -> Result<()> {
        sqlx::query("UPDATE email_accounts SET waiting = $2 WHERE account_id = $1 AND waiting IS DISTINCT FROM $2")
            .bind(account_id.as_str())
            .bind(waiting.map(AllowanceWait::as_str))
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Records a failed update (a stable error code, never message content).
    pub async fn update_failed(self, account_id: &AccountId, code: &str) -> Result<()> {
        sqlx::query("UPDATE email_accounts SET last_error = $2, last_error_at = $3 WHERE account_id = $1")
            .bind(account_id.as_str())
            .bind(code)
            .bind(self.now_sql())
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}

/// Sets the labels of `thread`'s messages named in `labels` (provider message id, labels) and
/// recomputes the thread.
pub(crate) async fn apply_labels(
    conn: &mut PgConnection,
    thread: Uuid,
    labels: &[(String, Vec<String>)],
) -> Result<()> {
    for (message, message_labels) in labels {
        sqlx::query("UPDATE email_messages SET labels = $3 WHERE thread = $1 AND provider_message_id = $2")
            .bind(thread)
            .bind(message)
            .bind(message_labels)
            .execute(&mut *conn)
            .await?;
    }
    recompute_thread(conn, thread, false).await
}

/// Recomputes `thread` from its messages: subject (the first message's), correspondents (each
/// sender once, in order of first appearance), newest date, count, attachments, and the union
/// of labels; `reassess` clears the assessment.
async fn recompute_thread(conn: &mut PgConnection, thread: Uuid, reassess: bool) -> Result<()> {
    sqlx::query(
        "UPDATE email_threads t SET
             subject = COALESCE((SELECT subject FROM email_messages WHERE thread = t.id
                                 ORDER BY sent_at, provider_message_id LIMIT 1), ''),
             correspondents = COALESCE((SELECT jsonb_agg(sender ORDER BY first_at) FROM
                 (SELECT sender, min(sent_at) AS first_at FROM email_messages
                  WHERE thread = t.id AND sender <> 'null'::jsonb GROUP BY sender) s), '[]'),
             latest_at = COALESCE((SELECT max(sent_at) FROM email_messages WHERE thread = t.id), t.latest_at),
             message_count = (SELECT count(*) FROM email_messages WHERE thread = t.id),
             has_attachments = EXISTS (SELECT 1 FROM email_messages WHERE thread = t.id
                                       AND jsonb_array_length(attachments) > 0),
             labels = ARRAY(SELECT DISTINCT unnest(labels) FROM email_messages WHERE thread = t.id ORDER BY 1),
             importance = CASE WHEN $2 THEN NULL ELSE importance END,
             reply_need = CASE WHEN $2 THEN NULL ELSE reply_need END,
             gist = CASE WHEN $2 THEN NULL ELSE gist END,
             classifier = CASE WHEN $2 THEN NULL ELSE classifier END,
             rule = CASE WHEN $2 THEN NULL ELSE rule END,
             kind = CASE WHEN $2 THEN NULL ELSE kind END,
             assessed_importance = CASE WHEN $2 THEN NULL ELSE assessed_importance END,
             assessed_reply_need = CASE WHEN $2 THEN NULL ELSE assessed_reply_need END,
             importance_feedback = CASE WHEN $2 THEN NULL ELSE importance_feedback END,
             reply_feedback = CASE WHEN $2 THEN NULL ELSE reply_feedback END,
             assessed_at = CASE WHEN $2 THEN NULL ELSE assessed_at END
         WHERE t.id = $1",
    )
    .bind(thread)
    .bind(reassess)
    .execute(conn)
    .await?;
    Ok(())
}
