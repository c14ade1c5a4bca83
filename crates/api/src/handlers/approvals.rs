//! Approvals and run input: what the owner decides for a parked run.

use axum::extract::State;
use axum::{Extension, Json as JsonResponse};
use domain::ErrorCode;
use domain::ids::{RunId, SessionId};
use store::{Answer, ApprovalRow, Decide, Decision};
use uuid::Uuid;
use wire::request::{AnswerQuestion, DecideApproval};
use wire::response::{Approval, ApprovalList, Run};

use super::parse_id;
use crate::AppState;
use crate::auth::Caller;
use crate::extract::{Json, Path};
use crate::problem::ApiError;

pub(crate) fn approval(row: &ApprovalRow) -> Approval {
    Approval {
        approval_id: row.id,
        run_id: row.run_id.as_uuid(),
        session_id: row.session_id.as_uuid(),
        invocation_id: row.invocation_id,
        tool: row.tool.clone(),
        risk: row.risk,
        arguments: row.arguments.clone(),
        argument_digests: row
            .argument_digests
            .as_object()
            .into_iter()
            .flatten()
            .filter_map(|(pointer, digest)| Some((pointer.clone(), digest.as_str()?.to_owned())))
            .collect(),
        status: row.status,
        task_offer: row.task_offer.clone(),
        approved_for: row.approved_for,
        task_permission_id: row.task_permission_id,
        decided_at: row.decided_at,
        created_at: row.created_at,
    }
}

/// Pending approvals of a session, oldest first.
#[utoipa::path(
    get, path = "/v1/sessions/{session_id}/approvals", tag = "approvals",
    security(("bearer" = ["sessions.read"])),
    params(("session_id" = Uuid, Path)),
    responses(
        (status = 200, description = "Pending approvals", body = ApprovalList),
    )
)]
pub async fn pending(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(session_id): Path<String>,
) -> Result<JsonResponse<ApprovalList>, ApiError> {
    let session = parse_id(&session_id, SessionId::parse, ErrorCode::SessionNotFound)?;
    if state.store.session(&caller.principal, session).await?.is_none() {
        return Err(ApiError::new(ErrorCode::SessionNotFound));
    }
    let rows = state.store.pending_approvals(&caller.principal, session).await?;
    Ok(JsonResponse(ApprovalList {
        approvals: rows.iter().map(approval).collect(),
    }))
}

/// Approves once or denies. The first stored resolution wins; a later decision gets
/// `approval_already_resolved` and changes nothing.
#[utoipa::path(
    post, path = "/v1/approvals/{approval_id}/decision", tag = "approvals",
    security(("bearer" = ["sessions.write"])),
    params(("approval_id" = Uuid, Path)),
    request_body = DecideApproval,
    responses(
        (status = 200, description = "Decided", body = Approval),
    )
)]
pub async fn decide(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(approval_id): Path<String>,
    Json(body): Json<DecideApproval>,
) -> Result<JsonResponse<Approval>, ApiError> {
    let id = parse_id(
        &approval_id,
        |text| Uuid::try_parse(text).ok(),
        ErrorCode::ApprovalNotFound,
    )?;
    let decision = match body.decision {
        wire::request::Decision::ApproveOnce => Decision::ApproveOnce,
        wire::request::Decision::Deny => Decision::Deny,
        wire::request::Decision::AllowForTask => Decision::AllowForTask,
    };
    match state.store.decide_approval(&caller.principal, id, decision).await? {
        Decide::Decided(row) => {
            tracing::info!(approval_id = %row.id, run_id = %row.run_id, tool = %row.tool, status = row.status.as_str(), "approval decided");
            Ok(JsonResponse(approval(row.as_ref())))
        }
        Decide::AlreadyResolved(row) | Decide::Expired(row) => Err(ApiError::new(ErrorCode::ApprovalAlreadyResolved)
            .detail(format!("the approval is already {}", row.status.as_str()))
            .resolution(row.status)),
        Decide::NotOffered => Err(ApiError::new(ErrorCode::TaskPermissionNotOffered)
            .detail("only a browser action's approval that offers a task permission can allow the task; approve once")),
        Decide::NotFound => Err(ApiError::new(ErrorCode::ApprovalNotFound)),
    }
}

/// Answers the question a waiting run asked; the run resumes.
#[utoipa::path(
    post, path = "/v1/runs/{run_id}/input", tag = "runs",
    security(("bearer" = ["sessions.write"])),
    params(("run_id" = Uuid, Path)),
    request_body = AnswerQuestion,
    responses(
        (status = 200, description = "Answered; the run is queued again", body = Run),
    )
)]
pub async fn input(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(run_id): Path<String>,
    Json(body): Json<AnswerQuestion>,
) -> Result<JsonResponse<Run>, ApiError> {
    let run = parse_id(&run_id, RunId::parse, ErrorCode::RunNotFound)?;
    let answer = domain::run::Answer::try_from(body)?;
    match state
        .store
        .answer_question(&caller.principal, run, answer.question_id, &answer.text)
        .await?
    {
        Answer::Answered => {}
        Answer::RunNotFound => return Err(ApiError::new(ErrorCode::RunNotFound)),
        Answer::NotPending | Answer::Expired => {
            return Err(ApiError::new(ErrorCode::QuestionNotPending)
                .detail("that question is not waiting for an answer in this run (wrong, stale or already answered)"));
        }
    }
    let row = state
        .store
        .run(&caller.principal, run)
        .await?
        .ok_or_else(|| ApiError::new(ErrorCode::RunNotFound))?;
    Ok(JsonResponse(super::runs::run(&row)))
}
