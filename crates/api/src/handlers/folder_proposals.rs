//! Folder proposals: the agent's suggestions to file conversations, listed for the owner, who
//! accepts (filing them, renaming a proposed new folder if they like) or declines them.

use axum::extract::State;
use axum::http::StatusCode;
use axum::{Extension, Json as JsonResponse};
use domain::ErrorCode;
use domain::ids::FolderProposalId;
use store::{AcceptProposal, DeclineProposal, FolderProposalRow};
use wire::request::FolderProposalAcceptance;
use wire::response::{AcceptedFolderProposal, FolderProposal, FolderProposalList};

use super::folders::{folder, name_taken};
use super::parse_id;
use crate::AppState;
use crate::auth::Caller;
use crate::extract::{OptionalJson, Path};
use crate::problem::ApiError;

fn proposal(row: FolderProposalRow) -> FolderProposal {
    FolderProposal {
        proposal_id: row.id.as_uuid(),
        folder_id: row.folder_id.map(|id| id.as_uuid()),
        name: row.name,
        session_ids: row.session_ids.into_iter().map(|id| id.as_uuid()).collect(),
        created_at: row.created_at,
    }
}

fn proposal_id(text: &str) -> Result<FolderProposalId, ApiError> {
    parse_id(text, FolderProposalId::parse, ErrorCode::FolderProposalNotFound)
}

/// Lists the proposals waiting for the owner.
#[utoipa::path(
    get, path = "/v1/folder-proposals", tag = "folders",
    security(("bearer" = ["sessions.read"])),
    responses((status = 200, description = "Pending proposals that can still file something, oldest first", body = FolderProposalList))
)]
pub async fn list(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
) -> Result<JsonResponse<FolderProposalList>, ApiError> {
    let rows = state.store.folder_proposals(&caller.principal).await?;
    Ok(JsonResponse(FolderProposalList {
        proposals: rows.into_iter().map(proposal).collect(),
    }))
}

/// Accepts a proposal: files its still-unfiled conversations into its folder in one step,
/// making a proposed new folder first (named `name` when the body gives one).
#[utoipa::path(
    post, path = "/v1/folder-proposals/{proposal_id}/accept", tag = "folders",
    security(("bearer" = ["sessions.write"])),
    params(("proposal_id" = Uuid, Path)),
    request_body = Option<FolderProposalAcceptance>,
    responses(
        (status = 200, description = "Accepted; the conversations are filed", body = AcceptedFolderProposal),
    )
)]
pub async fn accept(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(proposal_id_text): Path<String>,
    OptionalJson(body): OptionalJson<FolderProposalAcceptance>,
) -> Result<JsonResponse<AcceptedFolderProposal>, ApiError> {
    let id = proposal_id(&proposal_id_text)?;
    let rename = body.unwrap_or_default().rename()?;
    match state
        .store
        .accept_folder_proposal(&caller.principal, id, rename.as_ref())
        .await?
    {
        AcceptProposal::Accepted {
            folder: row,
            session_ids,
        } => Ok(JsonResponse(AcceptedFolderProposal {
            proposal_id: id.as_uuid(),
            folder: folder(row),
            session_ids: session_ids.into_iter().map(|id| id.as_uuid()).collect(),
        })),
        AcceptProposal::NotFound => Err(ApiError::new(ErrorCode::FolderProposalNotFound)),
        AcceptProposal::Resolved => Err(ApiError::new(ErrorCode::FolderProposalResolved)),
        AcceptProposal::Stale => Err(ApiError::new(ErrorCode::FolderProposalStale)
            .detail("its conversations were filed, or deleted, since it was made")),
        AcceptProposal::NotRenamable => Err(ApiError::new(ErrorCode::FolderProposalNotRenamable)
            .detail("the proposal names an existing folder; rename the folder itself instead")),
        AcceptProposal::NameTaken => Err(name_taken()),
    }
}

/// Declines a proposal; its conversations are never proposed for that folder again. Declining
/// twice is fine.
#[utoipa::path(
    post, path = "/v1/folder-proposals/{proposal_id}/decline", tag = "folders",
    security(("bearer" = ["sessions.write"])),
    params(("proposal_id" = Uuid, Path)),
    responses(
        (status = 204, description = "Declined"),
    )
)]
pub async fn decline(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(proposal_id_text): Path<String>,
) -> Result<StatusCode, ApiError> {
    let id = proposal_id(&proposal_id_text)?;
    match state.store.decline_folder_proposal(&caller.principal, id).await? {
        DeclineProposal::Declined => Ok(StatusCode::NO_CONTENT),
        DeclineProposal::NotFound => Err(ApiError::new(ErrorCode::FolderProposalNotFound)),
        DeclineProposal::Accepted => Err(ApiError::new(ErrorCode::FolderProposalResolved)
            .detail("the proposal was accepted; move the conversations instead")),
    }
}
