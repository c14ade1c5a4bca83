//! Sign-in ceremonies: how a website session reaches a profile. A ceremony is begun over the
//! control plane for one profile and its origins and yields a **capability**, a random secret
//! the client presents once, directly to the role (never the API credential). The role keeps
//! only its SHA-256, in memory: a restart ends every ceremony in flight. Beginning a ceremony
//! for a profile cancels the profile's earlier one (`Start over`).
//!
//! - A **device** ceremony: the client signed in in its own private window and presents the
//!   capability once at the handoff address with the session; that settles it.
//! - A **remote** ceremony (with a login page on the profile's origins): the capability opens
//!   the role's sign-in page once ([`Ceremonies::activate`]), which then works with a page
//!   token of its own until the owner finishes, closes it, or [`SIGN_IN_WITHIN`] passes. The
//!   login page's address is kept in memory only.
//!
//! Either must be used within [`LIFETIME`], once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use base64::Engine as _;
use browser_policy::egress::Origin;
use serde::Serialize;
use sha2::{Digest, Sha256};

/// How long a ceremony stays open (the spec's remote ceremony: five minutes, single use; the
/// device ceremony's capability expires alike).
pub const LIFETIME: Duration = Duration::from_secs(5 * 60);
/// How long a remote sign-in may take once its page is open.
pub const SIGN_IN_WITHIN: Duration = Duration::from_secs(15 * 60);
/// How long a settled ceremony's status stays readable.
pub const KEPT: Duration = Duration::from_secs(24 * 60 * 60);

/// The source of the current time (injected, so expiry is tested exactly).
pub type Clock = Arc<dyn Fn() -> SystemTime + Send + Sync>;

/// The host's clock.
pub fn system_clock() -> Clock {
    Arc::new(SystemTime::now)
}

/// Where a ceremony stands. Secret-free: this is all a client ever reads of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// Waiting for its handoff, or for its sign-in page to be opened.
    Open,
    /// A remote ceremony's sign-in page is open.
    Active,
    /// The session was handed over and sealed into the profile.
    Completed,
    /// The handoff was refused (a cookie or storage outside the profile's origins, nothing
    /// handed over); the ceremony is over.
    Rejected,
    /// Not completed within its lifetime.
    Expired,
    /// Replaced by a new ceremony (`Start over`), cancelled, or its sign-in page closed.
    Cancelled,
}

/// How the session arrives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Handed over by the client at the handoff address.
    Device,
    /// Signed in on the role's sign-in page, starting at this login page.
    Remote { login: url::Url },
}

/// A ceremony's secret-free status.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Status {
    pub state: State,
    pub profile: String,
    /// When it expires (or expired), seconds since the Unix epoch.
    pub expires_at: u64,
}

struct Ceremony {
    id: String,
    profile: String,
    origins: Vec<Origin>,
    kind: Kind,
    digest: [u8; 32],
    expires_at: SystemTime,
    state: State,
    settled_at: Option<SystemTime>,
    /// A remote ceremony's sign-in page's token (its SHA-256) and deadline, once open.
    page: Option<([u8; 32], SystemTime)>,
    /// Its session is being checked and sealed: it can no longer be closed, only settled (or
    /// cancelled by its profile's removal, whose generation refuses the seal).
    sealing: bool,
}

/// Why a capability is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("no ceremony has this capability")]
    Unknown,
    #[error("this ceremony's capability was already used")]
    Used,
    #[error("this ceremony expired; start over")]
    Expired,
}

/// A redeemed capability: the ceremony it opened, now settling.
#[derive(Debug)]
pub struct Redeemed {
    pub id: String,
    pub profile: String,
    pub origins: Vec<Origin>,
    /// The profile's session generation when the capability was redeemed (see `Vault`).
    pub generation: u64,
}

/// A remote ceremony whose sign-in page is open.
#[derive(Debug)]
pub struct Opened {
    pub id: String,
    pub profile: String,
    pub origins: Vec<Origin>,
    pub login: url::Url,
    /// The page's token (shown once) and its deadline (seconds since the Unix epoch).
    pub token: String,
    pub deadline: u64,
}

/// An open sign-in page's ceremony.
#[derive(Debug)]
pub struct Signing {
    pub id: String,
    pub profile: String,
    pub origins: Vec<Origin>,
    /// The profile's session generation when the page's request was admitted.
    pub generation: u64,
}

fn secret() -> Option<String> {
    let mut secret = [0u8; 32];
    getrandom::fill(&mut secret).ok()?;
    Some(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(secret))
}

/// The role's ceremonies.
pub struct Ceremonies {
    clock: Clock,
    ceremonies: Mutex<HashMap<String, Ceremony>>,
}

fn digest(capability: &str) -> [u8; 32] {
    Sha256::digest(capability.as_bytes()).into()
}

fn unix_seconds(time: SystemTime) -> u64 {
    time.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
}

impl Ceremonies {
    pub fn new(clock: Clock) -> Ceremonies {
        Ceremonies {
            clock,
            ceremonies: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Ceremony>> {
        self.ceremonies
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Settles what expired and forgets what settled long ago.
    fn sweep(ceremonies: &mut HashMap<String, Ceremony>, now: SystemTime) {
        for ceremony in ceremonies.values_mut() {
            if ceremony.state == State::Open && now >= ceremony.expires_at {
                ceremony.state = State::Expired;
                ceremony.settled_at = Some(ceremony.expires_at);
            }
            if let (State::Active, Some((_, deadline)), false) = (ceremony.state, ceremony.page, ceremony.sealing) {
                if now >= deadline {
                    ceremony.state = State::Expired;
                    ceremony.settled_at = Some(deadline);
                }
            }
        }
        ceremonies.retain(|_, ceremony| ceremony.settled_at.is_none_or(|settled| now < settled + KEPT));
    }

    /// Begins ceremony `id` for `profile` and its `origins`, cancelling the profile's open one;
    /// returns the capability (shown once, never kept) and the expiry. `None` when `id` is taken.
    pub fn begin(&self, id: &str, profile: &str, origins: Vec<Origin>, kind: Kind) -> Option<(String, u64)> {
        let now = (self.clock)();
        let mut ceremonies = self.lock();
        Self::sweep(&mut ceremonies, now);
        if ceremonies.contains_key(id) {
            return None;
        }
        for ceremony in ceremonies.values_mut() {
            if ceremony.profile == profile && matches!(ceremony.state, State::Open | State::Active) && !ceremony.sealing
            {
                ceremony.state = State::Cancelled;
                ceremony.settled_at = Some(now);
            }
        }
        let capability = secret()?;
        let expires_at = now + LIFETIME;
        ceremonies.insert(
            id.to_owned(),
            Ceremony {
                id: id.to_owned(),
                profile: profile.to_owned(),
                origins,
                kind,
                digest: digest(&capability),
                expires_at,
                state: State::Open,
                settled_at: None,
                page: None,
                sealing: false,
            },
        );
        Some((capability, unix_seconds(expires_at)))
    }

    /// The status of ceremony `id`.
    pub fn status(&self, id: &str) -> Option<Status> {
        let now = (self.clock)();
        let mut ceremonies = self.lock();
        Self::sweep(&mut ceremonies, now);
        ceremonies.get(id).map(|ceremony| Status {
            state: ceremony.state,
            profile: ceremony.profile.clone(),
            expires_at: unix_seconds(ceremony.expires_at),
        })
    }

    /// Cancels ceremony `id` if it is still open; `false` when there is none.
    pub fn cancel(&self, id: &str) -> bool {
        let now = (self.clock)();
        let mut ceremonies = self.lock();
        Self::sweep(&mut ceremonies, now);
        match ceremonies.get_mut(id) {
            Some(ceremony) => {
                if matches!(ceremony.state, State::Open | State::Active) {
                    ceremony.state = State::Cancelled;
                    ceremony.settled_at = Some(now);
                }
                true
            }
            None => false,
        }
    }

    /// Cancels every open ceremony of `profile` (the profile is being removed).
    pub fn cancel_profile(&self, profile: &str) {
        let now = (self.clock)();
        let mut ceremonies = self.lock();
        for ceremony in ceremonies.values_mut() {
            if ceremony.profile == profile && matches!(ceremony.state, State::Open | State::Active) {
                ceremony.state = State::Cancelled;
                ceremony.settled_at = Some(now);
            }
        }
    }

    /// Redeems `capability`: the ceremony it opens, which may not be redeemed again. The caller
    /// settles it with [`Ceremonies::settle`].
    ///
    /// `generation` reads the profile's session generation while the ceremony is held: a
    /// profile forgotten from then on (its ceremonies cancelled first, then its session
    /// removed) advances it, so a seal made with it is refused.
    pub fn redeem(&self, capability: &str, generation: impl Fn(&str) -> u64) -> Result<Redeemed, Refusal> {
        let now = (self.clock)();
        let mut ceremonies = self.lock();
        Self::sweep(&mut ceremonies, now);
        let ceremony = Self::by_digest(&mut ceremonies, &digest(capability), |ceremony| &ceremony.digest)
            .filter(|ceremony| ceremony.kind == Kind::Device)
            .ok_or(Refusal::Unknown)?;
        match ceremony.state {
            State::Open => {}
            State::Expired => return Err(Refusal::Expired),
            State::Active | State::Completed | State::Rejected | State::Cancelled => return Err(Refusal::Used),
        }
        // Redeemed: no second handoff, whatever becomes of this one; it stays in progress
        // (`active`) until settled.
        ceremony.state = State::Active;
        ceremony.sealing = true;
        Ok(Redeemed {
            id: ceremony.id.clone(),
            profile: ceremony.profile.clone(),
            origins: ceremony.origins.clone(),
            generation: generation(&ceremony.profile),
        })
    }

    /// The ceremony whose `field` digest equals `presented`; every one is compared, in constant
    /// time, whichever matches.
    fn by_digest<'a>(
        ceremonies: &'a mut HashMap<String, Ceremony>,
        presented: &[u8; 32],
        field: impl Fn(&Ceremony) -> &[u8; 32],
    ) -> Option<&'a mut Ceremony> {
        let mut found = None;
        for ceremony in ceremonies.values() {
            if bool::from(subtle::ConstantTimeEq::ct_eq(&field(ceremony)[..], &presented[..])) {
                found = Some(ceremony.id.clone());
            }
        }
        found.and_then(|id| ceremonies.get_mut(&id))
    }

    /// Opens a remote ceremony's sign-in page with its capability, once: the ceremony becomes
    /// active with a page token of its own and [`SIGN_IN_WITHIN`] to finish. A second opening
    /// (a reloaded page) is refused as used.
    pub fn activate(&self, capability: &str) -> Result<Opened, Refusal> {
        let now = (self.clock)();
        let mut ceremonies = self.lock();
        Self::sweep(&mut ceremonies, now);
        let ceremony = Self::by_digest(&mut ceremonies, &digest(capability), |ceremony| &ceremony.digest)
            .ok_or(Refusal::Unknown)?;
        let Kind::Remote { login } = &ceremony.kind else {
            return Err(Refusal::Unknown);
        };
        let login = login.clone();
        match ceremony.state {
            State::Open => {}
            State::Expired => return Err(Refusal::Expired),
            State::Active | State::Completed | State::Rejected | State::Cancelled => return Err(Refusal::Used),
        }
        let token = secret().ok_or(Refusal::Unknown)?;
        let deadline = now + SIGN_IN_WITHIN;
        ceremony.state = State::Active;
        ceremony.page = Some((digest(&token), deadline));
        Ok(Opened {
            id: ceremony.id.clone(),
            profile: ceremony.profile.clone(),
            origins: ceremony.origins.clone(),
            login,
            token,
            deadline: unix_seconds(deadline),
        })
    }

    /// The active ceremony whose sign-in page holds `token`, with the profile's session
    /// generation read while it is held (as for [`Ceremonies::redeem`]).
    pub fn signing(&self, token: &str, generation: impl Fn(&str) -> u64) -> Result<Signing, Refusal> {
        const NONE: [u8; 32] = [0; 32];
        let now = (self.clock)();
        let mut ceremonies = self.lock();
        Self::sweep(&mut ceremonies, now);
        let ceremony = Self::by_digest(&mut ceremonies, &digest(token), |ceremony| {
            ceremony.page.as_ref().map_or(&NONE, |(token, _)| token)
        })
        .ok_or(Refusal::Unknown)?;
        match ceremony.state {
            State::Active => Ok(Signing {
                id: ceremony.id.clone(),
                profile: ceremony.profile.clone(),
                origins: ceremony.origins.clone(),
                generation: generation(&ceremony.profile),
            }),
            State::Expired => Err(Refusal::Expired),
            State::Open | State::Completed | State::Rejected | State::Cancelled => Err(Refusal::Used),
        }
    }

    /// The ceremonies whose sign-in pages were open and are no longer (finished, expired,
    /// cancelled, replaced): their browsers are to close. Each is reported once.
    pub fn ended_pages(&self) -> Vec<String> {
        let now = (self.clock)();
        let mut ceremonies = self.lock();
        Self::sweep(&mut ceremonies, now);
        let mut ended = Vec::new();
        for ceremony in ceremonies.values_mut() {
            if ceremony.state != State::Active && ceremony.page.is_some() {
                ceremony.page = None;
                ended.push(ceremony.id.clone());
            }
        }
        ended
    }

    /// Settles a ceremony in progress: completed or rejected. One cancelled meanwhile stays
    /// cancelled.
    pub fn settle(&self, id: &str, completed: bool) {
        let now = (self.clock)();
        if let Some(ceremony) = self.lock().get_mut(id) {
            if ceremony.state == State::Active {
                ceremony.state = if completed { State::Completed } else { State::Rejected };
                ceremony.settled_at = Some(now);
                ceremony.sealing = false;
            }
        }
    }

    /// Ends an open or active ceremony in `state` (a sign-in page closed: cancelled), unless its
    /// session is being sealed; `false` then, or when it was already over.
    pub fn end(&self, id: &str, state: State) -> bool {
        let now = (self.clock)();
        match self.lock().get_mut(id) {
            Some(ceremony) if matches!(ceremony.state, State::Open | State::Active) && !ceremony.sealing => {
                ceremony.state = state;
                ceremony.settled_at = Some(now);
                true
            }
            _ => false,
        }
    }

    /// Claims an active sign-in page's ceremony for sealing its session; `false` when it is no
    /// longer active or already being sealed.
    pub fn claim(&self, id: &str) -> bool {
        match self.lock().get_mut(id) {
            Some(ceremony) if ceremony.state == State::Active && !ceremony.sealing => {
                ceremony.sealing = true;
                true
            }
            _ => false,
        }
    }

    /// Gives back a claim that sealed nothing (the website held no session yet).
    pub fn release(&self, id: &str) {
        if let Some(ceremony) = self.lock().get_mut(id) {
            ceremony.sealing = false;
        }
    }

    /// Opens an active remote ceremony again (its page's browser could not start): the same
    /// link may be opened once more within the ceremony's lifetime.
    pub fn reopen(&self, id: &str) {
        if let Some(ceremony) = self.lock().get_mut(id) {
            if ceremony.state == State::Active && !ceremony.sealing {
                ceremony.state = State::Open;
                ceremony.page = None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::*;

    /// A clock the test moves.
    fn clock() -> (Clock, Arc<AtomicU64>) {
        let seconds = Arc::new(AtomicU64::new(1_800_000_000));
        let read = Arc::clone(&seconds);
        (
            Arc::new(move || SystemTime::UNIX_EPOCH + Duration::from_secs(read.load(Ordering::SeqCst))),
            seconds,
        )
    }

    fn origins() -> Vec<Origin> {
        vec![Origin::parse("https://shop.example").expect("origin")]
    }

    #[test]
    fn a_capability_is_single_use() {
        let (clock, _) = clock();
        let ceremonies = Ceremonies::new(clock);
        let (capability, _) = ceremonies.begin("c1", "p1", origins(), Kind::Device).expect("begun");
        assert_eq!(ceremonies.redeem("not-it", |_| 0).map(|r| r.id), Err(Refusal::Unknown));
        let redeemed = ceremonies.redeem(&capability, |_| 0).expect("redeemed");
        assert_eq!((redeemed.id.as_str(), redeemed.profile.as_str()), ("c1", "p1"));
        assert_eq!(ceremonies.redeem(&capability, |_| 0).map(|r| r.id), Err(Refusal::Used));
        ceremonies.settle("c1", true);
        assert_eq!(
            ceremonies.status("c1").map(|status| status.state),
            Some(State::Completed)
        );
        assert_eq!(ceremonies.redeem(&capability, |_| 0).map(|r| r.id), Err(Refusal::Used));
        assert!(
            ceremonies.begin("c1", "p1", origins(), Kind::Device).is_none(),
            "an id is used once"
        );
    }

    #[test]
    fn a_ceremony_expires_at_five_minutes() {
        let (clock, seconds) = clock();
        let ceremonies = Ceremonies::new(clock);
        let (capability, expires_at) = ceremonies.begin("c1", "p1", origins(), Kind::Device).expect("begun");
        assert_eq!(expires_at, 1_800_000_000 + 300);
        seconds.fetch_add(299, Ordering::SeqCst);
        assert_eq!(ceremonies.status("c1").map(|status| status.state), Some(State::Open));
        seconds.fetch_add(1, Ordering::SeqCst);
        assert_eq!(ceremonies.status("c1").map(|status| status.state), Some(State::Expired));
        assert_eq!(
            ceremonies.redeem(&capability, |_| 0).map(|r| r.id),
            Err(Refusal::Expired)
        );
        // Its status stays readable for a day, then it is forgotten.
        seconds.fetch_add(24 * 3600, Ordering::SeqCst);
        assert_eq!(ceremonies.status("c1"), None);
    }

    #[test]
    fn starting_over_cancels_the_profiles_open_ceremony() {
        let (clock, _) = clock();
        let ceremonies = Ceremonies::new(clock);
        let (first, _) = ceremonies.begin("c1", "p1", origins(), Kind::Device).expect("begun");
        let (second, _) = ceremonies
            .begin("c2", "p1", origins(), Kind::Device)
            .expect("begun again");
        assert_ne!(first, second);
        assert_eq!(
            ceremonies.status("c1").map(|status| status.state),
            Some(State::Cancelled)
        );
        assert_eq!(ceremonies.redeem(&first, |_| 0).map(|r| r.id), Err(Refusal::Used));
        assert_eq!(ceremonies.redeem(&second, |_| 0).map(|r| r.id).as_deref(), Ok("c2"));
        let (_, _) = ceremonies
            .begin("c3", "p2", origins(), Kind::Device)
            .expect("another profile");
        assert!(ceremonies.cancel("c3"));
        assert!(!ceremonies.cancel("c9"));
        assert_eq!(
            ceremonies.status("c3").map(|status| status.state),
            Some(State::Cancelled)
        );
    }

    fn remote() -> Kind {
        Kind::Remote {
            login: url::Url::parse("https://shop.example/signin").expect("a url"),
        }
    }

    #[test]
    fn a_remote_ceremony_opens_once_and_its_page_has_fifteen_minutes() {
        let (clock, seconds) = clock();
        let ceremonies = Ceremonies::new(clock);
        let (capability, _) = ceremonies.begin("c1", "p1", origins(), remote()).expect("begun");
        // Not a device ceremony's handoff.
        assert_eq!(
            ceremonies.redeem(&capability, |_| 0).map(|r| r.id),
            Err(Refusal::Unknown)
        );
        let opened = ceremonies.activate(&capability).expect("opened");
        assert_eq!(opened.login.as_str(), "https://shop.example/signin");
        assert_eq!(opened.deadline, 1_800_000_000 + 15 * 60);
        assert_eq!(ceremonies.status("c1").map(|status| status.state), Some(State::Active));
        // A reloaded page cannot open it again; the capability is not the page's token.
        assert_eq!(ceremonies.activate(&capability).map(|o| o.id), Err(Refusal::Used));
        assert_eq!(
            ceremonies.signing(&capability, |_| 0).map(|s| s.id),
            Err(Refusal::Unknown)
        );
        assert_eq!(
            ceremonies.signing(&opened.token, |_| 0).map(|s| s.id).as_deref(),
            Ok("c1")
        );
        assert!(ceremonies.ended_pages().is_empty());
        seconds.fetch_add(15 * 60, Ordering::SeqCst);
        assert_eq!(
            ceremonies.signing(&opened.token, |_| 0).map(|s| s.id),
            Err(Refusal::Expired)
        );
        assert_eq!(ceremonies.ended_pages(), ["c1"]);
        assert!(ceremonies.ended_pages().is_empty(), "reported once");
        // A device ceremony's capability opens no page.
        let (device, _) = ceremonies.begin("c2", "p2", origins(), Kind::Device).expect("begun");
        assert_eq!(ceremonies.activate(&device).map(|o| o.id), Err(Refusal::Unknown));
    }

    #[test]
    fn a_handoff_in_progress_is_active_and_a_cancelled_one_stays_cancelled() {
        let (clock, _) = clock();
        let ceremonies = Ceremonies::new(clock);
        let (capability, _) = ceremonies.begin("c1", "p1", origins(), Kind::Device).expect("begun");
        ceremonies.redeem(&capability, |_| 0).expect("redeemed");
        assert_eq!(ceremonies.status("c1").map(|status| status.state), Some(State::Active));
        assert!(
            !ceremonies.end("c1", State::Cancelled),
            "a session being sealed is not closed"
        );
        ceremonies.cancel_profile("p1");
        ceremonies.settle("c1", true);
        assert_eq!(
            ceremonies.status("c1").map(|status| status.state),
            Some(State::Cancelled)
        );
    }

    #[test]
    fn a_sign_in_page_whose_browser_did_not_start_can_be_opened_again() {
        let (clock, _) = clock();
        let ceremonies = Ceremonies::new(clock);
        let (capability, _) = ceremonies.begin("c1", "p1", origins(), remote()).expect("begun");
        let first = ceremonies.activate(&capability).expect("opened");
        ceremonies.reopen("c1");
        assert_eq!(ceremonies.status("c1").map(|status| status.state), Some(State::Open));
        assert_eq!(
            ceremonies.signing(&first.token, |_| 0).map(|s| s.id),
            Err(Refusal::Unknown)
        );
        let again = ceremonies.activate(&capability).expect("opened again");
        assert!(ceremonies.claim("c1"));
        assert!(!ceremonies.claim("c1"), "claimed once");
        assert!(!ceremonies.end("c1", State::Cancelled), "not closed while sealing");
        ceremonies.release("c1");
        assert!(ceremonies.end("c1", State::Cancelled));
        assert_eq!(
            ceremonies.signing(&again.token, |_| 0).map(|s| s.id),
            Err(Refusal::Used)
        );
    }
}
