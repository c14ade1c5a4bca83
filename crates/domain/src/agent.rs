//! The agent registry: which agents exist and what version each one is.
//!
//! An agent's version is a digest of its whole configuration (instructions, model settings and
//! the feature set its tool roster is composed from), so a restart with different instructions,
//! model settings or agent-shaping flags yields a new version, while sessions keep the version
//! they were created with.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::run::Cost;
use sha2::{Digest, Sha256};

use crate::flags::{FeatureFlags, Flag};
use crate::manifest::AccountIds;

/// An agent's routing id: lowercase ASCII letters, digits, `-` and `_`, 1 to 64 characters,
/// starting with a letter or digit.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct AgentId(String);

impl AgentId {
    pub fn parse(text: &str) -> Option<AgentId> {
        let valid_start = text
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
        let valid_chars = text
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
        (valid_start && valid_chars && text.len() <= 64).then(|| AgentId(text.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de> Deserialize<'de> for AgentId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        AgentId::parse(&text).ok_or_else(|| serde::de::Error::custom(format!("invalid agent id `{text}`")))
    }
}

/// The digest naming one exact agent configuration.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct AgentVersion(String);

impl AgentVersion {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Wraps a version read back from storage.
    pub fn from_stored(text: String) -> AgentVersion {
        AgentVersion(text)
    }
}

/// Model settings of an agent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSettings {
    /// The model provider (`scripted` is the offline provider used by the dev stack).
    pub provider: String,
    pub model: String,
    #[serde(default)]
    pub reasoning_effort: Option<String>,
    /// Price of a million input tokens, a decimal (default 0): what `max_cost` is measured in.
    #[serde(default)]
    pub input_cost_per_mtok: Option<String>,
    /// Price of a million output tokens, a decimal (default 0).
    #[serde(default)]
    pub output_cost_per_mtok: Option<String>,
}

/// One agent as the operator defines it.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentDefinition {
    pub id: AgentId,
    pub instructions: String,
    pub model: ModelSettings,
    /// An operator-chosen URL the `webhook.post` tool may post to; the tool exists only when set.
    #[serde(default)]
    pub webhook_url: Option<String>,
    /// How long a run may wait for the owner (an approval or a question), 1 to 2592000 seconds;
    /// unset, [`crate::run::DEFAULT_WAIT_TIMEOUT_SECONDS`] (a day).
    #[serde(default)]
    pub wait_timeout_seconds: Option<u32>,
}

impl AgentDefinition {
    /// The agent every installation has unless the operator defines its own: `default`, answering
    /// with the offline `scripted` model provider.
    pub fn builtin_default() -> AgentDefinition {
        AgentDefinition {
            id: AgentId("default".to_owned()),
            instructions: "You are Steward, the owner's personal agent. Be brief and accurate. \
                           Ask before any action that changes something outside this conversation."
                .to_owned(),
            model: ModelSettings {
                provider: "scripted".to_owned(),
                model: "scripted-1".to_owned(),
                reasoning_effort: None,
                input_cost_per_mtok: None,
                output_cost_per_mtok: None,
            },
            webhook_url: None,
            wait_timeout_seconds: None,
        }
    }
}

/// The whole configuration an agent version identifies; stored with the version so that a pinned
/// session can always be run with exactly what it was created with.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentConfiguration {
    pub id: AgentId,
    pub instructions: String,
    pub model: ModelSettings,
    /// The enabled flags that shape the agent's tool roster.
    pub features: Vec<Flag>,
    /// The tools the agent may call, by name.
    pub tools: Vec<String>,
    pub webhook_url: Option<String>,
    /// Left out when unset, so versions made before it existed keep their identity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_timeout_seconds: Option<u32>,
}

impl AgentConfiguration {
    /// How long this agent's runs may wait for the owner.
    pub fn wait_timeout_seconds(&self) -> u32 {
        self.wait_timeout_seconds
            .unwrap_or(crate::run::DEFAULT_WAIT_TIMEOUT_SECONDS)
    }
}

/// The tools every agent has.
pub const CORE_TOOLS: [&str; 6] = [
    "notes.list",
    "notes.add",
    "owner.ask",
    "schedule.create",
    "folders.list",
    "folders.propose",
];

/// The Chat tools of unsubscribe assistance (`AGENT_EMAIL_UNSUBSCRIBE_ENABLED=1`).
pub const SUBSCRIPTION_TOOLS: [&str; 2] = ["subscriptions.list", "subscriptions.unsubscribe"];

/// The Chat tools of calling (`AGENT_CALL_ENABLED=1`).
pub const CALL_TOOLS: [&str; 2] = ["calls.list", "calls.place"];

/// The Chat tool of the hosted browser (`AGENT_BROWSER_ENABLED=1`).
pub const BROWSER_TOOLS: [&str; 1] = ["browser.act"];

/// The roster for a definition under `features`: the core tools, then those the definition and
/// the features add: with mail on, every connected account's mail tools (`mail_tools::tools`);
/// with unsubscribe assistance, its two Chat tools; with calling, its two; with the hosted
/// browser, `browser.act`.
pub fn tool_roster(definition: &AgentDefinition, features: &[Flag], mail: Option<&AccountIds>) -> Vec<String> {
    let mut tools: Vec<String> = CORE_TOOLS.iter().map(|name| (*name).to_owned()).collect();
    if definition.webhook_url.is_some() {
        tools.push("webhook.post".to_owned());
    }
    if let Some(accounts) = mail.filter(|_| features.contains(&Flag::Email)) {
        tools.extend(crate::mail_tools::tools(accounts).into_iter().map(|tool| tool.name));
    }
    if features.contains(&Flag::EmailUnsubscribe) {
        tools.extend(SUBSCRIPTION_TOOLS.iter().map(|name| (*name).to_owned()));
    }
    if features.contains(&Flag::Call) {
        tools.extend(CALL_TOOLS.iter().map(|name| (*name).to_owned()));
    }
    if features.contains(&Flag::Browser) {
        tools.extend(BROWSER_TOOLS.iter().map(|name| (*name).to_owned()));
    }
    tools
}

impl AgentConfiguration {
    pub fn version(&self) -> AgentVersion {
        // Serialising a struct of strings and enums cannot fail.
        let canonical = serde_json::to_vec(self).expect("agent configuration serialises");
        let digest = Sha256::digest(&canonical);
        AgentVersion(digest[..16].iter().map(|byte| format!("{byte:02x}")).collect())
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AgentError {
    #[error("agent `{0}` is defined twice")]
    Duplicate(String),
    #[error("no agents are defined")]
    Empty,
    #[error("agent `{0}` has empty instructions")]
    EmptyInstructions(String),
    #[error("agent `{agent}`: {field} is not a decimal price: `{value}`")]
    Price {
        agent: String,
        field: &'static str,
        value: String,
    },
    #[error("agent `{0}`: webhook_url must be an http:// or https:// URL")]
    WebhookUrl(String),
    #[error("agent `{0}`: wait_timeout_seconds must be 1 to 2592000 (30 days)")]
    WaitTimeout(String),
}

/// A configured agent and its current version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Agent {
    pub configuration: AgentConfiguration,
    pub version: AgentVersion,
}

/// The agents this deployment serves, each at its current version.
#[derive(Clone, Debug)]
pub struct AgentRegistry {
    agents: BTreeMap<AgentId, Agent>,
}

impl AgentRegistry {
    /// The agents of `definitions` under `flags`; `mail` names the connected accounts when the
    /// mail flag is on (their tools join every roster, so the version changes with them).
    pub fn compose(
        definitions: Vec<AgentDefinition>,
        flags: &FeatureFlags,
        mail: Option<&AccountIds>,
    ) -> Result<Self, AgentError> {
        if definitions.is_empty() {
            return Err(AgentError::Empty);
        }
        let features: Vec<Flag> = flags.enabled().filter(|flag| flag.shapes_agent()).collect();
        let mut agents = BTreeMap::new();
        for definition in definitions {
            if definition.instructions.trim().is_empty() {
                return Err(AgentError::EmptyInstructions(definition.id.0));
            }
            for (field, value) in [
                ("input_cost_per_mtok", &definition.model.input_cost_per_mtok),
                ("output_cost_per_mtok", &definition.model.output_cost_per_mtok),
            ] {
                if let Some(value) = value
                    && Cost::parse(value).is_err()
                {
                    return Err(AgentError::Price {
                        agent: definition.id.0.clone(),
                        field,
                        value: value.clone(),
                    });
                }
            }
            if let Some(url) = &definition.webhook_url
                && !(url.starts_with("http://") || url.starts_with("https://"))
            {
                return Err(AgentError::WebhookUrl(definition.id.0.clone()));
            }
            if definition
                .wait_timeout_seconds
                .is_some_and(|seconds| !(1..=crate::run::MAX_WAIT_TIMEOUT_SECONDS).contains(&seconds))
            {
                return Err(AgentError::WaitTimeout(definition.id.0.clone()));
            }
            let tools = tool_roster(&definition, &features, mail);
            let configuration = AgentConfiguration {
                id: definition.id.clone(),
                instructions: definition.instructions,
                model: definition.model,
                features: features.clone(),
                tools,
                webhook_url: definition.webhook_url,
                wait_timeout_seconds: definition.wait_timeout_seconds,
            };
            let agent = Agent {
                version: configuration.version(),
                configuration,
            };
            if agents.insert(definition.id.clone(), agent).is_some() {
                return Err(AgentError::Duplicate(definition.id.0));
            }
        }
        Ok(Self { agents })
    }

    pub fn get(&self, id: &str) -> Option<&Agent> {
        AgentId::parse(id).and_then(|id| self.agents.get(&id))
    }

    pub fn iter(&self) -> impl Iterator<Item = &Agent> {
        self.agents.values()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registry(flags: &[Flag]) -> AgentRegistry {
        let flags = FeatureFlags::with(flags).expect("valid flags");
        AgentRegistry::compose(vec![AgentDefinition::builtin_default()], &flags, None).expect("valid registry")
    }

    #[test]
    fn version_changes_with_agent_shaping_flags_only() {
        let plain = registry(&[]).get("default").expect("default agent").version.clone();
        let again = registry(&[]).get("default").expect("default agent").version.clone();
        let mail = registry(&[Flag::Email])
            .get("default")
            .expect("default agent")
            .version
            .clone();
        let notify = registry(&[Flag::NotificationApi, Flag::NotificationDispatch])
            .get("default")
            .expect("default agent")
            .version
            .clone();
        assert_eq!(plain, again, "the version is a pure function of the configuration");
        assert_ne!(
            plain, mail,
            "enabling a feature that shapes the agent yields a new version"
        );
        assert_eq!(plain, notify, "delivery flags do not change what the agent can do");
        assert_eq!(plain.as_str().len(), 32);
    }

    #[test]
    fn mail_tools_join_the_roster_only_with_the_flag_and_follow_the_accounts() {
        let roster = |flags: &[Flag], accounts: Option<&AccountIds>| {
            let flags = FeatureFlags::with(flags).expect("valid flags");
            let registry = AgentRegistry::compose(vec![AgentDefinition::builtin_default()], &flags, accounts)
                .expect("valid registry");
            registry.get("default").expect("default agent").clone()
        };
        let one = AccountIds::legacy();
        let two = AccountIds {
            default_account: "default".into(),
            accounts: vec!["default".into(), "work".into()],
        };
        let off = roster(&[], Some(&one));
        assert!(!off.configuration.tools.iter().any(|tool| tool.starts_with("mcp.mail")));
        let on = roster(&[Flag::Email], Some(&one));
        assert!(
            on.configuration
                .tools
                .contains(&"mcp.mail_send.send_message".to_owned())
        );
        assert!(!on.configuration.tools.iter().any(|tool| tool.contains("mail_work")));
        let both = roster(&[Flag::Email], Some(&two));
        assert!(
            both.configuration
                .tools
                .contains(&"mcp.mail_work_read.search_threads".to_owned())
        );
        assert_ne!(on.version, both.version, "a new account is a new agent version");
    }

    #[test]
    fn version_changes_with_instructions_and_model() {
        let flags = FeatureFlags::default();
        let base = AgentDefinition::builtin_default();
        let mut reworded = base.clone();
        reworded.instructions.push_str(" Always answer in French.");
        let mut other_model = base.clone();
        other_model.model.reasoning_effort = Some("high".into());
        let versions: Vec<AgentVersion> = [base, reworded, other_model]
            .into_iter()
            .map(|definition| {
                AgentRegistry::compose(vec![definition], &flags, None)
                    .expect("valid")
                    .iter()
                    .next()
                    .expect("one")
                    .version
                    .clone()
            })
            .collect();
        assert_ne!(versions[0], versions[1]);
        assert_ne!(versions[0], versions[2]);
    }

    #[test]
    fn refuses_duplicates_empty_registries_and_bad_ids() {
        let flags = FeatureFlags::default();
        let twice = vec![AgentDefinition::builtin_default(), AgentDefinition::builtin_default()];
        assert_eq!(
            AgentRegistry::compose(twice, &flags, None).err(),
            Some(AgentError::Duplicate("default".into()))
        );
        assert_eq!(
            AgentRegistry::compose(vec![], &flags, None).err(),
            Some(AgentError::Empty)
        );
        assert!(AgentId::parse("Default").is_none());
        assert!(AgentId::parse("").is_none());
        assert!(AgentId::parse("-x").is_none());
        assert!(AgentId::parse("mail-helper_2").is_some());
        assert!(registry(&[]).get("nope").is_none());
    }
}
