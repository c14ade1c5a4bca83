//! The call provider stand-in for `cargo xtask dev --demo-calls` and the web client's browser
//! tests: `steward-demo-calls <directory> <phone_number> <webhook_url>` makes an API key and a
//! webhook signing secret (owner-only files under the directory, afresh on every start), starts
//! the stand-in (`testkit::callprov`) owning `phone_number` on a free loopback port, writes
//! `provider.env` and serves until it is stopped (SIGINT or SIGTERM).
//!
//! It plays the other end of the line:
//!
//! - an outbound call the call worker places is answered a few seconds later and ends with a
//!   short transcript (the assistant's opening, the brief's purpose, a goodbye) and a summary;
//! - `POST /demo/inbound` on its control address simulates someone calling the number: an
//!   ended inbound call with a transcript and a summary.
//!
//! Either way it then delivers the provider's signed post-call webhook (`X-Webhook-Signature`,
//! the hex HMAC-SHA256 of the body) to `webhook_url` — the call-ingress listener — as the
//! provider would, retrying for a while when the listener is not up yet.
//!
//! `provider.env` holds `CALLPROV_BASE_URL`, `CALLPROV_API_KEY_FILE`,
//! `CALLPROV_WEBHOOK_SECRET_FILE` and `DEMO_CALLS_CONTROL_URL` (the control address). Nothing
//! here reaches a real provider or places a real call.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use serde_json::{Value, json};
use testkit::callprov::{FakeCallProvider, sign};
use testkit::demo;

/// How long an outbound call rings and talks before it ends.
const OUTBOUND_LENGTH: Duration = Duration::from_secs(3);
/// Who calls the number in `POST /demo/inbound`.
const CALLER: &str = "+15550100199";

struct Demo {
    provider: FakeCallProvider,
    number: String,
    webhook_url: String,
    secret: Vec<u8>,
    http: reqwest::Client,
}

impl Demo {
    /// Delivers the signed post-call webhook for `call_id`; true once ingress took it.
    async fn deliver(&self, call_id: &str) -> bool {
        let body = testkit::callprov::webhook_body(call_id);
        let signature = sign(&self.secret, &body);
        for _ in 0..30 {
            let sent = self
                .http
                .post(&self.webhook_url)
                .header("content-type", "application/json")
                .header("x-webhook-signature", &signature)
                .body(body.clone())
                .send()
                .await;
            match sent {
                Ok(response) if response.status().is_success() => {
                    println!("steward-demo-calls: delivered the webhook for {call_id}");
                    return true;
                }
                Ok(response) => {
                    eprintln!(
                        "steward-demo-calls: the webhook for {call_id} was answered {}",
                        response.status()
                    );
                    return false;
                }
                Err(_) => tokio::time::sleep(Duration::from_secs(1)).await,
            }
        }
        eprintln!(
            "steward-demo-calls: nothing took the webhook for {call_id} at {}",
            self.webhook_url
        );
        false
    }

    /// Ends every outbound call placed at least [`OUTBOUND_LENGTH`] ago and delivers its webhook.
    async fn answer_outbound(&self) {
        let now = jiff::Timestamp::now();
        let due: Vec<Value> = self
            .provider
            .calls()
            .into_iter()
            .filter(|call| call["inbound"] == false && call["completed"] == false)
            .filter(|call| {
                call["created_at"]
                    .as_str()
                    .and_then(|at| at.parse::<jiff::Timestamp>().ok())
                    .is_some_and(|at| now.duration_since(at).unsigned_abs() >= OUTBOUND_LENGTH)
            })
            .collect();
        for call in due {
            let Some(call_id) = call["call_id"].as_str() else {
                continue;
            };
            let opening = call["first_sentence"].as_str().unwrap_or("Hello.").to_owned();
            let purpose = purpose(call["task"].as_str().unwrap_or_default());
            let to = call["to"].as_str().unwrap_or("the number");
            self.provider.finish(
                call_id,
                &[
                    ("user", "Hello?"),
                    ("assistant", &opening),
                    ("user", "Yes, speaking. What is it about?"),
                    ("assistant", &purpose),
                    ("user", "Thanks, that's noted. Goodbye."),
                    ("assistant", "Thank you, goodbye."),
                ],
                &format!("{to} answered; the purpose of the call was delivered and acknowledged."),
            );
            println!("steward-demo-calls: the outbound call {call_id} ended");
            self.deliver(call_id).await;
        }
    }
}

/// The brief's purpose, out of the call's task (between its `<purpose>` tags).
fn purpose(task: &str) -> String {
    task.split_once("<purpose>\n")
        .and_then(|(_, rest)| rest.split_once("\n</purpose>"))
        .map(|(purpose, _)| purpose.to_owned())
        .unwrap_or_else(|| "I'm calling about a message.".to_owned())
}

/// `POST /demo/inbound`: someone called the number and left a message.
async fn inbound(State(demo): State<Arc<Demo>>) -> (StatusCode, axum::Json<Value>) {
    let call_id = demo.provider.inbound_call(
        CALLER,
        &demo.number,
        &[
            (
                "assistant",
                "Hello, you've reached the assistant for this number. How can I help?",
            ),
            (
                "user",
                "Hi, it's Sam from the bakery. The rye loaf is back on Thursday.",
            ),
            (
                "assistant",
                "Thank you, Sam. I'll pass that on. Is there anything else?",
            ),
            ("user", "No, that's all. Bye!"),
        ],
        "Sam from the bakery called: the rye loaf is back on Thursday.",
    );
    println!("steward-demo-calls: an inbound call {call_id} from {CALLER} ended");
    if demo.deliver(&call_id).await {
        (StatusCode::OK, axum::Json(json!({ "call_id": call_id })))
    } else {
        (
            StatusCode::BAD_GATEWAY,
            axum::Json(json!({ "call_id": call_id, "error": "the webhook was not taken" })),
        )
    }
}

/// Random bytes from the kernel, as lowercase hex.
fn random_hex(bytes: usize) -> std::io::Result<String> {
    use std::io::Read;
    let mut random = vec![0u8; bytes];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut random)?;
    Ok(random.iter().map(|byte| format!("{byte:02x}")).collect())
}

#[tokio::main]
async fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let (Some(dir), Some(number), Some(webhook_url), None) = (args.next(), args.next(), args.next(), args.next())
    else {
        eprintln!("usage: steward-demo-calls <directory> <phone_number> <webhook_url>");
        return ExitCode::from(2);
    };
    let dir = PathBuf::from(dir);
    let key_file = dir.join("callprov-api-key");
    let secret_file = dir.join("callprov-webhook-secret");
    let secrets = std::fs::create_dir_all(&dir).and_then(|()| Ok((random_hex(24)?, random_hex(32)?)));
    let (key, secret) = match secrets {
        Ok(secrets) => secrets,
        Err(error) => {
            eprintln!("steward-demo-calls: cannot make the demo's secrets: {error}");
            return ExitCode::FAILURE;
        }
    };
    let provider = FakeCallProvider::start(&key, &[&number]).await;
    let http = match reqwest::Client::builder().timeout(Duration::from_secs(10)).build() {
        Ok(http) => http,
        Err(error) => {
            eprintln!("steward-demo-calls: cannot build an HTTP client: {error}");
            return ExitCode::FAILURE;
        }
    };
    let demo = Arc::new(Demo {
        provider,
        number,
        webhook_url,
        secret: secret.clone().into_bytes(),
        http,
    });
    let control = testkit::serve(
        axum::Router::new()
            .route("/demo/inbound", post(inbound))
            .with_state(demo.clone()),
    )
    .await;
    let written = demo::write_private(&key_file, &key)
        .and_then(|()| demo::write_private(&secret_file, &secret))
        .and_then(|()| {
            let provider = format!(
                "CALLPROV_BASE_URL={}\nCALLPROV_API_KEY_FILE={}\nCALLPROV_WEBHOOK_SECRET_FILE={}\n\
                 DEMO_CALLS_CONTROL_URL={}\n",
                demo.provider.url,
                key_file.display(),
                secret_file.display(),
                control.url(""),
            );
            // Written last and renamed into place: its presence says everything is ready.
            let partial = dir.join("provider.env.partial");
            std::fs::write(&partial, provider)?;
            std::fs::rename(&partial, dir.join("provider.env"))
        });
    if let Err(error) = written {
        eprintln!("steward-demo-calls: cannot write {}: {error}", dir.display());
        return ExitCode::FAILURE;
    }
    println!(
        "steward-demo-calls: the provider for {} at {}; simulate a call in with `curl -X POST {}`",
        demo.number,
        demo.provider.url,
        control.url("/demo/inbound")
    );
    let answering = demo.clone();
    tokio::spawn(async move {
        loop {
            answering.answer_outbound().await;
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    });
    let mut terminate = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(signal) => signal,
        Err(error) => {
            eprintln!("steward-demo-calls: cannot listen for SIGTERM: {error}");
            return ExitCode::FAILURE;
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate.recv() => {}
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_purpose_is_read_from_the_task() {
        let task = "You are Steward.\nThe purpose of the call:\n<purpose>\nConfirm the delivery.\n</purpose>\nMore";
        assert_eq!(super::purpose(task), "Confirm the delivery.");
        assert_eq!(super::purpose("no tags"), "I'm calling about a message.");
    }
}
