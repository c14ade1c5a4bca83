//! A demo mailbox for trying Email mode offline (`cargo xtask dev --demo-mail`, the web client's
//! browser tests): a few hundred conversations over the last four weeks — people the owner
//! writes to, one awaiting the owner's reply, newsletters with `List-Unsubscribe`, receipts from
//! transactional senders, attachments — delivered to the stand-in provider, and the account's
//! three credential documents and accounts manifest written as the bootstrap would.
//!
//! Everything is made from the index of each message, so two runs make the same mailbox (the
//! same provider ids) with dates relative to the start.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use mail_builder::MessageBuilder;
use mail_builder::headers::raw::Raw;
use serde_json::json;

use crate::gmail::{FakeGmail, MODIFY, READONLY, SEND};

/// The demo account's id and mailbox address.
pub const ACCOUNT_ID: &str = "demo";
pub const OWNER: &str = "owner@demo.example";

const PEOPLE: [(&str, &str); 8] = [
    ("Ada Lovelace", "ada@analytical.example"),
    ("Grace Hopper", "grace@cobol.example"),
    ("Alan Turing", "alan@bletchley.example"),
    ("Katherine Johnson", "katherine@orbit.example"),
    ("Edsger Dijkstra", "edsger@shortest.example"),
    ("Barbara Liskov", "barbara@substitution.example"),
    ("Donald Knuth", "don@tex.example"),
    ("Margaret Hamilton", "margaret@apollo.example"),
];

const NEWSLETTERS: [(&str, &str, &str); 6] = [
    ("The Weekly Loop", "news@weeklyloop.example", "This week in loops"),
    ("Garden Notes", "hello@gardennotes.example", "What to plant now"),
    ("Rust Digest", "digest@rustdigest.example", "Crates of the week"),
    ("City Events", "events@cityevents.example", "Things to do this weekend"),
    ("Book Club", "club@bookclub.example", "Our next read"),
    ("Travel Deals", "deals@traveldeals.example", "Fares from your airport"),
];

const SHOPS: [(&str, &str); 3] = [
    ("Corner Bookshop", "receipts@cornerbooks.example"),
    ("Rail Tickets", "no-reply@railtickets.example"),
    ("Energy Co", "billing@energyco.example"),
];

const TOPICS: [&str; 8] = [
    "the project plan",
    "Thursday's meeting",
    "the draft chapter",
    "the garden party",
    "our trip in May",
    "the budget sheet",
    "the conference talk",
    "the new office",
];

/// Fills `mailbox` on `gmail` (created here) with the demo conversations, dated back from `now`;
/// how many messages were delivered.
pub fn fill(gmail: &FakeGmail, mailbox: &str, now: jiff::Timestamp) -> usize {
    gmail.mailbox(mailbox, OWNER);
    let mut delivered = 0;
    // Oldest first, spread over 27 days: `age` is minutes before `now`.
    let at = |age: i64| now.as_second() - 60 * age;
    let mut deliver = |raw: Vec<u8>, labels: &[&str], thread: Option<&str>| {
        delivered += 1;
        gmail.deliver_raw(mailbox, &raw, labels, thread)
    };

    // The owner writes to each person first (so they are known correspondents), and each
    // answers; some answers carry an attachment.
    for (index, (name, address)) in PEOPLE.iter().enumerate() {
        for round in 0..3_usize {
            let topic = TOPICS[(index + round) % TOPICS.len()];
            let age = 27 * 24 * 60 - (index * 3 + round) as i64 * 180;
            let sent = MessageBuilder::new()
                .from(("Owner", OWNER))
                .to((*name, *address))
                .subject(format!("About {topic}"))
                .date(at(age))
                .text_body(format!(
                    "Hi {name},\n\nCould you send me your notes on {topic}?\n\nThanks"
                ))
                .write_to_vec()
                .unwrap_or_default();
            let thread = deliver(sent, &["SENT"], None);
            let mut answer = MessageBuilder::new()
                .from((*name, *address))
                .to(("Owner", OWNER))
                .subject(format!("Re: About {topic}"))
                .date(at(age - 90))
                .text_body(format!(
                    "Here are my notes on {topic}. The short version: we are on track, and the open \
                     points are listed below.\n\n1. Dates\n2. People\n3. Costs\n\n{name}"
                ));
            if round == 1 {
                answer = answer.attachment("application/pdf", format!("notes-{}.pdf", index + 1), vec![b'%'; 4096]);
            }
            deliver(answer.write_to_vec().unwrap_or_default(), &["INBOX"], Some(&thread));
        }
    }

    // Receipts: transactional senders, most archived already.
    for index in 0..36_usize {
        let (name, address) = SHOPS[index % SHOPS.len()];
        let raw = MessageBuilder::new()
            .from((name, address))
            .to(OWNER)
            .subject(format!("Your receipt #{}", 1000 + index))
            .date(at(26 * 24 * 60 - index as i64 * 1000))
            .text_body(format!(
                "Thank you for your order.\n\nOrder {}: {}.{:02} EUR, paid by card.",
                1000 + index,
                10 + index,
                index * 7 % 100
            ))
            .write_to_vec()
            .unwrap_or_default();
        let labels: &[&str] = if index % 3 == 0 { &["INBOX"] } else { &[] };
        deliver(raw, labels, None);
    }

    // Newsletters: bulk mail with List-Unsubscribe and List-Id, HTML only.
    for index in 0..192_usize {
        let (name, address, subject) = NEWSLETTERS[index % NEWSLETTERS.len()];
        let issue = index / NEWSLETTERS.len() + 1;
        let host = address.split('@').nth(1).unwrap_or("example");
        let raw = MessageBuilder::new()
            .from((name, address))
            .to(OWNER)
            .subject(format!("{subject} (issue {issue})"))
            .date(at(27 * 24 * 60 - index as i64 * 200 - 30))
            .header(
                "List-Unsubscribe",
                Raw::new(format!("<https://{host}/unsubscribe/{issue}>")),
            )
            .header("List-Id", Raw::new(format!("<list.{host}>")))
            .html_body(format!(
                "<h1>{subject}</h1><p>Issue {issue}: <b>five</b> picks for you.</p>\
                 <img src=\"https://{host}/pixel.gif\"><p><a href=\"https://{host}/read\">Read more</a></p>"
            ))
            .write_to_vec()
            .unwrap_or_default();
        deliver(raw, &["INBOX", "CATEGORY_PROMOTIONS"], None);
    }

    // Recent mail from people: questions awaiting a reply, and notes for the owner's attention.
    for (index, (name, address)) in PEOPLE.iter().enumerate() {
        let topic = TOPICS[(index + 3) % TOPICS.len()];
        let (subject, body) = if index % 2 == 0 {
            (
                format!("Question about {topic}"),
                format!("Hi,\n\nCan you confirm the time for {topic} by Friday?\n\n{name}"),
            )
        } else {
            (
                format!("Update on {topic}"),
                format!("Hi,\n\nA short update: {topic} is settled. Nothing needed from you.\n\n{name}"),
            )
        };
        let raw = MessageBuilder::new()
            .from((*name, *address))
            .to(("Owner", OWNER))
            .subject(subject)
            .date(at(120 + index as i64 * 97))
            .text_body(body)
            .write_to_vec()
            .unwrap_or_default();
        deliver(raw, &["INBOX", "UNREAD"], None);
    }
    delivered
}

/// Writes the demo account's three credential documents (owner-only, in an owner-only
/// directory of their own) and the accounts manifest under `dir`, granted on `gmail`'s
/// `mailbox`; the manifest's path.
pub fn write_account(dir: &Path, gmail: &FakeGmail, mailbox: &str) -> std::io::Result<PathBuf> {
    let account_dir = dir.join(ACCOUNT_ID);
    std::fs::create_dir_all(&account_dir)?;
    std::fs::set_permissions(&account_dir, std::fs::Permissions::from_mode(0o700))?;
    let mut paths = Vec::new();
    for (file, scope) in [
        ("mail-read.json", READONLY),
        ("mail-write.json", MODIFY),
        ("mail-send.json", SEND),
    ] {
        let path = account_dir.join(file);
        let document = json!({
            "client_id": "demo-client",
            "client_secret": "demo-secret",
            "refresh_token": gmail.grant(mailbox, scope),
            "scope": scope,
            "account_id": ACCOUNT_ID,
        });
        write_private(&path, &document.to_string())?;
        paths.push(path.display().to_string());
    }
    let manifest = dir.join("accounts.json");
    let accounts = json!({
        "version": 1,
        "default_account": ACCOUNT_ID,
        "accounts": [{
            "account_id": ACCOUNT_ID,
            "read_credential_file": paths[0],
            "write_credential_file": paths[1],
            "send_credential_file": paths[2],
        }],
    });
    write_private(&manifest, &accounts.to_string())?;
    Ok(manifest)
}

/// Replaces `path` with `contents`, created with mode 0600 (never readable by others, even for
/// a moment).
fn write_private(path: &Path, contents: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    match std::fs::remove_file(path) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => return Err(error),
        _ => {}
    }
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?
        .write_all(contents.as_bytes())
}
