//! The role's browsers: one per active task, each with its own egress proxy (admitting only the
//! task profile's origins and the account-list host), its own data directory (removed when the
//! browser closes) and one page. A task's browser serves one request at a time.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

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

/// The longest one step of a remote sign-in (a picture, an input, reading the session) may
/// take: a browser that does not answer then is reported as failed, and the page may try again,
/// rather than holding the task's browser (and the page) indefinitely.
pub const SIGN_IN_STEP: Duration = Duration::from_secs(20);

/// `work` within `limit`, a browser that did not answer in time counting as its failure.
async fn bounded<T>(limit: Duration, work: impl Future<Output = Result<T, PageError>>) -> Result<T, TaskError> {
    match tokio::time::timeout(limit, work).await {
        Ok(done) => Ok(done?),
        Err(_) => Err(PageError::Browser(chromiumoxide::error::CdpError::Timeout).into()),
    }
}
/// A task's browser nobody asked anything of for this long is closed.
pub const IDLE: std::time::Duration = std::time::Duration::from_secs(20 * 60);
/// How long putting a profile's session into a new browser may take.
pub const RESTORE_WITHIN: std::time::Duration = std::time::Duration::from_secs(20);

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
    #[error("the task's browser shows no page yet: navigate first")]
    NoPage,
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
    /// The profile's generation when the browser took its session (see `Vault`).
    generation: u64,
    hosted: Hosted,
    page: Option<Page>,
    /// When the task was last asked for anything.
    used: std::sync::Mutex<std::time::Instant>,
    _proxy: EgressProxy,
    _data: tempfile::TempDir,
}

impl Task {
    fn touch(&self) {
        *self.used.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = std::time::Instant::now();
    }

    fn idle_for(&self) -> std::time::Duration {
        self.used
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .elapsed()
    }
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
                open.touch();
                Ok(false)
            } else {
                Err(TaskError::Conflict)
            };
        }
        // A close (or a failed open) may have removed this slot while we waited for it: a
        // browser launched into it would belong to no task and never close.
        let registered = self
            .tasks
            .lock()
            .await
            .get(task)
            .is_some_and(|current| Arc::ptr_eq(current, &slot));
        if !registered {
            return Err(TaskError::Conflict);
        }
        match self.launch(origins, profile).await {
            Ok(open) => {
                *held = Some(open);
                Ok(true)
            }
            Err(error) => {
                let mut tasks = self.tasks.lock().await;
                if tasks.get(task).is_some_and(|current| Arc::ptr_eq(current, &slot)) {
                    tasks.remove(task);
                }
                drop(tasks);
                drop(held);
                Err(error)
            }
        }
    }

    async fn launch(&self, origins: Vec<Origin>, profile: Option<String>) -> Result<Task, TaskError> {
        let generation = profile.as_deref().map_or(0, |profile| self.vault.generation(profile));
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
        let mut page = None;
        if let Some(session) = &session {
            let restored = tokio::time::timeout(RESTORE_WITHIN, session::restore(hosted.browser(), session))
                .await
                .unwrap_or(Err(chromiumoxide::error::CdpError::Timeout));
            match restored {
                Ok(restored) => page = Some(restored),
                Err(error) => {
                    hosted.close().await;
                    return Err(PageError::from(error).into());
                }
            }
        }
        // Forgotten (or signed in again) while the browser started: it must not carry the old
        // session.
        if profile
            .as_deref()
            .is_some_and(|profile| self.vault.generation(profile) != generation)
        {
            hosted.close().await;
            return Err(TaskError::Conflict);
        }
        Ok(Task {
            origins,
            profile,
            generation,
            hosted,
            page,
            used: std::sync::Mutex::new(std::time::Instant::now()),
            _proxy: proxy,
            _data: data,
        })
    }

    /// Every task's slot, the tasks' lock released.
    async fn slots(&self) -> Vec<(String, Arc<Mutex<Option<Task>>>)> {
        self.tasks
            .lock()
            .await
            .iter()
            .map(|(task, slot)| (task.clone(), Arc::clone(slot)))
            .collect()
    }

    async fn slot(&self, task: &str) -> Result<Arc<Mutex<Option<Task>>>, TaskError> {
        self.tasks.lock().await.get(task).cloned().ok_or(TaskError::NoTask)
    }

    /// Goes to `address`, which must be on one of the task's origins.
    pub async fn navigate(&self, task: &str, address: &str) -> Result<Snapshot, TaskError> {
        let slot = self.slot(task).await?;
        let mut held = slot.lock().await;
        let open = held.as_mut().ok_or(TaskError::NoTask)?;
        open.touch();
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
        Ok(page::snapshot(page_of(&held)?).await?)
    }

    /// Does `action` on the element `reference` labelled `label` (and leading to `target`, when
    /// given).
    pub async fn act(
        &self,
        task: &str,
        reference: &str,
        label: &str,
        target: Option<&str>,
        action: &Action,
    ) -> Result<Snapshot, TaskError> {
        let slot = self.slot(task).await?;
        let held = slot.lock().await;
        Ok(page::act(page_of(&held)?, reference, label, target, action).await?)
    }

    /// A picture of the task's page (within [`SIGN_IN_STEP`]: the sign-in page asks again).
    pub async fn screenshot(&self, task: &str) -> Result<Vec<u8>, TaskError> {
        let slot = self.slot(task).await?;
        let held = slot.lock().await;
        bounded(SIGN_IN_STEP, page::screenshot(page_of(&held)?)).await
    }

    /// A pointer or keyboard input on the task's page (within [`SIGN_IN_STEP`]).
    pub async fn input(&self, task: &str, input: &page::Input) -> Result<(), TaskError> {
        let slot = self.slot(task).await?;
        let held = slot.lock().await;
        bounded(SIGN_IN_STEP, page::input(page_of(&held)?, input)).await
    }

    /// The website session the task's browser holds for its origins (within
    /// [`page::SETTLE`] and [`SIGN_IN_STEP`]).
    pub async fn harvest(&self, task: &str) -> Result<crate::storage::SiteData, TaskError> {
        let slot = self.slot(task).await?;
        let held = slot.lock().await;
        let open = held.as_ref().ok_or(TaskError::NoTask)?;
        if let Some(page) = &open.page {
            page::settle(page).await;
        }
        bounded(SIGN_IN_STEP, async {
            session::harvest(open.hosted.browser(), &open.origins)
                .await
                .map_err(PageError::from)
        })
        .await
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
    /// cookies keeps the owner signed in): the cookies of the task's origins replace the
    /// sealed ones of those origins, the others and the local storage stay. Nothing is kept
    /// when the profile's session changed since the browser took it (signed in again, or
    /// forgotten).
    async fn keep_session(&self, open: &Task) {
        let Some(profile) = &open.profile else {
            return;
        };
        if self.vault.generation(profile) != open.generation {
            return;
        }
        // Bounded like any step: a browser that does not answer keeps nothing and is closed.
        let read = tokio::time::timeout(
            crate::chromium::CLOSE_WITHIN,
            session::cookies(open.hosted.browser(), &open.origins),
        )
        .await;
        match read {
            Ok(Ok(cookies)) => {
                let ours = |domain: &str| {
                    open.origins
                        .iter()
                        .any(|origin| crate::storage::domain_matches(origin.host(), domain))
                };
                let kept = self.vault.keep_if(profile, open.generation, |kept| {
                    kept.cookies.retain(|cookie| !ours(&cookie.domain));
                    kept.cookies.extend(cookies);
                });
                if let Err(error) = kept {
                    tracing::warn!("keep a profile's session: {error}");
                }
            }
            Ok(Err(_)) | Err(_) => tracing::warn!("a closing browser's cookies could not be read"),
        }
    }

    /// Forgets `profile`: its sealed session is removed (its generation advances, so nothing
    /// in flight seals it again) and its browsers close without keeping anything.
    pub async fn forget(&self, profile: &str) -> Result<(), TaskError> {
        self.vault.remove(profile)?;
        let slots = self.slots().await;
        for (task, slot) in slots {
            let mut held = slot.lock().await;
            if held
                .as_ref()
                .is_some_and(|open| open.profile.as_deref() == Some(profile))
            {
                {
                    let mut tasks = self.tasks.lock().await;
                    if tasks.get(&task).is_some_and(|current| Arc::ptr_eq(current, &slot)) {
                        tasks.remove(&task);
                    }
                }
                if let Some(open) = held.take() {
                    open.hosted.close().await;
                }
            }
        }
        Ok(())
    }

    /// Closes the browsers no one asked anything of for `idle` (a run that ended without
    /// closing its browser, a worker gone); each keeps its profile's refreshed session as on
    /// any close. A browser busy with a request is not idle.
    pub async fn close_idle(&self, idle: std::time::Duration) -> usize {
        let mut closed = 0;
        for (task, slot) in self.slots().await {
            // Judged and taken under the task's lock (lock order: the task, then the map), so a
            // request that came in meanwhile keeps its browser.
            let taken = {
                let Ok(mut held) = slot.try_lock() else {
                    continue;
                };
                if held.as_ref().is_none_or(|open| open.idle_for() < idle) {
                    continue;
                }
                let mut tasks = self.tasks.lock().await;
                if tasks.get(&task).is_some_and(|current| Arc::ptr_eq(current, &slot)) {
                    tasks.remove(&task);
                }
                held.take()
            };
            if let Some(open) = taken {
                self.keep_session(&open).await;
                open.hosted.close().await;
                closed += 1;
            }
        }
        closed
    }

    /// Closes every browser (at shutdown).
    pub async fn close_all(&self) {
        let tasks: Vec<String> = self.tasks.lock().await.keys().cloned().collect();
        for task in tasks {
            self.close(&task).await;
        }
    }

    /// Whether a session is kept for `profile`.
    pub fn holds_session(&self, profile: &str) -> bool {
        self.vault.holds(profile)
    }

    /// How many browsers are open.
    pub async fn open_count(&self) -> usize {
        self.tasks.lock().await.len()
    }
}

/// The page of an open task's browser (the task counts as used).
fn page_of(held: &Option<Task>) -> Result<&Page, TaskError> {
    let open = held.as_ref().ok_or(TaskError::NoTask)?;
    open.touch();
    open.page.as_ref().ok_or(TaskError::NoPage)
}

/// `address` parsed, if it is an `https` address on one of the task's origins (the
/// account-list host, which the proxy admits, is not one).
pub fn on_origins(origins: &[Origin], address: &str) -> Result<Url, TaskError> {
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
