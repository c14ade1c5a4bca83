//! Architecture invariants: dependency closures, checked against the real dependency graph
//! (`cargo metadata`), here; database privileges in `privileges`; systemd units in `systemd`;
//! the web client's vendored libraries in `web_vendor`; the documents' links and configuration
//! pages in `docs`.
//!
//! Each invariant is stated as an absence: a crate's normal (non-dev, non-build) dependency
//! closure must not contain the listed packages. Adding such a dependency later fails here.

mod cycles;
mod docs;
mod privileges;
mod release;
mod systemd;
mod web_vendor;

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;

struct Graph {
    /// Package id → (package name, ids of its normal dependencies).
    nodes: HashMap<String, (String, Vec<String>)>,
    /// Workspace member name → package id.
    members: HashMap<String, String>,
    /// Workspace members that build a binary.
    binaries: Vec<String>,
    /// The names of the binaries the workspace builds.
    bin_targets: BTreeSet<String>,
}

/// The names of the binaries the workspace builds.
pub(crate) fn bin_targets() -> &'static BTreeSet<String> {
    &graph().bin_targets
}

fn graph() -> &'static Graph {
    static GRAPH: OnceLock<Graph> = OnceLock::new();
    GRAPH.get_or_init(|| {
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root");
        // Resolved for this host only: other platforms' crates are never downloaded by a build,
        // and the check must run offline.
        let rustc = Command::new("rustc").arg("-vV").output().expect("run rustc -vV");
        let host = String::from_utf8_lossy(&rustc.stdout)
            .lines()
            .find_map(|line| line.strip_prefix("host: ").map(str::to_owned))
            .expect("rustc reports its host");
        let output = Command::new(env!("CARGO"))
            .args([
                "metadata",
                "--format-version",
                "1",
                "--locked",
                "--offline",
                "--filter-platform",
                &host,
            ])
            .current_dir(workspace)
            .output()
            .expect("run cargo metadata");
        assert!(
            output.status.success(),
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let metadata: Value = serde_json::from_slice(&output.stdout).expect("metadata json");
        let names: HashMap<&str, &str> = metadata["packages"]
            .as_array()
            .expect("packages")
            .iter()
            .map(|p| (p["id"].as_str().expect("id"), p["name"].as_str().expect("name")))
            .collect();
        let members = metadata["workspace_members"]
            .as_array()
            .expect("members")
            .iter()
            .map(|id| {
                let id = id.as_str().expect("member id");
                (names[id].to_owned(), id.to_owned())
            })
            .collect();
        let nodes = metadata["resolve"]["nodes"]
            .as_array()
            .expect("resolve nodes")
            .iter()
            .map(|node| {
                let id = node["id"].as_str().expect("node id");
                let normal = node["deps"]
                    .as_array()
                    .expect("deps")
                    .iter()
                    .filter(|dep| {
                        dep["dep_kinds"]
                            .as_array()
                            .is_some_and(|kinds| kinds.iter().any(|k| k["kind"].is_null()))
                    })
                    .map(|dep| dep["pkg"].as_str().expect("dep id").to_owned())
                    .collect();
                (id.to_owned(), (names[id].to_owned(), normal))
            })
            .collect();
        let member_ids: BTreeSet<&str> = metadata["workspace_members"]
            .as_array()
            .expect("members")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let mut binaries: Vec<String> = metadata["packages"]
            .as_array()
            .expect("packages")
            .iter()
            .filter(|package| member_ids.contains(package["id"].as_str().unwrap_or_default()))
            .filter(|package| {
                package["targets"].as_array().is_some_and(|targets| {
                    targets.iter().any(|target| {
                        target["kind"]
                            .as_array()
                            .is_some_and(|kinds| kinds.iter().any(|kind| kind == "bin"))
                    })
                })
            })
            .map(|package| package["name"].as_str().expect("name").to_owned())
            .collect();
        binaries.sort();
        let bin_targets = metadata["packages"]
            .as_array()
            .expect("packages")
            .iter()
            .filter(|package| member_ids.contains(package["id"].as_str().unwrap_or_default()))
            .flat_map(|package| package["targets"].as_array().cloned().unwrap_or_default())
            .filter(|target| {
                target["kind"]
                    .as_array()
                    .is_some_and(|kinds| kinds.iter().any(|kind| kind == "bin"))
            })
            .filter_map(|target| target["name"].as_str().map(str::to_owned))
            .collect();
        Graph {
            nodes,
            members,
            binaries,
            bin_targets,
        }
    })
}

/// Names of every package `member` depends on at run time, directly or not.
fn closure(member: &str) -> BTreeSet<String> {
    let graph = graph();
    let start = graph
        .members
        .get(member)
        .unwrap_or_else(|| panic!("`{member}` is not a workspace member"));
    let mut seen = BTreeSet::new();
    let mut names = BTreeSet::new();
    let mut queue = VecDeque::from([start.clone()]);
    while let Some(id) = queue.pop_front() {
        if !seen.insert(id.clone()) {
            continue;
        }
        let (name, deps) = &graph.nodes[&id];
        if &id != start {
            names.insert(name.clone());
        }
        queue.extend(deps.iter().cloned());
    }
    names
}

fn assert_excludes(member: &str, forbidden: &[&str]) {
    let closure = closure(member);
    let found: Vec<&&str> = forbidden.iter().filter(|name| closure.contains(**name)).collect();
    assert!(
        found.is_empty(),
        "`{member}` must not depend on {found:?} (its closure: {closure:?})"
    );
}

#[test]
fn domain_does_no_io() {
    assert_excludes(
        "domain",
        &[
            "tokio",
            "sqlx",
            "sqlx-core",
            "reqwest",
            "hyper",
            "axum",
            "mio",
            "nix",
            "store",
        ],
    );
}

#[test]
fn hardening_and_pgcluster_stay_synchronous_and_small() {
    // xtask links pgcluster: keeping it free of the async stack keeps `cargo xtask` quick to build.
    // steward-preflight runs on hosts as the deploy user: synchronous, no database, no network.
    for member in ["hardening", "pgcluster", "xtask", "preflight", "steward-preflight"] {
        assert_excludes(member, &["tokio", "sqlx", "sqlx-core", "reqwest", "hyper", "axum"]);
    }
}

#[test]
fn only_the_workers_hold_model_clients() {
    // Model clients and their credentials live in the worker (the agent loop) and the async
    // worker (assessment and proposed replies, no agent loop); no other binary of the
    // workspace links either.
    for member in binaries() {
        match member.as_str() {
            "steward-worker" => {}
            "steward-async-worker" => assert_excludes(&member, &["agent"]),
            // Development tools, never deployed: they stand in for the providers and start the
            // roles (the bench, the demo mailbox, xtask).
            tool if DEVELOPMENT_TOOLS.contains(&tool) => {}
            _ => assert_excludes(&member, &["agent", "model-client"]),
        }
    }
}

/// The workspace's binaries that are never deployed.
const DEVELOPMENT_TOOLS: [&str; 3] = ["steward-bench", "testkit", "xtask"];

/// Every binary the workspace builds (a package with a `bin` target), xtask and the bench
/// tools included.
fn binaries() -> Vec<String> {
    let graph = graph();
    let names: Vec<String> = graph.binaries.clone();
    assert!(names.len() >= 10, "the workspace's binaries were found: {names:?}");
    names
}

#[test]
fn only_the_notify_role_holds_the_push_client() {
    for member in [
        "steward-api",
        "steward-worker",
        "steward-schedule",
        "steward-call-ingress",
    ] {
        assert_excludes(member, &["notify", "jsonwebtoken"]);
    }
}

#[test]
fn the_call_ingress_listener_cannot_hold_keys_models_mail_or_push() {
    // Separate crates, not cargo features: a feature would be unified across a workspace build.
    assert_excludes(
        "steward-call-ingress",
        &[
            "callprov",
            "agent",
            "model-client",
            "mail-mcp",
            "notify",
            "reqwest",
            "jsonwebtoken",
            "hyper-rustls",
            "rustls",
            "api",
        ],
    );
}

#[test]
fn only_the_roles_that_hold_the_call_provider_key_link_its_client() {
    // The call worker (number settings, dispatch, reconciliation) alone holds
    // `CALLPROV_API_KEY_FILE`; no other binary may compile in the client or its key loader (the
    // API serves the owner's call records and never talks to the provider).
    const HOLDERS: [&str; 1] = ["steward-call-worker"];
    let others: Vec<String> = binaries()
        .into_iter()
        .filter(|name| !HOLDERS.contains(&name.as_str()))
        .collect();
    assert!(others.iter().any(|name| name == "steward-worker") && others.iter().any(|name| name == "steward-api"));
    for member in others {
        assert_excludes(&member, &["callprov"]);
    }
}

#[test]
fn the_call_worker_holds_no_model_client_agent_mail_or_push() {
    assert_excludes(
        "steward-call-worker",
        &[
            "agent",
            "model-client",
            "mail-mcp",
            "email",
            "notify",
            "jsonwebtoken",
            "api",
        ],
    );
}

#[test]
fn the_scheduler_cannot_load_mail_credentials() {
    // It authorizes from the accounts manifest (domain::manifest) and never opens a credential.
    assert_excludes("steward-schedule", &["mail-mcp", "agent", "reqwest", "api"]);
}

#[test]
fn the_terminal_client_links_no_database_no_agent_and_no_openssl() {
    // Its keyring backend is the pure-Rust Secret Service client (zbus), not libdbus or OpenSSL.
    assert_excludes(
        "steward",
        &[
            "sqlx",
            "store",
            "agent",
            "api",
            "openssl",
            "openssl-sys",
            "native-tls",
            "libdbus-sys",
        ],
    );
}

/// The workspace crates each role may link; anything else (a new internal dependency) fails
/// until it is argued for here.
#[test]
fn each_role_links_only_the_workspace_crates_it_needs() {
    let workspace: BTreeSet<String> = graph().members.keys().cloned().collect();
    // Email mode's refresh: the mail client for reads and the model client for assessment.
    const MAIL: [&str; 8] = [
        "email",
        "mail-mcp",
        "model-client",
        "store",
        "wire",
        "domain",
        "hardening",
        "role",
    ];
    // `browser-control`: the browser role's control plane, for `browser.act`; `memory`: the
    // beliefs a run recalls and a finished run forms.
    let worker = [&["agent", "browser-control", "memory"][..], &MAIL].concat();
    // `memory`: the people the async worker gathers from mail, and the beliefs the owner's sent
    // mail forms.
    let async_worker = [&["memory"][..], &MAIL].concat();
    let allowed: [(&str, &[&str]); 11] = [
        // `wire` (the event vocabulary, with the store that writes it) is types only.
        (
            "steward-api",
            // `browser-policy` (pure): the exact-origin rule of Website Access's profiles;
            // `browser-control`: the browser role's control plane, for its ceremonies.
            &[
                "api",
                "browser-control",
                "browser-policy",
                "listener",
                "store",
                "wire",
                "domain",
                "hardening",
                "role",
            ],
        ),
        // The agent loop over Email mode's parts.
        ("steward-worker", &worker),
        // No agent loop, no tools, no api.
        ("steward-async-worker", &async_worker),
        ("steward-schedule", &["store", "wire", "domain", "hardening", "role"]),
        (
            "steward-notify",
            &["notify", "store", "wire", "domain", "hardening", "role"],
        ),
        ("steward-migrate", &["store", "wire", "domain", "hardening", "role"]),
        // Retention: the maintenance login's passes, nothing else.
        ("steward-maintenance", &["store", "wire", "domain", "hardening", "role"]),
        (
            "steward-call-ingress",
            &["listener", "store", "wire", "domain", "hardening", "role"],
        ),
        // The provider client and the call login; no model, agent, mail, push or API code.
        (
            "steward-call-worker",
            &["callprov", "store", "wire", "domain", "hardening", "role"],
        ),
        // The terminal client speaks only the HTTP API: the SDK on the wire types, no store,
        // no agent loop, no server code.
        // `hardening` reads the fallback token file as every role reads its secrets.
        ("steward", &["client", "wire", "domain", "hardening"]),
        // The browser role and its egress relay: no database, no agent, no API, no wire
        // vocabulary; the launch and egress policy, its two listeners, its own secrets.
        (
            "steward-browser",
            &["browser-policy", "listener", "domain", "hardening", "role"],
        ),
    ];
    for (role, allowed) in allowed {
        let linked: Vec<String> = closure(role).intersection(&workspace).cloned().collect();
        // `release` (the build's identity: constants, no dependency) is every binary's.
        let extra: Vec<&String> = linked
            .iter()
            .filter(|name| name.as_str() != "release" && !allowed.contains(&name.as_str()))
            .collect();
        assert!(
            extra.is_empty(),
            "`{role}` links workspace crates it should not: {extra:?}"
        );
    }
}

#[test]
fn the_wire_format_is_types_only() {
    assert_excludes(
        "wire",
        &["tokio", "sqlx-core", "reqwest", "hyper", "axum", "mio", "store"],
    );
}

#[test]
fn storage_knows_nothing_of_http() {
    assert_excludes("store", &["axum", "hyper", "reqwest", "api"]);
}

#[test]
fn nothing_links_openssl() {
    for member in binaries() {
        assert_excludes(&member, &["openssl", "openssl-sys", "native-tls"]);
    }
}

#[test]
fn the_closure_walk_finds_real_dependencies() {
    // Guards the guard: if metadata parsing broke, every absence above would pass vacuously.
    let api = closure("steward-api");
    for expected in ["api", "store", "domain", "axum", "sqlx-core", "tokio"] {
        assert!(api.contains(expected), "steward-api should depend on {expected}");
    }
    assert!(closure("domain").contains("serde"));
    let ingress = closure("steward-call-ingress");
    for expected in ["store", "axum", "hmac", "role"] {
        assert!(
            ingress.contains(expected),
            "steward-call-ingress should depend on {expected}"
        );
    }
}
