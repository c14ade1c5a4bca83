//! `soak BASE TOKEN_FILE SECONDS DEMO_MAIL_DIR`: the load of `cargo xtask soak`, a day
//! compressed into `SECONDS` (quiet at its ends, busiest in its middle) while the xtask kills
//! roles and restarts PostgreSQL under it.
//!
//! - Conversations: four owners' clients, each in its own session, sending messages in turn that
//!   the offline model answers plainly, that propose `notes.add` (approved, or one in eight
//!   denied), or that ask the owner a question (answered; by one of them only after
//!   35 seconds, so its questions are pushed to the owner's phone, registered at the start).
//! - Schedules: one due each minute of the run, firing a run each.
//! - Email mode on the demo mailbox: refreshes, archives, and Review & Sends approved once.
//!
//! Every request is retried through an outage (a killed API, a database away) with the same
//! idempotency key where it has one, so a retry never repeats an effect; a flow that cannot
//! finish within its patience is counted, not hidden. At the end, what the provider stand-in
//! holds in Sent is counted against the sends the service reported (its baseline taken first).
//! Prints one JSON object of counts.

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use futures_util::StreamExt;
use serde_json::{Value, json};

use crate::{Api, Frames, number};

/// How long one request is retried through an outage before the flow gives up.
const PATIENCE: Duration = Duration::from_secs(90);
/// The conversation clients.
const OWNERS: usize = 4;

#[derive(Default)]
struct Tally {
    sessions: u64,
    runs: u64,
    runs_completed: u64,
    runs_not_completed: Vec<String>,
    approvals_approved: u64,
    approvals_denied: u64,
    questions_answered: u64,
    schedules: u64,
    refreshes: u64,
    archives: u64,
    sends_approved: u64,
    sends_sent: u64,
    sends_not_sent: Vec<String>,
    flows_abandoned: Vec<String>,
}

struct Soak {
    api: Arc<Api>,
    started: Instant,
    length: Duration,
    tally: Mutex<Tally>,
    retries: AtomicU64,
    keys: AtomicU64,
}

impl Soak {
    fn tally(&self) -> std::sync::MutexGuard<'_, Tally> {
        self.tally.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn over(&self) -> bool {
        self.started.elapsed() >= self.length
    }

    /// The pause between one client's actions: long at the day's ends, short in its middle.
    fn pause(&self, base: Duration) -> Duration {
        let phase = (self.started.elapsed().as_secs_f64() / self.length.as_secs_f64()).min(1.0);
        let busy = (std::f64::consts::PI * phase).sin().powi(2);
        base.div_f64(0.25 + 0.75 * busy)
    }

    fn key(&self) -> String {
        format!(
            "soak-{}-{}",
            std::process::id(),
            self.keys.fetch_add(1, Ordering::Relaxed)
        )
    }

    /// One request, retried through connection failures and `429`/`502`/`503`/`504` (a
    /// restarting API or a database away) for up to [`PATIENCE`]; any other answer is returned.
    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
        key: Option<&str>,
    ) -> anyhow::Result<(u16, Value)> {
        let deadline = Instant::now() + PATIENCE;
        let mut wait = Duration::from_millis(100);
        loop {
            let mut request = self
                .api
                .client
                .request(method.clone(), format!("{}{path}", self.api.base))
                .bearer_auth(&self.api.token)
                .timeout(Duration::from_secs(30));
            if let Some(body) = body {
                request = request.json(body);
            }
            if let Some(key) = key {
                request = request.header("idempotency-key", key);
            }
            let outcome = match request.send().await {
                Ok(response) if matches!(response.status().as_u16(), 429 | 502 | 503 | 504) => None,
                Ok(response) => {
                    let status = response.status().as_u16();
                    match response.bytes().await {
                        Ok(bytes) => Some((status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))),
                        Err(_) => None,
                    }
                }
                Err(_) => None,
            };
            if let Some(answer) = outcome {
                return Ok(answer);
            }
            if Instant::now() >= deadline {
                bail!("{method} {path}: no answer within {PATIENCE:?}");
            }
            self.retries.fetch_add(1, Ordering::Relaxed);
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(Duration::from_secs(2));
        }
    }

    async fn expect(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
        key: Option<&str>,
        status: u16,
    ) -> anyhow::Result<Value> {
        let (answered, value) = self.call(method.clone(), path, body, key).await?;
        if answered != status {
            bail!("{method} {path} answered {answered}: {value}");
        }
        Ok(value)
    }

    /// A new session with the default agent: its summary.
    async fn create_session(&self) -> anyhow::Result<Value> {
        let created = self
            .expect(
                reqwest::Method::POST,
                "/v1/sessions",
                Some(&json!({"agent_id": "default"})),
                None,
                201,
            )
            .await?;
        self.tally().sessions += 1;
        Ok(created)
    }

    async fn session(&self) -> anyhow::Result<String> {
        let created = self.create_session().await?;
        created["session_id"].as_str().map(str::to_owned).context("session id")
    }

    /// Polls until `check` finds what it waits for in `path`'s answer.
    async fn until<T>(&self, path: &str, what: &str, check: impl Fn(&Value) -> Option<T>) -> anyhow::Result<T> {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let (status, value) = self.call(reqwest::Method::GET, path, None, None).await?;
            if status == 200
                && let Some(found) = check(&value)
            {
                return Ok(found);
            }
            if Instant::now() >= deadline {
                bail!("{what}: not seen within {PATIENCE:?} ({status}: {value})");
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Waits for `run` to end; whether it completed.
    async fn ended(&self, run: &str) -> anyhow::Result<bool> {
        let state = self
            .until(&format!("/v1/runs/{run}"), "the run's end", |run| {
                let state = run["state"].as_str()?;
                matches!(state, "completed" | "failed" | "cancelled").then(|| state.to_owned())
            })
            .await?;
        let mut tally = self.tally();
        if state == "completed" {
            tally.runs_completed += 1;
        } else {
            tally.runs_not_completed.push(format!("{run}: {state}"));
        }
        Ok(state == "completed")
    }

    /// The question `run` asked, from the session's event stream (there is no listing of them).
    async fn question(&self, session: &str, run: &str) -> anyhow::Result<String> {
        let deadline = Instant::now() + PATIENCE;
        let mut after = 0;
        while Instant::now() < deadline {
            let Ok(response) = self.api.stream(session, after).await else {
                self.retries.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(300)).await;
                continue;
            };
            let mut body = response.bytes_stream();
            let mut frames = Frames::default();
            let read = tokio::time::timeout(Duration::from_secs(20), async {
                while let Some(Ok(chunk)) = body.next().await {
                    for frame in frames.push(&chunk) {
                        if let Some(id) = frame.id {
                            after = after.max(id);
                        }
                        if frame.event == "question.asked"
                            && let Ok(data) = serde_json::from_str::<Value>(&frame.data)
                            && data["payload"]["run_id"] == run
                            && let Some(question) = data["payload"]["question_id"].as_str()
                        {
                            return Some(question.to_owned());
                        }
                    }
                }
                None
            })
            .await;
            if let Ok(Some(question)) = read {
                return Ok(question);
            }
        }
        bail!("the question of run {run}: not seen within {PATIENCE:?}")
    }

    /// One owner's conversation until the day ends.
    async fn owner(self: Arc<Self>, index: usize) -> anyhow::Result<()> {
        let mut session = self.session().await?;
        let mut turn = index;
        while !self.over() {
            turn += 1;
            let key = self.key();
            let text = match turn % 5 {
                0 | 1 => format!(r#"/tool notes.add {{"text": "note {key}"}}"#),
                2 => format!("/ask When shall we meet ({key})?"),
                _ => format!("Hello from {key}"),
            };
            let submitted = self
                .call(
                    reqwest::Method::POST,
                    &format!("/v1/sessions/{session}/messages"),
                    Some(&json!({"text": text})),
                    Some(&key),
                )
                .await?;
            let run = match submitted {
                (202, value) => value["run"]["run_id"].as_str().context("run id")?.to_owned(),
                // A run left waiting by an abandoned flow holds the session: go on in a new one.
                (409, _) => {
                    session = self.session().await?;
                    continue;
                }
                (status, value) => bail!("submit answered {status}: {value}"),
            };
            self.tally().runs += 1;
            let flow = async {
                match turn % 5 {
                    0 | 1 => {
                        let path = format!("/v1/sessions/{session}/approvals");
                        let approval = self
                            .until(&path, "the approval", |listed| {
                                listed["approvals"].as_array()?.iter().find_map(|approval| {
                                    (approval["run_id"] == run.as_str())
                                        .then(|| approval["approval_id"].as_str().map(str::to_owned))?
                                })
                            })
                            .await?;
                        let approve = turn % 20 != 0;
                        let decision = if approve { "approve_once" } else { "deny" };
                        let (status, value) = self
                            .call(
                                reqwest::Method::POST,
                                &format!("/v1/approvals/{approval}/decision"),
                                Some(&json!({"decision": decision})),
                                None,
                            )
                            .await?;
                        // 409: a retry of a decision that was made before its answer was lost.
                        if status != 200 && value["code"] != "approval_already_resolved" {
                            bail!("the decision answered {status}: {value}");
                        }
                        let mut tally = self.tally();
                        if approve {
                            tally.approvals_approved += 1;
                        } else {
                            tally.approvals_denied += 1;
                        }
                    }
                    2 => {
                        let question = self.question(&session, &run).await?;
                        // One owner answers late: its questions are pushed to the phone first.
                        if index == OWNERS - 1 {
                            tokio::time::sleep(Duration::from_secs(35)).await;
                        }
                        let (status, value) = self
                            .call(
                                reqwest::Method::POST,
                                &format!("/v1/runs/{run}/input"),
                                Some(&json!({"question_id": question, "text": "Tomorrow at noon"})),
                                None,
                            )
                            .await?;
                        if status != 200 && value["code"] != "question_already_answered" {
                            bail!("the answer answered {status}: {value}");
                        }
                        self.tally().questions_answered += 1;
                    }
                    _ => {}
                }
                self.ended(&run).await
            };
            if let Err(error) = flow.await {
                self.tally().flows_abandoned.push(format!("run {run}: {error:#}"));
                session = self.session().await?;
            }
            tokio::time::sleep(self.pause(Duration::from_millis(1500))).await;
        }
        Ok(())
    }

    /// One schedule due each minute of the day (the first 20 to 80 seconds ahead, the last at
    /// least 40 seconds before the day ends, so each fires while the load runs), firing a plain
    /// run each.
    async fn schedules(&self) -> anyhow::Result<()> {
        let now = jiff::Timestamp::now();
        let soon = now
            .checked_add(jiff::SignedDuration::from_secs(80))?
            .to_zoned(jiff::tz::TimeZone::UTC);
        let first = soon.checked_sub(jiff::SignedDuration::from_secs(i64::from(soon.second())))?;
        let last = now
            .checked_add(jiff::SignedDuration::try_from(self.length)?)?
            .checked_sub(jiff::SignedDuration::from_secs(40))?;
        let version = self.agent_version().await?;
        for minute in 0.. {
            let at = first.checked_add(jiff::SignedDuration::from_mins(minute))?;
            if at.timestamp() > last {
                break;
            }
            let definition = json!({
                "title": format!("Soak {minute}"),
                "instruction": format!("Soak schedule {minute}"),
                "agent_id": "default",
                "agent_version": version,
                "policy_profile": "default",
                "requested_scopes": [],
                "limits": {"max_steps": 4, "max_model_calls": 4, "max_tool_calls": 4, "max_cost": "1"},
                "run_timeout_seconds": 300,
                "cadence": {"kind": "DAILY", "local_time": at.strftime("%H:%M:00").to_string(), "timezone": "UTC"},
                "misfire_grace_seconds": 3600,
                "max_consecutive_failures": 3,
            });
            self.expect(
                reqwest::Method::POST,
                "/v1/schedules",
                Some(&definition),
                Some(&self.key()),
                201,
            )
            .await?;
            self.tally().schedules += 1;
        }
        Ok(())
    }

    /// The default agent's version, as a session made with it records it.
    async fn agent_version(&self) -> anyhow::Result<String> {
        let created = self.create_session().await?;
        created["agent_version"]
            .as_str()
            .map(str::to_owned)
            .context("the default agent's version")
    }

    /// Email mode until the day ends: a refresh, an archive, and now and then a Review & Send.
    async fn email(self: Arc<Self>) -> anyhow::Result<()> {
        let mut round = 0u64;
        while !self.over() {
            round += 1;
            let (status, value) = self
                .call(reqwest::Method::POST, "/v1/email/accounts/demo/refresh", None, None)
                .await?;
            if status != 202 {
                bail!("refresh answered {status}: {value}");
            }
            if value["admitted"] == true {
                self.tally().refreshes += 1;
            }
            if let Err(error) = self.archive().await {
                self.tally().flows_abandoned.push(format!("archive: {error:#}"));
            }
            if round % 4 == 1
                && let Err(error) = self.send().await
            {
                self.tally().flows_abandoned.push(format!("send: {error:#}"));
            }
            tokio::time::sleep(self.pause(Duration::from_secs(5))).await;
        }
        Ok(())
    }

    async fn thread(&self, view: &str) -> anyhow::Result<Option<String>> {
        let listed = self
            .expect(
                reqwest::Method::GET,
                &format!("/v1/email/threads?view={view}&account_id=demo&limit=50"),
                None,
                None,
                200,
            )
            .await?;
        Ok(listed["threads"].as_array().and_then(|threads| {
            threads
                .iter()
                .find(|thread| thread["place"] == "inbox")
                .and_then(|thread| thread["thread_id"].as_str().map(str::to_owned))
        }))
    }

    async fn archive(&self) -> anyhow::Result<()> {
        let Some(thread) = self.thread("other").await? else {
            return Ok(());
        };
        let (status, value) = self
            .call(
                reqwest::Method::POST,
                &format!("/v1/email/threads/{thread}/archive"),
                None,
                None,
            )
            .await?;
        match status {
            202 => {
                self.tally().archives += 1;
                Ok(())
            }
            // A write on the thread is unsettled, or a retried archive already took it.
            409 | 422 => Ok(()),
            _ => bail!("archive answered {status}: {value}"),
        }
    }

    async fn send(&self) -> anyhow::Result<()> {
        let Some(thread) = self.thread("important").await? else {
            return Ok(());
        };
        let key = self.key();
        let draft = self
            .expect(
                reqwest::Method::POST,
                "/v1/email/drafts",
                Some(&json!({"thread_id": thread, "to": ["ada@example.com"], "subject": "Re: soak", "body": format!("Reply {key}")})),
                None,
                201,
            )
            .await?;
        let id = draft["draft_id"].as_str().context("draft id")?.to_owned();
        let revision = draft["revision"].clone();
        let path = format!("/v1/email/drafts/{id}");
        let (status, value) = self
            .call(
                reqwest::Method::POST,
                &format!("{path}/review"),
                Some(&json!({"revision": revision})),
                None,
            )
            .await?;
        if status != 202 {
            // A retry of a review whose answer was lost finds the draft already frozen.
            let (_, now) = self.call(reqwest::Method::GET, &path, None, None).await?;
            if now["send"]["revision"] != revision {
                bail!("the review answered {status}: {value}");
            }
        }
        let approval = self
            .until(&path, "the send's approval", |draft| {
                (draft["send"]["state"] == "awaiting_approval")
                    .then(|| draft["send"]["approval"]["approval_id"].as_str().map(str::to_owned))?
            })
            .await?;
        let (status, value) = self
            .call(
                reqwest::Method::POST,
                &format!("/v1/approvals/{approval}/decision"),
                Some(&json!({"decision": "approve_once"})),
                None,
            )
            .await?;
        if status != 200 && value["code"] != "approval_already_resolved" {
            bail!("the send's decision answered {status}: {value}");
        }
        self.tally().sends_approved += 1;
        let state = self
            .until(&path, "the send's end", |draft| {
                let state = draft["send"]["state"].as_str()?;
                matches!(state, "sent" | "outcome_unknown" | "unconfirmed" | "not_sent").then(|| state.to_owned())
            })
            .await?;
        let mut tally = self.tally();
        if state == "sent" {
            tally.sends_sent += 1;
        } else {
            tally.sends_not_sent.push(format!("{id}: {state}"));
        }
        Ok(())
    }
}

/// The messages in the demo mailbox's Sent, read from the stand-in as a mail client would.
async fn sent(client: &reqwest::Client, demo_dir: &str) -> anyhow::Result<u64> {
    let provider = std::fs::read_to_string(format!("{demo_dir}/provider.env")).context("read provider.env")?;
    let variable = |name: &str| {
        provider
            .lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix('='))
            .map(str::to_owned)
            .with_context(|| format!("provider.env has no {name}"))
    };
    let (base, token_url) = (variable("MAIL_API_BASE_URL")?, variable("MAIL_OAUTH_TOKEN_URL")?);
    let document: Value = serde_json::from_slice(
        &std::fs::read(format!("{demo_dir}/demo/mail-read.json")).context("read the demo read document")?,
    )?;
    let field = |name: &str| {
        document[name]
            .as_str()
            .map(str::to_owned)
            .with_context(|| format!("no {name}"))
    };
    let form = format!(
        "grant_type=refresh_token&client_id={}&client_secret={}&refresh_token={}",
        field("client_id")?,
        field("client_secret")?,
        field("refresh_token")?
    );
    let token: Value = client
        .post(token_url)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form)
        .send()
        .await?
        .json()
        .await?;
    let access = token["access_token"].as_str().context("no access token")?.to_owned();
    let mut count = 0;
    let mut page: Option<String> = None;
    loop {
        let mut url = format!("{base}/gmail/v1/users/me/messages?q=in:sent&maxResults=500");
        if let Some(page) = &page {
            url.push_str(&format!("&pageToken={page}"));
        }
        let listed: Value = client.get(url).bearer_auth(&access).send().await?.json().await?;
        count += listed["messages"].as_array().map_or(0, Vec::len) as u64;
        match listed["nextPageToken"].as_str() {
            Some(next) => page = Some(next.to_owned()),
            None => return Ok(count),
        }
    }
}

pub async fn soak(args: &[String]) -> anyhow::Result<Value> {
    let seconds = number(args, 2, "seconds")?;
    let demo_dir = args.get(3).context("missing DEMO_MAIL_DIR")?.clone();
    let api = Api::new(
        args.first().context("missing BASE")?,
        args.get(1).context("missing TOKEN_FILE")?,
        16,
    )?;
    let sent_before = sent(&api.client, &demo_dir).await?;
    let soak = Arc::new(Soak {
        api,
        started: Instant::now(),
        length: Duration::from_secs(seconds as u64),
        tally: Mutex::default(),
        retries: AtomicU64::new(0),
        keys: AtomicU64::new(0),
    });
    // The owner's phone, so what waits on the owner is pushed (through the xtask's stand-in).
    let device = json!({"client_device_id": "soak-phone", "push_token": "c0ffee".repeat(8), "environment": "sandbox"});
    let (status, value) = soak
        .call(reqwest::Method::POST, "/v1/devices", Some(&device), None)
        .await?;
    if !(200..300).contains(&status) {
        bail!("registering the device answered {status}: {value}");
    }
    soak.schedules().await?;
    let mut clients = tokio::task::JoinSet::new();
    for index in 0..OWNERS {
        clients.spawn(soak.clone().owner(index));
    }
    clients.spawn(soak.clone().email());
    let mut failures = Vec::new();
    while let Some(joined) = clients.join_next().await {
        match joined {
            Ok(Ok(())) => {}
            Ok(Err(error)) => failures.push(format!("{error:#}")),
            Err(error) => failures.push(format!("a client panicked: {error}")),
        }
    }
    let sent_after = sent(&soak.api.client, &demo_dir).await?;
    let tally = soak.tally();
    Ok(json!({
        "seconds": seconds,
        "sessions": tally.sessions,
        "runs": tally.runs,
        "runs_completed": tally.runs_completed,
        "runs_not_completed": tally.runs_not_completed,
        "approvals_approved": tally.approvals_approved,
        "approvals_denied": tally.approvals_denied,
        "questions_answered": tally.questions_answered,
        "schedules": tally.schedules,
        "refreshes": tally.refreshes,
        "archives": tally.archives,
        "sends_approved": tally.sends_approved,
        "sends_sent": tally.sends_sent,
        "sends_not_sent": tally.sends_not_sent,
        "provider_sent": sent_after.saturating_sub(sent_before),
        "retries": soak.retries.load(Ordering::Relaxed),
        "flows_abandoned": tally.flows_abandoned,
        "client_failures": failures,
    }))
}
