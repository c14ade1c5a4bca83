//! A demo mailbox for trying Email mode offline (`cargo xtask dev --demo-mail`, the web client's
//! browser tests): a few hundred conversations over the last four weeks — people the owner
//! writes to, one awaiting the owner's reply, newsletters with `List-Unsubscribe` (DKIM-signed
//! with keys made at start, one of each kind of unsubscribe offer), receipts from
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

/// How a newsletter offers to stop it, so the Subscriptions view shows every kind of row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stop {
    /// RFC 8058 one-click, DKIM-signed over both headers: `One-click request to <host>`.
    OneClick,
    /// A web page only (no `List-Unsubscribe-Post`), signed: no mechanism.
    WebPage,
    /// A mailto address only, signed: `Sends an email to <address>`.
    Mailto,
    /// One-click offered, but never signed: stays `Checking…`.
    Unsigned,
}

const NEWSLETTERS: [(&str, &str, &str, Stop); 6] = [
    (
        "The Weekly Loop",
        "news@weeklyloop.example",
        "This week in loops",
        Stop::OneClick,
    ),
    (
        "Garden Notes",
        "hello@gardennotes.example",
        "What to plant now",
        Stop::WebPage,
    ),
    (
        "Rust Digest",
        "digest@rustdigest.example",
        "Crates of the week",
        Stop::Mailto,
    ),
    (
        "City Events",
        "events@cityevents.example",
        "Things to do this weekend",
        Stop::OneClick,
    ),
    ("Book Club", "club@bookclub.example", "Our next read", Stop::Unsigned),
    (
        "Travel Deals",
        "deals@traveldeals.example",
        "Fares from your airport",
        Stop::OneClick,
    ),
];

/// The newsletters' DKIM keys (made when the demo starts, never stored) and what DNS must
/// answer for them: each signing domain's key, and each one-click host's address (the demo's
/// local unsubscribe endpoint).
#[derive(Debug)]
pub struct Senders {
    signers: Vec<crate::dkim::Signer>,
}

impl Senders {
    pub fn generate() -> Senders {
        let signers = NEWSLETTERS
            .iter()
            .filter(|(.., stop)| *stop != Stop::Unsigned)
            .map(|(_, address, ..)| crate::dkim::Signer::generate(domain_of(address), "demo"))
            .collect();
        Senders { signers }
    }

    /// Publishes the keys on `dns`, and every newsletter host at `endpoint`.
    pub fn publish(&self, dns: &crate::dns::DnsServer, endpoint: std::net::IpAddr) {
        for signer in &self.signers {
            dns.set_txt(&signer.record_name(), &signer.record());
        }
        for host in hosts() {
            dns.set_addresses(host, &[endpoint]);
        }
    }

    fn signer(&self, domain: &str) -> Option<&crate::dkim::Signer> {
        self.signers.iter().find(|signer| signer.domain == domain)
    }
}

/// Every newsletter's host: the names the local unsubscribe endpoint's certificate covers.
pub fn hosts() -> Vec<&'static str> {
    NEWSLETTERS.iter().map(|(_, address, ..)| domain_of(address)).collect()
}

fn domain_of(address: &str) -> &str {
    address.split('@').nth(1).unwrap_or("example")
}

const SHOPS: [(&str, &str); 3] = [
    ("Corner Bookshop", "receipts@cornerbooks.example"),
    ("Rail Tickets", "no-reply@railtickets.example"),
    ("Energy Co", "billing@energyco.example"),
];

/// People the owner has never written to, writing to them personally: (name, address, subject,
/// text).
const STRANGERS: [(&str, &str, &str, &str); 12] = [
    (
        "Nora Field",
        "nora@street.example",
        "Street party on Saturday",
        "We are closing the street for a party on Saturday afternoon. Would you bring a chair?",
    ),
    (
        "Sam Baker",
        "sam@bakery.example",
        "Your bread order",
        "The rye loaf you asked about is back on Thursday. Shall I keep one for you?",
    ),
    (
        "Li Wei",
        "li@school.example",
        "Parents' evening",
        "Parents' evening is on the 12th. Could you pick a time that suits you?",
    ),
    (
        "Omar Haddad",
        "omar@choir.example",
        "Choir rehearsal moved",
        "Rehearsal moves to Wednesday this week, same hall, seven o'clock.",
    ),
    (
        "Jo Marsh",
        "jo@allotment.example",
        "Spare seedlings",
        "I have spare tomato seedlings if you want some for your plot.",
    ),
    (
        "Priya Rao",
        "priya@library.example",
        "The book you reserved",
        "The book you reserved has arrived; it is held for you until Friday.",
    ),
    (
        "Tom Reed",
        "tom@cycling.example",
        "Sunday ride",
        "A few of us ride to the lake on Sunday morning. Join us if you like.",
    ),
    (
        "Ana Costa",
        "ana@recruit.example",
        "A role you might like",
        "I came across your talk and wondered whether you would consider a conversation about a role.",
    ),
    (
        "Ben Ode",
        "ben@residents.example",
        "Residents' meeting",
        "The residents' meeting is on Monday; the agenda is the new bins.",
    ),
    (
        "Mia Lund",
        "mia@vet.example",
        "Reminder for Pepper",
        "Pepper is due for a check-up next month. Reply to book a time.",
    ),
    (
        "Eli Stone",
        "eli@plumber.example",
        "Quote for the boiler",
        "Following my visit, the quote for the boiler service is attached below in words: 90 EUR.",
    ),
    (
        "Ruth Kay",
        "ruth@museum.example",
        "Volunteer morning",
        "Thank you for signing up to volunteer; we start at nine in the main hall.",
    ),
];

/// Unsolicited, deceptive mail: (sender address, subject, text), each with several signals the
/// junk filter's offline rules count.
const SPAM: [(&str, &str, &str); 8] = [
    (
        "prize@lucky-draw.example",
        "YOU HAVE WON",
        "You have won our lottery! Claim your prize today!!!",
    ),
    (
        "security@acc0unt-alerts.example",
        "Verify your account now",
        "Your account will be suspended. Act now: verify your account!!!",
    ),
    (
        "invest@coin-boost.example",
        "Double your bitcoin",
        "Guaranteed income from bitcoin. Act now, limited time offer!",
    ),
    (
        "lawyer@estate-claims.example",
        "Inheritance for you",
        "You are the beneficiary of an inheritance. A small wire transfer fee releases it.",
    ),
    (
        "vip@grand-casino.example",
        "FREE SPINS WAITING",
        "Casino bonus: 100% free spins, risk-free!!!",
    ),
    (
        "deals@miracle-slim.example",
        "Miracle results",
        "A miracle pill, 100% free trial, act now!",
    ),
    (
        "prize@lucky-draw.example",
        "Final notice: claim your prize",
        "Claim your prize before midnight!!! You have won.",
    ),
    (
        "support@wallet-help.example",
        "Wallet locked",
        "Verify your account within 24 hours or your account will be suspended. Wire transfer required.",
    ),
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

/// What some people say of themselves in their first answer, and what the owner says in a first
/// message (the offline reader and former turn these into facts, a phone contact and beliefs
/// flagged for review, so Memory and People have something to show).
const SAID_BY_PEOPLE: [&str; 8] = [
    "I work at the Analytical Society.\nMobile: +44 20 7946 0101",
    "I live in Arlington.\nTel: +1 703 555 0142",
    "",
    "I promised to send the launch figures by Monday.",
    "",
    "",
    "",
    "",
];
const SAID_BY_OWNER: [&str; 8] = [
    "I prefer calls in the morning.",
    "",
    "My accountant is Donald Knuth.",
    "",
    "",
    "",
    "",
    "",
];

/// Fills `mailbox` on `gmail` (created here) with the demo conversations, dated back from `now`,
/// the newsletters signed by `senders`; how many messages were delivered.
pub fn fill(gmail: &FakeGmail, mailbox: &str, now: jiff::Timestamp, senders: &Senders) -> usize {
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
                    "Hi {name},\n\nCould you send me your notes on {topic}? {}\n\nThanks",
                    if round == 0 { SAID_BY_OWNER[index] } else { "" }
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
                     points are listed below.\n\n1. Dates\n2. People\n3. Costs\n\n{name}\n{}",
                    if round == 0 { SAID_BY_PEOPLE[index] } else { "" }
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

    // Newsletters: bulk mail with List-Unsubscribe and List-Id, HTML only, each kind of
    // unsubscribe offer (see `Stop`).
    for index in 0..192_usize {
        let (name, address, subject, stop) = NEWSLETTERS[index % NEWSLETTERS.len()];
        let issue = index / NEWSLETTERS.len() + 1;
        let host = domain_of(address);
        let offer = match stop {
            Stop::OneClick | Stop::Unsigned => format!("<https://{host}/unsubscribe/{issue}?list=owner>"),
            Stop::WebPage => format!("<https://{host}/preferences>"),
            Stop::Mailto => format!("<mailto:leave@{host}?subject=unsubscribe%20owner&body=Please%20remove%20me.>"),
        };
        let mut message = MessageBuilder::new()
            .from((name, address))
            .to(OWNER)
            .subject(format!("{subject} (issue {issue})"))
            .date(at(27 * 24 * 60 - index as i64 * 200 - 30))
            .header("List-Unsubscribe", Raw::new(offer))
            .header("List-Id", Raw::new(format!("<list.{host}>")));
        if matches!(stop, Stop::OneClick | Stop::Unsigned) {
            message = message.header("List-Unsubscribe-Post", Raw::new("List-Unsubscribe=One-Click"));
        }
        let raw = message
            .html_body(format!(
                "<h1>{subject}</h1><p>Issue {issue}: <b>five</b> picks for you.</p>\
                 <img src=\"https://{host}/pixel.gif\"><p><a href=\"https://{host}/read\">Read more</a></p>"
            ))
            .write_to_vec()
            .unwrap_or_default();
        let raw = match senders.signer(host) {
            Some(signer) => signer.sign(&raw, crate::dkim::ONE_CLICK_HEADERS),
            None => raw,
        };
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

    // People the owner does not know, writing personally; and spam, over the last ten days.
    for (index, (name, address, subject, text)) in STRANGERS.iter().enumerate() {
        let raw = MessageBuilder::new()
            .from((*name, *address))
            .to(("Owner", OWNER))
            .subject(*subject)
            .date(at(10 * 24 * 60 - index as i64 * 700))
            .text_body(format!("Hello,\n\n{text}\n\n{name}"))
            .write_to_vec()
            .unwrap_or_default();
        deliver(raw, &["INBOX"], None);
    }
    for (index, (address, subject, text)) in SPAM.iter().enumerate() {
        let raw = MessageBuilder::new()
            .from(*address)
            .to(OWNER)
            .subject(*subject)
            .date(at(9 * 24 * 60 - index as i64 * 900))
            .text_body(*text)
            .write_to_vec()
            .unwrap_or_default();
        deliver(raw, &["INBOX"], None);
    }
    delivered
}

/// The demo owner's reviewed calibration packet for the junk filter, as the worked example in
/// `docs/email-mode.md` builds one (`calibrate`, the owner's labels, `junk-packet`), so the demo
/// runs `filter` from its first update: 100 observations of the filled `mailbox` — 80 at
/// random (60 newsletters and the 8 spam, which the owner calls junk, and 12 receipts), 10
/// strangers' personal mail and 10 more receipts (which the owner keeps) — each with the
/// offline rules' judgment (`email`'s tests check every one against the rules). People the
/// owner writes to are protected and never sampled.
pub fn evidence(gmail: &FakeGmail, mailbox: &str) -> serde_json::Value {
    let messages = gmail.stored(mailbox);
    let from = |addresses: &[&str]| -> Vec<String> {
        messages
            .iter()
            .filter(|message| addresses.contains(&message.from.to_lowercase().as_str()))
            .map(|message| message.id.clone())
            .collect()
    };
    let newsletters: Vec<&str> = NEWSLETTERS.iter().map(|(_, address, ..)| *address).collect();
    let spam: Vec<&str> = SPAM.iter().map(|(address, ..)| *address).collect();
    let shops: Vec<&str> = SHOPS.iter().map(|(_, address)| *address).collect();
    let strangers: Vec<&str> = STRANGERS.iter().map(|(_, address, ..)| *address).collect();
    let receipts = from(&shops);
    let account = domain::ids::AccountId::from(ACCOUNT_ID);
    let observation = |id: &String, category: &str, probability: f64, label: &str, stratum: &str| {
        json!({"fingerprint": domain::junk::fingerprint(&account, id), "category": category,
               "probability": probability, "owner_label": label, "source": "owner_review", "stratum": stratum})
    };
    let mut observations = Vec::new();
    observations.extend(
        from(&newsletters)
            .iter()
            .take(60)
            .map(|id| observation(id, "bulk", 0.995, "junk", "random")),
    );
    observations.extend(
        from(&spam)
            .iter()
            .map(|id| observation(id, "spam", 0.999, "junk", "random")),
    );
    observations.extend(
        receipts
            .iter()
            .take(12)
            .map(|id| observation(id, "keep", 0.95, "keep", "random")),
    );
    observations.extend(
        from(&strangers)
            .iter()
            .take(10)
            .map(|id| observation(id, "keep", 0.95, "keep", "personal_outreach")),
    );
    observations.extend(
        receipts
            .iter()
            .skip(12)
            .take(10)
            .map(|id| observation(id, "keep", 0.95, "keep", "transactional")),
    );
    json!({"policy": domain::junk::JUNK_POLICY, "model": domain::junk::OFFLINE_JUNK_MODEL, "observations": observations})
}

/// Writes the demo's evidence packet ([`evidence`]) to `path`, owner-only.
pub fn write_evidence(path: &Path, gmail: &FakeGmail, mailbox: &str) -> std::io::Result<()> {
    write_private(path, &evidence(gmail, mailbox).to_string())
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
pub fn write_private(path: &Path, contents: &str) -> std::io::Result<()> {
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
