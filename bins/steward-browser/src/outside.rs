//! What the role's outside address (the handoff and the remote sign-in page) serves from.

use std::sync::Arc;

use crate::ceremony::Ceremonies;
use crate::storage::Vault;
use crate::tasks::Browsers;

/// The ceremonies, the sealed sessions, and the browsers of remote sign-in pages.
pub struct Handoff {
    pub ceremonies: Arc<Ceremonies>,
    pub vault: Arc<Vault>,
    /// The remote sign-in pages' browsers.
    pub browsers: Arc<Browsers>,
}
