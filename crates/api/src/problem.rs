//! Errors as RFC 9457 problem documents (`application/problem+json`).
//!
//! Shape: `{"type": "urn:steward:problem:<code>", "title", "status", "code", "detail"?, ...}`.
//! `code` is the stable member clients match on; `type` carries the same code as a URN; `title`
//! is fixed per code; `detail` explains this occurrence; some codes add members (for example
//! `run_id` on `session_has_active_run`).

use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use domain::ErrorCode;
use serde_json::{Map, Value, json};

pub const PROBLEM_CONTENT_TYPE: &str = "application/problem+json";

/// An error answer: a code plus what this occurrence adds.
#[derive(Debug)]
pub struct ApiError {
    code: ErrorCode,
    detail: Option<String>,
    members: Map<String, Value>,
    headers: Vec<(HeaderName, HeaderValue)>,
}

impl ApiError {
    pub fn new(code: ErrorCode) -> ApiError {
        ApiError {
            code,
            detail: None,
            members: Map::new(),
            headers: Vec::new(),
        }
    }

    pub fn detail(mut self, detail: impl Into<String>) -> ApiError {
        self.detail = Some(detail.into());
        self
    }

    pub fn member(mut self, name: &str, value: impl Into<Value>) -> ApiError {
        self.members.insert(name.to_owned(), value.into());
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
        let mut body = json!({
            "type": format!("urn:steward:problem:{}", self.code.as_str()),
            "title": self.code.title(),
            "status": status.as_u16(),
            "code": self.code.as_str(),
        });
        if let Value::Object(map) = &mut body {
            if let Some(detail) = self.detail {
                map.insert("detail".into(), Value::String(detail));
            }
            map.extend(self.members);
        }
        let mut response = (status, [(header::CONTENT_TYPE, PROBLEM_CONTENT_TYPE)], body.to_string()).into_response();
        response.headers_mut().extend(self.headers);
        response
    }
}

impl From<store::StoreError> for ApiError {
    fn from(error: store::StoreError) -> Self {
        // Logged here, where it is handled; the client learns only that it failed.
        tracing::error!(%error, "storage failure");
        ApiError::new(ErrorCode::Internal)
    }
}

impl From<JsonRejection> for ApiError {
    fn from(rejection: JsonRejection) -> Self {
        let code = match &rejection {
            JsonRejection::JsonDataError(_) => ErrorCode::ValidationFailed,
            JsonRejection::MissingJsonContentType(_) => ErrorCode::UnsupportedMediaType,
            JsonRejection::BytesRejection(_) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => {
                ErrorCode::PayloadTooLarge
            }
            _ => ErrorCode::InvalidRequest,
        };
        ApiError::new(code).detail(rejection.body_text())
    }
}

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
