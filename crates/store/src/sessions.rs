//! Sessions: creation with a commit-ordered index position, keyset pages, point reads, filing
//! into folders and irreversible deletion with tombstones.

use domain::agent::{Agent, AgentVersion};
use domain::ids::{FolderId, PrincipalId, RunId, ScheduleId, SessionId};
use jiff::Timestamp;
use serde_json::Value;
use sqlx::FromRow;
use sqlx::postgres::PgRow;
use uuid::Uuid;

use crate::runs::active_states_sql;
use crate::{Result, Store, timestamp};

/// A session as stored, with the id of its most recent run.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionRow {
    pub id: SessionId,
    pub title: Option<String>,
    pub agent_id: String,
    pub agent_version: AgentVersion,
    pub metadata: Value,
    pub folder_id: Option<FolderId>,
    pub schedule_id: Option<ScheduleId>,
    pub last_run_id: Option<RunId>,
    /// The browser profile chosen when the session was created (`browser.act` acts on it).
    pub browser_profile_id: Option<Uuid>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// The immutable keyset position in the session index.
    pub index_position: i64,
}

/// The [`SESSION_COLUMNS`] of a session as stored.
#[derive(sqlx::FromRow)]
struct SessionRecord {
    id: Uuid,
    title: Option<String>,
    agent_id: String,
    agent_version: String,
    metadata: Value,
    folder_id: Option<Uuid>,
    schedule_id: Option<Uuid>,
    last_run_id: Option<Uuid>,
    browser_profile_id: Option<Uuid>,
    created_at: jiff_sqlx::Timestamp,
    updated_at: jiff_sqlx::Timestamp,
    index_position: i64,
}

impl SessionRow {
    fn from_row(row: &PgRow) -> Result<SessionRow> {
        let record = SessionRecord::from_row(row)?;
        Ok(SessionRow {
            id: SessionId::from_uuid(record.id),
            title: record.title,
            agent_id: record.agent_id,
            agent_version: AgentVersion::from_stored(record.agent_version),
            metadata: record.metadata,
            folder_id: record.folder_id.map(FolderId::from_uuid),
            schedule_id: record.schedule_id.map(ScheduleId::from_uuid),
            last_run_id: record.last_run_id.map(RunId::from_uuid),
            browser_profile_id: record.browser_profile_id,
            created_at: timestamp(record.created_at),
            updated_at: timestamp(record.updated_at),
            index_position: record.index_position,
        })
    }
}

const SESSION_COLUMNS: &str = "s.id, s.title, s.agent_id, s.agent_version, s.metadata, s.folder_id, s.schedule_id,
    s.browser_profile_id, s.created_at, s.updated_at, s.index_position,
    (SELECT r.id FROM runs r WHERE r.session_id = s.id ORDER BY r.created_at DESC, r.id DESC LIMIT 1) AS last_run_id";

/// What a new session is created with.
#[derive(Debug)]
pub struct NewSession<'a> {
    pub principal: &'a PrincipalId,
    pub agent: &'a Agent,
    pub title: Option<String>,
    pub metadata: Value,
    /// A ready browser profile of the principal (the caller checked it).
    pub browser_profile: Option<Uuid>,
}

/// One page of the session index.
#[derive(Debug)]
pub struct SessionPage {
    pub rows: Vec<SessionRow>,
    /// Whether rows exist after the last one returned.
    pub more: bool,
}

/// The outcome of deleting a session.
#[derive(Debug, PartialEq, Eq)]
pub enum DeleteSession {
    Deleted,
    /// The same principal deleted it before: deleting again succeeds.
    AlreadyDeleted,
    NotFound,
    /// Refused: the session has this active run.
    ActiveRun(RunId),
}

/// The outcome of moving a session into a folder or out of one.
#[derive(Debug, PartialEq)]
pub enum FileSession {
    Filed(Box<SessionRow>),
    SessionNotFound,
    FolderNotFound,
    /// Refused: scheduled sessions never enter a folder.
    Scheduled,
}

/// Inserts a session of `kind` outside the session index's conversations (`email_send`,
/// `people_import`) for `principal`, pinned to `agent` (its version recorded if new), on `conn`;
/// its id. It takes the next index position like every session.
pub(crate) async fn insert_session_of_kind(
    conn: &mut sqlx::PgConnection,
    principal: &PrincipalId,
    agent: &domain::agent::Agent,
    title: &str,
    kind: &str,
) -> Result<Uuid> {
    let configuration = serde_json::to_value(&agent.configuration)
        .map_err(|error| crate::StoreError::Corrupt(format!("agent configuration: {error}")))?;
    let id = Uuid::now_v7();
    sqlx::query(
        "WITH version AS (
             INSERT INTO agent_versions (agent_id, version, configuration) VALUES ($3, $4, $6)
             ON CONFLICT (agent_id, version) DO NOTHING
         ), position AS (
             UPDATE session_index_clock SET position = position + 1 RETURNING position
         )
         INSERT INTO sessions (id, principal_id, index_position, agent_id, agent_version, title, kind)
         SELECT $1, $2, position.position, $3, $4, $5, $7 FROM position",
    )
    .bind(id)
    .bind(principal.as_str())
    .bind(agent.configuration.id.as_str())
    .bind(agent.version.as_str())
    .bind(title)
    .bind(configuration)
    .bind(kind)
    .execute(&mut *conn)
    .await?;
    Ok(id)
}

impl Store {
    /// Creates a session pinned to the agent's current version, recording that version's
    /// configuration on first use so the pinned configuration always stays available.
    pub async fn create_session(&self, new: NewSession<'_>) -> Result<SessionRow> {
        let configuration = serde_json::to_value(&new.agent.configuration)
            .map_err(|error| crate::StoreError::Corrupt(format!("agent configuration: {error}")))?;
        // Taking the next position locks the clock row until commit: positions follow commit order.
        let sql = format!(
            "WITH version AS (
                 INSERT INTO agent_versions (agent_id, version, configuration) VALUES ($3, $4, $7)
                 ON CONFLICT (agent_id, version) DO NOTHING
             ), position AS (
                 UPDATE session_index_clock SET position = position + 1 RETURNING position
             ), s AS (
                 INSERT INTO sessions (id, principal_id, index_position, agent_id, agent_version, title, metadata,
                                       browser_profile_id)
                 SELECT $1, $2, position.position, $3, $4, $5, $6, $8 FROM position
                 RETURNING *
             )
             SELECT {SESSION_COLUMNS} FROM s"
        );
        let row = sqlx::query(&sql)
            .bind(Uuid::now_v7())
            .bind(new.principal.as_str())
            .bind(new.agent.configuration.id.as_str())
            .bind(new.agent.version.as_str())
            .bind(new.title)
            .bind(new.metadata)
            .bind(configuration)
            .bind(new.browser_profile)
            .fetch_one(&self.pool)
            .await?;
        SessionRow::from_row(&row)
    }

    pub async fn session(&self, principal: &PrincipalId, id: SessionId) -> Result<Option<SessionRow>> {
        let sql = format!("SELECT {SESSION_COLUMNS} FROM sessions s WHERE s.id = $1 AND s.principal_id = $2");
        let row = sqlx::query(&sql)
            .bind(id.as_uuid())
            .bind(principal.as_str())
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(SessionRow::from_row).transpose()
    }

    /// The session a run belongs to.
    pub async fn run_session(&self, run: RunId) -> Result<Option<SessionRow>> {
        let sql = format!(
            "SELECT {SESSION_COLUMNS} FROM sessions s JOIN runs owner ON owner.session_id = s.id WHERE owner.id = $1"
        );
        let row = sqlx::query(&sql).bind(run.as_uuid()).fetch_optional(&self.pool).await?;
        row.as_ref().map(SessionRow::from_row).transpose()
    }

    /// Up to `limit` sessions after `after` in index order (creation commit order, oldest first).
    pub async fn session_page(&self, principal: &PrincipalId, after: Option<i64>, limit: u32) -> Result<SessionPage> {
        let sql = format!(
            "SELECT {SESSION_COLUMNS} FROM sessions s
             WHERE s.principal_id = $1 AND s.index_position > $2 AND s.kind = 'chat'
             ORDER BY s.index_position LIMIT $3"
        );
        let rows = sqlx::query(&sql)
            .bind(principal.as_str())
            .bind(after.unwrap_or(i64::MIN))
            .bind(i64::from(limit) + 1)
            .fetch_all(&self.pool)
            .await?;
        let mut rows = rows.iter().map(SessionRow::from_row).collect::<Result<Vec<_>>>()?;
        let more = rows.len() > limit as usize;
        rows.truncate(limit as usize);
        Ok(SessionPage { rows, more })
    }

    /// Deletes a session and everything in it, irreversibly, unless it has an active run.
    pub async fn delete_session(&self, principal: &PrincipalId, id: SessionId) -> Result<DeleteSession> {
        self.transaction(
            async |tx: &mut sqlx::PgConnection| {
                // The row lock conflicts with the key-share lock a new run takes on its session, so no run
                // can start between the check below and the delete.
                // A draft's send session is not in the index and keeps its sends' record: it is
                // not deleted from here.
                let exists = sqlx::query(
                    "SELECT 1 FROM sessions WHERE id = $1 AND principal_id = $2 AND kind = 'chat' FOR UPDATE",
                )
                .bind(id.as_uuid())
                .bind(principal.as_str())
                .fetch_optional(&mut *tx)
                .await?
                .is_some();
                if !exists {
                    let tombstone =
                        sqlx::query("SELECT 1 FROM deleted_sessions WHERE session_id = $1 AND principal_id = $2")
                            .bind(id.as_uuid())
                            .bind(principal.as_str())
                            .fetch_optional(&mut *tx)
                            .await?;
                    return Ok(if tombstone.is_some() {
                        DeleteSession::AlreadyDeleted
                    } else {
                        DeleteSession::NotFound
                    });
                }
                let sql = format!(
                    "SELECT id FROM runs WHERE session_id = $1 AND state IN ({})",
                    active_states_sql()
                );
                let active: Option<Uuid> = sqlx::query_scalar(&sql)
                    .bind(id.as_uuid())
                    .fetch_optional(&mut *tx)
                    .await?;
                if let Some(run) = active {
                    return Ok(DeleteSession::ActiveRun(RunId::from_uuid(run)));
                }
                sqlx::query("DELETE FROM sessions WHERE id = $1")
                    .bind(id.as_uuid())
                    .execute(&mut *tx)
                    .await?;
                // Wakes the session's open streams so they notice it is gone.
                crate::wake::hint(crate::wake::Hint::Event(id, 0));
                sqlx::query(
                    "INSERT INTO deleted_sessions (session_id, principal_id) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                )
                .bind(id.as_uuid())
                .bind(principal.as_str())
                .execute(&mut *tx)
                .await?;
                Ok(DeleteSession::Deleted)
            },
            |outcome| *outcome == DeleteSession::Deleted,
        )
        .await
    }

    /// Moves a session into `folder`, or out of any folder when `folder` is `None`.
    pub async fn file_session(
        &self,
        principal: &PrincipalId,
        id: SessionId,
        folder: Option<FolderId>,
    ) -> Result<FileSession> {
        self.transaction(
            async |tx: &mut sqlx::PgConnection| {
                // Folder before session: the order a folder delete takes them in (the folder row, then
                // its sessions through ON DELETE SET NULL), so the two never deadlock. NO KEY UPDATE
                // leaves new runs and uploads, which only key-share the session, unblocked.
                let folder_exists = match folder {
                    Some(folder) => {
                        sqlx::query("SELECT 1 FROM folders WHERE id = $1 AND principal_id = $2 FOR KEY SHARE")
                            .bind(folder.as_uuid())
                            .bind(principal.as_str())
                            .fetch_optional(&mut *tx)
                            .await?
                            .is_some()
                    }
                    None => true,
                };
                let schedule: Option<Option<Uuid>> = sqlx::query_scalar(
                    "SELECT schedule_id FROM sessions WHERE id = $1 AND principal_id = $2 AND kind = 'chat'
                     FOR NO KEY UPDATE",
                )
                .bind(id.as_uuid())
                .bind(principal.as_str())
                .fetch_optional(&mut *tx)
                .await?;
                let Some(schedule) = schedule else {
                    return Ok(FileSession::SessionNotFound);
                };
                if folder.is_some() && schedule.is_some() {
                    return Ok(FileSession::Scheduled);
                }
                if !folder_exists {
                    return Ok(FileSession::FolderNotFound);
                }
                sqlx::query("UPDATE sessions SET folder_id = $2 WHERE id = $1")
                    .bind(id.as_uuid())
                    .bind(folder.map(|folder| folder.as_uuid()))
                    .execute(&mut *tx)
                    .await?;
                if folder.is_some() {
                    // The owner filed it: no proposal waiting for the owner offers it any more
                    // (so unfiling it later cannot bring an old proposal back).
                    sqlx::query(
                        "DELETE FROM folder_proposal_sessions ps USING folder_proposals p
                         WHERE ps.session_id = $1 AND p.id = ps.proposal_id AND p.status = 'pending'",
                    )
                    .bind(id.as_uuid())
                    .execute(&mut *tx)
                    .await?;
                }
                let sql = format!("SELECT {SESSION_COLUMNS} FROM sessions s WHERE s.id = $1");
                let row = sqlx::query(&sql).bind(id.as_uuid()).fetch_one(&mut *tx).await?;
                Ok(FileSession::Filed(Box::new(SessionRow::from_row(&row)?)))
            },
            |outcome| matches!(outcome, FileSession::Filed(_)),
        )
        .await
    }
}
