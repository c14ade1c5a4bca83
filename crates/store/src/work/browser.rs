//! The worker's side of `browser.act`: the conversation's chosen profile, and the task
//! permission that may approve an action as it is recorded.

use super::*;
use domain::browser::Exception;
use wire::browser::ApprovedFor;
use wire::event::ApprovalResolved;

/// A conversation's chosen browser profile.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionBrowser {
    pub profile_id: Uuid,
    /// Only a ready profile is acted on.
    pub ready: bool,
    /// Its exact origins, the primary one first.
    pub origins: Vec<String>,
}

/// What [`Work::cover_by_task_permission`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cover {
    /// A permission in force covered the action: it is approved (`approved_for: task`).
    Covered(Uuid),
    /// None did; the action waits for the owner's approval.
    NotCovered,
    /// The lease was lost; nothing changed.
    Lost,
}

impl Work<'_> {
    /// The profile the session's conversation acts on, if it has one.
    pub async fn session_browser(self, session: SessionId) -> Result<Option<SessionBrowser>> {
        let row: Option<(Uuid, String, Vec<String>)> = sqlx::query_as(
            "SELECT p.id, p.state, p.origins FROM sessions s JOIN browser_profiles p ON p.id = s.browser_profile_id
             WHERE s.id = $1 AND p.principal_id = s.principal_id",
        )
        .bind(session.as_uuid())
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.map(|(profile_id, state, origins)| SessionBrowser {
            profile_id,
            ready: state == "ready",
            origins,
        }))
    }

    /// Approves a browser action by the run's task permission in force, when one covers it: not
    /// stopped, not expired, actions left, `origin` in its scope, and the action not one of its
    /// exceptions (an exception is never covered). The count, the approval (recorded `APPROVED`,
    /// `approved_for: task`), the call's state and the events commit together.
    pub async fn cover_by_task_permission(
        self,
        lease: &Lease,
        invocation: &InvocationRow,
        risk: Risk,
        shown: &DisplayedArguments,
        origin: &str,
        exception: Option<Exception>,
    ) -> Result<Cover> {
        if exception.is_some() {
            return Ok(Cover::NotCovered);
        }
        let now = self.now_sql();
        self.transaction(
            async |tx: &mut PgConnection| {
                if !hold(tx, lease, now).await? {
                    return Ok(Cover::Lost);
                }
                let permission: Option<Uuid> = sqlx::query_scalar(
                    "UPDATE browser_task_permissions SET actions_used = actions_used + 1
                     WHERE id = (SELECT id FROM browser_task_permissions
                                 WHERE run_id = $1 AND stopped_at IS NULL AND expires_at > $2
                                   AND actions_used < max_actions AND $3 = ANY (origins)
                                 ORDER BY created_at DESC LIMIT 1 FOR UPDATE)
                       AND stopped_at IS NULL AND actions_used < max_actions
                     RETURNING id",
                )
                .bind(lease.run.as_uuid())
                .bind(now)
                .bind(origin)
                .fetch_optional(&mut *tx)
                .await?;
                let Some(permission) = permission else {
                    return Ok(Cover::NotCovered);
                };
                let approval = Uuid::now_v7();
                let requested = super::parking::record_approval(
                    tx,
                    lease,
                    invocation,
                    risk,
                    shown,
                    approval,
                    super::parking::Start::Covered(permission, now),
                )
                .await?;
                let moved = sqlx::query(
                    "UPDATE tool_invocations SET state = 'approved', updated_at = now() WHERE id = $1 AND state = 'queued'",
                )
                .bind(invocation.id)
                .execute(&mut *tx)
                .await?;
                if moved.rows_affected() != 1 {
                    return Err(StoreError::Corrupt("a covered browser action was not queued".into()));
                }
                append(tx, lease.session, Some(lease.run), &requested).await?;
                let resolved = Event::ApprovalResolved(ApprovalResolved {
                    run_id: lease.run.as_uuid(),
                    approval_id: approval,
                    invocation_id: invocation.id,
                    tool: invocation.tool.clone(),
                    status: ApprovalStatus::Approved,
                    approved_for: Some(ApprovedFor::Task),
                    task_permission_id: Some(permission),
                });
                append(tx, lease.session, Some(lease.run), &resolved).await?;
                Ok(Cover::Covered(permission))
            },
            |outcome| matches!(outcome, Cover::Covered(_)),
        )
        .await
    }
}
