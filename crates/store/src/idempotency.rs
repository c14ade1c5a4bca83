//! Idempotency records: an accepted request's exact response, kept under the principal's key and
//! replayed byte for byte to a retry with the same key and request.
//!
//! A request takes a transaction-scoped advisory lock on its key first, so a concurrent request
//! with the same key answers "in flight" instead of waiting; the record is written in the
//! transaction that did the work, so it exists exactly when the work committed.

use domain::idempotency::IdempotencyKey;
use domain::ids::PrincipalId;
use sqlx::PgConnection;

use crate::{Result, StoreError};

/// The idempotency record a request is made under.
#[derive(Debug)]
pub struct IdempotencyClaim<'a> {
    pub key: &'a IdempotencyKey,
    /// Which operation the key was used for; the same key for another operation is a reuse.
    pub operation: &'static str,
    /// Digest of the canonical request.
    pub request_hash: &'a str,
}

/// A response exactly as it was first sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredResponse {
    pub status: u16,
    pub body: Vec<u8>,
}

impl StoredResponse {
    /// `value` as the JSON body of a response with `status`. A value that cannot be encoded is an
    /// error (the operation rolls back), never an empty body stored for every later replay.
    pub fn json(status: u16, value: &impl serde::Serialize) -> Result<StoredResponse> {
        Ok(StoredResponse {
            status,
            body: serde_json::to_vec(value).map_err(StoreError::Encode)?,
        })
    }
}

/// What an earlier use of the key means for this request.
#[derive(Debug, PartialEq)]
pub enum Prior {
    /// The same key and request were accepted before: this is the original response.
    Replay(StoredResponse),
    /// The key was used before for a different request.
    KeyReused,
    /// Another request with this key is being processed right now.
    KeyInFlight,
}

/// Locks the key and looks for an earlier use; `None` means the request proceeds.
pub(crate) async fn check(
    conn: &mut PgConnection,
    principal: &PrincipalId,
    claim: &IdempotencyClaim<'_>,
) -> Result<Option<Prior>> {
    let locked: bool = sqlx::query_scalar("SELECT pg_try_advisory_xact_lock(hashtextextended($1 || chr(31) || $2, 7))")
        .bind(principal.as_str())
        .bind(claim.key.as_str())
        .fetch_one(&mut *conn)
        .await?;
    if !locked {
        return Ok(Some(Prior::KeyInFlight));
    }
    let existing: Option<KeyRecord> = sqlx::query_as(
        "SELECT operation, request_hash, response_status, response_body FROM idempotency_keys
         WHERE principal_id = $1 AND key = $2",
    )
    .bind(principal.as_str())
    .bind(claim.key.as_str())
    .fetch_optional(&mut *conn)
    .await?;
    let Some(record) = existing else { return Ok(None) };
    if record.operation != claim.operation || record.request_hash != claim.request_hash {
        return Ok(Some(Prior::KeyReused));
    }
    let status =
        u16::try_from(record.response_status).map_err(|_| StoreError::Corrupt("stored response status".into()))?;
    Ok(Some(Prior::Replay(StoredResponse {
        status,
        body: record.response_body,
    })))
}

/// A stored idempotency record.
#[derive(sqlx::FromRow)]
struct KeyRecord {
    operation: String,
    request_hash: String,
    response_status: i32,
    response_body: Vec<u8>,
}

/// Records the accepted request's response in the transaction that did its work.
pub(crate) async fn record(
    conn: &mut PgConnection,
    principal: &PrincipalId,
    claim: &IdempotencyClaim<'_>,
    response: &StoredResponse,
) -> Result<()> {
    sqlx::query(
        "INSERT INTO idempotency_keys (principal_id, key, operation, request_hash, response_status, response_body)
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(principal.as_str())
    .bind(claim.key.as_str())
    .bind(claim.operation)
    .bind(claim.request_hash)
    .bind(i32::from(response.status))
    .bind(&response.body)
    .execute(&mut *conn)
    .await?;
    Ok(())
}
