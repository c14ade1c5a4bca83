//! The client SDK's event stream: SSE framing (`eventsource-stream`) and the replay cursor over
//! it, fed what a hostile or broken server could send, split at arbitrary points.

use std::convert::Infallible;

use bytes::Bytes;
use client::{Replay, Update};
use eventsource_stream::Eventsource;
use futures_util::{FutureExt, StreamExt, stream};
use proptest::prelude::*;

use crate::{bounded, inputs, property, serial};

const RUN: &str = "0b5e7a52-51b5-4c1f-8f3e-6d1c2a3b4c5d";

fn corpus() -> Vec<Vec<u8>> {
    let created = format!(
        r#"{{"seq":1,"run_id":"{RUN}","created_at":"2026-11-26T10:00:00Z","kind":"user.message.created","payload":{{"run_id":"{RUN}","message":{{"text":"hello","attachments":[]}}}}}}"#
    );
    let delta = format!(r#"{{"kind":"assistant.delta","run_id":"{RUN}","text":"Hel"}}"#);
    let completed = format!(
        r#"{{"seq":2,"run_id":"{RUN}","created_at":"2026-11-26T10:00:01Z","kind":"run.completed","payload":{{"run_id":"{RUN}","state":"completed","usage":{{"steps":1,"model_calls":1,"tool_calls":0,"input_tokens":10,"output_tokens":5,"cost":"0.000100"}}}}}}"#
    );
    vec![
        format!("retry: 2000\n\nid: 1\nevent: user.message.created\ndata: {created}\n\nevent: assistant.delta\ndata: {delta}\n\n: heartbeat\n\nid: 2\nevent: run.completed\ndata: {completed}\n\n").into_bytes(),
        format!("id: 1\r\nevent: user.message.created\r\ndata: {created}\r\n\r\nid: 2\r\nevent: run.completed\r\ndata: {completed}\r\n\r\n").into_bytes(),
    ]
}

/// What a `Replay` makes of `body` delivered in pieces cut at `cuts`: each update with the
/// cursor before it and after it.
fn replay(body: &[u8], cuts: &[prop::sample::Index]) -> (Replay, Vec<(i64, Update, i64)>) {
    let mut points: Vec<usize> = cuts.iter().map(|cut| cut.index(body.len() + 1)).collect();
    points.push(0);
    points.push(body.len());
    points.sort_unstable();
    let chunks: Vec<Result<Bytes, Infallible>> = points
        .windows(2)
        .map(|pair| Ok(Bytes::copy_from_slice(&body[pair[0]..pair[1]])))
        .collect();
    let events = stream::iter(chunks)
        .eventsource()
        .collect::<Vec<_>>()
        .now_or_never()
        .expect("an in-memory stream is always ready");
    let mut replay = Replay::new(0, None);
    let mut updates = Vec::new();
    for event in events.into_iter().flatten() {
        if replay.done() {
            break;
        }
        let before = replay.cursor();
        let update = replay.update(&event.id, &event.event, &event.data);
        // Only a persisted event moves the cursor, and only forward (one not understood too).
        assert!(replay.cursor() >= before);
        if let Some(update) = update {
            updates.push((before, update, replay.cursor()));
        }
    }
    (replay, updates)
}

#[test]
fn the_corpus_is_a_real_stream() {
    let _serial = serial();
    for body in corpus() {
        let (replay, updates) = replay(&body, &[]);
        assert!(replay.done());
        assert_eq!(replay.cursor(), 2);
        let persisted = updates
            .iter()
            .filter(|(_, update, _)| matches!(update, Update::Event(_)))
            .count();
        assert_eq!(persisted, 2, "{updates:?}");
    }
}

#[test]
fn arbitrary_streams_never_move_the_cursor_back_or_repeat_an_event() {
    let cuts = prop::collection::vec(any::<prop::sample::Index>(), 0..32);
    property(file!(), (inputs(corpus()), cuts), |(body, cuts)| {
        let (replay, updates) = bounded(body.len(), || replay(&body, &cuts));
        let mut handed_on = 0;
        for (before, update, after) in &updates {
            match update {
                Update::Event(frame) => {
                    prop_assert!(after > before, "a persisted event did not advance the cursor");
                    prop_assert!(*after > handed_on, "event {} handed on twice", after);
                    handed_on = *after;
                    if frame.event.ends_run() {
                        prop_assert!(replay.done());
                    }
                }
                Update::Delta { .. } | Update::Reasoning { .. } => prop_assert_eq!(before, after),
            }
        }
        prop_assert!(replay.cursor() >= handed_on);
        Ok(())
    });
}
