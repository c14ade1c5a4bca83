//! Email mode's budgets.
//!
//! - `inbox BASE TOKEN_FILE SAMPLES`: the priority inbox's first page (`GET /v1/email/threads`),
//!   one request at a time, beside the session index's first page of five on the same API (the
//!   reference: the cheapest authenticated page read).
//! - `refresh DATABASE_URL`: an incremental update of 100 new messages against the mail
//!   provider stand-in (`testkit::gmail`, in this process, filled with the demo mailbox and
//!   backfilled first) into the database as the async-worker login, with the production pacing
//!   (Gmail's per-user quota); the reference is the same provider reads alone (the history and
//!   the 100 raw messages) through a client paced the same way, measured in the same run.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use email::classify::Classifier;
use email::refresh::{Refresher, UpdateKind};
use mail_mcp::accounts::ReadAccount;
use mail_mcp::document::{CredentialDocument, MailScope};
use mail_mcp::gmail::{Credential, Endpoints, GmailClient};
use serde_json::{Value, json};
use testkit::gmail::{FakeGmail, READONLY};

use crate::{ms, number, percentile};

/// Sequential GETs of `url`: their sorted latencies.
async fn latencies(client: &reqwest::Client, url: &str, token: &str, samples: usize) -> anyhow::Result<Vec<Duration>> {
    let mut latencies = Vec::with_capacity(samples);
    for _ in 0..samples {
        let started = Instant::now();
        let response = client.get(url).bearer_auth(token).send().await?;
        if !response.status().is_success() {
            bail!("GET {url} answered {}", response.status());
        }
        response.bytes().await?;
        latencies.push(started.elapsed());
    }
    latencies.sort();
    Ok(latencies)
}

pub async fn inbox(args: &[String]) -> anyhow::Result<Value> {
    let base = args.first().context("missing BASE")?.trim_end_matches('/');
    let token = std::fs::read_to_string(args.get(1).context("missing TOKEN_FILE")?)
        .context("read the token file")?
        .trim()
        .to_owned();
    let samples = number(args, 2, "samples")?;
    let client = reqwest::Client::new();
    let inbox = format!("{base}/v1/email/threads");
    let first: Value = client.get(&inbox).bearer_auth(&token).send().await?.json().await?;
    let rows = first["threads"].as_array().map_or(0, Vec::len);
    if rows != 5 || first["next_cursor"].is_null() {
        bail!("the inbox's first page holds {rows} rows and no next page: is it seeded?");
    }
    // Warm both paths, then measure them interleaved in halves so drift hits both alike.
    let reference = format!("{base}/v1/sessions?limit=5");
    latencies(&client, &inbox, &token, 50).await?;
    latencies(&client, &reference, &token, 50).await?;
    let mut measured = latencies(&client, &inbox, &token, samples / 2).await?;
    let mut referenced = latencies(&client, &reference, &token, samples / 2).await?;
    measured.extend(latencies(&client, &inbox, &token, samples / 2).await?);
    referenced.extend(latencies(&client, &reference, &token, samples / 2).await?);
    measured.sort();
    referenced.sort();
    Ok(json!({
        "samples": measured.len(),
        "p50_ms": ms(percentile(&measured, 0.5)),
        "p99_ms": ms(percentile(&measured, 0.99)),
        "reference_p50_ms": ms(percentile(&referenced, 0.5)),
        "reference_p99_ms": ms(percentile(&referenced, 0.99)),
    }))
}

/// A client of the stand-in paced as in production.
fn client(fake: &FakeGmail) -> anyhow::Result<Arc<GmailClient>> {
    Ok(Arc::new(GmailClient::new(Endpoints {
        api_base_url: fake.base_url.clone(),
        token_url: fake.token_url(),
        ..Endpoints::default()
    })?))
}

pub async fn refresh(args: &[String]) -> anyhow::Result<Value> {
    let database_url = args.first().context("missing DATABASE_URL")?;
    let fake = FakeGmail::start().await;
    let backfilled = testkit::demo::fill(
        &fake,
        "bench",
        jiff::Timestamp::now(),
        &testkit::demo::Senders::generate(),
    );
    let refresh_token = fake.grant("bench", READONLY);
    let document =
        json!({ "client_id": "bench", "client_secret": "bench", "refresh_token": refresh_token, "scope": READONLY });
    let account = ReadAccount {
        account_id: "bench".into(),
        read: CredentialDocument::parse(document.to_string().as_bytes(), MailScope::Read, None)?,
    };
    let store = store::Store::connect_lazy(database_url, 4).context("connect as the async worker")?;
    store.email().ensure_accounts(&["bench".into()]).await?;
    let refresher = |gmail| Refresher {
        store: store.clone(),
        gmail,
        backfill: jiff::SignedDuration::from_hours(24 * 30),
        classifier: Arc::new(Classifier::Offline),
        census: None,
        junk: email::junk::JunkSettings::off(),
    };
    let first = refresher(client(&fake)?).update(&account).await?;
    if first.kind != UpdateKind::Backfill || first.new_messages != backfilled {
        bail!("the backfill brought {} of {backfilled} messages", first.new_messages);
    }
    let profile = client(&fake)?;
    let credential = Credential {
        account_id: account.account_id.as_str(),
        document: &account.read,
    };
    let start = email::provider::profile(&profile, credential).await?.history_id;

    let mut new = Vec::with_capacity(100);
    for index in 0..100 {
        let raw = mail_builder_message(index);
        new.push(fake.deliver_raw("bench", &raw, &["INBOX"], None));
    }

    // The reference: the provider reads alone, through a client with a full quota bucket.
    let reads = client(&fake)?;
    let started = Instant::now();
    let changes = email::provider::changes_since(&reads, credential, &start)
        .await
        .map_err(|error| anyhow::anyhow!("history: {error:?}"))?;
    for message in &changes.added {
        email::provider::raw_message(&reads, credential, &message.id).await?;
    }
    let reference = started.elapsed();
    if changes.added.len() != new.len() {
        bail!("the history holds {} of the 100 new messages", changes.added.len());
    }

    // The update, through a client with a full quota bucket too.
    let started = Instant::now();
    let updated = refresher(client(&fake)?).update(&account).await?;
    let elapsed = started.elapsed();
    if updated.kind != UpdateKind::Incremental || updated.new_messages != 100 {
        bail!("the incremental update brought {} new messages", updated.new_messages);
    }
    Ok(json!({
        "backfilled": backfilled,
        "new_messages": updated.new_messages,
        "assessed": updated.assessed,
        "update_ms": ms(elapsed),
        "reference_ms": ms(reference),
    }))
}

/// The `index`-th new message: a person's short note.
fn mail_builder_message(index: usize) -> Vec<u8> {
    format!(
        "From: Person {index} <person{index}@example.com>\r\nTo: owner@demo.example\r\nSubject: Note {index}\r\n\
         Message-ID: <bench-{index}@example.com>\r\nDate: {}\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n\
         A short note, number {index}. Can you look at it?\r\n",
        jiff::Timestamp::now().strftime("%a, %d %b %Y %H:%M:%S +0000")
    )
    .into_bytes()
}
