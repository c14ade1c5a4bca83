//! The built-in tools and what each may do. The roster an agent gets is fixed by its pinned
//! configuration; this box holds only tools in that roster.
//!
//! | Tool | Risk | Approval | Effect |
//! |---|---|---|---|
//! | `notes.list` | low | no | reads the owner's recent notes |
//! | `notes.add` | medium | yes | saves a note (at most one per invocation) |
//! | `owner.ask` | low | no | asks the owner a question; the run waits for the answer |
//! | `webhook.post` | high | yes | POSTs a JSON body to the agent's configured `webhook_url` |
//! | `schedule.create` | medium | yes | schedules this conversation's agent daily; never with scopes |
//! | `folders.list` | low | no | reads the folders and the unfiled conversations |
//! | `folders.propose` | low | no | proposes filing conversations; nothing moves until the owner accepts |
//! | `mcp.mail_*` | low / medium / high | writes and sends | the connected accounts' mail tools (`mail_mcp::tools`) |
//! | `subscriptions.list` | low | no | the subscription census (with unsubscribe assistance on) |
//! | `subscriptions.unsubscribe` | high | yes | one sender's unsubscribe; the approval names sender and destination |
//! | `calls.list`, `calls.place` | low / high | placing | calling (`call_tools`) |
//! | `browser.act` | high | changes, not reads | the conversation's website profile (`browser_tools`) |
//!
//! Every tool declares its scope. A scheduled run's box holds only the roster's tools whose scope
//! its schedule requested (today only the mail read and write scopes can be requested, so the
//! built-in tools are never in it); a roster tool it lacks is withheld, and reaching for one ends
//! the run with the schedule authorization failure.

use std::sync::Arc;
use std::time::Duration;

use domain::agent::AgentConfiguration;
use domain::approval::Risk;
use domain::folder::FolderName;
use domain::ids::{FolderId, PrincipalId, RunId, SessionId};
use mail_mcp::tools::{MailOutcome, MailService, Reconciliation};
use serde_json::{Value, json};
use store::{InvocationRow, LeftOut, ProposalTarget, Propose, Store};

use crate::browser_tools::BrowserTools;
use crate::call_tools::CallTools;
use crate::model::ToolSpec;

/// The question tool: handled by the executor, which parks the run.
pub const ASK_OWNER: &str = "owner.ask";
const NOTE_MAX_CHARS: usize = 10_000;
/// The most conversations one `folders.propose` call may name.
const PROPOSAL_MAX_SESSIONS: usize = 100;
/// The most unfiled conversations `folders.list` shows.
const FILING_LIST_LIMIT: u32 = 100;

pub use domain::approval::Tool;

fn catalog() -> Vec<Tool> {
    vec![
        Tool {
            name: "notes.list".into(),
            description: "List the owner's most recent notes.".into(),
            parameters: json!({ "type": "object", "properties": {}, "additionalProperties": false }),
            scope: "notes.read".into(),
            risk: Risk::Low,
            needs_approval: false,
        },
        Tool {
            name: "notes.add".into(),
            description: "Save a note for the owner. The owner approves each note first.".into(),
            parameters: json!({
                "type": "object",
                "properties": { "text": { "type": "string", "description": "The note" } },
                "required": ["text"], "additionalProperties": false
            }),
            scope: "notes.write".into(),
            risk: Risk::Medium,
            needs_approval: true,
        },
        Tool {
            name: ASK_OWNER.into(),
            description: "Ask the owner a question and wait for the answer.".into(),
            parameters: json!({
                "type": "object",
                "properties": { "question": { "type": "string" } },
                "required": ["question"], "additionalProperties": false
            }),
            scope: "owner.ask".into(),
            risk: Risk::Low,
            needs_approval: false,
        },
        Tool {
            name: "schedule.create".into(),
            description: "Create a daily schedule that runs an instruction with this agent. Schedules made here \
                          never get mail scopes; those are granted only through the schedules API."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "title": { "type": "string" },
                    "instruction": { "type": "string" },
                    "local_time": { "type": "string", "description": "HH:MM:SS" },
                    "timezone": { "type": "string", "description": "IANA time zone, e.g. Europe/London" }
                },
                "required": ["title", "instruction", "local_time", "timezone"]
            }),
            scope: "schedules.write".into(),
            risk: Risk::Medium,
            needs_approval: true,
        },
        Tool {
            name: "folders.list".into(),
            description: "List the owner's folders and the conversations not in any folder (most recent first), \
                          to choose what to propose filing."
                .into(),
            parameters: json!({ "type": "object", "properties": {}, "additionalProperties": false }),
            scope: "folders.read".into(),
            risk: Risk::Low,
            needs_approval: false,
        },
        Tool {
            name: "folders.propose".into(),
            description: "Propose filing conversations into an existing folder (folder_id) or a new one \
                          (folder_name). Nothing moves until the owner accepts; scheduled or filed conversations, \
                          and ones the owner declined for that folder, are left out."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "folder_id": { "type": "string", "description": "An existing folder's id, from folders.list" },
                    "folder_name": { "type": "string", "description": "A new folder's name, when no folder fits" },
                    "session_ids": {
                        "type": "array", "items": { "type": "string" }, "minItems": 1,
                        "maxItems": PROPOSAL_MAX_SESSIONS,
                        "description": "The conversations to file, from folders.list"
                    }
                },
                "required": ["session_ids"], "additionalProperties": false
            }),
            scope: "folders.propose".into(),
            risk: Risk::Low,
            needs_approval: false,
        },
        Tool {
            name: "webhook.post".into(),
            description: "Post a JSON body to the owner's configured webhook. The owner approves each post first."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": { "body": { "type": "object" } },
                "required": ["body"], "additionalProperties": false
            }),
            scope: "webhook.post".into(),
            risk: Risk::High,
            needs_approval: true,
        },
    ]
}

pub use crate::outcome::ToolOutcome;
use crate::outcome::failed;

/// The tools of one pinned configuration.
#[derive(Clone, Debug)]
pub struct Toolbox {
    tools: Vec<Tool>,
    /// Roster tools a scheduled run may not use, with the scope its schedule did not request.
    withheld: Vec<(String, String)>,
    webhook_url: Option<String>,
    http: reqwest::Client,
    mail: Option<Arc<MailService>>,
    calls: Option<Arc<CallTools>>,
    browser: Option<Arc<BrowserTools>>,
    session: SessionId,
}

/// What a run's tool box is built from.
#[derive(Clone, Copy, Debug)]
pub struct RunTools<'a> {
    /// The pinned configuration: its roster names every tool the run may have.
    pub configuration: &'a AgentConfiguration,
    /// A scheduled run's requested scopes; `None` for an interactive run.
    pub scheduled_scopes: Option<&'a [String]>,
    /// The run's session (the browser acts on its chosen profile).
    pub session: SessionId,
}

impl Toolbox {
    /// The tools of the pinned roster that this worker can run: the built-in ones, and the mail
    /// tools of the accounts it holds credentials for. A scheduled run keeps only those whose
    /// scope its schedule requested.
    ///
    /// `subscriptions` says whether this worker runs unsubscribe assistance, and `calls` whether
    /// it runs calling: without them, their tools are in no run's box, whatever a pinned roster
    /// says.
    pub fn for_run(
        run: RunTools<'_>,
        http: reqwest::Client,
        mail: Option<Arc<MailService>>,
        subscriptions: bool,
        calls: Option<Arc<CallTools>>,
        browser: Option<Arc<BrowserTools>>,
    ) -> Toolbox {
        let mail_tools = mail.iter().flat_map(|mail| mail.specs());
        let subscription_tools = if subscriptions {
            crate::subscription_tools::tools()
        } else {
            Vec::new()
        };
        let call_tools = if calls.is_some() {
            crate::call_tools::tools()
        } else {
            Vec::new()
        };
        let browser_tools = if browser.is_some() {
            crate::browser_tools::tools()
        } else {
            Vec::new()
        };
        let (tools, withheld): (Vec<Tool>, Vec<Tool>) = catalog()
            .into_iter()
            .chain(mail_tools)
            .chain(subscription_tools)
            .chain(call_tools)
            .chain(browser_tools)
            .filter(|tool| run.configuration.tools.contains(&tool.name))
            .partition(|tool| run.scheduled_scopes.is_none_or(|scopes| scopes.contains(&tool.scope)));
        Toolbox {
            tools,
            withheld: withheld.into_iter().map(|tool| (tool.name, tool.scope)).collect(),
            webhook_url: run.configuration.webhook_url.clone(),
            http,
            mail,
            calls,
            browser,
            session: run.session,
        }
    }

    /// A model's call as it is recorded: `calls.place` gets the call configuration's revision
    /// pinned into its arguments (so its approval shows it), a `browser.act` that changes
    /// something what its approval shows of the page; everything else is unchanged.
    pub async fn pin(&self, run: RunId, tool: &str, arguments: &Value) -> Value {
        if self.get(tool).is_none() {
            return arguments.clone();
        }
        match (&self.calls, &self.browser) {
            (Some(calls), _) if tool == crate::call_tools::PLACE => calls.pin(tool, arguments),
            (_, Some(browser)) if tool == crate::browser_tools::ACT => browser.pin(run, arguments).await,
            _ => arguments.clone(),
        }
    }

    /// Whether this call waits for the owner (its tool's rule; a browser read does not).
    pub fn needs_approval(&self, invocation: &InvocationRow) -> bool {
        match self.get(&invocation.tool) {
            Some(tool) if tool.name == crate::browser_tools::ACT => {
                crate::browser_tools::needs_approval(&invocation.arguments)
            }
            Some(tool) => tool.needs_approval,
            None => true,
        }
    }

    /// The browser this box acts with, when `browser.act` is in it.
    pub fn browser(&self) -> Option<&BrowserTools> {
        self.browser
            .as_deref()
            .filter(|_| self.get(crate::browser_tools::ACT).is_some())
    }

    pub fn get(&self, name: &str) -> Option<&Tool> {
        self.tools.iter().find(|tool| tool.name == name)
    }

    /// The scope a scheduled run lacks for `name`, when `name` is a roster tool withheld from it.
    pub fn withheld_scope(&self, name: &str) -> Option<&str> {
        self.withheld
            .iter()
            .find(|(tool, _)| tool == name)
            .map(|(_, scope)| scope.as_str())
    }

    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools
            .iter()
            .map(|tool| ToolSpec {
                name: tool.name.clone(),
                description: tool.description.clone(),
                parameters: tool.parameters.clone(),
            })
            .collect()
    }

    /// What reconciling `invocation` needs when it is a mail write or send of this box.
    pub fn reconciliation_for(&self, invocation: &InvocationRow) -> Option<Reconciliation> {
        self.get(&invocation.tool)?;
        self.mail.as_ref()?.reconciliation_for(&invocation.tool, invocation.id)
    }

    /// Checks `invocation`'s arguments before its approval is asked for (mail writes and sends
    /// must be a message that can be made); other tools pass.
    pub fn check_arguments(&self, invocation: &InvocationRow) -> Result<(), String> {
        crate::subscription_tools::check_arguments(&invocation.tool, &invocation.arguments)?;
        if let Some(calls) = &self.calls {
            calls.check_arguments(&invocation.tool, &invocation.arguments)?;
        }
        if invocation.tool == crate::browser_tools::ACT {
            crate::browser_tools::check_arguments(&invocation.arguments)?;
        }
        match &self.mail {
            Some(mail) => mail.check_arguments(&invocation.tool, &invocation.arguments),
            None => Ok(()),
        }
    }

    /// Runs a tool of this box (never `owner.ask`, which parks the run instead).
    pub async fn execute(&self, store: &Store, principal: &PrincipalId, invocation: &InvocationRow) -> ToolOutcome {
        if self.get(&invocation.tool).is_none() {
            return failed("tool.unknown", format!("no tool `{}` is available", invocation.tool));
        }
        match invocation.tool.as_str() {
            "schedule.create" => return create_schedule(store, principal, invocation).await,
            "folders.list" => return filing_overview(store, principal).await,
            "folders.propose" => return propose_folder(store, principal, invocation).await,
            crate::subscription_tools::LIST | crate::subscription_tools::UNSUBSCRIBE => {
                return crate::subscription_tools::execute(store, &invocation.tool, &invocation.arguments).await;
            }
            crate::call_tools::LIST | crate::call_tools::PLACE => {
                return match &self.calls {
                    Some(calls) => calls.execute(store, principal, invocation).await,
                    None => failed("tool.unknown", format!("no tool `{}` is available", invocation.tool)),
                };
            }
            crate::browser_tools::ACT => {
                return match &self.browser {
                    Some(browser) => browser.execute(store, self.session, invocation).await,
                    None => failed("tool.unknown", format!("no tool `{}` is available", invocation.tool)),
                };
            }
            _ => {}
        }
        if let Some(mail) = self.mail.as_ref().filter(|mail| mail.tool(&invocation.tool).is_some()) {
            return match mail
                .execute(&invocation.tool, &invocation.arguments, invocation.id)
                .await
            {
                MailOutcome::Succeeded(value) => ToolOutcome::Succeeded(value),
                MailOutcome::Failed { code, message } => ToolOutcome::Failed { code, message },
                MailOutcome::Uncertain {
                    message,
                    reconciliation,
                } => ToolOutcome::Uncertain {
                    code: "mail.outcome_unknown",
                    message,
                    reconciliation: Some(reconciliation),
                },
            };
        }
        let arguments = &invocation.arguments;
        match invocation.tool.as_str() {
            "notes.list" => match store.recent_notes(principal, 50).await {
                Ok(notes) => ToolOutcome::Succeeded(json!({ "notes": notes })),
                Err(error) => failed("tool.storage", error.to_string()),
            },
            "notes.add" => {
                let Some(text) = arguments["text"]
                    .as_str()
                    .map(str::trim)
                    .filter(|text| !text.is_empty())
                else {
                    return failed("tool.invalid_arguments", "`text` must be a non-empty string");
                };
                if text.chars().count() > NOTE_MAX_CHARS {
                    return failed("tool.invalid_arguments", "a note is at most 10000 characters");
                }
                match store.add_note(principal, text, invocation.id).await {
                    Ok(id) => ToolOutcome::Succeeded(json!({ "note_id": id.to_string() })),
                    // The insert may have committed before the connection failed.
                    Err(error) => ToolOutcome::Uncertain {
                        code: "tool.outcome_unknown",
                        message: error.to_string(),
                        reconciliation: None,
                    },
                }
            }
            "webhook.post" => self.post_webhook(arguments).await,
            other => failed("tool.unknown", format!("no tool `{other}` is available")),
        }
    }

    async fn post_webhook(&self, arguments: &Value) -> ToolOutcome {
        let Some(url) = &self.webhook_url else {
            return failed("tool.not_configured", "no webhook is configured for this agent");
        };
        let Some(body) = arguments.get("body").filter(|body| body.is_object()) else {
            return failed("tool.invalid_arguments", "`body` must be a JSON object");
        };
        let sent = self
            .http
            .post(url)
            .json(body)
            .timeout(Duration::from_secs(30))
            .send()
            .await;
        match sent {
            Ok(response) if response.status().is_success() => {
                ToolOutcome::Succeeded(json!({ "status": response.status().as_u16() }))
            }
            Ok(response) if response.status().is_client_error() => failed(
                "webhook.rejected",
                format!("the webhook refused the post with HTTP {}", response.status().as_u16()),
            ),
            Ok(response) => ToolOutcome::Uncertain {
                code: "tool.outcome_unknown",
                message: format!(
                    "the webhook answered HTTP {}; the post may have taken effect",
                    response.status().as_u16()
                ),
                reconciliation: None,
            },
            // A refused connection proves nothing was sent; anything later might have been.
            Err(error) if error.is_connect() => failed(
                "webhook.unreachable",
                "the webhook could not be reached; nothing was sent",
            ),
            Err(error) => {
                // The URL is the owner's secret (webhook URLs often carry a token): never logged.
                let error = error.without_url();
                tracing::warn!(%error, "the webhook did not answer");
                ToolOutcome::Uncertain {
                    code: "tool.outcome_unknown",
                    message: "the webhook did not answer; the post may have taken effect".to_owned(),
                    reconciliation: None,
                }
            }
        }
    }
}

/// `schedule.create`: a schedule pinned to the conversation's agent version, always with an empty
/// `requested_scopes` (mail scopes are granted only through the schedules API). The invocation
/// id is the idempotency key, so a repeated dispatch cannot create a second schedule.
async fn create_schedule(store: &Store, principal: &PrincipalId, invocation: &InvocationRow) -> ToolOutcome {
    let arguments = &invocation.arguments;
    let field = |name: &str| {
        arguments[name]
            .as_str()
            .map(str::trim)
            .filter(|value| !value.is_empty())
    };
    let (Some(title), Some(instruction), Some(local_time), Some(timezone)) = (
        field("title"),
        field("instruction"),
        field("local_time"),
        field("timezone"),
    ) else {
        return failed(
            "tool.invalid_arguments",
            "title, instruction, local_time and timezone are required",
        );
    };
    // The rules of the owner's own titles (`POST /v1/schedules`): visible text, no control
    // characters anywhere (the raw value, before trimming), at most 200 characters.
    let raw_title = arguments["title"].as_str().unwrap_or_default();
    if !domain::text::is_visible(raw_title) || raw_title.chars().count() > 200 {
        return failed(
            "tool.invalid_arguments",
            "title must be 1 to 200 characters, not blank, without control characters",
        );
    }
    let Some(time) = domain::cadence::parse_local_time(local_time) else {
        return failed("tool.invalid_arguments", "local_time must be HH:MM:SS");
    };
    let Ok(zone) = jiff::tz::TimeZone::get(timezone) else {
        return failed("tool.invalid_arguments", "timezone must be an IANA time zone");
    };
    let session = match store.run_session(invocation.run_id).await {
        Ok(Some(session)) => session,
        Ok(None) => return failed("tool.storage", "the conversation is gone"),
        Err(error) => return failed("tool.storage", error.to_string()),
    };
    let key = match domain::idempotency::IdempotencyKey::parse(&format!("tool-{}", invocation.id)) {
        Ok(key) => key,
        Err(_) => return failed("tool.storage", "cannot form an idempotency key"),
    };
    let hash = invocation.id.to_string();
    let next_fire_at = domain::cadence::Daily { local_time: time, zone }.next_after(jiff::Timestamp::now());
    let limits = domain::run::RunLimits::default();
    let created = store
        .create_schedule(
            store::NewSchedule {
                principal,
                title,
                instruction,
                agent_id: &session.agent_id,
                agent_version: session.agent_version.as_str(),
                policy_profile: "default",
                requested_scopes: &[],
                limits,
                wait_timeout_seconds: domain::run::DEFAULT_WAIT_TIMEOUT_SECONDS,
                local_time,
                timezone,
                misfire_grace_seconds: 60,
                max_consecutive_failures: 3,
                next_fire_at,
                idempotency: store::IdempotencyClaim {
                    key: &key,
                    operation: "schedule.create.tool",
                    request_hash: &hash,
                },
            },
            |row| {
                Ok(store::StoredResponse {
                    status: 201,
                    body: row.id.to_string().into_bytes(),
                })
            },
        )
        .await;
    match created {
        Ok(store::CreateSchedule::Created { schedule, .. }) => ToolOutcome::Succeeded(json!({
            "schedule_id": schedule.id.to_string(),
            "next_fire_at": schedule.next_fire_at.map(|at| at.to_string()),
            "requested_scopes": schedule.requested_scopes,
        })),
        Ok(store::CreateSchedule::Earlier(store::Prior::Replay(response))) => {
            ToolOutcome::Succeeded(json!({ "schedule_id": String::from_utf8_lossy(&response.body) }))
        }
        Ok(other) => failed("tool.storage", format!("the schedule was not created: {other:?}")),
        Err(error) => ToolOutcome::Uncertain {
            code: "tool.outcome_unknown",
            message: error.to_string(),
            reconciliation: None,
        },
    }
}

/// `folders.list`: the folders and the conversations that could be filed.
async fn filing_overview(store: &Store, principal: &PrincipalId) -> ToolOutcome {
    match store.filing_overview(principal, FILING_LIST_LIMIT).await {
        Ok(overview) => ToolOutcome::Succeeded(json!({
            "folders": overview.folders.into_iter().map(|(id, name)| json!({
                "folder_id": id.to_string(), "name": name
            })).collect::<Vec<_>>(),
            "unfiled_conversations": overview.unfiled.into_iter().map(|(id, title)| json!({
                "session_id": id.to_string(), "title": title
            })).collect::<Vec<_>>(),
        })),
        Err(error) => failed("tool.storage", error.to_string()),
    }
}

/// `folders.propose`: records a proposal for the owner; files nothing. The invocation id makes a
/// repeated dispatch find the first proposal instead of making a second.
async fn propose_folder(store: &Store, principal: &PrincipalId, invocation: &InvocationRow) -> ToolOutcome {
    let arguments = &invocation.arguments;
    let folder_id = arguments.get("folder_id").filter(|value| !value.is_null());
    let folder_name = arguments.get("folder_name").filter(|value| !value.is_null());
    let name;
    let target = match (folder_id, folder_name) {
        (Some(id), None) => match id.as_str().and_then(FolderId::parse) {
            Some(id) => ProposalTarget::Folder(id),
            None => {
                return failed(
                    "tool.invalid_arguments",
                    "`folder_id` must be a folder id from folders.list",
                );
            }
        },
        (None, Some(text)) => {
            name = match text.as_str().map(FolderName::parse) {
                Some(Ok(name)) => name,
                Some(Err(error)) => return failed("tool.invalid_arguments", format!("`folder_name`: {error}")),
                None => return failed("tool.invalid_arguments", "`folder_name` must be a string"),
            };
            ProposalTarget::NewFolder(&name)
        }
        _ => {
            return failed(
                "tool.invalid_arguments",
                "give exactly one of `folder_id` and `folder_name`",
            );
        }
    };
    let Some(ids) = arguments["session_ids"].as_array().filter(|ids| !ids.is_empty()) else {
        return failed("tool.invalid_arguments", "`session_ids` must be a non-empty array");
    };
    if ids.len() > PROPOSAL_MAX_SESSIONS {
        return failed(
            "tool.invalid_arguments",
            format!("propose at most {PROPOSAL_MAX_SESSIONS} conversations at once"),
        );
    }
    let Some(sessions) = ids
        .iter()
        .map(|id| id.as_str().and_then(SessionId::parse))
        .collect::<Option<Vec<_>>>()
    else {
        return failed(
            "tool.invalid_arguments",
            "every `session_ids` entry must be a conversation id",
        );
    };
    let left_out = |left_out: Vec<(SessionId, LeftOut)>| {
        left_out
            .into_iter()
            .map(|(id, reason)| json!({ "session_id": id.to_string(), "reason": reason.as_str() }))
            .collect::<Vec<_>>()
    };
    match store.propose_folder(principal, target, &sessions, invocation.id).await {
        Ok(Propose::Proposed {
            proposal,
            left_out: out,
        }) => ToolOutcome::Succeeded(json!({
            "proposal_id": proposal.id.to_string(),
            "folder_id": proposal.folder_id.map(|id| id.to_string()),
            "folder_name": proposal.name,
            "session_ids": proposal.session_ids.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "left_out": left_out(out),
            "note": "Nothing is filed until the owner accepts the proposal.",
        })),
        Ok(Propose::Earlier(id)) => ToolOutcome::Succeeded(json!({ "proposal_id": id.to_string() })),
        Ok(Propose::Nothing(out)) => ToolOutcome::Failed {
            code: "folders.nothing_to_propose",
            message: json!({
                "message": "none of these conversations can be proposed",
                "left_out": left_out(out),
            })
            .to_string(),
        },
        Ok(Propose::FolderNotFound) => failed("folders.folder_not_found", "no folder has this id"),
        Ok(Propose::TooManyPending) => failed(
            "folders.too_many_pending",
            format!(
                "{} proposals already wait for the owner; propose more once they are settled",
                store::MAX_PENDING_PROPOSALS
            ),
        ),
        Err(error) => ToolOutcome::Uncertain {
            code: "tool.outcome_unknown",
            message: error.to_string(),
            reconciliation: None,
        },
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    use super::*;

    /// Log lines, kept for reading.
    #[derive(Clone, Default)]
    struct Lines(Arc<Mutex<Vec<u8>>>);

    impl Write for Lines {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("lock").extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[tokio::test]
    async fn a_webhook_that_does_not_answer_is_logged_without_its_url() {
        // A webhook that reads the request and hangs up without answering.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("address").port();
        tokio::spawn(async move {
            if let Ok((mut stream, _)) = listener.accept().await {
                let mut buffer = [0_u8; 4096];
                let _ = tokio::io::AsyncReadExt::read(&mut stream, &mut buffer).await;
            }
        });
        let url = format!("http://127.0.0.1:{port}/hooks/T0KEN-s3cret-path");
        let toolbox = Toolbox {
            tools: Vec::new(),
            withheld: Vec::new(),
            webhook_url: Some(url),
            http: reqwest::Client::new(),
            mail: None,
            calls: None,
            browser: None,
            session: SessionId::from_uuid(uuid::Uuid::nil()),
        };
        let lines = Lines::default();
        let writer = lines.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        let _guard = tracing::subscriber::set_default(subscriber);
        let outcome = toolbox.post_webhook(&json!({"body": {"a": 1}})).await;
        assert!(matches!(outcome, ToolOutcome::Uncertain { .. }), "{outcome:?}");
        let logged = String::from_utf8(lines.0.lock().expect("lock").clone()).expect("utf-8");
        assert!(logged.contains("the webhook did not answer"), "{logged}");
        assert!(!logged.contains("s3cret") && !logged.contains("127.0.0.1"), "{logged}");
    }
}
