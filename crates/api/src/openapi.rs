//! The OpenAPI 3.1 description of the API, generated from the handlers' annotations and trimmed
//! to the routes this process has mounted, so the document served always matches the router.

use domain::ErrorCode;
use domain::approval::pointer_token;
use domain::flags::FeatureFlags;
use serde_json::{Value, json};
use utoipa::openapi::security::{ApiKey, ApiKeyValue, Http, HttpAuthScheme, SecurityScheme};
use utoipa::openapi::{OpenApi as Document, PathItem};
use utoipa::{Modify, OpenApi};

use crate::handlers::{
    self, approvals, artifacts, browser, calls, drafts, email, events, feedback, folder_proposals, folders, health,
    imports, memory, notifications, people, runs, schedules, sessions, settings, subscriptions, web_session,
};
use crate::routes::{Access, catalog};

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut Document) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme("bearer", SecurityScheme::Http(Http::new(HttpAuthScheme::Bearer)));
        components.add_security_scheme(
            "web_session",
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::with_description(
                crate::auth::SECURE_COOKIE,
                "The web client's session, made by `POST /v1/web/session` (named `steward_session` on a \
                 loopback host). A request that changes state must also send `X-Steward-CSRF: 1`.",
            ))),
        );
    }
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Steward API",
        description = "The owner's agent service. Every route except readiness and this document takes \
                       `Authorization: Bearer <token>` or the web client's session cookie; the scopes each \
                       route needs are listed as its security requirement. Errors are `application/problem+json` with a stable `code`."
    ),
    paths(
        health::ready,
        health::live,
        handlers::openapi::serve,
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
        folder_proposals::list,
        folder_proposals::accept,
        folder_proposals::decline,
        notifications::pending,
        notifications::acknowledge,
        notifications::register,
        notifications::web_push_key,
        notifications::register_web_push,
        notifications::revoke,
        email::accounts,
        email::refresh,
        email::threads,
        email::thread,
        email::archive,
        email::move_to_inbox,
        email::report_spam,
        email::not_spam,
        email::clear_spam_flag,
        email::operation_status,
        calls::list,
        calls::get,
        calls::cancel,
        calls::delete,
        memory::list,
        memory::get,
        memory::review,
        memory::delete,
        memory::recalled,
        people::list,
        people::duplicates,
        people::get,
        people::update,
        people::forget,
        people::correct,
        people::merge,
        people::not_the_same,
        people::repair,
        imports::start,
        imports::list,
        imports::get,
        imports::cancel,
        browser::list,
        browser::create,
        browser::sign_in,
        browser::remove,
        browser::status,
        browser::task_permissions,
        browser::stop_task_permission,
        subscriptions::list,
        subscriptions::unsubscribe,
        subscriptions::keep,
        subscriptions::undo_keep,
        subscriptions::report_spam,
        subscriptions::not_spam,
        drafts::create,
        drafts::get,
        drafts::save,
        drafts::history,
        drafts::restore,
        drafts::review,
        drafts::propose,
        feedback::endorse,
        feedback::give,
        feedback::undo,
        feedback::learning,
        feedback::set_learning,
        feedback::reset,
        feedback::exclude,
        feedback::include,
        web_session::exchange,
        web_session::current,
        web_session::revoke,
    ),
    components(schemas(
        wire::problem::Problem,
        wire::event::Event,
        wire::email::InboxView,
        wire::people::PeopleCollection
    )),
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

/// The annotated document for the routes mounted under `flags`, before the catalog's additions.
pub fn annotated(flags: &FeatureFlags) -> Document {
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

/// What the served document is made for: the mounted routes and the values this deployment
/// accepts where a request names one of a configured set.
#[derive(Debug)]
pub struct Described<'a> {
    pub flags: &'a FeatureFlags,
    /// The agents a session can be created with.
    pub agent_ids: Vec<String>,
    /// The model combinations the settings offer.
    pub offered_models: &'a domain::models::Offered,
}

/// The document served at `/v1/openapi.json`: the annotated operations, each given its
/// `operationId`, every error status it can answer (a problem document whose `code` is an enum
/// of that operation's codes at that status) and links from creating operations to those that
/// use the ids they return. All of it comes from the route catalog the router is built from.
pub fn document(described: &Described<'_>) -> Value {
    let mut document = serde_json::to_value(annotated(described.flags)).unwrap_or_default();
    for route in catalog().iter().filter(|route| route.is_mounted(described.flags)) {
        let method = route.method.as_str().to_ascii_lowercase();
        let Some(operation) = document
            .pointer_mut(&format!("/paths/{}/{method}", pointer_token(route.path)))
            .and_then(Value::as_object_mut)
        else {
            continue;
        };
        operation.insert("operationId".into(), json!(route.operation_id));
        match security(route.access) {
            Some(security) => operation.insert("security".into(), security),
            None => operation.remove("security"),
        };
        let responses = operation
            .entry("responses")
            .or_insert_with(|| json!({}))
            .as_object_mut();
        if let Some(responses) = responses {
            responses.retain(|status, _| !status.starts_with('4') && !status.starts_with('5'));
            for (status, response) in problem_responses(&route.errors()) {
                responses.insert(status, response);
            }
            for (status, name, link) in links(route.operation_id) {
                if let Some(response) = responses.get_mut(status).and_then(Value::as_object_mut) {
                    let links = response.entry("links").or_insert_with(|| json!({}));
                    if let Some(links) = links.as_object_mut() {
                        links.insert(name.to_owned(), link);
                    }
                }
            }
        }
    }
    refine(&mut document, described);
    document
}

/// The security requirement of a route taking `access`, from the catalog the guard is built from.
fn security(access: Access) -> Option<Value> {
    match access {
        Access::Public => None,
        Access::Scoped(scope) => Some(json!([{ "bearer": [scope.as_str()] }, { "web_session": [scope.as_str()] }])),
        Access::Authenticated => Some(json!([{ "bearer": [] }, { "web_session": [] }])),
        Access::BearerToken => Some(json!([{ "bearer": [] }])),
    }
}

/// One response per status among `errors`, each a problem document limited to its codes.
fn problem_responses(errors: &[ErrorCode]) -> Vec<(String, Value)> {
    let mut statuses: Vec<u16> = errors.iter().map(|code| code.status()).collect();
    statuses.sort_unstable();
    statuses.dedup();
    statuses
        .into_iter()
        .map(|status| {
            let mut codes: Vec<ErrorCode> = errors.iter().copied().filter(|code| code.status() == status).collect();
            codes.dedup();
            let description = codes
                .iter()
                .map(|code| format!("`{}`: {}", code.as_str(), code.title()))
                .collect::<Vec<_>>()
                .join("; ");
            let names: Vec<&str> = codes.iter().map(|code| code.as_str()).collect();
            let schema = json!({
                "allOf": [
                    { "$ref": "#/components/schemas/Problem" },
                    {
                        "type": "object",
                        "properties": {
                            "code": { "type": "string", "enum": names },
                            "status": { "type": "integer", "enum": [status] }
                        }
                    }
                ]
            });
            let mut response = json!({
                "description": description,
                "content": { wire::problem::CONTENT_TYPE: { "schema": schema } }
            });
            if status == 401 {
                response["headers"] = json!({
                    "WWW-Authenticate": { "description": "`Bearer`, with the error", "schema": { "type": "string" } }
                });
            }
            (status.to_string(), response)
        })
        .collect()
}

/// The links of a creating operation's success response: `(status, name, link)`.
fn links(operation_id: &str) -> Vec<(&'static str, &'static str, Value)> {
    let to = |operation: &str, parameters: Value| json!({ "operationId": operation, "parameters": parameters });
    let session = || json!({ "session_id": "$response.body#/session_id" });
    match operation_id {
        "sessions.create" => vec![
            ("201", "GetSession", to("sessions.get", session())),
            ("201", "UpdateSession", to("sessions.update", session())),
            ("201", "DeleteSession", to("sessions.delete", session())),
            ("201", "SubmitMessage", to("runs.submit", session())),
            ("201", "UploadArtifact", to("artifacts.upload", session())),
            ("201", "StreamEvents", to("events.stream", session())),
            ("201", "PendingApprovals", to("approvals.pending", session())),
        ],
        "drafts.create" => {
            let draft = || json!({ "draft_id": "$response.body#/draft_id" });
            vec![
                ("201", "GetDraft", to("drafts.get", draft())),
                ("201", "SaveDraft", to("drafts.save", draft())),
                ("201", "DraftHistory", to("drafts.history", draft())),
                ("201", "ReviewDraft", to("drafts.review", draft())),
                ("201", "EndorseStyle", to("feedback.endorse", draft())),
            ]
        }
        "drafts.propose" => vec![
            (
                "202",
                "GetOperation",
                to(
                    "email.operation_status",
                    json!({ "operation_id": "$response.body#/operation/operation_id" }),
                ),
            ),
            (
                "202",
                "GetDraft",
                to("drafts.get", json!({ "draft_id": "$response.body#/draft/draft_id" })),
            ),
        ],
        "feedback.give" => vec![(
            "201",
            "UndoFeedback",
            to(
                "feedback.undo",
                json!({ "feedback_id": "$response.body#/feedback/feedback_id" }),
            ),
        )],
        "feedback.exclude" => vec![(
            "201",
            "RemoveExclusion",
            to(
                "feedback.include",
                json!({ "exclusion_id": "$response.body#/exclusion_id" }),
            ),
        )],
        "email.archive" | "email.move_to_inbox" | "email.report_spam" | "email.not_spam" => vec![(
            "202",
            "GetOperation",
            to(
                "email.operation_status",
                json!({ "operation_id": "$response.body#/operation_id" }),
            ),
        )],
        "email.refresh" => vec![(
            "202",
            "GetOperation",
            to(
                "email.operation_status",
                json!({ "operation_id": "$response.body#/operation/operation_id" }),
            ),
        )],
        "artifacts.upload" => {
            let artifact =
                || json!({ "session_id": "$response.body#/session_id", "artifact_id": "$response.body#/artifact_id" });
            vec![
                ("201", "GetArtifact", to("artifacts.metadata", artifact())),
                ("201", "GetArtifactContent", to("artifacts.content", artifact())),
            ]
        }
        "runs.submit" => {
            let run = || json!({ "run_id": "$response.body#/run/run_id" });
            vec![
                ("202", "GetRun", to("runs.get", run())),
                ("202", "CancelRun", to("runs.cancel", run())),
            ]
        }
        "imports.start" => {
            let import = || json!({ "import_id": "$response.body#/import_id" });
            vec![
                ("202", "GetImport", to("imports.get", import())),
                ("202", "CancelImport", to("imports.cancel", import())),
            ]
        }
        "folders.create" => {
            let folder = || json!({ "folder_id": "$response.body#/folder_id" });
            vec![
                ("201", "RenameFolder", to("folders.rename", folder())),
                ("201", "DeleteFolder", to("folders.delete", folder())),
            ]
        }
        "schedules.create" => {
            let schedule = || json!({ "schedule_id": "$response.body#/schedule/id" });
            vec![
                ("201", "GetSchedule", to("schedules.get", schedule())),
                ("201", "ScheduleOccurrences", to("schedules.occurrences", schedule())),
                (
                    "201",
                    "CancelSchedule",
                    to(
                        "schedules.cancel",
                        json!({ "schedule_id": "$response.body#/schedule/id",
                                "expected_revision": "$response.body#/schedule/revision" }),
                    ),
                ),
            ]
        }
        "notifications.register" | "notifications.register_web_push" => {
            let device = || json!({ "client_device_id": "$response.body#/client_device_id" });
            vec![
                ("201", "RevokeDevice", to("notifications.revoke", device())),
                ("200", "RevokeDevice", to("notifications.revoke", device())),
            ]
        }
        _ => Vec::new(),
    }
}

/// Request schemas said more exactly than the annotations can: every request object refuses
/// unknown members, metadata is any JSON its rules allow, a message needs text or attachments,
/// and members whose valid values this deployment decides (agents, model combinations, time
/// zones) are enums.
fn refine(document: &mut Value, described: &Described<'_>) {
    let schemas = "/components/schemas";
    for name in [
        "CreateSession",
        "UpdateSession",
        "SubmitMessage",
        "DecideApproval",
        "AnswerQuestion",
        "FolderName",
        "FolderProposalAcceptance",
        "SaveModelSettings",
        "RegisterDevice",
        "RegisterWebPushDevice",
        "ScheduleDefinition",
        "ScheduleLimits",
        "Cadence",
        "UpdatePerson",
        "CorrectFact",
        "OtherPerson",
        "ContactRef",
    ] {
        if let Some(schema) = document.pointer_mut(&format!("{schemas}/{name}")) {
            schema["additionalProperties"] = json!(false);
        }
    }
    // An internally tagged body (`action` names the variant) refuses unknown members in each
    // variant: on the `oneOf` itself it would refuse every variant's own members.
    for name in ["ReviewMemory", "RepairIdentity"] {
        if let Some(Value::Array(variants)) = document.pointer_mut(&format!("{schemas}/{name}/oneOf")) {
            for variant in variants
                .iter_mut()
                .filter(|variant| variant.get("properties").is_some())
            {
                variant["additionalProperties"] = json!(false);
            }
        }
    }
    if let Some(agent_id) = document.pointer_mut(&format!("{schemas}/CreateSession/properties/agent_id")) {
        agent_id["enum"] = json!(described.agent_ids);
    }
    if let Some(metadata) = document.pointer_mut(&format!("{schemas}/CreateSession/properties/metadata")) {
        *metadata = json!({ "$ref": "#/components/schemas/MetadataObject" });
    }
    let max = domain::session::METADATA_MAX_NUMBER;
    let no_nul = domain::text::NO_NUL_PATTERN;
    if let Some(Value::Object(components)) = document.pointer_mut(schemas) {
        components.insert(
            "MetadataObject".into(),
            json!({
                "type": "object",
                "description": "Client metadata: at most 16 KiB serialised; strings without U+0000; numbers within ±(2^53 − 1)",
                "propertyNames": { "pattern": no_nul },
                "additionalProperties": { "$ref": "#/components/schemas/MetadataValue" }
            }),
        );
        components.insert(
            "MetadataValue".into(),
            json!({
                "anyOf": [
                    { "type": "string", "pattern": no_nul },
                    { "type": "number", "minimum": -max, "maximum": max },
                    { "type": "boolean" },
                    { "type": "null" },
                    { "type": "array", "items": { "$ref": "#/components/schemas/MetadataValue" } },
                    { "$ref": "#/components/schemas/MetadataObject" }
                ]
            }),
        );
    }
    if let Some(message) = document.pointer_mut(&format!("{schemas}/SubmitMessage")) {
        message["anyOf"] = json!([
            { "required": ["text"], "properties": { "text": { "pattern": domain::text::SOME_TEXT_PATTERN } } },
            { "required": ["attachments"], "properties": { "attachments": { "minItems": 1 } } }
        ]);
    }
    if let Some(settings) = document.pointer_mut(&format!("{schemas}/SaveModelSettings")) {
        let choices = |kind: &str, models: &[domain::models::OfferedModel]| -> Value {
            let any: Vec<Value> = models
                .iter()
                .map(|offered| {
                    json!({ "properties": {
                        format!("{kind}_model"): { "enum": [offered.model] },
                        format!("{kind}_reasoning_effort"): { "enum": offered.reasoning_efforts },
                    }})
                })
                .collect();
            json!({ "anyOf": any })
        };
        settings["allOf"] = json!([
            choices("chat", &described.offered_models.chat),
            choices("memory", &described.offered_models.memory)
        ]);
    }
    if let Some(form) = document.pointer_mut(&format!("{schemas}/UploadForm")) {
        form["additionalProperties"] = json!(false);
        form["required"] = json!(["file"]);
    }
    // Any bytes are a file (an empty one too): the raw forms take no schema, nor do the bytes
    // read back.
    if let Some(content) = document.pointer_mut(
        "/paths/~1v1~1sessions~1{session_id}~1artifacts~1{artifact_id}~1content/get/responses/200/content/*~1*",
    ) && let Value::Object(media) = content
    {
        media.remove("schema");
    }
    if let Some(body) = document.pointer_mut("/paths/~1v1~1sessions~1{session_id}~1artifacts/post/requestBody") {
        for raw in ["application/octet-stream"] {
            if let Some(Value::Object(media)) = body.pointer_mut(&format!("/content/{}", pointer_token(raw))) {
                media.remove("schema");
            }
        }
    }
    // Each server-sent event: its `data` is JSON, a persisted frame or transient output.
    if let Some(stream) =
        document.pointer_mut("/paths/~1v1~1sessions~1{session_id}~1events/get/responses/200/content/text~1event-stream")
    {
        stream["schema"] = json!({
            "type": "object",
            "description": "One event: persisted events carry `id` (their sequence); transient output has none",
            "required": ["event", "data"],
            "properties": {
                "id": { "type": "string", "pattern": "^[0-9]+$" },
                "event": { "type": "string" },
                "data": {
                    "type": "string",
                    "contentMediaType": "application/json",
                    "contentSchema": { "$ref": "#/components/schemas/StreamData" }
                },
                "retry": { "type": "integer" }
            }
        });
    }
    if let Some(timezone) = document.pointer_mut(&format!("{schemas}/Cadence/properties/timezone")) {
        let mut zones: Vec<String> = jiff::tz::db().available().map(|zone| zone.to_string()).collect();
        zones.sort();
        timezone["enum"] = json!(zones);
    }
    let Some(Value::Object(paths)) = document.get_mut("paths") else {
        return;
    };
    for operation in paths
        .values_mut()
        .filter_map(Value::as_object_mut)
        .flat_map(|item| item.values_mut())
    {
        for parameter in operation
            .get_mut("parameters")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            match parameter["name"].as_str() {
                Some("Idempotency-Key") => {
                    parameter["schema"] = json!({
                        "type": "string", "maxLength": 255, "pattern": domain::text::VISIBLE_ASCII_PATTERN
                    });
                }
                Some("filename") => {
                    parameter["schema"]["not"] = json!({ "enum": [".", ".."] });
                }
                Some("Last-Event-ID") => {
                    parameter["schema"] = json!({ "type": "integer", "format": "int64", "minimum": 0 });
                }
                _ => {}
            }
        }
    }
}

pub fn document_json(described: &Described<'_>) -> String {
    serde_json::to_string_pretty(&document(described)).unwrap_or_else(|error| format!("{{\"error\": \"{error}\"}}"))
}
