//! Log lines a test can read: a subscriber in the roles' own format (spans as context, no
//! colours, no targets) writing into memory.

use std::io::Write;
use std::sync::{Arc, Mutex};

/// Everything the subscriber writes, kept for the test to read.
#[derive(Clone, Debug, Default)]
pub struct Captured(Arc<Mutex<Vec<u8>>>);

/// The installed subscriber; dropping it uninstalls it.
#[derive(Debug)]
pub struct Installed {
    _default: tracing::subscriber::DefaultGuard,
    _companion: tracing::Dispatch,
}

impl Captured {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)).into_owned()
    }

    /// Captures this thread's `INFO` lines and above until the guard is dropped.
    pub fn install(&self) -> Installed {
        let subscriber = tracing_subscriber::fmt()
            .with_writer(self.clone())
            .with_ansi(false)
            .with_target(false)
            .with_max_level(tracing::Level::INFO)
            .finish();
        // With a single scoped dispatcher alive, tracing settles a callsite's interest on
        // whichever thread reaches it first: a test on another thread, with no subscriber, would
        // turn these lines off for good. With two alive it asks both (and each thread its own
        // when logging); this second one records nothing.
        let companion = tracing::Dispatch::new(tracing::subscriber::NoSubscriber::default());
        let default = tracing::subscriber::set_default(subscriber);
        tracing::callsite::rebuild_interest_cache();
        Installed {
            _default: default,
            _companion: companion,
        }
    }
}

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
    type Writer = Captured;

    fn make_writer(&'a self) -> Captured {
        self.clone()
    }
}
