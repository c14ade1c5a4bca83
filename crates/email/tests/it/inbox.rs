//! The projections as the api login reads them: the priority inbox's order, keyset pages,
//! account and search filters, Other mail, and a thread's text and attachment metadata.

use domain::email::{InboxView, ReplyNeed};
use store::InboxQuery;
use testkit::gmail::FakeGmail;

use crate::refresh::{account, recorded};

fn subjects(rows: &[store::ThreadSummary]) -> Vec<&str> {
    rows.iter().map(|row| row.subject.as_str()).collect()
}

#[tokio::test]
async fn the_inbox_orders_by_reply_need_then_date_and_pages_by_keyset() {
    let fake = FakeGmail::start().await;
    fake.mailbox("owner", "owner@example.org");
    // The owner has written to Ada and Bob: both are known.
    for person in ["ada@example.com", "bob@example.com"] {
        let sent = mail_builder::MessageBuilder::new()
            .from("owner@example.org")
            .to(person)
            .subject(format!("Hello {person}"))
            .text_body("Hi.")
            .write_to_vec()
            .expect("built");
        fake.deliver_raw("owner", &sent, &["SENT"], None);
    }
    // One message a minute, oldest first.
    let start = jiff::Timestamp::now().as_second() - 3600;
    let letter = |minute: i64, from: &'static str, subject: &'static str, body: &'static str| {
        mail_builder::MessageBuilder::new()
            .from(from)
            .to("owner@example.org")
            .subject(subject)
            .date(start + 60 * minute)
            .text_body(body)
    };
    for (minute, from, subject, body) in [
        (1, "ada@example.com", "Question one", "Can you call me?"),
        (2, "bob@example.com", "Note one", "The report is attached."),
        (3, "ada@example.com", "Question two", "Is Friday fine?"),
        (4, "bob@example.com", "Note two", "Thanks for lunch."),
        (5, "carol@example.net", "Stranger", "Who are you?"),
    ] {
        let raw = letter(minute, from, subject, body).write_to_vec().expect("built");
        fake.deliver_raw("owner", &raw, &["INBOX"], None);
    }
    let with_attachment = letter(6, "ada@example.com", "Slides", "Here they are.")
        .attachment("application/pdf", "slides.pdf", vec![0_u8; 2048])
        .write_to_vec()
        .expect("built");
    let slides = fake.deliver_raw("owner", &with_attachment, &["INBOX"], None);
    let (db, refresher) = recorded(&fake, 24).await;
    refresher.update(&account(&fake, "owner")).await.expect("refresh");

    let api = db.store_as("api").await;
    let query = |view, limit| InboxQuery {
        view,
        account_id: None,
        search: None,
        after: None,
        limit,
    };
    let important = api.email().inbox(&query(InboxView::Important, 5)).await.expect("inbox");
    // Questions first (needs a reply), newest first; then for your attention, newest first.
    assert_eq!(
        subjects(&important),
        ["Question two", "Question one", "Slides", "Note two", "Note one"],
        "{important:?}"
    );
    assert_eq!(important[0].reply_need, Some(ReplyNeed::NeedsReply));
    assert_eq!(important[2].reply_need, Some(ReplyNeed::ForYourAttention));
    assert!(important[2].has_attachments);

    // Page by page, one row each, the same order and nothing twice.
    let mut paged = Vec::new();
    let mut after = None;
    loop {
        let page = api
            .email()
            .inbox(&InboxQuery {
                after,
                ..query(InboxView::Important, 2)
            })
            .await
            .expect("page");
        if page.is_empty() {
            break;
        }
        after = page.last().map(store::ThreadSummary::position);
        paged.extend(page);
    }
    assert_eq!(subjects(&paged), subjects(&important));

    let other = api.email().inbox(&query(InboxView::Other, 50)).await.expect("other");
    let mut other_subjects = subjects(&other);
    other_subjects.sort_unstable();
    assert_eq!(
        other_subjects,
        ["Hello ada@example.com", "Hello bob@example.com", "Stranger"]
    );

    let search = |text: &'static str, view| InboxQuery {
        search: Some(text),
        ..query(view, 50)
    };
    // In the text, case-insensitive; a wildcard is taken literally.
    assert_eq!(
        subjects(
            &api.email()
                .inbox(&search("FRIDAY", InboxView::Important))
                .await
                .expect("search")
        ),
        ["Question two"]
    );
    assert!(
        api.email()
            .inbox(&search("%", InboxView::Important))
            .await
            .expect("search")
            .is_empty()
    );
    assert_eq!(
        subjects(
            &api.email()
                .inbox(&search("carol@", InboxView::Other))
                .await
                .expect("search")
        ),
        ["Stranger"]
    );
    let elsewhere = InboxQuery {
        account_id: Some(&"work".into()),
        ..query(InboxView::Important, 50)
    };
    assert!(api.email().inbox(&elsewhere).await.expect("filter").is_empty());

    // The reading pane: text and attachment metadata, never the bytes.
    let (summary, messages) = api
        .email()
        .thread(important[2].id)
        .await
        .expect("thread")
        .expect("exists");
    assert_eq!(summary.subject, "Slides");
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0].provider_message_id, slides);
    assert!(messages[0].body.contains("Here they are."));
    assert_eq!(
        serde_json::to_value(&messages[0].attachments).expect("json"),
        serde_json::json!([{ "filename": "slides.pdf", "media_type": "application/pdf", "size_bytes": 2048 }])
    );
    assert!(
        api.email()
            .thread(uuid::Uuid::now_v7().into())
            .await
            .expect("thread")
            .is_none()
    );

    // A stored shape the projection never writes is corruption, never an empty list.
    sqlx::query("UPDATE email_messages SET recipients = '{\"to\": 1}' WHERE provider_message_id = $1")
        .bind(&slides)
        .execute(&db.pool)
        .await
        .expect("corrupt");
    let read = api.email().thread(important[2].id).await;
    assert!(
        matches!(&read, Err(store::StoreError::Corrupt(what)) if what.contains("email_messages.recipients")),
        "{read:?}"
    );
}
