//! The era verdict per origin, remembered between connections.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use mcp_proto::{Era, ProtocolVersion};

/// Remembers which era (and version) each origin spoke, so that the next connection to a
/// legacy server skips the `server/discover` probe.
///
/// In memory only, cheap to clone (clones share the map), safe to share between
/// threads. [`crate::Client::connect_http_with`] consults it when the era mode is
/// [`mcp_proto::EraMode::Auto`]: a legacy verdict connects with
/// [`mcp_proto::EraMode::Legacy`] straight away; if that is answered with HTTP 400 and a
/// 2026 error (`-32020`, `-32021`, `-32022`: the server moved on), the entry is dropped
/// and the connection is retried once in `Auto`. A successful connection records its
/// verdict. Keys are origins ([`mcp_proto::http::EndpointUrl::origin`]): one verdict per
/// server, whatever the path.
///
/// ```
/// use mcp_blocking::EraCache;
/// use mcp_blocking::mcp_proto::{Era, ProtocolVersion};
///
/// let cache = EraCache::new();
/// cache.record("https://mcp.example.com", Era::Legacy, ProtocolVersion::V2025_11_25);
/// assert_eq!(cache.get("https://mcp.example.com").map(|(era, _)| era), Some(Era::Legacy));
/// cache.invalidate("https://mcp.example.com");
/// assert!(cache.get("https://mcp.example.com").is_none());
/// ```
#[derive(Clone, Default)]
pub struct EraCache {
    inner: Arc<Mutex<HashMap<String, (Era, ProtocolVersion)>>>,
}

impl EraCache {
    /// An empty cache.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The verdict recorded for `origin`.
    #[must_use]
    pub fn get(&self, origin: &str) -> Option<(Era, ProtocolVersion)> {
        self.lock().get(origin).copied()
    }

    /// Records the verdict for `origin`.
    pub fn record(&self, origin: &str, era: Era, version: ProtocolVersion) {
        self.lock().insert(origin.to_owned(), (era, version));
    }

    /// Forgets `origin`.
    pub fn invalidate(&self, origin: &str) {
        self.lock().remove(origin);
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

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Era, ProtocolVersion)>> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl fmt::Debug for EraCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.lock().iter()).finish()
    }
}
