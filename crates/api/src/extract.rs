//! Extractors whose rejections are problem documents instead of axum's plain-text answers.

use axum::extract::{FromRequest, FromRequestParts};

use crate::problem::ApiError;

/// `axum::Json`, rejecting with a problem document.
#[derive(FromRequest)]
#[from_request(via(axum::Json), rejection(ApiError))]
pub struct Json<T>(pub T);

/// `axum::extract::Query`, rejecting with a problem document.
#[derive(FromRequestParts)]
#[from_request(via(axum::extract::Query), rejection(ApiError))]
pub struct Query<T>(pub T);

/// `axum::extract::Path`, rejecting with a problem document.
#[derive(FromRequestParts)]
#[from_request(via(axum::extract::Path), rejection(ApiError))]
pub struct Path<T>(pub T);

/// Deserialises a field that may be absent, `null` or a value, keeping the three apart: absent is
/// `None`, an explicit `null` is `Some(None)`.
pub fn explicit_null<'de, T, D>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    T: serde::Deserialize<'de>,
    D: serde::Deserializer<'de>,
{
    <Option<T> as serde::Deserialize>::deserialize(deserializer).map(Some)
}
