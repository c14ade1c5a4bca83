//! The one way a role reads its configuration: each binary's `Config::from_env(lookup)` wraps
//! the lookup (the process environment in production, a map in tests) in an [`Env`] and reads
//! every variable through it, so blank-means-unset, required values, numbers, switches and the
//! log level are parsed alike everywhere and fail with the same typed [`EnvError`].

use std::fmt::Display;
use std::str::FromStr;

/// Why a variable was refused; it names the variable and never repeats a secret's value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnvError {
    #[error("{0} is required")]
    Missing(&'static str),
    #[error("{variable} is invalid: {reason}")]
    Invalid { variable: &'static str, reason: String },
    /// The feature flags (`AGENT_*_ENABLED` and the junk filter's mode).
    #[error("{0}")]
    Flags(#[from] crate::flags::FlagError),
}

/// A refusal of `variable`'s value.
pub fn invalid(variable: &'static str, reason: impl Into<String>) -> EnvError {
    EnvError::Invalid {
        variable,
        reason: reason.into(),
    }
}

/// How much a role logs (`LOG_LEVEL`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogLevel {
    Error,
    Warn,
    Info,
    Debug,
    Trace,
}

/// A role's configuration: parsed from its environment, every refusal a typed error. (Every
/// role's `LOG_LEVEL` is read once for all, by `role::main`.)
pub trait FromEnv: Sized {
    type Error: Display;

    /// Parses and checks everything the role needs from the variables `lookup` gives.
    fn from_env(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, Self::Error>;
}

/// A role's environment, read through a lookup.
#[derive(Clone, Copy)]
pub struct Env<'a> {
    lookup: &'a dyn Fn(&str) -> Option<String>,
}

impl<'a> Env<'a> {
    pub fn new(lookup: &'a dyn Fn(&str) -> Option<String>) -> Env<'a> {
        Env { lookup }
    }

    /// The feature flags.
    pub fn flags(&self) -> Result<crate::flags::FeatureFlags, EnvError> {
        Ok(crate::flags::FeatureFlags::from_env(self.lookup())?)
    }

    /// The feature flags of a role whose whole work is behind `flag`: with it off the role
    /// refuses to start, saying `consequence`.
    pub fn requiring(
        &self,
        flag: crate::flags::Flag,
        consequence: &'static str,
    ) -> Result<crate::flags::FeatureFlags, EnvError> {
        let flags = self.flags()?;
        if !flags.is_on(flag) {
            return Err(crate::flags::FlagError::Off {
                variable: flag.variable(),
                consequence,
            }
            .into());
        }
        Ok(flags)
    }

    /// The lookup itself, for the parsers that take one (feature flags, mail accounts).
    pub fn lookup(&self) -> &'a dyn Fn(&str) -> Option<String> {
        self.lookup
    }

    /// A variable's value; a blank one counts as unset.
    pub fn get(&self, name: &str) -> Option<String> {
        (self.lookup)(name).filter(|value| !value.is_empty())
    }

    pub fn required(&self, name: &'static str) -> Result<String, EnvError> {
        self.get(name).ok_or(EnvError::Missing(name))
    }

    /// A positive integer (unset means `default`).
    pub fn positive(&self, name: &'static str, default: u32) -> Result<u32, EnvError> {
        match self.get(name) {
            None => Ok(default),
            Some(text) => match text.trim().parse::<u32>() {
                Ok(value) if value > 0 => Ok(value),
                _ => Err(invalid(name, format!("`{text}` is not a positive integer"))),
            },
        }
    }

    /// A value of any type that parses from text (unset means `default`).
    pub fn parsed<T: FromStr>(&self, name: &'static str, default: T) -> Result<T, EnvError>
    where
        T::Err: Display,
    {
        match self.get(name) {
            None => Ok(default),
            Some(text) => text
                .trim()
                .parse()
                .map_err(|error: T::Err| invalid(name, error.to_string())),
        }
    }

    /// A switch: `1` is on, `0` or unset is off, anything else is refused.
    pub fn switch(&self, name: &'static str) -> Result<bool, EnvError> {
        match self.get(name).as_deref() {
            None | Some("0") => Ok(false),
            Some("1") => Ok(true),
            Some(other) => Err(invalid(name, format!("must be 0 or 1, got `{other}`"))),
        }
    }

    /// `LOG_LEVEL` (unset means `info`).
    pub fn log_level(&self) -> Result<LogLevel, EnvError> {
        match self.get("LOG_LEVEL").as_deref() {
            None | Some("info") => Ok(LogLevel::Info),
            Some("error") => Ok(LogLevel::Error),
            Some("warn") => Ok(LogLevel::Warn),
            Some("debug") => Ok(LogLevel::Debug),
            Some("trace") => Ok(LogLevel::Trace),
            Some(other) => Err(invalid(
                "LOG_LEVEL",
                format!("`{other}` is not one of error, warn, info, debug, trace"),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn with<T>(pairs: &[(&str, &str)], read: impl FnOnce(Env) -> T) -> T {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
            .collect();
        let lookup = move |name: &str| map.get(name).cloned();
        read(Env::new(&lookup))
    }

    #[test]
    fn blank_is_unset_and_required_names_the_variable() {
        with(&[("A_B", ""), ("C_D", "x")], |env| {
            assert_eq!(env.get("A_B"), None);
            assert_eq!(env.required("A_B"), Err(EnvError::Missing("A_B")));
            assert_eq!(env.required("C_D").as_deref(), Ok("x"));
            assert_eq!(env.required("A_B").expect_err("missing").to_string(), "A_B is required");
        });
    }

    #[test]
    fn numbers_switches_and_levels_are_checked() {
        with(
            &[
                ("N_ZERO", "0"),
                ("N_FIVE", " 5 "),
                ("S_ON", "1"),
                ("S_BAD", "yes"),
                ("LOG_LEVEL", "debug"),
            ],
            |env| {
                assert_eq!(env.positive("N_FIVE", 3), Ok(5));
                assert_eq!(env.positive("N_UNSET", 3), Ok(3));
                assert!(matches!(
                    env.positive("N_ZERO", 3),
                    Err(EnvError::Invalid { variable: "N_ZERO", .. })
                ));
                assert_eq!(env.parsed::<u64>("N_ZERO", 9), Ok(0));
                assert!(env.parsed::<u64>("S_BAD", 9).is_err());
                assert_eq!(env.switch("S_ON"), Ok(true));
                assert_eq!(env.switch("S_UNSET"), Ok(false));
                assert_eq!(
                    env.switch("S_BAD").expect_err("refused").to_string(),
                    "S_BAD is invalid: must be 0 or 1, got `yes`"
                );
                assert_eq!(env.log_level(), Ok(LogLevel::Debug));
            },
        );
        with(&[("LOG_LEVEL", "verbose")], |env| assert!(env.log_level().is_err()));
        with(&[], |env| assert_eq!(env.log_level(), Ok(LogLevel::Info)));
    }
}
