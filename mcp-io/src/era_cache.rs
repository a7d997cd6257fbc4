//! [`EraCache`]: the era verdicts per origin ([`EraVerdicts`]) behind a lock, shared by
//! clones, so many connections, threads and both adapters can use one.
//!
//! The decisions live in the machine: an adapter puts [`EraCache::hint`] into
//! `ClientConfig::known_era` before connecting, and [`EraCache::record`]s the version it
//! connected with. A stale legacy verdict is the machine's business (it probes after
//! all, once) and needs nothing here.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use mcp_proto::verdicts::EraVerdicts;
use mcp_proto::{Era, ProtocolVersion};

/// Remembers which era (and version) each origin spoke, so that the next connection to a
/// legacy server skips the `server/discover` probe.
///
/// In memory, cheap to clone (clones share the verdicts), `Send + Sync`. Keys are origins
/// ([`mcp_proto::http::EndpointUrl::origin`]): one verdict per server, whatever the path.
/// [`EraCache::snapshot`] and [`EraCache::from_verdicts`] move the plain data in and out
/// (to persist it, say).
///
/// ```
/// use mcp_io::EraCache;
/// use mcp_io::mcp_proto::{Era, ProtocolVersion};
///
/// let cache = EraCache::new();
/// cache.record("https://mcp.example.com", ProtocolVersion::V2025_11_25);
/// assert_eq!(cache.hint("https://mcp.example.com").map(|(era, _)| era), Some(Era::Legacy));
/// let saved = cache.snapshot();
/// cache.forget("https://mcp.example.com");
/// assert!(cache.is_empty());
/// assert_eq!(EraCache::from_verdicts(saved).len(), 1);
/// ```
#[derive(Clone, Default)]
pub struct EraCache {
    inner: Arc<Mutex<EraVerdicts>>,
}

impl EraCache {
    /// An empty cache.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// A cache holding `verdicts`.
    #[must_use]
    pub fn from_verdicts(verdicts: EraVerdicts) -> Self {
        EraCache {
            inner: Arc::new(Mutex::new(verdicts)),
        }
    }

    /// A copy of the verdicts.
    #[must_use]
    pub fn snapshot(&self) -> EraVerdicts {
        self.lock().clone()
    }

    /// The verdict for `origin`, for `ClientConfig::known_era`.
    #[must_use]
    pub fn hint(&self, origin: &str) -> Option<(Era, ProtocolVersion)> {
        self.lock().hint(origin)
    }

    /// A connection to `origin` settled on `version`.
    pub fn record(&self, origin: &str, version: ProtocolVersion) {
        self.lock().record(origin, version);
    }

    /// Forgets `origin`.
    pub fn forget(&self, origin: &str) {
        self.lock().forget(origin);
    }

    /// How many origins are known.
    #[must_use]
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no origin is known.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, EraVerdicts> {
        // No critical section can panic half-way; a poisoned lock still holds
        // consistent data.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl fmt::Debug for EraCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.lock().entries()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_one_set_of_verdicts_across_threads() {
        fn shareable<T: Clone + Send + Sync + 'static>() {}
        shareable::<EraCache>();
        let cache = EraCache::new();
        let clone = cache.clone();
        std::thread::spawn(move || clone.record("https://a", ProtocolVersion::V2026_07_28))
            .join()
            .unwrap();
        assert_eq!(
            cache.hint("https://a"),
            Some((Era::Modern, ProtocolVersion::V2026_07_28))
        );
        assert!(format!("{cache:?}").contains("https://a"));
    }
}
