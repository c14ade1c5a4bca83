//! Email mode's feedback and learning controls (mounted with Email mode): feedback on a
//! conversation (its own, a person's, or its kind of content's rule, applied there at once and
//! to later assessments) and its Undo; pausing and resuming learning, scoped resets, excluded
//! sources; and endorsing a saved draft's wording as the owner's writing style.

use axum::Json as JsonResponse;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use domain::ErrorCode;
use store::{EndorseStyle as Endorsed, FeedbackRow, GiveFeedback as Given, LearningReset, NewFeedback};
use wire::email::{
    EndorseStyle, ExcludeSource, Feedback, FeedbackAnswer, GiveFeedback, Learning, LearningExclusion, Reset,
    ResetAnswer, ResetLearning, SetLearning, StyleSample,
};

use super::email::{parse_uuid, summary};
use crate::AppState;
use crate::extract::{Json, Path};
use crate::problem::ApiError;

fn feedback(row: FeedbackRow) -> Feedback {
    Feedback {
        feedback_id: row.id.as_uuid(),
        scope: row.scope,
        signal: row.signal,
        thread_id: row.thread.as_uuid(),
        person: row.person,
        kind: row.kind,
        created_at: row.created_at,
        retired: row.retired_at.is_some(),
    }
}

/// The feedback beside the conversation it was given on, as that now shows.
async fn answer(state: &AppState, row: FeedbackRow) -> Result<FeedbackAnswer, ApiError> {
    let thread = state
        .store
        .email()
        .thread_summary(row.thread)
        .await?
        .ok_or_else(|| ApiError::new(ErrorCode::EmailThreadNotFound))?;
    Ok(FeedbackAnswer {
        feedback: feedback(row),
        thread: summary(thread),
    })
}

/// Feedback on a conversation: Important or Less important, Needs reply or No reply needed,
/// for this conversation, one person (one of its senders, named in `person`) or its kind of
/// content. It applies here at once and to every later assessment it matches; the answer's
/// `feedback.scope` is the scope applied and `thread` the conversation as it now shows.
#[utoipa::path(
    post, path = "/v1/email/threads/{thread_id}/feedback", tag = "email",
    security(("bearer" = ["email.write"])),
    params(("thread_id" = Uuid, Path)),
    request_body = GiveFeedback,
    responses((status = 201, description = "Given and applied", body = FeedbackAnswer))
)]
pub async fn give(
    State(state): State<AppState>,
    Path(thread_id): Path<String>,
    Json(body): Json<GiveFeedback>,
) -> Result<Response, ApiError> {
    let thread = parse_uuid(&thread_id, ErrorCode::EmailThreadNotFound)?;
    let (scope, signal, person) = body.checked()?;
    let outcome = state
        .store
        .email()
        .give_feedback(NewFeedback {
            thread,
            scope,
            signal,
            person: person.as_deref(),
        })
        .await?;
    let row = match outcome {
        Given::Given(row) => row,
        Given::ThreadNotFound => return Err(ApiError::new(ErrorCode::EmailThreadNotFound)),
        Given::Unassessed => {
            return Err(ApiError::new(ErrorCode::EmailThreadUnassessed)
                .detail("its kind of content is known once it is assessed; give feedback on the conversation itself"));
        }
        Given::NotASender => {
            return Err(ApiError::new(ErrorCode::EmailFeedbackPersonUnknown)
                .detail("name one of the people who wrote in this conversation")
                .field("person"));
        }
        Given::Paused => {
            return Err(ApiError::new(ErrorCode::EmailLearningPaused)
                .detail("while learning is paused, feedback applies to this conversation only"));
        }
        Given::Excluded => {
            return Err(ApiError::new(ErrorCode::EmailSourceExcluded)
                .detail("this conversation comes from an excluded sender or label; feedback applies to it only"));
        }
    };
    Ok((StatusCode::CREATED, JsonResponse(answer(&state, row).await?)).into_response())
}

/// Undo: the feedback applies nowhere from now on, and what it decided shows the classifier's
/// answer again (or another rule's). Undoing it again answers the same.
#[utoipa::path(
    delete, path = "/v1/email/feedback/{feedback_id}", tag = "email",
    security(("bearer" = ["email.write"])),
    params(("feedback_id" = Uuid, Path)),
    responses((status = 200, description = "Undone", body = FeedbackAnswer))
)]
pub async fn undo(
    State(state): State<AppState>,
    Path(feedback_id): Path<String>,
) -> Result<JsonResponse<FeedbackAnswer>, ApiError> {
    let id = parse_uuid(&feedback_id, ErrorCode::EmailFeedbackNotFound)?;
    let row = state
        .store
        .email()
        .undo_feedback(id)
        .await?
        .ok_or_else(|| ApiError::new(ErrorCode::EmailFeedbackNotFound))?;
    Ok(JsonResponse(answer(&state, row).await?))
}

async fn learning_now(state: &AppState) -> Result<Learning, ApiError> {
    let row = state.store.email().learning().await?;
    Ok(Learning {
        paused: row.paused,
        exclusions: row
            .exclusions
            .into_iter()
            .map(|exclusion| LearningExclusion {
                exclusion_id: exclusion.id,
                kind: exclusion.kind,
                value: exclusion.value,
                created_at: exclusion.created_at,
            })
            .collect(),
        rules: row.rules.into_iter().map(feedback).collect(),
        style_samples: u32::try_from(row.style_samples).unwrap_or(u32::MAX),
    })
}

/// The learning controls: paused or not, the excluded sources, the person and kind rules in
/// force and how much wording was endorsed as the owner's style.
#[utoipa::path(
    get, path = "/v1/email/learning", tag = "email",
    security(("bearer" = ["email.read"])),
    responses((status = 200, description = "The learning controls", body = Learning))
)]
pub async fn learning(State(state): State<AppState>) -> Result<JsonResponse<Learning>, ApiError> {
    Ok(JsonResponse(learning_now(&state).await?))
}

/// Pauses or resumes learning. While paused, no person or kind rule forms and no wording is
/// endorsed; feedback on a conversation itself still applies, and rules in force still apply.
#[utoipa::path(
    put, path = "/v1/email/learning", tag = "email",
    security(("bearer" = ["email.write"])),
    request_body = SetLearning,
    responses((status = 200, description = "The learning controls", body = Learning))
)]
pub async fn set_learning(
    State(state): State<AppState>,
    Json(body): Json<SetLearning>,
) -> Result<JsonResponse<Learning>, ApiError> {
    state.store.email().pause_learning(body.paused).await?;
    Ok(JsonResponse(learning_now(&state).await?))
}

/// A scoped reset: every rule about one person, about one kind of content, or everything
/// learnt (person and kind rules and the endorsed style). Conversations those rules decided
/// show the classifier's answer again; feedback on a conversation itself stays.
#[utoipa::path(
    post, path = "/v1/email/learning/reset", tag = "email",
    security(("bearer" = ["email.write"])),
    request_body = ResetLearning,
    responses((status = 200, description = "Reset", body = ResetAnswer))
)]
pub async fn reset(
    State(state): State<AppState>,
    Json(body): Json<ResetLearning>,
) -> Result<JsonResponse<ResetAnswer>, ApiError> {
    let reset = body.checked()?;
    let retired = state
        .store
        .email()
        .reset_learning(match &reset {
            Reset::Person(person) => LearningReset::Person(person),
            Reset::Kind(kind) => LearningReset::Kind(*kind),
            Reset::Everything => LearningReset::Everything,
        })
        .await?;
    Ok(JsonResponse(ResetAnswer {
        retired: u32::try_from(retired).unwrap_or(u32::MAX),
    }))
}

/// Excludes a source from learning: mail from this sender, or with this provider label, is
/// never used for learning; the person and kind rules that came from it are retired.
#[utoipa::path(
    post, path = "/v1/email/learning/exclusions", tag = "email",
    security(("bearer" = ["email.write"])),
    request_body = ExcludeSource,
    responses((status = 201, description = "Excluded", body = LearningExclusion))
)]
pub async fn exclude(State(state): State<AppState>, Json(body): Json<ExcludeSource>) -> Result<Response, ApiError> {
    let (kind, value) = body.checked()?;
    let row = state.store.email().exclude_source(kind, &value).await?;
    let exclusion = LearningExclusion {
        exclusion_id: row.id,
        kind,
        value: row.value,
        created_at: row.created_at,
    };
    Ok((StatusCode::CREATED, JsonResponse(exclusion)).into_response())
}

/// Removes an exclusion; rules it retired stay retired.
#[utoipa::path(
    delete, path = "/v1/email/learning/exclusions/{exclusion_id}", tag = "email",
    security(("bearer" = ["email.write"])),
    params(("exclusion_id" = Uuid, Path)),
    responses((status = 204, description = "Removed"))
)]
pub async fn include(State(state): State<AppState>, Path(exclusion_id): Path<String>) -> Result<StatusCode, ApiError> {
    let id = parse_uuid(&exclusion_id, ErrorCode::EmailExclusionNotFound)?;
    if state.store.email().remove_exclusion(id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::new(ErrorCode::EmailExclusionNotFound))
    }
}

/// Writing style: endorses wording shown in the saved revision `revision` (which must be the
/// newest: a save conflict prevents it) as the owner's style, which the agent's proposed
/// drafts follow.
#[utoipa::path(
    post, path = "/v1/email/drafts/{draft_id}/style", tag = "email",
    security(("bearer" = ["email.write"])),
    params(("draft_id" = Uuid, Path)),
    request_body = EndorseStyle,
    responses((status = 201, description = "Endorsed", body = StyleSample))
)]
pub async fn endorse(
    State(state): State<AppState>,
    Path(draft_id): Path<String>,
    Json(body): Json<EndorseStyle>,
) -> Result<Response, ApiError> {
    let draft = parse_uuid(&draft_id, ErrorCode::EmailDraftNotFound)?;
    if body.text.trim().is_empty() || body.text.chars().count() > wire::email::MAX_STYLE_CHARS {
        return Err(ApiError::new(ErrorCode::ValidationFailed)
            .detail(format!("1 to {} characters of wording", wire::email::MAX_STYLE_CHARS))
            .field("text"));
    }
    let revision = i32::try_from(body.revision).unwrap_or(i32::MAX);
    match state.store.email().endorse_style(draft, revision, &body.text).await? {
        Endorsed::Endorsed(row) => Ok((
            StatusCode::CREATED,
            JsonResponse(StyleSample {
                sample_id: row.id,
                draft_id: row.draft.as_uuid(),
                revision: u32::try_from(row.revision).unwrap_or_default(),
                text: row.text,
                created_at: row.created_at,
            }),
        )
            .into_response()),
        Endorsed::Conflict(row) => Err(ApiError::new(ErrorCode::RevisionMismatch)
            .detail("the draft was saved since; endorse wording of its newest revision")
            .revision(row.newest.revision)),
        Endorsed::NotShown => Err(ApiError::new(ErrorCode::EmailStyleNotInDraft)
            .detail("endorse wording the saved revision shows")
            .field("text")),
        Endorsed::Paused => {
            Err(ApiError::new(ErrorCode::EmailLearningPaused).detail("resume learning to endorse wording"))
        }
        Endorsed::NotFound => Err(ApiError::new(ErrorCode::EmailDraftNotFound)),
    }
}
