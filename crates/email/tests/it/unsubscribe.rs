//! A whole unsubscribe offline: newsletters signed with keys made at run time, the census
//! (async worker) verifying them through a real DNS server, a command recorded as the api does,
//! and the worker sending each target once: a one-click request to an HTTPS server on
//! 127.0.0.1, a mailto message through the stand-in's send endpoint, a redirect refused; then
//! the archive of the unsubscribed sender's Inbox mail, and a target a dead worker left
//! mid-request settled uncertain without being sent again.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::http::{StatusCode, Uri};
use axum::response::IntoResponse;
use domain::email::{EmailOperationState, SubscriptionState};
use email::dns::Resolver;
use email::evidence::Dkim;
use email::oneclick::{OneClickTransport, Settings};
use email::refresh::Refresher;
use email::unsubscribe::Unsubscriber;
use email::writes::{WritePace, Writer};
use mail_builder::MessageBuilder;
use mail_builder::headers::raw::Raw;
use mail_mcp::accounts::{Account, ReadAccount};
use mail_mcp::document::MailScope;
use store::{ConfirmedTarget, Store, SubscriptionRow, UnsubscribeRequest};
use testkit::dkim::{ONE_CLICK_HEADERS, Signer};
use testkit::dns::DnsServer;
use testkit::gmail::{FakeGmail, MODIFY, READONLY, SEND};

use crate::refresh::{ensure_accounts, gmail};
use crate::writes::document;

fn newsletter(from: &str, unsubscribe: &str, post: bool, minute: i64) -> Vec<u8> {
    let mut message = MessageBuilder::new()
        .from(("Sender", from))
        .to("owner@example.org")
        .subject(format!("News from {from} #{minute}"))
        .date(jiff::Timestamp::now().as_second() - 3600 + minute * 60)
        .text_body("This week's news.\r\n")
        .header("List-Unsubscribe", Raw::new(unsubscribe.to_owned()));
    if post {
        message = message.header("List-Unsubscribe-Post", Raw::new("List-Unsubscribe=One-Click"));
    }
    message.write_to_vec().expect("built")
}

struct World {
    fake: FakeGmail,
    dns: DnsServer,
    api: Store,
    refresher: Refresher,
    reader: ReadAccount,
    unsubscriber: Unsubscriber,
    writer: Writer,
    /// One-click requests the senders' server received (paths).
    received: Arc<std::sync::Mutex<Vec<String>>>,
    _served: testkit::Served,
    front: tokio::task::JoinHandle<()>,
    clock: Arc<testkit::ShiftedClock>,
    _db: testkit::TestDatabase,
}

impl Drop for World {
    fn drop(&mut self) {
        self.front.abort();
    }
}

async fn world() -> World {
    let fake = FakeGmail::start().await;
    fake.mailbox("owner", "owner@example.org");
    fake.mailbox("club", "leave@club.example");
    let dns = DnsServer::start().await;
    let localhost: IpAddr = "127.0.0.1".parse().expect("loopback");
    // The senders' HTTPS server.
    let received = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = Arc::clone(&received);
    let app = axum::Router::new().fallback(move |uri: Uri| {
        let log = Arc::clone(&log);
        async move {
            log.lock().expect("lock").push(uri.to_string());
            match uri.path() {
                "/u/redirect" => {
                    (StatusCode::SEE_OTHER, [("location", "https://letters.example/u/ok")]).into_response()
                }
                _ => (StatusCode::OK, "Unsubscribed").into_response(),
            }
        }
    });
    let served = testkit::serve(app).await;
    let hosts = ["letters.example", "redirect.example"];
    let (front, ca, front_task) = testkit::tls::front(localhost, &hosts, served.address).await;
    for host in hosts {
        dns.set_addresses(host, &[localhost]);
    }
    let db = testkit::TestDatabase::new().await;
    let clock = Arc::new(testkit::ShiftedClock::default());
    let census_store = db.store_as("async-worker").await.with_clock(clock.clone());
    ensure_accounts(&census_store, &["personal"]).await;
    let refresher = Refresher {
        store: census_store,
        gmail: gmail(&fake),
        backfill: jiff::SignedDuration::from_hours(24),
        classifier: Arc::new(email::classify::Classifier::Offline),
        census: Some(Arc::new(Dkim::with_server(dns.address))),
        junk: email::junk::JunkSettings::off(),
    };
    let account = Account {
        account_id: "personal".into(),
        read: document(&fake, MailScope::Read, READONLY),
        write: document(&fake, MailScope::Write, MODIFY),
        send: document(&fake, MailScope::Send, SEND),
    };
    let reader = ReadAccount {
        account_id: "personal".into(),
        read: account.read.clone(),
    };
    let pace = WritePace {
        poll: Duration::from_millis(20),
        lease: Duration::from_secs(30),
    };
    let worker_store = db.store_as("worker").await.with_clock(clock.clone());
    let transport = OneClickTransport::new(Settings {
        resolver: Resolver::with_server(dns.address),
        port: front.port(),
        also_allowed: vec![localhost],
        roots: Some(vec![
            reqwest::Certificate::from_pem(ca.as_bytes()).expect("the authority"),
        ]),
        timeout: Duration::from_secs(2),
        connect_timeout: Duration::from_secs(2),
    });
    World {
        unsubscriber: Unsubscriber {
            store: worker_store.clone(),
            gmail: gmail(&fake),
            accounts: vec![account.clone()],
            transport,
            worker_id: "worker-test".into(),
            pace: pace.clone(),
        },
        writer: Writer {
            store: worker_store,
            gmail: gmail(&fake),
            accounts: vec![account],
            worker_id: "worker-test".into(),
            pace,
        },
        api: db.store_as("api").await.with_clock(clock.clone()),
        refresher,
        reader,
        received,
        _served: served,
        front: front_task,
        fake,
        dns,
        clock,
        _db: db,
    }
}

impl World {
    async fn refresh(&self) {
        self.refresher.update(&self.reader).await.expect("refresh");
    }

    async fn row(&self, sender: &str) -> SubscriptionRow {
        self.api
            .email()
            .subscriptions_of(&"personal".into())
            .await
            .expect("rows")
            .into_iter()
            .find(|row| row.sender == sender)
            .unwrap_or_else(|| panic!("a row for {sender}"))
    }

    fn confirmed(row: &SubscriptionRow) -> ConfirmedTarget {
        ConfirmedTarget {
            subscription: row.id,
            digest: row.digest.clone(),
            revision: row.revision,
        }
    }

    fn requests(&self) -> Vec<String> {
        self.received.lock().expect("lock").clone()
    }

    fn sent(&self) -> Vec<testkit::gmail::StoredMessage> {
        self.fake.messages("owner", "SENT")
    }
}

#[tokio::test]
async fn confirmed_senders_are_unsubscribed_once_each_by_their_own_mechanism() {
    let world = world().await;
    let letters = Signer::generate("letters.example", "s1");
    let club = Signer::generate("club.example", "s1");
    let redirect = Signer::generate("redirect.example", "s1");
    for signer in [&letters, &club, &redirect] {
        world.dns.set_txt(&signer.record_name(), &signer.record());
    }
    let one_click = "<https://letters.example/u/ok?token=secret-token>";
    for minute in [1, 2] {
        let raw = letters.sign(
            &newsletter("news@letters.example", one_click, true, minute),
            ONE_CLICK_HEADERS,
        );
        world.fake.deliver_raw("owner", &raw, &["INBOX"], None);
    }
    let mailto = "<mailto:leave@club.example?subject=stop%20please&body=remove%20me>";
    let raw = club.sign(&newsletter("list@club.example", mailto, false, 3), ONE_CLICK_HEADERS);
    world.fake.deliver_raw("owner", &raw, &["INBOX"], None);
    let bouncing = "<https://redirect.example/u/redirect>";
    let raw = redirect.sign(
        &newsletter("news@redirect.example", bouncing, true, 4),
        ONE_CLICK_HEADERS,
    );
    world.fake.deliver_raw("owner", &raw, &["INBOX"], None);
    world.refresh().await;

    let news = world.row("news@letters.example").await;
    let list = world.row("list@club.example").await;
    let bounce = world.row("news@redirect.example").await;
    for row in [&news, &list, &bounce] {
        assert_eq!(row.state, SubscriptionState::Eligible, "{row:?}");
    }
    let targets = [
        World::confirmed(&news),
        World::confirmed(&list),
        World::confirmed(&bounce),
    ];
    let UnsubscribeRequest::Accepted { operation, refused } = world
        .api
        .email()
        .request_unsubscribe(&targets, true)
        .await
        .expect("request")
    else {
        panic!("accepted");
    };
    assert!(refused.is_empty());

    world.unsubscriber.pass().await.expect("a pass");
    // One POST to the one-click target, one to the redirecting one (not followed).
    assert_eq!(world.requests(), ["/u/ok?token=secret-token", "/u/redirect"]);
    // One message, exactly the header's: recipient, subject, body.
    let sent = world.sent();
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].to, ["leave@club.example"]);
    assert_eq!(sent[0].subject, "stop please");
    assert_eq!(sent[0].body.trim_end(), "remove me");

    assert_eq!(
        world.row("news@letters.example").await.state,
        SubscriptionState::Unsubscribed
    );
    assert_eq!(
        world.row("list@club.example").await.state,
        SubscriptionState::Unsubscribed
    );
    let bounced = world.row("news@redirect.example").await;
    assert_eq!(
        (bounced.state, bounced.last_error.as_deref()),
        (SubscriptionState::Eligible, Some("unsubscribe.redirect_refused")),
        "a failed row is restored with its error"
    );
    let settled = world
        .api
        .email()
        .operation(operation.id)
        .await
        .expect("read")
        .expect("row");
    assert_eq!(settled.state, EmailOperationState::Failed);
    let states: Vec<EmailOperationState> = world
        .api
        .email()
        .unsubscribe_targets(operation.id)
        .await
        .expect("targets")
        .iter()
        .map(|target| target.state)
        .collect();
    assert_eq!(
        states,
        [
            EmailOperationState::Succeeded,
            EmailOperationState::Succeeded,
            EmailOperationState::Failed
        ]
    );

    // Also archive: the unsubscribed senders' Inbox conversations, through the provider.
    world.writer.pass().await.expect("writes");
    let inbox: Vec<String> = world
        .fake
        .messages("owner", "INBOX")
        .iter()
        .map(|message| message.from.clone())
        .collect();
    assert_eq!(inbox, ["news@redirect.example"], "only the failed sender's mail stays");

    // Nothing is ever sent twice.
    world.unsubscriber.pass().await.expect("a pass");
    assert_eq!(world.requests().len(), 2);
    assert_eq!(world.sent().len(), 1);
}

#[tokio::test]
async fn a_target_left_mid_request_by_a_dead_worker_is_uncertain_and_never_sent_again() {
    let world = world().await;
    let letters = Signer::generate("letters.example", "s1");
    world.dns.set_txt(&letters.record_name(), &letters.record());
    let one_click = "<https://letters.example/u/ok>";
    let raw = letters.sign(
        &newsletter("news@letters.example", one_click, true, 1),
        ONE_CLICK_HEADERS,
    );
    world.fake.deliver_raw("owner", &raw, &["INBOX"], None);
    world.refresh().await;
    let news = world.row("news@letters.example").await;
    let UnsubscribeRequest::Accepted { operation, .. } = world
        .api
        .email()
        .request_unsubscribe(&[World::confirmed(&news)], false)
        .await
        .expect("request")
    else {
        panic!("accepted");
    };
    // A worker claims it and marks the target leaving, then dies.
    let dead = world.unsubscriber.store.email();
    let claimed = dead
        .claim_unsubscribe("dead-worker", Duration::from_secs(30))
        .await
        .expect("claim")
        .expect("queued");
    assert!(
        dead.mark_target_dispatching(operation.id, claimed.targets[0].position, "dead-worker")
            .await
            .expect("mark")
    );
    // Within the lease nobody touches it; after it, the target is uncertain.
    world.unsubscriber.pass().await.expect("a pass");
    assert_eq!(
        world.row("news@letters.example").await.state,
        SubscriptionState::Unsubscribing
    );
    world.clock.advance(jiff::SignedDuration::from_secs(31));
    world.unsubscriber.pass().await.expect("a pass");
    assert!(world.requests().is_empty(), "nothing was sent again");
    let row = world.row("news@letters.example").await;
    assert_eq!(
        (row.state, row.last_error.as_deref()),
        (SubscriptionState::Eligible, Some(store::INTERRUPTED))
    );
    let settled = world
        .api
        .email()
        .operation(operation.id)
        .await
        .expect("read")
        .expect("row");
    assert_eq!(
        (settled.state, settled.error.as_deref()),
        (EmailOperationState::Uncertain, Some(store::INTERRUPTED))
    );
}

#[test]
fn a_mailto_message_holds_only_the_headers_recipient_subject_and_body() {
    let target = email::offer::MailtoTarget::parse(
        "mailto:leave@club.example?subject=stop%20please&body=remove%20me&cc=spy@x.example&bcc=spy@x.example",
    )
    .expect("a target");
    let raw = email::unsubscribe::mailto_message("owner@example.org", &target);
    let message = mail_parser::MessageParser::default().parse(&raw).expect("a message");
    let addresses = |list: Option<&mail_parser::Address<'_>>| -> Vec<String> {
        list.map(|list| list.iter().filter_map(|a| a.address()).map(str::to_owned).collect())
            .unwrap_or_default()
    };
    assert_eq!(addresses(message.to()), ["leave@club.example"]);
    assert_eq!(addresses(message.from()), ["owner@example.org"]);
    assert!(message.cc().is_none() && message.bcc().is_none());
    assert_eq!(message.subject(), Some("stop please"));
    assert_eq!(message.body_text(0).as_deref().map(str::trim_end), Some("remove me"));
    // Neither a subject nor a body: the subject list managers read.
    let bare = email::offer::MailtoTarget::parse("mailto:leave@club.example").expect("a target");
    let raw = email::unsubscribe::mailto_message("owner@example.org", &bare);
    let message = mail_parser::MessageParser::default().parse(&raw).expect("a message");
    assert_eq!(message.subject(), Some("unsubscribe"));
}
