//! Claims with leases, and what a claimed run is executed from.

use super::*;

impl Work<'_> {
    /// Claims the oldest queued run, or a running run whose worker's lease expired, for `worker`.
    pub async fn claim_run(self, worker: &str, lease_seconds: u32) -> Result<Option<ClaimedRun>> {
        let sql = format!(
            "UPDATE runs r SET state = 'running', lease_owner = $1,
                 lease_expires_at = now() + make_interval(secs => $2), attempts = attempts + 1, updated_at = now()
             WHERE r.id = (
                 SELECT id FROM runs
                 WHERE (state = 'queued' OR (state = 'running' AND lease_expires_at < now())) AND deadline_at > $3
                 ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED)
             RETURNING {RUN_COLUMNS}, r.principal_id, r.attempts, r.steps, r.model_calls, r.tool_calls,
                 r.cost_micros, r.input_tokens, r.output_tokens, r.chat_model, r.chat_reasoning_effort,
                 r.memory_model, r.memory_reasoning_effort,
                 r.occurrence_id, r.requested_scopes, r.wait_timeout_seconds, r.kind"
        );
        let Some(row) = sqlx::query(&sql)
            .bind(worker)
            .bind(f64::from(lease_seconds))
            .bind(self.now_sql())
            .fetch_optional(&self.pool)
            .await?
        else {
            return Ok(None);
        };
        let run = RunRow::from_row(&row)?;
        let claim = ClaimRecord::from_row(&row)?;
        let counter = |value: i32, column: &str| -> Result<u32> {
            u32::try_from(value).map_err(|_| StoreError::Corrupt(format!("runs.{column}")))
        };
        let counters = RunCounters {
            steps: counter(claim.steps, "steps")?,
            model_calls: counter(claim.model_calls, "model_calls")?,
            tool_calls: counter(claim.tool_calls, "tool_calls")?,
            cost: Cost::from_micros(claim.cost_micros),
            input_tokens: claim.input_tokens,
            output_tokens: claim.output_tokens,
        };
        let attempts = counter(claim.attempts, "attempts")?;
        let scheduled_scopes = claim.occurrence_id.map(|_| claim.requested_scopes);
        let wait_timeout_seconds = claim
            .wait_timeout_seconds
            .map(|seconds| counter(seconds, "wait_timeout_seconds"))
            .transpose()?;
        let kind = match claim.kind.as_str() {
            "agent" => RunKind::Agent,
            "draft_send" => RunKind::DraftSend,
            other => return Err(StoreError::Corrupt(format!("run kind `{other}`"))),
        };
        let configuration: Value = sqlx::query_scalar(
            "SELECT v.configuration FROM sessions s
             JOIN agent_versions v ON v.agent_id = s.agent_id AND v.version = s.agent_version WHERE s.id = $1",
        )
        .bind(run.session_id.as_uuid())
        .fetch_one(&self.pool)
        .await?;
        let lease = Lease {
            run: run.id,
            session: run.session_id,
            worker: worker.to_owned(),
        };
        Ok(Some(ClaimedRun {
            lease,
            run,
            principal: PrincipalId::from_stored(claim.principal_id),
            configuration,
            counters,
            attempts,
            chat_model: claim.chat_model.zip(claim.chat_reasoning_effort),
            memory_model: claim.memory_model.zip(claim.memory_reasoning_effort),
            scheduled_scopes,
            wait_timeout_seconds,
            kind,
        }))
    }

    /// Extends the lease; false when it was lost.
    pub async fn renew_lease(self, lease: &Lease, lease_seconds: u32) -> Result<bool> {
        let renewed = sqlx::query(
            "UPDATE runs SET lease_expires_at = now() + make_interval(secs => $3)
             WHERE id = $1 AND lease_owner = $2 AND state = 'running'",
        )
        .bind(lease.run.as_uuid())
        .bind(&lease.worker)
        .bind(f64::from(lease_seconds))
        .execute(&self.pool)
        .await?;
        Ok(renewed.rows_affected() == 1)
    }

    /// Hands a run back to the queue (a worker shutting down between steps).
    pub async fn release_run(self, lease: &Lease) -> Result<()> {
        self.transaction(
            async |tx: &mut sqlx::PgConnection| {
                let released = sqlx::query(
                    "UPDATE runs SET state = 'queued', lease_owner = NULL, lease_expires_at = NULL, updated_at = now()
                     WHERE id = $1 AND lease_owner = $2 AND state = 'running'",
                )
                .bind(lease.run.as_uuid())
                .bind(&lease.worker)
                .execute(&mut *tx)
                .await?;
                if released.rows_affected() == 1 {
                    hint(Hint::Run);
                }
                Ok(())
            },
            |_| true,
        )
        .await
    }

    /// Every event of a session, in order (the worker builds the model's context from them).
    pub async fn session_history(self, session: SessionId) -> Result<Vec<crate::EventRow>> {
        self.events_after_unchecked(session, 0).await
    }

    pub async fn invocations(self, run: RunId) -> Result<Vec<InvocationRow>> {
        let sql =
            format!("SELECT {INVOCATION_COLUMNS} FROM tool_invocations WHERE run_id = $1 ORDER BY step, position");
        let rows = sqlx::query(&sql).bind(run.as_uuid()).fetch_all(&self.pool).await?;
        rows.iter().map(InvocationRow::from_row).collect()
    }
}
