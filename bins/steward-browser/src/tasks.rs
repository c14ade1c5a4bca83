//! The role's browsers: one per active task, each with its own egress proxy (admitting only the
//! task profile's origins and the account-list host), its own data directory (removed when the
//! browser closes) and one page. A task's browser serves one request at a time.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use browser_policy::egress::{AllowList, Origin};
use chromiumoxide::Page;
use tokio::sync::Mutex;
use url::Url;

use crate::chromium::{Hosted, Launch, LaunchError};
use crate::page::{self, Action, PageError, Snapshot};
use crate::proxy::{EgressProxy, Settings, Upstream};
use crate::session;
use crate::storage::{Vault, VaultError};

/// The most browsers the role runs at once.
pub const MAX_BROWSERS: usize = 4;

/// What every browser of the role shares.
#[derive(Clone)]
pub struct Template {
    pub executable: PathBuf,
    /// The X display (`DISPLAY`).
    pub display: String,
    pub sandbox: bool,
    pub local_site_keys: Vec<String>,
    pub upstream: Upstream,
    /// Where each browser's private data directory is made (owner-only).
    pub data_root: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    #[error("no browser is open for this task")]
    NoTask,
    #[error("{MAX_BROWSERS} browsers are already open")]
    Busy,
    #[error("the task is already open with other origins")]
    Conflict,
    #[error("{0}")]
    Origin(String),
    #[error("the browser's data directory: {0}")]
    Directory(std::io::Error),
    #[error("the egress proxy: {0}")]
    Proxy(std::io::Error),
    #[error(transparent)]
    Launch(#[from] LaunchError),
    #[error(transparent)]
    Page(#[from] PageError),
    #[error(transparent)]
    Vault(#[from] VaultError),
}

/// One task's browser.
struct Task {
    origins: Vec<Origin>,
    /// The profile whose session the browser carries.
    profile: Option<String>,
    hosted: Hosted,
    page: Option<Page>,
    _proxy: EgressProxy,
    _data: tempfile::TempDir,
}

/// The open browsers, by task.
pub struct Browsers {
    template: Template,
    vault: Arc<Vault>,
    tasks: Mutex<HashMap<String, Arc<Mutex<Option<Task>>>>>,
}

impl Browsers {
    pub fn new(template: Template, vault: Arc<Vault>) -> Browsers {
        Browsers {
            template,
            vault,
            tasks: Mutex::new(HashMap::new()),
        }
    }

    /// Opens the browser of `task` for `origins`, carrying `profile`'s sealed session if it
    /// has one; `false` when it was already open so.
    pub async fn open(&self, task: &str, origins: Vec<Origin>, profile: Option<String>) -> Result<bool, TaskError> {
        let slot = {
            let mut tasks = self.tasks.lock().await;
            if let Some(slot) = tasks.get(task) {
                Arc::clone(slot)
            } else {
                if tasks.len() >= MAX_BROWSERS {
                    return Err(TaskError::Busy);
                }
                let slot = Arc::new(Mutex::new(None));
                tasks.insert(task.to_owned(), Arc::clone(&slot));
                slot
            }
        };
        let mut held = slot.lock().await;
        if let Some(open) = held.as_ref() {
            return if open.origins == origins && open.profile == profile {
                Ok(false)
            } else {
                Err(TaskError::Conflict)
            };
        }
        match self.launch(origins, profile).await {
            Ok(open) => {
                *held = Some(open);
                Ok(true)
            }
            Err(error) => {
                drop(held);
                self.tasks.lock().await.remove(task);
                Err(error)
            }
        }
    }

    async fn launch(&self, origins: Vec<Origin>, profile: Option<String>) -> Result<Task, TaskError> {
        let session = match &profile {
            Some(profile) => self.vault.open(profile)?,
            None => None,
        };
        let proxy = EgressProxy::start(Settings {
            allow: AllowList::new(origins.iter().cloned()),
            upstream: self.template.upstream.clone(),
            journal: None,
        })
        .await
        .map_err(TaskError::Proxy)?;
        let data = tempfile::Builder::new()
            .prefix("browser-")
            .tempdir_in(&self.template.data_root)
            .map_err(TaskError::Directory)?;
        let hosted = Hosted::launch(&Launch {
            executable: self.template.executable.clone(),
            display: self.template.display.clone(),
            proxy: proxy.address(),
            data_directory: data.path().join("profile"),
            sandbox: self.template.sandbox,
            local_site_keys: self.template.local_site_keys.clone(),
        })
        .await?;
        if let Some(session) = &session {
            if let Err(error) = session::restore(hosted.browser(), session).await {
                hosted.close().await;
                return Err(PageError::from(error).into());
            }
        }
        Ok(Task {
            origins,
            profile,
            hosted,
            page: None,
            _proxy: proxy,
            _data: data,
        })
    }

    async fn slot(&self, task: &str) -> Result<Arc<Mutex<Option<Task>>>, TaskError> {
        self.tasks.lock().await.get(task).cloned().ok_or(TaskError::NoTask)
    }

    /// Goes to `address`, which must be on one of the task's origins.
    pub async fn navigate(&self, task: &str, address: &str) -> Result<Snapshot, TaskError> {
        let slot = self.slot(task).await?;
        let mut held = slot.lock().await;
        let open = held.as_mut().ok_or(TaskError::NoTask)?;
        let url = on_origins(&open.origins, address)?;
        match &open.page {
            Some(page) => {
                page.goto(url.as_str()).await.map_err(PageError::from)?;
            }
            None => {
                let page = open
                    .hosted
                    .browser()
                    .new_page(url.as_str())
                    .await
                    .map_err(PageError::from)?;
                open.page = Some(page);
            }
        }
        let page = open.page.as_ref().ok_or(TaskError::NoTask)?;
        page::settle(page).await;
        Ok(page::snapshot(page).await?)
    }

    /// What the task's page shows.
    pub async fn read(&self, task: &str) -> Result<Snapshot, TaskError> {
        let slot = self.slot(task).await?;
        let held = slot.lock().await;
        let page = held
            .as_ref()
            .and_then(|open| open.page.as_ref())
            .ok_or(TaskError::NoTask)?;
        Ok(page::snapshot(page).await?)
    }

    /// Does `action` on the element `reference` labelled `label`.
    pub async fn act(&self, task: &str, reference: &str, label: &str, action: &Action) -> Result<Snapshot, TaskError> {
        let slot = self.slot(task).await?;
        let held = slot.lock().await;
        let page = held
            .as_ref()
            .and_then(|open| open.page.as_ref())
            .ok_or(TaskError::NoTask)?;
        Ok(page::act(page, reference, label, action).await?)
    }

    /// Closes the task's browser (waiting for an action in flight to end); `false` when none
    /// was open.
    pub async fn close(&self, task: &str) -> bool {
        let Some(slot) = self.tasks.lock().await.remove(task) else {
            return false;
        };
        let open = slot.lock().await.take();
        if let Some(open) = open {
            self.keep_session(&open).await;
            open.hosted.close().await;
        }
        true
    }

    /// Keeps the profile's session as the browser leaves it (a site that refreshed its
    /// cookies keeps the owner signed in): the cookies of the profile's origins replace the
    /// sealed ones; the local storage handed over stays.
    async fn keep_session(&self, open: &Task) {
        let Some(profile) = &open.profile else {
            return;
        };
        let Ok(Some(mut kept)) = self.vault.open(profile) else {
            return;
        };
        match session::cookies(open.hosted.browser(), &open.origins).await {
            Ok(cookies) => {
                kept.cookies = cookies;
                if let Err(error) = self.vault.seal(profile, &kept) {
                    tracing::warn!("keep a profile's session: {error}");
                }
            }
            Err(error) => tracing::warn!("read a closing browser's cookies: {error}"),
        }
    }

    /// Forgets `profile`: its browsers close without keeping anything, and its sealed session
    /// is removed.
    pub async fn forget(&self, profile: &str) -> Result<(), TaskError> {
        let slots: Vec<(String, Arc<Mutex<Option<Task>>>)> = self
            .tasks
            .lock()
            .await
            .iter()
            .map(|(task, slot)| (task.clone(), Arc::clone(slot)))
            .collect();
        for (task, slot) in slots {
            let mut held = slot.lock().await;
            if held
                .as_ref()
                .is_some_and(|open| open.profile.as_deref() == Some(profile))
            {
                if let Some(open) = held.take() {
                    open.hosted.close().await;
                }
                drop(held);
                self.tasks.lock().await.remove(&task);
            }
        }
        self.vault.remove(profile)?;
        Ok(())
    }

    /// Closes every browser (at shutdown).
    pub async fn close_all(&self) {
        let tasks: Vec<String> = self.tasks.lock().await.keys().cloned().collect();
        for task in tasks {
            self.close(&task).await;
        }
    }

    /// How many browsers are open.
    pub async fn open_count(&self) -> usize {
        self.tasks.lock().await.len()
    }
}

/// `address` parsed, if it is an `https` address on one of the task's origins (the
/// account-list host, which the proxy admits, is not one).
fn on_origins(origins: &[Origin], address: &str) -> Result<Url, TaskError> {
    let refused = || TaskError::Origin(format!("`{address}` is not on the profile's origins"));
    let url = Url::parse(address).map_err(|_| TaskError::Origin(format!("`{address}` is not an address")))?;
    if url.scheme() != "https" || !url.username().is_empty() || url.password().is_some() {
        return Err(refused());
    }
    let origin = Origin::parse(&url.origin().ascii_serialization()).map_err(|_| refused())?;
    if !origins.contains(&origin) {
        return Err(refused());
    }
    Ok(url)
}
