//! Memory (`/v1/memories`, mounted with `AGENT_MEMORY_API_ENABLED=1`; `memory.read`,
//! `memory.write`): the owner's governed beliefs, newest first with keyset cursors and status,
//! kind and review-flag filters; one belief with its evidence and the runs that recalled it;
//! `Mark reviewed`, `Not true`, `Not relevant here` (for one conversation) and `Delete memory`
//! (the statement does not form again; its sources stay); and the beliefs a run recalled.

use axum::extract::State;
use axum::http::StatusCode;
use axum::{Extension, Json as JsonResponse};
use domain::ErrorCode;
use domain::cursor::CursorKind;
use store::memory::{MemoryQuery, MemoryRow, Review};
use uuid::Uuid;
use wire::memory::{
    ListMemories, Memory, MemoryDetail, MemoryEvidence, MemoryPage, MemoryRecall, RecalledMemories, ReviewMemory,
};

use super::email::{page_after, parse_uuid};
use crate::AppState;
use crate::auth::Caller;
use crate::extract::{Json, Path, Query};
use crate::problem::ApiError;

const DEFAULT_PAGE_SIZE: u32 = 50;
const MAX_PAGE_SIZE: u32 = 100;

fn memory(row: &MemoryRow) -> Memory {
    Memory {
        memory_id: row.id,
        kind: row.kind,
        statement: row.statement.clone(),
        status: row.status,
        needs_review: row.needs_review,
        origin: row.origin,
        formed_at: row.formed_at,
        reviewed_at: row.reviewed_at,
    }
}

fn memory_id(text: &str) -> Result<Uuid, ApiError> {
    parse_uuid(text, ErrorCode::MemoryNotFound)
}

fn not_found() -> ApiError {
    ApiError::new(ErrorCode::MemoryNotFound)
}

/// The owner's beliefs, newest first, paged by cursor.
#[utoipa::path(
    get, path = "/v1/memories", tag = "memory",
    security(("bearer" = ["memory.read"])),
    params(ListMemories),
    responses((status = 200, description = "A page of beliefs", body = MemoryPage))
)]
pub async fn list(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Query(params): Query<ListMemories>,
) -> Result<JsonResponse<MemoryPage>, ApiError> {
    let limit = super::page_limit(params.limit, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)?;
    let before = page_after(
        &state,
        CursorKind::Memories,
        params.cursor.as_deref(),
        super::decode_sequence,
    )?;
    let query = MemoryQuery {
        status: params.status,
        kind: params.kind,
        needs_review: params.needs_review,
        before,
        limit: limit + 1,
    };
    let mut rows = state.store.memory().list(&caller.principal, &query).await?;
    let next_cursor = super::next_page(&state, CursorKind::Memories, &mut rows, limit, |last| {
        last.position.to_be_bytes().to_vec()
    });
    Ok(JsonResponse(MemoryPage {
        memories: rows.iter().map(memory).collect(),
        next_cursor,
    }))
}

/// One belief, with its evidence and the runs that recalled it.
#[utoipa::path(
    get, path = "/v1/memories/{memory_id}", tag = "memory",
    security(("bearer" = ["memory.read"])),
    params(("memory_id" = Uuid, Path)),
    responses((status = 200, description = "The belief", body = MemoryDetail))
)]
pub async fn get(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<JsonResponse<MemoryDetail>, ApiError> {
    let id = memory_id(&id)?;
    let memories = state.store.memory();
    let row = memories.get(&caller.principal, id).await?.ok_or_else(not_found)?;
    let evidence = memories.evidence(&caller.principal, id).await?;
    let recalls = memories.recalls(&caller.principal, id).await?;
    Ok(JsonResponse(MemoryDetail {
        memory: memory(&row),
        evidence: evidence
            .into_iter()
            .map(|piece| MemoryEvidence {
                session_id: piece.session,
                run_id: piece.run,
                email_thread_id: piece.email_thread,
                provider_message_id: piece.provider_message_id,
                noted_at: piece.noted_at,
            })
            .collect(),
        recalls: recalls
            .into_iter()
            .map(|recall| MemoryRecall {
                run_id: recall.run,
                session_id: recall.session,
                rank: recall.rank,
                recalled_at: recall.recalled_at,
            })
            .collect(),
    }))
}

/// The owner's review: `mark_reviewed` (recalled from now on), `not_true` (never recalled, not
/// formed again) or `not_relevant_here` (never recalled into that conversation). Repeating a
/// review is harmless.
#[utoipa::path(
    post, path = "/v1/memories/{memory_id}/review", tag = "memory",
    security(("bearer" = ["memory.write"])),
    params(("memory_id" = Uuid, Path)),
    request_body = ReviewMemory,
    responses((status = 200, description = "The belief as it stands now", body = Memory))
)]
pub async fn review(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    Json(request): Json<ReviewMemory>,
) -> Result<JsonResponse<Memory>, ApiError> {
    let id = memory_id(&id)?;
    let memories = state.store.memory();
    let row = match request {
        ReviewMemory::MarkReviewed {} => memories.review(&caller.principal, id, Review::Reviewed).await?,
        ReviewMemory::NotTrue {} => memories.review(&caller.principal, id, Review::NotTrue).await?,
        ReviewMemory::NotRelevantHere { session_id } => {
            let row = memories.get(&caller.principal, id).await?.ok_or_else(not_found)?;
            if !memories.exclude(&caller.principal, id, session_id).await? {
                return Err(ApiError::new(ErrorCode::SessionNotFound)
                    .detail("the owner has no such conversation")
                    .field("session_id"));
            }
            Some(row)
        }
    };
    Ok(JsonResponse(memory(&row.ok_or_else(not_found)?)))
}

/// `Delete memory`: the belief, its evidence and its recall records go; its sources stay, and the
/// statement (or a close one) is never formed again.
#[utoipa::path(
    delete, path = "/v1/memories/{memory_id}", tag = "memory",
    security(("bearer" = ["memory.write"])),
    params(("memory_id" = Uuid, Path)),
    responses((status = 204, description = "Deleted"))
)]
pub async fn delete(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let id = memory_id(&id)?;
    if state.store.memory().delete(&caller.principal, id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(not_found())
    }
}

/// The beliefs a run's prompt received, in rank order (none when it recalled nothing); a run
/// that is not the owner's is not found.
#[utoipa::path(
    get, path = "/v1/runs/{run_id}/memories", tag = "memory",
    security(("bearer" = ["memory.read"])),
    params(("run_id" = Uuid, Path)),
    responses((status = 200, description = "The recalled beliefs", body = RecalledMemories))
)]
pub async fn recalled(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<JsonResponse<RecalledMemories>, ApiError> {
    let run: domain::ids::RunId = parse_uuid(&id, ErrorCode::RunNotFound)?;
    if state.store.run(&caller.principal, run).await?.is_none() {
        return Err(ApiError::new(ErrorCode::RunNotFound));
    }
    let rows = state
        .store
        .memory()
        .recalled_by(&caller.principal, run.as_uuid())
        .await?;
    Ok(JsonResponse(RecalledMemories {
        memories: rows.iter().map(memory).collect(),
    }))
}
