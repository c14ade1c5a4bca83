//! Artifacts: streamed uploads with a size limit, metadata reads, and byte reads with a strong
//! `ETag` honouring `If-None-Match`.

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json as JsonResponse};
use domain::ErrorCode;
use domain::artifact::{ArtifactName, if_none_match_matches, strong_etag};
use domain::ids::{ArtifactId, SessionId};
use futures_util::StreamExt;
use sha2::{Digest, Sha256};
use store::{ArtifactRow, NewArtifact, Store};
use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};
use utoipa::ToSchema;
use wire::request::UploadArtifact;
use wire::response::Artifact;

use super::parse_id;
use crate::AppState;
use crate::auth::Caller;
use crate::extract::{Path, Query};
use crate::problem::ApiError;

/// Bytes are stored in chunks of this size.
const CHUNK_BYTES: usize = 256 * 1024;
const DEFAULT_MEDIA_TYPE: &str = "application/octet-stream";
const DEFAULT_FILENAME: &str = "attachment";
/// What a multipart body may carry beyond the file itself (boundaries and part headers).
const MULTIPART_ENVELOPE_BYTES: u64 = 64 * 1024;

fn artifact(row: ArtifactRow) -> Artifact {
    Artifact {
        artifact_id: row.id.as_uuid(),
        session_id: row.session_id.as_uuid(),
        etag: strong_etag(&row.sha256),
        filename: row.filename,
        media_type: row.media_type,
        size_bytes: row.size_bytes,
        sha256: row.sha256,
        created_at: row.created_at,
        expired_at: row.expired_at,
    }
}

/// The multipart form of an upload: exactly one part, the file.
#[derive(ToSchema)]
#[expect(dead_code, reason = "describes the request body for the OpenAPI document only")]
pub struct UploadForm {
    /// The file; its part's filename and Content-Type name it and give its media type.
    #[schema(value_type = String, format = Binary)]
    file: Vec<u8>,
}

fn too_large(limit: u64) -> ApiError {
    ApiError::new(ErrorCode::ArtifactTooLarge)
        .detail(format!("artifacts may be at most {limit} bytes"))
        .max_bytes(limit)
}

/// Checks a media type (`type/subtype`, parameters allowed) as given by a client.
fn checked_media_type(text: &str, field: &str) -> Result<String, ApiError> {
    let text = text.trim();
    let essence = text.split(';').next().unwrap_or_default().trim();
    let valid = essence.split_once('/').is_some_and(|(kind, subtype)| {
        let token = |part: &str| {
            !part.is_empty()
                && part
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "!#$&-^_.+".contains(c))
        };
        token(kind) && token(subtype)
    });
    if !valid || text.len() > 255 {
        return Err(ApiError::new(ErrorCode::ValidationFailed)
            .detail(format!("{field} must be a media type such as image/png"))
            .field(field));
    }
    Ok(text.to_owned())
}

/// How the file arrives: the raw body, or one part of a `multipart/form-data` body.
enum Encoding {
    Raw { media_type: String, filename: ArtifactName },
    Multipart { boundary: String },
}

/// How the file arrives, and for a raw body its name (`filename`, else `attachment`); a
/// multipart body is named by its part.
fn encoding(headers: &HeaderMap, filename: Option<&str>) -> Result<Encoding, ApiError> {
    let Some(value) = headers.get(header::CONTENT_TYPE) else {
        return Ok(Encoding::Raw {
            media_type: DEFAULT_MEDIA_TYPE.to_owned(),
            filename: artifact_name(filename, None)?,
        });
    };
    let text = value.to_str().unwrap_or_default();
    let essence = text.split(';').next().unwrap_or_default().trim();
    if essence.eq_ignore_ascii_case("multipart/form-data") {
        let boundary = multer::parse_boundary(text).map_err(|_| {
            ApiError::new(ErrorCode::ValidationFailed)
                .detail("a multipart/form-data body needs a boundary parameter")
                .field("Content-Type")
        })?;
        return Ok(Encoding::Multipart { boundary });
    }
    Ok(Encoding::Raw {
        media_type: checked_media_type(text, "Content-Type")?,
        filename: artifact_name(filename, None)?,
    })
}

/// The file's name: the `filename` parameter when given, else the part's, else `attachment`.
fn artifact_name(param: Option<&str>, part: Option<&str>) -> Result<ArtifactName, ApiError> {
    let name = param.or(part).unwrap_or(DEFAULT_FILENAME);
    ArtifactName::parse(name).map_err(|error| {
        ApiError::new(ErrorCode::ValidationFailed)
            .detail(error.to_string())
            .field("filename")
    })
}

/// Uploads one file, as the raw request body or as the single file part of a
/// `multipart/form-data` body (what `curl -F file=@x`, a browser `FormData` or a native app's
/// multipart request send). The file is first spooled to an unlinked temporary file (hashing and
/// counting as it arrives), then copied into storage in one short transaction, so a slow client
/// never holds a database connection or a lock. Larger than the configured limit → 413; a
/// multipart body with no part or more than one → 400; in every refusal nothing is stored.
#[utoipa::path(
    post, path = "/v1/sessions/{session_id}/artifacts", tag = "artifacts",
    security(("bearer" = ["sessions.write"])),
    params(("session_id" = Uuid, Path), UploadArtifact),
    request_body(
        description = "The file: either the raw bytes, sent with the file's own media type (any; the \
                       Content-Type is stored as the artifact's media type), or a \
                       `multipart/form-data` body with exactly one part (its filename and Content-Type are used)",
        content(
            (Vec<u8> = "application/octet-stream"),
            (UploadForm = "multipart/form-data"),
        )
    ),
    responses(
        (status = 201, description = "Stored", body = Artifact, headers(("Location" = String), ("ETag" = String))),
    )
)]
pub async fn upload(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(session_id): Path<String>,
    Query(params): Query<UploadArtifact>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let session = parse_id(&session_id, SessionId::parse, ErrorCode::SessionNotFound)?;
    let limit = state.settings.artifact_max_bytes;
    let encoding = encoding(&headers, params.filename.as_deref())?;
    let envelope = match encoding {
        Encoding::Raw { .. } => 0,
        Encoding::Multipart { .. } => MULTIPART_ENVELOPE_BYTES,
    };
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|length| length > limit.saturating_add(envelope)) {
        return Err(too_large(limit));
    }
    // Refuse before receiving the bytes; checked again, under lock, when storing them.
    if state.store.session(&caller.principal, session).await?.is_none() {
        return Err(ApiError::new(ErrorCode::SessionNotFound));
    }
    let idle = state.settings.upload_idle_timeout;
    let (filename, media_type, mut spooled) = match encoding {
        Encoding::Raw { media_type, filename } => {
            let spooled = spool(body.into_data_stream(), limit, idle).await?;
            // An empty file is a file when it says what it is; a request with neither bytes nor
            // a media type carries nothing.
            if spooled.size == 0 && !headers.contains_key(header::CONTENT_TYPE) {
                return Err(ApiError::new(ErrorCode::InvalidRequest)
                    .detail("the request carries no file: send its bytes, or a multipart body with one file part")
                    .field("body"));
            }
            (filename, media_type, spooled)
        }
        Encoding::Multipart { boundary } => {
            let constraints = multer::Constraints::new()
                .size_limit(multer::SizeLimit::new().whole_stream(limit.saturating_add(envelope)));
            let mut form = multer::Multipart::with_constraints(body.into_data_stream(), boundary, constraints);
            let part = next_part(&mut form, idle, limit)
                .await?
                .ok_or_else(|| ApiError::new(ErrorCode::MultipartNoFile).detail("the multipart body has no part"))?;
            let filename = artifact_name(params.filename.as_deref(), part.file_name())?;
            let media_type = match part.content_type() {
                Some(media_type) => checked_media_type(media_type.as_ref(), "Content-Type of the file part")?,
                None => DEFAULT_MEDIA_TYPE.to_owned(),
            };
            let spooled = spool(part, limit, idle).await?;
            if next_part(&mut form, idle, limit).await?.is_some() {
                return Err(ApiError::new(ErrorCode::MultipartExtraPart)
                    .detail("send one file per upload, as the only part of the multipart body"));
            }
            (filename, media_type, spooled)
        }
    };

    let mut upload = state
        .store
        .begin_artifact(&caller.principal, session)
        .await?
        .ok_or_else(|| ApiError::new(ErrorCode::SessionNotFound))?;
    let mut chunk = vec![0u8; CHUNK_BYTES];
    loop {
        let filled = fill(&mut spooled.file, &mut chunk).await.map_err(spool_failed)?;
        if filled == 0 {
            break;
        }
        upload.write_chunk(&chunk[..filled]).await?;
    }
    let row = upload
        .finish(NewArtifact {
            filename: filename.as_str(),
            media_type: &media_type,
            size_bytes: i64::try_from(spooled.size).unwrap_or(i64::MAX),
            sha256: &spooled.sha256,
        })
        .await?;
    let location = format!("/v1/sessions/{}/artifacts/{}", row.session_id, row.id);
    let etag = strong_etag(&row.sha256);
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location), (header::ETAG, etag)],
        JsonResponse(artifact(row)),
    )
        .into_response())
}

/// The next part of a multipart body, within the idle timeout.
async fn next_part<'r>(
    form: &mut multer::Multipart<'r>,
    idle: std::time::Duration,
    limit: u64,
) -> Result<Option<multer::Field<'r>>, ApiError> {
    match tokio::time::timeout(idle, form.next_field()).await {
        Ok(Ok(part)) => Ok(part),
        Ok(Err(error)) => Err(multipart_failed(&error, limit)),
        Err(_) => Err(stalled(idle)),
    }
}

fn multipart_failed(error: &multer::Error, limit: u64) -> ApiError {
    match error {
        multer::Error::StreamSizeExceeded { .. } | multer::Error::FieldSizeExceeded { .. } => too_large(limit),
        other => ApiError::new(ErrorCode::InvalidRequest).detail(format!("the multipart body is malformed: {other}")),
    }
}

fn stalled(idle: std::time::Duration) -> ApiError {
    ApiError::new(ErrorCode::RequestTimeout).detail(format!("no upload data arrived for {} seconds", idle.as_secs()))
}

/// An upload received in full, rewound to its start.
struct Spooled {
    file: tokio::fs::File,
    size: u64,
    sha256: String,
}

fn spool_failed(error: std::io::Error) -> ApiError {
    tracing::error!(%error, "spooling an upload failed");
    ApiError::new(ErrorCode::Internal)
}

/// A failure while receiving the file's bytes.
trait ReceiveError: std::fmt::Display {
    fn refusal(&self, _limit: u64) -> ApiError {
        ApiError::new(ErrorCode::InvalidRequest).detail(format!("the upload was interrupted: {self}"))
    }
}

impl ReceiveError for axum::Error {}

impl ReceiveError for multer::Error {
    fn refusal(&self, limit: u64) -> ApiError {
        multipart_failed(self, limit)
    }
}

/// Receives the file into an unlinked temporary file (gone with the process, whatever happens),
/// enforcing the size limit and the idle timeout as bytes arrive.
async fn spool<E: ReceiveError>(
    bytes: impl futures_util::Stream<Item = Result<bytes::Bytes, E>>,
    limit: u64,
    idle: std::time::Duration,
) -> Result<Spooled, ApiError> {
    let file = tokio::task::spawn_blocking(tempfile::tempfile)
        .await
        .map_err(|error| spool_failed(std::io::Error::other(error)))?
        .map_err(spool_failed)?;
    let mut file = tokio::fs::File::from_std(file);
    let mut hasher = Sha256::new();
    let mut size: u64 = 0;
    let mut stream = std::pin::pin!(bytes);
    loop {
        let bytes = match tokio::time::timeout(idle, stream.next()).await {
            Ok(Some(Ok(bytes))) => bytes,
            Ok(Some(Err(error))) => return Err(error.refusal(limit)),
            Ok(None) => break,
            Err(_) => return Err(stalled(idle)),
        };
        size += bytes.len() as u64;
        if size > limit {
            return Err(too_large(limit));
        }
        hasher.update(&bytes);
        file.write_all(&bytes).await.map_err(spool_failed)?;
    }
    file.flush().await.map_err(spool_failed)?;
    file.seek(std::io::SeekFrom::Start(0)).await.map_err(spool_failed)?;
    let sha256 = hasher.finalize().iter().map(|byte| format!("{byte:02x}")).collect();
    Ok(Spooled { file, size, sha256 })
}

/// Reads until `buffer` is full or the file ends; returns how many bytes were read.
async fn fill(file: &mut tokio::fs::File, buffer: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buffer.len() {
        let read = file.read(&mut buffer[filled..]).await?;
        if read == 0 {
            break;
        }
        filled += read;
    }
    Ok(filled)
}

async fn find(state: &AppState, caller: &Caller, session_id: &str, artifact_id: &str) -> Result<ArtifactRow, ApiError> {
    let session = parse_id(session_id, SessionId::parse, ErrorCode::ArtifactNotFound)?;
    let artifact = parse_id(artifact_id, ArtifactId::parse, ErrorCode::ArtifactNotFound)?;
    state
        .store
        .artifact(&caller.principal, session, artifact)
        .await?
        .ok_or_else(|| ApiError::new(ErrorCode::ArtifactNotFound))
}

/// Reads an artifact's metadata.
#[utoipa::path(
    get, path = "/v1/sessions/{session_id}/artifacts/{artifact_id}", tag = "artifacts",
    security(("bearer" = ["sessions.read"])),
    params(("session_id" = Uuid, Path), ("artifact_id" = Uuid, Path)),
    responses(
        (status = 200, description = "Metadata", body = Artifact),
    )
)]
pub async fn metadata(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path((session_id, artifact_id)): Path<(String, String)>,
) -> Result<JsonResponse<Artifact>, ApiError> {
    Ok(JsonResponse(artifact(
        find(&state, &caller, &session_id, &artifact_id).await?,
    )))
}

/// Reads an artifact's bytes. Served as an attachment with a strong `ETag`; a matching
/// `If-None-Match` gets 304 without a body.
#[utoipa::path(
    get, path = "/v1/sessions/{session_id}/artifacts/{artifact_id}/content", tag = "artifacts",
    security(("bearer" = ["sessions.read"])),
    params(("session_id" = Uuid, Path), ("artifact_id" = Uuid, Path),
           ("If-None-Match" = Option<String>, Header, description = "Entity tags already held")),
    responses(
        (status = 200, description = "The bytes, served with the media type given at upload", content_type = "*/*",
         body = Vec<u8>, headers(("ETag" = String))),
        (status = 304, description = "Unchanged", headers(("ETag" = String))),
    )
)]
pub async fn content(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path((session_id, artifact_id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let row = find(&state, &caller, &session_id, &artifact_id).await?;
    if row.expired_at.is_some() {
        return Err(ApiError::new(ErrorCode::ArtifactExpired)
            .detail("the artifact's bytes were removed by retention; its metadata stays"));
    }
    let etag = strong_etag(&row.sha256);
    let cache_headers = [
        (header::ETAG, etag.clone()),
        (header::CACHE_CONTROL, "private, no-cache".to_owned()),
    ];
    let unchanged = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| if_none_match_matches(value, &etag));
    if unchanged {
        return Ok((StatusCode::NOT_MODIFIED, cache_headers).into_response());
    }
    let body = Body::from_stream(chunks(state.store.clone(), row.id));
    let mut response = (StatusCode::OK, cache_headers, body).into_response();
    let response_headers = response.headers_mut();
    response_headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_str(&row.media_type).unwrap_or(HeaderValue::from_static(DEFAULT_MEDIA_TYPE)),
    );
    response_headers.insert(header::CONTENT_LENGTH, HeaderValue::from(row.size_bytes));
    response_headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    // Uploaded HTML or SVG opened in a browser runs nothing and reaches nothing.
    response_headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("sandbox; default-src 'none'"),
    );
    if let Ok(value) = HeaderValue::from_str(&content_disposition(&row.filename)) {
        response_headers.insert(header::CONTENT_DISPOSITION, value);
    }
    Ok(response)
}

/// Streams the stored chunks one query at a time, so a slow reader never holds a connection.
fn chunks(store: Store, id: ArtifactId) -> impl futures_util::Stream<Item = Result<Vec<u8>, store::StoreError>> {
    futures_util::stream::try_unfold(0i32, move |seq| {
        let store = store.clone();
        async move { Ok(store.artifact_chunk(id, seq).await?.map(|bytes| (bytes, seq + 1))) }
    })
}

/// `attachment; filename*=UTF-8''…` with RFC 8187 percent-encoding.
fn content_disposition(filename: &str) -> String {
    let mut encoded = String::with_capacity(filename.len());
    for byte in filename.bytes() {
        if byte.is_ascii_alphanumeric() || b"!#$&+-.^_`|~".contains(&byte) {
            encoded.push(byte as char);
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    format!("attachment; filename*=UTF-8''{encoded}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_disposition_percent_encodes() {
        assert_eq!(
            content_disposition("a b\"é.txt"),
            "attachment; filename*=UTF-8''a%20b%22%C3%A9.txt"
        );
    }
}
