//! Dispatching: committed before any side effect, never repeated.

use super::*;

/// What became of [`Work::begin_dispatch`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dispatch {
    /// `dispatching` is committed: the call may be made, once.
    Started,
    /// The lease or the call's state moved on; nothing changed.
    Lost,
    /// The call is marked approved, but no approval of exactly it (its tool and the arguments
    /// it displayed) was resolved `APPROVED`, or its stored tool or arguments differ from the
    /// ones about to be run: a forged state. Nothing changed; the call must not be made.
    Unapproved,
    /// The call was allowed by a task permission the owner has stopped since: it is not made.
    Stopped,
}

/// Whether an approval resolved `APPROVED` exists for exactly `invocation`: the call's stored
/// tool and arguments are the ones about to be run (locked until the transaction ends), and
/// the approval names that tool and displayed exactly those arguments (cut strings through
/// their digests, [`domain::approval::display_arguments`]).
async fn approved_exactly(tx: &mut PgConnection, lease: &Lease, invocation: &InvocationRow) -> Result<bool> {
    let stored: Option<(String, Value)> =
        sqlx::query_as("SELECT tool, arguments FROM tool_invocations WHERE id = $1 AND run_id = $2 FOR UPDATE")
            .bind(invocation.id)
            .bind(lease.run.as_uuid())
            .fetch_optional(&mut *tx)
            .await?;
    if stored.as_ref() != Some(&(invocation.tool.clone(), invocation.arguments.clone())) {
        return Ok(false);
    }
    let approval: Option<(String, Value, Value)> = sqlx::query_as(
        "SELECT tool, arguments, argument_digests FROM approvals
         WHERE invocation_id = $1 AND run_id = $2 AND status = 'APPROVED'",
    )
    .bind(invocation.id)
    .bind(lease.run.as_uuid())
    .fetch_optional(&mut *tx)
    .await?;
    let shown = display_arguments(&invocation.arguments);
    Ok(approval.is_some_and(|(tool, arguments, digests)| {
        tool == invocation.tool && arguments == shown.arguments && digests == Value::Object(shown.argument_digests)
    }))
}

impl Work<'_> {
    /// Commits `dispatching` before an approved tool call is made. From here on the invocation
    /// is never dispatched again: if its outcome is not recorded, it becomes `outcome_unknown`.
    /// A mail write or send arms its reconciliation (`effect`) in the same transaction.
    ///
    /// The state `approved` is not trusted on its own (another login could have written it):
    /// the call starts only when an approval resolved `APPROVED` exists for exactly it, the
    /// same tool and the arguments it displayed, and the call's stored tool and arguments are
    /// still the ones about to be run. Otherwise nothing changes and [`Dispatch::Unapproved`]
    /// says so.
    pub async fn begin_dispatch(
        self,
        lease: &Lease,
        invocation: &InvocationRow,
        effect: Option<&NewReconciliation<'_>>,
    ) -> Result<Dispatch> {
        let now = self.now_sql();
        self.transaction(
            async |tx: &mut PgConnection| {
                if !hold(tx, lease, now).await? {
                    return Ok(Dispatch::Lost);
                }
                if !approved_exactly(tx, lease, invocation).await? {
                    return Ok(Dispatch::Unapproved);
                }
                // Stopping a task permission stops at once the actions it allowed that have not
                // started (its row is locked here: a stop commits before this, or after).
                let stopped: Option<bool> = sqlx::query_scalar(
                    "SELECT p.stopped_at IS NOT NULL FROM approvals a
                     JOIN browser_task_permissions p ON p.id = a.task_permission_id
                     WHERE a.invocation_id = $1 AND a.approved_for = 'task' FOR SHARE OF p",
                )
                .bind(invocation.id)
                .fetch_optional(&mut *tx)
                .await?;
                if stopped == Some(true) {
                    return Ok(Dispatch::Stopped);
                }
                let started = sqlx::query(
                    "UPDATE tool_invocations SET state = 'dispatching', updated_at = now()
                     WHERE id = $1 AND state = 'approved'",
                )
                .bind(invocation.id)
                .execute(&mut *tx)
                .await?;
                if started.rows_affected() != 1 {
                    return Ok(Dispatch::Lost);
                }
                if let Some(effect) = effect {
                    crate::mail::arm(tx, lease.session, invocation, effect).await?;
                }
                let event = Event::ToolStarted(ToolStarted {
                    run_id: lease.run.as_uuid(),
                    invocation_id: invocation.id,
                    call_id: invocation.call_id.clone(),
                    tool: invocation.tool.clone(),
                    risk: invocation.risk,
                });
                append(tx, lease.session, Some(lease.run), &event).await?;
                Ok(Dispatch::Started)
            },
            |outcome| *outcome == Dispatch::Started,
        )
        .await
    }

    /// Records the outcome of a dispatched invocation, whatever became of the run meanwhile; only
    /// the first outcome counts. A `reconciliation` (a mail write or send of unknown outcome) is
    /// recorded with it.
    pub async fn finish_dispatch(
        self,
        session: SessionId,
        invocation: &InvocationRow,
        state: InvocationState,
        result: &Value,
        code: Option<&str>,
        reconciliation: Option<&NewReconciliation<'_>>,
    ) -> Result<bool> {
        self.transaction(
            async |tx: &mut PgConnection| {
                let dispatching: Option<String> =
                    sqlx::query_scalar("SELECT state FROM tool_invocations WHERE id = $1 FOR UPDATE")
                        .bind(invocation.id)
                        .fetch_optional(&mut *tx)
                        .await?;
                if dispatching.as_deref() != Some("dispatching") {
                    return Ok(false);
                }
                let code = mail_code(tx, invocation, state, code, reconciliation).await?;
                write_result(tx, session, invocation, state, result, code).await?;
                settle_mail(tx, session, invocation, state, reconciliation).await?;
                Ok(true)
            },
            |written| *written,
        )
        .await
    }

    /// Settles as `outcome_unknown` up to `limit` invocations left `dispatching` on a finished run
    /// for longer than `older_than_seconds` (far longer than any dispatch takes): their worker
    /// died after the run was cancelled or passed its deadline, and no execution will resume
    /// them. A mail write or send among them opens its reconciliation. Returns how many.
    pub async fn settle_stranded_dispatches(self, older_than_seconds: u32, limit: u32) -> Result<usize> {
        self.transaction(
            async |tx: &mut PgConnection| {
                let rows = sqlx::query(
                    "SELECT i.id, i.run_id, i.step, i.position, i.call_id, i.tool, i.arguments, i.state, i.result,
                            i.code, i.risk, i.session_id
                     FROM tool_invocations i JOIN runs r ON r.id = i.run_id
                     WHERE i.state = 'dispatching' AND r.state IN ('completed', 'failed', 'cancelled')
                       AND i.updated_at < now() - make_interval(secs => $1)
                     ORDER BY i.updated_at LIMIT $2 FOR UPDATE OF i SKIP LOCKED",
                )
                .bind(f64::from(older_than_seconds))
                .bind(i64::from(limit))
                .fetch_all(&mut *tx)
                .await?;
                let result =
                    json!({ "error": "the worker stopped while this action was in progress; it was not repeated" });
                // Sessions are locked (event sequences) in one order, so two sweeps cannot deadlock.
                let mut stranded = rows
                    .iter()
                    .map(|row| Ok((Stranded::from_row(row)?.session_id, InvocationRow::from_row(row)?)))
                    .collect::<Result<Vec<_>>>()?;
                stranded.sort_by_key(|(session, _)| *session);
                for (session, invocation) in &stranded {
                    let (session, invocation) = (SessionId::from_uuid(*session), invocation);
                    let state = InvocationState::OutcomeUnknown;
                    let code = mail_code(tx, invocation, state, Some("tool.outcome_unknown"), None).await?;
                    write_result(tx, session, invocation, state, &result, code).await?;
                    crate::mail::open(tx, session, invocation, None).await?;
                }
                Ok(stranded.len())
            },
            |_| true,
        )
        .await
    }
}
