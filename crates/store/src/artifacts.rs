//! Artifacts: files uploaded into a session. Bytes are stored in chunks as they stream in, inside
//! one transaction, so an upload that fails or exceeds its limit leaves nothing behind.

use domain::ids::{ArtifactId, PrincipalId, SessionId};
use jiff::Timestamp;
use sqlx::postgres::PgRow;
use sqlx::{Postgres, Transaction};
use uuid::Uuid;

use crate::{Result, Store, timestamp};

#[derive(Clone, Debug, PartialEq)]
pub struct ArtifactRow {
    pub id: ArtifactId,
    pub session_id: SessionId,
    pub filename: String,
    pub media_type: String,
    pub size_bytes: i64,
    pub sha256: String,
    pub created_at: Timestamp,
    /// When the maintenance role removed its bytes (metadata outlives them).
    pub expired_at: Option<Timestamp>,
}

/// An `artifacts` row as stored.
#[derive(sqlx::FromRow)]
struct ArtifactRecord {
    id: uuid::Uuid,
    session_id: uuid::Uuid,
    filename: String,
    media_type: String,
    size_bytes: i64,
    sha256: String,
    created_at: jiff_sqlx::Timestamp,
    expired_at: Option<jiff_sqlx::Timestamp>,
}

impl ArtifactRow {
    fn from_row(row: &PgRow) -> Result<ArtifactRow> {
        let record = <ArtifactRecord as sqlx::FromRow<PgRow>>::from_row(row)?;
        Ok(ArtifactRow {
            id: ArtifactId::from_uuid(record.id),
            session_id: SessionId::from_uuid(record.session_id),
            filename: record.filename,
            media_type: record.media_type,
            size_bytes: record.size_bytes,
            sha256: record.sha256,
            created_at: timestamp(record.created_at),
            expired_at: record.expired_at.map(timestamp),
        })
    }
}

/// What is known about an artifact once all its bytes have arrived.
#[derive(Debug)]
pub struct NewArtifact<'a> {
    pub filename: &'a str,
    pub media_type: &'a str,
    pub size_bytes: i64,
    pub sha256: &'a str,
}

/// An upload in progress. Dropping it without [`ArtifactUpload::finish`] discards every chunk.
#[derive(Debug)]
pub struct ArtifactUpload {
    tx: Transaction<'static, Postgres>,
    id: ArtifactId,
    session: SessionId,
    next_seq: i32,
}

impl ArtifactUpload {
    pub async fn write_chunk(&mut self, bytes: &[u8]) -> Result<()> {
        sqlx::query("INSERT INTO artifact_chunks (artifact_id, seq, bytes) VALUES ($1, $2, $3)")
            .bind(self.id.as_uuid())
            .bind(self.next_seq)
            .bind(bytes)
            .execute(&mut *self.tx)
            .await?;
        self.next_seq += 1;
        Ok(())
    }

    pub async fn finish(mut self, artifact: NewArtifact<'_>) -> Result<ArtifactRow> {
        let row = sqlx::query(
            "INSERT INTO artifacts (id, session_id, filename, media_type, size_bytes, sha256)
             VALUES ($1, $2, $3, $4, $5, $6)
             RETURNING id, session_id, filename, media_type, size_bytes, sha256, created_at, expired_at",
        )
        .bind(self.id.as_uuid())
        .bind(self.session.as_uuid())
        .bind(artifact.filename)
        .bind(artifact.media_type)
        .bind(artifact.size_bytes)
        .bind(artifact.sha256)
        .fetch_one(&mut *self.tx)
        .await?;
        let row = ArtifactRow::from_row(&row)?;
        self.tx.commit().await?;
        Ok(row)
    }
}

impl Store {
    /// Starts an upload into a session of `principal`; `None` when there is no such session. The
    /// session cannot be deleted while the upload is open.
    pub async fn begin_artifact(&self, principal: &PrincipalId, session: SessionId) -> Result<Option<ArtifactUpload>> {
        let mut tx = self.pool.begin().await?;
        let exists = sqlx::query("SELECT 1 FROM sessions WHERE id = $1 AND principal_id = $2 FOR KEY SHARE")
            .bind(session.as_uuid())
            .bind(principal.as_str())
            .fetch_optional(&mut *tx)
            .await?
            .is_some();
        Ok(exists.then(|| ArtifactUpload {
            tx,
            id: ArtifactId::from_uuid(Uuid::now_v7()),
            session,
            next_seq: 0,
        }))
    }

    pub async fn artifact(
        &self,
        principal: &PrincipalId,
        session: SessionId,
        id: ArtifactId,
    ) -> Result<Option<ArtifactRow>> {
        let row = sqlx::query(
            "SELECT a.id, a.session_id, a.filename, a.media_type, a.size_bytes, a.sha256, a.created_at, a.expired_at
             FROM artifacts a JOIN sessions s ON s.id = a.session_id
             WHERE a.id = $1 AND a.session_id = $2 AND s.principal_id = $3",
        )
        .bind(id.as_uuid())
        .bind(session.as_uuid())
        .bind(principal.as_str())
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(ArtifactRow::from_row).transpose()
    }

    /// The chunk of an artifact at `seq`, or `None` past the last one.
    pub async fn artifact_chunk(&self, id: ArtifactId, seq: i32) -> Result<Option<Vec<u8>>> {
        Ok(
            sqlx::query_scalar("SELECT bytes FROM artifact_chunks WHERE artifact_id = $1 AND seq = $2")
                .bind(id.as_uuid())
                .bind(seq)
                .fetch_optional(&self.pool)
                .await?,
        )
    }
}
