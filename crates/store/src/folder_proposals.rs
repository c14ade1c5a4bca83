//! Folder proposals: the agent proposes filing conversations into an existing folder or a new
//! one (the worker's `folders.propose` tool); nothing changes until the owner accepts, which files
//! the sessions in one transaction, or declines, which is remembered so that a declined session
//! is never proposed for the same folder again.
//!
//! Only unfiled, unscheduled sessions are ever proposed, and a session is in at most one pending
//! proposal. A pending proposal lists the sessions that are still unfiled; one with none left is
//! stale: it is not listed and cannot be accepted.

use domain::folder::FolderName;
use domain::ids::{FolderId, FolderProposalId, PrincipalId, SessionId};
use jiff::Timestamp;
use uuid::Uuid;

use crate::folders::{FolderRow, is_name_conflict};
use crate::{Result, Store, timestamp};

/// At most this many proposals wait for the owner at once; the tool is refused beyond it.
pub const MAX_PENDING_PROPOSALS: i64 = 20;

/// What a proposal would file its sessions into.
#[derive(Clone, Copy, Debug)]
pub enum ProposalTarget<'a> {
    Folder(FolderId),
    /// A folder to be made on acceptance. A name some folder already has (compared
    /// case-insensitively) proposes that folder instead.
    NewFolder(&'a FolderName),
}

/// A proposal as the owner sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct FolderProposalRow {
    pub id: FolderProposalId,
    /// The existing folder, or `None` for a new folder named `name`.
    pub folder_id: Option<FolderId>,
    /// The existing folder's current name, or the proposed new folder's.
    pub name: String,
    /// The sessions it would file that are still unfiled, in index order.
    pub session_ids: Vec<SessionId>,
    pub created_at: Timestamp,
}

/// Why a session was left out of a proposal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeftOut {
    /// No session of the owner has this id.
    NotFound,
    /// Scheduled sessions are never filed.
    Scheduled,
    /// It is in a folder already.
    Filed,
    /// It is in another proposal waiting for the owner.
    Pending,
    /// The owner declined filing it into this folder before.
    Declined,
}

impl LeftOut {
    pub fn as_str(self) -> &'static str {
        match self {
            LeftOut::NotFound => "not_found",
            LeftOut::Scheduled => "scheduled",
            LeftOut::Filed => "filed",
            LeftOut::Pending => "pending",
            LeftOut::Declined => "declined",
        }
    }
}

/// The outcome of proposing.
#[derive(Debug, PartialEq)]
pub enum Propose {
    Proposed {
        proposal: FolderProposalRow,
        left_out: Vec<(SessionId, LeftOut)>,
    },
    /// This invocation proposed already (a repeated dispatch); nothing new was recorded.
    Earlier(FolderProposalId),
    /// No session could be proposed; nothing was recorded.
    Nothing(Vec<(SessionId, LeftOut)>),
    FolderNotFound,
    /// [`MAX_PENDING_PROPOSALS`] wait already.
    TooManyPending,
}

/// The outcome of accepting.
#[derive(Debug, PartialEq)]
pub enum AcceptProposal {
    Accepted {
        folder: FolderRow,
        session_ids: Vec<SessionId>,
    },
    NotFound,
    /// Accepted or declined before.
    Resolved,
    /// None of its sessions can still be filed.
    Stale,
    /// A new name was given for a proposal of an existing folder.
    NotRenamable,
    /// Another folder has the name the owner gave the new folder.
    NameTaken,
}

/// The outcome of declining.
#[derive(Debug, PartialEq, Eq)]
pub enum DeclineProposal {
    /// Declined now, or before.
    Declined,
    NotFound,
    /// Accepted before.
    Accepted,
}

/// What the agent sees when choosing what to propose.
#[derive(Debug, PartialEq)]
pub struct FilingOverview {
    pub folders: Vec<(FolderId, String)>,
    /// Unfiled, unscheduled sessions, most recently active first: id and title.
    pub unfiled: Vec<(SessionId, Option<String>)>,
}

/// A session whose `folder_id` and `schedule_id` are both null (the session table is `s`).
const FILEABLE: &str = "s.folder_id IS NULL AND s.schedule_id IS NULL AND s.kind = 'chat'";

#[derive(sqlx::FromRow)]
struct ProposalRecord {
    id: Uuid,
    folder_id: Option<Uuid>,
    name: String,
    session_ids: Vec<Uuid>,
    created_at: jiff_sqlx::Timestamp,
}

impl From<ProposalRecord> for FolderProposalRow {
    fn from(record: ProposalRecord) -> FolderProposalRow {
        FolderProposalRow {
            id: FolderProposalId::from_uuid(record.id),
            folder_id: record.folder_id.map(FolderId::from_uuid),
            name: record.name,
            session_ids: record.session_ids.into_iter().map(SessionId::from_uuid).collect(),
            created_at: timestamp(record.created_at),
        }
    }
}

/// Pending proposals with the sessions they can still file; `$1` is the principal, `$2` a
/// proposal id or null for all.
fn pending_sql() -> String {
    format!(
        "SELECT p.id, p.folder_id, coalesce(f.name, p.folder_name) AS name, p.created_at,
                array_agg(s.id ORDER BY s.index_position) AS session_ids
         FROM folder_proposals p
         LEFT JOIN folders f ON f.id = p.folder_id
         JOIN folder_proposal_sessions ps ON ps.proposal_id = p.id
         JOIN sessions s ON s.id = ps.session_id AND {FILEABLE}
         WHERE p.principal_id = $1 AND p.status = 'pending' AND ($2::uuid IS NULL OR p.id = $2)
         GROUP BY p.id, f.name
         ORDER BY p.created_at, p.id"
    )
}

/// Files the locked `sessions` into `folder` and marks proposal `id` accepted.
async fn file_into(
    tx: &mut sqlx::PgConnection,
    id: FolderProposalId,
    folder: FolderRow,
    sessions: Vec<Uuid>,
    now: jiff_sqlx::Timestamp,
) -> Result<AcceptProposal> {
    sqlx::query("UPDATE sessions SET folder_id = $2 WHERE id = ANY($1)")
        .bind(&sessions)
        .bind(folder.id.as_uuid())
        .execute(&mut *tx)
        .await?;
    sqlx::query("UPDATE folder_proposals SET status = 'accepted', resolved_at = $2 WHERE id = $1")
        .bind(id.as_uuid())
        .bind(now)
        .execute(&mut *tx)
        .await?;
    Ok(AcceptProposal::Accepted {
        folder,
        session_ids: sessions.into_iter().map(SessionId::from_uuid).collect(),
    })
}

impl Store {
    /// Pending proposals that can still file something, oldest first.
    pub async fn folder_proposals(&self, principal: &PrincipalId) -> Result<Vec<FolderProposalRow>> {
        let records: Vec<ProposalRecord> = sqlx::query_as(&pending_sql())
            .bind(principal.as_str())
            .bind(None::<Uuid>)
            .fetch_all(&self.pool)
            .await?;
        Ok(records.into_iter().map(FolderProposalRow::from).collect())
    }

    /// The folders and the fileable sessions (at most `limit`, most recently active first).
    pub async fn filing_overview(&self, principal: &PrincipalId, limit: u32) -> Result<FilingOverview> {
        let folders: Vec<(Uuid, String)> =
            sqlx::query_as("SELECT id, name FROM folders WHERE principal_id = $1 ORDER BY lower(name), id")
                .bind(principal.as_str())
                .fetch_all(&self.pool)
                .await?;
        let unfiled: Vec<(Uuid, Option<String>)> = sqlx::query_as(&format!(
            "SELECT s.id, s.title FROM sessions s WHERE s.principal_id = $1 AND {FILEABLE}
             ORDER BY s.updated_at DESC, s.index_position DESC LIMIT $2"
        ))
        .bind(principal.as_str())
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        Ok(FilingOverview {
            folders: folders
                .into_iter()
                .map(|(id, name)| (FolderId::from_uuid(id), name))
                .collect(),
            unfiled: unfiled
                .into_iter()
                .map(|(id, title)| (SessionId::from_uuid(id), title))
                .collect(),
        })
    }

    /// Records a proposal to file `sessions` into `target`, made by tool invocation `invocation`.
    /// Sessions that cannot be proposed are left out and reported; nothing is filed.
    pub async fn propose_folder(
        &self,
        principal: &PrincipalId,
        target: ProposalTarget<'_>,
        sessions: &[SessionId],
        invocation: Uuid,
    ) -> Result<Propose> {
        let now = self.now_sql();
        self.transaction(
            async |tx: &mut sqlx::PgConnection| {
                // One proposer at a time per owner, so two runs cannot put one session in two
                // pending proposals.
                sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended('folder_proposals:' || $1, 0))")
                    .bind(principal.as_str())
                    .execute(&mut *tx)
                    .await?;
                let earlier: Option<Uuid> =
                    sqlx::query_scalar("SELECT id FROM folder_proposals WHERE invocation_id = $1")
                        .bind(invocation)
                        .fetch_optional(&mut *tx)
                        .await?;
                if let Some(earlier) = earlier {
                    return Ok(Propose::Earlier(FolderProposalId::from_uuid(earlier)));
                }
                let (folder_id, name): (Option<Uuid>, String) = match target {
                    ProposalTarget::Folder(id) => {
                        // Not locked (the worker login may only read folders): a folder deleted
                        // before the insert fails its foreign key, answered as not found below.
                        let name: Option<String> =
                            sqlx::query_scalar("SELECT name FROM folders WHERE id = $1 AND principal_id = $2")
                                .bind(id.as_uuid())
                                .bind(principal.as_str())
                                .fetch_optional(&mut *tx)
                                .await?;
                        match name {
                            Some(name) => (Some(id.as_uuid()), name),
                            None => return Ok(Propose::FolderNotFound),
                        }
                    }
                    ProposalTarget::NewFolder(name) => {
                        let existing: Option<(Uuid, String)> = sqlx::query_as(
                            "SELECT id, name FROM folders WHERE principal_id = $1 AND lower(name) = lower($2)",
                        )
                        .bind(principal.as_str())
                        .bind(name.as_str())
                        .fetch_optional(&mut *tx)
                        .await?;
                        match existing {
                            Some((id, name)) => (Some(id), name),
                            None => (None, name.as_str().to_owned()),
                        }
                    }
                };
                let pending: i64 = sqlx::query_scalar(&format!(
                    "SELECT count(*) FROM folder_proposals p
                     WHERE p.principal_id = $1 AND p.status = 'pending' AND EXISTS (
                         SELECT 1 FROM folder_proposal_sessions ps JOIN sessions s ON s.id = ps.session_id
                         WHERE ps.proposal_id = p.id AND {FILEABLE})"
                ))
                .bind(principal.as_str())
                .fetch_one(&mut *tx)
                .await?;
                if pending >= MAX_PENDING_PROPOSALS {
                    return Ok(Propose::TooManyPending);
                }

                let mut requested: Vec<Uuid> = Vec::with_capacity(sessions.len());
                for session in sessions {
                    if !requested.contains(&session.as_uuid()) {
                        requested.push(session.as_uuid());
                    }
                }
                // Shared locks until commit: the owner cannot file or delete them meanwhile, so
                // what is classified here is what gets stored.
                let found: Vec<(Uuid, bool, bool, bool, bool)> = sqlx::query_as(
                    "SELECT s.id, s.schedule_id IS NOT NULL, s.folder_id IS NOT NULL,
                            EXISTS (SELECT 1 FROM folder_proposal_sessions ps
                                    JOIN folder_proposals p ON p.id = ps.proposal_id
                                    WHERE ps.session_id = s.id AND p.status = 'pending'),
                            EXISTS (SELECT 1 FROM folder_proposal_sessions ps
                                    JOIN folder_proposals p ON p.id = ps.proposal_id
                                    WHERE ps.session_id = s.id AND p.status = 'declined'
                                      AND (p.folder_id = $3 OR lower(p.folder_name) = lower($4)))
                     FROM sessions s WHERE s.principal_id = $1 AND s.id = ANY($2)
                     ORDER BY s.id FOR SHARE OF s",
                )
                .bind(principal.as_str())
                .bind(&requested)
                .bind(folder_id)
                .bind(&name)
                .fetch_all(&mut *tx)
                .await?;
                let mut proposed = Vec::new();
                let mut left_out = Vec::new();
                for id in requested {
                    let refusal = match found.iter().find(|row| row.0 == id) {
                        None => Some(LeftOut::NotFound),
                        Some((_, true, _, _, _)) => Some(LeftOut::Scheduled),
                        Some((_, _, true, _, _)) => Some(LeftOut::Filed),
                        Some((_, _, _, true, _)) => Some(LeftOut::Pending),
                        Some((_, _, _, _, true)) => Some(LeftOut::Declined),
                        Some(_) => None,
                    };
                    match refusal {
                        Some(refusal) => left_out.push((SessionId::from_uuid(id), refusal)),
                        None => proposed.push(id),
                    }
                }
                if proposed.is_empty() {
                    return Ok(Propose::Nothing(left_out));
                }
                let id = Uuid::now_v7();
                let inserted = sqlx::query(
                    "INSERT INTO folder_proposals (id, principal_id, folder_id, folder_name, invocation_id, created_at)
                     VALUES ($1, $2, $3, $4, $5, $6)",
                )
                .bind(id)
                .bind(principal.as_str())
                .bind(folder_id)
                .bind(folder_id.is_none().then_some(&name))
                .bind(invocation)
                .bind(now)
                .execute(&mut *tx)
                .await;
                match inserted {
                    Ok(_) => {}
                    Err(sqlx::Error::Database(error)) if error.is_foreign_key_violation() => {
                        return Ok(Propose::FolderNotFound);
                    }
                    Err(error) => return Err(error.into()),
                }
                sqlx::query(
                    "INSERT INTO folder_proposal_sessions (proposal_id, session_id) SELECT $1, unnest($2::uuid[])",
                )
                .bind(id)
                .bind(&proposed)
                .execute(&mut *tx)
                .await?;
                let record: Option<ProposalRecord> = sqlx::query_as(&pending_sql())
                    .bind(principal.as_str())
                    .bind(id)
                    .fetch_optional(&mut *tx)
                    .await?;
                Ok(match record {
                    Some(record) => Propose::Proposed {
                        proposal: record.into(),
                        left_out,
                    },
                    // Cannot happen while the sessions are locked; rolled back if it ever does.
                    None => Propose::Nothing(left_out),
                })
            },
            |outcome| matches!(outcome, Propose::Proposed { .. }),
        )
        .await
    }

    /// Accepts a proposal: files its still-unfiled sessions into its folder, making a proposed
    /// new folder first (named `rename` when given), all in one transaction.
    pub async fn accept_folder_proposal(
        &self,
        principal: &PrincipalId,
        id: FolderProposalId,
        rename: Option<&FolderName>,
    ) -> Result<AcceptProposal> {
        let now = self.now_sql();
        self.transaction(
            async |tx: &mut sqlx::PgConnection| {
                // Folder, then proposal, then sessions: the order a folder delete takes them in
                // (and `file_session`'s folder-then-session), so none of them deadlock.
                let target: Option<Option<Uuid>> =
                    sqlx::query_scalar("SELECT folder_id FROM folder_proposals WHERE id = $1 AND principal_id = $2")
                        .bind(id.as_uuid())
                        .bind(principal.as_str())
                        .fetch_optional(&mut *tx)
                        .await?;
                let Some(folder_id) = target else {
                    return Ok(AcceptProposal::NotFound);
                };
                let existing = match folder_id {
                    Some(folder_id) => {
                        let row = sqlx::query(
                            "SELECT id, name, created_at, updated_at FROM folders WHERE id = $1 FOR KEY SHARE",
                        )
                        .bind(folder_id)
                        .fetch_optional(&mut *tx)
                        .await?;
                        match row {
                            Some(row) => Some(FolderRow::from_row(&row)?),
                            // Deleting the folder deleted the proposal with it.
                            None => return Ok(AcceptProposal::NotFound),
                        }
                    }
                    None => None,
                };
                let proposal: Option<(String, Option<String>)> =
                    sqlx::query_as("SELECT status, folder_name FROM folder_proposals WHERE id = $1 FOR UPDATE")
                        .bind(id.as_uuid())
                        .fetch_optional(&mut *tx)
                        .await?;
                let Some((status, folder_name)) = proposal else {
                    return Ok(AcceptProposal::NotFound);
                };
                if status != "pending" {
                    return Ok(AcceptProposal::Resolved);
                }
                if existing.is_some() && rename.is_some() {
                    return Ok(AcceptProposal::NotRenamable);
                }
                let sessions: Vec<Uuid> = sqlx::query_scalar(&format!(
                    "SELECT s.id FROM sessions s JOIN folder_proposal_sessions ps ON ps.session_id = s.id
                     WHERE ps.proposal_id = $1 AND {FILEABLE}
                     ORDER BY s.index_position FOR NO KEY UPDATE OF s"
                ))
                .bind(id.as_uuid())
                .fetch_all(&mut *tx)
                .await?;
                if sessions.is_empty() {
                    return Ok(AcceptProposal::Stale);
                }
                let folder = match existing {
                    Some(folder) => folder,
                    None => {
                        let name = rename
                            .map(FolderName::as_str)
                            .or(folder_name.as_deref())
                            .unwrap_or_default();
                        // The proposed name may have been taken since: accepted as proposed, the
                        // sessions go into that folder (as proposing that name now would); a name
                        // the owner chose on acceptance must be new.
                        if rename.is_none() {
                            let taken = sqlx::query(
                                "SELECT id, name, created_at, updated_at FROM folders
                                 WHERE principal_id = $1 AND lower(name) = lower($2) FOR KEY SHARE",
                            )
                            .bind(principal.as_str())
                            .bind(name)
                            .fetch_optional(&mut *tx)
                            .await?;
                            if let Some(row) = taken {
                                return file_into(tx, id, FolderRow::from_row(&row)?, sessions, now).await;
                            }
                        }
                        let created = sqlx::query(
                            "INSERT INTO folders (id, principal_id, name)
                             VALUES ($1, $2, $3) RETURNING id, name, created_at, updated_at",
                        )
                        .bind(Uuid::now_v7())
                        .bind(principal.as_str())
                        .bind(name)
                        .fetch_one(&mut *tx)
                        .await;
                        match created {
                            Ok(row) => FolderRow::from_row(&row)?,
                            Err(error) if is_name_conflict(&error) => return Ok(AcceptProposal::NameTaken),
                            Err(error) => return Err(error.into()),
                        }
                    }
                };
                file_into(tx, id, folder, sessions, now).await
            },
            |outcome| matches!(outcome, AcceptProposal::Accepted { .. }),
        )
        .await
    }

    /// Declines a proposal; declining it again changes nothing.
    pub async fn decline_folder_proposal(
        &self,
        principal: &PrincipalId,
        id: FolderProposalId,
    ) -> Result<DeclineProposal> {
        let declined = sqlx::query(
            "UPDATE folder_proposals SET status = 'declined', resolved_at = $3
             WHERE id = $1 AND principal_id = $2 AND status = 'pending'",
        )
        .bind(id.as_uuid())
        .bind(principal.as_str())
        .bind(self.now_sql())
        .execute(&self.pool)
        .await?;
        if declined.rows_affected() == 1 {
            return Ok(DeclineProposal::Declined);
        }
        // A fresh snapshot: an acceptance that held the row while this waited is seen here.
        let status: Option<String> =
            sqlx::query_scalar("SELECT status FROM folder_proposals WHERE id = $1 AND principal_id = $2")
                .bind(id.as_uuid())
                .bind(principal.as_str())
                .fetch_optional(&self.pool)
                .await?;
        Ok(match status.as_deref() {
            None => DeclineProposal::NotFound,
            Some("accepted") => DeclineProposal::Accepted,
            // Declined before (a pending row cannot be left: the update above would have taken it).
            Some(_) => DeclineProposal::Declined,
        })
    }
}
