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

/// Appends an event inside the caller's transaction and returns its sequence: the next value
/// of the session's counter, the row and the wake-up hint, in one statement.
pub(crate) async fn append(
    conn: &mut PgConnection,
    session: SessionId,
    run: Option<RunId>,
    event: &Event,
) -> Result<i64> {
    append_touching(conn, session, run, event, None).await
}

/// How an appended event also marks its session: new activity, and a title if it has none.
#[derive(Debug)]
pub(crate) struct Touch<'a> {
    pub title: Option<&'a str>,
}

/// [`append`], also updating the session's activity time and first title when `touch` is given.
pub(crate) async fn append_touching(
    conn: &mut PgConnection,
    session: SessionId,
    run: Option<RunId>,
    event: &Event,
    touch: Option<Touch<'_>>,
) -> Result<i64> {
    let (kind, payload) = event
        .to_stored()
        .map_err(|error| StoreError::Corrupt(format!("event `{}` is not serializable: {error}", event.kind())))?;
    let seq: i64 = sqlx::query_scalar(
        "WITH next AS (
             UPDATE sessions SET last_event_seq = last_event_seq + 1,
                 updated_at = CASE WHEN $5 THEN now() ELSE updated_at END,
                 title = COALESCE(title, $6)
             WHERE id = $1 RETURNING last_event_seq
         ), event AS (
             INSERT INTO events (session_id, seq, run_id, kind, payload)
             SELECT $1, next.last_event_seq, $2, $3, $4 FROM next
             RETURNING seq
         )
         SELECT event.seq FROM event",
    )
    .bind(session.as_uuid())
    .bind(run.map(|run| run.as_uuid()))
    .bind(kind)
    .bind(&payload)
    .bind(touch.is_some())
    .bind(touch.and_then(|touch| touch.title))
    .fetch_one(&mut *conn)
    .await?;
    hint(Hint::Event(session, seq));
    Ok(seq)
}

impl Store {
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
        let rows = sqlx::query(
            "SELECT e.session_id, e.seq, e.run_id, e.kind, e.payload, e.created_at
             FROM events e JOIN sessions s ON s.id = e.session_id
             WHERE e.session_id = $1 AND s.principal_id = $2 AND e.seq > $3
             ORDER BY e.seq LIMIT $4",
        )
        .bind(session.as_uuid())
        .bind(principal.as_str())
        .bind(after)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(EventRow::from_row).collect()
    }
}
