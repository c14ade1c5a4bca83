//! Measures a running API (run by `cargo xtask bench`, which starts one on a durable cluster):
//! the latency from submitting a message to its first persisted event arriving on the session's
//! event stream, and message submits per second with concurrent clients.
//!
//! Usage: `steward-bench <base-url> <token-file> [samples] [sessions] [clients]`.

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use futures_util::StreamExt;
use serde_json::{Value, json};

struct Api {
    base: String,
    token: String,
    client: reqwest::Client,
}

impl Api {
    async fn session(&self) -> anyhow::Result<String> {
        let response = self
            .client
            .post(format!("{}/v1/sessions", self.base))
            .bearer_auth(&self.token)
            .json(&json!({ "agent_id": "default" }))
            .send()
            .await?;
        let body: Value = response.json().await?;
        body["session_id"].as_str().map(str::to_owned).context("session id")
    }

    async fn submit(&self, session: &str, key: &str) -> anyhow::Result<()> {
        let response = self
            .client
            .post(format!("{}/v1/sessions/{session}/messages", self.base))
            .bearer_auth(&self.token)
            .header("idempotency-key", key)
            .json(&json!({ "text": "benchmark message" }))
            .send()
            .await?;
        if response.status().as_u16() != 202 {
            bail!("submit answered {}", response.status());
        }
        Ok(())
    }

    /// Opens the session's stream and waits for its first persisted frame.
    async fn first_event(&self, session: &str) -> anyhow::Result<()> {
        let response = self
            .client
            .get(format!("{}/v1/sessions/{session}/events", self.base))
            .bearer_auth(&self.token)
            .send()
            .await?;
        let mut stream = response.bytes_stream();
        let mut seen = String::new();
        while let Some(chunk) = stream.next().await {
            seen.push_str(&String::from_utf8_lossy(&chunk?));
            if seen.contains("id: 1\n") && seen.contains("\n\n") {
                return Ok(());
            }
        }
        bail!("the stream ended without the first event")
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

fn ms(duration: Duration) -> String {
    format!("{:.2} ms", duration.as_secs_f64() * 1000.0)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [base, token_file, rest @ ..] = args.as_slice() else {
        bail!("usage: steward-bench <base-url> <token-file> [samples] [sessions] [clients]");
    };
    let number = |index: usize, default: usize| rest.get(index).and_then(|text| text.parse().ok()).unwrap_or(default);
    let (samples, sessions, clients) = (number(0, 300), number(1, 4000), number(2, 32));
    let token = std::fs::read_to_string(token_file)
        .context("read the token file")?
        .trim()
        .to_owned();
    let api = std::sync::Arc::new(Api {
        base: base.trim_end_matches('/').to_owned(),
        token,
        client: reqwest::Client::builder().pool_max_idle_per_host(clients).build()?,
    });

    // Latency: submit → first persisted event on the session's stream, one at a time.
    let mut latencies = Vec::with_capacity(samples);
    for sample in 0..samples {
        let session = api.session().await?;
        let started = Instant::now();
        api.submit(&session, &format!("latency-{sample}")).await?;
        api.first_event(&session).await?;
        latencies.push(started.elapsed());
    }
    latencies.sort();

    // Throughput: one message into each of `sessions` fresh sessions, `clients` at a time.
    let mut ids = Vec::with_capacity(sessions);
    for _ in 0..sessions {
        ids.push(api.session().await?);
    }
    let started = Instant::now();
    let results: Vec<anyhow::Result<()>> = futures_util::stream::iter(ids.into_iter().enumerate())
        .map(|(index, session)| {
            let api = api.clone();
            async move { api.submit(&session, &format!("throughput-{index}")).await }
        })
        .buffer_unordered(clients)
        .collect()
        .await;
    let elapsed = started.elapsed();
    let failures = results.iter().filter(|result| result.is_err()).count();
    if failures > 0 {
        bail!("{failures} submits failed");
    }

    println!("| measurement | value |");
    println!("|---|---|");
    println!(
        "| submit → first persisted event, p50 ({samples} sequential) | {} |",
        ms(percentile(&latencies, 0.50))
    );
    println!(
        "| submit → first persisted event, p99 | {} |",
        ms(percentile(&latencies, 0.99))
    );
    println!(
        "| submit → first persisted event, max | {} |",
        ms(*latencies.last().unwrap_or(&Duration::ZERO))
    );
    println!(
        "| message submits per second ({sessions} submits, {clients} concurrent clients) | {:.0} |",
        sessions as f64 / elapsed.as_secs_f64()
    );
    Ok(())
}
