//! Model settings: the owner picks the chat and memory models among the offered combinations.
//! New settings apply to new chats and to the next message of existing ones.

use axum::extract::State;
use axum::{Extension, Json as JsonResponse};
use domain::ErrorCode;
use domain::models::{ModelChoice, Offered};
use wire::request::SaveModelSettings;
use wire::response::ModelSettings;

use crate::AppState;
use crate::auth::Caller;
use crate::extract::Json;
use crate::problem::ApiError;

fn view(choice: ModelChoice, offered: &Offered) -> ModelSettings {
    ModelSettings {
        chat_model: choice.chat_model,
        chat_reasoning_effort: choice.chat_reasoning_effort,
        memory_model: choice.memory_model,
        memory_reasoning_effort: choice.memory_reasoning_effort,
        offered: offered.clone(),
    }
}

/// The current settings (the first offered combinations until the owner chooses) and the offer.
#[utoipa::path(
    get, path = "/v1/settings/models", tag = "settings",
    security(("bearer" = ["settings.read"])),
    responses((status = 200, description = "Current settings and the offered combinations", body = ModelSettings))
)]
pub async fn get(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
) -> Result<JsonResponse<ModelSettings>, ApiError> {
    let offered = &state.settings.offered_models;
    // A stored choice the offer no longer includes falls back to the default.
    let choice = offered.effective(state.store.model_settings(&caller.principal).await?);
    Ok(JsonResponse(view(choice, offered)))
}

/// Saves the settings; a combination the server does not offer is refused, naming the field.
#[utoipa::path(
    put, path = "/v1/settings/models", tag = "settings",
    security(("bearer" = ["settings.write"])),
    request_body = SaveModelSettings,
    responses(
        (status = 200, description = "Saved", body = ModelSettings),
    )
)]
pub async fn save(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Json(body): Json<SaveModelSettings>,
) -> Result<JsonResponse<ModelSettings>, ApiError> {
    let choice = ModelChoice {
        chat_model: body.chat_model,
        chat_reasoning_effort: body.chat_reasoning_effort,
        memory_model: body.memory_model,
        memory_reasoning_effort: body.memory_reasoning_effort,
    };
    let offered = &state.settings.offered_models;
    if let Some(field) = offered.refuse(&choice) {
        return Err(ApiError::new(ErrorCode::UnsupportedModelChoice)
            .detail(format!("`{field}` is not among the offered combinations"))
            .field(field));
    }
    state.store.save_model_settings(&caller.principal, &choice).await?;
    Ok(JsonResponse(view(choice, offered)))
}
