//! Transient notices (a run's streamed text and reasoning) sealed for the two roles that may
//! read them. `NOTIFY` is readable by every login that can connect (any login may `LISTEN` on
//! any channel), so a notice travels only as ChaCha20-Poly1305 ciphertext under the stream key:
//! 32 random bytes made by migration 0023 in `stream_keys`, a table only the worker and the api
//! logins may read (`policies/grants.sql`). Another role's login sees lengths and timing only,
//! and can neither read a notice nor forge one; a copy it sends again is refused (each sender's
//! counter only grows, and a notice older than [`MAX_AGE`] is dropped).
//!
//! Each sender seals under its own key, derived from the stream key with HKDF-SHA256 and the
//! sender's origin (a random id per store) as salt, with a counter as nonce: no two senders
//! share a key, and no key sees a nonce twice.
//!
//! Replays: an opener refuses any counter of a sender at or below the highest it opened, so a
//! copy sent again while the API runs is refused; after an API restart, a copy is refused once
//! it is older than [`MAX_AGE`] by the API's clock. The roles run on one host (or with
//! synchronized clocks): a sender whose clock lags the API's by more than [`MAX_AGE`] would
//! have its notices dropped as stale (the persisted step still carries the whole text).
//!
//! A payload reads `v1 <origin> <counter> <ciphertext, base64url>`; the channel name is the
//! associated data, and the plaintext is `<unix milliseconds sent>\n<notice>`.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, Nonce, UnboundKey};
use ring::hkdf::{HKDF_SHA256, Salt};
use uuid::Uuid;

/// A notice older than this when it is opened is dropped (a copy sent again later, or one that
/// waited so long its run has moved on; the persisted step carries the whole text anyway).
pub const MAX_AGE: Duration = Duration::from_secs(30);

/// What the HKDF expansion is for: the key of one sender's transient notices.
const PURPOSE: &[u8] = b"steward/transient/v1";

/// The shared stream key, as read from `stream_keys`.
#[derive(Clone)]
pub struct StreamKey([u8; 32]);

impl std::fmt::Debug for StreamKey {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("StreamKey(..)")
    }
}

impl StreamKey {
    pub fn from_bytes(bytes: [u8; 32]) -> StreamKey {
        StreamKey(bytes)
    }

    /// The stream key, read with a login allowed to (the worker's or the api's), on a
    /// connection of the caller's own (the notifier's, the relay's listener), never one a busy
    /// pool would make it wait for.
    pub async fn load<'e>(connection: impl sqlx::PgExecutor<'e>) -> sqlx::Result<StreamKey> {
        let bytes: Vec<u8> = sqlx::query_scalar("SELECT key FROM stream_keys WHERE id = 1")
            .fetch_one(connection)
            .await?;
        let bytes: [u8; 32] = bytes
            .try_into()
            .map_err(|_| sqlx::Error::Decode("the stream key is not 32 bytes".into()))?;
        Ok(StreamKey(bytes))
    }

    /// The key `origin` seals under.
    fn for_sender(&self, origin: Uuid) -> LessSafeKey {
        let prk = Salt::new(HKDF_SHA256, origin.as_bytes()).extract(&self.0);
        let okm = prk
            .expand(&[PURPOSE], &CHACHA20_POLY1305)
            .expect("32 bytes are a valid HKDF-SHA256 output length");
        LessSafeKey::new(UnboundKey::from(okm))
    }
}

fn nonce(counter: u64) -> Nonce {
    let mut bytes = [0_u8; 12];
    bytes[4..].copy_from_slice(&counter.to_be_bytes());
    Nonce::assume_unique_for_key(bytes)
}

fn now_millis() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_millis())
}

/// One sender's sealing: its origin, its derived key and its counter.
pub struct Sealer {
    origin: Uuid,
    key: LessSafeKey,
    counter: u64,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Sealer")
            .field("origin", &self.origin)
            .finish_non_exhaustive()
    }
}

impl Sealer {
    pub fn new(key: &StreamKey, origin: Uuid) -> Sealer {
        Sealer {
            origin,
            key: key.for_sender(origin),
            counter: 0,
        }
    }

    /// `notice` sealed for `channel`.
    pub fn seal(&mut self, channel: &str, notice: &str) -> String {
        self.seal_sent_at(channel, notice, now_millis())
    }

    fn seal_sent_at(&mut self, channel: &str, notice: &str, sent: u128) -> String {
        self.counter += 1;
        let mut sealed = format!("{sent}\n{notice}").into_bytes();
        self.key
            .seal_in_place_append_tag(nonce(self.counter), Aad::from(channel.as_bytes()), &mut sealed)
            .expect("a notice is far below ChaCha20-Poly1305's length limit");
        format!("v1 {} {} {}", self.origin, self.counter, URL_SAFE_NO_PAD.encode(sealed))
    }
}

/// The most senders an opener remembers (each worker process is one; the oldest is forgotten
/// first, and its notices older than [`MAX_AGE`] are refused anyway).
const MAX_SENDERS: usize = 1024;

/// Opening what every sender sealed: their derived keys and the highest counter seen of each.
/// A sender is remembered only once a notice of theirs opened, so forged payloads (any login
/// can `NOTIFY`) cost a key derivation each and leave nothing behind.
pub struct Opener {
    key: StreamKey,
    senders: HashMap<Uuid, (LessSafeKey, u64)>,
    /// The senders in the order they were first opened, to forget the oldest.
    order: VecDeque<Uuid>,
}

impl std::fmt::Debug for Opener {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Opener")
            .field("senders", &self.senders.len())
            .finish()
    }
}

/// Why a payload was not opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// Not a sealed payload.
    Malformed,
    /// Not sealed under the stream key for this channel (forged or altered).
    Forged,
    /// A copy of one already opened, or of an older one of its sender.
    Replayed,
    /// Sealed longer than [`MAX_AGE`] ago.
    Stale,
}

impl Opener {
    pub fn new(key: StreamKey) -> Opener {
        Opener {
            key,
            senders: HashMap::new(),
            order: VecDeque::new(),
        }
    }

    /// The notice `payload` seals for `channel`.
    pub fn open(&mut self, channel: &str, payload: &str) -> Result<String, Refused> {
        let mut parts = payload.splitn(4, ' ');
        let (Some("v1"), Some(origin), Some(counter), Some(sealed)) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(Refused::Malformed);
        };
        let origin = Uuid::try_parse(origin).map_err(|_| Refused::Malformed)?;
        let counter: u64 = counter.parse().map_err(|_| Refused::Malformed)?;
        let mut sealed = URL_SAFE_NO_PAD.decode(sealed).map_err(|_| Refused::Malformed)?;
        if self
            .senders
            .get(&origin)
            .is_some_and(|(_, highest)| counter <= *highest)
        {
            return Err(Refused::Replayed);
        }
        let derived;
        let key = match self.senders.get(&origin) {
            Some((key, _)) => key,
            None => {
                derived = self.key.for_sender(origin);
                &derived
            }
        };
        let opened = key
            .open_in_place(nonce(counter), Aad::from(channel.as_bytes()), &mut sealed)
            .map_err(|_| Refused::Forged)?;
        let text = std::str::from_utf8(opened).map_err(|_| Refused::Forged)?;
        let (sent, notice) = text.split_once('\n').ok_or(Refused::Forged)?;
        let sent: u128 = sent.parse().map_err(|_| Refused::Forged)?;
        let notice = notice.to_owned();
        self.opened(origin, counter);
        if now_millis().saturating_sub(sent) > MAX_AGE.as_millis() {
            return Err(Refused::Stale);
        }
        Ok(notice)
    }

    /// Records that `origin`'s notice `counter` opened: only later ones will.
    fn opened(&mut self, origin: Uuid, counter: u64) {
        if let Some((_, highest)) = self.senders.get_mut(&origin) {
            *highest = counter;
            return;
        }
        if self.order.len() >= MAX_SENDERS
            && let Some(oldest) = self.order.pop_front()
        {
            self.senders.remove(&oldest);
        }
        self.senders.insert(origin, (self.key.for_sender(origin), counter));
        self.order.push_back(origin);
    }
}

/// The most bytes a notice may have so that its sealed payload stays under PostgreSQL's 8000.
pub const MAX_NOTICE_BYTES: usize = 5_600;

#[cfg(test)]
mod tests {
    use super::*;

    fn key(byte: u8) -> StreamKey {
        StreamKey::from_bytes([byte; 32])
    }

    #[test]
    fn a_sealed_notice_opens_only_under_the_stream_key_and_once() {
        let mut sealer = Sealer::new(&key(1), Uuid::new_v4());
        let payload = sealer.seal("steward_transient", r#"{"text":"The secret answer"}"#);
        assert!(!payload.contains("secret"), "{payload}");
        let mut opener = Opener::new(key(1));
        assert_eq!(
            opener.open("steward_transient", &payload).as_deref(),
            Ok(r#"{"text":"The secret answer"}"#)
        );
        assert_eq!(opener.open("steward_transient", &payload), Err(Refused::Replayed));
        assert_eq!(
            Opener::new(key(2)).open("steward_transient", &payload),
            Err(Refused::Forged),
            "another key"
        );
        assert_eq!(
            Opener::new(key(1)).open("steward_events", &payload),
            Err(Refused::Forged),
            "another channel"
        );
    }

    #[test]
    fn forged_altered_and_plain_payloads_are_refused() {
        let mut opener = Opener::new(key(1));
        assert_eq!(
            opener.open("steward_transient", r#"{"session_id":"x","kind":"assistant.delta"}"#),
            Err(Refused::Malformed)
        );
        let mut sealer = Sealer::new(&key(1), Uuid::new_v4());
        let payload = sealer.seal("steward_transient", "notice");
        let mut altered = payload.clone().into_bytes();
        let last = altered.len() - 2;
        altered[last] = if altered[last] == b'A' { b'B' } else { b'A' };
        let altered = String::from_utf8(altered).expect("ascii");
        assert_eq!(opener.open("steward_transient", &altered), Err(Refused::Forged));
        // A forged counter does not reuse the sealed one.
        let bumped = payload.replacen(" 1 ", " 9 ", 1);
        assert_eq!(opener.open("steward_transient", &bumped), Err(Refused::Forged));
        assert_eq!(opener.open("steward_transient", &payload).as_deref(), Ok("notice"));
    }

    #[test]
    fn senders_have_keys_of_their_own_and_counters_only_grow() {
        let (first, second) = (Uuid::new_v4(), Uuid::new_v4());
        let mut a = Sealer::new(&key(1), first);
        let mut b = Sealer::new(&key(1), second);
        let a1 = a.seal("c", "a1");
        let b1 = b.seal("c", "b1");
        // Same counter, same plaintext length, different ciphertext: different keys.
        assert_ne!(a1.rsplit(' ').next(), b1.rsplit(' ').next());
        let a2 = a.seal("c", "a2");
        let mut opener = Opener::new(key(1));
        assert_eq!(opener.open("c", &a2).as_deref(), Ok("a2"));
        assert_eq!(opener.open("c", &a1), Err(Refused::Replayed), "older than one opened");
        assert_eq!(opener.open("c", &b1).as_deref(), Ok("b1"));
    }

    #[test]
    fn forged_payloads_leave_nothing_behind_and_senders_are_bounded() {
        let mut opener = Opener::new(key(1));
        for _ in 0..100 {
            let forged = format!("v1 {} 1 AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", Uuid::new_v4());
            assert_eq!(opener.open("c", &forged), Err(Refused::Forged));
        }
        assert!(opener.senders.is_empty() && opener.order.is_empty());
        for _ in 0..MAX_SENDERS + 10 {
            let mut sealer = Sealer::new(&key(1), Uuid::new_v4());
            assert!(opener.open("c", &sealer.seal("c", "n")).is_ok());
        }
        assert_eq!(opener.senders.len(), MAX_SENDERS);
        assert_eq!(opener.order.len(), MAX_SENDERS);
    }

    #[test]
    fn an_old_notice_is_dropped() {
        let mut sealer = Sealer::new(&key(1), Uuid::new_v4());
        let old = sealer.seal_sent_at("c", "late", now_millis() - MAX_AGE.as_millis() - 1_000);
        assert_eq!(Opener::new(key(1)).open("c", &old), Err(Refused::Stale));
    }

    #[test]
    fn the_largest_notice_stays_under_the_notify_limit() {
        let mut sealer = Sealer::new(&key(1), Uuid::new_v4());
        let payload = sealer.seal("steward_transient", &"x".repeat(MAX_NOTICE_BYTES));
        assert!(payload.len() < 8000, "{}", payload.len());
    }
}
