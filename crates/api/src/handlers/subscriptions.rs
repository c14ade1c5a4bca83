//! Unsubscribe assistance (`/v1/email/subscriptions`, mounted with
//! `AGENT_EMAIL_UNSUBSCRIBE_ENABLED=1`): the census in server order, the one unsubscribe
//! command (run by the worker, polled at `/v1/email/operations/{id}`), and the owner's changes
//! of a row. No answer carries an unsubscribe URI: rows show the host or address only.

use axum::Json as JsonResponse;
use axum::extract::State;
use axum::http::StatusCode;
use domain::ErrorCode;
use domain::cursor::CursorKind;
use domain::ids::SubscriptionId;
use store::{ConfirmedTarget, OwnerChange, SubscriptionChange, SubscriptionQuery, SubscriptionRow, UnsubscribeRequest};
use uuid::Uuid;
use wire::subscriptions::{
    ListSubscriptions, RefusedTarget, SubscriptionChanged, SubscriptionPage, TargetRefusal, Unsubscribe,
    UnsubscribeAnswer,
};

use super::email::{connected_account, operation, page_after, parse_uuid, subscription, targets};
use crate::AppState;
use crate::extract::{Json, Path, Query};
use crate::problem::ApiError;

const DEFAULT_PAGE_SIZE: u32 = 50;
const MAX_PAGE_SIZE: u32 = 100;

fn encode_position(row: &SubscriptionRow) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(24);
    bytes.extend_from_slice(&row.last_arrival_at.as_microsecond().to_be_bytes());
    bytes.extend_from_slice(row.id.as_uuid().as_bytes());
    bytes
}

fn decode_position(bytes: &[u8]) -> Option<(jiff::Timestamp, SubscriptionId)> {
    let micros = i64::from_be_bytes(bytes.get(..8)?.try_into().ok()?);
    let id = SubscriptionId::from_uuid(Uuid::from_slice(bytes.get(8..)?).ok()?);
    Some((jiff::Timestamp::from_microsecond(micros).ok()?, id))
}

/// The census: senders of bulk mail, newest arrival first, by account and state, paged by
/// cursor. Rows read `unverified` (`Checking…`) until their evidence verifies.
#[utoipa::path(
    get, path = "/v1/email/subscriptions", tag = "email",
    security(("bearer" = ["email.read"])),
    params(ListSubscriptions),
    responses((status = 200, description = "A page of the census", body = SubscriptionPage))
)]
pub async fn list(
    State(state): State<AppState>,
    Query(params): Query<ListSubscriptions>,
) -> Result<JsonResponse<SubscriptionPage>, ApiError> {
    let limit = super::page_limit(params.limit, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)?;
    let after = page_after(
        &state,
        CursorKind::EmailSubscriptions,
        params.cursor.as_deref(),
        decode_position,
    )?;
    let account = connected_account(&state, params.account_id.as_deref()).await?;
    let mut rows = state
        .store
        .email()
        .list_subscriptions(&SubscriptionQuery {
            account,
            state: params.state,
            after,
            limit: i64::from(limit) + 1,
        })
        .await?;
    let next_cursor = super::next_page(
        &state,
        CursorKind::EmailSubscriptions,
        &mut rows,
        limit,
        encode_position,
    );
    Ok(JsonResponse(SubscriptionPage {
        subscriptions: rows.into_iter().map(subscription).collect(),
        next_cursor,
    }))
}

/// One confirmed unsubscribe command: each target names a row with the evidence digest and
/// revision the owner confirmed. A target whose row moved, is gone or is not eligible is
/// refused on its own (listed in `refused`); the others run in one operation, one request per
/// sender, never repeated by itself. Every target refused: 409, nothing runs.
#[utoipa::path(
    post, path = "/v1/email/subscriptions/unsubscribe", tag = "email",
    security(("bearer" = ["email.write"])),
    request_body = Unsubscribe,
    responses((status = 202, description = "The command's operation", body = UnsubscribeAnswer))
)]
pub async fn unsubscribe(
    State(state): State<AppState>,
    Json(body): Json<Unsubscribe>,
) -> Result<(StatusCode, JsonResponse<UnsubscribeAnswer>), ApiError> {
    let (confirmed, also_archive) = body.checked()?;
    let confirmed: Vec<ConfirmedTarget> = confirmed
        .into_iter()
        .map(|target| ConfirmedTarget {
            subscription: SubscriptionId::from_uuid(target.subscription_id),
            digest: target.evidence_digest,
            revision: target.expected_revision,
        })
        .collect();
    let refusals = |refused: Vec<(SubscriptionId, store::TargetRefused)>| -> Vec<RefusedTarget> {
        refused
            .into_iter()
            .map(|(id, reason)| RefusedTarget {
                subscription_id: id.as_uuid(),
                reason: match reason {
                    store::TargetRefused::NotFound => TargetRefusal::NotFound,
                    store::TargetRefused::Changed => TargetRefusal::Changed,
                    store::TargetRefused::NotEligible => TargetRefusal::NotEligible,
                },
            })
            .collect()
    };
    match state
        .store
        .email()
        .request_unsubscribe(&confirmed, also_archive)
        .await?
    {
        UnsubscribeRequest::Accepted {
            operation: row,
            refused,
        } => {
            let id = row.id;
            let mut answer = operation(row);
            answer.targets = targets(&state, id).await?;
            Ok((
                StatusCode::ACCEPTED,
                JsonResponse(UnsubscribeAnswer {
                    operation: answer,
                    refused: refusals(refused),
                }),
            ))
        }
        UnsubscribeRequest::NoneAccepted(refused) => {
            let reasons: Vec<String> = refusals(refused)
                .iter()
                .map(|refused| {
                    let reason = serde_json::to_value(refused.reason)
                        .ok()
                        .and_then(|value| value.as_str().map(str::to_owned))
                        .unwrap_or_default();
                    format!("{}: {reason}", refused.subscription_id)
                })
                .collect();
            Err(ApiError::new(ErrorCode::EmailSubscriptionChanged).detail(format!(
                "no sender can be unsubscribed as confirmed; reload and confirm again ({})",
                reasons.join(", ")
            )))
        }
        UnsubscribeRequest::AccountsDiffer => Err(ApiError::new(ErrorCode::ValidationFailed)
            .detail("one command names senders of one account")
            .field("targets")),
    }
}

async fn change(
    state: &AppState,
    subscription_id: &str,
    revision: i64,
    change: OwnerChange,
) -> Result<JsonResponse<SubscriptionChanged>, ApiError> {
    let id: SubscriptionId = parse_uuid(subscription_id, ErrorCode::EmailSubscriptionNotFound)?;
    match state.store.email().change_subscription(id, revision, change).await? {
        SubscriptionChange::Done { row, operations } => Ok(JsonResponse(SubscriptionChanged {
            subscription: subscription(row),
            operations: operations.into_iter().map(operation).collect(),
        })),
        SubscriptionChange::NotFound => Err(ApiError::new(ErrorCode::EmailSubscriptionNotFound)),
        SubscriptionChange::Changed(row) => Err(ApiError::new(ErrorCode::EmailSubscriptionChanged)
            .detail(format!("the row is at revision {}: reload it", row.revision))),
        SubscriptionChange::NotApplicable(row) => Err(ApiError::new(ErrorCode::EmailSubscriptionNotApplicable)
            .detail(format!("the row is `{}`", row.state.as_str()))),
    }
}

/// Keep receiving this sender's mail (reversible): it is never suggested again, also after
/// unsubscribe assistance is turned off and on.
#[utoipa::path(
    post, path = "/v1/email/subscriptions/{subscription_id}/keep", tag = "email",
    security(("bearer" = ["email.write"])),
    params(("subscription_id" = Uuid, Path)),
    request_body = wire::subscriptions::SubscriptionChange,
    responses((status = 200, description = "The row", body = SubscriptionChanged))
)]
pub async fn keep(
    State(state): State<AppState>,
    Path(subscription_id): Path<String>,
    Json(body): Json<wire::subscriptions::SubscriptionChange>,
) -> Result<JsonResponse<SubscriptionChanged>, ApiError> {
    change(&state, &subscription_id, body.expected_revision, OwnerChange::Keep).await
}

/// Undoes Keep: the row returns to what it was before.
#[utoipa::path(
    post, path = "/v1/email/subscriptions/{subscription_id}/undo-keep", tag = "email",
    security(("bearer" = ["email.write"])),
    params(("subscription_id" = Uuid, Path)),
    request_body = wire::subscriptions::SubscriptionChange,
    responses((status = 200, description = "The row", body = SubscriptionChanged))
)]
pub async fn undo_keep(
    State(state): State<AppState>,
    Path(subscription_id): Path<String>,
    Json(body): Json<wire::subscriptions::SubscriptionChange>,
) -> Result<JsonResponse<SubscriptionChanged>, ApiError> {
    change(&state, &subscription_id, body.expected_revision, OwnerChange::UndoKeep).await
}

/// Reports the sender's Inbox mail as spam: one write per conversation (each an operation),
/// and the row reads `reported_spam`. Nothing is sent to the sender.
#[utoipa::path(
    post, path = "/v1/email/subscriptions/{subscription_id}/spam", tag = "email",
    security(("bearer" = ["email.write"])),
    params(("subscription_id" = Uuid, Path)),
    request_body = wire::subscriptions::SubscriptionChange,
    responses((status = 200, description = "The row and its writes", body = SubscriptionChanged))
)]
pub async fn report_spam(
    State(state): State<AppState>,
    Path(subscription_id): Path<String>,
    Json(body): Json<wire::subscriptions::SubscriptionChange>,
) -> Result<JsonResponse<SubscriptionChanged>, ApiError> {
    change(
        &state,
        &subscription_id,
        body.expected_revision,
        OwnerChange::ReportSpam,
    )
    .await
}

/// Not spam for a reported sender: exactly the conversations its Report spam moved return to
/// the Inbox, and the row reads `kept`.
#[utoipa::path(
    post, path = "/v1/email/subscriptions/{subscription_id}/not-spam", tag = "email",
    security(("bearer" = ["email.write"])),
    params(("subscription_id" = Uuid, Path)),
    request_body = wire::subscriptions::SubscriptionChange,
    responses((status = 200, description = "The row and its writes", body = SubscriptionChanged))
)]
pub async fn not_spam(
    State(state): State<AppState>,
    Path(subscription_id): Path<String>,
    Json(body): Json<wire::subscriptions::SubscriptionChange>,
) -> Result<JsonResponse<SubscriptionChanged>, ApiError> {
    change(&state, &subscription_id, body.expected_revision, OwnerChange::NotSpam).await
}
