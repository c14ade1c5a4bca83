//! `steward chat`: a conversation in the terminal. Each message's run is followed on the
//! session's event stream: the answer is shown on standard output as its Markdown blocks
//! complete, and tool activity, approvals and questions on standard error. On a terminal,
//! approvals are answered inline (approve once or deny, with the whole arguments shown once their
//! cuts are proven) and questions are answered at a prompt; without one, they are left for
//! another client and the command keeps following the run. Ctrl-C asks before stopping the run.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::process::ExitCode;

use anyhow::{Context, bail};
use client::approvals::{self, Decided};
use client::bundles::{Bundler, Shown};
use client::{Client, Submitted, Update};
use uuid::Uuid;
use wire::event::{ApprovalRequested, CancelReason, Event, QuestionAsked};
use wire::request::SubmitMessage;

use crate::render::Answer;

/// Exit status of a run that failed.
pub const RUN_FAILED: u8 = 3;
/// Exit status of a run that was cancelled.
pub const RUN_CANCELLED: u8 = 4;
/// Exit status after an interrupt that stopped following (the shell's convention).
pub const INTERRUPTED: u8 = 130;

pub struct Options {
    pub session: Option<Uuid>,
    pub resume_latest: bool,
    pub message: Option<String>,
    pub agent: String,
}

/// How a run ended, as an exit status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    Completed,
    Failed,
    Cancelled,
    Interrupted,
}

impl Outcome {
    fn exit_code(self) -> ExitCode {
        match self {
            Outcome::Completed => ExitCode::SUCCESS,
            Outcome::Failed => ExitCode::from(RUN_FAILED),
            Outcome::Cancelled => ExitCode::from(RUN_CANCELLED),
            Outcome::Interrupted => ExitCode::from(INTERRUPTED),
        }
    }
}

/// Whether the owner can be asked: standard input and standard error are terminals.
fn attended() -> bool {
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

pub async fn run(client: &Client, options: Options) -> anyhow::Result<ExitCode> {
    let session = match (options.session, options.resume_latest) {
        (Some(session), _) => client.session(session).await?.summary.session_id,
        (None, true) => match client.latest_conversation().await? {
            Some(latest) => {
                crate::say!(
                    "Continuing “{}”",
                    latest.title.as_deref().unwrap_or("untitled conversation")
                );
                latest.session_id
            }
            None => bail!("there is no conversation to continue; start one with `steward chat`"),
        },
        (None, false) => client.create_session(&options.agent, None).await?.summary.session_id,
    };
    if let Some(message) = options.message {
        let outcome = send(client, session, &message).await?;
        return Ok(outcome.exit_code());
    }
    crate::say!("Conversation {session}. Type a message and press Return; /exit or Ctrl-D ends.");
    loop {
        if attended() {
            eprint!("› ");
        }
        let line = tokio::select! {
            line = read_line() => line?,
            _ = tokio::signal::ctrl_c() => return Ok(Outcome::Interrupted.exit_code()),
        };
        let Some(line) = line else {
            return Ok(ExitCode::SUCCESS);
        };
        let text = line.trim();
        if text.is_empty() {
            continue;
        }
        if text == "/exit" || text == "/quit" {
            return Ok(ExitCode::SUCCESS);
        }
        match send(client, session, text).await {
            Ok(Outcome::Interrupted) => return Ok(Outcome::Interrupted.exit_code()),
            Ok(_) => {}
            // The conversation goes on after a message that could not be sent or followed.
            Err(error) => crate::say!("steward: {}", crate::one_line(&error)),
        }
    }
}

/// A line of standard input; `None` at its end.
async fn read_line() -> anyhow::Result<Option<String>> {
    tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        let read = std::io::stdin().read_line(&mut line).context("read standard input")?;
        Ok(if read == 0 { None } else { Some(line) })
    })
    .await
    .context("read standard input")?
}

/// Sends one message and follows its run (or the run already active) to its end.
async fn send(client: &Client, session: Uuid, text: &str) -> anyhow::Result<Outcome> {
    let message = SubmitMessage {
        text: Some(text.to_owned()),
        attachments: Vec::new(),
    };
    let submitted = client.submit(session, &message).await?;
    let attached = matches!(submitted, Submitted::Attached(_));
    let run = match submitted {
        Submitted::Accepted(run) => *run,
        Submitted::Attached(run) => client.run(run).await?,
    };
    if attached {
        crate::say!("A reply is already being written in this conversation; showing it.");
    }
    // Everything after the run's own message belongs to the run.
    let after = run.message_seq.unwrap_or(0);
    let outcome = follow(client, session, run.run_id, after).await?;
    if attached && outcome != Outcome::Interrupted {
        bail!("your message was not sent: another reply was being written; send it again");
    }
    Ok(outcome)
}

/// What the owner is shown of one run.
struct Following<'a> {
    client: &'a Client,
    run: Uuid,
    answer: Answer,
    /// The model's proposed calls' arguments, by tool, whole: what approvals are checked against.
    proposed: HashMap<String, Vec<serde_json::Value>>,
    thinking: Option<indicatif::ProgressBar>,
    /// Approvals decided here, whose resolution needs no second line.
    decided: std::collections::HashSet<Uuid>,
    /// Tool lines gathered into bundles (client contract, Runtime 9).
    tools: Bundler<String>,
}

async fn follow(client: &Client, session: Uuid, run: Uuid, after: i64) -> anyhow::Result<Outcome> {
    let mut stream = client.follow(session, after, Some(run));
    let mut shown = Following {
        client,
        run,
        answer: Answer::new(std::io::stdout().is_terminal()),
        proposed: HashMap::new(),
        thinking: None,
        decided: std::collections::HashSet::new(),
        tools: Bundler::default(),
    };
    loop {
        let update = tokio::select! {
            update = stream.next() => update,
            _ = tokio::signal::ctrl_c() => {
                if shown.stop().await? {
                    continue;
                }
                return Ok(Outcome::Interrupted);
            }
        };
        let Some(update) = update else {
            bail!("the event stream ended before the run did");
        };
        shown.stop_thinking();
        match update? {
            Update::Delta { run_id, text } if run_id == run => shown.answer.delta(&text),
            Update::Reasoning { run_id } if run_id == run => shown.start_thinking(),
            Update::Delta { .. } | Update::Reasoning { .. } => {}
            Update::Event(frame) => {
                if let Some(outcome) = shown.event(frame.event).await? {
                    return Ok(outcome);
                }
            }
        }
    }
}

/// Prints tool lines: a lone call as it came, a bundle as one line.
fn show_tools(shown: Vec<Shown<String>>) {
    for shown in shown {
        match shown {
            Shown::Item(line) => crate::say!("{line}"),
            Shown::Bundle(bundle) => crate::say!("✓ {}", bundle.label()),
        }
    }
}

impl Following<'_> {
    fn start_thinking(&mut self) {
        if self.thinking.is_none() && std::io::stderr().is_terminal() {
            let spinner = indicatif::ProgressBar::new_spinner().with_message("Thinking…");
            spinner.enable_steady_tick(std::time::Duration::from_millis(120));
            self.thinking = Some(spinner);
        }
    }

    fn stop_thinking(&mut self) {
        if let Some(spinner) = self.thinking.take() {
            spinner.finish_and_clear();
        }
    }

    /// After Ctrl-C: asks, and stops the run if the owner says so. `Ok(true)`: keep following.
    async fn stop(&mut self) -> anyhow::Result<bool> {
        self.stop_thinking();
        if !attended() {
            return Ok(false);
        }
        // The terminal has echoed ^C: the question starts on a line of its own.
        crate::say!();
        let stop = tokio::task::spawn_blocking(|| {
            dialoguer::Confirm::new()
                .with_prompt("Stop this run?")
                .default(false)
                .interact_opt()
        })
        .await
        .context("ask")?
        .unwrap_or(None)
        .unwrap_or(false);
        if stop {
            match self.client.cancel_run(self.run).await {
                Ok(_) => crate::say!("Stopping…"),
                Err(error) if error.code() == Some("run_not_active") => {}
                Err(error) => return Err(error.into()),
            }
        }
        Ok(true)
    }

    /// Shows one persisted event; the outcome when it ends the run.
    async fn event(&mut self, event: Event) -> anyhow::Result<Option<Outcome>> {
        // Tool lines gather into bundles; anything else first shows what was gathered.
        match &event {
            Event::ToolResult(result) => {
                let line = match &result.code {
                    None => format!("✓ {} ({})", result.tool, result.status.as_str()),
                    Some(code) => format!("✗ {} ({}: {code})", result.tool, result.status.as_str()),
                };
                let shown = self.tools.call(line, &result.tool, result.status, result.risk);
                show_tools(shown);
                return Ok(None);
            }
            // A call of the tool being gathered may join its bundle: its start shows nothing.
            Event::ToolStarted(started) if self.tools.gathering() == Some(started.tool.as_str()) => return Ok(None),
            // A model step that only proposes calls shows no message, so it breaks nothing.
            Event::AssistantMessage(step) if step.text.trim().is_empty() => {}
            _ => show_tools(self.tools.finish()),
        }
        match event {
            Event::AssistantMessage(step) if step.run_id == self.run => {
                self.answer.finish(&step.text);
                for call in step.tool_calls {
                    self.proposed.entry(call.tool).or_default().push(call.arguments);
                }
            }
            Event::ToolStarted(started) => crate::say!("→ {}", started.tool),
            // Approved as it was recorded (a task permission covered it): nothing to decide; its
            // resolution follows.
            Event::ApprovalRequested(approval) if approval.status != domain::approval::ApprovalStatus::Pending => {
                self.decided.insert(approval.approval_id);
                crate::say!("{} allowed by the task permission", approval.tool);
            }
            Event::ApprovalRequested(approval) => self.approval(approval).await?,
            Event::ApprovalResolved(resolved) if self.decided.contains(&resolved.approval_id) => {}
            Event::ApprovalResolved(resolved) => {
                crate::say!(
                    "Approval for {}: {}",
                    resolved.tool,
                    resolved.status.as_str().to_lowercase()
                );
            }
            Event::QuestionAsked(question) => self.question(question).await?,
            Event::MailOutcomeUnknown(unknown) => crate::say!(
                "! The outcome of {} on {} is unknown ({}); it will not be repeated, only reconciled.",
                unknown.tool,
                unknown.account_id,
                unknown.code
            ),
            Event::MailReconciled(reconciled) => crate::say!(
                "Reconciled {} on {}: {}",
                reconciled.operation,
                reconciled.account_id,
                reconciled.state.as_str()
            ),
            Event::RunCompleted(ended) if ended.run_id == self.run => return Ok(Some(Outcome::Completed)),
            Event::RunFailed(ended) if ended.run_id == self.run => {
                crate::say!("The run failed: {} ({})", ended.detail, ended.code);
                return Ok(Some(Outcome::Failed));
            }
            Event::RunCancelled(ended) if ended.run_id == self.run => {
                match ended.reason {
                    CancelReason::Requested => crate::say!("The run was stopped."),
                    CancelReason::Deadline => {
                        crate::say!("The run was stopped at its deadline: it ran longer than its time limit allows.");
                    }
                    CancelReason::DraftChanged => crate::say!("The send was withdrawn: its draft changed."),
                }
                return Ok(Some(Outcome::Cancelled));
            }
            _ => {}
        }
        Ok(None)
    }

    async fn approval(&mut self, approval: ApprovalRequested) -> anyhow::Result<()> {
        // The model's proposal whose display is exactly this approval, when there is one.
        let proposals: Vec<serde_json::Value> = self.proposed.get(&approval.tool).cloned().unwrap_or_default();
        let checked = approvals::check_against_proposals(&approval.arguments, &approval.argument_digests, &proposals);
        crate::say!("\n{} wants approval ({} risk):", approval.tool, approval.risk.as_str());
        let arguments = match &checked {
            Ok(checked) => &checked.arguments,
            Err(_) => &approval.arguments,
        };
        crate::say!("{}", crate::render::approval_text(&approval.tool, arguments));
        match &checked {
            Ok(checked) if !approval.argument_digests.is_empty() && checked.whole => crate::say!(
                "  Shown whole: each shortened part matches its SHA-256 digest and the call Steward proposed."
            ),
            Ok(checked) => {
                for (pointer, digest) in &checked.cuts {
                    crate::say!("{}", crate::render::cut_note(pointer, digest));
                }
            }
            Err(_) => {}
        }
        if let Err(refused) = &checked {
            crate::say!("This approval cannot be approved: {refused}.");
        }
        if !attended() {
            crate::say!(
                "Waiting for a decision from another client (or `steward approvals approve {} --session …`).",
                approval.approval_id
            );
            return Ok(());
        }
        let approvable = checked.is_ok();
        let choice = tokio::task::spawn_blocking(move || {
            let items: &[&str] = if approvable {
                &["Approve once", "Deny"]
            } else {
                &["Deny", "Leave it pending"]
            };
            dialoguer::Select::new()
                .with_prompt("Decide")
                .items(items)
                .default(0)
                .interact_opt()
                .map(|choice| choice.map(|index| items[index]))
        })
        .await
        .context("ask")?
        .unwrap_or(None);
        let decided = match (choice, &checked) {
            (Some("Approve once"), Ok(checked)) => self.client.approve_once(approval.approval_id, checked).await?,
            (Some("Deny"), _) => self.client.deny(approval.approval_id).await?,
            _ => {
                crate::say!("Left pending: decide from another client, or press Ctrl-C to stop the run.");
                return Ok(());
            }
        };
        self.decided.insert(approval.approval_id);
        match decided {
            Decided::Decided(approval) => crate::say!("{}.", approval.status.as_str().to_lowercase()),
            Decided::AlreadyResolved(status) => crate::say!(
                "Already {} elsewhere; that decision stands.",
                status.as_str().to_lowercase()
            ),
        }
        Ok(())
    }

    async fn question(&mut self, question: QuestionAsked) -> anyhow::Result<()> {
        crate::say!("\nQuestion: {}", question.text);
        if !attended() {
            crate::say!("Waiting for an answer from another client.");
            return Ok(());
        }
        let answer = tokio::task::spawn_blocking(|| {
            dialoguer::Input::<String>::new()
                .with_prompt("Your answer")
                .interact_text()
        })
        .await
        .context("ask")?
        .context("read the answer")?;
        match self.client.answer(question.run_id, question.question_id, &answer).await {
            Ok(_) => {}
            Err(error) if error.code() == Some("question_not_pending") => {
                crate::say!("That question was already answered elsewhere.");
            }
            Err(error) => return Err(error.into()),
        }
        Ok(())
    }
}
