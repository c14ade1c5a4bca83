//! Feature flags, parsed once at startup into one typed value. All default off.
//!
//! A route or tool whose flag is off does not exist: the API does not mount it and the agent's
//! tool roster does not contain it.

use serde::{Deserialize, Serialize};

/// One on/off feature flag and the environment variable that sets it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Flag {
    Email,
    EmailMode,
    EmailUnsubscribe,
    Call,
    CallIngress,
    CallNotifications,
    NotificationApi,
    NotificationDispatch,
    MemoryApi,
    /// The hosted browser: Website Access (profiles and sign-in ceremonies) and `browser.act`.
    Browser,
}

impl Flag {
    pub const ALL: [Flag; 10] = [
        Flag::Email,
        Flag::EmailMode,
        Flag::EmailUnsubscribe,
        Flag::Call,
        Flag::CallIngress,
        Flag::CallNotifications,
        Flag::NotificationApi,
        Flag::NotificationDispatch,
        Flag::MemoryApi,
        Flag::Browser,
    ];

    pub const fn variable(self) -> &'static str {
        match self {
            Flag::Email => "AGENT_EMAIL_ENABLED",
            Flag::EmailMode => "AGENT_EMAIL_MODE_ENABLED",
            Flag::EmailUnsubscribe => "AGENT_EMAIL_UNSUBSCRIBE_ENABLED",
            Flag::Call => "AGENT_CALL_ENABLED",
            Flag::CallIngress => "AGENT_CALL_INGRESS_ENABLED",
            Flag::CallNotifications => "AGENT_CALL_NOTIFICATIONS_ENABLED",
            Flag::NotificationApi => "AGENT_NOTIFICATION_API_ENABLED",
            Flag::NotificationDispatch => "AGENT_NOTIFICATION_DISPATCH_ENABLED",
            Flag::MemoryApi => "AGENT_MEMORY_API_ENABLED",
            Flag::Browser => "AGENT_BROWSER_ENABLED",
        }
    }

    /// Whether the flag changes what the agent can do (its tool roster), and therefore its version.
    pub const fn shapes_agent(self) -> bool {
        matches!(
            self,
            Flag::Email | Flag::EmailMode | Flag::EmailUnsubscribe | Flag::Call | Flag::MemoryApi | Flag::Browser
        )
    }
}

/// `AGENT_EMAIL_JUNK_FILTER_MODE`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum JunkFilterMode {
    #[default]
    Off,
    Shadow,
    Filter,
    Pilot,
}

impl JunkFilterMode {
    pub const VARIABLE: &'static str = "AGENT_EMAIL_JUNK_FILTER_MODE";

    pub const fn as_str(self) -> &'static str {
        match self {
            JunkFilterMode::Off => "off",
            JunkFilterMode::Shadow => "shadow",
            JunkFilterMode::Filter => "filter",
            JunkFilterMode::Pilot => "pilot",
        }
    }
}

#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum FlagError {
    #[error("{variable} must be 0 or 1, got `{value}`")]
    NotBoolean { variable: &'static str, value: String },
    #[error("AGENT_EMAIL_JUNK_FILTER_MODE must be one of off, shadow, filter, pilot, got `{0}`")]
    JunkFilterMode(String),
    #[error("AGENT_NOTIFICATION_API_ENABLED and AGENT_NOTIFICATION_DISPATCH_ENABLED must hold the same value")]
    NotificationFlagsDiffer,
    /// A role whose whole work is behind a flag refuses to start with it off.
    #[error("{variable} is not 1: {consequence}")]
    Off {
        variable: &'static str,
        consequence: &'static str,
    },
    #[error("{flag} requires {requires}=1")]
    Requires { flag: &'static str, requires: &'static str },
    #[error("{variable} is set to `{value}`: this release does not support {part}")]
    Unsupported {
        variable: &'static str,
        value: String,
        part: &'static str,
    },
}

/// The flags whose part is not built in this release, with what they would turn on. A role whose
/// environment turns one on refuses to start rather than accept a flag that does nothing; each
/// part's issue removes its entry when the part lands.
pub const UNSUPPORTED: [(&str, &str); 0] = [];

/// The first flag of [`UNSUPPORTED`] that `lookup` turns on: any value but unset, empty or `0`,
/// so a misspelt value is refused too.
pub fn unsupported(lookup: impl Fn(&str) -> Option<String>) -> Option<FlagError> {
    refused_by(&UNSUPPORTED, lookup)
}

/// The first flag of `list` that `lookup` turns on (see [`unsupported`]).
fn refused_by(list: &[(&'static str, &'static str)], lookup: impl Fn(&str) -> Option<String>) -> Option<FlagError> {
    list.iter().copied().find_map(|(variable, part)| {
        let value = lookup(variable)?;
        let off = value.is_empty() || value == "0";
        (!off).then_some(FlagError::Unsupported { variable, value, part })
    })
}

/// Every feature flag, parsed and cross-checked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FeatureFlags {
    enabled: [bool; Flag::ALL.len()],
    junk_filter_mode: JunkFilterMode,
}

impl FeatureFlags {
    /// Parses the flags from an environment lookup. Unset means off; any value other than `0` or
    /// `1` (including an empty one) is refused, as are combinations the contract forbids and
    /// flags this release does not support ([`unsupported`]).
    pub fn from_env(lookup: impl Fn(&str) -> Option<String>) -> Result<FeatureFlags, FlagError> {
        if let Some(error) = unsupported(&lookup) {
            return Err(error);
        }
        let mut flags = FeatureFlags::default();
        for (index, flag) in Flag::ALL.into_iter().enumerate() {
            flags.enabled[index] = match lookup(flag.variable()).as_deref() {
                None | Some("0") => false,
                Some("1") => true,
                Some(other) => {
                    return Err(FlagError::NotBoolean {
                        variable: flag.variable(),
                        value: other.to_owned(),
                    });
                }
            };
        }
        flags.junk_filter_mode = match lookup(JunkFilterMode::VARIABLE).as_deref() {
            None | Some("off") => JunkFilterMode::Off,
            Some("shadow") => JunkFilterMode::Shadow,
            Some("filter") => JunkFilterMode::Filter,
            Some("pilot") => JunkFilterMode::Pilot,
            Some(other) => return Err(FlagError::JunkFilterMode(other.to_owned())),
        };
        flags.check()?;
        Ok(flags)
    }

    /// A flag set with exactly the given flags on, checked like the environment form.
    pub fn with(enabled: &[Flag]) -> Result<FeatureFlags, FlagError> {
        let mut flags = FeatureFlags::default();
        for flag in enabled {
            flags.enabled[Self::index(*flag)] = true;
        }
        flags.check()?;
        Ok(flags)
    }

    fn index(flag: Flag) -> usize {
        Flag::ALL
            .iter()
            .position(|candidate| *candidate == flag)
            .unwrap_or_default()
    }

    fn check(&self) -> Result<(), FlagError> {
        if self.is_on(Flag::NotificationApi) != self.is_on(Flag::NotificationDispatch) {
            return Err(FlagError::NotificationFlagsDiffer);
        }
        let requirements = [
            (Flag::EmailUnsubscribe, Flag::Email),
            (Flag::EmailUnsubscribe, Flag::EmailMode),
            (Flag::CallIngress, Flag::Call),
            (Flag::CallNotifications, Flag::Call),
            (Flag::CallNotifications, Flag::NotificationApi),
        ];
        if self.junk_filter_mode != JunkFilterMode::Off && !self.is_on(Flag::EmailMode) {
            return Err(FlagError::Requires {
                flag: JunkFilterMode::VARIABLE,
                requires: Flag::EmailMode.variable(),
            });
        }
        for (flag, requires) in requirements {
            if self.is_on(flag) && !self.is_on(requires) {
                return Err(FlagError::Requires {
                    flag: flag.variable(),
                    requires: requires.variable(),
                });
            }
        }
        Ok(())
    }

    pub fn is_on(&self, flag: Flag) -> bool {
        self.enabled[Self::index(flag)]
    }

    pub fn junk_filter_mode(&self) -> JunkFilterMode {
        self.junk_filter_mode
    }

    /// The flags that are on, in a stable order.
    pub fn enabled(&self) -> impl Iterator<Item = Flag> + '_ {
        Flag::ALL.into_iter().filter(|flag| self.is_on(*flag))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn parse(pairs: &[(&str, &str)]) -> Result<FeatureFlags, FlagError> {
        let env: HashMap<String, String> = pairs
            .iter()
            .map(|(key, value)| (key.to_string(), value.to_string()))
            .collect();
        FeatureFlags::from_env(|name| env.get(name).cloned())
    }

    #[test]
    fn everything_defaults_off() {
        let flags = parse(&[]).expect("empty environment is valid");
        assert_eq!(flags.enabled().count(), 0);
        assert_eq!(flags.junk_filter_mode(), JunkFilterMode::Off);
    }

    #[test]
    fn only_zero_and_one_are_accepted() {
        assert!(
            parse(&[("AGENT_EMAIL_ENABLED", "1")])
                .expect("valid")
                .is_on(Flag::Email)
        );
        assert!(
            !parse(&[("AGENT_EMAIL_ENABLED", "0")])
                .expect("valid")
                .is_on(Flag::Email)
        );
        for bad in ["true", "yes", "", " 1", "2"] {
            assert_eq!(
                parse(&[("AGENT_EMAIL_ENABLED", bad)]),
                Err(FlagError::NotBoolean {
                    variable: "AGENT_EMAIL_ENABLED",
                    value: bad.into()
                })
            );
        }
    }

    #[test]
    fn every_flag_of_this_release_is_accepted() {
        for flag in Flag::ALL {
            assert!(
                unsupported(|name| (name == flag.variable()).then(|| "1".to_owned())).is_none(),
                "{} is refused",
                flag.variable()
            );
        }
        assert!(parse(&[("AGENT_MEMORY_API_ENABLED", "1")]).is_ok_and(|flags| flags.is_on(Flag::MemoryApi)));
    }

    #[test]
    fn a_flag_whose_part_is_not_built_is_refused_when_on_and_accepted_when_off() {
        // This release refuses none; a part still being built lists its flag in `UNSUPPORTED`.
        let list = [("AGENT_FUTURE_PART_ENABLED", "the future part")];
        let with =
            |value: &'static str| move |name: &str| (name == "AGENT_FUTURE_PART_ENABLED").then(|| value.to_owned());
        let error = refused_by(&list, with("1")).expect("refused when on");
        assert_eq!(
            error.to_string(),
            "AGENT_FUTURE_PART_ENABLED is set to `1`: this release does not support the future part"
        );
        assert!(
            matches!(refused_by(&list, with("yes")), Some(FlagError::Unsupported { value, .. }) if value == "yes"),
            "a misspelt value is refused as unsupported"
        );
        assert!(refused_by(&list, with("0")).is_none(), "0 is accepted");
        assert!(refused_by(&list, with("")).is_none(), "empty is accepted");
        assert!(refused_by(&list, |_| None).is_none(), "unset is accepted");
    }

    #[test]
    fn notification_flags_must_agree() {
        let err = parse(&[("AGENT_NOTIFICATION_API_ENABLED", "1")]).expect_err("unequal flags");
        assert_eq!(err, FlagError::NotificationFlagsDiffer);
        assert!(err.to_string().contains("AGENT_NOTIFICATION_DISPATCH_ENABLED"));
        let both = parse(&[
            ("AGENT_NOTIFICATION_API_ENABLED", "1"),
            ("AGENT_NOTIFICATION_DISPATCH_ENABLED", "1"),
        ])
        .expect("equal flags");
        assert!(both.is_on(Flag::NotificationApi) && both.is_on(Flag::NotificationDispatch));
    }

    #[test]
    fn dependent_flags_need_their_prerequisites() {
        assert_eq!(
            FeatureFlags::with(&[Flag::EmailUnsubscribe, Flag::Email]),
            Err(FlagError::Requires {
                flag: "AGENT_EMAIL_UNSUBSCRIBE_ENABLED",
                requires: "AGENT_EMAIL_MODE_ENABLED"
            })
        );
        assert!(FeatureFlags::with(&[Flag::CallIngress]).is_err());
        assert!(FeatureFlags::with(&[Flag::Call, Flag::CallIngress]).is_ok());
    }

    #[test]
    fn a_junk_filter_mode_needs_email_mode() {
        assert_eq!(
            parse(&[("AGENT_EMAIL_JUNK_FILTER_MODE", "shadow")]),
            Err(FlagError::Requires {
                flag: "AGENT_EMAIL_JUNK_FILTER_MODE",
                requires: "AGENT_EMAIL_MODE_ENABLED"
            })
        );
        let on = parse(&[
            ("AGENT_EMAIL_JUNK_FILTER_MODE", "pilot"),
            ("AGENT_EMAIL_MODE_ENABLED", "1"),
        ])
        .expect("valid");
        assert_eq!(on.junk_filter_mode(), JunkFilterMode::Pilot);
        assert!(matches!(
            parse(&[("AGENT_EMAIL_JUNK_FILTER_MODE", "strict"), ("AGENT_EMAIL_MODE_ENABLED", "1")]),
            Err(FlagError::JunkFilterMode(value)) if value == "strict"
        ));
    }

    #[test]
    fn junk_filter_mode_defaults_off() {
        assert_eq!(
            parse(&[("AGENT_EMAIL_JUNK_FILTER_MODE", "off")])
                .expect("valid")
                .junk_filter_mode(),
            JunkFilterMode::Off
        );
    }
}
