//! Import history (migration 0033): the owner's request to read the mail already synced in a
//! date range again into People, as a durable operation in a session of its own that the
//! session index skips. The api starts, lists and cancels imports; the async worker claims one
//! (an expiring claim, renewed with each batch), reads it batch by batch from its cursor, charges
//! what the memory model cost, and finishes it. Every write of the worker's is guarded by its
//! claim, so a cancelled import or one another worker took over is left alone.

use domain::agent::Agent;
use domain::ids::PrincipalId;
use domain::run::Cost;
use jiff::Timestamp;
use sqlx::Row;
use uuid::Uuid;

use crate::people::{Batch, Gathered, Heard, Learned, Ungathered, lock, read_messages};
use crate::{Result, Store, StoreError, timestamp};

/// The most messages one batch reads.
pub const BATCH: u32 = 50;

pub use wire::people::ImportState;

/// The stored state's meaning.
fn parse_state(text: &str) -> Result<ImportState> {
    Ok(match text {
        "queued" => ImportState::Queued,
        "running" => ImportState::Running,
        "completed" => ImportState::Completed,
        "cancelled" => ImportState::Cancelled,
        "failed" => ImportState::Failed,
        other => return Err(StoreError::Corrupt(format!("people_imports.state `{other}`"))),
    })
}

/// Why an import ended.
pub mod reason {
    /// Every message of the range was read.
    pub const RANGE_READ: &str = "range_read";
    /// The record limit was reached.
    pub const RECORD_LIMIT: &str = "record_limit";
    /// The spending cap had no room for the next model request.
    pub const SPENDING_CAP: &str = "spending_cap";
    /// The owner cancelled it.
    pub const CANCELLED: &str = "cancelled";
}

/// An import as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportRow {
    pub id: Uuid,
    pub principal: PrincipalId,
    pub session: Uuid,
    pub since: jiff::civil::Date,
    pub until: jiff::civil::Date,
    pub record_limit: u32,
    pub spending_cap: Cost,
    pub state: ImportState,
    pub stop_reason: Option<String>,
    pub records_read: u32,
    pub people_created: u32,
    pub facts_noted: u32,
    pub beliefs_formed: u32,
    pub spent: Cost,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub finished_at: Option<Timestamp>,
}

const COLUMNS: &str = "id, principal_id, session_id, since::text AS since, until::text AS until, record_limit,
    spending_cap_micros, state, stop_reason, records_read, people_created, facts_noted, beliefs_formed, spent_micros,
    created_at, updated_at, finished_at";

fn row(record: &sqlx::postgres::PgRow) -> Result<ImportRow> {
    let count = |column: &str| -> Result<u32> {
        let value: i32 = record.try_get(column)?;
        u32::try_from(value).map_err(|_| StoreError::Corrupt(format!("people_imports.{column}")))
    };
    let date = |column: &str| -> Result<jiff::civil::Date> {
        let text: String = record.try_get(column)?;
        text.parse()
            .map_err(|_| StoreError::Corrupt(format!("people_imports.{column}")))
    };
    let state: String = record.try_get("state")?;
    let finished: Option<jiff_sqlx::Timestamp> = record.try_get("finished_at")?;
    Ok(ImportRow {
        id: record.try_get("id")?,
        principal: PrincipalId::from_stored(record.try_get("principal_id")?),
        session: record.try_get("session_id")?,
        since: date("since")?,
        until: date("until")?,
        record_limit: count("record_limit")?,
        spending_cap: Cost::from_micros(record.try_get("spending_cap_micros")?),
        state: parse_state(&state)?,
        stop_reason: record.try_get("stop_reason")?,
        records_read: count("records_read")?,
        people_created: count("people_created")?,
        facts_noted: count("facts_noted")?,
        beliefs_formed: count("beliefs_formed")?,
        spent: Cost::from_micros(record.try_get("spent_micros")?),
        created_at: timestamp(record.try_get("created_at")?),
        updated_at: timestamp(record.try_get("updated_at")?),
        finished_at: finished.map(timestamp),
    })
}

/// An import the owner asks for.
#[derive(Debug)]
pub struct NewImport<'a> {
    pub principal: &'a PrincipalId,
    /// The agent its session is pinned to (the default agent; the session runs nothing).
    pub agent: &'a Agent,
    pub since: jiff::civil::Date,
    pub until: jiff::civil::Date,
    pub record_limit: u32,
    pub spending_cap: Cost,
}

/// What asking for an import did.
#[derive(Debug, PartialEq, Eq)]
pub enum Started {
    Started(Box<ImportRow>),
    /// Another import of the principal is queued or running (its id).
    InProgress(Uuid),
}

/// One batch an import read: what gathering it did and the owner's own messages among them,
/// and whether the range or the record limit is now read to its end (the reason).
#[derive(Debug)]
pub struct ImportBatch {
    pub batch: Batch,
    pub ended: Option<&'static str>,
}

/// Import history's part of the store (`store.imports()`).
#[derive(Clone, Copy, Debug)]
pub struct Imports<'a> {
    store: &'a Store,
}

impl Store {
    pub fn imports(&self) -> Imports<'_> {
        Imports { store: self }
    }
}

impl Imports<'_> {
    /// Queues an import in a new session of its own (kind `people_import`), unless another of
    /// the principal's is queued or running.
    pub async fn start(&self, new: &NewImport<'_>) -> Result<Started> {
        let now = self.store.now_sql();
        let title = format!("Import history {} – {}", new.since, new.until);
        self.store
            .transaction(
                async |conn| {
                    // Serializes starts of one principal, so the one-active index decides calmly.
                    sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended('steward imports ' || $1, 0))")
                        .bind(new.principal.as_str())
                        .execute(&mut *conn)
                        .await?;
                    let active: Option<Uuid> = sqlx::query_scalar(
                        "SELECT id FROM people_imports WHERE principal_id = $1 AND state IN ('queued', 'running')",
                    )
                    .bind(new.principal.as_str())
                    .fetch_optional(&mut *conn)
                    .await?;
                    if let Some(active) = active {
                        return Ok(Started::InProgress(active));
                    }
                    let session = crate::sessions::insert_session_of_kind(
                        conn,
                        new.principal,
                        new.agent,
                        &title,
                        "people_import",
                    )
                    .await?;
                    let inserted = sqlx::query(&format!(
                        "INSERT INTO people_imports (id, principal_id, session_id, since, until, record_limit,
                             spending_cap_micros, state, created_at, updated_at)
                         VALUES ($1, $2, $3, $4::date, $5::date, $6, $7, 'queued', $8, $8)
                         RETURNING {COLUMNS}"
                    ))
                    .bind(Uuid::now_v7())
                    .bind(new.principal.as_str())
                    .bind(session)
                    .bind(new.since.to_string())
                    .bind(new.until.to_string())
                    .bind(i32::try_from(new.record_limit).unwrap_or(i32::MAX))
                    .bind(new.spending_cap.micros())
                    .bind(now)
                    .fetch_one(&mut *conn)
                    .await?;
                    Ok(Started::Started(Box::new(row(&inserted)?)))
                },
                |started| matches!(started, Started::Started(_)),
            )
            .await
    }

    pub async fn get(&self, principal: &PrincipalId, id: Uuid) -> Result<Option<ImportRow>> {
        let found = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM people_imports WHERE id = $1 AND principal_id = $2"
        ))
        .bind(id)
        .bind(principal.as_str())
        .fetch_optional(&self.store.pool)
        .await?;
        found.as_ref().map(row).transpose()
    }

    /// The principal's latest `limit` imports, newest first.
    pub async fn list(&self, principal: &PrincipalId, limit: u32) -> Result<Vec<ImportRow>> {
        let found = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM people_imports WHERE principal_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2"
        ))
        .bind(principal.as_str())
        .bind(i64::from(limit))
        .fetch_all(&self.store.pool)
        .await?;
        found.iter().map(row).collect()
    }

    /// Cancels the import if it is queued or running (a worker reading it stops at its next
    /// batch); the import as it now is, `None` when the principal has no such import.
    pub async fn cancel(&self, principal: &PrincipalId, id: Uuid) -> Result<Option<ImportRow>> {
        let now = self.store.now_sql();
        sqlx::query(
            "UPDATE people_imports SET state = 'cancelled', stop_reason = 'cancelled', finished_at = $3,
                 updated_at = $3, claimed_by = NULL, claimed_until = NULL
             WHERE id = $1 AND principal_id = $2 AND state IN ('queued', 'running')",
        )
        .bind(id)
        .bind(principal.as_str())
        .bind(now)
        .execute(&self.store.pool)
        .await?;
        self.get(principal, id).await
    }

    /// Claims the oldest import that is queued, or running with an expired claim or one of
    /// `worker`'s own, for `lease`.
    pub async fn claim(&self, worker: &str, lease: std::time::Duration) -> Result<Option<ImportRow>> {
        let now = self.store.now_sql();
        let claimed = sqlx::query(&format!(
            "UPDATE people_imports SET state = 'running', claimed_by = $1,
                 claimed_until = $2 + make_interval(secs => $3), updated_at = $2
             WHERE id = (
                 SELECT id FROM people_imports
                 WHERE state = 'queued' OR (state = 'running' AND (claimed_until < $2 OR claimed_by = $1))
                 ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED)
             RETURNING {COLUMNS}"
        ))
        .bind(worker)
        .bind(now)
        .bind(lease.as_secs_f64())
        .fetch_optional(&self.store.pool)
        .await?;
        claimed.as_ref().map(row).transpose()
    }

    /// Reads `import`'s next batch (at most `batch` messages, [`BATCH`] in the async worker, and
    /// no more than its record limit leaves) into People, from its cursor, with `read` learning
    /// about senders; renews the claim. `None` when `worker` no longer holds the import
    /// (cancelled, taken over).
    pub async fn read_batch(
        &self,
        import: Uuid,
        worker: &str,
        lease: std::time::Duration,
        batch: u32,
        read: &(dyn Fn(Heard<'_>) -> Vec<Learned> + Sync),
    ) -> Result<Option<ImportBatch>> {
        let now = self.store.now_sql();
        self.store
            .transaction(
                async |conn| {
                    let held = sqlx::query(
                        "SELECT principal_id, since::text AS since, until::text AS until, record_limit, records_read,
                                after_sent_at, after_message_id
                         FROM people_imports WHERE id = $1 AND claimed_by = $2 AND state = 'running' FOR UPDATE",
                    )
                    .bind(import)
                    .bind(worker)
                    .fetch_optional(&mut *conn)
                    .await?;
                    let Some(held) = held else { return Ok(None) };
                    let principal = PrincipalId::from_stored(held.try_get("principal_id")?);
                    let limit: i32 = held.try_get("record_limit")?;
                    let read_so_far: i32 = held.try_get("records_read")?;
                    let wanted = (limit - read_so_far).clamp(0, i32::try_from(batch).unwrap_or(i32::MAX));
                    lock(conn, &principal).await?;
                    let since: String = held.try_get("since")?;
                    let until: String = held.try_get("until")?;
                    let after_sent_at: Option<jiff_sqlx::Timestamp> = held.try_get("after_sent_at")?;
                    let after_message_id: Option<String> = held.try_get("after_message_id")?;
                    let messages: Vec<Ungathered> = sqlx::query_as(
                        "SELECT m.account_id, m.provider_message_id, m.thread, m.sender, m.recipients, m.copied,
                                m.sent_at, m.subject, m.body,
                                (t.in_spam OR t.suspected_spam
                                 OR EXISTS (SELECT 1 FROM jsonb_each(m.bulk) b WHERE b.value = 'true'::jsonb)) AS skip
                         FROM email_messages m JOIN email_threads t ON t.id = m.thread
                         WHERE m.sent_at >= ($1::date)::timestamp AT TIME ZONE 'UTC'
                           AND m.sent_at < ($2::date + 1)::timestamp AT TIME ZONE 'UTC'
                           AND ($3::timestamptz IS NULL OR (m.sent_at, m.provider_message_id) > ($3, $4))
                         ORDER BY m.sent_at, m.provider_message_id LIMIT $5",
                    )
                    .bind(&since)
                    .bind(&until)
                    .bind(after_sent_at)
                    .bind(after_message_id.as_deref().unwrap_or_default())
                    .bind(i64::from(wanted))
                    .fetch_all(&mut *conn)
                    .await?;
                    let mut gathered = Gathered {
                        messages: messages.len(),
                        ..Gathered::default()
                    };
                    let sent = read_messages(conn, &principal, &messages, read, &mut gathered, now).await?;
                    let last = messages.last();
                    sqlx::query(
                        "UPDATE people_imports SET records_read = records_read + $3, people_created = people_created + $4,
                             facts_noted = facts_noted + $5,
                             after_sent_at = COALESCE($6, after_sent_at), after_message_id = COALESCE($7, after_message_id),
                             claimed_until = $8 + make_interval(secs => $9), updated_at = $8
                         WHERE id = $1 AND claimed_by = $2",
                    )
                    .bind(import)
                    .bind(worker)
                    .bind(i32::try_from(messages.len()).unwrap_or(i32::MAX))
                    .bind(i32::try_from(gathered.created).unwrap_or(i32::MAX))
                    .bind(i32::try_from(gathered.facts).unwrap_or(i32::MAX))
                    .bind(last.map(|message| message.sent_at))
                    .bind(last.map(|message| message.provider_message_id.as_str()))
                    .bind(now)
                    .bind(lease.as_secs_f64())
                    .execute(&mut *conn)
                    .await?;
                    let ended = if (messages.len() as i32) < wanted {
                        Some(reason::RANGE_READ)
                    } else if read_so_far + messages.len() as i32 >= limit {
                        Some(reason::RECORD_LIMIT)
                    } else {
                        None
                    };
                    Ok(Some(ImportBatch {
                        batch: Batch { gathered, sent },
                        ended,
                    }))
                },
                |read| read.is_some(),
            )
            .await
    }

    /// Adds what the memory model cost and the beliefs formed to `worker`'s import; false when
    /// it no longer holds it.
    pub async fn progress(&self, import: Uuid, worker: &str, spent: Cost, beliefs: usize) -> Result<bool> {
        let updated = sqlx::query(
            "UPDATE people_imports SET spent_micros = spent_micros + $3, beliefs_formed = beliefs_formed + $4,
                 updated_at = $5
             WHERE id = $1 AND claimed_by = $2 AND state = 'running'",
        )
        .bind(import)
        .bind(worker)
        .bind(spent.micros())
        .bind(i32::try_from(beliefs).unwrap_or(i32::MAX))
        .bind(self.store.now_sql())
        .execute(&self.store.pool)
        .await?;
        Ok(updated.rows_affected() == 1)
    }

    /// Ends `worker`'s import: completed for `reason` (one of [`reason`]), or failed with a code.
    pub async fn finish(&self, import: Uuid, worker: &str, failed: bool, reason: &str) -> Result<bool> {
        let updated = sqlx::query(
            "UPDATE people_imports SET state = $3, stop_reason = $4, finished_at = $5, updated_at = $5,
                 claimed_by = NULL, claimed_until = NULL
             WHERE id = $1 AND claimed_by = $2 AND state = 'running'",
        )
        .bind(import)
        .bind(worker)
        .bind(if failed { "failed" } else { "completed" })
        .bind(reason)
        .bind(self.store.now_sql())
        .execute(&self.store.pool)
        .await?;
        Ok(updated.rows_affected() == 1)
    }
}
