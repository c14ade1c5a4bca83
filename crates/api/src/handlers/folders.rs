//! Folders: list, create, rename, delete (their sessions return to the history).

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json as JsonResponse};
use domain::ErrorCode;
use domain::folder::FolderName;
use domain::ids::FolderId;
use store::{FolderRow, RenameFolder};

use wire::response::{Folder, FolderList};

use super::parse_id;
use crate::AppState;
use crate::auth::Caller;
use crate::extract::{Json, Path};
use crate::problem::ApiError;

pub(super) fn folder(row: FolderRow) -> Folder {
    Folder {
        folder_id: row.id.as_uuid(),
        name: row.name,
        created_at: row.created_at,
        updated_at: row.updated_at,
    }
}

pub(super) fn name_taken() -> ApiError {
    ApiError::new(ErrorCode::FolderNameTaken).detail("another folder already has this name")
}

/// Lists folders.
#[utoipa::path(
    get, path = "/v1/folders", tag = "folders",
    security(("bearer" = ["sessions.read"])),
    responses((status = 200, description = "Every folder", body = FolderList))
)]
pub async fn list(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
) -> Result<JsonResponse<FolderList>, ApiError> {
    let folders = state.store.folders(&caller.principal).await?;
    Ok(JsonResponse(FolderList {
        folders: folders.into_iter().map(folder).collect(),
    }))
}

/// Creates a folder.
#[utoipa::path(
    post, path = "/v1/folders", tag = "folders",
    security(("bearer" = ["sessions.write"])),
    request_body = wire::request::FolderName,
    responses(
        (status = 201, description = "Created", body = Folder, headers(("Location" = String))),
    )
)]
pub async fn create(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Json(body): Json<wire::request::FolderName>,
) -> Result<Response, ApiError> {
    match state
        .store
        .create_folder(&caller.principal, &FolderName::try_from(body)?)
        .await?
    {
        Some(row) => {
            let location = format!("/v1/folders/{}", row.id);
            Ok((
                StatusCode::CREATED,
                [(header::LOCATION, location)],
                JsonResponse(folder(row)),
            )
                .into_response())
        }
        None => Err(name_taken()),
    }
}

/// Renames a folder.
#[utoipa::path(
    patch, path = "/v1/folders/{folder_id}", tag = "folders",
    security(("bearer" = ["sessions.write"])),
    params(("folder_id" = Uuid, Path)),
    request_body = wire::request::FolderName,
    responses(
        (status = 200, description = "Renamed", body = Folder),
    )
)]
pub async fn rename(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(folder_id): Path<String>,
    Json(body): Json<wire::request::FolderName>,
) -> Result<JsonResponse<Folder>, ApiError> {
    let id = parse_id(&folder_id, FolderId::parse, ErrorCode::FolderNotFound)?;
    match state
        .store
        .rename_folder(&caller.principal, id, &FolderName::try_from(body)?)
        .await?
    {
        RenameFolder::Done(row) => Ok(JsonResponse(folder(row))),
        RenameFolder::NotFound => Err(ApiError::new(ErrorCode::FolderNotFound)),
        RenameFolder::NameTaken => Err(name_taken()),
    }
}

/// Deletes a folder; its sessions return to the history.
#[utoipa::path(
    delete, path = "/v1/folders/{folder_id}", tag = "folders",
    security(("bearer" = ["sessions.write"])),
    params(("folder_id" = Uuid, Path)),
    responses(
        (status = 204, description = "Deleted"),
    )
)]
pub async fn delete(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(folder_id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let id = parse_id(&folder_id, FolderId::parse, ErrorCode::FolderNotFound)?;
    if state.store.delete_folder(&caller.principal, id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::new(ErrorCode::FolderNotFound))
    }
}
