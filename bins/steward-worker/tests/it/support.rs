//! A stack for one test: a fresh database, the API on 127.0.0.1, and workers in-process or as
//! real `steward-worker` processes.

use domain::env::FromEnv as _;
use std::collections::HashMap;
use std::time::{Duration, Instant};

use reqwest::{Client, Method, Response};
use serde_json::{Value, json};
use testkit::TestDatabase;
use testkit::model::{self, Reply};

pub struct Stack {
    pub base: String,
    pub token: String,
    pub client: Client,
    pub db: TestDatabase,
    pub dir: tempfile::TempDir,
    /// The clock the API's and the in-process workers' stores measure run timing by.
    pub clock: std::sync::Arc<testkit::ShiftedClock>,
    /// No store of the stack sends wake-up hints.
    deaf: bool,
    /// The browser role's control plane the in-process workers act through (`browser.act`).
    pub browser: Option<std::sync::Arc<agent::browser_tools::BrowserTools>>,
    /// The in-process workers form and recall beliefs (memory's flag is refused by the
    /// environment until its routes are built).
    pub memory: bool,
    _api: testkit::api::RunningApi,
    workers: Vec<Abort>,
}

struct Abort(tokio::task::JoinHandle<()>);

impl Drop for Abort {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Agent definitions for the API: the default agent with `model` and an optional webhook.
pub fn agent_definitions(model: Value, webhook_url: Option<&str>) -> String {
    json!([{ "id": "default", "instructions": "Be helpful.", "model": model, "webhook_url": webhook_url }]).to_string()
}

impl Stack {
    /// Starts the API with `api_env` overrides (no worker yet).
    pub async fn api(api_env: &[(&str, &str)]) -> Stack {
        Stack::build(api_env, false).await
    }

    /// [`Stack::api`] whose API (and workers) send no wake-up hints at all: everything moves by
    /// the streams' and workers' re-reads alone.
    pub async fn deaf(api_env: &[(&str, &str)]) -> Stack {
        Stack::build(api_env, true).await
    }

    /// [`Stack::api`] whose API configuration `configure` adjusts (a part whose flag an
    /// environment cannot turn on yet, on for its tests).
    pub async fn configured(api_env: &[(&str, &str)], configure: impl FnOnce(&mut api::ApiConfig)) -> Stack {
        Stack::build_configured(api_env, false, configure).await
    }

    async fn build(api_env: &[(&str, &str)], deaf: bool) -> Stack {
        Stack::build_configured(api_env, deaf, |_| ()).await
    }

    async fn build_configured(
        api_env: &[(&str, &str)],
        deaf: bool,
        configure: impl FnOnce(&mut api::ApiConfig),
    ) -> Stack {
        let db = TestDatabase::new().await;
        let dir = tempfile::tempdir().expect("tempdir");
        let token = format!("{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple());
        let mut vars: HashMap<String, String> =
            HashMap::from([("AUTH_SCOPES".into(), "sessions.read,sessions.write".into())]);
        for (name, value) in api_env {
            if *name == "AGENT_DEFINITIONS" {
                let path = dir.path().join("agents.json");
                std::fs::write(&path, value).expect("write agents");
                vars.insert("AGENT_DEFINITIONS_FILE".into(), path.display().to_string());
            } else if *name == "MODEL_SETTINGS" {
                let path = dir.path().join("models.json");
                std::fs::write(&path, value).expect("write model offer");
                vars.insert("MODEL_SETTINGS_FILE".into(), path.display().to_string());
            } else {
                vars.insert((*name).to_owned(), (*value).to_owned());
            }
        }
        let clock = std::sync::Arc::new(testkit::ShiftedClock::default());
        let app_store = db.store_as("api").await.with_clock(clock.clone());
        let app_store = if deaf { app_store.without_wakes() } else { app_store };
        let api = testkit::api::start_configured(&db, dir.path(), &token, vars, app_store, configure).await;
        Stack {
            base: api.base.clone(),
            token,
            client: Client::new(),
            db,
            dir,
            clock,
            deaf,
            browser: None,
            memory: false,
            _api: api,
            workers: Vec::new(),
        }
    }

    /// The worker environment for this stack.
    pub fn worker_env(&self, extra: &[(&str, &str)]) -> HashMap<String, String> {
        let mut vars: HashMap<String, String> = HashMap::from([
            ("DATABASE_URL".into(), self.db.url_as("worker")),
            ("WORKER_LEASE_SECONDS".into(), "2".into()),
            // Spawned worker processes run as root here; the in-process worker ignores it.
            ("STEWARD_DEV_ALLOW_ROOT".into(), "1".into()),
        ]);
        for (name, value) in extra {
            vars.insert((*name).to_owned(), (*value).to_owned());
        }
        vars
    }

    /// Starts an in-process worker.
    pub async fn start_worker(&mut self, extra: &[(&str, &str)]) {
        let vars = self.worker_env(extra);
        let config =
            steward_worker::config::WorkerConfig::from_env(|name| vars.get(name).cloned()).expect("worker config");
        let http = reqwest::Client::new();
        let openai = config
            .openai
            .clone()
            .map(|endpoint| agent::openai::provider(endpoint, http.clone()));
        let mail = config.mail.clone().map(|accounts| {
            let service = mail_mcp::tools::MailService::connect(accounts, config.mail_endpoints.clone());
            std::sync::Arc::new(service.expect("mail client"))
        });
        let store = self.store_as("worker").await;
        let executor = agent::executor::Executor {
            store: if self.deaf { store.without_wakes() } else { store },
            providers: agent::executor::Providers::new(openai),
            http,
            mail,
            subscriptions: config.unsubscribe.is_some(),
            calls: config.calls.clone().map(std::sync::Arc::new),
            browser: self.browser.clone(),
            memory: self.memory || config.memory,
        };
        let task = tokio::spawn(agent::worker::run(config.settings, executor, std::future::pending()));
        self.workers.push(Abort(task));
    }

    /// Stops the in-process workers (a run they hold is left as it is).
    pub fn stop_workers(&mut self) {
        self.workers.clear();
    }

    /// Fires the schedules due at `at` as the schedule role does (at most 10), with the mail
    /// accounts' ids `accounts`.
    pub async fn fire(
        &self,
        at: jiff::Timestamp,
        accounts: Option<&domain::manifest::AccountIds>,
    ) -> Vec<store::Firing> {
        let store = self.db.store_as("schedule").await;
        store.fire_due(at, accounts, 10).await.expect("fire")
    }

    /// A store of `role` on this stack's clock.
    pub async fn store_as(&self, role: &str) -> store::Store {
        self.db.store_as(role).await.with_clock(self.clock.clone())
    }

    /// Creates a daily schedule over HTTP (07:00 Europe/London, a fresh session's agent version,
    /// the smoke limits) running `instruction` with `scopes`, with the members of `changes` put
    /// over that body; returns the schedule and when it next fires.
    pub async fn create_schedule(&self, instruction: &str, scopes: Value, changes: Value) -> (Value, jiff::Timestamp) {
        let session = self.session().await;
        let pinned = self.get(&format!("/v1/sessions/{session}")).await;
        let mut body = json!({
            "title": "Smoke schedule", "instruction": instruction, "agent_id": pinned["agent_id"],
            "agent_version": pinned["agent_version"], "policy_profile": "default", "requested_scopes": scopes,
            "limits": { "max_steps": 8, "max_model_calls": 8, "max_tool_calls": 8, "max_cost": "1" },
            "run_timeout_seconds": 300,
            "cadence": { "kind": "DAILY", "local_time": "07:00:00", "timezone": "Europe/London" },
            "misfire_grace_seconds": 60, "max_consecutive_failures": 3
        });
        for (name, value) in changes.as_object().into_iter().flatten() {
            body[name] = value.clone();
        }
        let response = self
            .request(Method::POST, "/v1/schedules")
            .header("idempotency-key", uuid::Uuid::new_v4().to_string())
            .json(&body)
            .send()
            .await
            .expect("send");
        let (status, created) = json(response).await;
        assert_eq!(status, 201, "{created}");
        let schedule = created["schedule"].clone();
        let due = schedule["next_fire_at"]
            .as_str()
            .expect("next fire")
            .parse()
            .expect("instant");
        (schedule, due)
    }

    /// Writes an owner-only key file and returns its path.
    pub fn key_file(&self, key: &str) -> String {
        let path = self.dir.path().join("model-key");
        testkit::write_private(&path, key);
        path.display().to_string()
    }

    pub fn request(&self, method: Method, path: &str) -> reqwest::RequestBuilder {
        self.client
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(&self.token)
    }

    pub async fn session(&self) -> String {
        let response = self
            .request(Method::POST, "/v1/sessions")
            .json(&json!({ "agent_id": "default" }))
            .send()
            .await
            .expect("send");
        assert_eq!(response.status(), 201);
        response.json::<Value>().await.expect("json")["session_id"]
            .as_str()
            .expect("id")
            .to_owned()
    }

    /// Submits `text` and returns the run id.
    pub async fn submit(&self, session: &str, text: &str) -> String {
        let response = self
            .request(Method::POST, &format!("/v1/sessions/{session}/messages"))
            .header("idempotency-key", uuid::Uuid::new_v4().to_string())
            .json(&json!({ "text": text }))
            .send()
            .await
            .expect("send");
        let (status, body) = json(response).await;
        assert_eq!(status, 202, "{body}");
        body["run"]["run_id"].as_str().expect("run id").to_owned()
    }

    /// The JSON body of a GET of `path`.
    pub async fn get(&self, path: &str) -> Value {
        json(self.request(Method::GET, path).send().await.expect("send"))
            .await
            .1
    }

    pub async fn run(&self, run: &str) -> Value {
        self.get(&format!("/v1/runs/{run}")).await
    }

    /// Polls the run until its state is one of `states`.
    pub async fn wait_for(&self, run: &str, states: &[&str]) -> Value {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let current = self.run(run).await;
            if states.iter().any(|state| current["state"] == *state) {
                return current;
            }
            if Instant::now() >= deadline {
                let events: Vec<String> = self
                    .events(current["session_id"].as_str().unwrap_or_default())
                    .await
                    .into_iter()
                    .map(|(kind, payload)| {
                        format!("{kind} {}", payload.to_string().chars().take(300).collect::<String>())
                    })
                    .collect();
                panic!(
                    "run never reached {states:?}: {current}\nevents:\n{}",
                    events.join("\n")
                );
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// Waits for the run to finish and asserts that it completed.
    /// Cancels `run` as the owner does; the HTTP status.
    pub async fn cancel(&self, run: &str) -> u16 {
        self.request(Method::POST, &format!("/v1/runs/{run}/cancel"))
            .send()
            .await
            .expect("cancel")
            .status()
            .as_u16()
    }

    pub async fn completes(&self, run: &str) -> Value {
        let done = self.wait_for(run, &["completed", "failed", "cancelled"]).await;
        assert_eq!(done["state"], "completed", "{done}");
        done
    }

    pub async fn pending_approvals(&self, session: &str) -> Vec<Value> {
        let body = self.get(&format!("/v1/sessions/{session}/approvals")).await;
        body["approvals"].as_array().expect("approvals").clone()
    }

    pub async fn decide(&self, approval: &str, decision: &str) -> Response {
        self.request(Method::POST, &format!("/v1/approvals/{approval}/decision"))
            .json(&json!({ "decision": decision }))
            .send()
            .await
            .expect("send")
    }

    /// Decides `approval` (an approval as listed) and asserts the decision was taken.
    pub async fn decide_ok(&self, approval: &Value, decision: &str) {
        let id = approval["approval_id"].as_str().expect("approval id");
        let (status, body) = json(self.decide(id, decision).await).await;
        assert_eq!(status, 200, "{body}");
    }

    /// The payload of the session's last assistant message.
    pub async fn reply(&self, session: &str) -> Value {
        let events = self.events(session).await;
        let (_, payload) = events
            .into_iter()
            .rev()
            .find(|(kind, _)| kind == "assistant.message")
            .expect("reply");
        payload
    }

    /// The payload of every `tool.result` event of the session, in order.
    pub async fn tool_results(&self, session: &str) -> Vec<Value> {
        let events = self.events(session).await;
        events
            .into_iter()
            .filter(|(kind, _)| kind == "tool.result")
            .map(|(_, payload)| payload)
            .collect()
    }

    /// The (status, code) of the session's first tool result.
    pub async fn first_outcome(&self, session: &str) -> (Option<String>, Option<String>) {
        let results = self.tool_results(session).await;
        let first = results.first().expect("a tool result");
        let text = |name: &str| first[name].as_str().map(str::to_owned);
        (text("status"), text("code"))
    }

    /// Every persisted event of the session: (kind, payload).
    pub async fn events(&self, session: &str) -> Vec<(String, Value)> {
        let rows: Vec<(String, Value)> =
            sqlx::query_as("SELECT kind, payload FROM events WHERE session_id = $1::uuid ORDER BY seq")
                .bind(session)
                .fetch_all(&self.db.pool)
                .await
                .expect("events");
        rows
    }

    pub async fn scalar<T>(&self, sql: &str) -> T
    where
        T: for<'r> sqlx::Decode<'r, sqlx::Postgres> + sqlx::Type<sqlx::Postgres> + Send + Unpin,
    {
        sqlx::query_scalar(sql).fetch_one(&self.db.pool).await.expect("scalar")
    }
}

pub async fn json(response: Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let bytes = response.bytes().await.expect("body");
    (
        status,
        if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).expect("json")
        },
    )
}

/// How the fake model answers: the script a [`FakeModel`] follows.
#[derive(Default)]
pub struct FakeState {
    /// Never answer the first request (a worker is killed while it waits).
    pub hold_first: bool,
    /// The tool call to make when the last message is not a tool result: (wire name, arguments).
    pub tool_call: Option<(String, String)>,
    /// How many copies of that call one response carries (default one).
    pub calls_per_response: usize,
}

/// A real HTTP server speaking the OpenAI Chat Completions streaming wire format.
pub type FakeModel = testkit::model::FakeModel;

/// Starts a model server following `script`.
pub async fn fake_model(script: FakeState) -> FakeModel {
    FakeModel::start(move |number, body| script.reply(number, body)).await
}

impl FakeState {
    pub fn reply(&self, number: usize, body: &Value) -> Reply {
        if self.hold_first && number == 1 {
            return Reply::held();
        }
        let last_role = body["messages"]
            .as_array()
            .and_then(|m| m.last())
            .map(|m| m["role"].clone())
            .unwrap_or_default();
        let mut frames = vec![
            json!({ "choices": [{ "index": 0, "delta": { "role": "assistant", "reasoning_content": "Thinking it over." } }] }),
        ];
        match (&self.tool_call, last_role.as_str()) {
            (Some((name, arguments)), Some(role)) if role != "tool" => {
                let thirds = [
                    &arguments[..arguments.len() / 3],
                    &arguments[arguments.len() / 3..2 * arguments.len() / 3],
                    &arguments[2 * arguments.len() / 3..],
                ];
                // Some servers repeat the id and name in every fragment.
                for index in 0..self.calls_per_response.max(1) {
                    let id = if index == 0 {
                        "call_abc".to_owned()
                    } else {
                        format!("call_abc_{index}")
                    };
                    for part in thirds {
                        frames.push(json!({ "choices": [{ "index": 0, "delta": { "tool_calls": [
                            { "index": index, "id": id, "type": "function", "function": { "name": name, "arguments": part } }] } }] }));
                    }
                }
                frames.extend([model::finish("tool_calls"), model::usage(50, 10)]);
            }
            _ => {
                frames.extend(["All", " done ✓", " — déjà."].map(model::content));
                frames.extend([model::finish("stop"), model::usage(100, 20)]);
            }
        }
        // Sent in 7-byte pieces: lines and multi-byte characters are split across network chunks.
        Reply::frames(frames).in_pieces(7)
    }
}

/// A webhook receiver that counts posts and, when holding, answers only once released.
pub struct FakeWebhook {
    pub url: String,
    pub hits: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    pub arrived: std::sync::Arc<tokio::sync::Notify>,
    pub release: std::sync::Arc<tokio::sync::Notify>,
    _server: testkit::Served,
}

impl FakeWebhook {
    pub async fn start(hold: bool) -> FakeWebhook {
        let hits = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let arrived = std::sync::Arc::new(tokio::sync::Notify::new());
        let release = std::sync::Arc::new(tokio::sync::Notify::new());
        let (counter, signal, gate) = (hits.clone(), arrived.clone(), release.clone());
        let app = axum::Router::new().route(
            "/hook",
            axum::routing::post(move || {
                let (counter, signal, gate) = (counter.clone(), signal.clone(), gate.clone());
                async move {
                    counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    signal.notify_one();
                    if hold {
                        gate.notified().await;
                    }
                    "ok"
                }
            }),
        );
        let served = testkit::serve(app).await;
        FakeWebhook {
            url: served.url("/hook"),
            hits,
            arrived,
            release,
            _server: served,
        }
    }
}

/// Waits for `notify`, failing the test after 20 seconds.
pub async fn arrival(notify: &tokio::sync::Notify, what: &str) {
    tokio::time::timeout(Duration::from_secs(20), notify.notified())
        .await
        .unwrap_or_else(|_| panic!("{what} never arrived"));
}

/// Reads the session's event stream until the server closes it: (id, event, data) per frame.
pub struct Stream {
    response: reqwest::Response,
    buffer: String,
}

impl Stream {
    pub async fn open(stack: &Stack, session: &str) -> Stream {
        let response = stack
            .request(Method::GET, &format!("/v1/sessions/{session}/events"))
            .send()
            .await
            .expect("send");
        assert_eq!(response.status(), 200);
        Stream {
            response,
            buffer: String::new(),
        }
    }

    /// The next frame, or `None` once the server closed the stream.
    pub async fn next(&mut self) -> Option<(Option<i64>, String, Value)> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let raw: String = self.buffer.drain(..end + 2).collect();
                let (mut id, mut event, mut data) = (None, String::new(), String::new());
                for line in raw.lines() {
                    if let Some(value) = line.strip_prefix("id:") {
                        id = value.trim().parse().ok();
                    } else if let Some(value) = line.strip_prefix("event:") {
                        event = value.trim().to_owned();
                    } else if let Some(value) = line.strip_prefix("data:") {
                        data.push_str(value.trim_start());
                    }
                }
                if event.is_empty() {
                    continue;
                }
                return Some((id, event, serde_json::from_str(&data).expect("json data")));
            }
            let chunk = tokio::time::timeout(Duration::from_secs(20), self.response.chunk())
                .await
                .expect("stream stalled");
            match chunk {
                Ok(Some(bytes)) => self.buffer.push_str(std::str::from_utf8(&bytes).expect("utf-8")),
                _ => return None,
            }
        }
    }
}
