//! The OpenAPI document describes exactly the mounted routes, with the scopes they enforce.

use api::routes::{Access, catalog};
use domain::flags::FeatureFlags;
use serde_json::Value;

use crate::support::{Env, TestApp};

/// Every `$ref` under `value` that points into `document`.
fn references<'a>(value: &'a Value, found: &mut Vec<&'a str>) {
    match value {
        Value::Object(members) => {
            for (name, member) in members {
                match (name.as_str(), member) {
                    ("$ref", Value::String(target)) => found.push(target),
                    _ => references(member, found),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| references(item, found)),
        _ => {}
    }
}

/// The request bodies that refuse unknown members say so, in each variant of a tagged body
/// (the server answers 422 to an unknown member, so a schema that allowed one would invite
/// requests the contract test reads as valid).
fn check_closed_bodies(document: &Value) {
    let schemas = &document["components"]["schemas"];
    let closed = |schema: &Value| schema["additionalProperties"] == Value::Bool(false);
    for name in [
        "UpdatePerson",
        "CorrectFact",
        "OtherPerson",
        "ContactRef",
        "ReviewMemory",
        "RepairIdentity",
    ] {
        let schema = &schemas[name];
        if schema.is_null() {
            continue;
        }
        match schema["oneOf"].as_array() {
            Some(variants) => {
                assert!(!closed(schema), "{name}: closed per variant, not on the oneOf");
                for variant in variants.iter().filter(|variant| variant.get("properties").is_some()) {
                    assert!(closed(variant), "{name}: {variant} allows unknown members");
                }
            }
            None => assert!(closed(schema), "{name} allows unknown members"),
        }
    }
}

async fn check_document(app: &TestApp, flags: &FeatureFlags) {
    let (status, document) = app.get_json("/v1/openapi.json").await;
    assert_eq!(status, 200);
    check_closed_bodies(&document);
    // Every reference resolves (a parameter's enum schema, say, is among the components).
    let mut found = Vec::new();
    references(&document, &mut found);
    assert!(!found.is_empty());
    for target in found {
        let pointer = target
            .strip_prefix('#')
            .unwrap_or_else(|| panic!("{target} is not local"));
        assert!(document.pointer(pointer).is_some(), "{target} resolves to nothing");
    }
    assert_eq!(document["openapi"].as_str().map(|v| v.starts_with("3.")), Some(true));
    let paths = document["paths"].as_object().expect("paths");

    let mut documented = 0;
    for (path, item) in paths {
        for (method, _) in item.as_object().expect("path item") {
            documented += 1;
            let mounted = catalog().iter().any(|route| {
                route.path == path && route.method.as_str().eq_ignore_ascii_case(method) && route.is_mounted(flags)
            });
            assert!(mounted, "{method} {path} is documented but not mounted");
        }
    }

    let mut mounted = 0;
    for route in catalog().iter().filter(|route| route.is_mounted(flags)) {
        mounted += 1;
        let operation = &paths
            .get(route.path)
            .unwrap_or_else(|| panic!("{route:?} missing from the document"))
            [route.method.as_str().to_ascii_lowercase()];
        assert!(operation.is_object(), "{route:?} missing from the document");
        let security = &operation["security"];
        match route.access {
            Access::Public => assert_eq!(*security, Value::Null, "{route:?} is public"),
            Access::Scoped(scope) => {
                assert_eq!(
                    *security,
                    serde_json::json!([{ "bearer": [scope.as_str()] }, { "web_session": [scope.as_str()] }]),
                    "{route:?} documents its scope"
                )
            }
            Access::Authenticated => assert_eq!(
                *security,
                serde_json::json!([{ "bearer": [] }, { "web_session": [] }]),
                "{route:?} takes either credential"
            ),
            Access::BearerToken => assert_eq!(
                *security,
                serde_json::json!([{ "bearer": [] }]),
                "{route:?} takes the token only"
            ),
        }
    }
    assert_eq!(documented, mounted);
}

#[tokio::test]
async fn document_matches_the_router_with_flags_off_and_on() {
    let off = TestApp::spawn().await;
    check_document(&off, &FeatureFlags::default()).await;
    let (_, document) = off.get_json("/v1/openapi.json").await;
    assert!(document["paths"].get("/v1/notifications").is_none());
    assert!(document["paths"].get("/v1/email/threads").is_none());

    let on = TestApp::spawn_with(
        Env::default()
            .set("AGENT_NOTIFICATION_API_ENABLED", "1")
            .set("AGENT_NOTIFICATION_DISPATCH_ENABLED", "1")
            .set("AGENT_EMAIL_MODE_ENABLED", "1")
            .set("AGENT_EMAIL_UNSUBSCRIBE_ENABLED", "1")
            .set("AGENT_CALL_ENABLED", "1")
            .set("AGENT_MEMORY_API_ENABLED", "1")
            .with_mail(),
    )
    .await;
    let flags = FeatureFlags::with(&[
        domain::flags::Flag::NotificationApi,
        domain::flags::Flag::NotificationDispatch,
        domain::flags::Flag::Email,
        domain::flags::Flag::EmailMode,
        domain::flags::Flag::EmailUnsubscribe,
        domain::flags::Flag::Call,
        domain::flags::Flag::MemoryApi,
    ])
    .expect("flags");
    check_document(&on, &flags).await;
    let (_, document) = on.get_json("/v1/openapi.json").await;
    assert!(document["components"]["schemas"]["ReviewMemory"]["oneOf"].is_array());
    assert!(document["components"]["schemas"]["RepairIdentity"]["oneOf"].is_array());
}

#[test]
fn every_catalog_route_is_annotated() {
    // Even routes behind flags must be described, so turning a flag on never mounts an
    // undocumented route.
    let all_on = FeatureFlags::with(&[
        domain::flags::Flag::NotificationApi,
        domain::flags::Flag::NotificationDispatch,
        domain::flags::Flag::Email,
        domain::flags::Flag::EmailMode,
        domain::flags::Flag::EmailUnsubscribe,
        domain::flags::Flag::Call,
        domain::flags::Flag::Browser,
        domain::flags::Flag::MemoryApi,
    ])
    .expect("flags");
    let document = api::openapi::annotated(&all_on);
    for route in catalog() {
        let item = document.paths.paths.get(route.path);
        assert!(item.is_some(), "{route:?} has no #[utoipa::path] annotation");
    }
}

#[tokio::test]
async fn every_operation_documents_its_errors_ids_and_links() {
    let app = TestApp::spawn().await;
    let (_, document) = app.get_json("/v1/openapi.json").await;
    let flags = FeatureFlags::default();
    let mut ids = std::collections::BTreeSet::new();
    for route in catalog().iter().filter(|route| route.is_mounted(&flags)) {
        let operation = &document["paths"][route.path][route.method.as_str().to_ascii_lowercase()];
        let id = operation["operationId"].as_str().expect("operationId");
        assert!(ids.insert(id.to_owned()), "{id} twice");
        for code in route.errors() {
            let response = &operation["responses"][code.status().to_string()];
            let schema = &response["content"]["application/problem+json"]["schema"]["allOf"][1];
            let codes = schema["properties"]["code"]["enum"].as_array().expect("code enum");
            assert!(
                codes.contains(&Value::from(code.as_str())),
                "{route:?} documents {} under {}",
                code.as_str(),
                code.status()
            );
        }
        if let Access::Scoped(_) = route.access {
            assert!(operation["responses"]["401"].is_object() && operation["responses"]["403"].is_object());
        }
        if route.access != Access::Public {
            assert!(operation["responses"]["401"].is_object(), "{route:?} documents 401");
        }
    }
    let link = &document["paths"]["/v1/sessions"]["post"]["responses"]["201"]["links"]["SubmitMessage"];
    assert_eq!(link["operationId"], "runs.submit");
    assert_eq!(link["parameters"]["session_id"], "$response.body#/session_id");
    let problem = &document["components"]["schemas"]["Problem"]["properties"];
    for member in [
        "type",
        "title",
        "status",
        "code",
        "detail",
        "field",
        "run_id",
        "required_scope",
        "max_bytes",
    ] {
        assert!(problem[member].is_object(), "Problem documents `{member}`");
    }
    let kinds: Vec<&Value> = document["components"]["schemas"]["Event"]["oneOf"]
        .as_array()
        .expect("event variants")
        .iter()
        .map(|variant| &variant["properties"]["kind"]["enum"][0])
        .collect();
    assert_eq!(
        kinds.len(),
        wire::event::Event::KINDS.len(),
        "every event kind is described"
    );
    for (kind, described) in wire::event::Event::KINDS.iter().zip(kinds) {
        assert_eq!(described, kind, "the stream's `kind` as sent");
    }
    assert_eq!(
        document["components"]["schemas"]["CreateSession"]["properties"]["agent_id"]["enum"],
        serde_json::json!(["default"]),
        "the configured agents"
    );
}

#[tokio::test]
async fn request_patterns_are_the_rules_the_server_applies() {
    let app = TestApp::spawn().await;
    let (_, document) = app.get_json("/v1/openapi.json").await;
    let schemas = &document["components"]["schemas"];
    let cases = [
        ("FolderName", "name", domain::text::VISIBLE_PATTERN),
        ("FolderProposalAcceptance", "name", domain::text::VISIBLE_PATTERN),
        ("ScheduleDefinition", "title", domain::text::VISIBLE_PATTERN),
        ("ScheduleDefinition", "agent_id", domain::text::VISIBLE_PATTERN),
        ("ScheduleDefinition", "agent_version", domain::text::VISIBLE_PATTERN),
        ("ScheduleDefinition", "instruction", domain::text::SOME_TEXT_PATTERN),
        ("AnswerQuestion", "text", domain::text::SOME_TEXT_PATTERN),
        ("SubmitMessage", "text", domain::text::NO_NUL_PATTERN),
        (
            "RegisterDevice",
            "client_device_id",
            domain::text::VISIBLE_ASCII_PATTERN,
        ),
        (
            "RegisterWebPushDevice",
            "client_device_id",
            domain::text::VISIBLE_ASCII_PATTERN,
        ),
        ("RegisterWebPushDevice", "endpoint", domain::web_push::ENDPOINT_PATTERN),
        ("RegisterWebPushDevice", "p256dh", domain::web_push::P256DH_PATTERN),
        ("RegisterWebPushDevice", "auth", domain::web_push::AUTH_PATTERN),
    ];
    for (schema, member, pattern) in cases {
        assert_eq!(
            schemas[schema]["properties"][member]["pattern"], pattern,
            "{schema}.{member} states domain::text's rule"
        );
    }
    assert_eq!(
        schemas["SubmitMessage"]["anyOf"][0]["properties"]["text"]["pattern"],
        domain::text::SOME_TEXT_PATTERN
    );
    for schema in [
        "CreateSession",
        "FolderProposalAcceptance",
        "SubmitMessage",
        "ScheduleDefinition",
        "ScheduleLimits",
        "Cadence",
    ] {
        assert_eq!(
            schemas[schema]["additionalProperties"], false,
            "{schema} refuses unknown members"
        );
    }
}
