//! The per-session event log. Sequences are contiguous per session: each append takes the next
//! value of `sessions.last_event_seq` inside the writing transaction, so they commit in order.
//! Every append raises a wake-up hint, published once its transaction commits (`wake`); the
//! table stays the source of truth.

use domain::ids::{PrincipalId, RunId, SessionId};
use jiff::Timestamp;
use serde_json::Value;
use sqlx::postgres::PgRow;
use sqlx::{FromRow, PgConnection};
use uuid::Uuid;
use wire::event::Event;

use crate::wake::{Hint, hint};
use crate::{Result, Store, StoreError, timestamp};

#[derive(Clone, Debug, PartialEq)]
pub struct EventRow {
    pub session_id: SessionId,
    pub seq: i64,
    pub run_id: Option<RunId>,
    pub event: Event,
    pub created_at: Timestamp,
}

/// An `events` row as stored.
#[derive(sqlx::FromRow)]
struct EventRecord {
    session_id: Uuid,
    seq: i64,
    run_id: Option<Uuid>,
    kind: String,
    payload: Value,
    created_at: jiff_sqlx::Timestamp,
}

impl EventRow {
    fn from_row(row: &PgRow) -> Result<EventRow> {
        let record = EventRecord::from_row(row)?;
        let event = Event::from_stored(&record.kind, record.payload)
            .map_err(|error| StoreError::Corrupt(format!("event {} (`{}`): {error}", record.seq, record.kind)))?;
        Ok(EventRow {
            session_id: SessionId::from_uuid(record.session_id),
            seq: record.seq,
            run_id: record.run_id.map(RunId::from_uuid),
            event,
            created_at: timestamp(record.created_at),
        })
    }

    /// The event as the stream sends it.
    pub fn into_frame(self) -> wire::event::Frame {
        wire::event::Frame {
            seq: self.seq,
            run_id: self.run_id.map(|run| run.as_uuid()),
            created_at: self.created_at,
            event: self.event,
        }
    }
}

/// A stored event ready for the stream: its frame's JSON built around the stored payload, which is
/// sent as written and never parsed (replaying a long session costs no payload round trip through
/// the typed vocabulary).
#[derive(Clone, Debug, PartialEq)]
pub struct StoredFrame {
    pub seq: i64,
    pub kind: &'static str,
    /// Whether the event ends its run.
    pub ends_run: bool,
    /// The frame's JSON ([`wire::event::Frame`]).
    pub data: String,
}

/// Appends an event inside the caller's transaction and returns its sequence: the next value
/// of the session's counter, the row and the wake-up hint, in one statement.
pub(crate) async fn append(
    conn: &mut PgConnection,
    session: SessionId,
    run: Option<RunId>,
    event: &Event,
) -> Result<i64> {
    let seqs = append_to_sessions(conn, &[(session, run, event)], Appending::ToExisting).await?;
    Ok(seqs[0])
}

/// The sequence of a session's first event.
pub(crate) const FIRST_SEQ: i64 = 1;

/// What kind of sessions an append writes to.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Appending {
    /// Sessions that may have streams open: each event raises its wake-up hint; the sessions'
    /// activity times stay.
    ToExisting,
    /// Sessions the caller's transaction inserted with no event and their counter already at
    /// [`FIRST_SEQ`]: each event is its session's first, written there with no update of the session
    /// (a batch of fresh sessions would otherwise write each session twice). Nobody can be
    /// streaming them yet, so no hint is raised (a batch of hundreds would otherwise become one
    /// "everything changed" wake-up for every stream).
    ToNew,
}

/// Appends one event to each of `appended`'s sessions (each session at most once) inside the
/// caller's transaction, in one statement: each takes the next value of its session's counter.
/// Returns each event's sequence, in order.
pub(crate) async fn append_to_sessions(
    conn: &mut PgConnection,
    appended: &[(SessionId, Option<RunId>, &Event)],
    appending: Appending,
) -> Result<Vec<i64>> {
    let mut sessions = Vec::with_capacity(appended.len());
    let mut runs = Vec::with_capacity(appended.len());
    let mut kinds = Vec::with_capacity(appended.len());
    let mut payloads = Vec::with_capacity(appended.len());
    for (session, run, event) in appended {
        let (kind, payload) = event
            .to_stored()
            .map_err(|error| StoreError::Corrupt(format!("event `{}` is not serializable: {error}", event.kind())))?;
        sessions.push(session.as_uuid());
        runs.push(run.map(|run| run.as_uuid()));
        kinds.push(kind);
        payloads.push(payload);
    }
    if appending == Appending::ToNew {
        // The primary key refuses a session listed twice or one that already has its first event.
        let written = sqlx::query(
            "INSERT INTO events (session_id, seq, run_id, kind, payload)
             SELECT session_id, $5, run_id, kind, payload FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::jsonb[])
                 AS i(session_id, run_id, kind, payload)",
        )
        .bind(&sessions)
        .bind(&runs)
        .bind(&kinds)
        .bind(&payloads)
        .bind(FIRST_SEQ)
        .execute(&mut *conn)
        .await?
        .rows_affected();
        if written != appended.len() as u64 {
            return Err(StoreError::Corrupt(format!(
                "{written} of {} fresh sessions took their first event",
                appended.len()
            )));
        }
        return Ok(vec![FIRST_SEQ; appended.len()]);
    }
    let rows: Vec<(i64, i64)> = sqlx::query_as(
        "WITH input AS (
             SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::jsonb[])
                 WITH ORDINALITY AS i(session_id, run_id, kind, payload, position)
         ), next AS (
             UPDATE sessions s SET last_event_seq = s.last_event_seq + 1
             FROM input WHERE s.id = input.session_id RETURNING s.id, s.last_event_seq
         ), event AS (
             INSERT INTO events (session_id, seq, run_id, kind, payload)
             SELECT input.session_id, next.last_event_seq, input.run_id, input.kind, input.payload
             FROM input JOIN next ON next.id = input.session_id
             RETURNING session_id, seq
         )
         SELECT input.position, event.seq FROM input JOIN event ON event.session_id = input.session_id
         ORDER BY input.position",
    )
    .bind(&sessions)
    .bind(&runs)
    .bind(&kinds)
    .bind(&payloads)
    .fetch_all(&mut *conn)
    .await?;
    if rows.len() != appended.len() {
        return Err(StoreError::Corrupt(format!(
            "{} of {} sessions took an event (a session is missing or listed twice)",
            rows.len(),
            appended.len()
        )));
    }
    for ((session, _, _), (_, seq)) in appended.iter().zip(&rows) {
        hint(Hint::Event(*session, *seq));
    }
    Ok(rows.into_iter().map(|(_, seq)| seq).collect())
}

/// The query of a session's events after a sequence, selecting `$columns`: `$1` the session, `$2`
/// its principal, `$3` the last sequence already had, `$4` the most rows wanted.
macro_rules! events_after {
    ($columns:literal) => {
        concat!(
            "SELECT ",
            $columns,
            " FROM events e JOIN sessions s ON s.id = e.session_id
             WHERE e.session_id = $1 AND s.principal_id = $2 AND e.seq > $3
             ORDER BY e.seq LIMIT $4"
        )
    };
}

impl Store {
    /// Runs an [`events_after!`] query.
    async fn rows_after(
        &self,
        sql: &'static str,
        principal: &PrincipalId,
        session: SessionId,
        after: i64,
        limit: u32,
    ) -> Result<Vec<PgRow>> {
        Ok(sqlx::query(sql)
            .bind(session.as_uuid())
            .bind(principal.as_str())
            .bind(after)
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await?)
    }

    /// Appends one event in its own transaction.
    pub async fn append_event(&self, session: SessionId, run: Option<RunId>, event: &Event) -> Result<i64> {
        self.transaction(
            async |tx: &mut PgConnection| append(tx, session, run, event).await,
            |_| true,
        )
        .await
    }

    /// Every event of a session after `after`, for roles that act for the session's owner.
    pub(crate) async fn events_after_unchecked(&self, session: SessionId, after: i64) -> Result<Vec<EventRow>> {
        let rows = sqlx::query(
            "SELECT session_id, seq, run_id, kind, payload, created_at FROM events
             WHERE session_id = $1 AND seq > $2 ORDER BY seq",
        )
        .bind(session.as_uuid())
        .bind(after)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(EventRow::from_row).collect()
    }

    /// Up to `limit` events of a session of `principal` after sequence `after`, in order.
    pub async fn events_after(
        &self,
        principal: &PrincipalId,
        session: SessionId,
        after: i64,
        limit: u32,
    ) -> Result<Vec<EventRow>> {
        let rows = self
            .rows_after(
                events_after!("e.session_id, e.seq, e.run_id, e.kind, e.payload, e.created_at"),
                principal,
                session,
                after,
                limit,
            )
            .await?;
        rows.iter().map(EventRow::from_row).collect()
    }

    /// [`Store::events_after`] as stream frames.
    pub async fn frames_after(
        &self,
        principal: &PrincipalId,
        session: SessionId,
        after: i64,
        limit: u32,
    ) -> Result<Vec<StoredFrame>> {
        let rows = self
            .rows_after(
                events_after!("e.seq, e.run_id, e.kind, e.payload::text, e.created_at"),
                principal,
                session,
                after,
                limit,
            )
            .await?;
        rows.iter()
            .map(|row| {
                let (seq, run_id, kind, payload, created_at) =
                    <(i64, Option<Uuid>, String, String, jiff_sqlx::Timestamp)>::from_row(row)?;
                let (kind, ends_run) = Event::stored_kind(&kind)
                    .ok_or_else(|| StoreError::Corrupt(format!("event {seq} has an unknown kind `{kind}`")))?;
                let data = wire::event::Frame::data_of_stored(seq, run_id, timestamp(created_at), kind, &payload);
                Ok(StoredFrame {
                    seq,
                    kind,
                    ends_run,
                    data,
                })
            })
            .collect()
    }
}
