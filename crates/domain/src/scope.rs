//! Authorization scopes granted to the bearer token through `AUTH_SCOPES`.

use std::collections::BTreeSet;
use std::fmt;

/// Every scope the service knows. Unknown names in `AUTH_SCOPES` are refused at startup, so a typo
/// can never silently grant (or withhold) authority.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    /// Read sessions, the session index, folders and artifacts.
    SessionsRead,
    /// Create and delete sessions, organise folders, upload artifacts.
    SessionsWrite,
    /// Read schedules and their occurrences.
    SchedulesRead,
    /// Create and cancel schedules.
    SchedulesWrite,
    /// Read pending notifications.
    NotificationsRead,
    /// Register and revoke devices, acknowledge notifications.
    NotificationsWrite,
    MemoryRead,
    MemoryWrite,
    EmailRead,
    EmailWrite,
    CallRead,
    CallCancel,
    CallDelete,
    SettingsRead,
    SettingsWrite,
    PeopleRead,
    PeopleWrite,
    /// Read Website Access: browser profiles and sign-in ceremonies' status.
    BrowserRead,
    /// Add, sign in again and remove browser profiles.
    BrowserWrite,
}

impl Scope {
    pub const ALL: [Scope; 19] = [
        Scope::SessionsRead,
        Scope::SessionsWrite,
        Scope::SchedulesRead,
        Scope::SchedulesWrite,
        Scope::NotificationsRead,
        Scope::NotificationsWrite,
        Scope::MemoryRead,
        Scope::MemoryWrite,
        Scope::EmailRead,
        Scope::EmailWrite,
        Scope::CallRead,
        Scope::CallCancel,
        Scope::CallDelete,
        Scope::SettingsRead,
        Scope::SettingsWrite,
        Scope::PeopleRead,
        Scope::PeopleWrite,
        Scope::BrowserRead,
        Scope::BrowserWrite,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            Scope::SessionsRead => "sessions.read",
            Scope::SessionsWrite => "sessions.write",
            Scope::SchedulesRead => "schedules.read",
            Scope::SchedulesWrite => "schedules.write",
            Scope::NotificationsRead => "notifications.read",
            Scope::NotificationsWrite => "notifications.write",
            Scope::MemoryRead => "memory.read",
            Scope::MemoryWrite => "memory.write",
            Scope::EmailRead => "email.read",
            Scope::EmailWrite => "email.write",
            Scope::CallRead => "call.read",
            Scope::CallCancel => "call.cancel",
            Scope::CallDelete => "call.delete",
            Scope::SettingsRead => "settings.read",
            Scope::SettingsWrite => "settings.write",
            Scope::PeopleRead => "people.read",
            Scope::PeopleWrite => "people.write",
            Scope::BrowserRead => "browser.read",
            Scope::BrowserWrite => "browser.write",
        }
    }

    pub fn parse(name: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|scope| scope.as_str() == name)
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ScopeError {
    #[error("AUTH_SCOPES names unknown scope `{0}`")]
    Unknown(String),
}

/// The set of scopes granted to the bearer token.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScopeSet(BTreeSet<Scope>);

impl ScopeSet {
    /// Parses a comma-separated list; blanks around names and empty items are ignored, so an empty
    /// variable grants nothing.
    pub fn parse(list: &str) -> Result<ScopeSet, ScopeError> {
        list.split(',')
            .map(str::trim)
            .filter(|name| !name.is_empty())
            .map(|name| Scope::parse(name).ok_or_else(|| ScopeError::Unknown(name.to_owned())))
            .collect::<Result<_, _>>()
            .map(ScopeSet)
    }

    pub fn contains(&self, scope: Scope) -> bool {
        self.0.contains(&scope)
    }

    pub fn iter(&self) -> impl Iterator<Item = Scope> + '_ {
        self.0.iter().copied()
    }

    pub fn without(&self, scope: Scope) -> ScopeSet {
        let mut set = self.0.clone();
        set.remove(&scope);
        ScopeSet(set)
    }

    /// Comma-separated form, the same syntax `AUTH_SCOPES` takes.
    pub fn to_list(&self) -> String {
        self.iter().map(Scope::as_str).collect::<Vec<_>>().join(",")
    }
}

impl FromIterator<Scope> for ScopeSet {
    fn from_iter<T: IntoIterator<Item = Scope>>(iter: T) -> Self {
        ScopeSet(iter.into_iter().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_scope_round_trips_through_its_name() {
        for scope in Scope::ALL {
            assert_eq!(Scope::parse(scope.as_str()), Some(scope));
        }
    }

    #[test]
    fn parses_lists_and_refuses_unknown_names() {
        let set = ScopeSet::parse(" sessions.read, email.read ,,").expect("valid list");
        assert!(set.contains(Scope::SessionsRead));
        assert!(set.contains(Scope::EmailRead));
        assert!(!set.contains(Scope::SessionsWrite));
        assert_eq!(set.to_list(), "sessions.read,email.read");
        assert_eq!(ScopeSet::parse(""), Ok(ScopeSet::default()));
        assert_eq!(
            ScopeSet::parse("sessions.read,email.admin"),
            Err(ScopeError::Unknown("email.admin".into()))
        );
    }
}
