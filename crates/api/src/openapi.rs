//! The OpenAPI 3.1 description of the API, generated from the handlers' annotations and trimmed
//! to the routes this process has mounted, so the document served always matches the router.

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use domain::flags::FeatureFlags;
use serde::Serialize;
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::openapi::{OpenApi as Document, PathItem};
use utoipa::{Modify, OpenApi, ToSchema};

use crate::AppState;
use crate::handlers::{
    approvals, artifacts, events, folders, health, memories, notifications, runs, schedules, sessions, settings,
};
use crate::routes::catalog;

/// An RFC 9457 problem document, the body of every error answer.
#[derive(Serialize, ToSchema)]
pub struct Problem {
    /// `urn:steward:problem:<code>`.
    #[serde(rename = "type")]
    kind: String,
    /// Fixed per code.
    title: String,
    status: u16,
    /// The stable machine-readable error code.
    code: String,
    /// What went wrong this time, for people.
    detail: Option<String>,
}

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut Document) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme("bearer", SecurityScheme::Http(Http::new(HttpAuthScheme::Bearer)));
    }
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Steward API",
        description = "The owner's agent service. Every route except readiness and this document takes \
                       `Authorization: Bearer <token>`; the scopes each route needs are listed as its security \
                       requirement. Errors are `application/problem+json` with a stable `code`."
    ),
    paths(
        health::ready,
        serve,
        sessions::create,
        sessions::list,
        sessions::get,
        sessions::update,
        sessions::delete,
        artifacts::upload,
        artifacts::metadata,
        artifacts::content,
        runs::submit,
        events::stream,
        runs::get,
        runs::cancel,
        approvals::input,
        approvals::pending,
        approvals::decide,
        schedules::create,
        schedules::list,
        schedules::get,
        schedules::cancel,
        schedules::occurrences,
        settings::get,
        settings::save,
        folders::list,
        folders::create,
        folders::rename,
        folders::delete,
        memories::list,
        notifications::pending,
        notifications::acknowledge,
        notifications::register,
        notifications::revoke,
    ),
    components(schemas(Problem)),
    modifiers(&BearerAuth),
)]
struct ApiDoc;

fn keep(item: &mut PathItem, path: &str, flags: &FeatureFlags) {
    use axum::http::Method;
    let mounted = |method: Method| {
        catalog()
            .iter()
            .any(|route| route.path == path && route.method == method && route.is_mounted(flags))
    };
    for (slot, method) in [
        (&mut item.get, Method::GET),
        (&mut item.post, Method::POST),
        (&mut item.put, Method::PUT),
        (&mut item.patch, Method::PATCH),
        (&mut item.delete, Method::DELETE),
        (&mut item.head, Method::HEAD),
        (&mut item.options, Method::OPTIONS),
        (&mut item.trace, Method::TRACE),
    ] {
        if slot.is_some() && !mounted(method) {
            *slot = None;
        }
    }
}

/// The document for the routes mounted under `flags`.
pub fn document(flags: &FeatureFlags) -> Document {
    let mut document = ApiDoc::openapi();
    document.info.version = env!("CARGO_PKG_VERSION").to_owned();
    for (path, item) in document.paths.paths.iter_mut() {
        keep(item, path, flags);
    }
    document.paths.paths.retain(|_, item| {
        [
            &item.get,
            &item.post,
            &item.put,
            &item.patch,
            &item.delete,
            &item.head,
            &item.options,
            &item.trace,
        ]
        .iter()
        .any(|operation| operation.is_some())
    });
    document
}

pub fn document_json(flags: &FeatureFlags) -> String {
    document(flags)
        .to_pretty_json()
        .unwrap_or_else(|error| format!("{{\"error\": \"{error}\"}}"))
}

/// This document.
#[utoipa::path(
    get, path = "/v1/openapi.json", tag = "meta",
    responses((status = 200, description = "The OpenAPI 3.1 document for the mounted routes", content_type = "application/json"))
)]
pub async fn serve(State(state): State<AppState>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "application/json")],
        state.settings.openapi_json.clone(),
    )
}
