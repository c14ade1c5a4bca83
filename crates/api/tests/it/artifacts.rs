//! Artifacts: streamed upload with a size limit, separate metadata and bytes, strong ETag and
//! 304, bytes that survive a restart.

use reqwest::Method;
use serde_json::json;

use crate::support::{Env, TestApp, expect_problem, json};

fn pseudo_random_bytes(len: usize) -> Vec<u8> {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test]
async fn upload_read_back_and_conditional_get() {
    let app = TestApp::spawn().await;
    let sid = app.new_session_id().await;
    // Larger than one storage chunk, not a multiple of it.
    let bytes = pseudo_random_bytes(600 * 1024 + 17);

    let response = app
        .request(
            Method::POST,
            &format!("/v1/sessions/{sid}/artifacts?filename=photo%20%C3%A9.png"),
        )
        .header("content-type", "image/png")
        .body(bytes.clone())
        .send()
        .await
        .expect("send");
    assert_eq!(response.status(), 201);
    let etag = response.headers()["etag"].to_str().expect("etag").to_owned();
    let location = response.headers()["location"].to_str().expect("location").to_owned();
    let (_, artifact) = json(response).await;
    assert_eq!(artifact["filename"], "photo é.png");
    assert_eq!(artifact["media_type"], "image/png");
    assert_eq!(artifact["size_bytes"], bytes.len());
    assert_eq!(artifact["sha256"], sha256_hex(&bytes));
    assert_eq!(artifact["etag"], etag);
    assert_eq!(
        etag,
        format!("\"{}\"", sha256_hex(&bytes)),
        "a strong tag: quoted, no W/"
    );

    let (status, metadata) = app.get_json(&location).await;
    assert_eq!((status, &metadata), (200, &artifact));

    let content = app.send(Method::GET, &format!("{location}/content")).await;
    assert_eq!(content.status(), 200);
    assert_eq!(content.headers()["etag"], etag.as_str());
    assert_eq!(content.headers()["content-type"], "image/png");
    assert_eq!(content.headers()["x-content-type-options"], "nosniff");
    assert_eq!(
        content.headers()["content-security-policy"],
        "sandbox; default-src 'none'"
    );
    assert_eq!(
        content.headers()["content-disposition"],
        "attachment; filename*=UTF-8''photo%20%C3%A9.png"
    );
    assert_eq!(content.bytes().await.expect("bytes").as_ref(), bytes.as_slice());

    let cached = app
        .request(Method::GET, &format!("{location}/content"))
        .header("if-none-match", &etag)
        .send()
        .await
        .expect("send");
    assert_eq!(cached.status(), 304);
    assert_eq!(cached.headers()["etag"], etag.as_str());
    assert!(cached.bytes().await.expect("body").is_empty());

    let stale = app
        .request(Method::GET, &format!("{location}/content"))
        .header("if-none-match", "\"0000\"")
        .send()
        .await
        .expect("send");
    assert_eq!(stale.status(), 200);

    // An empty file that says what it is gets the default name; a request with neither bytes
    // nor a media type carries no file.
    let empty = app
        .request(Method::POST, &format!("/v1/sessions/{sid}/artifacts"))
        .header("content-type", "application/octet-stream")
        .send()
        .await
        .expect("send");
    let (status, empty) = json(empty).await;
    assert_eq!(
        (status, empty["size_bytes"].as_i64(), empty["filename"].as_str()),
        (201, Some(0), Some("attachment"))
    );
    assert_eq!(empty["media_type"], "application/octet-stream");
    let nothing = app
        .request(Method::POST, &format!("/v1/sessions/{sid}/artifacts"))
        .send()
        .await
        .expect("send");
    let problem = expect_problem(nothing, 400, "invalid_request").await;
    assert_eq!(problem["field"], "body");
}

#[tokio::test]
async fn stored_bytes_survive_a_restart() {
    let first = TestApp::spawn().await;
    let session = first.create_session(json!({})).await;
    let sid = session["session_id"].as_str().expect("id").to_owned();
    let upload = first
        .request(
            Method::POST,
            &format!("/v1/sessions/{sid}/artifacts?filename=notes.txt"),
        )
        .body("kept")
        .send();
    let (_, artifact) = json(upload.await.expect("send")).await;
    let TestApp { db, .. } = first;

    let second = TestApp::spawn_on(db, Env::default()).await;
    let path = format!(
        "/v1/sessions/{sid}/artifacts/{}/content",
        artifact["artifact_id"].as_str().expect("id")
    );
    let response = second.request(Method::GET, &path).send().await.expect("send");
    assert_eq!(response.status(), 200);
    assert_eq!(response.text().await.expect("text"), "kept");
}

/// Retention (the maintenance role) removes an artifact's bytes: its metadata stays, says when,
/// and its content answers 410 `artifact_expired`, also to a conditional request.
#[tokio::test]
async fn an_expired_artifact_keeps_its_metadata_and_its_content_is_gone() {
    let app = TestApp::spawn().await;
    let sid = app.new_session_id().await;
    let upload = app
        .request(
            Method::POST,
            &format!("/v1/sessions/{sid}/artifacts?filename=notes.txt"),
        )
        .body("old notes")
        .send();
    let response = upload.await.expect("send");
    let location = response.headers()["location"].to_str().expect("location").to_owned();
    let (_, artifact) = json(response).await;
    assert_eq!(artifact["expired_at"], serde_json::Value::Null);

    // Microseconds, as PostgreSQL keeps them.
    let later = (jiff::Timestamp::now() + jiff::SignedDuration::from_hours(24 * 91))
        .round(jiff::Unit::Microsecond)
        .expect("round");
    let maintenance = app.db.store_as("maintenance").await;
    let removed = maintenance
        .expire(
            store::retention::Task::ArtifactBytes,
            &store::retention::Retention::default(),
            later,
            10,
        )
        .await
        .expect("expire");
    assert_eq!(removed, 1);

    let (status, metadata) = app.get_json(&location).await;
    assert_eq!(status, 200);
    assert_eq!(metadata["filename"], "notes.txt");
    assert_eq!(
        metadata["expired_at"]
            .as_str()
            .map(|at| at.parse::<jiff::Timestamp>().expect("a time")),
        Some(later)
    );
    let etag = artifact["etag"].as_str().expect("etag");
    for conditional in [None, Some(etag)] {
        let mut request = app.request(Method::GET, &format!("{location}/content"));
        if let Some(etag) = conditional {
            request = request.header("if-none-match", etag);
        }
        let problem = expect_problem(request.send().await.expect("send"), 410, "artifact_expired").await;
        assert!(!problem.to_string().contains("old notes"), "{problem}");
    }
}

#[tokio::test]
async fn uploads_over_the_limit_are_refused_and_leave_nothing() {
    let app = TestApp::spawn_with(Env::default().set("API_MAX_ARTIFACT_BYTES", "1000")).await;
    let path = format!("/v1/sessions/{}/artifacts?filename=big.bin", app.new_session_id().await);

    let exact = app.send_body(Method::POST, &path, vec![7u8; 1000]).await;
    assert_eq!(exact.status(), 201, "the limit itself is allowed");

    let declared = app.send_body(Method::POST, &path, vec![7u8; 1001]).await;
    let body = expect_problem(declared, 413, "artifact_too_large").await;
    assert_eq!(body["max_bytes"], 1000);

    // Without Content-Length the limit is enforced while streaming.
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> = (0..5).map(|_| Ok(vec![1u8; 300])).collect();
    let streamed = reqwest::Body::wrap_stream(futures_util::stream::iter(chunks));
    let streamed = app.send_body(Method::POST, &path, streamed).await;
    expect_problem(streamed, 413, "artifact_too_large").await;

    let stored = (app.count("artifacts").await, app.count("artifact_chunks").await);
    assert_eq!(stored, (1, 1), "only the accepted upload is stored");
    app.assert_no_open_transactions().await;
}

#[tokio::test]
async fn uploads_need_an_existing_session_and_valid_names() {
    let app = TestApp::spawn().await;
    let missing = format!("/v1/sessions/{}/artifacts", uuid::Uuid::new_v4());
    let missing = app.send_body(Method::POST, &missing, "x").await;
    expect_problem(missing, 404, "session_not_found").await;

    let sid = app.new_session_id().await;
    let bad_name = format!("/v1/sessions/{sid}/artifacts?filename=..%2Fetc%2Fpasswd");
    let bad_name = app.send_body(Method::POST, &bad_name, "x").await;
    let body = expect_problem(bad_name, 422, "validation_failed").await;
    assert_eq!(body["field"], "filename");
    let bad_type = app
        .request(Method::POST, &format!("/v1/sessions/{sid}/artifacts"))
        .header("content-type", "not a type")
        .body("x")
        .send()
        .await
        .expect("send");
    expect_problem(bad_type, 422, "validation_failed").await;

    let unknown = format!("/v1/sessions/{sid}/artifacts/{}", uuid::Uuid::new_v4());
    for path in [unknown.clone(), format!("{unknown}/content")] {
        expect_problem(app.send(Method::GET, &path).await, 404, "artifact_not_found").await;
    }
}

#[tokio::test]
async fn a_stalled_upload_is_refused_and_leaves_nothing() {
    let app = TestApp::spawn_with(Env::default().set("API_UPLOAD_IDLE_SECONDS", "1")).await;
    let path = format!(
        "/v1/sessions/{}/artifacts?filename=slow.bin",
        app.new_session_id().await
    );
    // More than one storage chunk, then silence: the stream never ends.
    let first = futures_util::stream::iter([Ok::<_, std::io::Error>(vec![1u8; 300 * 1024])]);
    let stalled = futures_util::StreamExt::chain(first, futures_util::stream::pending());
    let response = app
        .send_body(Method::POST, &path, reqwest::Body::wrap_stream(stalled))
        .await;
    expect_problem(response, 408, "request_timeout").await;
    assert_eq!(
        app.count("artifact_chunks").await,
        0,
        "the chunk written before the stall was rolled back"
    );
}

/// A file as `curl -F file=@x`, a browser `FormData` or a native app sends it.
fn file_part(bytes: Vec<u8>, filename: &str, media_type: &str) -> reqwest::multipart::Part {
    reqwest::multipart::Part::bytes(bytes)
        .file_name(filename.to_owned())
        .mime_str(media_type)
        .expect("media type")
}

#[tokio::test]
async fn a_multipart_upload_stores_the_file_part_alone() {
    let app = TestApp::spawn().await;
    let sid = app.new_session_id().await;
    let bytes = pseudo_random_bytes(300 * 1024 + 5);

    let form =
        reqwest::multipart::Form::new().part("file", file_part(bytes.clone(), "report é.pdf", "application/pdf"));
    let response = app
        .request(Method::POST, &format!("/v1/sessions/{sid}/artifacts"))
        .multipart(form)
        .send()
        .await
        .expect("send");
    assert_eq!(response.status(), 201);
    let location = response.headers()["location"].to_str().expect("location").to_owned();
    let (_, artifact) = json(response).await;
    assert_eq!(artifact["filename"], "report é.pdf", "the part's filename");
    assert_eq!(artifact["media_type"], "application/pdf", "the part's media type");
    assert_eq!(artifact["size_bytes"], bytes.len(), "the file alone, not the envelope");
    assert_eq!(artifact["sha256"], sha256_hex(&bytes));

    let content = app.send(Method::GET, &format!("{location}/content")).await;
    assert_eq!(content.status(), 200);
    assert_eq!(content.headers()["content-type"], "application/pdf");
    assert_eq!(
        content.bytes().await.expect("bytes").as_ref(),
        bytes.as_slice(),
        "identical bytes"
    );

    // The `filename` parameter, when given, wins over the part's; a part without a media type is
    // stored as octet-stream.
    let plain = reqwest::multipart::Part::bytes(b"plain".to_vec()).file_name("ignored.txt");
    let response = app
        .request(
            Method::POST,
            &format!("/v1/sessions/{sid}/artifacts?filename=chosen.txt"),
        )
        .multipart(reqwest::multipart::Form::new().part("upload", plain))
        .send()
        .await
        .expect("send");
    let (status, artifact) = json(response).await;
    assert_eq!(status, 201);
    assert_eq!(artifact["filename"], "chosen.txt");
    assert_eq!(artifact["media_type"], "application/octet-stream");
}

#[tokio::test]
async fn a_multipart_body_with_two_files_an_extra_part_or_none_is_refused_and_leaves_nothing() {
    let app = TestApp::spawn_with(Env::default().set("API_MAX_ARTIFACT_BYTES", "1000")).await;
    let session = app.create_session(json!({})).await;
    let path = format!("/v1/sessions/{}/artifacts", session["session_id"].as_str().expect("id"));

    let post_form = |form: reqwest::multipart::Form| app.request(Method::POST, &path).multipart(form).send();
    let post_raw = |content_type: &'static str, body: &'static str| {
        app.request(Method::POST, &path)
            .header("content-type", content_type)
            .body(body)
            .send()
    };

    let two_files = reqwest::multipart::Form::new()
        .part("file", file_part(vec![1u8; 10], "a.bin", "application/octet-stream"))
        .part("file", file_part(vec![2u8; 10], "b.bin", "application/octet-stream"));
    let body = expect_problem(post_form(two_files).await.expect("send"), 400, "multipart_extra_part").await;
    assert!(
        body["detail"]
            .as_str()
            .is_some_and(|detail| detail.contains("one file")),
        "{body}"
    );
    let extra_field = reqwest::multipart::Form::new()
        .part("file", file_part(vec![1u8; 10], "a.bin", "application/octet-stream"))
        .text("note", "hello");
    expect_problem(post_form(extra_field).await.expect("send"), 400, "multipart_extra_part").await;

    let empty = post_raw("multipart/form-data; boundary=XyZ", "--XyZ--\r\n");
    expect_problem(empty.await.expect("send"), 400, "multipart_no_file").await;
    let unbounded = post_raw("multipart/form-data", "x");
    let body = expect_problem(unbounded.await.expect("send"), 422, "validation_failed").await;
    assert_eq!(body["field"], "Content-Type");
    let malformed = post_raw("multipart/form-data; boundary=XyZ", "not a multipart body at all");
    expect_problem(malformed.await.expect("send"), 400, "invalid_request").await;

    // The file part alone counts against the limit: at the limit it is stored, past it refused.
    let at_limit = reqwest::multipart::Form::new().part("file", file_part(vec![3u8; 1000], "a.bin", "text/plain"));
    assert_eq!(post_form(at_limit).await.expect("send").status(), 201);
    let over = reqwest::multipart::Form::new().part("file", file_part(vec![3u8; 1001], "a.bin", "text/plain"));
    expect_problem(post_form(over).await.expect("send"), 413, "artifact_too_large").await;

    let stored = (app.count("artifacts").await, app.count("artifact_chunks").await);
    assert_eq!(stored, (1, 1), "only the accepted upload is stored");
    app.assert_no_open_transactions().await;
}
