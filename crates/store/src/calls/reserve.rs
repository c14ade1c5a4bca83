//! The worker's side: an approved `calls.place` invocation takes the one outbound reservation.

use domain::ids::PrincipalId;
use serde_json::Value;
use uuid::Uuid;

use crate::{Result, Store};

/// What reserving did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reserve {
    /// The call is reserved and waits for the call worker's dispatch.
    Reserved(Uuid),
    /// This invocation reserved it before (a repeated execution): the same call.
    Already(Uuid),
    /// Another outbound call holds the reservation.
    Busy,
}

impl Store {
    /// Reserves the outbound call `brief` (word for word as approved) to `counterpart` under
    /// the configuration `revision`, for the invocation whose approval allowed it (the call
    /// belongs to that invocation's conversation).
    pub async fn reserve_outbound_call(
        &self,
        principal: &PrincipalId,
        invocation_id: Uuid,
        counterpart: &str,
        brief: &Value,
        revision: &str,
    ) -> Result<Reserve> {
        let existing: Option<Uuid> =
            sqlx::query_scalar("SELECT id FROM call_records WHERE kind = 'call' AND invocation_id = $1")
                .bind(invocation_id)
                .fetch_optional(&self.pool)
                .await?;
        if let Some(id) = existing {
            return Ok(Reserve::Already(id));
        }
        let inserted = sqlx::query_scalar(
            "INSERT INTO call_records (kind, principal_id, direction, state, counterpart, brief, revision,
                                       session_id, invocation_id)
             VALUES ('call', $1, 'outbound', 'approved', $2, $3, $4,
                     (SELECT session_id FROM tool_invocations WHERE id = $5), $5)
             RETURNING id",
        )
        .bind(principal.as_str())
        .bind(counterpart)
        .bind(brief)
        .bind(revision)
        .bind(invocation_id)
        .fetch_one(&self.pool)
        .await;
        match inserted {
            Ok(id) => Ok(Reserve::Reserved(id)),
            Err(sqlx::Error::Database(error)) if error.constraint() == Some("call_records_one_outbound") => {
                Ok(Reserve::Busy)
            }
            Err(sqlx::Error::Database(error)) if error.constraint() == Some("call_records_invocation_id_key") => {
                let id = sqlx::query_scalar("SELECT id FROM call_records WHERE kind = 'call' AND invocation_id = $1")
                    .bind(invocation_id)
                    .fetch_one(&self.pool)
                    .await?;
                Ok(Reserve::Already(id))
            }
            Err(error) => Err(error.into()),
        }
    }
}
