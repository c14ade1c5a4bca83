//! Versioned drafts as the api login keeps them (issue 18's first part): a draft on an account or
//! in a thread; saves only from the newest revision, so of two concurrent saves one wins and the
//! other gets the winner's version; the full history; a restore as a new revision.

use domain::email::{DraftAuthor, EmailOperationState};
use serde_json::json;
use store::{DraftContent, DraftPlace, NewEmailMessage, SaveDraft, Store};
use testkit::TestDatabase;

fn content(body: &str) -> DraftContent {
    DraftContent {
        to: vec!["ada@example.com".into()],
        cc: Vec::new(),
        subject: "Re: Lunch".into(),
        body: body.into(),
    }
}

/// A database with the account `personal` and one thread in it; the api's store and the thread.
async fn mailbox() -> (TestDatabase, Store, domain::ids::ThreadId) {
    let db = TestDatabase::new().await;
    let worker = db.store_as("async-worker").await;
    crate::refresh::ensure_accounts(&worker, &["personal"]).await;
    worker
        .email()
        .record_message(
            &"personal".into(),
            &NewEmailMessage {
                provider_message_id: "m1",
                provider_thread_id: "t1",
                sender: Some(&wire::email::Correspondent {
                    name: None,
                    address: "ada@example.com".into(),
                }),
                recipients: &[],
                copied: &[],
                sent_at: jiff::Timestamp::now(),
                subject: "Lunch",
                body: "Are you free on Friday?",
                text_cut: false,
                attachments: &[],
                bulk: json!({}),
                labels: &["INBOX".to_owned()],
            },
        )
        .await
        .expect("message");
    let thread = worker
        .email()
        .waiting_threads(&"personal".into(), 10)
        .await
        .expect("threads")
        .first()
        .expect("one thread")
        .thread;
    let api = db.store_as("api").await;
    (db, api, thread)
}

/// A new draft at `place` (which must exist) with `content` as revision 1.
pub async fn new_draft(
    api: &Store,
    place: DraftPlace<'_>,
    content: &store::DraftContent,
    author: DraftAuthor,
) -> store::DraftRow {
    api.email()
        .create_draft(place, content, author)
        .await
        .expect("create")
        .expect("the place exists")
}

/// The next queued proposal, claimed by `async-1`.
pub async fn claim_proposal(store: &Store) -> store::ClaimedProposal {
    let claimed = store
        .email()
        .claim_proposal("async-1", std::time::Duration::from_secs(60))
        .await;
    claimed.expect("claim").expect("one queued")
}

/// A draft in `thread` whose first revision, by `author`, says `body`.
pub async fn reply_draft(
    api: &Store,
    thread: domain::ids::ThreadId,
    body: &str,
    author: DraftAuthor,
) -> store::DraftRow {
    new_draft(api, DraftPlace::Thread(thread), &content(body), author).await
}

fn saved(outcome: SaveDraft) -> store::DraftRow {
    match outcome {
        SaveDraft::Saved(row) => row,
        other => panic!("not saved: {other:?}"),
    }
}

#[tokio::test]
async fn a_draft_is_made_in_a_thread_or_on_an_account_and_saved_from_its_newest_revision_only() {
    let (_db, api, thread) = mailbox().await;
    let reply = reply_draft(&api, thread, "Yes, Friday works.", DraftAuthor::Agent).await;
    assert_eq!((reply.account_id.as_str(), reply.thread), ("personal", Some(thread)));
    assert_eq!(reply.newest.revision, 1);
    assert_eq!(reply.newest.author, DraftAuthor::Agent);
    let fresh = new_draft(
        &api,
        DraftPlace::Account(&"personal".into()),
        &content("Hello"),
        DraftAuthor::Owner,
    )
    .await;
    assert_eq!(fresh.thread, None);
    for nowhere in [
        DraftPlace::Account(&"nobody".into()),
        DraftPlace::Thread(uuid::Uuid::new_v4().into()),
    ] {
        assert_eq!(
            api.email()
                .create_draft(nowhere, &content("x"), DraftAuthor::Owner)
                .await
                .expect("create"),
            None
        );
    }

    let second = saved(
        api.email()
            .save_draft(reply.id, 1, &content("Yes, Friday at one works."), DraftAuthor::Owner)
            .await
            .expect("save"),
    );
    assert_eq!((second.newest.revision, second.newest.author.as_str()), (2, "owner"));
    // A save from revision 1 again is a conflict: nothing saved, the newest returned.
    match api
        .email()
        .save_draft(reply.id, 1, &content("Stale edit"), DraftAuthor::Owner)
        .await
        .expect("save")
    {
        SaveDraft::Conflict(newest) => assert_eq!(newest.newest, second.newest),
        other => panic!("expected a conflict: {other:?}"),
    }
    assert_eq!(
        api.email()
            .save_draft(uuid::Uuid::new_v4().into(), 1, &content("x"), DraftAuthor::Owner)
            .await
            .expect("save"),
        SaveDraft::NotFound
    );
    let read = api.email().draft(reply.id).await.expect("read").expect("draft");
    assert_eq!(read.newest.content.body, "Yes, Friday at one works.");
}

#[tokio::test]
async fn of_two_concurrent_saves_one_wins_and_the_other_gets_the_winners_version() {
    let (_db, api, thread) = mailbox().await;
    let draft = reply_draft(&api, thread, "First", DraftAuthor::Owner).await;
    for round in 0..5 {
        let expected = draft_revision(&api, draft.id).await;
        let (left_content, right_content) = (content(&format!("left {round}")), content(&format!("right {round}")));
        let (left, right) = tokio::join!(
            api.email()
                .save_draft(draft.id, expected, &left_content, DraftAuthor::Owner),
            api.email()
                .save_draft(draft.id, expected, &right_content, DraftAuthor::Owner),
        );
        let outcomes = [left.expect("save"), right.expect("save")];
        let winners: Vec<&store::DraftRow> = outcomes
            .iter()
            .filter_map(|outcome| match outcome {
                SaveDraft::Saved(row) => Some(row),
                _ => None,
            })
            .collect();
        assert_eq!(winners.len(), 1, "{outcomes:?}");
        let loser = outcomes
            .iter()
            .find_map(|outcome| match outcome {
                SaveDraft::Conflict(newest) => Some(newest),
                _ => None,
            })
            .expect("one conflict");
        assert_eq!(loser.newest, winners[0].newest, "the loser gets the winner's version");
        assert_eq!(winners[0].newest.revision, expected + 1);
    }
    assert_eq!(api.email().draft_history(draft.id).await.expect("history").len(), 6);
}

async fn draft_revision(api: &Store, id: domain::ids::DraftId) -> i32 {
    api.email()
        .draft(id)
        .await
        .expect("read")
        .expect("draft")
        .newest
        .revision
}

#[tokio::test]
async fn the_history_is_kept_whole_and_an_earlier_revision_is_restored_as_a_new_one() {
    let (_db, api, thread) = mailbox().await;
    let draft = reply_draft(&api, thread, "One", DraftAuthor::Agent).await;
    saved(
        api.email()
            .save_draft(draft.id, 1, &content("Two"), DraftAuthor::Owner)
            .await
            .expect("save"),
    );
    saved(
        api.email()
            .save_draft(draft.id, 2, &content("Three"), DraftAuthor::Owner)
            .await
            .expect("save"),
    );
    let restored = saved(api.email().restore_draft(draft.id, 1, 3).await.expect("restore"));
    assert_eq!(restored.newest.revision, 4);
    assert_eq!(restored.newest.content.body, "One");
    assert_eq!(restored.newest.restored_from, Some(1));
    assert_eq!(restored.newest.author, DraftAuthor::Owner);

    let history = api.email().draft_history(draft.id).await.expect("history");
    let bodies: Vec<(i32, &str, Option<i32>)> = history
        .iter()
        .map(|revision| {
            (
                revision.revision,
                revision.content.body.as_str(),
                revision.restored_from,
            )
        })
        .collect();
    assert_eq!(
        bodies,
        [
            (1, "One", None),
            (2, "Two", None),
            (3, "Three", None),
            (4, "One", Some(1))
        ]
    );

    // A stale restore is a conflict; a revision the draft does not have is refused.
    assert!(matches!(
        api.email().restore_draft(draft.id, 2, 3).await.expect("restore"),
        SaveDraft::Conflict(newest) if newest.newest.revision == 4
    ));
    assert_eq!(
        api.email().restore_draft(draft.id, 9, 4).await.expect("restore"),
        SaveDraft::UnknownRevision
    );
    assert_eq!(api.email().draft_history(draft.id).await.expect("history").len(), 4);
}

/// The agent's proposal, end to end through the store: the owner asks (api login), the async
/// worker claims and writes it from the projected conversation (offline, closing with the
/// owner's endorsed wording) and it lands as an `agent` revision; a proposal asked before the
/// owner saved again never lands over their words.
#[tokio::test]
async fn a_proposed_reply_lands_as_the_agents_revision_unless_the_owner_saved_since() {
    use email::propose::Proposed;
    let fake = crate::refresh::lunch_invitation().await;
    let (db, refresher) = crate::refresh::recorded(&fake, 24).await;
    refresher
        .update(&crate::refresh::account(&fake, "owner"))
        .await
        .expect("refresh");
    let api = db.store_as("api").await;
    let thread = crate::refresh::only_thread(&db).await;

    // The owner kept wording from an earlier reply as their style.
    let earlier = reply_draft(&api, thread, "Lovely.\nWarm wishes, Sam", DraftAuthor::Owner).await;
    api.email()
        .endorse_style(earlier.id, 1, "Warm wishes, Sam")
        .await
        .expect("endorsed");

    // Asked on the conversation's draft (the newest one, not sent).
    let store::RequestProposal::Queued(queued) = api.email().request_proposal(thread).await.expect("asked") else {
        panic!("not queued")
    };
    let (operation, draft) = *queued;
    assert_eq!(
        (operation.kind.as_str(), operation.draft),
        ("propose_reply", Some(draft.id))
    );
    // Asking again while it waits answers the same proposal.
    let store::RequestProposal::Queued(again) = api.email().request_proposal(thread).await.expect("asked") else {
        panic!("not queued")
    };
    assert_eq!(again.0.id, operation.id);
    let claimed = claim_proposal(&refresher.store).await;
    assert_eq!(
        refresher.propose(&claimed).await.expect("proposed"),
        Proposed::Landed(2)
    );
    let landed = api.email().draft(draft.id).await.expect("read").expect("draft");
    assert_eq!(landed.newest.author, DraftAuthor::Agent);
    assert_eq!(
        landed.newest.content.body,
        "Hi ada,\n\nThank you for your message. I will look into your question and get back to you soon.\n\nWarm wishes, Sam"
    );
    assert_eq!(
        landed.newest.content.to,
        content("").to,
        "recipients and subject as they were"
    );
    assert_eq!(
        api.email()
            .operation(operation.id)
            .await
            .expect("read")
            .expect("op")
            .state,
        EmailOperationState::Succeeded
    );

    // Asked at revision 2, but the owner saves revision 3 before the worker writes it.
    let store::RequestProposal::Queued(second) = api.email().request_proposal(thread).await.expect("asked") else {
        panic!("not queued")
    };
    let second = second.0;
    saved(
        api.email()
            .save_draft(draft.id, 2, &content("My own words."), DraftAuthor::Owner)
            .await
            .expect("save"),
    );
    let claimed = claim_proposal(&refresher.store).await;
    assert_eq!(claimed.operation.id, second.id);
    assert_eq!(
        refresher.propose(&claimed).await.expect("proposed"),
        Proposed::Failed("email.draft_changed")
    );
    let kept = api.email().draft(draft.id).await.expect("read").expect("draft");
    assert_eq!(
        (kept.newest.revision, kept.newest.content.body.as_str()),
        (3, "My own words.")
    );
    let failed = api.email().operation(second.id).await.expect("read").expect("op");
    assert_eq!(
        (failed.state.as_str(), failed.error.as_deref()),
        ("failed", Some("email.draft_changed"))
    );
}
