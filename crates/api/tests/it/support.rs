//! Spawns the API on an ephemeral port with a fresh database and a generated token.

use std::collections::HashMap;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;

use domain::scope::Scope;
use reqwest::{Client, RequestBuilder, Response};
use serde_json::Value;
use testkit::TestDatabase;

pub struct TestApp {
    pub base: String,
    pub token: String,
    pub client: Client,
    pub db: TestDatabase,
    /// The app's own store (the api login).
    pub app_store: store::Store,
    _dir: tempfile::TempDir,
    /// Stops the server when the app is dropped (or taken apart to restart on its database).
    _server: testkit::api::RunningApi,
}

/// A fresh random token of 43 URL-safe characters.
pub fn random_token() -> String {
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let bytes = uuid::Uuid::new_v4()
        .into_bytes()
        .into_iter()
        .chain(uuid::Uuid::new_v4().into_bytes());
    bytes
        .take(32)
        .map(|b| alphabet[(b % 64) as usize] as char)
        .collect::<String>()
        + "-steward-test"
}

/// Writes `contents` to `dir/name` with `mode`, returning the path.
pub fn write_file(dir: &std::path::Path, name: &str, contents: &str, mode: u32) -> std::path::PathBuf {
    let path = dir.join(name);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(&path)
        .expect("create file");
    file.write_all(contents.as_bytes()).expect("write file");
    path
}

pub fn all_scopes() -> String {
    Scope::ALL
        .iter()
        .map(|scope| scope.as_str())
        .collect::<Vec<_>>()
        .join(",")
}

/// Environment overrides for one app.
#[derive(Default, Clone)]
pub struct Env(pub HashMap<String, String>);

impl Env {
    pub fn set(mut self, name: &str, value: &str) -> Env {
        self.0.insert(name.to_owned(), value.to_owned());
        self
    }

    /// Mail on, in the legacy form: the api opens no credential, the paths only name the one
    /// account (`default`).
    pub fn with_mail(self) -> Env {
        self.set("AGENT_EMAIL_ENABLED", "1")
            .set("MAIL_READ_CREDENTIAL_FILE", "/etc/steward/mail/read.json")
            .set("MAIL_WRITE_CREDENTIAL_FILE", "/etc/steward/mail/write.json")
            .set("MAIL_SEND_CREDENTIAL_FILE", "/etc/steward/mail/send.json")
    }
}

impl TestApp {
    pub async fn spawn() -> TestApp {
        TestApp::spawn_with(Env::default()).await
    }

    pub async fn spawn_with(env: Env) -> TestApp {
        TestApp::spawn_on(TestDatabase::new().await, env).await
    }

    /// Spawns an app whose store sends no wake-up hints at all (its streams rely on re-reads).
    pub async fn spawn_deaf(env: Env) -> TestApp {
        TestApp::spawn_inner(TestDatabase::new().await, env, true, None).await
    }

    /// Spawns an app on an existing database, as a restart of the service would.
    pub async fn spawn_on(db: TestDatabase, env: Env) -> TestApp {
        TestApp::spawn_inner(db, env, false, None).await
    }

    /// Spawns an app on `db` whose store is `store` (say, one reaching the database through a
    /// relay the test switches off).
    pub async fn spawn_on_store(db: TestDatabase, env: Env, store: store::Store) -> TestApp {
        TestApp::build(db, env, None, store).await
    }

    /// Spawns an app on an existing database configured with `token`.
    pub async fn spawn_with_token(db: TestDatabase, env: Env, token: String) -> TestApp {
        TestApp::spawn_inner(db, env, false, Some(token)).await
    }

    /// Takes the app apart, stopping its server, and returns its database and token.
    pub fn stop(self) -> (TestDatabase, String) {
        (self.db, self.token)
    }

    async fn spawn_inner(db: TestDatabase, env: Env, deaf: bool, token: Option<String>) -> TestApp {
        // The app connects with the api login, so its privileges are exercised as deployed.
        let app_store = db.store_as("api").await;
        let app_store = if deaf { app_store.without_wakes() } else { app_store };
        TestApp::build(db, env, token, app_store).await
    }

    /// Spawns an app whose configuration `configure` adjusts after it is read (a part whose
    /// flag an environment may not turn on yet).
    pub async fn spawn_configured(env: Env, configure: impl FnOnce(&mut api::ApiConfig)) -> TestApp {
        let db = TestDatabase::new().await;
        let app_store = db.store_as("api").await;
        TestApp::build_configured(db, env, None, app_store, configure).await
    }

    async fn build(db: TestDatabase, env: Env, token: Option<String>, app_store: store::Store) -> TestApp {
        TestApp::build_configured(db, env, token, app_store, |_| ()).await
    }

    async fn build_configured(
        db: TestDatabase,
        env: Env,
        token: Option<String>,
        app_store: store::Store,
        configure: impl FnOnce(&mut api::ApiConfig),
    ) -> TestApp {
        let dir = tempfile::tempdir().expect("tempdir");
        let token = token.unwrap_or_else(random_token);
        let mut vars: HashMap<String, String> = HashMap::from([("AUTH_SCOPES".into(), all_scopes())]);
        vars.extend(env.0);
        let configure = |config: &mut api::ApiConfig| {
            config.release = "test-release".into();
            configure(config);
        };
        let server = testkit::api::start_configured(&db, dir.path(), &token, vars, app_store.clone(), configure).await;
        TestApp {
            base: server.base.clone(),
            token,
            client: Client::new(),
            db,
            app_store,
            _dir: dir,
            _server: server,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// A request carrying the app's bearer token.
    pub fn request(&self, method: reqwest::Method, path: &str) -> RequestBuilder {
        self.client.request(method, self.url(path)).bearer_auth(&self.token)
    }

    /// POSTs `body` as JSON to `path`, which must create a resource (201): its `Location` and
    /// the answer.
    pub async fn create(&self, path: &str, body: Value) -> (String, Value) {
        let response = self
            .request(reqwest::Method::POST, path)
            .json(&body)
            .send()
            .await
            .expect("send");
        assert_eq!(response.status(), 201);
        let location = response.headers()["location"].to_str().expect("location").to_owned();
        (location, json(response).await.1)
    }

    /// Sends a request without a body.
    pub async fn send(&self, method: reqwest::Method, path: &str) -> Response {
        self.request(method, path).send().await.expect("send")
    }

    /// Sends a request with `body`.
    pub async fn send_body(&self, method: reqwest::Method, path: &str, body: impl Into<reqwest::Body>) -> Response {
        self.request(method, path).body(body).send().await.expect("send")
    }

    /// A new conversation with the default agent, without metadata: its id.
    pub async fn new_session_id(&self) -> String {
        let session = self.create_session(serde_json::json!({})).await;
        session["session_id"].as_str().expect("id").to_owned()
    }

    pub async fn create_session(&self, metadata: Value) -> Value {
        let response = self
            .request(reqwest::Method::POST, "/v1/sessions")
            .json(&serde_json::json!({ "agent_id": "default", "metadata": metadata }))
            .send()
            .await
            .expect("send");
        assert_eq!(response.status(), 201, "create session");
        response.json().await.expect("session json")
    }

    /// Creates a session without metadata and returns its id.
    pub async fn new_session(&self) -> String {
        self.create_session(serde_json::json!({})).await["session_id"]
            .as_str()
            .expect("id")
            .to_owned()
    }

    /// Rows in `table` (a fixed name from the test, never input).
    pub async fn count(&self, table: &str) -> i64 {
        sqlx::query_scalar(&format!("SELECT count(*) FROM {table}"))
            .fetch_one(&self.db.pool)
            .await
            .expect("count rows")
    }

    /// Asserts no connection to this database sits inside an unfinished transaction.
    pub async fn assert_no_open_transactions(&self) {
        let open: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity
             WHERE datname = current_database() AND pid <> pg_backend_pid() AND state LIKE 'idle in transaction%'",
        )
        .fetch_one(&self.db.pool)
        .await
        .expect("pg_stat_activity");
        assert_eq!(open, 0, "a transaction was left open");
    }

    pub async fn get_json(&self, path: &str) -> (u16, Value) {
        json(self.request(reqwest::Method::GET, path).send().await.expect("send")).await
    }
}

/// Status and JSON body (Null when the body is empty).
pub async fn json(response: Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let bytes = response.bytes().await.expect("body");
    let value = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes).expect("json body")
    };
    (status, value)
}

/// Asserts a problem document with `status` and `code`, returning it.
pub async fn expect_problem(response: Response, status: u16, code: &str) -> Value {
    assert_eq!(
        response.headers().get("content-type").and_then(|v| v.to_str().ok()),
        Some("application/problem+json"),
        "problem content type"
    );
    let (actual, body) = json(response).await;
    assert_eq!((actual, body["code"].as_str()), (status, Some(code)), "{body}");
    assert_eq!(body["status"], status);
    assert_eq!(body["type"], format!("urn:steward:problem:{code}"));
    assert!(body["title"].is_string());
    body
}

/// One server-sent event frame.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    pub id: Option<i64>,
    pub event: Option<String>,
    pub data: String,
}

/// Reads SSE frames incrementally, keeping partial frames across chunks.
pub struct SseReader {
    stream: std::pin::Pin<Box<dyn futures_util::Stream<Item = reqwest::Result<bytes::Bytes>> + Send>>,
    buffer: String,
}

impl SseReader {
    pub fn new(response: Response) -> SseReader {
        SseReader {
            stream: Box::pin(response.bytes_stream()),
            buffer: String::new(),
        }
    }

    /// The next event frame (comments are skipped); `None` when the server closed the stream.
    pub async fn next(&mut self) -> Option<Frame> {
        use futures_util::StreamExt;
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let raw: String = self.buffer.drain(..end + 2).collect();
                let mut frame = Frame {
                    id: None,
                    event: None,
                    data: String::new(),
                };
                let mut meaningful = false;
                for line in raw.lines() {
                    if let Some(value) = line.strip_prefix("id:") {
                        frame.id = Some(value.trim().parse().expect("numeric id"));
                        meaningful = true;
                    } else if let Some(value) = line.strip_prefix("event:") {
                        frame.event = Some(value.trim().to_owned());
                        meaningful = true;
                    } else if let Some(value) = line.strip_prefix("data:") {
                        frame.data.push_str(value.trim_start());
                        meaningful = true;
                    }
                }
                if meaningful {
                    return Some(frame);
                }
                continue;
            }
            match self.stream.next().await {
                Some(Ok(bytes)) => self.buffer.push_str(std::str::from_utf8(&bytes).expect("utf-8 stream")),
                Some(Err(_)) | None => return None,
            }
        }
    }
}

impl TestApp {
    /// Submits `text` to `session` under `key`.
    pub async fn submit(&self, session: &str, key: &str, body: Value) -> Response {
        self.request(reqwest::Method::POST, &format!("/v1/sessions/{session}/messages"))
            .header("idempotency-key", key)
            .json(&body)
            .send()
            .await
            .expect("send")
    }

    /// Opens the session's event stream after `after`.
    pub async fn events(&self, session: &str, after: Option<i64>) -> SseReader {
        let mut request = self.request(reqwest::Method::GET, &format!("/v1/sessions/{session}/events"));
        if let Some(after) = after {
            request = request.header("last-event-id", after.to_string());
        }
        let response = request.send().await.expect("send");
        assert_eq!(response.status(), 200, "event stream");
        SseReader::new(response)
    }

    pub fn store(&self) -> store::Store {
        store::Store::from_pool(self.db.pool.clone())
    }
}
