//! Website Access (`/v1/browser`, mounted with `AGENT_BROWSER_ENABLED=1`): the owner's browser
//! profiles and their sign-in ceremonies. The API keeps the profiles and the ceremonies'
//! secret-free records; the browser role (over its control plane) runs the ceremonies and keeps
//! the website sessions sealed. A profile is made together with its first ceremony: when the
//! ceremony cannot begin, the profile is rolled back. A rejected handoff removes a profile that
//! never became ready. Removing a ready profile revokes it and has the browser role forget its
//! session.

use axum::extract::State;
use axum::http::StatusCode;
use axum::{Extension, Json as JsonResponse};
use browser_policy::egress::Origin;
use domain::ErrorCode;
use store::{BrowserProfileRow, CeremonyRow, ProfileState as StoredState, RecordCeremony, TaskPermissionRow};
use uuid::Uuid;
use wire::browser::{
    BeginCeremony, BegunCeremony, BrowserProfile, BrowserProfileList, CeremonyKind, CeremonyState, CeremonyStatus,
    CreateBrowserProfile, CreatedBrowserProfile, ProfileState, TaskPermission, TaskPermissionList,
};

use super::email::parse_uuid;
use crate::AppState;
use crate::auth::Caller;
use crate::browser_access::BrowserAccess;
use crate::extract::{Json, Path};
use crate::problem::ApiError;

/// The most origins a profile holds.
pub const MAX_ORIGINS: usize = 10;

fn access(state: &AppState) -> Result<&BrowserAccess, ApiError> {
    state
        .settings
        .browser
        .as_ref()
        .ok_or_else(|| ApiError::new(ErrorCode::BrowserUnavailable))
}

fn profile(row: &BrowserProfileRow) -> BrowserProfile {
    BrowserProfile {
        profile_id: row.id,
        primary_origin: row.origins.first().cloned().unwrap_or_default(),
        allowed_origins: row.origins.clone(),
        state: wire_state(row.state),
        created_at: row.created_at,
        ready_at: row.ready_at,
        revoked_at: row.revoked_at,
    }
}

fn wire_state(state: StoredState) -> ProfileState {
    match state {
        StoredState::Pending => ProfileState::Pending,
        StoredState::Ready => ProfileState::Ready,
        StoredState::Revoked => ProfileState::Revoked,
    }
}

/// The profile's origins: the primary one first, then the others, each an exact public HTTPS
/// origin written the one way (`https://host[:port]`), without repeats.
fn origins(primary: &str, additional: &[String]) -> Result<Vec<String>, ApiError> {
    let mut origins: Vec<String> = Vec::new();
    for (field, text) in std::iter::once(("primary_origin", primary))
        .chain(additional.iter().map(|text| ("additional_origins", text.as_str())))
    {
        let origin = Origin::parse(text).map_err(|error| {
            ApiError::new(ErrorCode::BrowserOriginRefused)
                .field(field)
                .detail(format!("`{text}`: {error}"))
        })?;
        let origin = origin.to_string();
        if !origins.contains(&origin) {
            origins.push(origin);
        }
    }
    if origins.len() > MAX_ORIGINS {
        return Err(ApiError::new(ErrorCode::ValidationFailed)
            .field("additional_origins")
            .detail(format!("a profile holds at most {MAX_ORIGINS} origins")));
    }
    Ok(origins)
}

/// A ceremony request's login page: required for a remote one, refused for a device one.
fn login_url(request: &BeginCeremony) -> Result<Option<&str>, ApiError> {
    match (request.kind, request.login_url.as_deref()) {
        (CeremonyKind::Remote, Some(login)) => Ok(Some(login)),
        (CeremonyKind::Remote, None) => Err(ApiError::new(ErrorCode::ValidationFailed)
            .field("ceremony.login_url")
            .detail("a remote ceremony starts at the site's login page")),
        (CeremonyKind::Device, Some(_)) => Err(ApiError::new(ErrorCode::ValidationFailed)
            .field("ceremony.login_url")
            .detail("only a remote ceremony has a login page")),
        (CeremonyKind::Device, None) => Ok(None),
    }
}

/// Begins a ceremony for `row` and records it; one begun for a profile removed meanwhile is
/// cancelled at the browser role and refused.
async fn begin(
    state: &AppState,
    caller: &Caller,
    row: &BrowserProfileRow,
    request: &BeginCeremony,
) -> Result<BegunCeremony, ApiError> {
    let login_url = login_url(request)?;
    let access = access(state)?;
    let id = Uuid::new_v4();
    let (capability, expires_at) = access.begin(id, row.id, &row.origins, login_url).await?;
    let expires_at =
        jiff::Timestamp::from_second(expires_at).map_err(|_| ApiError::new(ErrorCode::BrowserUnavailable))?;
    let recorded = state
        .store
        .record_browser_ceremony(&caller.principal, id, row.id, request.kind, expires_at)
        .await?;
    let refused = match recorded {
        RecordCeremony::Recorded(_) => None,
        RecordCeremony::Gone => Some(ErrorCode::BrowserProfileNotFound),
        RecordCeremony::Revoked => Some(ErrorCode::BrowserProfileRevoked),
    };
    if let Some(code) = refused {
        if access.cancel(id).await.is_err() {
            tracing::warn!("a ceremony of a removed profile could not be cancelled");
        }
        return Err(ApiError::new(code));
    }
    let (device, remote) = match request.kind {
        CeremonyKind::Device => (Some(capability), None),
        CeremonyKind::Remote => (None, Some(access.continue_url(&capability))),
    };
    Ok(BegunCeremony {
        ceremony_id: id,
        profile_id: row.id,
        kind: request.kind,
        state: CeremonyState::Open,
        expires_at,
        handoff_url: device.as_ref().map(|_| access.handoff_url()),
        capability: device,
        continue_url: remote,
    })
}

/// An answer that carries a capability, or a link holding one: never cached.
type NoStore = [(axum::http::HeaderName, &'static str); 1];
const NO_STORE: NoStore = [(axum::http::header::CACHE_CONTROL, "no-store")];

/// The caller's profile named by `id`.
async fn owned_profile(state: &AppState, caller: &Caller, id: &str) -> Result<BrowserProfileRow, ApiError> {
    let id: Uuid = parse_uuid(id, ErrorCode::BrowserProfileNotFound)?;
    state
        .store
        .browser_profile(&caller.principal, id)
        .await?
        .ok_or_else(|| ApiError::new(ErrorCode::BrowserProfileNotFound))
}

/// The owner's browser profiles, newest first.
#[utoipa::path(
    get, path = "/v1/browser/profiles", tag = "browser",
    security(("bearer" = ["browser.read"])),
    responses((status = 200, description = "The profiles", body = BrowserProfileList))
)]
pub async fn list(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
) -> Result<JsonResponse<BrowserProfileList>, ApiError> {
    let rows = state.store.list_browser_profiles(&caller.principal).await?;
    Ok(JsonResponse(BrowserProfileList {
        profiles: rows.iter().map(profile).collect(),
    }))
}

/// Adds a profile and begins its first sign-in ceremony; when the ceremony cannot begin, no
/// profile is left.
#[utoipa::path(
    post, path = "/v1/browser/profiles", tag = "browser",
    security(("bearer" = ["browser.write"])),
    request_body = CreateBrowserProfile,
    responses((status = 201, description = "The profile, pending, and its ceremony", body = CreatedBrowserProfile))
)]
pub async fn create(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Json(request): Json<CreateBrowserProfile>,
) -> Result<(StatusCode, NoStore, JsonResponse<CreatedBrowserProfile>), ApiError> {
    let origins = origins(&request.primary_origin, &request.additional_origins)?;
    login_url(&request.ceremony)?;
    access(&state)?;
    let row = state
        .store
        .create_browser_profile(&caller.principal, Uuid::new_v4(), &origins)
        .await?;
    match begin(&state, &caller, &row, &request.ceremony).await {
        Ok(ceremony) => Ok((
            StatusCode::CREATED,
            NO_STORE,
            JsonResponse(CreatedBrowserProfile {
                profile: profile(&row),
                ceremony,
            }),
        )),
        Err(error) => {
            // The partial profile goes with the failed creation (the creation's own error is
            // the answer, whatever becomes of this).
            if let Err(rollback) = state
                .store
                .delete_pending_browser_profile(&caller.principal, row.id)
                .await
            {
                tracing::warn!("a partial browser profile could not be rolled back: {rollback}");
            }
            Err(error)
        }
    }
}

/// Begins a new ceremony for a profile (`Sign in again`, or `Start over`: the profile's open
/// ceremony is cancelled).
#[utoipa::path(
    post, path = "/v1/browser/profiles/{profile_id}/ceremonies", tag = "browser",
    security(("bearer" = ["browser.write"])),
    params(("profile_id" = Uuid, Path)),
    request_body = BeginCeremony,
    responses((status = 201, description = "The ceremony", body = BegunCeremony))
)]
pub async fn sign_in(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    Json(request): Json<BeginCeremony>,
) -> Result<(StatusCode, NoStore, JsonResponse<BegunCeremony>), ApiError> {
    let row = owned_profile(&state, &caller, &id).await?;
    if row.state == StoredState::Revoked {
        return Err(ApiError::new(ErrorCode::BrowserProfileRevoked));
    }
    Ok((
        StatusCode::CREATED,
        NO_STORE,
        JsonResponse(begin(&state, &caller, &row, &request).await?),
    ))
}

/// Removes a profile: a ready one is revoked first (no ceremony is recorded for it after), then
/// the browser role forgets its session and cancels its ceremonies; a pending one is forgotten,
/// then deleted. Removing a revoked one forgets it again.
#[utoipa::path(
    delete, path = "/v1/browser/profiles/{profile_id}", tag = "browser",
    security(("bearer" = ["browser.write"])),
    params(("profile_id" = Uuid, Path)),
    responses((status = 204, description = "Removed"))
)]
pub async fn remove(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let row = owned_profile(&state, &caller, &id).await?;
    let access = access(&state)?;
    match row.state {
        // Revoked already: forgetting again is harmless, and repairs a forget that failed.
        StoredState::Revoked => access.forget(row.id).await?,
        // Revoked first, under the profile's lock, so no ceremony is recorded for it after.
        StoredState::Ready => {
            state.store.revoke_browser_profile(&caller.principal, row.id).await?;
            access.forget(row.id).await?;
        }
        // Likewise retired first; it was never ready, so once forgotten it goes.
        StoredState::Pending => {
            if !state.store.retire_browser_profile(&caller.principal, row.id).await? {
                // It became ready meanwhile.
                state.store.revoke_browser_profile(&caller.principal, row.id).await?;
            }
            access.forget(row.id).await?;
        }
    }
    // A profile removed before it was ever ready leaves no row once forgotten.
    state
        .store
        .delete_retired_browser_profile(&caller.principal, row.id)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// A ceremony's secret-free status, brought up to date from the browser role while it is open:
/// a completed one makes its profile ready; a rejected one removes a profile never ready.
#[utoipa::path(
    get, path = "/v1/browser/ceremonies/{ceremony_id}", tag = "browser",
    security(("bearer" = ["browser.read"])),
    params(("ceremony_id" = Uuid, Path)),
    responses((status = 200, description = "The ceremony's status", body = CeremonyStatus))
)]
pub async fn status(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<JsonResponse<CeremonyStatus>, ApiError> {
    let id: Uuid = parse_uuid(&id, ErrorCode::BrowserCeremonyNotFound)?;
    let mut row: CeremonyRow = state
        .store
        .browser_ceremony(&caller.principal, id)
        .await?
        .ok_or_else(|| ApiError::new(ErrorCode::BrowserCeremonyNotFound))?;
    let mut profile_removed = false;
    if row.state.is_open() {
        let access = access(&state)?;
        let now = match access.status(id).await? {
            Some(known) => known,
            // A role that no longer holds an open ceremony's status restarted, or settled it
            // over a day ago: a session kept for the profile says it completed.
            None if access.holds_session(row.profile_id).await? => CeremonyState::Completed,
            None if jiff::Timestamp::now() >= row.expires_at => CeremonyState::Expired,
            None => CeremonyState::Cancelled,
        };
        if now != row.state {
            state.store.settle_browser_ceremony(&caller.principal, id, now).await?;
            row.state = now;
        }
    }
    if row.state == CeremonyState::Rejected {
        // A rejected handoff removes the profile it was for if it never became ready and no
        // ceremony begun after it is open: retired under its lock, forgotten by the browser
        // role, then deleted (a later read finishes a removal whose forget failed).
        let profile = state.store.browser_profile(&caller.principal, row.profile_id).await?;
        let retired = match profile {
            Some(profile) if profile.state == StoredState::Pending => {
                state
                    .store
                    .retire_unused_browser_profile(&caller.principal, profile.id, row.id)
                    .await?
            }
            Some(profile) => profile.state == StoredState::Revoked && profile.ready_at.is_none(),
            None => false,
        };
        if retired && access(&state)?.forget(row.profile_id).await.is_ok() {
            profile_removed = state
                .store
                .delete_retired_browser_profile(&caller.principal, row.profile_id)
                .await?;
        }
    }
    let profile_state = if profile_removed {
        None
    } else {
        state
            .store
            .browser_profile(&caller.principal, row.profile_id)
            .await?
            .map(|profile| wire_state(profile.state))
    };
    Ok(JsonResponse(CeremonyStatus {
        ceremony_id: row.id,
        profile_id: row.profile_id,
        kind: row.kind,
        state: row.state,
        expires_at: row.expires_at,
        profile_state,
    }))
}

fn task_permission(row: &TaskPermissionRow) -> TaskPermission {
    TaskPermission {
        task_permission_id: row.id,
        session_id: row.session_id,
        run_id: row.run_id,
        profile_id: row.profile_id,
        origins: row.origins.clone(),
        exceptions: row.exceptions.clone(),
        max_actions: row.max_actions,
        actions_used: row.actions_used,
        remaining_actions: if row.active {
            row.max_actions.saturating_sub(row.actions_used)
        } else {
            0
        },
        expires_at: row.expires_at,
        created_at: row.created_at,
        stopped_at: row.stopped_at,
        active: row.active,
    }
}

/// The task permissions in force (`Allow all actions for this task`), newest first.
#[utoipa::path(
    get, path = "/v1/browser/task-permissions", tag = "browser",
    security(("bearer" = ["browser.read"])),
    responses((status = 200, description = "The active task permissions", body = TaskPermissionList))
)]
pub async fn task_permissions(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
) -> Result<JsonResponse<TaskPermissionList>, ApiError> {
    let rows = state.store.active_task_permissions(&caller.principal).await?;
    Ok(JsonResponse(TaskPermissionList {
        task_permissions: rows.iter().map(task_permission).collect(),
    }))
}

/// Stops a task permission: from now on it allows nothing, and an action it allowed that has
/// not started is not made (the agent is told). Stopping again answers the same.
#[utoipa::path(
    post, path = "/v1/browser/task-permissions/{task_permission_id}/stop", tag = "browser",
    security(("bearer" = ["browser.write"])),
    params(("task_permission_id" = Uuid, Path)),
    responses((status = 200, description = "Stopped", body = TaskPermission))
)]
pub async fn stop_task_permission(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<JsonResponse<TaskPermission>, ApiError> {
    let id: Uuid = parse_uuid(&id, ErrorCode::TaskPermissionNotFound)?;
    let row = state
        .store
        .stop_task_permission(&caller.principal, id)
        .await?
        .ok_or_else(|| ApiError::new(ErrorCode::TaskPermissionNotFound))?;
    tracing::info!(task_permission_id = %row.id, run_id = %row.run_id, "task permission stopped");
    Ok(JsonResponse(task_permission(&row)))
}
