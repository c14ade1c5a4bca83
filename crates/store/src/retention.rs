//! Retention: what the maintenance role removes once it has outlived its use, one bounded pass
//! per kind of record.
//!
//! Each pass picks at most `limit` expired rows, oldest first, and removes them in one
//! statement. Passes that change a row (artifacts, calls) pick with `FOR UPDATE SKIP LOCKED`;
//! passes that only delete first take a transaction-scoped advisory lock of their task, since
//! row locks need UPDATE, which the maintenance login does not hold on those tables. Either way
//! two maintenance processes (or two passes of one) never wait for each other, deadlock or
//! remove a row twice: the second finds nothing, or nothing the first holds. The instant a pass
//! measures against is a parameter, so each rule is tested exactly. What stays, and why:
//!
//! - an artifact keeps its metadata (the conversation still names the file) and loses its bytes;
//! - a declined folder proposal stays: it is the owner's decision, which keeps the agent from
//!   proposing the same session for the same folder again;
//! - a notification that was neither acknowledged nor made obsolete is still pending (the
//!   offline authority lists it), and one whose delivered alert was not yet withdrawn waits for
//!   the notify role;
//! - an email operation that is not settled, an unsubscribe or proposed reply (the census and
//!   drafts read them), a spam report made for a sender (Not spam returns exactly those
//!   threads), and each account's newest refresh stay.

use jiff::{SignedDuration, Timestamp};

use crate::{Result, Store};

/// How long each kind of record is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retention {
    /// An artifact's bytes, from its upload.
    pub artifacts: SignedDuration,
    /// An idempotency record, from the request it answered.
    pub idempotency: SignedDuration,
    /// An accepted folder proposal, from its acceptance.
    pub folder_proposals: SignedDuration,
    /// A notification, from its acknowledgement or its becoming obsolete.
    pub notifications: SignedDuration,
    /// A settled email operation, from its settling.
    pub email_operations: SignedDuration,
}

const DAY: SignedDuration = SignedDuration::from_hours(24);

impl Default for Retention {
    fn default() -> Retention {
        Retention {
            artifacts: DAY * 90,
            idempotency: DAY * 7,
            folder_proposals: DAY * 30,
            notifications: DAY * 30,
            email_operations: DAY * 30,
        }
    }
}

/// One kind of record the maintenance role expires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Task {
    /// Artifact bytes older than [`Retention::artifacts`].
    ArtifactBytes,
    /// Idempotency records older than [`Retention::idempotency`].
    IdempotencyRecords,
    /// Accepted folder proposals older than [`Retention::folder_proposals`].
    FolderProposals,
    /// Web sessions past their expiry (a revoked one is deleted when it is revoked).
    WebSessions,
    /// Acknowledged or obsolete notifications older than [`Retention::notifications`].
    Notifications,
    /// The transcript and summary of a call ended more than
    /// [`domain::call::RETENTION_DAYS`] ago.
    CallTranscripts,
    /// Settled email operations older than [`Retention::email_operations`].
    EmailOperations,
}

impl Task {
    pub const ALL: [Task; 7] = [
        Task::ArtifactBytes,
        Task::IdempotencyRecords,
        Task::FolderProposals,
        Task::WebSessions,
        Task::Notifications,
        Task::CallTranscripts,
        Task::EmailOperations,
    ];

    /// The task's advisory lock (one per task: different tasks run side by side).
    fn lock_key(self) -> i64 {
        0x5354_4557_0000 + self as i64
    }

    /// The task's name in log lines.
    pub fn name(self) -> &'static str {
        match self {
            Task::ArtifactBytes => "artifact_bytes",
            Task::IdempotencyRecords => "idempotency_records",
            Task::FolderProposals => "folder_proposals",
            Task::WebSessions => "web_sessions",
            Task::Notifications => "notifications",
            Task::CallTranscripts => "call_transcripts",
            Task::EmailOperations => "email_operations",
        }
    }
}

impl Store {
    /// Runs one pass of `task` at `now`: removes at most `limit` expired records; returns how
    /// many it removed.
    pub async fn expire(&self, task: Task, retention: &Retention, now: Timestamp, limit: u32) -> Result<u64> {
        let limit = i64::from(limit);
        let before = |window: SignedDuration| jiff_sqlx::Timestamp::from(now - window);
        let statement = match task {
            Task::ArtifactBytes => {
                // The bytes go in the statement that marks the artifact, so no artifact is ever
                // marked with its bytes still stored, or without them and unmarked.
                let removed: i64 = sqlx::query_scalar(
                    "WITH expired AS (
                         UPDATE artifacts SET expired_at = $1
                         WHERE id IN (SELECT id FROM artifacts WHERE expired_at IS NULL AND created_at < $2
                                      ORDER BY created_at LIMIT $3 FOR UPDATE SKIP LOCKED)
                         RETURNING id
                     ), chunks AS (
                         DELETE FROM artifact_chunks WHERE artifact_id IN (SELECT id FROM expired)
                     )
                     SELECT count(*) FROM expired",
                )
                .bind(jiff_sqlx::Timestamp::from(now))
                .bind(before(retention.artifacts))
                .bind(limit)
                .fetch_one(&self.pool)
                .await?;
                return Ok(removed.unsigned_abs());
            }
            Task::CallTranscripts => return self.expire_calls(now, limit).await,
            Task::IdempotencyRecords => sqlx::query(
                "DELETE FROM idempotency_keys WHERE (principal_id, key) IN (
                     SELECT principal_id, key FROM idempotency_keys WHERE created_at < $1
                     ORDER BY created_at LIMIT $2)",
            )
            .bind(before(retention.idempotency)),
            Task::FolderProposals => sqlx::query(
                "DELETE FROM folder_proposals WHERE id IN (
                     SELECT id FROM folder_proposals WHERE status = 'accepted' AND resolved_at < $1
                     ORDER BY resolved_at LIMIT $2)",
            )
            .bind(before(retention.folder_proposals)),
            Task::WebSessions => sqlx::query(
                "DELETE FROM web_sessions WHERE id IN (
                     SELECT id FROM web_sessions WHERE expires_at <= $1
                     ORDER BY expires_at LIMIT $2)",
            )
            .bind(jiff_sqlx::Timestamp::from(now)),
            Task::Notifications => sqlx::query(
                "DELETE FROM notification_outbox WHERE id IN (
                     SELECT id FROM notification_outbox
                     WHERE (acknowledged_at IS NOT NULL OR obsolete_at IS NOT NULL)
                       AND LEAST(acknowledged_at, obsolete_at) < $1
                       AND (delivered_at IS NULL OR withdrawn_at IS NOT NULL)
                     ORDER BY LEAST(acknowledged_at, obsolete_at) LIMIT $2)",
            )
            .bind(before(retention.notifications)),
            Task::EmailOperations => sqlx::query(
                "DELETE FROM email_operations WHERE id IN (
                     SELECT o.id FROM email_operations o
                     WHERE (o.state IN ('succeeded', 'failed') OR (o.state = 'uncertain' AND o.reconciled_at IS NOT NULL))
                       AND o.updated_at < $1
                       AND o.kind IN ('refresh', 'archive', 'move_to_inbox', 'report_spam', 'not_spam')
                       AND NOT (o.kind = 'report_spam' AND o.subscription IS NOT NULL)
                       AND (o.kind <> 'refresh' OR o.id <> (
                           SELECT r.id FROM email_operations r WHERE r.account_id = o.account_id AND r.kind = 'refresh'
                           ORDER BY r.created_at DESC, r.id DESC LIMIT 1))
                     ORDER BY o.updated_at LIMIT $2)",
            )
            .bind(before(retention.email_operations)),
        };
        let mut tx = self.pool.begin().await?;
        let alone: bool = sqlx::query_scalar("SELECT pg_try_advisory_xact_lock($1)")
            .bind(task.lock_key())
            .fetch_one(&mut *tx)
            .await?;
        if !alone {
            tx.rollback().await?;
            return Ok(0);
        }
        let removed = statement.bind(limit).execute(&mut *tx).await?.rows_affected();
        tx.commit().await?;
        Ok(removed)
    }
}
