//! The route catalog: every route's method, path, required scope and gating flag, in one table.
//!
//! [`router`] mounts exactly the routes whose flag is on; an unmounted route falls through to the
//! 404 fallback before authentication, so a probe cannot tell it from a path that never existed.

use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::extract::{MatchedPath, Request};
use axum::http::Method;
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::MethodRouter;
use domain::ErrorCode;
use domain::flags::{FeatureFlags, Flag};
use domain::scope::Scope;
use tracing::Instrument;

use crate::AppState;
use crate::auth::{self, Authenticator, Guard, Needs};
use crate::handlers::{
    approvals, artifacts, browser, calls, drafts, email, events, feedback, folder_proposals, folders, health, imports,
    memory, notifications, openapi, people, runs, schedules, sessions, settings, subscriptions, web_session,
};
use crate::problem;

/// Who may call a route.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// No credentials: readiness and the API description.
    Public,
    /// The bearer token or a web session, whose grants include this scope.
    Scoped(Scope),
    /// The bearer token or a web session, whatever its scopes.
    Authenticated,
    /// The bearer token itself (a web session is made from it, never from another one).
    BearerToken,
}

impl Access {
    /// What the guard in front of the route checks; `None` for a public route.
    pub fn needs(self) -> Option<Needs> {
        match self {
            Access::Public => None,
            Access::Scoped(scope) => Some(Needs::Scope(scope)),
            Access::Authenticated => Some(Needs::Credential),
            Access::BearerToken => Some(Needs::BearerToken),
        }
    }
}

/// One route of the API.
#[derive(Clone)]
pub struct RouteDef {
    pub method: Method,
    /// The path template in OpenAPI/axum syntax, e.g. `/v1/sessions/{session_id}`.
    pub path: &'static str,
    pub access: Access,
    /// The flag that mounts the route; `None` for core routes.
    pub flag: Option<Flag>,
    /// The OpenAPI `operationId`: the handler's module and name, e.g. `sessions.create`.
    pub operation_id: &'static str,
    /// The error codes the operation itself can answer with; authentication, authorization and
    /// internal errors are added from `access` (see [`RouteDef::errors`]).
    errors: Vec<ErrorCode>,
    make: fn() -> MethodRouter<AppState>,
}

impl std::fmt::Debug for RouteDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.method, self.path)
    }
}

impl RouteDef {
    pub fn is_mounted(&self, flags: &FeatureFlags) -> bool {
        self.flag.is_none_or(|flag| flags.is_on(flag))
    }

    /// Whether a web session needs the CSRF header to call the route: it can change state.
    pub fn changes_state(&self) -> bool {
        !matches!(self.method, Method::GET | Method::HEAD | Method::OPTIONS)
    }

    /// Every error code the route can answer with: its own, then `unauthenticated` for a route
    /// that takes credentials, `insufficient_scope` for a scoped one, `csrf_header_required` for
    /// one a web session can change state through, then `internal_error`, and
    /// `service_unavailable` (the database cannot be reached) for one that takes credentials.
    pub fn errors(&self) -> Vec<ErrorCode> {
        let mut errors = self.errors.clone();
        if self.access != Access::Public {
            errors.push(ErrorCode::Unauthenticated);
        }
        if matches!(self.access, Access::Scoped(_)) {
            errors.push(ErrorCode::InsufficientScope);
        }
        if matches!(self.access, Access::Scoped(_) | Access::Authenticated) && self.changes_state() {
            errors.push(ErrorCode::CsrfHeaderRequired);
        }
        errors.push(ErrorCode::Internal);
        if self.access != Access::Public {
            errors.push(ErrorCode::ServiceUnavailable);
        }
        errors
    }
}

/// What any route with a JSON body can answer: malformed JSON, another media type, a body that
/// does not match its schema, a body over the 2 MiB limit.
const JSON_BODY: [ErrorCode; 4] = [
    ErrorCode::InvalidRequest,
    ErrorCode::UnsupportedMediaType,
    ErrorCode::ValidationFailed,
    ErrorCode::PayloadTooLarge,
];

/// What a conversation change can answer: no such conversation, not where the change applies,
/// another change of it not settled.
const SUBSCRIPTION_CHANGE: [ErrorCode; 3] = [
    ErrorCode::EmailSubscriptionNotFound,
    ErrorCode::EmailSubscriptionChanged,
    ErrorCode::EmailSubscriptionNotApplicable,
];
const EMAIL_WRITE: [ErrorCode; 3] = [
    ErrorCode::EmailThreadNotFound,
    ErrorCode::EmailWriteNotApplicable,
    ErrorCode::EmailWritePending,
];

macro_rules! route {
    ($method:ident $path:literal, $access:expr, $flag:expr, $module:ident :: $handler:ident, [$($error:expr),* $(,)?]) => {
        RouteDef {
            method: Method::$method,
            path: $path,
            access: $access,
            flag: $flag,
            operation_id: concat!(stringify!($module), ".", stringify!($handler)),
            errors: <[&[ErrorCode]]>::concat(&[$(&$error[..]),*]),
            make: || axum::routing::on(axum::routing::MethodFilter::$method, $module::$handler),
        }
    };
}

/// Every route the API can serve.
pub fn catalog() -> Vec<RouteDef> {
    use Access::{Authenticated, BearerToken, Public, Scoped};
    use ErrorCode::*;
    use Scope::{
        BrowserRead, BrowserWrite, CallCancel, CallDelete, CallRead, EmailRead, EmailWrite, MemoryRead, MemoryWrite,
        NotificationsRead, NotificationsWrite, PeopleRead, PeopleWrite, SchedulesRead, SchedulesWrite, SessionsRead,
        SessionsWrite, SettingsRead, SettingsWrite,
    };
    vec![
        route!(GET "/health/ready", Public, None, health::ready, [[NotReady]]),
        route!(GET "/health/live", Public, None, health::live, []),
        route!(GET "/v1/openapi.json", Public, None, openapi::serve, []),
        route!(
            POST "/v1/sessions",
            Scoped(SessionsWrite),
            None,
            sessions::create,
            [JSON_BODY, [UnknownAgent, BrowserProfileNotFound, BrowserProfileNotReady]]
        ),
        route!(GET "/v1/sessions", Scoped(SessionsRead), None, sessions::list, [[InvalidRequest, InvalidCursor, ValidationFailed]]),
        route!(GET "/v1/sessions/{session_id}", Scoped(SessionsRead), None, sessions::get, [[SessionNotFound]]),
        route!(
            PATCH "/v1/sessions/{session_id}",
            Scoped(SessionsWrite),
            None,
            sessions::update,
            [JSON_BODY, [SessionNotFound, UnknownFolder, ScheduledSessionNotFileable]]
        ),
        route!(
            DELETE "/v1/sessions/{session_id}",
            Scoped(SessionsWrite),
            None,
            sessions::delete,
            [[SessionNotFound, SessionHasActiveRun]]
        ),
        route!(
            POST "/v1/sessions/{session_id}/artifacts",
            Scoped(SessionsWrite),
            None,
            artifacts::upload,
            [[
                SessionNotFound,
                InvalidRequest,
                ValidationFailed,
                MultipartNoFile,
                MultipartExtraPart,
                RequestTimeout,
                ArtifactTooLarge
            ]]
        ),
        route!(
            GET "/v1/sessions/{session_id}/artifacts/{artifact_id}",
            Scoped(SessionsRead),
            None,
            artifacts::metadata,
            [[ArtifactNotFound]]
        ),
        route!(
            GET "/v1/sessions/{session_id}/artifacts/{artifact_id}/content",
            Scoped(SessionsRead),
            None,
            artifacts::content,
            [[ArtifactNotFound]]
        ),
        route!(
            POST "/v1/sessions/{session_id}/messages",
            Scoped(SessionsWrite),
            None,
            runs::submit,
            [
                JSON_BODY,
                [
                    SessionNotFound,
                    IdempotencyKeyRequired,
                    IdempotencyKeyReused,
                    IdempotencyKeyInFlight,
                    UnknownArtifact,
                    ActiveRunExists
                ]
            ]
        ),
        route!(
            GET "/v1/sessions/{session_id}/events",
            Scoped(SessionsRead),
            None,
            events::stream,
            [[SessionNotFound, InvalidRequest]]
        ),
        route!(GET "/v1/runs/{run_id}", Scoped(SessionsRead), None, runs::get, [[RunNotFound]]),
        route!(POST "/v1/runs/{run_id}/cancel", Scoped(SessionsWrite), None, runs::cancel, [[RunNotFound, RunNotActive]]),
        route!(
            POST "/v1/runs/{run_id}/input",
            Scoped(SessionsWrite),
            None,
            approvals::input,
            [JSON_BODY, [RunNotFound, QuestionNotPending]]
        ),
        route!(
            GET "/v1/sessions/{session_id}/approvals",
            Scoped(SessionsRead),
            None,
            approvals::pending,
            [[SessionNotFound]]
        ),
        route!(
            POST "/v1/approvals/{approval_id}/decision",
            Scoped(SessionsWrite),
            None,
            approvals::decide,
            [JSON_BODY, [ApprovalNotFound, ApprovalAlreadyResolved, TaskPermissionNotOffered]]
        ),
        route!(
            POST "/v1/schedules",
            Scoped(SchedulesWrite),
            None,
            schedules::create,
            [
                JSON_BODY,
                [
                    IdempotencyKeyRequired,
                    IdempotencyKeyReused,
                    IdempotencyKeyInFlight,
                    UnknownAgentVersion
                ]
            ]
        ),
        route!(GET "/v1/schedules", Scoped(SchedulesRead), None, schedules::list, [[InvalidRequest]]),
        route!(GET "/v1/schedules/{schedule_id}", Scoped(SchedulesRead), None, schedules::get, [[ScheduleNotFound]]),
        route!(
            DELETE "/v1/schedules/{schedule_id}",
            Scoped(SchedulesWrite),
            None,
            schedules::cancel,
            [[ScheduleNotFound, InvalidRequest, RevisionMismatch]]
        ),
        route!(
            GET "/v1/schedules/{schedule_id}/occurrences",
            Scoped(SchedulesRead),
            None,
            schedules::occurrences,
            [[ScheduleNotFound]]
        ),
        route!(GET "/v1/settings/models", Scoped(SettingsRead), None, settings::get, []),
        route!(
            PUT "/v1/settings/models",
            Scoped(SettingsWrite),
            None,
            settings::save,
            [JSON_BODY, [UnsupportedModelChoice]]
        ),
        route!(GET "/v1/folders", Scoped(SessionsRead), None, folders::list, []),
        route!(POST "/v1/folders", Scoped(SessionsWrite), None, folders::create, [JSON_BODY, [FolderNameTaken]]),
        route!(
            PATCH "/v1/folders/{folder_id}",
            Scoped(SessionsWrite),
            None,
            folders::rename,
            [JSON_BODY, [FolderNotFound, FolderNameTaken]]
        ),
        route!(DELETE "/v1/folders/{folder_id}", Scoped(SessionsWrite), None, folders::delete, [[FolderNotFound]]),
        route!(GET "/v1/folder-proposals", Scoped(SessionsRead), None, folder_proposals::list, []),
        route!(
            POST "/v1/folder-proposals/{proposal_id}/accept",
            Scoped(SessionsWrite),
            None,
            folder_proposals::accept,
            [
                JSON_BODY,
                [
                    FolderProposalNotFound,
                    FolderProposalResolved,
                    FolderProposalStale,
                    FolderProposalNotRenamable,
                    FolderNameTaken
                ]
            ]
        ),
        route!(
            POST "/v1/folder-proposals/{proposal_id}/decline",
            Scoped(SessionsWrite),
            None,
            folder_proposals::decline,
            [[FolderProposalNotFound, FolderProposalResolved]]
        ),
        route!(
            GET "/v1/notifications",
            Scoped(NotificationsRead),
            Some(Flag::NotificationApi),
            notifications::pending,
            []
        ),
        route!(
            POST "/v1/notifications/{notification_id}/acknowledge",
            Scoped(NotificationsWrite),
            Some(Flag::NotificationApi),
            notifications::acknowledge,
            [[NotificationNotFound]]
        ),
        route!(
            POST "/v1/devices",
            Scoped(NotificationsWrite),
            Some(Flag::NotificationApi),
            notifications::register,
            [JSON_BODY]
        ),
        route!(
            DELETE "/v1/devices/{client_device_id}",
            Scoped(NotificationsWrite),
            Some(Flag::NotificationApi),
            notifications::revoke,
            [[DeviceNotFound]]
        ),
        route!(GET "/v1/email/accounts", Scoped(EmailRead), Some(Flag::EmailMode), email::accounts, []),
        route!(
            POST "/v1/email/accounts/{account_id}/refresh",
            Scoped(EmailRead),
            Some(Flag::EmailMode),
            email::refresh,
            [[EmailAccountNotFound]]
        ),
        route!(
            GET "/v1/email/threads",
            Scoped(EmailRead),
            Some(Flag::EmailMode),
            email::threads,
            [[InvalidRequest, InvalidCursor, ValidationFailed, EmailAccountNotFound]]
        ),
        route!(
            GET "/v1/email/threads/{thread_id}",
            Scoped(EmailRead),
            Some(Flag::EmailMode),
            email::thread,
            [[EmailThreadNotFound]]
        ),
        route!(
            POST "/v1/email/threads/{thread_id}/archive",
            Scoped(EmailWrite),
            Some(Flag::EmailMode),
            email::archive,
            [EMAIL_WRITE]
        ),
        route!(
            POST "/v1/email/threads/{thread_id}/move-to-inbox",
            Scoped(EmailWrite),
            Some(Flag::EmailMode),
            email::move_to_inbox,
            [EMAIL_WRITE]
        ),
        route!(
            POST "/v1/email/threads/{thread_id}/spam",
            Scoped(EmailWrite),
            Some(Flag::EmailMode),
            email::report_spam,
            [EMAIL_WRITE]
        ),
        route!(
            POST "/v1/email/threads/{thread_id}/not-spam",
            Scoped(EmailWrite),
            Some(Flag::EmailMode),
            email::not_spam,
            [EMAIL_WRITE]
        ),
        route!(
            POST "/v1/email/threads/{thread_id}/spam-flag",
            Scoped(EmailWrite),
            Some(Flag::EmailMode),
            email::clear_spam_flag,
            [[EmailThreadNotFound]]
        ),
        route!(
            GET "/v1/email/operations/{operation_id}",
            Scoped(EmailRead),
            Some(Flag::EmailMode),
            email::operation_status,
            [[EmailOperationNotFound]]
        ),
        route!(
            GET "/v1/calls",
            Scoped(CallRead),
            Some(Flag::Call),
            calls::list,
            [[InvalidRequest, InvalidCursor, ValidationFailed]]
        ),
        route!(
            GET "/v1/calls/{call_id}",
            Scoped(CallRead),
            Some(Flag::Call),
            calls::get,
            [[CallNotFound]]
        ),
        route!(
            POST "/v1/calls/{call_id}/cancel",
            Scoped(CallCancel),
            Some(Flag::Call),
            calls::cancel,
            [[CallNotFound, CallNotCancellable]]
        ),
        route!(
            DELETE "/v1/calls/{call_id}",
            Scoped(CallDelete),
            Some(Flag::Call),
            calls::delete,
            [[CallNotFound, CallActive]]
        ),
        route!(
            GET "/v1/memories",
            Scoped(MemoryRead),
            Some(Flag::MemoryApi),
            memory::list,
            [[InvalidRequest, InvalidCursor, ValidationFailed]]
        ),
        route!(
            GET "/v1/memories/{memory_id}",
            Scoped(MemoryRead),
            Some(Flag::MemoryApi),
            memory::get,
            [[MemoryNotFound]]
        ),
        route!(
            POST "/v1/memories/{memory_id}/review",
            Scoped(MemoryWrite),
            Some(Flag::MemoryApi),
            memory::review,
            [JSON_BODY, [MemoryNotFound, SessionNotFound]]
        ),
        route!(
            DELETE "/v1/memories/{memory_id}",
            Scoped(MemoryWrite),
            Some(Flag::MemoryApi),
            memory::delete,
            [[MemoryNotFound]]
        ),
        route!(
            GET "/v1/runs/{run_id}/memories",
            Scoped(MemoryRead),
            Some(Flag::MemoryApi),
            memory::recalled,
            [[RunNotFound]]
        ),
        route!(
            GET "/v1/people",
            Scoped(PeopleRead),
            Some(Flag::MemoryApi),
            people::list,
            [[InvalidRequest, InvalidCursor, ValidationFailed]]
        ),
        route!(
            POST "/v1/people/imports",
            Scoped(PeopleWrite),
            Some(Flag::MemoryApi),
            imports::start,
            [JSON_BODY, [PeopleImportInProgress, UnknownAgent]]
        ),
        route!(
            GET "/v1/people/imports",
            Scoped(PeopleRead),
            Some(Flag::MemoryApi),
            imports::list,
            []
        ),
        route!(
            GET "/v1/people/imports/{import_id}",
            Scoped(PeopleRead),
            Some(Flag::MemoryApi),
            imports::get,
            [[PeopleImportNotFound]]
        ),
        route!(
            POST "/v1/people/imports/{import_id}/cancel",
            Scoped(PeopleWrite),
            Some(Flag::MemoryApi),
            imports::cancel,
            [[PeopleImportNotFound]]
        ),
        route!(
            GET "/v1/people/duplicates",
            Scoped(PeopleRead),
            Some(Flag::MemoryApi),
            people::duplicates,
            []
        ),
        route!(
            GET "/v1/people/{person_id}",
            Scoped(PeopleRead),
            Some(Flag::MemoryApi),
            people::get,
            [[PersonNotFound]]
        ),
        route!(
            PATCH "/v1/people/{person_id}",
            Scoped(PeopleWrite),
            Some(Flag::MemoryApi),
            people::update,
            [JSON_BODY, [PersonNotFound]]
        ),
        route!(
            DELETE "/v1/people/{person_id}",
            Scoped(PeopleWrite),
            Some(Flag::MemoryApi),
            people::forget,
            [[PersonNotFound]]
        ),
        route!(
            PUT "/v1/people/{person_id}/facts/{fact_id}/correction",
            Scoped(PeopleWrite),
            Some(Flag::MemoryApi),
            people::correct,
            [JSON_BODY, [PersonNotFound, PersonFactNotFound]]
        ),
        route!(
            POST "/v1/people/{person_id}/merge",
            Scoped(PeopleWrite),
            Some(Flag::MemoryApi),
            people::merge,
            [JSON_BODY, [PersonNotFound]]
        ),
        route!(
            POST "/v1/people/{person_id}/not-the-same",
            Scoped(PeopleWrite),
            Some(Flag::MemoryApi),
            people::not_the_same,
            [JSON_BODY, [PersonNotFound]]
        ),
        route!(
            POST "/v1/people/{person_id}/repair",
            Scoped(PeopleWrite),
            Some(Flag::MemoryApi),
            people::repair,
            [JSON_BODY, [PersonNotFound]]
        ),
        route!(
            GET "/v1/browser/profiles",
            Scoped(BrowserRead),
            Some(Flag::Browser),
            browser::list,
            []
        ),
        route!(
            POST "/v1/browser/profiles",
            Scoped(BrowserWrite),
            Some(Flag::Browser),
            browser::create,
            [JSON_BODY, [BrowserOriginRefused, BrowserUnavailable]]
        ),
        route!(
            POST "/v1/browser/profiles/{profile_id}/ceremonies",
            Scoped(BrowserWrite),
            Some(Flag::Browser),
            browser::sign_in,
            [JSON_BODY, [BrowserProfileNotFound, BrowserProfileRevoked, BrowserOriginRefused, BrowserUnavailable]]
        ),
        route!(
            DELETE "/v1/browser/profiles/{profile_id}",
            Scoped(BrowserWrite),
            Some(Flag::Browser),
            browser::remove,
            [[BrowserProfileNotFound, BrowserUnavailable]]
        ),
        route!(
            GET "/v1/browser/ceremonies/{ceremony_id}",
            Scoped(BrowserRead),
            Some(Flag::Browser),
            browser::status,
            [[BrowserCeremonyNotFound, BrowserUnavailable]]
        ),
        route!(
            GET "/v1/browser/task-permissions",
            Scoped(BrowserRead),
            Some(Flag::Browser),
            browser::task_permissions,
            []
        ),
        route!(
            POST "/v1/browser/task-permissions/{task_permission_id}/stop",
            Scoped(BrowserWrite),
            Some(Flag::Browser),
            browser::stop_task_permission,
            [[TaskPermissionNotFound]]
        ),
        route!(
            GET "/v1/email/subscriptions",
            Scoped(EmailRead),
            Some(Flag::EmailUnsubscribe),
            subscriptions::list,
            [[InvalidRequest, InvalidCursor, ValidationFailed, EmailAccountNotFound]]
        ),
        route!(
            POST "/v1/email/subscriptions/unsubscribe",
            Scoped(EmailWrite),
            Some(Flag::EmailUnsubscribe),
            subscriptions::unsubscribe,
            [JSON_BODY, [EmailSubscriptionChanged]]
        ),
        route!(
            POST "/v1/email/subscriptions/{subscription_id}/keep",
            Scoped(EmailWrite),
            Some(Flag::EmailUnsubscribe),
            subscriptions::keep,
            [JSON_BODY, SUBSCRIPTION_CHANGE]
        ),
        route!(
            POST "/v1/email/subscriptions/{subscription_id}/undo-keep",
            Scoped(EmailWrite),
            Some(Flag::EmailUnsubscribe),
            subscriptions::undo_keep,
            [JSON_BODY, SUBSCRIPTION_CHANGE]
        ),
        route!(
            POST "/v1/email/subscriptions/{subscription_id}/spam",
            Scoped(EmailWrite),
            Some(Flag::EmailUnsubscribe),
            subscriptions::report_spam,
            [JSON_BODY, SUBSCRIPTION_CHANGE]
        ),
        route!(
            POST "/v1/email/subscriptions/{subscription_id}/not-spam",
            Scoped(EmailWrite),
            Some(Flag::EmailUnsubscribe),
            subscriptions::not_spam,
            [JSON_BODY, SUBSCRIPTION_CHANGE]
        ),
        route!(
            POST "/v1/email/drafts",
            Scoped(EmailWrite),
            Some(Flag::EmailMode),
            drafts::create,
            [JSON_BODY, [UnknownEmailAccount, UnknownEmailThread]]
        ),
        route!(
            GET "/v1/email/drafts/{draft_id}",
            Scoped(EmailRead),
            Some(Flag::EmailMode),
            drafts::get,
            [[EmailDraftNotFound]]
        ),
        route!(
            PUT "/v1/email/drafts/{draft_id}",
            Scoped(EmailWrite),
            Some(Flag::EmailMode),
            drafts::save,
            [JSON_BODY, [EmailDraftNotFound, RevisionMismatch, EmailDraftSending]]
        ),
        route!(
            GET "/v1/email/drafts/{draft_id}/revisions",
            Scoped(EmailRead),
            Some(Flag::EmailMode),
            drafts::history,
            [[EmailDraftNotFound]]
        ),
        route!(
            POST "/v1/email/drafts/{draft_id}/revisions/{revision}/restore",
            Scoped(EmailWrite),
            Some(Flag::EmailMode),
            drafts::restore,
            [JSON_BODY, [EmailDraftNotFound, EmailDraftRevisionNotFound, RevisionMismatch, EmailDraftSending]]
        ),
        route!(
            POST "/v1/email/drafts/{draft_id}/review",
            Scoped(EmailWrite),
            Some(Flag::EmailMode),
            drafts::review,
            [
                JSON_BODY,
                [
                    EmailDraftNotFound,
                    RevisionMismatch,
                    EmailDraftSending,
                    EmailDraftNoRecipients,
                    EmailDraftUnsendable,
                    SessionHasActiveRun,
                    EmailSendUnavailable
                ]
            ]
        ),
        route!(
            POST "/v1/email/threads/{thread_id}/proposal",
            Scoped(EmailWrite),
            Some(Flag::EmailMode),
            drafts::propose,
            [[EmailThreadNotFound, EmailDraftSending]]
        ),
        route!(
            POST "/v1/email/drafts/{draft_id}/style",
            Scoped(EmailWrite),
            Some(Flag::EmailMode),
            feedback::endorse,
            [JSON_BODY, [EmailDraftNotFound, RevisionMismatch, EmailStyleNotInDraft, EmailLearningPaused]]
        ),
        route!(
            POST "/v1/email/threads/{thread_id}/feedback",
            Scoped(EmailWrite),
            Some(Flag::EmailMode),
            feedback::give,
            [
                JSON_BODY,
                [
                    EmailThreadNotFound,
                    EmailThreadUnassessed,
                    EmailFeedbackPersonUnknown,
                    EmailLearningPaused,
                    EmailSourceExcluded
                ]
            ]
        ),
        route!(
            DELETE "/v1/email/feedback/{feedback_id}",
            Scoped(EmailWrite),
            Some(Flag::EmailMode),
            feedback::undo,
            [[EmailFeedbackNotFound, EmailThreadNotFound]]
        ),
        route!(GET "/v1/email/learning", Scoped(EmailRead), Some(Flag::EmailMode), feedback::learning, []),
        route!(PUT "/v1/email/learning", Scoped(EmailWrite), Some(Flag::EmailMode), feedback::set_learning, [JSON_BODY]),
        route!(
            POST "/v1/email/learning/reset",
            Scoped(EmailWrite),
            Some(Flag::EmailMode),
            feedback::reset,
            [JSON_BODY]
        ),
        route!(
            POST "/v1/email/learning/exclusions",
            Scoped(EmailWrite),
            Some(Flag::EmailMode),
            feedback::exclude,
            [JSON_BODY]
        ),
        route!(
            DELETE "/v1/email/learning/exclusions/{exclusion_id}",
            Scoped(EmailWrite),
            Some(Flag::EmailMode),
            feedback::include,
            [[EmailExclusionNotFound]]
        ),
        route!(POST "/v1/web/session", BearerToken, None, web_session::exchange, [[WebOriginRefused]]),
        route!(GET "/v1/web/session", Authenticated, None, web_session::current, []),
        route!(DELETE "/v1/web/session", Authenticated, None, web_session::revoke, []),
    ]
}

pub(crate) fn router(state: AppState, authenticator: Arc<Authenticator>) -> Router {
    let mut router = Router::new();
    for route in catalog()
        .into_iter()
        .filter(|route| route.is_mounted(&state.settings.flags))
    {
        let mut method_router = (route.make)();
        if let Some(needs) = route.access.needs() {
            let guard = Guard {
                authenticator: authenticator.clone(),
                store: state.store.clone(),
                needs,
            };
            method_router = method_router.route_layer(middleware::from_fn_with_state(guard, auth::require));
        }
        if route.path.starts_with("/v1/email/") {
            // Email answers hold mail: no cache keeps them (errors and refusals included).
            method_router = method_router.layer(middleware::map_response(|response: Response| async move {
                crate::handlers::web_session::no_store(response)
            }));
        }
        router = router.route(route.path, method_router);
    }
    // With an https web origin every answer tells the browser to use nothing but HTTPS here.
    let hsts = matches!(
        state.settings.authenticator.web_origin(),
        crate::auth::WebOrigin::Https(_)
    );
    let router = router
        .fallback(problem::not_found)
        .method_not_allowed_fallback(problem::method_not_allowed)
        .with_state(state)
        // The web client's assets under `/`: no path of theirs is an API path.
        .merge(crate::web::router())
        .layer(middleware::from_fn(crate::web::secure))
        .layer(middleware::from_fn(trace));
    if hsts {
        router.layer(middleware::map_response(crate::web::strict_transport))
    } else {
        router
    }
}

/// A span per request (`request{id method route}`: a fresh id, the route template, never the
/// query, which may hold cursors or search words), so every line a request logs names it; and
/// one line when it ends, with its status and duration.
async fn trace(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or("<unmatched>", MatchedPath::as_str)
        .to_owned();
    let id = uuid::Uuid::new_v4().simple().to_string();
    let span = tracing::info_span!("request", id = &id[..12], %method, route);
    async move {
        let response = next.run(request).await;
        tracing::info!(
            status = response.status().as_u16(),
            elapsed_ms = started.elapsed().as_secs_f64() * 1000.0,
            "request done"
        );
        response
    }
    .instrument(span)
    .await
}
