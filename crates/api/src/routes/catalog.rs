//! The route catalog: every route's method, path, required scope, gating flag and own error
//! codes, in one table.

use axum::http::Method;
use domain::ErrorCode;
use domain::flags::Flag;
use domain::scope::Scope;

use super::{Access, RouteDef};
use crate::handlers::{
    approvals, artifacts, browser, calls, drafts, email, events, feedback, folder_proposals, folders, health, imports,
    memory, notifications, openapi, people, runs, schedules, sessions, settings, subscriptions, web_session,
};

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
            [[ArtifactNotFound, ArtifactExpired]]
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
            GET "/v1/devices/web-push",
            Scoped(NotificationsRead),
            Some(Flag::NotificationApi),
            notifications::web_push_key,
            [[WebPushUnavailable]]
        ),
        route!(
            POST "/v1/devices/web-push",
            Scoped(NotificationsWrite),
            Some(Flag::NotificationApi),
            notifications::register_web_push,
            [JSON_BODY, [WebPushUnavailable]]
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
