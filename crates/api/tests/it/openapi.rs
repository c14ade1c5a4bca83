//! The OpenAPI document describes exactly the mounted routes, with the scopes they enforce.

use api::routes::{Access, catalog};
use domain::flags::FeatureFlags;
use serde_json::Value;

use crate::support::{Env, TestApp};

async fn check_document(app: &TestApp, flags: &FeatureFlags) {
    let (status, document) = app.get_json("/v1/openapi.json").await;
    assert_eq!(status, 200);
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
                    serde_json::json!([{ "bearer": [scope.as_str()] }]),
                    "{route:?} documents its scope"
                )
            }
        }
    }
    assert_eq!(documented, mounted);
}

#[tokio::test]
async fn document_matches_the_router_with_flags_off_and_on() {
    let off = TestApp::spawn().await;
    check_document(&off, &FeatureFlags::default()).await;
    let (_, document) = off.get_json("/v1/openapi.json").await;
    assert!(document["paths"].get("/v1/memories").is_none());

    let on = TestApp::spawn_with(Env::default().set("AGENT_MEMORY_API_ENABLED", "1")).await;
    let flags = FeatureFlags::with(&[domain::flags::Flag::MemoryApi]).expect("flags");
    check_document(&on, &flags).await;
}

#[test]
fn every_catalog_route_is_annotated() {
    // Even routes behind flags must be described, so turning a flag on never mounts an
    // undocumented route.
    let all_on = FeatureFlags::with(&[
        domain::flags::Flag::MemoryApi,
        domain::flags::Flag::NotificationApi,
        domain::flags::Flag::NotificationDispatch,
    ])
    .expect("flags");
    let document = api::openapi::document(&all_on);
    for route in catalog() {
        let item = document.paths.paths.get(route.path);
        assert!(item.is_some(), "{route:?} has no #[utoipa::path] annotation");
    }
}
