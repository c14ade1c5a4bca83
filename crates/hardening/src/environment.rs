//! Variables a role refuses to start with. Secrets arrive as file paths, never inline; the
//! call roles never hold a model key, the owner's bearer, scopes, or the browser control plane's
//! credential, and the browser role never holds a model key, the owner's bearer, scopes or the
//! call-provider key, whatever their environment file says.

/// The call-provider key must be a file (`CALLPROV_API_KEY_FILE`); inline it is refused everywhere.
pub const INLINE_CALLPROV_KEY: &str = "CALLPROV_API_KEY";
/// The call-provider key's path, which the ingress listener refuses.
pub const CALLPROV_KEY_FILE: &str = "CALLPROV_API_KEY_FILE";
/// The hosted browser's control-plane credential file.
pub const BROWSER_CONTROL_CREDENTIAL_FILE: &str = "BROWSER_CONTROL_CREDENTIAL_FILE";
/// The key that seals the hosted browser's website sessions.
pub const BROWSER_STORAGE_KEY_FILE: &str = "BROWSER_STORAGE_KEY_FILE";
/// The owner's bearer token file.
pub const OWNER_TOKEN_FILE: &str = "API_TOKEN_FILE";

/// What a role may hold, from the environment's point of view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RoleKind {
    /// api, worker, async-worker, schedule, notify, maintenance.
    Application,
    /// The call worker: reconciliation with the call provider only.
    CallWorker,
    /// The call-ingress listener: the webhook signing secret and receipts only.
    CallIngress,
    /// The hosted browser role: its control-plane credential and the browsers, nothing of the
    /// agent's (no model key, owner bearer, scopes or call-provider key).
    Browser,
    /// The browser role's egress relay: nothing at all (no model key, owner bearer, scopes,
    /// call-provider key, nor the browser's own credential or storage key).
    BrowserEgress,
}

/// Whether `name` names a model key: any `*_API_KEY`, or a variable naming a model vendor's key
/// (`OPENAI_API_KEY_FILE`, `VEETBOT_OPENAI_KEY`, `MODEL_API_KEY_FILE`, ...).
pub fn is_model_key(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    upper.ends_with("_API_KEY")
        || (upper.contains("KEY")
            && ["OPENAI", "ANTHROPIC", "GEMINI", "MISTRAL", "MODEL"]
                .iter()
                .any(|vendor| upper.contains(vendor)))
}

/// The first variable `kind` refuses, with the reason, among `variables` (name, value) pairs.
/// A variable counts as set when its value is not empty: a blanked line in an environment file
/// is the documented way to turn a setting off.
pub fn refused<'a>(
    kind: RoleKind,
    variables: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Option<(String, &'static str)> {
    let mut variables: Vec<(&str, &str)> = variables.into_iter().filter(|(_, value)| !value.is_empty()).collect();
    variables.sort();
    for (name, value) in variables {
        let reason = match kind {
            _ if name == INLINE_CALLPROV_KEY => {
                Some("an inline call-provider key is refused; put it in a file and set CALLPROV_API_KEY_FILE")
            }
            RoleKind::Application => None,
            RoleKind::CallWorker | RoleKind::CallIngress if is_model_key(name) => {
                Some("a call role never holds a model key")
            }
            RoleKind::CallWorker | RoleKind::CallIngress if name == BROWSER_CONTROL_CREDENTIAL_FILE => {
                Some("a call role never holds the browser control-plane credential")
            }
            RoleKind::CallWorker | RoleKind::CallIngress if name == BROWSER_STORAGE_KEY_FILE => {
                Some("a call role never holds the browser's storage key")
            }
            RoleKind::CallWorker | RoleKind::CallIngress if name == OWNER_TOKEN_FILE => {
                Some("a call role never holds the owner's bearer token")
            }
            RoleKind::CallWorker | RoleKind::CallIngress if name == "AUTH_SCOPES" && !value.trim().is_empty() => {
                Some("a call role has no scopes; AUTH_SCOPES must be empty")
            }
            RoleKind::CallIngress if name == CALLPROV_KEY_FILE => {
                Some("the ingress listener never holds the call-provider API key")
            }
            RoleKind::Browser if is_model_key(name) => Some("the browser role never holds a model key"),
            RoleKind::Browser if name == OWNER_TOKEN_FILE => {
                Some("the browser role never holds the owner's bearer token")
            }
            RoleKind::Browser if name == CALLPROV_KEY_FILE => {
                Some("the browser role never holds the call-provider API key")
            }
            RoleKind::Browser if name == "AUTH_SCOPES" && !value.trim().is_empty() => {
                Some("the browser role has no scopes; AUTH_SCOPES must be empty")
            }
            RoleKind::BrowserEgress
                if is_model_key(name)
                    || [
                        OWNER_TOKEN_FILE,
                        CALLPROV_KEY_FILE,
                        BROWSER_CONTROL_CREDENTIAL_FILE,
                        BROWSER_STORAGE_KEY_FILE,
                    ]
                    .contains(&name)
                    || (name == "AUTH_SCOPES" && !value.trim().is_empty()) =>
            {
                Some("the egress relay holds no secret of any role")
            }
            _ => None,
        };
        if let Some(reason) = reason {
            return Some((name.to_owned(), reason));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused_name(kind: RoleKind, variables: &[(&str, &str)]) -> Option<String> {
        refused(kind, variables.iter().copied()).map(|(name, _)| name)
    }

    #[test]
    fn model_keys_are_recognised() {
        for name in [
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "VEETBOT_OPENAI_KEY",
            "OPENAI_API_KEY_FILE",
            "MODEL_API_KEY_FILE",
            "X_API_KEY",
        ] {
            assert!(is_model_key(name), "{name}");
        }
        for name in [
            "CALLPROV_API_KEY_FILE",
            "CALLPROV_WEBHOOK_SECRET_FILE",
            "DATABASE_URL",
            "APNS_KEY_FILE",
        ] {
            assert!(!is_model_key(name), "{name}");
        }
    }

    #[test]
    fn inline_call_provider_keys_are_refused_everywhere() {
        for kind in [RoleKind::Application, RoleKind::CallWorker, RoleKind::CallIngress] {
            assert_eq!(
                refused_name(kind, &[("CALLPROV_API_KEY", "k")]).as_deref(),
                Some("CALLPROV_API_KEY")
            );
            assert_eq!(
                refused_name(kind, &[("CALLPROV_API_KEY", "")]),
                None,
                "a blank line is unset"
            );
        }
    }

    #[test]
    fn call_roles_refuse_model_keys_scopes_bearer_and_browser_credentials() {
        for kind in [RoleKind::CallWorker, RoleKind::CallIngress] {
            for variable in [
                ("OPENAI_API_KEY", "sk"),
                ("VEETBOT_OPENAI_KEY", "sk"),
                ("OPENAI_API_KEY_FILE", "/k"),
                ("BROWSER_CONTROL_CREDENTIAL_FILE", "/b"),
                ("BROWSER_STORAGE_KEY_FILE", "/s"),
                ("API_TOKEN_FILE", "/t"),
                ("AUTH_SCOPES", "call.read"),
            ] {
                assert_eq!(refused_name(kind, &[variable]).as_deref(), Some(variable.0), "{kind:?}");
            }
            assert_eq!(refused_name(kind, &[("AUTH_SCOPES", "")]), None);
        }
        assert_eq!(
            refused_name(RoleKind::Application, &[("OPENAI_API_KEY_FILE", "/k")]),
            None
        );
    }

    #[test]
    fn the_browser_role_refuses_model_keys_the_bearer_scopes_and_the_call_key() {
        for variable in [
            ("OPENAI_API_KEY", "sk"),
            ("VEETBOT_OPENAI_KEY", "sk"),
            ("OPENAI_API_KEY_FILE", "/k"),
            ("API_TOKEN_FILE", "/t"),
            ("AUTH_SCOPES", "email.read"),
            ("CALLPROV_API_KEY_FILE", "/c"),
            ("CALLPROV_API_KEY", "k"),
        ] {
            assert_eq!(
                refused_name(RoleKind::Browser, &[variable]).as_deref(),
                Some(variable.0)
            );
        }
        assert_eq!(
            refused_name(
                RoleKind::Browser,
                &[("BROWSER_CONTROL_CREDENTIAL_FILE", "/b"), ("AUTH_SCOPES", "")]
            ),
            None
        );
    }

    #[test]
    fn the_egress_relay_refuses_every_secret() {
        for variable in [
            ("OPENAI_API_KEY", "sk"),
            ("MODEL_API_KEY_FILE", "/k"),
            ("API_TOKEN_FILE", "/t"),
            ("AUTH_SCOPES", "email.read"),
            ("CALLPROV_API_KEY_FILE", "/c"),
            ("BROWSER_CONTROL_CREDENTIAL_FILE", "/b"),
            ("BROWSER_STORAGE_KEY_FILE", "/s"),
        ] {
            assert_eq!(
                refused_name(RoleKind::BrowserEgress, &[variable]).as_deref(),
                Some(variable.0)
            );
        }
        assert_eq!(
            refused_name(
                RoleKind::BrowserEgress,
                &[("BROWSER_EGRESS_SOCKET", "/run/x.sock"), ("AUTH_SCOPES", "")]
            ),
            None
        );
    }

    #[test]
    fn only_the_ingress_refuses_the_call_provider_key_file() {
        let key = [("CALLPROV_API_KEY_FILE", "/etc/steward/callprov/api-key")];
        assert_eq!(
            refused_name(RoleKind::CallIngress, &key).as_deref(),
            Some("CALLPROV_API_KEY_FILE")
        );
        assert_eq!(refused_name(RoleKind::CallWorker, &key), None);
        assert_eq!(refused_name(RoleKind::Application, &key), None);
    }
}
