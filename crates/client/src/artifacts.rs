//! Artifacts: uploads as one multipart part with a progress callback and a retry after a lost
//! connection; downloads revalidated with `If-None-Match` through a process-local cache of at
//! most 32 MiB that drops the least recently used bytes first and is never written to disk.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use reqwest::header::{ETAG, IF_NONE_MATCH};
use reqwest::multipart::{Form, Part};
use reqwest::{Method, StatusCode};
use uuid::Uuid;
use wire::response::Artifact;

use crate::{Client, ClientError, Result, refusal};

/// The cache's limit: the contract's 32 MiB.
pub const CACHE_BYTES: usize = 32 * 1024 * 1024;
const UPLOAD_CHUNK: usize = 64 * 1024;

/// Told how far a transfer is: bytes done, and the whole size when it is known.
pub type Progress = Arc<dyn Fn(u64, Option<u64>) + Send + Sync>;

/// Artifact bytes by id, with their entity tags, least recently used first out.
#[derive(Debug, Default)]
pub(crate) struct Cache {
    entries: HashMap<Uuid, Cached>,
    bytes: usize,
    clock: u64,
}

#[derive(Debug)]
struct Cached {
    etag: String,
    bytes: Bytes,
    used: u64,
}

impl Cache {
    fn get(&mut self, artifact: Uuid) -> Option<(String, Bytes)> {
        self.clock += 1;
        let entry = self.entries.get_mut(&artifact)?;
        entry.used = self.clock;
        Some((entry.etag.clone(), entry.bytes.clone()))
    }

    fn put(&mut self, artifact: Uuid, etag: String, bytes: Bytes) {
        if let Some(old) = self.entries.remove(&artifact) {
            self.bytes -= old.bytes.len();
        }
        if bytes.len() > CACHE_BYTES {
            return;
        }
        while self.bytes + bytes.len() > CACHE_BYTES {
            let Some(oldest) = self
                .entries
                .iter()
                .min_by_key(|(_, entry)| entry.used)
                .map(|(id, _)| *id)
            else {
                break;
            };
            if let Some(evicted) = self.entries.remove(&oldest) {
                self.bytes -= evicted.bytes.len();
            }
        }
        self.clock += 1;
        self.bytes += bytes.len();
        self.entries.insert(
            artifact,
            Cached {
                etag,
                bytes,
                used: self.clock,
            },
        );
    }
}

/// Bytes of an artifact.
#[derive(Clone, Debug, PartialEq)]
pub struct Downloaded {
    pub bytes: Bytes,
    pub etag: String,
    /// The server answered 304 and the cached bytes were reused.
    pub from_cache: bool,
}

impl Client {
    /// Uploads `bytes` as `filename` of `media_type` to `session`. A connection lost on the way
    /// is retried from the start (at most three times); a refusal is not. An upload has no
    /// idempotency key: when the answer (not the request) was lost, the retry stores a second
    /// copy, which only costs space; the message names the artifact the caller got back.
    pub async fn upload(
        &self,
        session: Uuid,
        filename: &str,
        media_type: &str,
        bytes: Bytes,
        progress: Option<Progress>,
    ) -> Result<Artifact> {
        let mut attempt = 0;
        loop {
            let total = bytes.len() as u64;
            let chunks: Vec<Bytes> = (0..bytes.len())
                .step_by(UPLOAD_CHUNK)
                .map(|start| bytes.slice(start..(start + UPLOAD_CHUNK).min(bytes.len())))
                .collect();
            let report = progress.clone();
            let mut sent = 0u64;
            let body = futures_util::stream::iter(chunks).map(move |chunk| {
                sent += chunk.len() as u64;
                if let Some(report) = &report {
                    report(sent, Some(total));
                }
                Ok::<_, std::io::Error>(chunk)
            });
            let part = Part::stream_with_length(reqwest::Body::wrap_stream(body), total)
                .file_name(filename.to_owned())
                .mime_str(media_type)
                .map_err(|_| ClientError::Invalid(format!("`{media_type}` is not a media type")))?;
            let request = self
                .request(Method::POST, &format!("v1/sessions/{session}/artifacts"))
                .multipart(Form::new().part("file", part));
            match self.send::<Artifact>(request).await {
                Err(ClientError::Transport(_)) if attempt < self.retries => {
                    attempt += 1;
                    tokio::time::sleep(Duration::from_millis(200 * u64::from(attempt))).await;
                }
                outcome => return outcome,
            }
        }
    }

    /// The metadata of an artifact.
    pub async fn artifact(&self, session: Uuid, artifact: Uuid) -> Result<Artifact> {
        self.get(&format!("v1/sessions/{session}/artifacts/{artifact}")).await
    }

    /// The bytes of an artifact: revalidated with `If-None-Match` when cached, reused on 304.
    pub async fn download(&self, session: Uuid, artifact: Uuid, progress: Option<Progress>) -> Result<Downloaded> {
        let cached = self.cache_lock().get(artifact);
        let mut request = self
            .request(
                Method::GET,
                &format!("v1/sessions/{session}/artifacts/{artifact}/content"),
            )
            .header(reqwest::header::ACCEPT, "*/*");
        if let Some((etag, _)) = &cached {
            request = request.header(IF_NONE_MATCH, etag);
        }
        let response = request.send().await.map_err(ClientError::Transport)?;
        let status = response.status();
        if status == StatusCode::NOT_MODIFIED {
            let Some((etag, bytes)) = cached else {
                return Err(ClientError::Unexpected {
                    status: 304,
                    message: "not modified, but nothing was cached".into(),
                });
            };
            if let Some(report) = &progress {
                report(bytes.len() as u64, Some(bytes.len() as u64));
            }
            return Ok(Downloaded {
                bytes,
                etag,
                from_cache: true,
            });
        }
        if status.is_redirection() {
            return Err(ClientError::Redirect);
        }
        if !status.is_success() {
            let bytes = response.bytes().await.map_err(ClientError::Transport)?;
            return Err(refusal(status, &bytes));
        }
        let etag = response
            .headers()
            .get(ETAG)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        let total = response.content_length();
        let mut body = Vec::with_capacity(total.unwrap_or(0).min(CACHE_BYTES as u64) as usize);
        let mut stream = response.bytes_stream();
        while let Some(chunk) = stream.next().await {
            body.extend_from_slice(&chunk.map_err(ClientError::Transport)?);
            if let Some(report) = &progress {
                report(body.len() as u64, total);
            }
        }
        let bytes = Bytes::from(body);
        let etag = etag.unwrap_or_default();
        if !etag.is_empty() {
            self.cache_lock().put(artifact, etag.clone(), bytes.clone());
        }
        Ok(Downloaded {
            bytes,
            etag,
            from_cache: false,
        })
    }

    /// Drops every cached byte (on a connection change or forgotten credentials).
    pub fn clear_cache(&self) {
        *self.cache_lock() = Cache::default();
    }

    /// How many bytes the cache holds.
    pub fn cached_bytes(&self) -> usize {
        self.cache_lock().bytes
    }

    fn cache_lock(&self) -> std::sync::MutexGuard<'_, Cache> {
        // A panic while holding the lock leaves a consistent map: entries are swapped whole.
        self.cache.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_keeps_at_most_32_mib_dropping_the_least_recently_used() {
        let mut cache = Cache::default();
        let (a, b, c) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
        let fifteen = Bytes::from(vec![0u8; 15 * 1024 * 1024]);
        cache.put(a, "\"a\"".into(), fifteen.clone());
        cache.put(b, "\"b\"".into(), fifteen.clone());
        assert!(cache.get(a).is_some(), "a is now the most recently used");
        cache.put(c, "\"c\"".into(), fifteen.clone());
        assert!(cache.get(b).is_none(), "b was the least recently used");
        assert!(cache.get(a).is_some() && cache.get(c).is_some());
        assert_eq!(cache.bytes, 30 * 1024 * 1024);
        cache.put(b, "\"b\"".into(), Bytes::from(vec![0u8; CACHE_BYTES + 1]));
        assert!(cache.get(b).is_none(), "larger than the whole cache: not kept");
        assert!(cache.bytes <= CACHE_BYTES);
        cache.put(a, "\"a2\"".into(), Bytes::from_static(b"new"));
        assert_eq!(cache.get(a).map(|(etag, _)| etag).as_deref(), Some("\"a2\""));
        assert_eq!(cache.bytes, 15 * 1024 * 1024 + 3);
    }
}
