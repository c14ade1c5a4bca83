//! Folders: the owner's own grouping of sessions. Deleting a folder returns its sessions to the
//! history (the foreign key sets their `folder_id` to null).

use domain::folder::FolderName;
use domain::ids::{FolderId, PrincipalId};
use jiff::Timestamp;
use sqlx::postgres::PgRow;
use uuid::Uuid;

use crate::{Result, Store, timestamp};

#[derive(Clone, Debug, PartialEq)]
pub struct FolderRow {
    pub id: FolderId,
    pub name: String,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// A `folders` row as stored.
#[derive(sqlx::FromRow)]
struct FolderRecord {
    id: uuid::Uuid,
    name: String,
    created_at: jiff_sqlx::Timestamp,
    updated_at: jiff_sqlx::Timestamp,
}

impl FolderRow {
    pub(crate) fn from_row(row: &PgRow) -> Result<FolderRow> {
        let record = <FolderRecord as sqlx::FromRow<PgRow>>::from_row(row)?;
        Ok(FolderRow {
            id: FolderId::from_uuid(record.id),
            name: record.name,
            created_at: timestamp(record.created_at),
            updated_at: timestamp(record.updated_at),
        })
    }
}

/// The outcome of renaming a folder.
#[derive(Debug, PartialEq)]
pub enum RenameFolder {
    Done(FolderRow),
    NotFound,
    /// Another folder of the principal already has this name (compared case-insensitively).
    NameTaken,
}

pub(crate) fn is_name_conflict(error: &sqlx::Error) -> bool {
    matches!(error, sqlx::Error::Database(db) if db.constraint() == Some("folders_unique_name"))
}

impl Store {
    pub async fn folders(&self, principal: &PrincipalId) -> Result<Vec<FolderRow>> {
        let rows = sqlx::query(
            "SELECT id, name, created_at, updated_at FROM folders WHERE principal_id = $1 ORDER BY created_at, id",
        )
        .bind(principal.as_str())
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(FolderRow::from_row).collect()
    }

    /// Creates a folder; `None` when another folder of the principal already has the name.
    pub async fn create_folder(&self, principal: &PrincipalId, name: &FolderName) -> Result<Option<FolderRow>> {
        let result = sqlx::query(
            "INSERT INTO folders (id, principal_id, name) VALUES ($1, $2, $3)
             RETURNING id, name, created_at, updated_at",
        )
        .bind(Uuid::now_v7())
        .bind(principal.as_str())
        .bind(name.as_str())
        .fetch_one(&self.pool)
        .await;
        match result {
            Ok(row) => Ok(Some(FolderRow::from_row(&row)?)),
            Err(error) if is_name_conflict(&error) => Ok(None),
            Err(error) => Err(error.into()),
        }
    }

    pub async fn rename_folder(
        &self,
        principal: &PrincipalId,
        id: FolderId,
        name: &FolderName,
    ) -> Result<RenameFolder> {
        let result = sqlx::query(
            "UPDATE folders SET name = $3, updated_at = now() WHERE id = $1 AND principal_id = $2
             RETURNING id, name, created_at, updated_at",
        )
        .bind(id.as_uuid())
        .bind(principal.as_str())
        .bind(name.as_str())
        .fetch_optional(&self.pool)
        .await;
        match result {
            Ok(Some(row)) => Ok(RenameFolder::Done(FolderRow::from_row(&row)?)),
            Ok(None) => Ok(RenameFolder::NotFound),
            Err(error) if is_name_conflict(&error) => Ok(RenameFolder::NameTaken),
            Err(error) => Err(error.into()),
        }
    }

    /// Deletes a folder; its sessions return to the history. False when there was no such folder.
    pub async fn delete_folder(&self, principal: &PrincipalId, id: FolderId) -> Result<bool> {
        let deleted = sqlx::query("DELETE FROM folders WHERE id = $1 AND principal_id = $2")
            .bind(id.as_uuid())
            .bind(principal.as_str())
            .execute(&self.pool)
            .await?;
        Ok(deleted.rows_affected() == 1)
    }
}
