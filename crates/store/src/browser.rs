//! Website Access (`browser_profiles`, `browser_ceremonies`): the owner's browser profiles and
//! the secret-free records of their sign-in ceremonies. Website sessions themselves are sealed
//! by the browser role; nothing of them, no capability and no page address is stored here.

use domain::browser::{Exception, TaskOffer};
use domain::ids::PrincipalId;
use jiff::Timestamp;
use uuid::Uuid;

use wire::browser::{CeremonyKind, CeremonyState};

use crate::{Result, Store, timestamp};

/// Where a profile stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProfileState {
    /// Created, no ceremony completed yet.
    Pending,
    /// Signed in at least once.
    Ready,
    /// Removed by the owner; its session is gone.
    Revoked,
}

impl ProfileState {
    pub const fn as_str(self) -> &'static str {
        match self {
            ProfileState::Pending => "pending",
            ProfileState::Ready => "ready",
            ProfileState::Revoked => "revoked",
        }
    }

    fn parse(text: &str) -> Result<ProfileState> {
        match text {
            "pending" => Ok(ProfileState::Pending),
            "ready" => Ok(ProfileState::Ready),
            "revoked" => Ok(ProfileState::Revoked),
            other => Err(crate::StoreError::Corrupt(format!("browser profile state `{other}`"))),
        }
    }
}

/// A browser profile.
#[derive(Clone, Debug, PartialEq)]
pub struct BrowserProfileRow {
    pub id: Uuid,
    /// Exact public HTTPS origins, the primary one first.
    pub origins: Vec<String>,
    pub state: ProfileState,
    pub created_at: Timestamp,
    pub ready_at: Option<Timestamp>,
    pub revoked_at: Option<Timestamp>,
}

#[derive(sqlx::FromRow)]
struct ProfileRecord {
    id: Uuid,
    origins: Vec<String>,
    state: String,
    created_at: jiff_sqlx::Timestamp,
    ready_at: Option<jiff_sqlx::Timestamp>,
    revoked_at: Option<jiff_sqlx::Timestamp>,
}

impl ProfileRecord {
    fn into_row(self) -> Result<BrowserProfileRow> {
        Ok(BrowserProfileRow {
            id: self.id,
            origins: self.origins,
            state: ProfileState::parse(&self.state)?,
            created_at: timestamp(self.created_at),
            ready_at: self.ready_at.map(timestamp),
            revoked_at: self.revoked_at.map(timestamp),
        })
    }
}

const PROFILE_COLUMNS: &str = "id, origins, state, created_at, ready_at, revoked_at";

/// A ceremony's record: its kind (`device`, `remote`), its last known state (`open`, `active`,
/// `completed`, `rejected`, `expired`, `cancelled`) and when its capability expires.
#[derive(Clone, Debug, PartialEq)]
pub struct CeremonyRow {
    pub id: Uuid,
    pub profile_id: Uuid,
    pub kind: CeremonyKind,
    pub state: CeremonyState,
    pub expires_at: Timestamp,
}

#[derive(sqlx::FromRow)]
struct CeremonyRecord {
    id: Uuid,
    profile_id: Uuid,
    kind: String,
    state: String,
    expires_at: jiff_sqlx::Timestamp,
}

impl CeremonyRecord {
    fn into_row(self) -> Result<CeremonyRow> {
        let corrupt = |what: &str, text: &str| crate::StoreError::Corrupt(format!("browser ceremony {what} `{text}`"));
        Ok(CeremonyRow {
            id: self.id,
            profile_id: self.profile_id,
            kind: CeremonyKind::parse(&self.kind).ok_or_else(|| corrupt("kind", &self.kind))?,
            state: CeremonyState::parse(&self.state).ok_or_else(|| corrupt("state", &self.state))?,
            expires_at: timestamp(self.expires_at),
        })
    }
}

/// What recording a ceremony did.
#[derive(Clone, Debug, PartialEq)]
pub enum RecordCeremony {
    Recorded(CeremonyRow),
    /// The profile no longer exists.
    Gone,
    /// The profile was removed (revoked).
    Revoked,
}

impl Store {
    /// The owner's browser profiles, newest first (at most 100, revoked ones included).
    pub async fn list_browser_profiles(&self, principal: &PrincipalId) -> Result<Vec<BrowserProfileRow>> {
        let records: Vec<ProfileRecord> = sqlx::query_as(&format!(
            "SELECT {PROFILE_COLUMNS} FROM browser_profiles WHERE principal_id = $1
             ORDER BY created_at DESC, id DESC LIMIT 100"
        ))
        .bind(principal.as_str())
        .fetch_all(&self.pool)
        .await?;
        records.into_iter().map(ProfileRecord::into_row).collect()
    }

    /// One of the owner's browser profiles.
    pub async fn browser_profile(&self, principal: &PrincipalId, id: Uuid) -> Result<Option<BrowserProfileRow>> {
        let record: Option<ProfileRecord> = sqlx::query_as(&format!(
            "SELECT {PROFILE_COLUMNS} FROM browser_profiles WHERE id = $1 AND principal_id = $2"
        ))
        .bind(id)
        .bind(principal.as_str())
        .fetch_optional(&self.pool)
        .await?;
        record.map(ProfileRecord::into_row).transpose()
    }

    /// Creates a pending profile with `origins` (checked by the caller).
    pub async fn create_browser_profile(
        &self,
        principal: &PrincipalId,
        id: Uuid,
        origins: &[String],
    ) -> Result<BrowserProfileRow> {
        let record: ProfileRecord = sqlx::query_as(&format!(
            "INSERT INTO browser_profiles (id, principal_id, origins, state) VALUES ($1, $2, $3, 'pending')
             RETURNING {PROFILE_COLUMNS}"
        ))
        .bind(id)
        .bind(principal.as_str())
        .bind(origins)
        .fetch_one(&self.pool)
        .await?;
        record.into_row()
    }

    /// Deletes a profile that never became ready (its ceremonies with it); `false` when there
    /// is no such pending profile.
    pub async fn delete_pending_browser_profile(&self, principal: &PrincipalId, id: Uuid) -> Result<bool> {
        let deleted =
            sqlx::query("DELETE FROM browser_profiles WHERE id = $1 AND principal_id = $2 AND state = 'pending'")
                .bind(id)
                .bind(principal.as_str())
                .execute(&self.pool)
                .await?;
        Ok(deleted.rows_affected() == 1)
    }

    /// Marks a ready profile revoked (under its row's lock, so no ceremony is recorded for it
    /// from then on) and settles its open ceremonies as cancelled.
    pub async fn revoke_browser_profile(&self, principal: &PrincipalId, id: Uuid) -> Result<bool> {
        self.transaction(
            async |conn| {
                let revoked = sqlx::query(
                    "UPDATE browser_profiles SET state = 'revoked', revoked_at = now(), updated_at = now()
                     WHERE id = $1 AND principal_id = $2 AND state = 'ready'",
                )
                .bind(id)
                .bind(principal.as_str())
                .execute(&mut *conn)
                .await?;
                sqlx::query(
                    "UPDATE browser_ceremonies SET state = 'cancelled', settled_at = now()
                     WHERE profile_id = $1 AND state IN ('open', 'active')",
                )
                .bind(id)
                .execute(&mut *conn)
                .await?;
                Ok(revoked.rows_affected() == 1)
            },
            |_| true,
        )
        .await
    }

    /// Records a ceremony begun for a profile, holding the profile's row: refused when the
    /// profile was removed meanwhile (the caller cancels the ceremony at the browser role). The
    /// profile's earlier ceremonies keep their last known state: the browser role cancelled
    /// them, and reading each brings that in.
    pub async fn record_browser_ceremony(
        &self,
        principal: &PrincipalId,
        id: Uuid,
        profile: Uuid,
        kind: CeremonyKind,
        expires_at: Timestamp,
    ) -> Result<RecordCeremony> {
        self.transaction(
            async |conn| {
                let state: Option<String> = sqlx::query_scalar(
                    "SELECT state FROM browser_profiles WHERE id = $1 AND principal_id = $2 FOR UPDATE",
                )
                .bind(profile)
                .bind(principal.as_str())
                .fetch_optional(&mut *conn)
                .await?;
                match state.as_deref() {
                    None => return Ok(RecordCeremony::Gone),
                    Some("revoked") => return Ok(RecordCeremony::Revoked),
                    Some(_) => {}
                }
                let row: CeremonyRecord = sqlx::query_as(
                    "INSERT INTO browser_ceremonies (id, profile_id, principal_id, kind, state, expires_at)
                     VALUES ($1, $2, $3, $4, 'open', $5)
                     RETURNING id, profile_id, kind, state, expires_at",
                )
                .bind(id)
                .bind(profile)
                .bind(principal.as_str())
                .bind(kind.as_str())
                .bind(jiff_sqlx::Timestamp::from(expires_at))
                .fetch_one(&mut *conn)
                .await?;
                Ok(RecordCeremony::Recorded(row.into_row()?))
            },
            |_| true,
        )
        .await
    }

    /// Retires a pending profile whose ceremony `rejected` was rejected, under the profile's
    /// row lock: marked removed (so no ceremony is recorded for it from then on) unless a
    /// ceremony begun after the rejected one is open. `true` when retired; the caller has the
    /// browser role forget it, then deletes it ([`Store::delete_retired_browser_profile`]).
    pub async fn retire_unused_browser_profile(
        &self,
        principal: &PrincipalId,
        id: Uuid,
        rejected: Uuid,
    ) -> Result<bool> {
        self.transaction(
            async |conn| {
                let state: Option<String> = sqlx::query_scalar(
                    "SELECT state FROM browser_profiles WHERE id = $1 AND principal_id = $2 FOR UPDATE",
                )
                .bind(id)
                .bind(principal.as_str())
                .fetch_optional(&mut *conn)
                .await?;
                if state.as_deref() != Some("pending") {
                    return Ok(false);
                }
                let newer_open: bool = sqlx::query_scalar(
                    "SELECT EXISTS (SELECT 1 FROM browser_ceremonies c
                                    WHERE c.profile_id = $1 AND c.state IN ('open', 'active')
                                      AND c.created_at > (SELECT created_at FROM browser_ceremonies WHERE id = $2))",
                )
                .bind(id)
                .bind(rejected)
                .fetch_one(&mut *conn)
                .await?;
                if newer_open {
                    return Ok(false);
                }
                Self::retire(&mut *conn, id).await?;
                Ok(true)
            },
            |_| true,
        )
        .await
    }

    /// Retires a pending profile the owner removes, under its row lock; `false` when it is not
    /// pending (it became ready meanwhile, or is gone).
    pub async fn retire_browser_profile(&self, principal: &PrincipalId, id: Uuid) -> Result<bool> {
        self.transaction(
            async |conn| {
                let state: Option<String> = sqlx::query_scalar(
                    "SELECT state FROM browser_profiles WHERE id = $1 AND principal_id = $2 FOR UPDATE",
                )
                .bind(id)
                .bind(principal.as_str())
                .fetch_optional(&mut *conn)
                .await?;
                if state.as_deref() != Some("pending") {
                    return Ok(false);
                }
                Self::retire(&mut *conn, id).await?;
                Ok(true)
            },
            |_| true,
        )
        .await
    }

    /// Marks a locked pending profile removed and its open ceremonies cancelled.
    async fn retire(conn: &mut sqlx::PgConnection, id: Uuid) -> Result<()> {
        sqlx::query(
            "UPDATE browser_profiles SET state = 'revoked', revoked_at = now(), updated_at = now() WHERE id = $1",
        )
        .bind(id)
        .execute(&mut *conn)
        .await?;
        sqlx::query(
            "UPDATE browser_ceremonies SET state = 'cancelled', settled_at = now()
             WHERE profile_id = $1 AND state IN ('open', 'active')",
        )
        .bind(id)
        .execute(&mut *conn)
        .await?;
        Ok(())
    }

    /// Deletes a profile removed before it was ever ready (with its ceremonies), once the
    /// browser role has forgotten it; `false` when there is none such.
    pub async fn delete_retired_browser_profile(&self, principal: &PrincipalId, id: Uuid) -> Result<bool> {
        let deleted = sqlx::query(
            "DELETE FROM browser_profiles
             WHERE id = $1 AND principal_id = $2 AND state = 'revoked' AND ready_at IS NULL",
        )
        .bind(id)
        .bind(principal.as_str())
        .execute(&self.pool)
        .await?;
        Ok(deleted.rows_affected() == 1)
    }

    /// One of the owner's ceremonies.
    pub async fn browser_ceremony(&self, principal: &PrincipalId, id: Uuid) -> Result<Option<CeremonyRow>> {
        let record: Option<CeremonyRecord> = sqlx::query_as(
            "SELECT id, profile_id, kind, state, expires_at FROM browser_ceremonies
             WHERE id = $1 AND principal_id = $2",
        )
        .bind(id)
        .bind(principal.as_str())
        .fetch_optional(&self.pool)
        .await?;
        record.map(CeremonyRecord::into_row).transpose()
    }

    /// Records what the browser role says of an open ceremony. A completed one makes its
    /// profile ready (unless the profile was revoked meanwhile).
    pub async fn settle_browser_ceremony(&self, principal: &PrincipalId, id: Uuid, state: CeremonyState) -> Result<()> {
        self.transaction(
            async |conn| {
                let profile: Option<Uuid> = sqlx::query_scalar(
                    "UPDATE browser_ceremonies
                     SET state = $3, settled_at = CASE WHEN $3 IN ('open', 'active') THEN NULL ELSE now() END
                     WHERE id = $1 AND principal_id = $2 AND state IN ('open', 'active')
                     RETURNING profile_id",
                )
                .bind(id)
                .bind(principal.as_str())
                .bind(state.as_str())
                .fetch_optional(&mut *conn)
                .await?;
                if let (Some(profile), CeremonyState::Completed) = (profile, state) {
                    sqlx::query(
                        "UPDATE browser_profiles SET state = 'ready', ready_at = coalesce(ready_at, now()), updated_at = now()
                         WHERE id = $1 AND state IN ('pending', 'ready')",
                    )
                    .bind(profile)
                    .execute(&mut *conn)
                    .await?;
                }
                Ok(())
            },
            |_| true,
        )
        .await
    }
}

/// A task permission as stored (see [`wire::browser::TaskPermission`]).
#[derive(Clone, Debug, PartialEq)]
pub struct TaskPermissionRow {
    pub id: Uuid,
    pub session_id: Uuid,
    pub run_id: Uuid,
    pub profile_id: Uuid,
    pub origins: Vec<String>,
    pub exceptions: Vec<Exception>,
    pub max_actions: u32,
    pub actions_used: u32,
    pub expires_at: Timestamp,
    pub created_at: Timestamp,
    pub stopped_at: Option<Timestamp>,
    /// Not stopped, not expired, actions left, and its run not over.
    pub active: bool,
}

#[derive(sqlx::FromRow)]
struct PermissionRecord {
    id: Uuid,
    session_id: Uuid,
    run_id: Uuid,
    profile_id: Uuid,
    origins: Vec<String>,
    exceptions: Vec<String>,
    max_actions: i32,
    actions_used: i32,
    expires_at: jiff_sqlx::Timestamp,
    created_at: jiff_sqlx::Timestamp,
    stopped_at: Option<jiff_sqlx::Timestamp>,
    active: bool,
}

impl PermissionRecord {
    fn into_row(self) -> Result<TaskPermissionRow> {
        let count = |value: i32| u32::try_from(value).unwrap_or(0);
        Ok(TaskPermissionRow {
            id: self.id,
            session_id: self.session_id,
            run_id: self.run_id,
            profile_id: self.profile_id,
            origins: self.origins,
            exceptions: self
                .exceptions
                .iter()
                .map(|text| crate::parsed("task permission exception", text, Exception::parse))
                .collect::<Result<_>>()?,
            max_actions: count(self.max_actions),
            actions_used: count(self.actions_used),
            expires_at: timestamp(self.expires_at),
            created_at: timestamp(self.created_at),
            stopped_at: self.stopped_at.map(timestamp),
            active: self.active,
        })
    }
}

/// A task permission's columns (`p`, joined with its run `r`); `$1` is the time now.
const PERMISSION_COLUMNS: &str = "p.id, p.session_id, p.run_id, p.profile_id, p.origins, p.exceptions,
    p.max_actions, p.actions_used, p.expires_at, p.created_at, p.stopped_at,
    (p.stopped_at IS NULL AND p.expires_at > $1 AND p.actions_used < p.max_actions
     AND r.state IN ('queued', 'running', 'waiting_approval', 'waiting_input')) AS active";

/// Grants the task permission `offer` of `approval` (decided `allow_for_task`, in the caller's
/// transaction): on the conversation's profile, counting that approval's action as its first.
/// `None` when the conversation no longer has a profile.
pub(crate) async fn grant_task_permission(
    tx: &mut sqlx::PgConnection,
    principal: &PrincipalId,
    approval: &crate::ApprovalRow,
    offer: &TaskOffer,
    now: jiff_sqlx::Timestamp,
) -> Result<Option<Uuid>> {
    let profile: Option<Option<Uuid>> = sqlx::query_scalar("SELECT browser_profile_id FROM sessions WHERE id = $1")
        .bind(approval.session_id.as_uuid())
        .fetch_optional(&mut *tx)
        .await?;
    let Some(profile) = profile.flatten() else {
        return Ok(None);
    };
    let id = Uuid::now_v7();
    let exceptions: Vec<&str> = offer.exceptions.iter().map(|exception| exception.as_str()).collect();
    sqlx::query(
        "INSERT INTO browser_task_permissions
             (id, principal_id, session_id, run_id, profile_id, origins, exceptions, max_actions, actions_used,
              expires_at, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 1, $9 + make_interval(mins => $10), $9)",
    )
    .bind(id)
    .bind(principal.as_str())
    .bind(approval.session_id.as_uuid())
    .bind(approval.run_id.as_uuid())
    .bind(profile)
    .bind(&offer.origins)
    .bind(&exceptions)
    .bind(i32::try_from(offer.max_actions).unwrap_or(i32::MAX))
    .bind(now)
    .bind(i32::try_from(offer.minutes).unwrap_or(i32::MAX))
    .execute(&mut *tx)
    .await?;
    Ok(Some(id))
}

impl Store {
    /// The owner's task permissions still in force, newest first.
    pub async fn active_task_permissions(&self, principal: &PrincipalId) -> Result<Vec<TaskPermissionRow>> {
        let records: Vec<PermissionRecord> = sqlx::query_as(&format!(
            "SELECT * FROM (SELECT {PERMISSION_COLUMNS} FROM browser_task_permissions p JOIN runs r ON r.id = p.run_id
                            WHERE p.principal_id = $2 AND p.stopped_at IS NULL) permissions
             WHERE active ORDER BY created_at DESC, id DESC LIMIT 100"
        ))
        .bind(self.now_sql())
        .bind(principal.as_str())
        .fetch_all(&self.pool)
        .await?;
        records.into_iter().map(PermissionRecord::into_row).collect()
    }

    /// Stops one of the owner's task permissions: from the commit on it allows nothing, and an
    /// action it allowed that has not started is not made. Stopping again changes nothing.
    /// `None` when there is no such permission.
    pub async fn stop_task_permission(&self, principal: &PrincipalId, id: Uuid) -> Result<Option<TaskPermissionRow>> {
        let record: Option<PermissionRecord> = sqlx::query_as(&format!(
            "WITH stopped AS (
                 UPDATE browser_task_permissions SET stopped_at = coalesce(stopped_at, $1)
                 WHERE id = $2 AND principal_id = $3 RETURNING *
             )
             SELECT {PERMISSION_COLUMNS} FROM stopped p JOIN runs r ON r.id = p.run_id"
        ))
        .bind(self.now_sql())
        .bind(id)
        .bind(principal.as_str())
        .fetch_optional(&self.pool)
        .await?;
        record.map(PermissionRecord::into_row).transpose()
    }
}
