//! Errors as RFC 9457 problem documents (`application/problem+json`).
//!
//! Shape: `{"type": "urn:steward:problem:<code>", "title", "status", "code", "detail"?, ...}`.
//! `code` is the stable member clients match on; `type` carries the same code as a URN; `title`
//! is fixed per code; `detail` explains this occurrence; some codes add members (for example
//! `run_id` on `session_has_active_run`).

use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use domain::ErrorCode;
use domain::approval::ApprovalStatus;
use domain::run::RunState;
use wire::problem::Problem;

pub use wire::problem::CONTENT_TYPE as PROBLEM_CONTENT_TYPE;

/// An error answer: a code plus what this occurrence adds.
#[derive(Debug)]
pub struct ApiError {
    code: ErrorCode,
    /// Boxed: an error travels through every handler's `Result`, so it stays one pointer wide.
    problem: Box<Problem>,
    headers: Vec<(HeaderName, HeaderValue)>,
}

impl ApiError {
    pub fn new(code: ErrorCode) -> ApiError {
        ApiError {
            code,
            problem: Box::new(Problem {
                kind: format!("urn:steward:problem:{}", code.as_str()),
                title: code.title().to_owned(),
                status: code.status(),
                code: code.as_str().to_owned(),
                detail: None,
                field: None,
                run_id: None,
                required_scope: None,
                max_bytes: None,
                revision: None,
                state: None,
                resolution: None,
                server: None,
                local: None,
            }),
            headers: Vec::new(),
        }
    }

    pub fn detail(mut self, detail: impl Into<String>) -> ApiError {
        self.problem.detail = Some(detail.into());
        self
    }

    /// Names the request member, parameter or header at fault.
    pub fn field(mut self, field: impl Into<String>) -> ApiError {
        self.problem.field = Some(field.into());
        self
    }

    pub fn run_id(mut self, run: domain::ids::RunId) -> ApiError {
        self.problem.run_id = Some(run.as_uuid());
        self
    }

    pub fn required_scope(mut self, scope: domain::scope::Scope) -> ApiError {
        self.problem.required_scope = Some(scope.as_str().to_owned());
        self
    }

    pub fn max_bytes(mut self, limit: u64) -> ApiError {
        self.problem.max_bytes = Some(limit);
        self
    }

    pub fn revision(mut self, revision: i32) -> ApiError {
        self.problem.revision = Some(revision);
        self
    }

    pub fn state(mut self, state: RunState) -> ApiError {
        self.problem.state = Some(state);
        self
    }

    pub fn resolution(mut self, status: ApprovalStatus) -> ApiError {
        self.problem.resolution = Some(status);
        self
    }

    /// Both versions of a draft whose save was refused.
    pub fn draft_versions(mut self, server: wire::email::Draft, local: wire::email::DraftContent) -> ApiError {
        self.problem.server = Some(Box::new(server));
        self.problem.local = Some(local);
        self
    }

    pub fn header(mut self, name: HeaderName, value: HeaderValue) -> ApiError {
        self.headers.push((name, value));
        self
    }

    pub fn code(&self) -> ErrorCode {
        self.code
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.code.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let body = serde_json::to_string(&self.problem).unwrap_or_default();
        let mut response = (status, [(header::CONTENT_TYPE, PROBLEM_CONTENT_TYPE)], body).into_response();
        response.headers_mut().extend(self.headers);
        response
    }
}

impl From<wire::request::Invalid> for ApiError {
    fn from(invalid: wire::request::Invalid) -> Self {
        ApiError::new(ErrorCode::ValidationFailed)
            .detail(invalid.detail)
            .field(invalid.field)
    }
}

impl From<store::StoreError> for ApiError {
    fn from(error: store::StoreError) -> Self {
        // Logged here, where it is handled; the client learns only that it failed, and whether
        // retrying later may help.
        if error.is_unavailable() {
            tracing::warn!(%error, "the database cannot be reached");
            return ApiError::new(ErrorCode::ServiceUnavailable)
                .detail("the database cannot be reached for now; retry shortly")
                .header(
                    axum::http::header::RETRY_AFTER,
                    axum::http::HeaderValue::from_static(RETRY_AFTER_SECONDS),
                );
        }
        tracing::error!(%error, "storage failure");
        ApiError::new(ErrorCode::Internal)
    }
}

/// When a client should retry an answer of `service_unavailable`.
const RETRY_AFTER_SECONDS: &str = "5";

impl From<QueryRejection> for ApiError {
    fn from(rejection: QueryRejection) -> Self {
        ApiError::new(ErrorCode::InvalidRequest).detail(rejection.body_text())
    }
}

impl From<PathRejection> for ApiError {
    fn from(rejection: PathRejection) -> Self {
        ApiError::new(ErrorCode::NotFound).detail(rejection.body_text())
    }
}

/// Fallback for paths no mounted route matches (including routes whose flag is off).
pub async fn not_found() -> ApiError {
    ApiError::new(ErrorCode::NotFound).detail("no route matches this path")
}

pub async fn method_not_allowed() -> ApiError {
    ApiError::new(ErrorCode::MethodNotAllowed).detail("the route exists but not with this method")
}
