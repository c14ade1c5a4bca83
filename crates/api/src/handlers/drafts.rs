//! Email mode's versioned drafts (`/v1/email/drafts`, mounted with Email mode): create one on an
//! account or in a conversation, read it, save the next revision from the newest only (a stale
//! save answers 409 `revision_mismatch` with both versions), read its whole history, restore an
//! earlier revision as a new one. Saving a draft never writes to the mailbox. Review & Send
//! freezes the newest revision into one approval of the account's `send_message` tool with
//! exactly its content, which the worker raises and, after approve-once, sends once; a later
//! save voids a freeze nobody approved, and a draft whose send was approved no longer changes.

use axum::Extension;
use axum::Json as JsonResponse;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use domain::ErrorCode;
use domain::ids::{DraftId, PrincipalId, ThreadId};
use store::{DraftPlace, DraftRevision as StoredRevision, DraftRow, Freeze, ReviewDraft as Review, SaveDraft as Saved};
use wire::email::{
    CreateDraft, Draft, DraftAuthor, DraftContent, DraftHistory, DraftRevision, DraftSend, DraftTarget, ProposalAnswer,
    RestoreDraft, ReviewDraft, SaveDraft,
};

use crate::AppState;
use crate::auth::Caller;
use crate::extract::{Json, Path};
use crate::problem::ApiError;

fn revision(stored: StoredRevision) -> DraftRevision {
    DraftRevision {
        revision: number(stored.revision),
        content: stored.content,
        author: stored.author,
        restored_from: stored.restored_from.map(number),
        saved_at: stored.created_at,
    }
}

fn number(value: i32) -> u32 {
    u32::try_from(value).unwrap_or_default()
}

/// What became of a freeze, with its approval once the worker raised it.
async fn send(state: &AppState, principal: &PrincipalId, send: store::DraftSend) -> Result<DraftSend, ApiError> {
    let approval = match send.approval {
        Some(id) => state
            .store
            .approval(principal, id)
            .await?
            .map(|row| super::approvals::approval(&row)),
        None => None,
    };
    Ok(DraftSend {
        revision: number(send.revision),
        state: send.state,
        run_id: send.run.as_uuid(),
        session_id: send.session.as_uuid(),
        approval,
        code: send.code,
    })
}

/// A draft as answered: its newest revision and what became of its newest freeze.
async fn draft(state: &AppState, principal: &PrincipalId, row: DraftRow) -> Result<Draft, ApiError> {
    let frozen = match state.store.email().draft_send(row.id).await? {
        Some(frozen) => Some(send(state, principal, frozen).await?),
        None => None,
    };
    Ok(Draft {
        draft_id: row.id.as_uuid(),
        account_id: row.account_id.into_string(),
        thread_id: row.thread.map(ThreadId::as_uuid),
        newest: revision(row.newest),
        created_at: row.created_at,
        send: frozen,
    })
}

/// 409 `revision_mismatch` with the server's newest version and the refused one.
async fn conflict(
    state: &AppState,
    principal: &PrincipalId,
    row: DraftRow,
    local: DraftContent,
) -> Result<ApiError, ApiError> {
    let newest = row.newest.revision;
    Ok(ApiError::new(ErrorCode::RevisionMismatch)
        .detail("the draft was saved since this version was read; both versions are here")
        .revision(newest)
        .draft_versions(draft(state, principal, row).await?, local))
}

/// 409 `email_draft_sending`: an approved send of the draft is on its way, sent, or being checked.
fn sending(frozen: &store::DraftSend) -> ApiError {
    ApiError::new(ErrorCode::EmailDraftSending).detail(format!(
        "revision {} of this draft was approved for sending ({}); it no longer changes",
        frozen.revision,
        serde_json::to_value(frozen.state)
            .ok()
            .and_then(|state| state.as_str().map(str::to_owned))
            .unwrap_or_default()
    ))
}

fn draft_id(text: &str) -> Result<DraftId, ApiError> {
    super::email::parse_uuid(text, ErrorCode::EmailDraftNotFound)
}

/// A save's answer: the draft, or 409 with both versions, or 409 while its send goes on, or 404.
async fn saved(
    state: &AppState,
    principal: &PrincipalId,
    outcome: Saved,
    local: DraftContent,
) -> Result<JsonResponse<Draft>, ApiError> {
    match outcome {
        Saved::Saved(row) => Ok(JsonResponse(draft(state, principal, row).await?)),
        Saved::Conflict(row) => Err(conflict(state, principal, row, local).await?),
        Saved::Sending(frozen) => Err(sending(&frozen)),
        Saved::NotFound => Err(ApiError::new(ErrorCode::EmailDraftNotFound)),
        Saved::UnknownRevision => Err(ApiError::new(ErrorCode::EmailDraftRevisionNotFound)),
    }
}

fn expected(revision: u32) -> i32 {
    i32::try_from(revision).unwrap_or(i32::MAX)
}

/// Creates a draft: a new message from an account, or a reply in a conversation.
#[utoipa::path(
    post, path = "/v1/email/drafts", tag = "email",
    security(("bearer" = ["email.write"])),
    request_body = CreateDraft,
    responses((status = 201, description = "Created, as revision 1", body = Draft, headers(("Location" = String))))
)]
pub async fn create(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Json(body): Json<CreateDraft>,
) -> Result<Response, ApiError> {
    let (target, content) = body.checked()?;
    let (place, unknown) = match &target {
        DraftTarget::Account(account_id) => (
            DraftPlace::Account(account_id),
            ApiError::new(ErrorCode::UnknownEmailAccount).field("account_id"),
        ),
        DraftTarget::Thread(thread) => (
            DraftPlace::Thread(*thread),
            ApiError::new(ErrorCode::UnknownEmailThread).field("thread_id"),
        ),
    };
    let row = state
        .store
        .email()
        .create_draft(place, &content, DraftAuthor::Owner)
        .await?
        .ok_or(unknown)?;
    let location = format!("/v1/email/drafts/{}", row.id);
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        JsonResponse(draft(&state, &caller.principal, row).await?),
    )
        .into_response())
}

/// A draft with its newest revision.
#[utoipa::path(
    get, path = "/v1/email/drafts/{draft_id}", tag = "email",
    security(("bearer" = ["email.read"])),
    params(("draft_id" = Uuid, Path)),
    responses((status = 200, description = "The draft", body = Draft))
)]
pub async fn get(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<JsonResponse<Draft>, ApiError> {
    let row = state
        .store
        .email()
        .draft(draft_id(&id)?)
        .await?
        .ok_or_else(|| ApiError::new(ErrorCode::EmailDraftNotFound))?;
    Ok(JsonResponse(draft(&state, &caller.principal, row).await?))
}

/// Saves the next revision, if `expected_revision` is still the newest; otherwise nothing is
/// saved and the answer (409 `revision_mismatch`) carries the server's version (`server`) and
/// the refused one (`local`).
#[utoipa::path(
    put, path = "/v1/email/drafts/{draft_id}", tag = "email",
    security(("bearer" = ["email.write"])),
    params(("draft_id" = Uuid, Path)),
    request_body = SaveDraft,
    responses((status = 200, description = "Saved as the next revision", body = Draft))
)]
pub async fn save(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    Json(body): Json<SaveDraft>,
) -> Result<JsonResponse<Draft>, ApiError> {
    let id = draft_id(&id)?;
    let (expected_revision, local) = body.checked()?;
    let outcome = state
        .store
        .email()
        .save_draft(id, expected(expected_revision), &local, DraftAuthor::Owner)
        .await?;
    saved(&state, &caller.principal, outcome, local).await
}

/// Every revision of a draft, oldest first.
#[utoipa::path(
    get, path = "/v1/email/drafts/{draft_id}/revisions", tag = "email",
    security(("bearer" = ["email.read"])),
    params(("draft_id" = Uuid, Path)),
    responses((status = 200, description = "The history", body = DraftHistory))
)]
pub async fn history(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<JsonResponse<DraftHistory>, ApiError> {
    let id = draft_id(&id)?;
    let revisions = state.store.email().draft_history(id).await?;
    if revisions.is_empty() {
        return Err(ApiError::new(ErrorCode::EmailDraftNotFound));
    }
    Ok(JsonResponse(DraftHistory {
        draft_id: id.as_uuid(),
        revisions: revisions.into_iter().map(revision).collect(),
    }))
}

/// Restores an earlier revision as the next one, if `expected_revision` is still the newest.
#[utoipa::path(
    post, path = "/v1/email/drafts/{draft_id}/revisions/{revision}/restore", tag = "email",
    security(("bearer" = ["email.write"])),
    params(("draft_id" = Uuid, Path), ("revision" = u32, Path, minimum = 1)),
    request_body = RestoreDraft,
    responses((status = 200, description = "Restored as the next revision", body = Draft))
)]
pub async fn restore(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path((id, from)): Path<(String, String)>,
    Json(body): Json<RestoreDraft>,
) -> Result<JsonResponse<Draft>, ApiError> {
    let id = draft_id(&id)?;
    let from: i32 = from
        .parse()
        .ok()
        .filter(|from| *from >= 1)
        .ok_or_else(|| ApiError::new(ErrorCode::EmailDraftRevisionNotFound))?;
    let outcome = state
        .store
        .email()
        .restore_draft(id, from, expected(body.expected_revision))
        .await?;
    // A refused restore's own version is the revision it would have restored.
    let local = match &outcome {
        Saved::Conflict(_) => state
            .store
            .email()
            .draft_history(id)
            .await?
            .into_iter()
            .find(|stored| stored.revision == from)
            .map(|stored| stored.content)
            .unwrap_or_default(),
        _ => DraftContent::default(),
    };
    saved(&state, &caller.principal, outcome, local).await
}

/// Review & Send: freezes the newest revision, which must be `revision` (the one the owner
/// reviewed), into one approval of the account's `send_message` tool whose arguments are exactly
/// it (`account_id`, `thread_id` for a reply, `to`, `cc`, `subject`, `body`; strings over 512
/// characters cut, with `argument_digests`). The worker raises the approval (the answer's
/// `send.state` is `preparing` until it has; read the draft again); approve-once sends it once.
/// Asking again while it waits answers with the same freeze.
#[utoipa::path(
    post, path = "/v1/email/drafts/{draft_id}/review", tag = "email",
    security(("bearer" = ["email.write"])),
    params(("draft_id" = Uuid, Path)),
    request_body = ReviewDraft,
    responses((status = 202, description = "Frozen: the send waits for its approval", body = Draft))
)]
pub async fn review(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    Json(body): Json<ReviewDraft>,
) -> Result<Response, ApiError> {
    let id = draft_id(&id)?;
    let row = state
        .store
        .email()
        .draft(id)
        .await?
        .ok_or_else(|| ApiError::new(ErrorCode::EmailDraftNotFound))?;
    let Some((agent, tool)) = super::email::send_tool(&state, row.account_id.as_str()) else {
        return Err(ApiError::new(ErrorCode::EmailSendUnavailable).detail(format!(
            "mail account `{}` has no send tool on this server (mail off, or the account not connected)",
            row.account_id
        )));
    };
    let outcome = state
        .store
        .email()
        .review_draft(Freeze {
            draft: id,
            revision: expected(body.revision),
            principal: &caller.principal,
            agent,
            tool: &tool.name,
            limits: state.settings.run_limits,
        })
        .await?;
    match outcome {
        Review::Frozen(row, _) => Ok((
            StatusCode::ACCEPTED,
            JsonResponse(draft(&state, &caller.principal, row).await?),
        )
            .into_response()),
        Review::Conflict(row) => {
            let local = row.newest.content.clone();
            Err(conflict(&state, &caller.principal, row, local).await?)
        }
        Review::Busy(frozen) => Err(sending(&frozen)),
        Review::NoRecipients => Err(ApiError::new(ErrorCode::EmailDraftNoRecipients)
            .detail("add at least one recipient in `to`, save, then review again")),
        Review::Unsendable(why) => Err(ApiError::new(ErrorCode::EmailDraftUnsendable)
            .detail(format!("{why}; change the draft, save, then review again"))),
        Review::SessionBusy => Err(ApiError::new(ErrorCode::SessionHasActiveRun)
            .detail("a message sent in this draft's send conversation is still running; wait for it or stop it")),
        Review::NotFound => Err(ApiError::new(ErrorCode::EmailDraftNotFound)),
    }
}

/// Asks the agent to propose a reply in a conversation: on its draft (or a new reply to its
/// newest sender), as a `propose_reply` operation the async worker runs. The proposal lands as
/// the draft's next revision (author `agent`) only if nobody saved or froze the draft meanwhile
/// (else the operation fails `email.draft_changed`); follow it at `/v1/email/operations/{id}`.
#[utoipa::path(
    post, path = "/v1/email/threads/{thread_id}/proposal", tag = "email",
    security(("bearer" = ["email.write"])),
    params(("thread_id" = Uuid, Path)),
    responses((status = 202, description = "Queued", body = ProposalAnswer))
)]
pub async fn propose(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(thread_id): Path<String>,
) -> Result<Response, ApiError> {
    let thread = super::email::parse_uuid(&thread_id, ErrorCode::EmailThreadNotFound)?;
    match state.store.email().request_proposal(thread).await? {
        store::RequestProposal::Queued(queued) => {
            let (operation, row) = *queued;
            Ok((
                StatusCode::ACCEPTED,
                JsonResponse(ProposalAnswer {
                    operation: super::email::operation(operation),
                    draft: draft(&state, &caller.principal, row).await?,
                }),
            )
                .into_response())
        }
        store::RequestProposal::UnknownThread => Err(ApiError::new(ErrorCode::EmailThreadNotFound)),
        store::RequestProposal::Frozen(frozen) => Err(sending(&frozen)),
    }
}
