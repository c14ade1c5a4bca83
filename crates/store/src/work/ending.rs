//! Run endings and the sweep of overdue runs.

use super::*;

impl Work<'_> {
    /// Ends the run `completed`.
    pub async fn complete_run(self, lease: &Lease, counters: &RunCounters) -> Result<Option<()>> {
        self.end_held_run(lease, Ending::Completed(usage(counters))).await
    }

    /// Ends the run `failed` with `code`.
    pub async fn fail_run(self, lease: &Lease, code: &str, detail: &str, counters: &RunCounters) -> Result<Option<()>> {
        let ending = Ending::Failed {
            code: code.to_owned(),
            detail: detail.to_owned(),
            usage: usage(counters),
        };
        self.end_held_run(lease, ending).await
    }

    async fn end_held_run(self, lease: &Lease, ending: Ending) -> Result<Option<()>> {
        let now = self.now_sql();
        self.transaction(
            async |tx: &mut PgConnection| {
                if !hold(tx, lease, now).await? {
                    return lost();
                }
                end_run(tx, lease.run, lease.session, ending, now).await?;
                Ok(Some(()))
            },
            |outcome| outcome.is_some(),
        )
        .await
    }

    /// Cancels, with reason `deadline`, up to `limit` active runs whose deadline passed by the
    /// store's clock (out of working time, or waited for the owner too long); pending approvals
    /// and questions expire. Returns how many were cancelled.
    pub async fn expire_overdue_runs(self, limit: u32) -> Result<usize> {
        let now = self.now_sql();
        self.transaction(
            async |tx: &mut PgConnection| {
                let sql = format!(
                    "SELECT id, session_id FROM runs WHERE state IN ({}) AND deadline_at <= $2
                     ORDER BY deadline_at LIMIT $1 FOR UPDATE SKIP LOCKED",
                    active_states_sql()
                );
                let overdue: Vec<(Uuid, Uuid)> = sqlx::query_as(&sql)
                    .bind(i64::from(limit))
                    .bind(now)
                    .fetch_all(&mut *tx)
                    .await?;
                for (run, session) in &overdue {
                    let (run, session) = (RunId::from_uuid(*run), SessionId::from_uuid(*session));
                    end_run(tx, run, session, Ending::Cancelled(CancelReason::Deadline), now).await?;
                }
                Ok(overdue.len())
            },
            |_| true,
        )
        .await
    }
}
