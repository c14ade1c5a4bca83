//! Extractors whose rejections are problem documents instead of axum's plain-text answers.

use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::{HeaderMap, StatusCode, header};
use domain::ErrorCode;
use serde::de::DeserializeOwned;

use crate::problem::ApiError;

/// A JSON request body, rejecting with a problem document: another media type → 415, a body
/// over the limit → 413, malformed JSON → 400 `invalid_request`, JSON that does not fit the
/// type → 422 `validation_failed` naming the member at fault in `field` (`limits.max_steps`).
#[derive(Debug)]
pub struct Json<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for Json<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        if !is_json(request.headers()) {
            return Err(ApiError::new(ErrorCode::UnsupportedMediaType)
                .detail("send the body as JSON, with `Content-Type: application/json`"));
        }
        let bytes = read_body(request, state).await?;
        parse(&bytes).map(Json)
    }
}

/// A JSON request body that may be left out: no body at all (or `null`) is `None`; a body follows
/// [`Json`]'s rules (JSON media type, the size limit, the type's schema).
#[derive(Debug)]
pub struct OptionalJson<T>(pub Option<T>);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for OptionalJson<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        let json = is_json(request.headers());
        let bytes = read_body(request, state).await?;
        if bytes.is_empty() {
            return Ok(OptionalJson(None));
        }
        if !json {
            return Err(ApiError::new(ErrorCode::UnsupportedMediaType)
                .detail("send the body as JSON, with `Content-Type: application/json`, or send none"));
        }
        // A JSON `null` is no body too, as the document's optional body allows.
        parse::<Option<T>>(&bytes).map(OptionalJson)
    }
}

/// The whole body, within the size limit.
async fn read_body<S: Send + Sync>(request: Request, state: &S) -> Result<axum::body::Bytes, ApiError> {
    axum::body::Bytes::from_request(request, state)
        .await
        .map_err(|rejection| {
            let code = if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ErrorCode::PayloadTooLarge
            } else {
                ErrorCode::InvalidRequest
            };
            ApiError::new(code).detail(rejection.body_text())
        })
}

fn is_json(headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(header::CONTENT_TYPE).and_then(|value| value.to_str().ok()) else {
        return false;
    };
    let essence = value.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    essence == "application/json" || (essence.starts_with("application/") && essence.ends_with("+json"))
}

/// Parses a JSON document into `T`, naming the member at fault when it does not fit.
pub fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let not_json = |error: &serde_json::Error| {
        ApiError::new(ErrorCode::InvalidRequest).detail(format!("the body is not valid JSON: {error}"))
    };
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value: T = serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
        let inner = error.inner();
        if !inner.is_data() {
            return not_json(inner);
        }
        let message = inner.to_string();
        let mut problem = ApiError::new(ErrorCode::ValidationFailed).detail(message.clone());
        if let Some(field) = field(&error.path().to_string(), &message) {
            problem = problem.field(field);
        }
        problem
    })?;
    deserializer.end().map_err(|error| not_json(&error))?;
    // Every request body is a JSON object (or `null`, where a body is optional): serde would also
    // read a struct from an array of its members in order (`[]` as one whose optional members
    // are all absent), which no client sends and which would not mean what the same value
    // written back says.
    if !matches!(bytes.iter().find(|byte| !byte.is_ascii_whitespace()), Some(b'{' | b'n')) {
        return Err(ApiError::new(ErrorCode::ValidationFailed).detail("a request body is a JSON object"));
    }
    Ok(value)
}

/// The dotted path of the member a data error is about: the path serde reached, or the member
/// an `unknown field`/`missing field` message names under it.
fn field(path: &str, message: &str) -> Option<String> {
    let parent = if path == "." { "" } else { path };
    let named = ["unknown field `", "missing field `"]
        .iter()
        .find_map(|prefix| message.strip_prefix(prefix)?.split('`').next());
    match named {
        Some(name) if !parent.ends_with(name) => Some(if parent.is_empty() {
            name.to_owned()
        } else {
            format!("{parent}.{name}")
        }),
        _ => (!parent.is_empty()).then(|| parent.to_owned()),
    }
}

/// `axum::extract::Query`, rejecting with a problem document.
#[derive(FromRequestParts)]
#[from_request(via(axum::extract::Query), rejection(ApiError))]
pub struct Query<T>(pub T);

/// `axum::extract::Path`, rejecting with a problem document.
#[derive(FromRequestParts)]
#[from_request(via(axum::extract::Path), rejection(ApiError))]
pub struct Path<T>(pub T);

#[cfg(test)]
mod tests {
    use domain::ErrorCode;
    use wire::request::UpdateSession;

    #[test]
    fn a_body_is_a_json_object_never_an_array_of_its_members() {
        let refused = super::parse::<UpdateSession>(b"[]").expect_err("an array");
        assert_eq!(refused.code(), ErrorCode::ValidationFailed);
        let refused = super::parse::<UpdateSession>(b" [null] ").expect_err("an array");
        assert_eq!(refused.code(), ErrorCode::ValidationFailed);
        let parsed = super::parse::<UpdateSession>(b" \n{\"folder_id\": null}").expect("an object");
        assert_eq!(parsed.folder_id, Some(None));
        let refused = super::parse::<UpdateSession>(b"[").expect_err("not JSON");
        assert_eq!(refused.code(), ErrorCode::InvalidRequest);
        // Where a body is optional, `null` is none.
        assert_eq!(super::parse::<Option<UpdateSession>>(b"null").expect("null"), None);
    }
}
