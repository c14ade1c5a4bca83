//! The mail environment rules: `AGENT_EMAIL_ENABLED` and the credential configuration are one
//! atomic setting. Either the accounts manifest (`MAIL_ACCOUNTS_FILE`) or the legacy three
//! single-account paths, never both, never part of one, and nothing while the flag is off.
//! Values are paths only; JSON or token material in a path variable is refused. A blank value
//! counts as unset (blanking is how an operator turns a path off).

/// The legacy single-account variables, in read, write, send order.
pub const LEGACY_VARIABLES: [&str; 3] = [
    "MAIL_READ_CREDENTIAL_FILE",
    "MAIL_WRITE_CREDENTIAL_FILE",
    "MAIL_SEND_CREDENTIAL_FILE",
];
pub const FLAG: &str = "AGENT_EMAIL_ENABLED";
pub const MANIFEST_VARIABLE: &str = "MAIL_ACCOUNTS_FILE";

/// A valid mail configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MailEnvironment {
    Off,
    /// The accounts manifest's path.
    Manifest(String),
    /// The legacy single-account form: read, write and send document paths.
    Legacy([String; 3]),
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MailEnvironmentError {
    #[error("AGENT_EMAIL_ENABLED must be 0 or 1, got `{0}`")]
    Flag(String),
    #[error("{0} must be an absolute path, never JSON or token material")]
    NotAPath(&'static str),
    #[error("mail paths are configured while AGENT_EMAIL_ENABLED is off")]
    PathsWhileOff,
    #[error("MAIL_ACCOUNTS_FILE and the legacy credential paths are mutually exclusive")]
    BothForms,
    #[error("partial mail enablement: AGENT_EMAIL_ENABLED=1 needs MAIL_ACCOUNTS_FILE or all three credential paths")]
    Partial,
}

impl MailEnvironment {
    /// Reads the mail variables through `get` (unset and blank are the same).
    pub fn parse(get: impl Fn(&str) -> Option<String>) -> Result<MailEnvironment, MailEnvironmentError> {
        let value = |name: &str| {
            get(name)
                .map(|value| value.trim().to_owned())
                .filter(|value| !value.is_empty())
        };
        let enabled = match value(FLAG).as_deref() {
            None | Some("0") => false,
            Some("1") => true,
            Some(other) => return Err(MailEnvironmentError::Flag(other.to_owned())),
        };
        let manifest = value(MANIFEST_VARIABLE);
        let legacy = LEGACY_VARIABLES.map(value);
        for (name, path) in LEGACY_VARIABLES
            .iter()
            .zip(&legacy)
            .chain([(&MANIFEST_VARIABLE, &manifest)])
        {
            if path.as_deref().is_some_and(|path| !path.starts_with('/')) {
                return Err(MailEnvironmentError::NotAPath(name));
            }
        }
        let legacy_count = legacy.iter().flatten().count();
        match (enabled, manifest, legacy_count) {
            (false, None, 0) => Ok(MailEnvironment::Off),
            (false, _, _) => Err(MailEnvironmentError::PathsWhileOff),
            (true, Some(_), 1..) => Err(MailEnvironmentError::BothForms),
            (true, Some(manifest), 0) => Ok(MailEnvironment::Manifest(manifest)),
            (true, None, 3) => Ok(MailEnvironment::Legacy(legacy.map(Option::unwrap_or_default))),
            (true, None, _) => Err(MailEnvironmentError::Partial),
        }
    }

    pub fn enabled(&self) -> bool {
        *self != MailEnvironment::Off
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(pairs: &[(&str, &str)]) -> Result<MailEnvironment, MailEnvironmentError> {
        MailEnvironment::parse(|name| {
            pairs
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| (*value).to_owned())
        })
    }

    #[test]
    fn accepts_off_the_manifest_form_and_the_complete_legacy_form() {
        assert_eq!(parse(&[]), Ok(MailEnvironment::Off));
        assert_eq!(
            parse(&[(FLAG, "0"), (MANIFEST_VARIABLE, " ")]),
            Ok(MailEnvironment::Off)
        );
        assert_eq!(
            parse(&[(FLAG, "1"), (MANIFEST_VARIABLE, "/etc/steward/mail/accounts.json")]),
            Ok(MailEnvironment::Manifest("/etc/steward/mail/accounts.json".into()))
        );
        let legacy = [
            (FLAG, "1"),
            (LEGACY_VARIABLES[0], "/m/mail-read.json"),
            (LEGACY_VARIABLES[1], "/m/mail-write.json"),
            (LEGACY_VARIABLES[2], "/m/mail-send.json"),
            (MANIFEST_VARIABLE, ""),
        ];
        assert_eq!(
            parse(&legacy),
            Ok(MailEnvironment::Legacy([
                "/m/mail-read.json".into(),
                "/m/mail-write.json".into(),
                "/m/mail-send.json".into()
            ]))
        );
    }

    #[test]
    fn refuses_partial_mixed_off_and_non_path_configurations() {
        assert_eq!(parse(&[(FLAG, "1")]), Err(MailEnvironmentError::Partial));
        assert_eq!(
            parse(&[
                (FLAG, "1"),
                (LEGACY_VARIABLES[0], "/m/r.json"),
                (LEGACY_VARIABLES[2], "/m/s.json")
            ]),
            Err(MailEnvironmentError::Partial)
        );
        assert_eq!(
            parse(&[
                (FLAG, "1"),
                (MANIFEST_VARIABLE, "/m/a.json"),
                (LEGACY_VARIABLES[1], "/m/w.json")
            ]),
            Err(MailEnvironmentError::BothForms)
        );
        assert_eq!(
            parse(&[(MANIFEST_VARIABLE, "/m/a.json")]),
            Err(MailEnvironmentError::PathsWhileOff)
        );
        assert_eq!(
            parse(&[(FLAG, "1"), (LEGACY_VARIABLES[0], r#"{"refresh_token": "x"}"#)]),
            Err(MailEnvironmentError::NotAPath("MAIL_READ_CREDENTIAL_FILE"))
        );
        assert_eq!(parse(&[(FLAG, "yes")]), Err(MailEnvironmentError::Flag("yes".into())));
    }
}
