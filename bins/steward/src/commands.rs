//! The commands other than chat: connecting and forgetting, and one command per resource. Each
//! prints text for people, or with `--json` the API's own shapes for scripts; progress bars show
//! only on a terminal.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};
use clap::Subcommand;
use client::Client;
use client::approvals::{self, Decided};
use serde::Serialize;
use uuid::Uuid;
use wire::request::SaveModelSettings;

use crate::{connection, out};

fn print_json(value: &impl Serialize) -> anyhow::Result<ExitCode> {
    let text = serde_json::to_string_pretty(value).context("encode JSON")?;
    // JSON's own escapes keep the value a script reads; `out!` then finds nothing to change.
    out!("{}", crate::visible::json(&text));
    Ok(ExitCode::SUCCESS)
}

/// Prints a list: as JSON, or each item as the text `show` makes of it (and `empty` when there
/// is none, if given).
fn listed<T: Serialize>(
    json: bool,
    items: &[T],
    empty: Option<&str>,
    show: impl Fn(&T) -> String,
) -> anyhow::Result<ExitCode> {
    if json {
        return print_json(&items);
    }
    if let (true, Some(empty)) = (items.is_empty(), empty) {
        out!("{empty}");
    }
    for item in items {
        out!("{}", show(item));
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_downloaded_file_is_named_by_its_last_component_and_never_hidden() {
        assert_eq!(local_name("report.pdf"), PathBuf::from("report.pdf"));
        assert_eq!(local_name("../../etc/passwd"), PathBuf::from("passwd"));
        assert_eq!(local_name(".bashrc"), PathBuf::from("attachment"));
        assert_eq!(local_name(".."), PathBuf::from("attachment"));
    }
}

/// Reports a change that has nothing more to show: `{key: id}` as JSON, else `text`.
fn done(json: bool, key: &str, id: Uuid, text: &str) -> anyhow::Result<ExitCode> {
    if json {
        return print_json(&serde_json::json!({ key: id }));
    }
    out!("{text}");
    Ok(ExitCode::SUCCESS)
}

/// A client for the saved connection.
pub fn connected() -> anyhow::Result<Client> {
    let (connection, token) = connection::load_with_token()?;
    Ok(Client::new(&connection.base_url, token)?)
}

/// Reads the token: without echo from a terminal, else the first line of standard input.
fn read_token() -> anyhow::Result<String> {
    let token = if std::io::stdin().is_terminal() {
        dialoguer::Password::new()
            .with_prompt("API token")
            .interact()
            .context("read the token")?
    } else {
        let mut line = String::new();
        std::io::stdin()
            .read_line(&mut line)
            .context("read the token from standard input")?;
        line
    };
    let token = token.trim().to_owned();
    if token.is_empty() {
        bail!("no token was given");
    }
    Ok(token)
}

#[derive(Serialize)]
struct Connected {
    base_url: String,
    token_store: connection::TokenStore,
    scopes: Vec<String>,
}

pub async fn connect(url: &str, json: bool) -> anyhow::Result<ExitCode> {
    let base = client::base_url(url)?;
    let token = tokio::task::spawn_blocking(read_token)
        .await
        .context("read the token")??;
    let client = Client::new(base.as_str(), token.clone())?;
    let credential = client.credential().await?;
    let base_url = base.as_str().to_owned();
    let saved = tokio::task::spawn_blocking(move || connection::save(&base_url, &token))
        .await
        .context("keep the token")??;
    let connected = Connected {
        base_url: saved.base_url,
        token_store: saved.token_store,
        scopes: credential.scopes,
    };
    if json {
        return print_json(&connected);
    }
    out!(
        "Connected to {} (scopes: {}).",
        connected.base_url,
        connected.scopes.join(", ")
    );
    Ok(ExitCode::SUCCESS)
}

pub async fn forget(json: bool) -> anyhow::Result<ExitCode> {
    let Some(saved) = connection::load()? else {
        if json {
            return print_json(&serde_json::json!({ "forgotten": null }));
        }
        out!("Not connected; nothing to forget.");
        return Ok(ExitCode::SUCCESS);
    };
    // Revocation is tried first, but the local token goes even when it fails.
    let revoked = match connection::read_token(&saved) {
        Ok(token) => match Client::new(&saved.base_url, token) {
            Ok(client) => client.revoke_device(&saved.client_device_id).await,
            Err(error) => Err(error),
        },
        Err(_) => Ok(false),
    };
    let cleared = {
        let saved = saved.clone();
        tokio::task::spawn_blocking(move || connection::clear(&saved))
            .await
            .context("clear the token")?
    };
    if let Err(error) = &revoked {
        crate::say!("steward: the server could not be asked to revoke this device: {error}");
    }
    cleared?;
    if json {
        return print_json(&serde_json::json!({
            "forgotten": saved.base_url,
            "device_revoked": revoked.unwrap_or(false),
        }));
    }
    out!("Forgot the connection to {}.", saved.base_url);
    Ok(ExitCode::SUCCESS)
}

#[derive(Subcommand)]
pub enum SessionsAction {
    /// Every conversation, most recent first (the default).
    List,
    /// Delete a conversation (irreversible).
    Delete { session: Uuid },
}

/// What the command says to a server without the history routes: an older release.
const UPGRADE: &str =
    "this server runs an older Steward without conversation history: upgrade it to list and delete conversations";

/// `error`, or the upgrade message when the server lacks the route.
fn history_error(error: client::ClientError) -> anyhow::Error {
    if error.missing_route() {
        anyhow::anyhow!(UPGRADE)
    } else {
        error.into()
    }
}

pub async fn sessions(client: &Client, action: Option<SessionsAction>, json: bool) -> anyhow::Result<ExitCode> {
    match action.unwrap_or(SessionsAction::List) {
        SessionsAction::List => {
            let mut sessions = client.sessions().await.map_err(history_error)?;
            sessions.sort_by_key(|session| std::cmp::Reverse(session.updated_at));
            listed(json, &sessions, None, |session| {
                let kind = if session.schedule_id.is_some() {
                    " (scheduled)"
                } else {
                    ""
                };
                format!(
                    "{}  {}  {}{kind}",
                    session.session_id,
                    session.updated_at.strftime("%Y-%m-%d %H:%M"),
                    session.title.as_deref().unwrap_or("untitled")
                )
            })
        }
        SessionsAction::Delete { session } => {
            client.delete_session(session).await.map_err(history_error)?;
            done(json, "deleted", session, &format!("Deleted {session}."))
        }
    }
}

#[derive(Subcommand)]
pub enum FoldersAction {
    /// Every folder (the default).
    List,
    Create {
        name: String,
    },
    Rename {
        folder: Uuid,
        name: String,
    },
    /// Delete a folder; its conversations return to the history.
    Delete {
        folder: Uuid,
    },
    /// File a conversation into a folder, or back into the history without one.
    File {
        session: Uuid,
        folder: Option<Uuid>,
    },
}

pub async fn folders(client: &Client, action: Option<FoldersAction>, json: bool) -> anyhow::Result<ExitCode> {
    let changed = match action.unwrap_or(FoldersAction::List) {
        FoldersAction::List => {
            let folders = client.folders().await?;
            return listed(json, &folders, None, |folder| {
                format!("{}  {}", folder.folder_id, folder.name)
            });
        }
        FoldersAction::Create { name } => client.create_folder(&name).await?,
        FoldersAction::Rename { folder, name } => client.rename_folder(folder, &name).await?,
        FoldersAction::Delete { folder } => {
            client.delete_folder(folder).await?;
            return done(json, "deleted", folder, &format!("Deleted folder {folder}."));
        }
        FoldersAction::File { session, folder } => {
            let session = client.file_session(session, folder).await?;
            if json {
                return print_json(&session);
            }
            match folder {
                Some(folder) => out!("Filed {} into {folder}.", session.summary.session_id),
                None => out!("Moved {} back to the history.", session.summary.session_id),
            }
            return Ok(ExitCode::SUCCESS);
        }
    };
    if json {
        return print_json(&changed);
    }
    out!("{}  {}", changed.folder_id, changed.name);
    Ok(ExitCode::SUCCESS)
}

#[derive(Subcommand)]
pub enum SchedulesAction {
    /// Every schedule that is not cancelled (the default).
    List,
    Show {
        schedule: Uuid,
    },
    /// Cancel a schedule (at its current revision unless one is given).
    Cancel {
        schedule: Uuid,
        #[arg(long)]
        revision: Option<i32>,
    },
    /// What each firing became.
    Occurrences {
        schedule: Uuid,
    },
}

fn print_schedule(schedule: &wire::response::Schedule) -> anyhow::Result<()> {
    let next = schedule
        .next_fire_at
        .map_or_else(|| "-".to_owned(), |at| at.to_string());
    out!(
        "{}  {}  next {next}  {} (revision {})",
        schedule.id,
        schedule.state.as_str(),
        schedule.title,
        schedule.revision
    );
    Ok(())
}

pub async fn schedules(client: &Client, action: Option<SchedulesAction>, json: bool) -> anyhow::Result<ExitCode> {
    match action.unwrap_or(SchedulesAction::List) {
        SchedulesAction::List => {
            let schedules = client.schedules().await?;
            if json {
                return print_json(&schedules);
            }
            for schedule in &schedules {
                print_schedule(schedule)?;
            }
        }
        SchedulesAction::Show { schedule } => {
            let schedule = client.schedule(schedule).await?;
            if json {
                return print_json(&schedule);
            }
            print_schedule(&schedule)?;
            out!(
                "  daily at {} {}\n  {}",
                schedule.cadence.local_time,
                schedule.cadence.timezone,
                schedule.instruction
            );
        }
        SchedulesAction::Cancel { schedule, revision } => {
            let revision = match revision {
                Some(revision) => revision,
                None => client.schedule(schedule).await?.revision,
            };
            let schedule = client.cancel_schedule(schedule, revision).await?;
            if json {
                return print_json(&schedule);
            }
            out!("Cancelled “{}”.", schedule.title);
        }
        SchedulesAction::Occurrences { schedule } => {
            let occurrences = client.occurrences(schedule).await?;
            return listed(json, &occurrences, None, |occurrence| {
                let reason = occurrence.reason.as_ref().map(|reason| format!(" ({reason})"));
                format!(
                    "{}  {}  {}{}",
                    occurrence.occurrence_id,
                    occurrence.scheduled_for,
                    occurrence.state.as_str(),
                    reason.unwrap_or_default()
                )
            });
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Subcommand)]
pub enum ApprovalsAction {
    /// The conversation's pending approvals (the default).
    List,
    /// Approve once: prints the whole of what it approves (a shortened argument shown whole
    /// from the model's proposed call its digest proves) and asks on a terminal.
    Approve {
        approval: Uuid,
        /// Approve without asking (scripts): what is approved is still printed first.
        #[arg(long)]
        yes: bool,
    },
    Deny {
        approval: Uuid,
    },
}

/// The conversation an approval command is about: the one given, else the one a pending
/// notification names for `approval`, else the latest.
async fn approval_session(client: &Client, session: Option<Uuid>, approval: Option<Uuid>) -> anyhow::Result<Uuid> {
    if let Some(session) = session {
        return Ok(session);
    }
    if let Some(approval) = approval {
        let notified = client
            .notifications()
            .await
            .unwrap_or_default()
            .into_iter()
            .find(|notification| notification.payload.approval_id == Some(approval))
            .and_then(|notification| notification.payload.session_id);
        if let Some(session) = notified {
            return Ok(session);
        }
    }
    match client.latest_conversation().await? {
        Some(latest) => Ok(latest.session_id),
        None => bail!("there are no conversations"),
    }
}

fn print_decided(decided: &Decided, json: bool) -> anyhow::Result<ExitCode> {
    match decided {
        Decided::Decided(approval) => {
            if json {
                return print_json(approval);
            }
            out!("{}: {}", approval.tool, approval.status.as_str().to_lowercase());
            Ok(ExitCode::SUCCESS)
        }
        Decided::AlreadyResolved(status) => {
            bail!(
                "the approval was already {}; that decision stands",
                status.as_str().to_lowercase()
            )
        }
    }
}

pub async fn approvals(
    client: &Client,
    action: Option<ApprovalsAction>,
    session: Option<Uuid>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    match action.unwrap_or(ApprovalsAction::List) {
        ApprovalsAction::List => {
            let session = approval_session(client, session, None).await?;
            let pending = client.approvals(session).await?;
            let empty = format!("No approval is waiting in {session}.");
            listed(json, &pending, Some(&empty), |approval| {
                let mut text = format!(
                    "{}  {} ({} risk)\n{}",
                    approval.approval_id,
                    approval.tool,
                    approval.risk.as_str(),
                    serde_json::to_string_pretty(&approval.arguments).unwrap_or_default()
                );
                for (pointer, digest) in &approval.argument_digests {
                    text.push('\n');
                    text.push_str(&crate::render::cut_note(pointer, digest));
                }
                text
            })
        }
        ApprovalsAction::Approve { approval, yes } => {
            let session = approval_session(client, session, Some(approval)).await?;
            let Some(pending) = client
                .approvals(session)
                .await?
                .into_iter()
                .find(|pending| pending.approval_id == approval)
            else {
                bail!("approval {approval} is not waiting in conversation {session}");
            };
            // As in chat: a cut argument is approved only when a proposal of the model proves it.
            let proposals = client.proposals(&pending).await?;
            let checked = approvals::check_against_proposals(&pending.arguments, &pending.argument_digests, &proposals)
                .map_err(|refused| anyhow::anyhow!("approval {approval} cannot be approved: {refused}"))?;
            // The whole of what is approved, before anything is decided (standard error, so
            // `--json` output stays the decision alone).
            crate::say!("{} wants approval ({} risk):", pending.tool, pending.risk.as_str());
            crate::say!("{}", crate::render::approval_text(&pending.tool, &checked.arguments));
            if !yes {
                if !std::io::stdin().is_terminal() {
                    bail!(
                        "approval {approval} was not approved: read what it approves above, then add --yes to approve without a terminal"
                    );
                }
                let confirmed = tokio::task::spawn_blocking(|| {
                    dialoguer::Confirm::new()
                        .with_prompt("Approve once?")
                        .default(false)
                        .interact_opt()
                })
                .await
                .context("ask")?
                .context("read the answer")?;
                if confirmed != Some(true) {
                    bail!("approval {approval} was left pending");
                }
            }
            let decided = client.approve_once(approval, &checked).await?;
            print_decided(&decided, json)
        }
        ApprovalsAction::Deny { approval } => {
            let decided = client.deny(approval).await?;
            print_decided(&decided, json)
        }
    }
}

#[derive(Subcommand)]
pub enum NotificationsAction {
    /// Notifications not yet acknowledged (the default).
    List,
    /// Acknowledge one.
    Ack { notification: Uuid },
}

pub async fn notifications(
    client: &Client,
    action: Option<NotificationsAction>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let unavailable = |error: client::ClientError| -> anyhow::Error {
        if error.code() == Some("not_found") {
            anyhow::anyhow!("this server does not offer notifications (its notification API is off)")
        } else {
            error.into()
        }
    };
    match action.unwrap_or(NotificationsAction::List) {
        NotificationsAction::List => {
            let notifications = client.notifications().await.map_err(unavailable)?;
            listed(json, &notifications, None, |notification| {
                let session = notification
                    .payload
                    .session_id
                    .map(|session| format!("  conversation {session}"))
                    .unwrap_or_default();
                format!(
                    "{}  {}  {}{session}",
                    notification.notification_id,
                    notification.created_at.strftime("%Y-%m-%d %H:%M"),
                    serde_json::to_value(notification.kind)
                        .ok()
                        .and_then(|kind| kind.as_str().map(str::to_owned))
                        .unwrap_or_default(),
                )
            })
        }
        NotificationsAction::Ack { notification } => {
            client.acknowledge(notification).await.map_err(unavailable)?;
            done(
                json,
                "acknowledged",
                notification,
                &format!("Acknowledged {notification}."),
            )
        }
    }
}

#[derive(Subcommand)]
pub enum SettingsAction {
    /// The model settings and what the server offers (the default).
    Show,
    /// Change the model settings; what is not given stays.
    Set {
        #[arg(long)]
        chat_model: Option<String>,
        #[arg(long)]
        chat_effort: Option<String>,
        #[arg(long)]
        memory_model: Option<String>,
        #[arg(long)]
        memory_effort: Option<String>,
    },
}

pub async fn settings(client: &Client, action: Option<SettingsAction>, json: bool) -> anyhow::Result<ExitCode> {
    let settings = match action.unwrap_or(SettingsAction::Show) {
        SettingsAction::Show => client.model_settings().await?,
        SettingsAction::Set {
            chat_model,
            chat_effort,
            memory_model,
            memory_effort,
        } => {
            let current = client.model_settings().await?;
            let save = SaveModelSettings {
                chat_model: chat_model.unwrap_or(current.chat_model),
                chat_reasoning_effort: chat_effort.unwrap_or(current.chat_reasoning_effort),
                memory_model: memory_model.unwrap_or(current.memory_model),
                memory_reasoning_effort: memory_effort.unwrap_or(current.memory_reasoning_effort),
            };
            client.save_model_settings(&save).await?
        }
    };
    if json {
        return print_json(&settings);
    }
    out!(
        "chat: {} (reasoning effort {})",
        settings.chat_model,
        settings.chat_reasoning_effort
    );
    out!(
        "memory: {} (reasoning effort {})",
        settings.memory_model,
        settings.memory_reasoning_effort
    );
    for (role, offered) in [("chat", &settings.offered.chat), ("memory", &settings.offered.memory)] {
        for model in offered {
            out!(
                "  offered for {role}: {} ({})",
                model.model,
                model.reasoning_efforts.join(", ")
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A progress bar on standard error when it is a terminal and text is wanted.
fn progress_bar(json: bool, what: &str) -> Option<indicatif::ProgressBar> {
    if json || !std::io::stderr().is_terminal() {
        return None;
    }
    // A file name may come from the server: shown as text, never as terminal commands.
    let bar = indicatif::ProgressBar::new(0).with_message(crate::visible::visible(what).into_owned());
    if let Ok(style) = indicatif::ProgressStyle::with_template("{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec}")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    Some(bar)
}

fn reporter(bar: &Option<indicatif::ProgressBar>) -> Option<client::Progress> {
    let bar = bar.clone()?;
    Some(Arc::new(move |done: u64, total: Option<u64>| {
        if let Some(total) = total {
            bar.set_length(total);
        }
        bar.set_position(done);
    }))
}

/// The media type of a file by its extension. A short table rather than a crate: these are the
/// kinds owners attach, and anything else is sent as bytes the server stores as given.
fn media_type_of(path: &Path) -> &'static str {
    let extension = path
        .extension()
        .and_then(|extension| extension.to_str())
        .map(str::to_ascii_lowercase);
    match extension.as_deref() {
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("gif") => "image/gif",
        Some("webp") => "image/webp",
        Some("svg") => "image/svg+xml",
        Some("pdf") => "application/pdf",
        Some("txt" | "log") => "text/plain",
        Some("md") => "text/markdown",
        Some("csv") => "text/csv",
        Some("json") => "application/json",
        Some("html" | "htm") => "text/html",
        _ => "application/octet-stream",
    }
}

pub async fn upload(
    client: &Client,
    session: Uuid,
    file: &Path,
    media_type: Option<String>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let bytes = tokio::fs::read(file)
        .await
        .with_context(|| format!("read {}", file.display()))?;
    let filename = file
        .file_name()
        .and_then(|name| name.to_str())
        .context("the file needs a name in UTF-8")?;
    let media_type = media_type.unwrap_or_else(|| media_type_of(file).to_owned());
    let bar = progress_bar(json, filename);
    let artifact = client
        .upload(session, filename, &media_type, bytes.into(), reporter(&bar))
        .await;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let artifact = artifact?;
    if json {
        return print_json(&artifact);
    }
    out!(
        "{}  {} ({} bytes, {})",
        artifact.artifact_id,
        artifact.filename,
        artifact.size_bytes,
        artifact.media_type
    );
    Ok(ExitCode::SUCCESS)
}

#[derive(Serialize)]
struct Saved<'a> {
    artifact: &'a wire::response::Artifact,
    path: Option<String>,
}

pub async fn download(
    client: &Client,
    session: Uuid,
    artifact: Uuid,
    output: Option<PathBuf>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let metadata = client.artifact(session, artifact).await?;
    let to_stdout = output.as_deref() == Some(Path::new("-"));
    let path = match output {
        _ if to_stdout => None,
        Some(path) => Some(path),
        None => Some(local_name(&metadata.filename)),
    };
    let bar = progress_bar(json || to_stdout, &metadata.filename);
    let downloaded = client.download(session, artifact, reporter(&bar)).await;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let downloaded = downloaded?;
    match &path {
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(&downloaded.bytes)
                .and_then(|()| out.flush())
                .context("write standard output")?;
            return Ok(ExitCode::SUCCESS);
        }
        Some(path) => write_new(path, &downloaded.bytes).await?,
    }
    if json {
        return print_json(&Saved {
            artifact: &metadata,
            path: path.map(|path| path.display().to_string()),
        });
    }
    if let Some(path) = path {
        out!("Saved {} ({} bytes).", path.display(), downloaded.bytes.len());
    }
    Ok(ExitCode::SUCCESS)
}

/// A file name in the current directory for an artifact's name: its last component only, and
/// never a hidden file.
fn local_name(filename: &str) -> PathBuf {
    match Path::new(filename).file_name().and_then(|name| name.to_str()) {
        Some(name) if !name.starts_with('.') => PathBuf::from(name),
        _ => PathBuf::from("attachment"),
    }
}

/// Writes `bytes` to `path`, which must not exist yet: a download never overwrites a file.
async fn write_new(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use tokio::io::AsyncWriteExt;
    let mut file = tokio::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .await
        .with_context(|| format!("create {} (it must not exist yet)", path.display()))?;
    file.write_all(bytes)
        .await
        .with_context(|| format!("write {}", path.display()))?;
    file.flush().await.with_context(|| format!("write {}", path.display()))
}
