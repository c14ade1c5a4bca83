//! Identifier newtypes, so a folder id can never be passed where a session id is expected.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

macro_rules! uuid_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(Uuid);

        impl $name {
            pub const fn from_uuid(id: Uuid) -> Self {
                Self(id)
            }

            pub const fn as_uuid(self) -> Uuid {
                self.0
            }

            /// Parses the textual form; anything but a UUID is refused.
            pub fn parse(text: &str) -> Option<Self> {
                Uuid::try_parse(text).ok().map(Self)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.0.fmt(f)
            }
        }

        impl From<Uuid> for $name {
            fn from(id: Uuid) -> Self {
                Self(id)
            }
        }
    };
}

uuid_id!(
    /// A conversation.
    SessionId
);
uuid_id!(
    /// A folder in the owner's sidebar.
    FolderId
);
uuid_id!(
    /// A proposal to file sessions into a folder, made by the agent for the owner to decide.
    FolderProposalId
);
uuid_id!(
    /// An uploaded file attached to a session.
    ArtifactId
);
uuid_id!(
    /// One execution of the agent in a session.
    RunId
);
uuid_id!(
    /// A schedule that starts runs on a cadence.
    ScheduleId
);

uuid_id!(
    /// A conversation of Email mode's mailbox projection (not the provider's thread id).
    ThreadId
);
uuid_id!(
    /// A versioned email draft.
    DraftId
);
uuid_id!(
    /// A durable Email mode operation: a refresh, a mailbox write or a reply proposal.
    EmailOperationId
);
uuid_id!(
    /// One piece of the owner's feedback on Email mode's decisions.
    FeedbackId
);
uuid_id!(
    /// A row of the subscription census: one sender of bulk mail to one account.
    SubscriptionId
);

/// A connected mail account, as the accounts manifest names it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct AccountId(String);

impl AccountId {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

impl std::fmt::Display for AccountId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<String> for AccountId {
    fn from(id: String) -> Self {
        Self(id)
    }
}

impl From<&str> for AccountId {
    fn from(id: &str) -> Self {
        Self(id.to_owned())
    }
}

/// The authenticated principal. Steward has one owner, but every owned row records who owns it so
/// that idempotency keys, deletes and listings are scoped to the principal, as the contract says.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PrincipalId(String);

impl PrincipalId {
    /// The single owner principal that the static bearer token authenticates.
    pub fn owner() -> Self {
        Self("owner".to_owned())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Wraps a principal id read back from storage.
    pub fn from_stored(id: String) -> Self {
        Self(id)
    }
}
