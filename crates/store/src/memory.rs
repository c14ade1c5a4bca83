//! Memory's storage (`memories`, `memory_evidence`, `memory_tombstones`, `memory_exclusions`,
//! `recall_traces`), behind `store.memory()`: forming a belief (refused when a deleted
//! statement's tombstone is close to it, merged into a close belief already held), the owner's
//! listing and review, deletion leaving a tombstone, and recall with its traces. Statements are
//! the owner's data: none is logged.

use domain::ids::PrincipalId;
use domain::memory::{MemoryKind, MemoryOrigin, MemoryStatus, Statement, close, normalize};
use jiff::Timestamp;
use uuid::Uuid;

use crate::{Result, Store, named, prefixed, timestamp};

/// Memory's part of the store (`store.memory()`).
#[derive(Clone, Copy, Debug)]
pub struct Memory<'a> {
    store: &'a Store,
}

impl Store {
    /// Memory's storage.
    pub fn memory(&self) -> Memory<'_> {
        Memory { store: self }
    }
}

/// What a belief is formed from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Evidence {
    /// A conversation's run.
    Run { session: Uuid, run: Uuid },
    /// A message of a mail thread.
    Mail { thread: Uuid, provider_message_id: String },
}

impl Evidence {
    pub const fn origin(&self) -> MemoryOrigin {
        match self {
            Evidence::Run { .. } => MemoryOrigin::Conversation,
            Evidence::Mail { .. } => MemoryOrigin::Email,
        }
    }
}

/// A belief to form.
#[derive(Clone, Debug)]
pub struct NewMemory {
    pub kind: MemoryKind,
    pub statement: Statement,
    pub evidence: Evidence,
}

/// What forming a belief did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Formed {
    /// A new belief (flagged for review when it came from mail).
    Created(Uuid),
    /// A belief equal or close to it is held already (whatever its status): the evidence was
    /// added to that one.
    Known(Uuid),
    /// The owner deleted a statement equal or close to it: nothing was formed.
    Forbidden,
}

/// A belief as the owner sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct MemoryRow {
    pub id: Uuid,
    /// Its place in the listing (newest highest).
    pub position: i64,
    pub kind: MemoryKind,
    pub statement: String,
    pub status: MemoryStatus,
    pub needs_review: bool,
    pub origin: MemoryOrigin,
    pub formed_at: Timestamp,
    pub reviewed_at: Option<Timestamp>,
}

#[derive(sqlx::FromRow)]
struct MemoryRecord {
    id: Uuid,
    position: i64,
    kind: String,
    statement: String,
    status: String,
    needs_review: bool,
    origin: String,
    formed_at: jiff_sqlx::Timestamp,
    reviewed_at: Option<jiff_sqlx::Timestamp>,
}

impl MemoryRecord {
    fn into_row(self) -> Result<MemoryRow> {
        Ok(MemoryRow {
            id: self.id,
            position: self.position,
            kind: named(self.kind)?,
            statement: self.statement,
            status: named(self.status)?,
            needs_review: self.needs_review,
            origin: named(self.origin)?,
            formed_at: timestamp(self.formed_at),
            reviewed_at: self.reviewed_at.map(timestamp),
        })
    }
}

const MEMORY_COLUMNS: &str = "id, position, kind, statement, status, needs_review, origin, formed_at, reviewed_at";

/// Which beliefs a listing shows: newest first, before `before` (a position) when given.
#[derive(Clone, Debug, Default)]
pub struct MemoryQuery {
    pub status: Option<MemoryStatus>,
    pub kind: Option<MemoryKind>,
    /// Only those flagged for review (`true`) or only those not flagged (`false`).
    pub needs_review: Option<bool>,
    pub before: Option<i64>,
    pub limit: u32,
}

/// The owner's review of a belief.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Review {
    /// `Mark reviewed`: recalled from now on, flagged no more.
    Reviewed,
    /// `Not true`: never recalled, not formed again.
    NotTrue,
}

/// One piece of a belief's evidence.
#[derive(Clone, Debug, PartialEq)]
pub struct EvidenceRow {
    pub session: Option<Uuid>,
    pub run: Option<Uuid>,
    pub email_thread: Option<Uuid>,
    pub provider_message_id: Option<String>,
    pub noted_at: Timestamp,
}

#[derive(sqlx::FromRow)]
struct EvidenceRecord {
    session_id: Option<Uuid>,
    run_id: Option<Uuid>,
    email_thread: Option<Uuid>,
    provider_message_id: Option<String>,
    noted_at: jiff_sqlx::Timestamp,
}

/// A belief recalled into a run's prompt.
#[derive(Clone, Debug, PartialEq)]
pub struct Recalled {
    pub id: Uuid,
    pub kind: MemoryKind,
    pub statement: String,
}

/// One run whose prompt received a belief.
#[derive(Clone, Debug, PartialEq)]
pub struct RecallRow {
    pub run: Uuid,
    pub session: Uuid,
    pub rank: i16,
    pub recalled_at: Timestamp,
}

/// The most beliefs one run's prompt receives.
pub const MAX_RECALLED: usize = 8;

/// The words recall searches for in `text`: letters and digits, at least three of them, not
/// filler, each once (at most 32), one space apart; `None` when there are none. The statement
/// turns them into a query of prefix alternatives through PostgreSQL's own parser, so no word
/// can make the query malformed.
fn recall_query(text: &str) -> Option<String> {
    let mut words: Vec<String> = Vec::new();
    for word in normalize(text).split(' ') {
        if word.chars().count() >= 3 && !words.iter().any(|seen| seen == word) {
            words.push(word.to_owned());
        }
        if words.len() == 32 {
            break;
        }
    }
    (!words.is_empty()).then(|| words.join(" "))
}

impl Memory<'_> {
    /// Forms `new` for `principal`, in one transaction under the principal's memory lock (so
    /// two formings of close statements cannot both create one): refused when a tombstone is
    /// close to it, merged into a belief close to it, created otherwise (flagged for review
    /// when it came from mail).
    pub async fn form(&self, principal: &PrincipalId, new: &NewMemory) -> Result<Formed> {
        let normalized = new.statement.normalized();
        let now = self.store.now_sql();
        self.store
            .transaction(
                async |conn| {
                    sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended('steward memory ' || $1, 0))")
                        .bind(principal.as_str())
                        .execute(&mut *conn)
                        .await?;
                    let tombstones: Vec<String> =
                        sqlx::query_scalar("SELECT normalized FROM memory_tombstones WHERE principal_id = $1")
                            .bind(principal.as_str())
                            .fetch_all(&mut *conn)
                            .await?;
                    if tombstones.iter().any(|tombstone| close(tombstone, &normalized)) {
                        return Ok(Formed::Forbidden);
                    }
                    let held: Vec<(Uuid, String)> =
                        sqlx::query_as("SELECT id, normalized FROM memories WHERE principal_id = $1")
                            .bind(principal.as_str())
                            .fetch_all(&mut *conn)
                            .await?;
                    let formed = match held.iter().find(|(_, form)| close(form, &normalized)) {
                        Some((id, _)) => Formed::Known(*id),
                        None => {
                            let id = Uuid::now_v7();
                            let origin = new.evidence.origin();
                            sqlx::query(
                                "INSERT INTO memories
                                     (id, principal_id, kind, statement, normalized, needs_review, origin, formed_at)
                                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                            )
                            .bind(id)
                            .bind(principal.as_str())
                            .bind(new.kind.as_str())
                            .bind(new.statement.as_str())
                            .bind(&normalized)
                            .bind(origin.needs_review())
                            .bind(origin.as_str())
                            .bind(now)
                            .execute(&mut *conn)
                            .await?;
                            Formed::Created(id)
                        }
                    };
                    let (Formed::Created(memory) | Formed::Known(memory)) = formed else {
                        return Ok(formed);
                    };
                    let (session, run, thread, message) = match &new.evidence {
                        Evidence::Run { session, run } => (Some(*session), Some(*run), None, None),
                        Evidence::Mail {
                            thread,
                            provider_message_id,
                        } => (None, None, Some(*thread), Some(provider_message_id.as_str())),
                    };
                    sqlx::query(
                        "INSERT INTO memory_evidence (memory_id, session_id, run_id, email_thread, provider_message_id, noted_at)
                         VALUES ($1, $2, $3, $4, $5, $6)",
                    )
                    .bind(memory)
                    .bind(session)
                    .bind(run)
                    .bind(thread)
                    .bind(message)
                    .bind(now)
                    .execute(&mut *conn)
                    .await?;
                    Ok(formed)
                },
                |_| true,
            )
            .await
    }

    /// The owner's beliefs that `query` selects, newest first.
    pub async fn list(&self, principal: &PrincipalId, query: &MemoryQuery) -> Result<Vec<MemoryRow>> {
        let records: Vec<MemoryRecord> = sqlx::query_as(&format!(
            "SELECT {MEMORY_COLUMNS} FROM memories
             WHERE principal_id = $1
               AND ($2::text IS NULL OR status = $2)
               AND ($3::text IS NULL OR kind = $3)
               AND ($4::boolean IS NULL OR needs_review = $4)
               AND ($5::bigint IS NULL OR position < $5)
             ORDER BY position DESC LIMIT $6"
        ))
        .bind(principal.as_str())
        .bind(query.status.map(MemoryStatus::as_str))
        .bind(query.kind.map(MemoryKind::as_str))
        .bind(query.needs_review)
        .bind(query.before)
        .bind(i64::from(query.limit))
        .fetch_all(&self.store.pool)
        .await?;
        records.into_iter().map(MemoryRecord::into_row).collect()
    }

    /// One of the owner's beliefs.
    pub async fn get(&self, principal: &PrincipalId, id: Uuid) -> Result<Option<MemoryRow>> {
        let record: Option<MemoryRecord> = sqlx::query_as(&format!(
            "SELECT {MEMORY_COLUMNS} FROM memories WHERE id = $1 AND principal_id = $2"
        ))
        .bind(id)
        .bind(principal.as_str())
        .fetch_optional(&self.store.pool)
        .await?;
        record.map(MemoryRecord::into_row).transpose()
    }

    /// A belief's evidence, oldest first (at most 50 pieces).
    pub async fn evidence(&self, principal: &PrincipalId, id: Uuid) -> Result<Vec<EvidenceRow>> {
        let records: Vec<EvidenceRecord> = sqlx::query_as(
            "SELECT e.session_id, e.run_id, e.email_thread, e.provider_message_id, e.noted_at
             FROM memory_evidence e JOIN memories m ON m.id = e.memory_id
             WHERE e.memory_id = $1 AND m.principal_id = $2
             ORDER BY e.id LIMIT 50",
        )
        .bind(id)
        .bind(principal.as_str())
        .fetch_all(&self.store.pool)
        .await?;
        Ok(records
            .into_iter()
            .map(|record| EvidenceRow {
                session: record.session_id,
                run: record.run_id,
                email_thread: record.email_thread,
                provider_message_id: record.provider_message_id,
                noted_at: timestamp(record.noted_at),
            })
            .collect())
    }

    /// Marks a belief reviewed or not true; `None` when the owner has no such belief.
    pub async fn review(&self, principal: &PrincipalId, id: Uuid, review: Review) -> Result<Option<MemoryRow>> {
        let status = match review {
            Review::Reviewed => MemoryStatus::Reviewed,
            Review::NotTrue => MemoryStatus::NotTrue,
        };
        let record: Option<MemoryRecord> = sqlx::query_as(&format!(
            "UPDATE memories SET status = $3, needs_review = false, reviewed_at = $4
             WHERE id = $1 AND principal_id = $2
             RETURNING {MEMORY_COLUMNS}"
        ))
        .bind(id)
        .bind(principal.as_str())
        .bind(status.as_str())
        .bind(self.store.now_sql())
        .fetch_optional(&self.store.pool)
        .await?;
        record.map(MemoryRecord::into_row).transpose()
    }

    /// `Not relevant here`: the belief is never recalled into `session` again; `false` when the
    /// owner has no such belief or no such conversation.
    pub async fn exclude(&self, principal: &PrincipalId, id: Uuid, session: Uuid) -> Result<bool> {
        let excluded = sqlx::query(
            "INSERT INTO memory_exclusions (memory_id, session_id, excluded_at)
             SELECT m.id, s.id, $4 FROM memories m, sessions s
             WHERE m.id = $1 AND m.principal_id = $2 AND s.id = $3 AND s.principal_id = $2
             ON CONFLICT (memory_id, session_id) DO NOTHING",
        )
        .bind(id)
        .bind(principal.as_str())
        .bind(session)
        .bind(self.store.now_sql())
        .execute(&self.store.pool)
        .await?;
        if excluded.rows_affected() == 1 {
            return Ok(true);
        }
        // Already excluded counts as done.
        let already: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM memory_exclusions e JOIN memories m ON m.id = e.memory_id
                            WHERE e.memory_id = $1 AND e.session_id = $2 AND m.principal_id = $3)",
        )
        .bind(id)
        .bind(session)
        .bind(principal.as_str())
        .fetch_one(&self.store.pool)
        .await?;
        Ok(already)
    }

    /// Deletes a belief (its evidence, exclusions and recall traces with it; never their
    /// sources) and keeps its normalized form as a tombstone; `false` when there was none.
    pub async fn delete(&self, principal: &PrincipalId, id: Uuid) -> Result<bool> {
        let now = self.store.now_sql();
        self.store
            .transaction(
                async |conn| {
                    let normalized: Option<String> = sqlx::query_scalar(
                        "DELETE FROM memories WHERE id = $1 AND principal_id = $2 RETURNING normalized",
                    )
                    .bind(id)
                    .bind(principal.as_str())
                    .fetch_optional(&mut *conn)
                    .await?;
                    let Some(normalized) = normalized else {
                        return Ok(false);
                    };
                    sqlx::query(
                        "INSERT INTO memory_tombstones (principal_id, normalized, deleted_at) VALUES ($1, $2, $3)
                         ON CONFLICT DO NOTHING",
                    )
                    .bind(principal.as_str())
                    .bind(normalized)
                    .bind(now)
                    .execute(&mut *conn)
                    .await?;
                    Ok(true)
                },
                |_| true,
            )
            .await
    }

    /// The beliefs relevant to `text` that a run of `session` may receive: reviewed, or formed
    /// and not flagged; never one the owner said is not true, nor one marked not relevant in
    /// this conversation. Best match first, at most [`MAX_RECALLED`].
    pub async fn recall(&self, principal: &PrincipalId, session: Uuid, text: &str) -> Result<Vec<Recalled>> {
        let Some(query) = recall_query(text) else {
            return Ok(Vec::new());
        };
        // Each word a prefix (`like`, the normalized word, finds `likes`); a word the parser
        // finds no lexeme in drops out, and none at all finds nothing.
        let rows: Vec<(Uuid, String, String)> = sqlx::query_as(
            "SELECT m.id, m.kind, m.statement
             FROM memories m,
                  (SELECT to_tsquery('simple', string_agg(quote_literal(lexeme) || ':*', ' | ')) AS q
                   FROM unnest(to_tsvector('simple', $3))) AS query
             WHERE m.principal_id = $1
               AND (m.status = 'reviewed' OR (m.status = 'active' AND NOT m.needs_review))
               AND m.searchable @@ query.q
               AND NOT EXISTS (SELECT 1 FROM memory_exclusions e WHERE e.memory_id = m.id AND e.session_id = $2)
             ORDER BY ts_rank(m.searchable, query.q) DESC, m.position DESC
             LIMIT $4",
        )
        .bind(principal.as_str())
        .bind(session)
        .bind(query)
        .bind(MAX_RECALLED as i64)
        .fetch_all(&self.store.pool)
        .await?;
        rows.into_iter()
            .map(|(id, kind, statement)| {
                Ok(Recalled {
                    id,
                    kind: named(kind)?,
                    statement,
                })
            })
            .collect()
    }

    /// Records that `run`'s prompt received `recalled`, in that order.
    pub async fn trace_recall(&self, run: Uuid, recalled: &[Recalled]) -> Result<()> {
        let ids: Vec<Uuid> = recalled.iter().map(|memory| memory.id).collect();
        sqlx::query(
            "INSERT INTO recall_traces (run_id, memory_id, rank, recalled_at)
             SELECT $1, memory, rank, $3 FROM unnest($2::uuid[]) WITH ORDINALITY AS t(memory, rank)
             ON CONFLICT DO NOTHING",
        )
        .bind(run)
        .bind(&ids)
        .bind(self.store.now_sql())
        .execute(&self.store.pool)
        .await?;
        Ok(())
    }

    /// The runs whose prompt received a belief, newest first (at most 50).
    pub async fn recalls(&self, principal: &PrincipalId, id: Uuid) -> Result<Vec<RecallRow>> {
        let rows: Vec<(Uuid, Uuid, i16, jiff_sqlx::Timestamp)> = sqlx::query_as(
            "SELECT t.run_id, r.session_id, t.rank, t.recalled_at
             FROM recall_traces t JOIN memories m ON m.id = t.memory_id JOIN runs r ON r.id = t.run_id
             WHERE t.memory_id = $1 AND m.principal_id = $2
             ORDER BY t.recalled_at DESC, t.run_id DESC LIMIT 50",
        )
        .bind(id)
        .bind(principal.as_str())
        .fetch_all(&self.store.pool)
        .await?;
        Ok(rows
            .into_iter()
            .map(|(run, session, rank, recalled_at)| RecallRow {
                run,
                session,
                rank,
                recalled_at: timestamp(recalled_at),
            })
            .collect())
    }

    /// The beliefs `run`'s prompt received, in rank order (the owner's runs only).
    pub async fn recalled_by(&self, principal: &PrincipalId, run: Uuid) -> Result<Vec<MemoryRow>> {
        let records: Vec<MemoryRecord> = sqlx::query_as(&format!(
            "SELECT {} FROM recall_traces t JOIN memories m ON m.id = t.memory_id
             WHERE t.run_id = $1 AND m.principal_id = $2 ORDER BY t.rank",
            prefixed(MEMORY_COLUMNS, "m")
        ))
        .bind(run)
        .bind(principal.as_str())
        .fetch_all(&self.store.pool)
        .await?;
        records.into_iter().map(MemoryRecord::into_row).collect()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn recall_searches_for_the_words_that_say_something_each_once() {
        assert_eq!(
            super::recall_query("What tea does Ada like? Tea, please!").as_deref(),
            Some("what tea ada like please")
        );
        assert_eq!(super::recall_query("is it ok?"), None);
        let many = (0..40).map(|n| format!("word{n}")).collect::<Vec<_>>().join(" ");
        assert_eq!(super::recall_query(&many).expect("words").split(' ').count(), 32);
    }
}
