//! The subscription census (migration 0024): one row per sender of bulk mail and account, kept
//! by the async worker from the projected messages that carry `List-Unsubscribe` and the
//! evidence it checked (the newest such message's DKIM signature).
//!
//! A row's `revision` moves only when something the owner decides on changes: its state (the
//! decision, or the evidence check), the mechanism, destination or digest, or the protected
//! flag. Counts and arrival times follow the mail without moving it, so a confirmation made a
//! minute ago is not refused because one more newsletter arrived.

use domain::email::{EvidenceCheck, MailboxWrite, SubscriptionDecision, SubscriptionState, UnsubscribeMechanism};
use domain::ids::{AccountId, SubscriptionId};
use jiff::{SignedDuration, Timestamp};
use uuid::Uuid;

use crate::email::Email;
use crate::email::operations::{OPERATION_COLUMNS, OperationRecord, UNSETTLED, WRITE_KINDS};
use crate::{EmailOperationRow, Result, StoreError, named, named_optional, timestamp};

/// How long after an unsubscribe further mail means the sender is still sending.
pub const STILL_SENDING_AFTER: SignedDuration = SignedDuration::from_hours(24 * 10);

/// A sender of bulk mail as the projected messages show it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CensusCandidate {
    /// The sender's address, lowercased.
    pub sender: String,
    pub sender_name: Option<String>,
    /// Conversations with mail from the sender carrying `List-Unsubscribe` in the window.
    pub conversations: i64,
    pub last_arrival_at: Timestamp,
    /// The provider id of the newest such message: the evidence.
    pub newest_message: String,
    /// A known correspondent (the owner has written to them), or a sender of Important or
    /// Needs-reply mail.
    pub protected: bool,
}

/// What the census found for one sender, with its evidence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CensusEntry<'a> {
    pub candidate: &'a CensusCandidate,
    pub evidence_message: &'a str,
    pub check: EvidenceCheck,
    /// The mechanism, its full target and what a client may see of it (only when verified).
    pub mechanism: Option<(UnsubscribeMechanism, &'a str, &'a str)>,
    pub digest: &'a str,
}

/// A census row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubscriptionRow {
    pub id: SubscriptionId,
    pub account_id: AccountId,
    pub sender: String,
    pub sender_name: Option<String>,
    pub conversations: i64,
    pub last_arrival_at: Timestamp,
    pub evidence_message: String,
    pub evidence_check: EvidenceCheck,
    pub mechanism: Option<UnsubscribeMechanism>,
    /// The full URI: for the worker's transport only, never a client.
    pub target: Option<String>,
    /// The one-click host, or the mailto address.
    pub destination: Option<String>,
    pub digest: String,
    pub decision: Option<SubscriptionDecision>,
    pub decided_at: Option<Timestamp>,
    pub unsubscribed_at: Option<Timestamp>,
    /// Why the last unsubscribe of this sender did not succeed (a stable code).
    pub last_error: Option<String>,
    pub protected: bool,
    pub revision: i64,
    pub state: SubscriptionState,
}

pub(crate) const SUBSCRIPTION_COLUMNS: &str = "id, account_id, sender, sender_name, conversations, last_arrival_at,
    evidence_message, evidence_check, mechanism, target, destination, digest, decision, decided_at,
    unsubscribed_at, last_error, protected, revision, state";

#[derive(sqlx::FromRow)]
pub(crate) struct SubscriptionRecord {
    id: Uuid,
    account_id: String,
    sender: String,
    sender_name: Option<String>,
    conversations: i32,
    last_arrival_at: jiff_sqlx::Timestamp,
    evidence_message: String,
    evidence_check: String,
    mechanism: Option<String>,
    target: Option<String>,
    destination: Option<String>,
    digest: String,
    decision: Option<String>,
    decided_at: Option<jiff_sqlx::Timestamp>,
    unsubscribed_at: Option<jiff_sqlx::Timestamp>,
    last_error: Option<String>,
    protected: bool,
    revision: i64,
    state: String,
}

impl TryFrom<SubscriptionRecord> for SubscriptionRow {
    type Error = StoreError;

    fn try_from(record: SubscriptionRecord) -> Result<Self> {
        Ok(SubscriptionRow {
            id: record.id.into(),
            account_id: record.account_id.into(),
            sender: record.sender,
            sender_name: record.sender_name,
            conversations: i64::from(record.conversations),
            last_arrival_at: timestamp(record.last_arrival_at),
            evidence_message: record.evidence_message,
            evidence_check: named(record.evidence_check)?,
            mechanism: named_optional(record.mechanism)?,
            target: record.target,
            destination: record.destination,
            digest: record.digest,
            decision: named_optional(record.decision)?,
            decided_at: record.decided_at.map(timestamp),
            unsubscribed_at: record.unsubscribed_at.map(timestamp),
            last_error: record.last_error,
            protected: record.protected,
            revision: record.revision,
            state: named(record.state)?,
        })
    }
}

fn rows(records: Vec<SubscriptionRecord>) -> Result<Vec<SubscriptionRow>> {
    records.into_iter().map(SubscriptionRow::try_from).collect()
}

/// A page of the census as the owner lists it: rows with mail in the window or a decision,
/// newest arrival first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SubscriptionQuery {
    pub account: Option<AccountId>,
    pub state: Option<SubscriptionState>,
    /// Rows after this one (its last arrival and id), for the next page.
    pub after: Option<(Timestamp, SubscriptionId)>,
    pub limit: i64,
}

/// An owner's change of one row (Keep, its undo, Report spam, Not spam).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SubscriptionChange {
    /// Done: the row now, and the mailbox writes queued for it.
    Done {
        row: SubscriptionRow,
        operations: Vec<EmailOperationRow>,
    },
    NotFound,
    /// The row moved since the revision the owner saw.
    Changed(SubscriptionRow),
    /// The change does not apply to the row as it is.
    NotApplicable(SubscriptionRow),
}

/// Which change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OwnerChange {
    /// Keep receiving (from any state but `unsubscribing` and `kept`).
    Keep,
    /// Undo Keep: the decision before it.
    UndoKeep,
    /// Report the sender's Inbox mail as spam (not while unsubscribing or already reported).
    ReportSpam,
    /// Return exactly the threads Report spam moved (only when reported); the row is kept.
    NotSpam,
}

impl Email<'_> {
    /// The senders of `account_id`'s mail carrying `List-Unsubscribe` dated from `since`, with
    /// their newest such message and whether they are protected.
    pub async fn census_candidates(self, account_id: &AccountId, since: Timestamp) -> Result<Vec<CensusCandidate>> {
        let records: Vec<(String, Option<String>, i64, jiff_sqlx::Timestamp, String, bool)> = sqlx::query_as(
            "WITH bulk AS (
                 SELECT lower(sender->>'address') AS sender, NULLIF(btrim(sender->>'name'), '') AS name,
                        thread, sent_at, provider_message_id
                 FROM email_messages
                 WHERE account_id = $1 AND sent_at >= $2
                   AND COALESCE((bulk->>'list_unsubscribe')::boolean, false)
                   AND COALESCE(sender->>'address', '') <> ''
             ), newest AS (
                 SELECT DISTINCT ON (sender) sender, name, provider_message_id
                 FROM bulk ORDER BY sender, sent_at DESC, provider_message_id DESC
             ), counts AS (
                 SELECT sender, count(DISTINCT thread) AS conversations, max(sent_at) AS last_arrival_at
                 FROM bulk GROUP BY sender
             ), known AS (
                 -- The people the owner has written to, read once (a hashed set below).
                 SELECT DISTINCT lower(person->>'address') AS address
                 FROM email_messages sent, jsonb_array_elements(sent.recipients || sent.copied) AS person
                 WHERE sent.account_id = $1 AND 'SENT' = ANY (sent.labels)
             )
             SELECT n.sender, n.name, c.conversations, c.last_arrival_at, n.provider_message_id,
                 n.sender IN (SELECT address FROM known) OR EXISTS (
                     SELECT 1 FROM email_messages mine JOIN email_threads thread ON thread.id = mine.thread
                     WHERE mine.account_id = $1 AND lower(mine.sender->>'address') = n.sender
                       AND (thread.importance = 'important' OR thread.reply_need = 'needs_reply')
                 ) AS protected
             FROM newest n JOIN counts c USING (sender)
             ORDER BY n.sender",
        )
        .bind(account_id.as_str())
        .bind(jiff_sqlx::Timestamp::from(since))
        .fetch_all(&self.pool)
        .await?;
        Ok(records
            .into_iter()
            .map(
                |(sender, sender_name, conversations, last_arrival_at, newest_message, protected)| CensusCandidate {
                    sender,
                    sender_name,
                    conversations,
                    last_arrival_at: timestamp(last_arrival_at),
                    newest_message,
                    protected,
                },
            )
            .collect())
    }

    /// Every census row of `account_id`, by sender.
    pub async fn subscriptions_of(self, account_id: &AccountId) -> Result<Vec<SubscriptionRow>> {
        let records: Vec<SubscriptionRecord> = sqlx::query_as(&format!(
            "SELECT {SUBSCRIPTION_COLUMNS} FROM email_subscriptions WHERE account_id = $1 ORDER BY sender"
        ))
        .bind(account_id.as_str())
        .fetch_all(&self.pool)
        .await?;
        rows(records)
    }

    /// The census row of `sender` (any case) in `account_id`, when there is one.
    pub async fn subscription_of(self, account_id: &AccountId, sender: &str) -> Result<Option<SubscriptionRow>> {
        let record: Option<SubscriptionRecord> = sqlx::query_as(&format!(
            "SELECT {SUBSCRIPTION_COLUMNS} FROM email_subscriptions WHERE account_id = $1 AND sender = lower($2)"
        ))
        .bind(account_id.as_str())
        .bind(sender)
        .fetch_optional(&self.pool)
        .await?;
        record.map(SubscriptionRow::try_from).transpose()
    }

    /// One census row.
    pub async fn subscription(self, id: SubscriptionId) -> Result<Option<SubscriptionRow>> {
        let record: Option<SubscriptionRecord> = sqlx::query_as(&format!(
            "SELECT {SUBSCRIPTION_COLUMNS} FROM email_subscriptions WHERE id = $1"
        ))
        .bind(id.as_uuid())
        .fetch_optional(&self.pool)
        .await?;
        record.map(SubscriptionRow::try_from).transpose()
    }

    /// Records what the census found for one sender: a new row, or the row brought up to date
    /// (its decision untouched). The revision moves only when the state, mechanism,
    /// destination, digest or protected flag changes.
    pub async fn record_census(self, account_id: &AccountId, entry: &CensusEntry<'_>) -> Result<()> {
        let (mechanism, target, destination) = match entry.mechanism {
            Some((mechanism, target, destination)) => (Some(mechanism.as_str()), Some(target), Some(destination)),
            None => (None, None, None),
        };
        sqlx::query(
            "INSERT INTO email_subscriptions AS s (account_id, sender, sender_name, conversations, last_arrival_at,
                 evidence_message, evidence_check, mechanism, target, destination, digest, protected, updated_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
             ON CONFLICT (account_id, sender) DO UPDATE SET
                 sender_name = EXCLUDED.sender_name,
                 conversations = EXCLUDED.conversations,
                 last_arrival_at = EXCLUDED.last_arrival_at,
                 evidence_message = EXCLUDED.evidence_message,
                 evidence_check = EXCLUDED.evidence_check,
                 mechanism = EXCLUDED.mechanism,
                 target = EXCLUDED.target,
                 destination = EXCLUDED.destination,
                 digest = EXCLUDED.digest,
                 protected = EXCLUDED.protected,
                 updated_at = EXCLUDED.updated_at,
                 revision = s.revision + CASE
                     WHEN (s.evidence_check, s.mechanism, s.destination, s.digest, s.protected)
                          IS DISTINCT FROM
                          (EXCLUDED.evidence_check, EXCLUDED.mechanism, EXCLUDED.destination, EXCLUDED.digest,
                           EXCLUDED.protected)
                     THEN 1 ELSE 0 END
             WHERE (s.sender_name, s.conversations, s.last_arrival_at, s.evidence_message, s.evidence_check,
                    s.mechanism, s.target, s.destination, s.digest, s.protected)
                   IS DISTINCT FROM
                   (EXCLUDED.sender_name, EXCLUDED.conversations, EXCLUDED.last_arrival_at, EXCLUDED.evidence_message,
                    EXCLUDED.evidence_check, EXCLUDED.mechanism, EXCLUDED.target, EXCLUDED.destination,
                    EXCLUDED.digest, EXCLUDED.protected)",
        )
        .bind(account_id.as_str())
        .bind(&entry.candidate.sender)
        .bind(entry.candidate.sender_name.as_deref())
        .bind(i32::try_from(entry.candidate.conversations).unwrap_or(i32::MAX))
        .bind(jiff_sqlx::Timestamp::from(entry.candidate.last_arrival_at))
        .bind(entry.evidence_message)
        .bind(entry.check.as_str())
        .bind(mechanism)
        .bind(target)
        .bind(destination)
        .bind(entry.digest)
        .bind(entry.candidate.protected)
        .bind(jiff_sqlx::Timestamp::from(self.now()))
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Senders of `account_id` with no bulk mail in the window any more count no conversations.
    pub async fn census_absent(self, account_id: &AccountId, present: &[String]) -> Result<u64> {
        let done = sqlx::query(
            "UPDATE email_subscriptions SET conversations = 0
             WHERE account_id = $1 AND conversations <> 0 AND NOT (sender = ANY ($2))",
        )
        .bind(account_id.as_str())
        .bind(present)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected())
    }

    /// Unsubscribed senders of `account_id` whose mail arrived [`STILL_SENDING_AFTER`] or more
    /// after the unsubscribe become `still_sending`; how many did. Nothing is sent.
    pub async fn mark_still_sending(self, account_id: &AccountId) -> Result<u64> {
        let now = jiff_sqlx::Timestamp::from(self.now());
        let done = sqlx::query(
            "UPDATE email_subscriptions s
             SET decision = 'still_sending', decided_at = $2, updated_at = $2, revision = s.revision + 1
             WHERE s.account_id = $1 AND s.decision = 'unsubscribed' AND s.unsubscribed_at IS NOT NULL
               AND EXISTS (
                   SELECT 1 FROM email_messages m
                   WHERE m.account_id = s.account_id AND lower(m.sender->>'address') = s.sender
                     AND m.sent_at >= s.unsubscribed_at
                     AND m.projected_at >= s.unsubscribed_at + make_interval(secs => $3)
               )",
        )
        .bind(account_id.as_str())
        .bind(now)
        .bind(STILL_SENDING_AFTER.as_secs_f64())
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected())
    }

    /// Records that the unsubscribe from `id` succeeded: `unsubscribed` from now (the start of
    /// the ten days after which further mail means `still_sending`). Whether the row moved.
    pub async fn mark_unsubscribed(self, id: SubscriptionId) -> Result<bool> {
        let now = jiff_sqlx::Timestamp::from(self.now());
        let done = sqlx::query(
            "UPDATE email_subscriptions
             SET decision = 'unsubscribed', decided_at = $2, unsubscribed_at = $2, updated_at = $2,
                 last_error = NULL, revision = revision + 1
             WHERE id = $1 AND decision IS DISTINCT FROM 'unsubscribed'",
        )
        .bind(id.as_uuid())
        .bind(now)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// A page of the census (see [`SubscriptionQuery`]).
    pub async fn list_subscriptions(self, query: &SubscriptionQuery) -> Result<Vec<SubscriptionRow>> {
        let (after_at, after_id) = match query.after {
            Some((at, id)) => (Some(jiff_sqlx::Timestamp::from(at)), Some(id.as_uuid())),
            None => (None, None),
        };
        let records: Vec<SubscriptionRecord> = sqlx::query_as(&format!(
            "SELECT {SUBSCRIPTION_COLUMNS} FROM email_subscriptions
             WHERE (conversations > 0 OR decision IS NOT NULL)
               AND ($1::text IS NULL OR account_id = $1)
               AND ($2::text IS NULL OR state = $2)
               AND ($3::timestamptz IS NULL OR (last_arrival_at, id) < ($3, $4))
             ORDER BY last_arrival_at DESC, id DESC
             LIMIT $5"
        ))
        .bind(query.account.as_ref().map(AccountId::as_str))
        .bind(query.state.map(SubscriptionState::as_str))
        .bind(after_at)
        .bind(after_id)
        .bind(query.limit)
        .fetch_all(&self.pool)
        .await?;
        rows(records)
    }

    /// The owner's `change` of row `id`, seen at `revision` (see [`OwnerChange`]).
    pub async fn change_subscription(
        self,
        id: SubscriptionId,
        revision: i64,
        change: OwnerChange,
    ) -> Result<SubscriptionChange> {
        let now = self.now_sql();
        self.transaction(
            async |conn| {
                let record: Option<SubscriptionRecord> = sqlx::query_as(&format!(
                    "SELECT {SUBSCRIPTION_COLUMNS} FROM email_subscriptions WHERE id = $1 FOR UPDATE"
                ))
                .bind(id.as_uuid())
                .fetch_optional(&mut *conn)
                .await?;
                let Some(record) = record else {
                    return Ok(SubscriptionChange::NotFound);
                };
                let row = SubscriptionRow::try_from(record)?;
                if row.revision != revision {
                    return Ok(SubscriptionChange::Changed(row));
                }
                use SubscriptionDecision::{Kept, ReportedSpam, Unsubscribing};
                let applies = match change {
                    OwnerChange::Keep => !matches!(row.decision, Some(Kept | Unsubscribing)),
                    OwnerChange::UndoKeep => row.decision == Some(Kept),
                    OwnerChange::ReportSpam => !matches!(row.decision, Some(Unsubscribing | ReportedSpam)),
                    OwnerChange::NotSpam => row.decision == Some(ReportedSpam),
                };
                if !applies {
                    return Ok(SubscriptionChange::NotApplicable(row));
                }
                let mut operations = Vec::new();
                let set = match change {
                    OwnerChange::Keep => {
                        "decision = 'kept', kept_from = CASE WHEN decision IN ('unsubscribed', 'still_sending',
                             'reported_spam') THEN decision END, decided_at = $2"
                    }
                    OwnerChange::UndoKeep => {
                        "decision = kept_from, kept_from = NULL,
                         decided_at = CASE WHEN kept_from IS NULL THEN NULL ELSE $2 END"
                    }
                    OwnerChange::ReportSpam => {
                        operations = queue_subscription_writes(
                            conn,
                            id.as_uuid(),
                            MailboxWrite::ReportSpam,
                            Conversations::InboxFromSender,
                            now,
                        )
                        .await?;
                        "decision = 'reported_spam', kept_from = NULL, decided_at = $2"
                    }
                    OwnerChange::NotSpam => {
                        operations = queue_subscription_writes(
                            conn,
                            id.as_uuid(),
                            MailboxWrite::NotSpam,
                            Conversations::Reported,
                            now,
                        )
                        .await?;
                        "decision = 'kept', kept_from = NULL, decided_at = $2"
                    }
                };
                let record: SubscriptionRecord = sqlx::query_as(&format!(
                    "UPDATE email_subscriptions SET {set}, updated_at = $2, revision = revision + 1
                     WHERE id = $1 RETURNING {SUBSCRIPTION_COLUMNS}"
                ))
                .bind(id.as_uuid())
                .bind(now)
                .fetch_one(&mut *conn)
                .await?;
                Ok(SubscriptionChange::Done {
                    row: SubscriptionRow::try_from(record)?,
                    operations,
                })
            },
            |outcome| matches!(outcome, SubscriptionChange::Done { .. }),
        )
        .await
    }
}

/// Which of a subscription's conversations a write is queued for.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Conversations {
    /// Those in the Inbox with mail from the subscription's sender.
    InboxFromSender,
    /// Those a Report spam of the subscription moved that are still in Spam.
    Reported,
}

/// Queues the write `kind` of each of the subscription's conversations `which` that has no
/// unsettled write, naming the subscription; the operations queued.
pub(crate) async fn queue_subscription_writes(
    conn: &mut sqlx::PgConnection,
    subscription: Uuid,
    kind: MailboxWrite,
    which: Conversations,
    now: jiff_sqlx::Timestamp,
) -> Result<Vec<EmailOperationRow>> {
    let chosen = match which {
        Conversations::InboxFromSender => {
            "t.in_inbox AND NOT t.in_spam
             AND EXISTS (SELECT 1 FROM email_messages m JOIN email_subscriptions s ON s.id = $1
                         WHERE m.thread = t.id AND m.account_id = s.account_id
                           AND lower(m.sender->>'address') = s.sender)"
        }
        Conversations::Reported => {
            "t.in_spam
             AND t.id IN (SELECT thread FROM email_operations
                          WHERE subscription = $1 AND kind = 'report_spam' AND state = 'succeeded')"
        }
    };
    let records: Vec<OperationRecord> = sqlx::query_as(&format!(
        "INSERT INTO email_operations (id, account_id, thread, kind, subscription, created_at, updated_at)
         SELECT gen_random_uuid(), t.account_id, t.id, $2, $1, $3, $3
         FROM email_threads t
         WHERE {chosen}
           AND NOT EXISTS (SELECT 1 FROM email_operations
                           WHERE thread = t.id AND {WRITE_KINDS} AND {UNSETTLED})
         RETURNING {OPERATION_COLUMNS}"
    ))
    .bind(subscription)
    .bind(kind.as_str())
    .bind(now)
    .fetch_all(conn)
    .await?;
    records.into_iter().map(EmailOperationRow::try_from).collect()
}
