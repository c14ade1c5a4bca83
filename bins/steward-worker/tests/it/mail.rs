//! The mail acceptance (activation rule 3) end to end: the real API and worker, the scripted
//! model, and a provider speaking the Gmail wire format (`testkit::gmail`). Two accounts: the
//! default `personal` and the named `work`, each with its own three single-scope documents.

use domain::env::FromEnv as _;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde_json::{Value, json};
use sha2::Digest;
use testkit::gmail::{FakeGmail, MODIFY, READONLY, SEND, SendFault};

use crate::support::Stack;

mod uncertain;

pub(crate) struct Mail {
    pub(crate) gmail: FakeGmail,
    manifest: String,
    /// The refresh tokens per account: read, write, send.
    grants: Vec<(String, [String; 3])>,
    _dir: tempfile::TempDir,
}

fn write_document(dir: &Path, file: &str, refresh_token: &str, scope: &str, account: &str) -> String {
    let path = dir.join(file);
    let document = json!({ "client_id": "steward-test.apps.example", "client_secret": "client-secret-value",
                           "refresh_token": refresh_token, "scope": scope, "account_id": account });
    std::fs::write(&path, document.to_string()).expect("write document");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    path.display().to_string()
}

impl Mail {
    /// The provider with the owner's two mailboxes and a recipient's, and a manifest for them.
    pub(crate) async fn start() -> Mail {
        let gmail = FakeGmail::start().await;
        gmail.mailbox("personal", "owner@example.com");
        gmail.mailbox("work", "owner@work.example");
        gmail.mailbox("ada", "ada@example.org");
        let dir = tempfile::tempdir().expect("tempdir");
        let mut accounts = Vec::new();
        let mut grants = Vec::new();
        for account in ["personal", "work"] {
            let directory = dir.path().join(account);
            std::fs::create_dir(&directory).expect("mkdir");
            std::fs::set_permissions(&directory, std::fs::Permissions::from_mode(0o700)).expect("chmod");
            let tokens = [READONLY, MODIFY, SEND].map(|scope| gmail.grant(account, scope));
            let paths: Vec<String> = ["mail-read.json", "mail-write.json", "mail-send.json"]
                .iter()
                .zip([READONLY, MODIFY, SEND])
                .zip(&tokens)
                .map(|((file, scope), token)| write_document(&directory, file, token, scope, account))
                .collect();
            accounts.push(json!({ "account_id": account, "read_credential_file": paths[0],
                                  "write_credential_file": paths[1], "send_credential_file": paths[2] }));
            grants.push((account.to_owned(), tokens));
        }
        let manifest = dir.path().join("accounts.json");
        std::fs::write(
            &manifest,
            json!({ "version": 1, "default_account": "personal", "accounts": accounts }).to_string(),
        )
        .expect("manifest");
        Mail {
            gmail,
            manifest: manifest.display().to_string(),
            grants,
            _dir: dir,
        }
    }

    fn refresh_token(&self, account: &str, index: usize) -> &str {
        let (_, tokens) = self.grants.iter().find(|(id, _)| id == account).expect("account");
        &tokens[index]
    }

    /// The API and one in-process worker with mail on.
    async fn stack(&self) -> Stack {
        self.stack_with_scopes("sessions.read,sessions.write,notifications.read")
            .await
    }

    async fn stack_with_scopes(&self, scopes: &str) -> Stack {
        let mut stack = self.api(scopes).await;
        self.start_worker(&mut stack, &[]).await;
        stack
    }

    /// An in-process worker on `stack` with this provider's mail environment and `extra`.
    pub(crate) async fn start_worker(&self, stack: &mut Stack, extra: &[(&str, &str)]) {
        let vars = self.worker_vars();
        let mut vars: Vec<(&str, &str)> = vars.iter().map(|(name, value)| (*name, value.as_str())).collect();
        vars.extend_from_slice(extra);
        stack.start_worker(&vars).await;
    }

    /// The API alone, with mail on.
    async fn api(&self, scopes: &str) -> Stack {
        self.api_with(scopes, &[]).await
    }

    /// The API alone, with mail on, `scopes` and `extra`.
    pub(crate) async fn api_with(&self, scopes: &str, extra: &[(&str, &str)]) -> Stack {
        let mut vars = vec![
            ("AGENT_EMAIL_ENABLED", "1"),
            ("MAIL_ACCOUNTS_FILE", &self.manifest),
            ("AGENT_NOTIFICATION_API_ENABLED", "1"),
            ("AGENT_NOTIFICATION_DISPATCH_ENABLED", "1"),
            ("AUTH_SCOPES", scopes),
        ];
        vars.extend_from_slice(extra);
        Stack::api(&vars).await
    }

    /// A worker's mail environment, pointed at the stand-in provider.
    pub(crate) fn worker_vars(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AGENT_EMAIL_ENABLED", "1".to_owned()),
            ("MAIL_ACCOUNTS_FILE", self.manifest.clone()),
            ("MAIL_API_BASE_URL", self.gmail.base_url.clone()),
            ("MAIL_OAUTH_TOKEN_URL", self.gmail.token_url()),
        ]
    }
}

/// The `tool.result` payloads of the session, in order.
async fn results(stack: &Stack, session: &str) -> Vec<Value> {
    stack
        .events(session)
        .await
        .into_iter()
        .filter(|(kind, _)| kind == "tool.result")
        .map(|(_, payload)| payload)
        .collect()
}

/// The session's latest `tool.result` payload.
async fn last_result(stack: &Stack, session: &str) -> Value {
    results(stack, session).await.pop().expect("a tool result")
}

/// A tool result's status and code.
fn outcome(result: &Value) -> (Option<&str>, Option<&str>) {
    (result["status"].as_str(), result["code"].as_str())
}

/// Proposes `tool` with `arguments` in `session` and approves it once; returns the run.
async fn propose_and_approve(stack: &Stack, session: &str, tool: &str, arguments: &Value) -> String {
    let run = stack.submit(session, &format!("/tool {tool} {arguments}")).await;
    stack.wait_for(&run, &["waiting_approval"]).await;
    let approvals = stack.pending_approvals(session).await;
    assert_eq!(approvals[0]["tool"], tool);
    stack.decide_ok(&approvals[0], "approve_once").await;
    run
}

/// The thread subjects a search result found.
fn subjects(result: &Value) -> Vec<String> {
    result["result"]["threads"]
        .as_array()
        .expect("threads")
        .iter()
        .flat_map(|thread| thread["messages"].as_array().cloned().unwrap_or_default())
        .filter_map(|message| message["subject"].as_str().map(str::to_owned))
        .collect()
}

/// The session's `mail.reconciled` payload, once the reconciler has settled it.
async fn reconciled(stack: &Stack, session: &str) -> Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let events = stack.events(session).await;
        if let Some((_, payload)) = events.iter().find(|(kind, _)| kind == "mail.reconciled") {
            return payload.clone();
        }
        assert!(std::time::Instant::now() < deadline, "never reconciled: {events:?}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

pub(crate) fn sends(gmail: &FakeGmail) -> usize {
    gmail
        .calls()
        .iter()
        .filter(|(_, _, call)| call == "POST messages/send")
        .count()
}

#[tokio::test]
async fn mail_acceptance_reads_freely_drafts_and_sends_once_each_after_one_approval() {
    let mail = Mail::start().await;
    mail.gmail.deliver(
        "personal",
        "news@example.net",
        "Harmless newsletter",
        "Nothing to do here.",
        &["INBOX"],
    );
    let stack = mail.stack().await;

    // (a) A read without approval finds the harmless message and lists labels.
    let session = stack.session().await;
    let run = stack
        .submit(
            &session,
            "/tool mcp.mail_read.search_threads {\"query\": \"subject:\\\"Harmless newsletter\\\"\"}\n\
             /tool mcp.mail_read.list_labels {}",
        )
        .await;
    stack.completes(&run).await;
    let read = results(&stack, &session).await;
    assert_eq!(read.len(), 2, "{read:?}");
    assert_eq!(read[0]["status"], "succeeded", "{}", read[0]);
    assert_eq!(subjects(&read[0]), ["Harmless newsletter"]);
    assert_eq!(read[0]["trust"], "tool_output");
    let labels: Vec<&str> = read[1]["result"]["labels"]
        .as_array()
        .expect("labels")
        .iter()
        .filter_map(|label| label["name"].as_str())
        .collect();
    assert!(labels.contains(&"INBOX") && labels.contains(&"Receipts"), "{labels:?}");
    assert!(
        stack.pending_approvals(&session).await.is_empty(),
        "reads need no approval"
    );
    assert!(
        mail.gmail
            .calls()
            .iter()
            .all(|(mailbox, scope, _)| mailbox == "personal" && scope == READONLY),
        "reads use the read document only: {:?}",
        mail.gmail.calls()
    );

    // (b) A draft parks; its notification holds no recipient, subject or body; one approval
    // creates exactly one unsent draft.
    let draft = json!({ "to": "ada@example.org", "subject": "Acceptance draft 7d1", "body": "Draft body: the plan." });
    let run = stack
        .submit(&session, &format!("/tool mcp.mail_write.create_draft {draft}"))
        .await;
    stack.wait_for(&run, &["waiting_approval"]).await;
    let approvals = stack.pending_approvals(&session).await;
    assert_eq!(approvals.len(), 1);
    assert_eq!(approvals[0]["tool"], "mcp.mail_write.create_draft");
    assert_eq!(approvals[0]["arguments"], draft, "the approval shows the whole message");
    assert!(
        mail.gmail.messages("personal", "DRAFT").is_empty(),
        "nothing before approval"
    );
    let notifications = stack.get("/v1/notifications").await;
    let listed = notifications.to_string();
    assert!(listed.contains("\"approval\""), "{listed}");
    for secret in ["ada@example.org", "Acceptance draft", "Draft body"] {
        assert!(!listed.contains(secret), "the notification leaks `{secret}`: {listed}");
    }
    let outbox: Vec<Value> = sqlx::query_scalar("SELECT to_jsonb(o) FROM notification_outbox o")
        .fetch_all(&stack.db.pool)
        .await
        .expect("outbox");
    assert!(!outbox.is_empty());
    for row in &outbox {
        for secret in ["ada@example.org", "Acceptance draft", "Draft body"] {
            assert!(
                !row.to_string().contains(secret),
                "the outbox row leaks `{secret}`: {row}"
            );
        }
    }
    stack.decide_ok(&approvals[0], "approve_once").await;
    stack.completes(&run).await;
    let drafts = mail.gmail.messages("personal", "DRAFT");
    assert_eq!(drafts.len(), 1, "exactly one draft");
    assert_eq!(
        (
            drafts[0].subject.as_str(),
            drafts[0].to.as_slice(),
            drafts[0].body.as_str()
        ),
        (
            "Acceptance draft 7d1",
            ["ada@example.org".to_owned()].as_slice(),
            "Draft body: the plan."
        )
    );
    assert!(
        mail.gmail.messages("personal", "SENT").is_empty(),
        "the draft was not sent"
    );
    assert!(mail.gmail.messages("ada", "INBOX").is_empty());
    let created = last_result(&stack, &session).await;
    assert_eq!(
        (created["status"].as_str(), created["result"]["sent"].as_bool()),
        (Some("succeeded"), Some(false))
    );

    // (c) A send proposal shows its full arguments; one approval sends exactly one message.
    let long_body = format!("Hello Ada,\n{}\nBest", "All details follow. ".repeat(40));
    let message = json!({ "to": ["ada@example.org"], "subject": "Acceptance send 7d1", "body": long_body });
    let run = stack
        .submit(&session, &format!("/tool mcp.mail_send.send_message {message}"))
        .await;
    stack.wait_for(&run, &["waiting_approval"]).await;
    let approvals = stack.pending_approvals(&session).await;
    let proposal = &approvals[0];
    assert_eq!(
        (proposal["tool"].as_str(), proposal["risk"].as_str()),
        (Some("mcp.mail_send.send_message"), Some("high"))
    );
    assert_eq!(proposal["arguments"]["to"], json!(["ada@example.org"]));
    assert_eq!(proposal["arguments"]["subject"], "Acceptance send 7d1");
    // A body over 512 characters is shown truncated, with the digest proving the whole value.
    let shown = proposal["arguments"]["body"].as_str().expect("body");
    assert!(long_body.starts_with(shown) && shown.chars().count() == 512, "{shown}");
    let digest: String = sha2::Sha256::digest(long_body.as_bytes())
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    assert_eq!(proposal["argument_digests"]["/body"], digest, "{proposal}");
    assert_eq!(sends(&mail.gmail), 0);
    stack.decide_ok(proposal, "approve_once").await;
    stack.completes(&run).await;
    let arrived = mail.gmail.messages("ada", "INBOX");
    assert_eq!(arrived.len(), 1, "exactly one message arrives");
    assert_eq!(arrived[0].subject, "Acceptance send 7d1");
    assert_eq!(arrived[0].body, long_body.trim_end());
    assert_eq!(sends(&mail.gmail), 1);
    assert!(
        mail.gmail
            .calls()
            .iter()
            .filter(|(_, _, call)| call.starts_with("POST"))
            .all(|(mailbox, scope, call)| mailbox == "personal"
                && (call != "POST messages/send" || scope == SEND)
                && (call != "POST drafts" || scope == MODIFY)),
        "each tool used its own document: {:?}",
        mail.gmail.calls()
    );
}

#[tokio::test]
async fn a_named_accounts_draft_is_found_through_its_own_read_tool_only() {
    let mail = Mail::start().await;
    let stack = mail.stack().await;
    let session = stack.session().await;
    let draft = json!({ "to": "ada@example.org", "subject": "Work acceptance 5c2", "body": "From the work account." });
    let run = propose_and_approve(&stack, &session, "mcp.mail_work_write.create_draft", &draft).await;
    stack.completes(&run).await;
    assert_eq!(mail.gmail.messages("work", "DRAFT").len(), 1);
    assert!(mail.gmail.messages("personal", "DRAFT").is_empty());

    let query = "{\"query\": \"in:drafts subject:\\\"Work acceptance 5c2\\\"\"}";
    let run = stack
        .submit(
            &session,
            &format!("/tool mcp.mail_work_read.search_threads {query}\n/tool mcp.mail_read.search_threads {query}"),
        )
        .await;
    stack.completes(&run).await;
    let found = results(&stack, &session).await;
    let (work, default) = (&found[found.len() - 2], &found[found.len() - 1]);
    assert_eq!(work["tool"], "mcp.mail_work_read.search_threads");
    assert_eq!(
        subjects(work),
        ["Work acceptance 5c2"],
        "the named account's own read tool finds it"
    );
    assert_eq!(default["tool"], "mcp.mail_read.search_threads");
    assert!(
        subjects(default).is_empty(),
        "the default account's tool does not: {default}"
    );
}

#[tokio::test]
async fn a_revoked_grant_is_reported_as_rejected_and_throttled_reads_back_off() {
    let mail = Mail::start().await;
    mail.gmail
        .deliver("personal", "news@example.net", "Quota check", "Body.", &["INBOX"]);
    let stack = mail.stack().await;
    let session = stack.session().await;

    mail.gmail.throttle_reads(2);
    let run = stack
        .submit(&session, "/tool mcp.mail_read.search_threads {\"query\": \"Quota\"}")
        .await;
    stack.completes(&run).await;
    let result = last_result(&stack, &session).await;
    assert_eq!(result["status"], "succeeded", "two 429s are waited out: {result}");
    assert_eq!(subjects(&result), ["Quota check"]);
    assert_eq!(mail.gmail.token_requests(), 1, "the access token is cached");

    mail.gmail.revoke(mail.refresh_token("personal", 0));
    let run = stack
        .submit(&session, "/tool mcp.mail_read.search_threads {\"query\": \"Quota\"}")
        .await;
    stack.completes(&run).await;
    let result = last_result(&stack, &session).await;
    assert_eq!(
        outcome(&result),
        (Some("failed"), Some("mail.credential_rejected")),
        "{result}"
    );
}

#[tokio::test]
async fn a_scheduled_run_with_read_and_write_scopes_reads_then_drafts_after_an_approval_ten_minutes_later() {
    use jiff::ToSpan;

    let mail = Mail::start().await;
    mail.gmail.deliver(
        "personal",
        "ada@example.org",
        "Weekly plan",
        "Can you confirm?",
        &["INBOX"],
    );
    let stack = mail
        .stack_with_scopes("sessions.read,sessions.write,schedules.read,schedules.write")
        .await;
    let instruction = "/tool mcp.mail_read.search_threads {\"query\": \"Weekly plan\"}\n\
        /tool mcp.mail_write.create_draft {\"to\": \"ada@example.org\", \"subject\": \"Re: Weekly plan\", \"body\": \"Confirmed.\"}";
    let scopes = json!(["mcp.mail_read.use", "mcp.mail_write.use"]);
    let (_, due) = stack.create_schedule(instruction, scopes, json!({})).await;
    let manifest = std::fs::read(&mail.manifest).expect("manifest");
    let ids = domain::manifest::AccountIds::parse(&manifest).expect("ids");
    let fired = stack.fire(due + 5.seconds(), Some(&ids)).await;
    let [store::Firing::Started { run, session, .. }] = fired.as_slice() else {
        panic!("one start expected: {fired:?}")
    };
    let (run, session) = (run.to_string(), session.to_string());

    stack.wait_for(&run, &["waiting_approval"]).await;
    let read = results(&stack, &session).await;
    assert_eq!(subjects(&read[0]), ["Weekly plan"], "the read needed no approval");
    let approvals = stack.pending_approvals(&session).await;
    assert_eq!(approvals[0]["tool"], "mcp.mail_write.create_draft");
    // The owner approves ten minutes later, twice the run's 300-second timeout: waiting for the
    // owner is not working time.
    stack.clock.advance(jiff::SignedDuration::from_mins(10));
    stack.decide_ok(&approvals[0], "approve_once").await;
    stack.completes(&run).await;

    assert_eq!(mail.gmail.messages("personal", "DRAFT").len(), 1);
}

#[tokio::test]
async fn a_scheduled_run_that_reaches_for_mail_beyond_its_scopes_fails_authorization() {
    use jiff::ToSpan;

    let mail = Mail::start().await;
    let stack = mail
        .stack_with_scopes("sessions.read,sessions.write,schedules.read,schedules.write")
        .await;
    let manifest = std::fs::read(&mail.manifest).expect("manifest");
    let ids = domain::manifest::AccountIds::parse(&manifest).expect("ids");
    let send =
        "/tool mcp.mail_send.send_message {\"to\": \"ada@example.org\", \"subject\": \"Hi\", \"body\": \"Hello.\"}";
    // Empty scopes (what the chat tool's schedules get) reaching for a read; read and write
    // scopes reaching for a send, which no schedule can request.
    let cases = [
        (
            "/tool mcp.mail_read.search_threads {\"query\": \"plan\"}",
            json!([]),
            "mcp.mail_read.use",
        ),
        (
            send,
            json!(["mcp.mail_read.use", "mcp.mail_write.use"]),
            "mcp.mail_send.use",
        ),
    ];
    for (instruction, scopes, missing) in cases {
        let (_, due) = stack.create_schedule(instruction, scopes, json!({})).await;
        let fired = stack.fire(due + 5.seconds(), Some(&ids)).await;
        let [store::Firing::Started { run, session, .. }] = fired.as_slice() else {
            panic!("one start expected: {fired:?}")
        };
        let ended = stack
            .wait_for(&run.to_string(), &["completed", "failed", "cancelled"])
            .await;
        assert_eq!(
            (ended["state"].as_str(), ended["reason"].as_str()),
            (Some("failed"), Some("schedule.authorization_failed")),
            "{ended}"
        );
        let last = last_result(&stack, &session.to_string()).await;
        assert_eq!(
            last["code"], "schedule.authorization_failed",
            "not tool.unknown: {last}"
        );
        assert!(
            last["result"]["error"]
                .as_str()
                .is_some_and(|error| error.contains(missing)),
            "{last}"
        );
    }
    assert_eq!(sends(&mail.gmail), 0);
}

/// Starts `steward-worker` with only `vars` (and the development root override) and returns its
/// one-line refusal.
fn worker_refusal(vars: &[(&str, &str)]) -> String {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_steward-worker"))
        .env_clear()
        .env("DATABASE_URL", "postgres://steward_worker@localhost/steward")
        .env("STEWARD_DEV_ALLOW_ROOT", "1")
        .envs(vars.iter().copied())
        .output()
        .expect("run steward-worker");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("steward-worker: "), "{stderr}");
    stderr
}

#[tokio::test]
async fn the_worker_and_the_api_refuse_to_start_on_any_bad_mail_configuration() {
    let mail = Mail::start().await;
    let manifest: Value = serde_json::from_str(&std::fs::read_to_string(&mail.manifest).expect("read")).expect("json");
    let personal = &manifest["accounts"][0];
    let read = personal["read_credential_file"].as_str().expect("path").to_owned();
    let write = personal["write_credential_file"].as_str().expect("path").to_owned();
    let secret = mail.refresh_token("personal", 0).to_owned();
    let on = ("AGENT_EMAIL_ENABLED", "1");

    let mut cases: Vec<(Vec<(&str, String)>, &str)> = vec![
        (
            vec![("MAIL_READ_CREDENTIAL_FILE", read.clone())],
            "partial mail enablement",
        ),
        (
            vec![("MAIL_ACCOUNTS_FILE", mail.manifest.clone())],
            "mail paths are configured while AGENT_EMAIL_ENABLED is off",
        ),
        (
            vec![(
                "MAIL_READ_CREDENTIAL_FILE",
                format!("{{\"refresh_token\": \"{secret}\"}}"),
            )],
            "MAIL_READ_CREDENTIAL_FILE must be an absolute path, never JSON or token material",
        ),
        (
            vec![
                ("MAIL_ACCOUNTS_FILE", mail.manifest.clone()),
                ("MAIL_READ_CREDENTIAL_FILE", read.clone()),
            ],
            "mutually exclusive",
        ),
    ];
    // The flag with the documents: each broken in turn.
    let dir = tempfile::tempdir().expect("tempdir");
    // The copied documents are tagged `personal`: listed under `account_id`.
    let broken = |name: &str, account_id: &str, edit: &dyn Fn(&Path)| -> String {
        let account = dir.path().join(name);
        std::fs::create_dir(&account).expect("mkdir");
        for (file, source) in [("mail-read.json", &read), ("mail-write.json", &write)] {
            std::fs::copy(source, account.join(file)).expect("copy");
        }
        let send = personal["send_credential_file"].as_str().expect("path");
        std::fs::copy(send, account.join("mail-send.json")).expect("copy");
        edit(&account);
        let documents = ["mail-read.json", "mail-write.json", "mail-send.json"]
            .map(|file| account.join(file).display().to_string());
        let manifest = dir.path().join(format!("{name}.json"));
        std::fs::write(
            &manifest,
            json!({ "version": 1, "default_account": account_id, "accounts": [{ "account_id": account_id,
                "read_credential_file": documents[0], "write_credential_file": documents[1],
                "send_credential_file": documents[2] }] })
            .to_string(),
        )
        .expect("manifest");
        manifest.display().to_string()
    };
    let tagged_elsewhere = broken("home", "home", &|_| {});
    let shared = broken("shared", "personal", &|account| {
        std::fs::set_permissions(account.join("mail-send.json"), std::fs::Permissions::from_mode(0o644))
            .expect("chmod");
    });
    let linked = broken("linked", "personal", &|account| {
        std::fs::remove_file(account.join("mail-write.json")).expect("remove");
        std::os::unix::fs::symlink(account.join("mail-read.json"), account.join("mail-write.json")).expect("link");
    });
    let missing = broken("missing", "personal", &|account| {
        std::fs::remove_file(account.join("mail-read.json")).expect("remove")
    });
    cases.extend([
        (
            vec![("MAIL_ACCOUNTS_FILE", tagged_elsewhere)],
            "configured account id rejected",
        ),
        (vec![("MAIL_ACCOUNTS_FILE", shared)], "must be owner-only"),
        (vec![("MAIL_ACCOUNTS_FILE", linked)], "symbolic link"),
        (vec![("MAIL_ACCOUNTS_FILE", missing)], "does not exist"),
    ]);
    for (index, (vars, expected)) in cases.iter().enumerate() {
        let mut vars: Vec<(&str, &str)> = vars.iter().map(|(name, value)| (*name, value.as_str())).collect();
        // The second case is the flag off with a path; every other one has the flag on.
        if index != 1 {
            vars.push(on);
        }
        let stderr = worker_refusal(&vars);
        assert!(
            stderr.contains(expected),
            "case {index}: expected `{expected}` in {stderr}"
        );
        assert!(
            !stderr.contains(&secret),
            "a refusal must not echo token material: {stderr}"
        );
    }

    // The API reads the same rules (and never opens a document).
    let token_dir = tempfile::tempdir().expect("tempdir");
    let token_file = token_dir.path().join("token");
    std::fs::write(&token_file, "t".repeat(40)).expect("token");
    std::fs::set_permissions(&token_file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let token_path = token_file.display().to_string();
    let writable = token_dir.path().join("accounts.json");
    std::fs::copy(&mail.manifest, &writable).expect("copy");
    std::fs::set_permissions(&writable, std::fs::Permissions::from_mode(0o620)).expect("chmod");
    let writable = writable.display().to_string();
    for (vars, expected) in [
        (
            vec![on, ("MAIL_ACCOUNTS_FILE", writable.as_str())],
            "must not be group- or world-writable (mode 0620)",
        ),
        (
            vec![on, ("MAIL_WRITE_CREDENTIAL_FILE", write.as_str())],
            "partial mail enablement",
        ),
        (
            vec![("MAIL_ACCOUNTS_FILE", mail.manifest.as_str())],
            "while AGENT_EMAIL_ENABLED is off",
        ),
    ] {
        let mut all = vec![
            ("DATABASE_URL", "postgres://steward_api@localhost/steward"),
            ("API_TOKEN_FILE", token_path.as_str()),
        ];
        all.extend(vars);
        let error =
            api::ApiConfig::from_env(|name| all.iter().find(|(key, _)| *key == name).map(|(_, v)| (*v).to_owned()))
                .expect_err("refused");
        assert!(error.to_string().contains(expected), "{error}");
    }
}
