//! Web sessions (migration 0016): the web client's cookie credentials. Only the cookie secret's
//! digest is stored; a session matches only under the token binding it was made with.

use std::time::Duration;

use domain::ids::PrincipalId;
use jiff::Timestamp;
use uuid::Uuid;

use crate::{Result, Store, timestamp};

/// A web session to record.
#[derive(Debug)]
pub struct NewWebSession<'a> {
    pub secret_digest: [u8; 32],
    pub token_binding: [u8; 32],
    pub principal: &'a PrincipalId,
    pub scopes: &'a [String],
    /// How long it lasts from now (the database's clock).
    pub ttl: Duration,
}

/// A live web session.
#[derive(Clone, Debug, PartialEq)]
pub struct WebSessionRow {
    pub id: Uuid,
    pub principal: PrincipalId,
    pub scopes: Vec<String>,
    pub expires_at: Timestamp,
}

impl Store {
    /// Records a web session. Expired sessions and those bound to another token can never be
    /// used again, so they are deleted in the same transaction.
    pub async fn create_web_session(&self, new: &NewWebSession<'_>) -> Result<WebSessionRow> {
        let mut tx = self.pool.begin().await?;
        sqlx::query("DELETE FROM web_sessions WHERE expires_at <= now() OR token_binding <> $1")
            .bind(&new.token_binding[..])
            .execute(&mut *tx)
            .await?;
        let (id, expires_at): (Uuid, jiff_sqlx::Timestamp) = sqlx::query_as(
            "INSERT INTO web_sessions (id, secret_digest, token_binding, principal_id, scopes, expires_at)
             VALUES ($1, $2, $3, $4, $5, now() + make_interval(secs => $6))
             RETURNING id, expires_at",
        )
        .bind(Uuid::now_v7())
        .bind(&new.secret_digest[..])
        .bind(&new.token_binding[..])
        .bind(new.principal.as_str())
        .bind(new.scopes)
        .bind(new.ttl.as_secs_f64())
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(WebSessionRow {
            id,
            principal: new.principal.clone(),
            scopes: new.scopes.to_vec(),
            expires_at: timestamp(expires_at),
        })
    }

    /// The unexpired session whose secret has `secret_digest`, made under `token_binding`.
    pub async fn web_session(
        &self,
        secret_digest: &[u8; 32],
        token_binding: &[u8; 32],
    ) -> Result<Option<WebSessionRow>> {
        let row: Option<(Uuid, String, Vec<String>, jiff_sqlx::Timestamp)> = sqlx::query_as(
            "SELECT id, principal_id, scopes, expires_at FROM web_sessions
             WHERE secret_digest = $1 AND token_binding = $2 AND expires_at > now()",
        )
        .bind(&secret_digest[..])
        .bind(&token_binding[..])
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.map(|(id, principal, scopes, expires_at)| WebSessionRow {
            id,
            principal: PrincipalId::from_stored(principal),
            scopes,
            expires_at: timestamp(expires_at),
        }))
    }

    /// Ends the session `id`; whether it still existed.
    pub async fn revoke_web_session(&self, id: Uuid) -> Result<bool> {
        let deleted = sqlx::query("DELETE FROM web_sessions WHERE id = $1")
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(deleted.rows_affected() == 1)
    }
}
