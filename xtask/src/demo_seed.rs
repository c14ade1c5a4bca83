//! The demo's seeded conversation (`cargo xtask dev --demo-mail`): on a stack that holds no
//! conversation yet, one message in which the owner tells the agent about themselves, so that
//! Memory shows beliefs to review and People a profile beside the demo mailbox's
//! correspondents, all formed offline (the rule-based former's patterns, see `memory::offline`).
//!
//! It speaks plain HTTP/1.1 over a `TcpStream`: xtask stays free of the async stack, and the API
//! listens on loopback. A stack that already holds a conversation is left as it is, so the seed
//! is sent once and a restart never repeats it.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use anyhow::{Context, bail};
use serde_json::{Value, json};

/// What the owner says in the seeded conversation: each sentence is one of the offline former's
/// patterns (a fact, a routine, a preference, and a relationship that makes a person).
pub const SEED: &str =
    "Hello! I live in Lisbon. I usually walk to work. I prefer tea to coffee. My sister is Grace Hopper.";

/// The idempotency key of the seeded message: a retry of the seed never sends it twice.
const SEED_KEY: &str = "demo-seed-conversation";

/// Seeds the conversation unless the stack holds one; whether it was seeded.
pub fn seed(listen: SocketAddr, token: &str) -> anyhow::Result<bool> {
    let (status, listed) = request(listen, token, "GET", "/v1/sessions?limit=1", None, None)?;
    if status != 200 {
        bail!("listing conversations answered {status}");
    }
    if listed["sessions"]
        .as_array()
        .is_none_or(|sessions| !sessions.is_empty())
    {
        return Ok(false);
    }
    let body = json!({ "agent_id": "default", "metadata": { "demo": "seed" } });
    let (status, created) = request(listen, token, "POST", "/v1/sessions", Some(&body), None)?;
    if status != 201 {
        bail!("creating the seeded conversation answered {status}: {created}");
    }
    let session = created["session_id"]
        .as_str()
        .context("the created conversation has no session_id")?;
    let message = json!({ "text": SEED });
    let path = format!("/v1/sessions/{session}/messages");
    let (status, answer) = request(listen, token, "POST", &path, Some(&message), Some(SEED_KEY))?;
    if status != 202 {
        bail!("sending the seeded message answered {status}: {answer}");
    }
    Ok(true)
}

/// One request with the bearer `token`; the status and the JSON body (`null` when empty).
fn request(
    listen: SocketAddr,
    token: &str,
    method: &str,
    path: &str,
    body: Option<&Value>,
    idempotency_key: Option<&str>,
) -> anyhow::Result<(u16, Value)> {
    let mut stream = TcpStream::connect_timeout(&listen, Duration::from_secs(2)).context("connect to the API")?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let payload = body.map(Value::to_string).unwrap_or_default();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {listen}\r\nAuthorization: Bearer {token}\r\nAccept: application/json\r\n\
         Connection: close\r\nContent-Length: {}\r\n",
        payload.len()
    );
    if body.is_some() {
        head.push_str("Content-Type: application/json\r\n");
    }
    if let Some(key) = idempotency_key {
        head.push_str(&format!("Idempotency-Key: {key}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    stream.write_all(payload.as_bytes())?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response).context("read the API's answer")?;
    parse(&response)
}

/// The status and JSON body of a whole HTTP/1.1 response (a chunked body is joined).
fn parse(response: &[u8]) -> anyhow::Result<(u16, Value)> {
    let split = response
        .windows(4)
        .position(|window| window == b"\r\n\r\n")
        .context("the API's answer has no end of headers")?;
    let head = std::str::from_utf8(&response[..split]).context("the API's headers are not UTF-8")?;
    let status: u16 = head
        .get(9..12)
        .and_then(|code| code.parse().ok())
        .context("the API's answer has no status")?;
    let chunked = head.lines().any(|line| {
        let lower = line.to_ascii_lowercase();
        lower.starts_with("transfer-encoding:") && lower.contains("chunked")
    });
    let raw = &response[split + 4..];
    let body = if chunked { dechunk(raw)? } else { raw.to_vec() };
    if body.is_empty() {
        return Ok((status, Value::Null));
    }
    let value = serde_json::from_slice(&body).context("the API's answer is not JSON")?;
    Ok((status, value))
}

/// A chunked body's data.
fn dechunk(mut raw: &[u8]) -> anyhow::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let line_end = raw
            .windows(2)
            .position(|window| window == b"\r\n")
            .context("a chunk has no size line")?;
        let size_text = std::str::from_utf8(&raw[..line_end])?;
        let size_text = size_text.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16).context("a chunk size is not hexadecimal")?;
        raw = &raw[line_end + 2..];
        if size == 0 {
            return Ok(body);
        }
        let chunk = raw.get(..size).context("a chunk is cut short")?;
        body.extend_from_slice(chunk);
        raw = raw.get(size + 2..).context("a chunk has no end")?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_and_a_chunked_answer_are_read() {
        let plain =
            b"HTTP/1.1 201 Created\r\ncontent-type: application/json\r\ncontent-length: 15\r\n\r\n{\"session_id\":1}";
        assert_eq!(parse(plain).expect("plain"), (201, json!({ "session_id": 1 })));
        let chunked =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"ses\r\nA;x=y\r\nsions\":[]}\r\n0\r\n\r\n";
        assert_eq!(parse(chunked).expect("chunked"), (200, json!({ "sessions": [] })));
        let empty = b"HTTP/1.1 204 No Content\r\n\r\n";
        assert_eq!(parse(empty).expect("empty"), (204, Value::Null));
    }

    #[test]
    fn a_broken_answer_is_an_error() {
        for broken in [
            &b"HTTP/1.1 200 OK\r\n"[..],
            b"HTTP/1.1 2x0 OK\r\n\r\n",
            b"HTTP/1.1 200 OK\r\n\r\nnot json",
        ] {
            assert!(parse(broken).is_err(), "{}", String::from_utf8_lossy(broken));
        }
        let cut = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nff\r\n{}";
        assert!(parse(cut).is_err());
    }

    #[test]
    fn the_seed_states_what_the_offline_former_forms() {
        // Each sentence after the greeting starts with one of the offline former's patterns (its
        // table in crates/memory/src/offline.rs; a pattern counts only at a sentence's start);
        // xtask does not link the memory crate, so they are named.
        let sentences: Vec<&str> = SEED
            .split(['.', '!'])
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        assert_eq!(sentences[0], "Hello");
        for (sentence, pattern) in sentences[1..]
            .iter()
            .zip(["I live in ", "I usually ", "I prefer ", "My sister is "])
        {
            assert!(sentence.starts_with(pattern), "{sentence}");
        }
        assert_eq!(sentences.len(), 5);
    }
}
