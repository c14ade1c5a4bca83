//! The subscription census against the mail stand-in, a real DNS server publishing DKIM keys
//! made at run time, and a real database as the async-worker login: which evidence verifies,
//! what each row offers, counts and protection, a key lookup that fails for now and is retried,
//! and a sender still mailing ten days after an unsubscribe.

use std::sync::Arc;

use domain::email::{EvidenceCheck, SubscriptionState, UnsubscribeMechanism};
use email::evidence::Dkim;
use email::refresh::Refresher;
use mail_builder::MessageBuilder;
use mail_builder::headers::raw::Raw;
use store::SubscriptionRow;
use testkit::TestDatabase;
use testkit::dkim::{ONE_CLICK_HEADERS, Signer};
use testkit::dns::DnsServer;
use testkit::gmail::FakeGmail;

use crate::refresh::{account, recorded};

/// A bulk message from `from` carrying `List-Unsubscribe: unsubscribe` (and the one-click
/// `Post` header when `post`), dated `date` (UNIX seconds).
fn bulk(from: &str, unsubscribe: &str, post: bool, date: i64) -> Vec<u8> {
    let mut message = MessageBuilder::new()
        .from(("Sender", from))
        .to("owner@example.org")
        .subject(format!("News from {from}"))
        .date(date)
        .text_body("This week's news.\r\n")
        .header("List-Unsubscribe", Raw::new(unsubscribe.to_owned()));
    if post {
        message = message.header("List-Unsubscribe-Post", Raw::new("List-Unsubscribe=One-Click"));
    }
    message.write_to_vec().expect("built")
}

struct Census {
    fake: FakeGmail,
    dns: DnsServer,
    db: TestDatabase,
    refresher: Refresher,
}

impl Census {
    async fn start() -> Census {
        let fake = FakeGmail::start().await;
        fake.mailbox("owner", "owner@example.org");
        let dns = DnsServer::start().await;
        let (db, mut refresher) = recorded(&fake, 24 * 30).await;
        refresher.census = Some(Arc::new(Dkim::with_server(dns.address)));
        Census {
            fake,
            dns,
            db,
            refresher,
        }
    }

    /// A signer for `domain` whose key is published.
    fn signer(&self, domain: &str) -> Signer {
        let signer = Signer::generate(domain, "s1");
        self.dns.set_txt(&signer.record_name(), &signer.record());
        signer
    }

    fn deliver(&self, raw: &[u8]) -> String {
        self.fake.deliver_raw("owner", raw, &["INBOX"], None)
    }

    async fn update(&self) {
        self.refresher
            .update(&account(&self.fake, "owner"))
            .await
            .expect("an update");
    }

    async fn rows(&self) -> Vec<SubscriptionRow> {
        self.refresher
            .store
            .email()
            .subscriptions_of(&"personal".into())
            .await
            .expect("census rows")
    }

    async fn row(&self, sender: &str) -> SubscriptionRow {
        self.rows()
            .await
            .into_iter()
            .find(|row| row.sender == sender)
            .unwrap_or_else(|| panic!("a row for {sender}"))
    }
}

fn now() -> i64 {
    jiff::Timestamp::now().as_second()
}

#[tokio::test]
async fn only_a_valid_aligned_signature_over_the_unsubscribe_headers_verifies_an_offer() {
    let census = Census::start().await;
    let letters = census.signer("letters.example");
    let other = census.signer("elsewhere.example");
    let unpublished = Signer::generate("quiet.example", "s1");
    let t = now() - 3600;
    let both = "<https://letters.example/u/1?token=secret>, <mailto:leave@letters.example?subject=stop>";

    // Signed over both headers: one-click to the host.
    census.deliver(&letters.sign(&bulk("news@letters.example", both, true, t), ONE_CLICK_HEADERS));
    // `h=` without List-Unsubscribe-Post while the message has it.
    let without_post: Vec<&str> = ONE_CLICK_HEADERS
        .iter()
        .copied()
        .filter(|header| *header != "List-Unsubscribe-Post")
        .collect();
    census.deliver(&letters.sign(&bulk("nopost@letters.example", both, true, t), &without_post));
    // `h=` without List-Unsubscribe.
    let without_list: Vec<&str> = ONE_CLICK_HEADERS
        .iter()
        .copied()
        .filter(|header| *header != "List-Unsubscribe")
        .collect();
    census.deliver(&letters.sign(&bulk("nolist@letters.example", both, true, t), &without_list));
    // The body changed after signing.
    let mut altered = letters.sign(&bulk("altered@letters.example", both, true, t), ONE_CLICK_HEADERS);
    let at = altered
        .windows(4)
        .position(|window| window == b"news")
        .expect("the body");
    altered[at] = b'N';
    census.deliver(&altered);
    // The key is not published.
    census.deliver(&unpublished.sign(&bulk("news@quiet.example", both, true, t), ONE_CLICK_HEADERS));
    // Signed by another domain than the From address's.
    census.deliver(&other.sign(&bulk("news@unaligned.example", both, true, t), ONE_CLICK_HEADERS));
    // Not signed at all.
    census.deliver(&bulk("news@unsigned.example", both, true, t));
    // Signed, mailto only; and signed, a web page only (no one-click).
    let mailto_only = "<mailto:Leave@Letters.Example?subject=unsubscribe&body=please>";
    census.deliver(&letters.sign(&bulk("list@letters.example", mailto_only, false, t), ONE_CLICK_HEADERS));
    let page_only = "<https://letters.example/preferences>";
    census.deliver(&letters.sign(&bulk("page@letters.example", page_only, false, t), ONE_CLICK_HEADERS));
    census.update().await;

    let rows = census.rows().await;
    let seen: Vec<(&str, SubscriptionState, Option<UnsubscribeMechanism>, Option<&str>)> = rows
        .iter()
        .map(|row| {
            (
                row.sender.as_str(),
                row.state,
                row.mechanism,
                row.destination.as_deref(),
            )
        })
        .collect();
    use SubscriptionState::{Eligible, Unverified};
    use UnsubscribeMechanism::{Mailto, OneClick};
    assert_eq!(
        seen,
        [
            ("altered@letters.example", Unverified, None, None),
            (
                "list@letters.example",
                Eligible,
                Some(Mailto),
                Some("leave@letters.example")
            ),
            (
                "news@letters.example",
                Eligible,
                Some(OneClick),
                Some("letters.example")
            ),
            ("news@quiet.example", Unverified, None, None),
            ("news@unaligned.example", Unverified, None, None),
            ("news@unsigned.example", Unverified, None, None),
            ("nolist@letters.example", Unverified, None, None),
            ("nopost@letters.example", Unverified, None, None),
            ("page@letters.example", Eligible, None, None),
        ]
    );
    let one_click = census.row("news@letters.example").await;
    assert_eq!(
        one_click.target.as_deref(),
        Some("https://letters.example/u/1?token=secret"),
        "the full target is kept for the worker"
    );
    assert_eq!(one_click.digest.len(), 64);
    let unverified = census.row("news@quiet.example").await;
    assert_eq!(unverified.evidence_check, EvidenceCheck::Failed);
    assert_eq!(unverified.target, None);

    // Nothing changed: a second census leaves every revision where it was.
    let before: Vec<(String, i64)> = rows.iter().map(|row| (row.sender.clone(), row.revision)).collect();
    census.update().await;
    let after: Vec<(String, i64)> = census
        .rows()
        .await
        .iter()
        .map(|row| (row.sender.clone(), row.revision))
        .collect();
    assert_eq!(before, after);
}

#[tokio::test]
async fn a_key_lookup_that_fails_for_now_is_checked_again_on_a_later_update() {
    let census = Census::start().await;
    let letters = census.signer("letters.example");
    census.dns.fail(&letters.record_name());
    let offer = "<https://letters.example/u/1>";
    census.deliver(&letters.sign(
        &bulk("news@letters.example", offer, true, now() - 60),
        ONE_CLICK_HEADERS,
    ));
    census.update().await;
    let pending = census.row("news@letters.example").await;
    assert_eq!(
        (pending.state, pending.evidence_check),
        (SubscriptionState::Unverified, EvidenceCheck::Pending)
    );

    census.dns.heal(&letters.record_name());
    census.update().await;
    let verified = census.row("news@letters.example").await;
    assert_eq!(
        (verified.state, verified.mechanism),
        (SubscriptionState::Eligible, Some(UnsubscribeMechanism::OneClick))
    );
    assert!(verified.revision > pending.revision);
    assert_ne!(verified.digest, pending.digest);
}

#[tokio::test]
async fn rows_count_conversations_and_protect_known_correspondents() {
    let census = Census::start().await;
    let letters = census.signer("letters.example");
    let club = census.signer("club.example");
    let offer = "<https://letters.example/u/1>";
    let t = now() - 7200;
    census.deliver(&letters.sign(&bulk("news@letters.example", offer, true, t), ONE_CLICK_HEADERS));
    census.deliver(&letters.sign(&bulk("news@letters.example", offer, true, t + 60), ONE_CLICK_HEADERS));
    let club_offer = "<https://club.example/u>";
    census.deliver(&club.sign(&bulk("chair@club.example", club_offer, true, t), ONE_CLICK_HEADERS));
    // The owner has written to the club's chair.
    let reply = MessageBuilder::new()
        .from("owner@example.org")
        .to("chair@club.example")
        .subject("Re: meeting")
        .text_body("See you there.")
        .write_to_vec()
        .expect("built");
    census.fake.deliver_raw("owner", &reply, &["SENT"], None);
    census.update().await;

    let news = census.row("news@letters.example").await;
    assert_eq!(news.conversations, 2);
    assert_eq!(news.last_arrival_at.as_second(), t + 60);
    assert!(!news.protected);
    let chair = census.row("chair@club.example").await;
    assert_eq!(chair.conversations, 1);
    assert!(chair.protected, "a known correspondent is protected");

    // A newer newsletter is the new evidence; the count follows without moving the revision.
    let revision = news.revision;
    census.deliver(&letters.sign(&bulk("news@letters.example", offer, true, t + 120), ONE_CLICK_HEADERS));
    census.update().await;
    let news = census.row("news@letters.example").await;
    assert_eq!(news.conversations, 3);
    assert_ne!(news.digest, census.row("chair@club.example").await.digest);
    // A new evidence message changes the digest, which moves the revision.
    assert!(news.revision > revision);
}

#[tokio::test]
async fn an_unsubscribed_sender_still_mailing_ten_days_later_is_still_sending() {
    let fake = FakeGmail::start().await;
    fake.mailbox("owner", "owner@example.org");
    let dns = DnsServer::start().await;
    let db = TestDatabase::new().await;
    let clock = Arc::new(testkit::ShiftedClock::default());
    let store = db.store_as("async-worker").await.with_clock(clock.clone());
    crate::refresh::ensure_accounts(&store, &["personal"]).await;
    let refresher = Refresher {
        store,
        gmail: crate::refresh::gmail(&fake),
        backfill: jiff::SignedDuration::from_hours(24 * 30),
        classifier: Arc::new(email::classify::Classifier::Offline),
        census: Some(Arc::new(Dkim::with_server(dns.address))),
        junk: email::junk::JunkSettings::off(),
    };
    let census = Census {
        fake,
        dns,
        db,
        refresher,
    };
    let letters = census.signer("letters.example");
    let offer = "<https://letters.example/u/1>";
    census.deliver(&letters.sign(
        &bulk("news@letters.example", offer, true, now() - 60),
        ONE_CLICK_HEADERS,
    ));
    census.update().await;
    let row = census.row("news@letters.example").await;
    let worker = census.db.store_as("worker").await.with_clock(clock.clone());
    assert!(worker.email().mark_unsubscribed(row.id).await.expect("settled"));

    // Nine days on, one more newsletter: the sender may still be processing the request.
    clock.advance(jiff::SignedDuration::from_hours(24 * 9));
    let sent = (jiff::Timestamp::now() + jiff::SignedDuration::from_hours(24 * 9)).as_second();
    census.deliver(&letters.sign(&bulk("news@letters.example", offer, true, sent), ONE_CLICK_HEADERS));
    census.update().await;
    assert_eq!(
        census.row("news@letters.example").await.state,
        SubscriptionState::Unsubscribed
    );

    // Ten days on, another: still sending. Nothing was sent on the owner's behalf.
    clock.advance(jiff::SignedDuration::from_hours(24));
    let sent = (jiff::Timestamp::now() + jiff::SignedDuration::from_hours(24 * 10)).as_second();
    census.deliver(&letters.sign(&bulk("news@letters.example", offer, true, sent), ONE_CLICK_HEADERS));
    census.update().await;
    let still = census.row("news@letters.example").await;
    assert_eq!(still.state, SubscriptionState::StillSending);
    assert!(
        census
            .fake
            .calls()
            .iter()
            .all(|(_, scope, _)| scope == testkit::gmail::READONLY),
        "the census reads only"
    );
}

#[tokio::test]
async fn turning_the_feature_off_and_on_keeps_every_decision() {
    let mut census = Census::start().await;
    let letters = census.signer("letters.example");
    let club = census.signer("club.example");
    let t = now() - 7200;
    census.deliver(&letters.sign(
        &bulk("news@letters.example", "<https://letters.example/u>", true, t),
        ONE_CLICK_HEADERS,
    ));
    census.deliver(&club.sign(
        &bulk("chair@club.example", "<https://club.example/u>", true, t),
        ONE_CLICK_HEADERS,
    ));
    census.update().await;
    // The owner keeps one sender and unsubscribes from the other.
    let api = census.db.store_as("api").await;
    let news = census.row("news@letters.example").await;
    let kept = api
        .email()
        .change_subscription(news.id, news.revision, store::OwnerChange::Keep)
        .await
        .expect("keep");
    assert!(matches!(kept, store::SubscriptionChange::Done { .. }));
    let chair = census.row("chair@club.example").await;
    let worker = census.db.store_as("worker").await;
    assert!(worker.email().mark_unsubscribed(chair.id).await.expect("settled"));

    // Off: no census is taken; new mail changes no row.
    let dkim = census.refresher.census.take();
    census.deliver(&letters.sign(
        &bulk("news@letters.example", "<https://letters.example/u2>", true, t + 60),
        ONE_CLICK_HEADERS,
    ));
    census.deliver(&letters.sign(
        &bulk("new@letters.example", "<https://letters.example/u3>", true, t + 60),
        ONE_CLICK_HEADERS,
    ));
    census.update().await;
    let senders: Vec<String> = census.rows().await.into_iter().map(|row| row.sender).collect();
    assert_eq!(
        senders,
        ["chair@club.example", "news@letters.example"],
        "no census while off"
    );

    // On again: the new sender is counted, and neither decision is suggested away.
    census.refresher.census = dkim;
    census.update().await;
    assert_eq!(census.row("news@letters.example").await.state, SubscriptionState::Kept);
    assert_eq!(
        census.row("chair@club.example").await.state,
        SubscriptionState::Unsubscribed
    );
    assert_eq!(
        census.row("new@letters.example").await.state,
        SubscriptionState::Eligible
    );
}
