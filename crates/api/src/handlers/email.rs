//! Email mode (`/v1/email`, mounted with `AGENT_EMAIL_MODE_ENABLED=1`): the accounts with their
//! freshness and coverage, a refresh request, the priority inbox and Other mail, a thread's
//! reading pane, and the conversation changes (archive, move back, report spam, Not spam) the
//! worker runs as durable operations, each readable at `/v1/email/operations/{id}`.
//!
//! Mail content is served to the owner only and never logged here.

use std::time::Duration;

use axum::Json as JsonResponse;
use axum::extract::State;
use axum::http::StatusCode;
use domain::ErrorCode;
use domain::cursor::CursorKind;
use domain::email::{DraftStanding, MailboxWrite, ReplyNeed};
use domain::ids::{AccountId, DraftId, ThreadId};
use store::{
    EmailAccountRow, EmailMessageRow, EmailOperationRow, InboxPosition, InboxQuery, ThreadSummary, WriteRequest,
};
use uuid::Uuid;
use wire::email::{
    EmailAccount, EmailAccountList, EmailMessage, EmailOperation, EmailThread, EmailThreadPage, EmailThreadSummary,
    Freshness, InboxView, JunkCategory, JunkExplanation, JunkFilterStanding, JunkMode, ListEmailThreads, MailboxPlace,
    RefreshAnswer, ThreadState,
};

use crate::AppState;
use crate::extract::{Path, Query};
use crate::problem::ApiError;

/// A new refresh of an account is admitted at most this often; a request within it is answered
/// with the one already admitted.
pub const REFRESH_INTERVAL: Duration = Duration::from_secs(60);
const MAX_PAGE_SIZE: u32 = 100;
/// The longest search, in characters.
const MAX_SEARCH_CHARS: usize = 200;

/// The junk first pass on an account: the mode this server is configured with, and what the
/// async worker last found in force under that same mode (null before it has looked).
fn junk_standing(recorded: Option<store::JunkStatus>, mode: JunkMode) -> JunkFilterStanding {
    let recorded = recorded.filter(|status| status.configured == mode);
    JunkFilterStanding {
        mode,
        in_force: recorded.map(|status| status.in_force),
        reason: recorded.and_then(|status| status.reason),
    }
}

/// The sentence a kept-out row shows: what it reads as and how sure (rounded down, so never
/// 100%), and how the owner brings it back.
pub(crate) fn explanation(junk: store::JunkFiltered) -> JunkExplanation {
    let percent = (junk.probability * 1000.0).floor() / 10.0;
    let by = if junk.mode == JunkMode::Pilot {
        "the junk pilot"
    } else {
        "the junk filter"
    };
    let explanation = match junk.category {
        JunkCategory::Spam => format!(
            "Kept out of Important by {by}: it reads as spam ({percent:.1}% sure). Mark it Important or Not spam to bring it back."
        ),
        _ => format!(
            "Kept out of Important by {by}: it reads as bulk mail ({percent:.1}% sure). Mark it Important to bring it back."
        ),
    };
    JunkExplanation {
        category: junk.category,
        probability: junk.probability,
        mode: junk.mode,
        explanation,
    }
}

fn account(row: EmailAccountRow, send_tool: Option<String>, unsubscribe: bool, junk: JunkMode) -> EmailAccount {
    EmailAccount {
        junk_filter: junk_standing(row.junk, junk),
        send_tool,
        freshness: if row.updated_at.is_some() {
            Freshness::Current
        } else {
            Freshness::Pending
        },
        account_id: row.account_id.into_string(),
        address: row.address,
        updated_at: row.updated_at,
        coverage_from: row.coverage_from,
        last_error: row.last_error,
        last_error_at: row.last_error_at,
        waiting: row.waiting,
        // Unsubscribe assistance needs no provider permission: on for every account with its
        // flag (`AGENT_EMAIL_UNSUBSCRIBE_ENABLED=1`).
        unsubscribe_supported: unsubscribe,
        // The provider keeps a Spam label in every mailbox.
        spam_supported: true,
    }
}

pub(crate) fn summary(row: ThreadSummary) -> EmailThreadSummary {
    let place = if row.in_spam {
        MailboxPlace::Spam
    } else if row.in_inbox {
        MailboxPlace::Inbox
    } else {
        MailboxPlace::Archived
    };
    // One line: an unknown send outcome first (the owner must check), then where the
    // conversation is, then a reply in progress, then what the classifier said.
    let draft = row.draft_state;
    let state = match place {
        _ if draft == Some(DraftStanding::CheckSendStatus) => Some(ThreadState::CheckSendStatus),
        MailboxPlace::Spam => row.reported.then_some(ThreadState::Reported),
        MailboxPlace::Archived if row.handled => Some(ThreadState::Handled),
        MailboxPlace::Archived => Some(ThreadState::Archived),
        MailboxPlace::Inbox if draft == Some(DraftStanding::Draft) => Some(ThreadState::Draft),
        MailboxPlace::Inbox => row.reply_need.map(|need| match need {
            ReplyNeed::NeedsReply => ThreadState::NeedsReply,
            ReplyNeed::ForYourAttention => ThreadState::ForYourAttention,
        }),
    };
    EmailThreadSummary {
        thread_id: row.id.as_uuid(),
        account_id: row.account_id.into_string(),
        provider_thread_id: row.provider_thread_id,
        subject: row.subject,
        correspondents: row.correspondents,
        latest_at: row.latest_at,
        message_count: u32::try_from(row.message_count).unwrap_or_default(),
        has_attachments: row.has_attachments,
        place,
        state,
        importance: row.importance,
        gist: row.gist,
        classifier: row.classifier,
        suspected_spam: row.suspected_spam,
        draft_id: row.draft_id.map(DraftId::as_uuid),
        kind: row.kind,
        reasons: row.reasons,
        junk: row.junk.map(explanation),
    }
}

fn message(row: EmailMessageRow) -> EmailMessage {
    EmailMessage {
        message_id: row.provider_message_id,
        from: row.sender,
        to: row.recipients,
        cc: row.copied,
        sent_at: row.sent_at,
        subject: row.subject,
        text: row.body,
        text_cut: row.text_cut,
        attachments: row.attachments,
    }
}

pub(crate) fn operation(row: EmailOperationRow) -> EmailOperation {
    EmailOperation {
        operation_id: row.id.as_uuid(),
        kind: row.kind,
        state: row.state,
        account_id: row.account_id.into_string(),
        thread_id: row.thread.map(ThreadId::as_uuid),
        error: row.error,
        created_at: row.created_at,
        updated_at: row.updated_at,
        reconciled_at: row.reconciled_at,
        draft_id: row.draft.map(DraftId::as_uuid),
        targets: Vec::new(),
    }
}

/// The agent a draft's send session is pinned to and the `send_message` tool of `account_id`
/// in its roster; `None` when this server cannot send from that account (mail off, or the
/// account not connected).
pub(crate) fn send_tool<'a>(
    state: &'a AppState,
    account_id: &str,
) -> Option<(&'a domain::agent::Agent, domain::mail_tools::MailTool)> {
    let agents = &state.settings.agents;
    let agent = agents.get("default").or_else(|| agents.iter().next())?;
    let tool = domain::mail_tools::send_tool(state.settings.mail_accounts.as_ref()?, account_id)?;
    agent.configuration.tools.contains(&tool.name).then_some((agent, tool))
}

/// A path's id of an Email resource (`missing` when it is no UUID), typed as the caller asks.
/// A census row as clients see it: the host or address, never the URI.
pub(crate) fn subscription(row: store::SubscriptionRow) -> wire::email::Subscription {
    wire::email::Subscription {
        subscription_id: row.id.as_uuid(),
        account_id: row.account_id.into_string(),
        sender: wire::email::Correspondent {
            name: row.sender_name,
            address: row.sender,
        },
        conversations: u32::try_from(row.conversations).unwrap_or_default(),
        last_arrival_at: row.last_arrival_at,
        mechanism: row.mechanism,
        destination: row.destination,
        state: row.state,
        protected: row.protected,
        evidence_digest: row.digest,
        revision: row.revision,
        last_error: row.last_error,
        unsubscribed_at: row.unsubscribed_at,
    }
}

/// The targets of unsubscribe operation `id` as a client sees them.
pub(crate) async fn targets(
    state: &AppState,
    id: domain::ids::EmailOperationId,
) -> Result<Vec<wire::subscriptions::UnsubscribeTargetStatus>, ApiError> {
    Ok(state
        .store
        .email()
        .unsubscribe_targets(id)
        .await?
        .into_iter()
        .map(|target| wire::subscriptions::UnsubscribeTargetStatus {
            subscription_id: target.subscription.as_uuid(),
            mechanism: target.mechanism,
            destination: target.destination,
            state: target.state,
            error: target.error,
        })
        .collect())
}

pub(crate) fn parse_uuid<T: From<Uuid>>(text: &str, missing: ErrorCode) -> Result<T, ApiError> {
    super::parse_id(text, |text| Uuid::parse_str(text).ok().map(T::from), missing)
}

/// Every connected account: freshness (`pending` until its first update completes), historical
/// coverage, the last refresh error and why new mail waits unassessed.
#[utoipa::path(
    get, path = "/v1/email/accounts", tag = "email",
    security(("bearer" = ["email.read"])),
    responses((status = 200, description = "Every account", body = EmailAccountList))
)]
pub async fn accounts(State(state): State<AppState>) -> Result<JsonResponse<EmailAccountList>, ApiError> {
    let rows = state.store.email().accounts().await?;
    Ok(JsonResponse(EmailAccountList {
        accounts: rows
            .into_iter()
            .map(|row| {
                let tool = send_tool(&state, row.account_id.as_str()).map(|(_, tool)| tool.name);
                account(
                    row,
                    tool,
                    state.settings.flags.is_on(domain::flags::Flag::EmailUnsubscribe),
                    state.settings.flags.junk_filter_mode().into(),
                )
            })
            .collect(),
    }))
}

/// Asks for a refresh of the account. A new one is admitted at most every 60 seconds per account;
/// within that the one admitted is answered (`admitted: false`). Follow it at
/// `/v1/email/operations/{operation_id}`.
#[utoipa::path(
    post, path = "/v1/email/accounts/{account_id}/refresh", tag = "email",
    security(("bearer" = ["email.read"])),
    params(("account_id" = String, Path)),
    responses((status = 202, description = "The refresh admitted, or the one admitted within the interval", body = RefreshAnswer))
)]
pub async fn refresh(
    State(state): State<AppState>,
    Path(account_id): Path<String>,
) -> Result<(StatusCode, JsonResponse<RefreshAnswer>), ApiError> {
    let unknown = || ApiError::new(ErrorCode::EmailAccountNotFound).detail("no connected account has this id");
    if !domain::manifest::valid_account_id(&account_id) {
        return Err(unknown());
    }
    let request = state
        .store
        .email()
        .request_refresh(&AccountId::from(account_id), REFRESH_INTERVAL)
        .await?
        .ok_or_else(unknown)?;
    Ok((
        StatusCode::ACCEPTED,
        JsonResponse(RefreshAnswer {
            admitted: request.admitted,
            operation: operation(request.operation),
        }),
    ))
}

/// The 26 bytes of a listing position: priority, microseconds since the epoch, thread id.
/// Refuses an `account_id` filter that is not an account id's shape.
fn check_account_shape(account_id: Option<&str>) -> Result<(), ApiError> {
    match account_id {
        Some(account_id) if !domain::manifest::valid_account_id(account_id) => {
            Err(ApiError::new(ErrorCode::InvalidRequest)
                .detail("an account id is lowercase letters, digits, `-` and `_`")
                .field("account_id"))
        }
        _ => Ok(()),
    }
}

/// The connected account an `account_id` filter names (404 when none has it).
pub(crate) async fn connected_account(
    state: &AppState,
    account_id: Option<&str>,
) -> Result<Option<AccountId>, ApiError> {
    check_account_shape(account_id)?;
    let Some(account_id) = account_id.map(AccountId::from) else {
        return Ok(None);
    };
    if state.store.email().account(&account_id).await?.is_none() {
        return Err(ApiError::new(ErrorCode::EmailAccountNotFound)
            .detail("no connected account has this id")
            .field("account_id"));
    }
    Ok(Some(account_id))
}

/// The position a listing's `cursor` of `kind` resumes after; an empty `cursor=` is no cursor
/// (the first page), and one this server did not issue for `kind` is 400 `invalid_cursor`.
pub(crate) fn page_after<T>(
    state: &AppState,
    kind: CursorKind,
    cursor: Option<&str>,
    decode: fn(&[u8]) -> Option<T>,
) -> Result<Option<T>, ApiError> {
    let Some(cursor) = cursor.filter(|cursor| !cursor.is_empty()) else {
        return Ok(None);
    };
    let invalid =
        || ApiError::new(ErrorCode::InvalidCursor).detail("cursor is malformed, altered or from another view");
    let bytes = state
        .settings
        .cursors
        .decode_bytes(kind, cursor)
        .map_err(|_| invalid())?;
    decode(&bytes).map(Some).ok_or_else(invalid)
}

fn encode_position(position: InboxPosition) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(26);
    bytes.extend_from_slice(&position.priority.to_be_bytes());
    bytes.extend_from_slice(&position.latest_at.as_microsecond().to_be_bytes());
    bytes.extend_from_slice(position.id.as_uuid().as_bytes());
    bytes
}

fn decode_position(bytes: &[u8]) -> Option<InboxPosition> {
    let priority = i16::from_be_bytes(bytes.get(..2)?.try_into().ok()?);
    let micros = i64::from_be_bytes(bytes.get(2..10)?.try_into().ok()?);
    let id = ThreadId::from_uuid(Uuid::from_slice(bytes.get(10..)?).ok()?);
    Some(InboxPosition {
        priority,
        latest_at: jiff::Timestamp::from_microsecond(micros).ok()?,
        id,
    })
}

/// One page of the priority inbox (`view=important`, five rows by default) or of Other mail
/// (`view=other`), by account and search, paged by cursor.
#[utoipa::path(
    get, path = "/v1/email/threads", tag = "email",
    security(("bearer" = ["email.read"])),
    params(ListEmailThreads),
    responses((status = 200, description = "One page of the listing", body = EmailThreadPage))
)]
pub async fn threads(
    State(state): State<AppState>,
    Query(params): Query<ListEmailThreads>,
) -> Result<JsonResponse<EmailThreadPage>, ApiError> {
    let view = params.view.unwrap_or_default();
    let (kind, default_limit) = match view {
        InboxView::Important => (CursorKind::EmailImportant, 5),
        InboxView::Other => (CursorKind::EmailOther, 25),
    };
    let limit = super::page_limit(params.limit, default_limit, MAX_PAGE_SIZE)?;
    check_account_shape(params.account_id.as_deref())?;
    if let Some(words) = params.q.as_deref()
        && (words.is_empty() || words.chars().count() > MAX_SEARCH_CHARS || words.contains('\0'))
    {
        return Err(ApiError::new(ErrorCode::InvalidRequest)
            .detail(format!("q must be 1 to {MAX_SEARCH_CHARS} characters, without NUL"))
            .field("q"));
    }
    let after = page_after(&state, kind, params.cursor.as_deref(), decode_position)?;
    let account = connected_account(&state, params.account_id.as_deref()).await?;
    let search = params.q.as_deref().map(str::trim).filter(|words| !words.is_empty());
    // One row more than asked says whether another page follows.
    let mut rows = state
        .store
        .email()
        .inbox(&InboxQuery {
            view,
            account_id: account.as_ref(),
            search,
            after,
            limit: limit + 1,
        })
        .await?;
    let next_cursor = super::next_page(&state, kind, &mut rows, limit, |last| encode_position(last.position()));
    Ok(JsonResponse(EmailThreadPage {
        threads: rows.into_iter().map(summary).collect(),
        next_cursor,
    }))
}

/// A conversation's reading pane: its row and its messages' text and attachment metadata,
/// oldest first. No remote content is ever part of it.
#[utoipa::path(
    get, path = "/v1/email/threads/{thread_id}", tag = "email",
    security(("bearer" = ["email.read"])),
    params(("thread_id" = Uuid, Path)),
    responses((status = 200, description = "The conversation", body = EmailThread))
)]
pub async fn thread(
    State(state): State<AppState>,
    Path(thread_id): Path<String>,
) -> Result<JsonResponse<EmailThread>, ApiError> {
    let id = parse_uuid(&thread_id, ErrorCode::EmailThreadNotFound)?;
    let (row, messages) = state
        .store
        .email()
        .thread(id)
        .await?
        .ok_or_else(|| ApiError::new(ErrorCode::EmailThreadNotFound))?;
    // With unsubscribe assistance on, the newest message's sender's census row.
    let newest_sender = messages.last().and_then(|newest| newest.sender.as_ref());
    let subscription = match newest_sender {
        Some(sender) if state.settings.flags.is_on(domain::flags::Flag::EmailUnsubscribe) => state
            .store
            .email()
            .subscription_of(&row.account_id, &sender.address)
            .await?
            .map(subscription),
        _ => None,
    };
    Ok(JsonResponse(EmailThread {
        summary: summary(row),
        messages: messages.into_iter().map(message).collect(),
        subscription,
    }))
}

/// Requests a conversation change as a durable operation.
async fn write(
    state: &AppState,
    thread_id: &str,
    kind: MailboxWrite,
) -> Result<(StatusCode, JsonResponse<EmailOperation>), ApiError> {
    let id = parse_uuid(thread_id, ErrorCode::EmailThreadNotFound)?;
    match state.store.email().request_write(id, kind).await? {
        WriteRequest::Accepted(row) => Ok((StatusCode::ACCEPTED, JsonResponse(operation(row)))),
        WriteRequest::UnknownThread => Err(ApiError::new(ErrorCode::EmailThreadNotFound)),
        WriteRequest::NotApplicable(place) => Err(ApiError::new(ErrorCode::EmailWriteNotApplicable)
            .detail(format!("the conversation is {}", place.replace('_', " ")))),
        WriteRequest::Pending(row) => Err(ApiError::new(ErrorCode::EmailWritePending)
            .detail(format!("operation {} of this conversation has not settled", row.id))),
    }
}

/// Archives a conversation of the Inbox (Inbox label off; it reads Handled). Asynchronous: follow
/// the operation; a failure or uncertain outcome leaves the conversation where it was.
#[utoipa::path(
    post, path = "/v1/email/threads/{thread_id}/archive", tag = "email",
    security(("bearer" = ["email.write"])),
    params(("thread_id" = Uuid, Path)),
    responses((status = 202, description = "The archive requested", body = EmailOperation))
)]
pub async fn archive(
    State(state): State<AppState>,
    Path(thread_id): Path<String>,
) -> Result<(StatusCode, JsonResponse<EmailOperation>), ApiError> {
    write(&state, &thread_id, MailboxWrite::Archive).await
}

/// Moves an archived conversation back to its own account's Inbox.
#[utoipa::path(
    post, path = "/v1/email/threads/{thread_id}/move-to-inbox", tag = "email",
    security(("bearer" = ["email.write"])),
    params(("thread_id" = Uuid, Path)),
    responses((status = 202, description = "The move requested", body = EmailOperation))
)]
pub async fn move_to_inbox(
    State(state): State<AppState>,
    Path(thread_id): Path<String>,
) -> Result<(StatusCode, JsonResponse<EmailOperation>), ApiError> {
    write(&state, &thread_id, MailboxWrite::MoveToInbox).await
}

/// Reports a conversation of the Inbox as spam: the Spam label on, the Inbox label off.
#[utoipa::path(
    post, path = "/v1/email/threads/{thread_id}/spam", tag = "email",
    security(("bearer" = ["email.write"])),
    params(("thread_id" = Uuid, Path)),
    responses((status = 202, description = "The report requested", body = EmailOperation))
)]
pub async fn report_spam(
    State(state): State<AppState>,
    Path(thread_id): Path<String>,
) -> Result<(StatusCode, JsonResponse<EmailOperation>), ApiError> {
    write(&state, &thread_id, MailboxWrite::ReportSpam).await
}

/// Not spam: a conversation in Spam returns to the Inbox (exactly the conversation reported).
#[utoipa::path(
    post, path = "/v1/email/threads/{thread_id}/not-spam", tag = "email",
    security(("bearer" = ["email.write"])),
    params(("thread_id" = Uuid, Path)),
    responses((status = 202, description = "The return requested", body = EmailOperation))
)]
pub async fn not_spam(
    State(state): State<AppState>,
    Path(thread_id): Path<String>,
) -> Result<(StatusCode, JsonResponse<EmailOperation>), ApiError> {
    write(&state, &thread_id, MailboxWrite::NotSpam).await
}

/// Clears the server's suspected-spam flag of a conversation (the owner says Not spam); nothing
/// is written to the mailbox.
#[utoipa::path(
    post, path = "/v1/email/threads/{thread_id}/spam-flag", tag = "email",
    security(("bearer" = ["email.write"])),
    params(("thread_id" = Uuid, Path)),
    responses((status = 200, description = "The conversation, flag cleared", body = EmailThreadSummary))
)]
pub async fn clear_spam_flag(
    State(state): State<AppState>,
    Path(thread_id): Path<String>,
) -> Result<JsonResponse<EmailThreadSummary>, ApiError> {
    let id = parse_uuid(&thread_id, ErrorCode::EmailThreadNotFound)?;
    let row = state
        .store
        .email()
        .clear_spam_flag(id)
        .await?
        .ok_or_else(|| ApiError::new(ErrorCode::EmailThreadNotFound))?;
    Ok(JsonResponse(summary(row)))
}

/// A mailbox operation's durable status: it settles to `succeeded`, `failed` or `uncertain`.
#[utoipa::path(
    get, path = "/v1/email/operations/{operation_id}", tag = "email",
    security(("bearer" = ["email.read"])),
    params(("operation_id" = Uuid, Path)),
    responses((status = 200, description = "The operation", body = EmailOperation))
)]
pub async fn operation_status(
    State(state): State<AppState>,
    Path(operation_id): Path<String>,
) -> Result<JsonResponse<EmailOperation>, ApiError> {
    let id = parse_uuid(&operation_id, ErrorCode::EmailOperationNotFound)?;
    let row = state
        .store
        .email()
        .operation(id)
        .await?
        .ok_or_else(|| ApiError::new(ErrorCode::EmailOperationNotFound))?;
    let unsubscribe = row.kind == domain::email::EmailOperationKind::Unsubscribe;
    let mut answer = operation(row);
    if unsubscribe {
        answer.targets = targets(&state, id).await?;
    }
    Ok(JsonResponse(answer))
}
