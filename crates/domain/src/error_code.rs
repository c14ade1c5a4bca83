//! The closed set of error codes the API answers with, each with its HTTP status and title.
//!
//! Codes are stable: clients match on `code`, never on `title` or `detail`.

/// One stable error code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    Unauthenticated,
    InsufficientScope,
    NotFound,
    MethodNotAllowed,
    InvalidRequest,
    InvalidCursor,
    RequestTimeout,
    UnsupportedMediaType,
    ValidationFailed,
    UnknownAgent,
    UnknownFolder,
    SessionNotFound,
    FolderNotFound,
    ArtifactNotFound,
    SessionHasActiveRun,
    FolderNameTaken,
    ScheduledSessionNotFileable,
    PayloadTooLarge,
    ArtifactTooLarge,
    NotReady,
    Internal,
    IdempotencyKeyRequired,
    IdempotencyKeyReused,
    IdempotencyKeyInFlight,
    ActiveRunExists,
    RunNotFound,
    RunNotActive,
    UnknownArtifact,
    ApprovalNotFound,
    ApprovalAlreadyResolved,
    QuestionNotPending,
    ScheduleNotFound,
    RevisionMismatch,
    UnknownAgentVersion,
    NotificationNotFound,
    DeviceNotFound,
    UnsupportedModelChoice,
    MultipartNoFile,
    MultipartExtraPart,
    FolderProposalNotFound,
    FolderProposalResolved,
    FolderProposalStale,
    FolderProposalNotRenamable,
    CsrfHeaderRequired,
    EmailAccountNotFound,
    EmailThreadNotFound,
    EmailOperationNotFound,
    EmailWriteNotApplicable,
    EmailWritePending,
}

impl ErrorCode {
    pub const ALL: [ErrorCode; 49] = [
        ErrorCode::RequestTimeout,
        ErrorCode::Unauthenticated,
        ErrorCode::InsufficientScope,
        ErrorCode::NotFound,
        ErrorCode::MethodNotAllowed,
        ErrorCode::InvalidRequest,
        ErrorCode::InvalidCursor,
        ErrorCode::UnsupportedMediaType,
        ErrorCode::ValidationFailed,
        ErrorCode::UnknownAgent,
        ErrorCode::UnknownFolder,
        ErrorCode::SessionNotFound,
        ErrorCode::FolderNotFound,
        ErrorCode::ArtifactNotFound,
        ErrorCode::SessionHasActiveRun,
        ErrorCode::FolderNameTaken,
        ErrorCode::ScheduledSessionNotFileable,
        ErrorCode::PayloadTooLarge,
        ErrorCode::ArtifactTooLarge,
        ErrorCode::NotReady,
        ErrorCode::Internal,
        ErrorCode::IdempotencyKeyRequired,
        ErrorCode::IdempotencyKeyReused,
        ErrorCode::IdempotencyKeyInFlight,
        ErrorCode::ActiveRunExists,
        ErrorCode::RunNotFound,
        ErrorCode::RunNotActive,
        ErrorCode::UnknownArtifact,
        ErrorCode::ApprovalNotFound,
        ErrorCode::ApprovalAlreadyResolved,
        ErrorCode::QuestionNotPending,
        ErrorCode::ScheduleNotFound,
        ErrorCode::RevisionMismatch,
        ErrorCode::UnknownAgentVersion,
        ErrorCode::NotificationNotFound,
        ErrorCode::DeviceNotFound,
        ErrorCode::UnsupportedModelChoice,
        ErrorCode::MultipartNoFile,
        ErrorCode::MultipartExtraPart,
        ErrorCode::FolderProposalNotFound,
        ErrorCode::FolderProposalResolved,
        ErrorCode::FolderProposalStale,
        ErrorCode::FolderProposalNotRenamable,
        ErrorCode::CsrfHeaderRequired,
        ErrorCode::EmailAccountNotFound,
        ErrorCode::EmailThreadNotFound,
        ErrorCode::EmailOperationNotFound,
        ErrorCode::EmailWriteNotApplicable,
        ErrorCode::EmailWritePending,
    ];

    /// The stable machine-readable code, the `code` member of a problem document.
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorCode::Unauthenticated => "unauthenticated",
            ErrorCode::InsufficientScope => "insufficient_scope",
            ErrorCode::NotFound => "not_found",
            ErrorCode::MethodNotAllowed => "method_not_allowed",
            ErrorCode::InvalidRequest => "invalid_request",
            ErrorCode::InvalidCursor => "invalid_cursor",
            ErrorCode::RequestTimeout => "request_timeout",
            ErrorCode::UnsupportedMediaType => "unsupported_media_type",
            ErrorCode::ValidationFailed => "validation_failed",
            ErrorCode::UnknownAgent => "unknown_agent",
            ErrorCode::UnknownFolder => "unknown_folder",
            ErrorCode::SessionNotFound => "session_not_found",
            ErrorCode::FolderNotFound => "folder_not_found",
            ErrorCode::ArtifactNotFound => "artifact_not_found",
            ErrorCode::SessionHasActiveRun => "session_has_active_run",
            ErrorCode::FolderNameTaken => "folder_name_taken",
            ErrorCode::ScheduledSessionNotFileable => "scheduled_session_not_fileable",
            ErrorCode::PayloadTooLarge => "payload_too_large",
            ErrorCode::ArtifactTooLarge => "artifact_too_large",
            ErrorCode::NotReady => "not_ready",
            ErrorCode::Internal => "internal_error",
            ErrorCode::IdempotencyKeyRequired => "idempotency_key_required",
            ErrorCode::IdempotencyKeyReused => "idempotency_key_reused",
            ErrorCode::IdempotencyKeyInFlight => "idempotency_key_in_flight",
            ErrorCode::ActiveRunExists => "active_run_exists",
            ErrorCode::RunNotFound => "run_not_found",
            ErrorCode::RunNotActive => "run_not_active",
            ErrorCode::UnknownArtifact => "unknown_artifact",
            ErrorCode::ApprovalNotFound => "approval_not_found",
            ErrorCode::ApprovalAlreadyResolved => "approval_already_resolved",
            ErrorCode::QuestionNotPending => "question_not_pending",
            ErrorCode::ScheduleNotFound => "schedule_not_found",
            ErrorCode::RevisionMismatch => "revision_mismatch",
            ErrorCode::UnknownAgentVersion => "unknown_agent_version",
            ErrorCode::NotificationNotFound => "notification_not_found",
            ErrorCode::DeviceNotFound => "device_not_found",
            ErrorCode::UnsupportedModelChoice => "unsupported_model_choice",
            ErrorCode::MultipartNoFile => "multipart_no_file",
            ErrorCode::MultipartExtraPart => "multipart_extra_part",
            ErrorCode::FolderProposalNotFound => "folder_proposal_not_found",
            ErrorCode::FolderProposalResolved => "folder_proposal_resolved",
            ErrorCode::FolderProposalStale => "folder_proposal_stale",
            ErrorCode::FolderProposalNotRenamable => "folder_proposal_not_renamable",
            ErrorCode::CsrfHeaderRequired => "csrf_header_required",
            ErrorCode::EmailAccountNotFound => "email_account_not_found",
            ErrorCode::EmailThreadNotFound => "email_thread_not_found",
            ErrorCode::EmailOperationNotFound => "email_operation_not_found",
            ErrorCode::EmailWriteNotApplicable => "email_write_not_applicable",
            ErrorCode::EmailWritePending => "email_write_pending",
        }
    }

    /// The HTTP status the code is always served with.
    pub const fn status(self) -> u16 {
        match self {
            ErrorCode::Unauthenticated => 401,
            ErrorCode::InsufficientScope | ErrorCode::CsrfHeaderRequired => 403,
            ErrorCode::NotFound
            | ErrorCode::SessionNotFound
            | ErrorCode::FolderNotFound
            | ErrorCode::ArtifactNotFound => 404,
            ErrorCode::MethodNotAllowed => 405,
            ErrorCode::InvalidRequest | ErrorCode::InvalidCursor => 400,
            ErrorCode::RequestTimeout => 408,
            ErrorCode::UnsupportedMediaType => 415,
            ErrorCode::ValidationFailed | ErrorCode::UnknownAgent => 422,
            ErrorCode::UnknownFolder => 409,
            ErrorCode::SessionHasActiveRun | ErrorCode::FolderNameTaken | ErrorCode::ScheduledSessionNotFileable => 409,
            ErrorCode::PayloadTooLarge | ErrorCode::ArtifactTooLarge => 413,
            ErrorCode::NotReady => 503,
            ErrorCode::Internal => 500,
            ErrorCode::IdempotencyKeyRequired => 400,
            // The key's stored request, not the body's shape, is what this request conflicts
            // with (the IETF idempotency draft suggests 422; a schema-valid body is never 422 here).
            ErrorCode::IdempotencyKeyReused => 409,
            ErrorCode::IdempotencyKeyInFlight => 409,
            ErrorCode::ActiveRunExists => 409,
            ErrorCode::RunNotFound => 404,
            ErrorCode::RunNotActive => 409,
            // A well-formed request naming something the server's current state lacks (an
            // artifact of another session, a deleted folder, a version no session pinned).
            ErrorCode::UnknownArtifact => 409,
            ErrorCode::ApprovalNotFound => 404,
            ErrorCode::ApprovalAlreadyResolved => 409,
            ErrorCode::QuestionNotPending => 409,
            ErrorCode::ScheduleNotFound => 404,
            ErrorCode::RevisionMismatch => 409,
            ErrorCode::UnknownAgentVersion => 409,
            ErrorCode::NotificationNotFound => 404,
            ErrorCode::DeviceNotFound => 404,
            ErrorCode::UnsupportedModelChoice => 422,
            ErrorCode::MultipartNoFile | ErrorCode::MultipartExtraPart => 400,
            ErrorCode::FolderProposalNotFound => 404,
            // The proposal's state, not the request's shape, is what these conflict with.
            ErrorCode::FolderProposalResolved
            | ErrorCode::FolderProposalStale
            | ErrorCode::FolderProposalNotRenamable => 409,
            ErrorCode::EmailAccountNotFound | ErrorCode::EmailThreadNotFound | ErrorCode::EmailOperationNotFound => 404,
            // Where the thread is (or a write of it not yet settled), not the request's shape.
            ErrorCode::EmailWriteNotApplicable | ErrorCode::EmailWritePending => 409,
        }
    }

    /// A short human-readable summary that does not change between occurrences.
    pub const fn title(self) -> &'static str {
        match self {
            ErrorCode::Unauthenticated => "Authentication required",
            ErrorCode::InsufficientScope => "Not authorized for this operation",
            ErrorCode::NotFound => "Not found",
            ErrorCode::MethodNotAllowed => "Method not allowed",
            ErrorCode::InvalidRequest => "Malformed request",
            ErrorCode::InvalidCursor => "Invalid pagination cursor",
            ErrorCode::RequestTimeout => "Request body stalled",
            ErrorCode::UnsupportedMediaType => "Unsupported media type",
            ErrorCode::ValidationFailed => "Request failed validation",
            ErrorCode::UnknownAgent => "Unknown agent",
            ErrorCode::UnknownFolder => "Unknown folder",
            ErrorCode::SessionNotFound => "Session not found",
            ErrorCode::FolderNotFound => "Folder not found",
            ErrorCode::ArtifactNotFound => "Artifact not found",
            ErrorCode::SessionHasActiveRun => "Session has an active run",
            ErrorCode::FolderNameTaken => "Folder name already in use",
            ErrorCode::ScheduledSessionNotFileable => "Scheduled sessions cannot be filed",
            ErrorCode::PayloadTooLarge => "Request body too large",
            ErrorCode::ArtifactTooLarge => "Artifact too large",
            ErrorCode::NotReady => "Service not ready",
            ErrorCode::Internal => "Internal error",
            ErrorCode::IdempotencyKeyRequired => "Idempotency key required",
            ErrorCode::IdempotencyKeyReused => "Idempotency key reused with a different request",
            ErrorCode::IdempotencyKeyInFlight => "A request with this idempotency key is in progress",
            ErrorCode::ActiveRunExists => "The session already has an active run",
            ErrorCode::RunNotFound => "Run not found",
            ErrorCode::RunNotActive => "The run has already finished",
            ErrorCode::UnknownArtifact => "Unknown artifact",
            ErrorCode::ApprovalNotFound => "Approval not found",
            ErrorCode::ApprovalAlreadyResolved => "The approval was already resolved",
            ErrorCode::QuestionNotPending => "The run is not waiting for that question",
            ErrorCode::ScheduleNotFound => "Schedule not found",
            ErrorCode::RevisionMismatch => "The resource is at another revision",
            ErrorCode::UnknownAgentVersion => "Unknown agent version",
            ErrorCode::NotificationNotFound => "Notification not found",
            ErrorCode::DeviceNotFound => "Device not found",
            ErrorCode::UnsupportedModelChoice => "Model combination not offered",
            ErrorCode::MultipartNoFile => "The multipart upload holds no file",
            ErrorCode::MultipartExtraPart => "A multipart upload holds exactly one file part",
            ErrorCode::FolderProposalNotFound => "Folder proposal not found",
            ErrorCode::FolderProposalResolved => "The folder proposal was already accepted or declined",
            ErrorCode::FolderProposalStale => "None of the proposal's conversations can still be filed",
            ErrorCode::FolderProposalNotRenamable => "Only a proposed new folder can be renamed on acceptance",
            ErrorCode::CsrfHeaderRequired => "A web session's state-changing request needs the CSRF header",
            ErrorCode::EmailAccountNotFound => "Mail account not found",
            ErrorCode::EmailThreadNotFound => "Conversation not found",
            ErrorCode::EmailOperationNotFound => "Mail operation not found",
            ErrorCode::EmailWriteNotApplicable => "The conversation is not where this change applies",
            ErrorCode::EmailWritePending => "Another change of this conversation has not settled yet",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn codes_are_unique_snake_case_and_carry_error_statuses() {
        let mut seen = HashSet::new();
        for code in ErrorCode::ALL {
            assert!(seen.insert(code.as_str()), "duplicate code {}", code.as_str());
            assert!(code.as_str().chars().all(|c| c.is_ascii_lowercase() || c == '_'));
            assert!((400..600).contains(&code.status()));
        }
    }
}
