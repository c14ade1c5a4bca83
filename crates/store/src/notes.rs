//! The owner's notes, read and written by the built-in note tools.

use domain::ids::PrincipalId;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::{Result, Store, timestamp};

impl Store {
    /// The most recent notes, newest first, as the tool reports them.
    pub async fn recent_notes(&self, principal: &PrincipalId, limit: u32) -> Result<Vec<Value>> {
        let rows: Vec<(Uuid, String, jiff_sqlx::Timestamp)> = sqlx::query_as(
            "SELECT id, text, created_at FROM notes WHERE principal_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2",
        )
        .bind(principal.as_str())
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .into_iter()
            .map(|(id, text, created)| {
                json!({
                    "note_id": id.to_string(),
                    "text": text,
                    "created_at": timestamp(created).to_string(),
                })
            })
            .collect())
    }

    /// Adds a note for `invocation`; a second call for the same invocation adds nothing and
    /// returns the first note's id.
    pub async fn add_note(&self, principal: &PrincipalId, text: &str, invocation: Uuid) -> Result<Uuid> {
        let inserted: Option<Uuid> = sqlx::query_scalar(
            "INSERT INTO notes (id, principal_id, text, invocation_id) VALUES ($1, $2, $3, $4)
             ON CONFLICT (invocation_id) DO NOTHING RETURNING id",
        )
        .bind(Uuid::now_v7())
        .bind(principal.as_str())
        .bind(text)
        .bind(invocation)
        .fetch_optional(&self.pool)
        .await?;
        match inserted {
            Some(id) => Ok(id),
            None => Ok(sqlx::query_scalar("SELECT id FROM notes WHERE invocation_id = $1")
                .bind(invocation)
                .fetch_one(&self.pool)
                .await?),
        }
    }
}
