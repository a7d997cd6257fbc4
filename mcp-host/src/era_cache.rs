//! The era verdict per origin, remembered between connections, and what both adapters'
//! `connect_http_with` decide with it.
//!
//! * [`EraCache`]: the verdicts, in memory, shared by clones (and by both adapters:
//!   `mcp_blocking::EraCache` and `mcp_smol::EraCache` are this type).
//! * [`EraCache::connect_mode`]: which [`EraMode`] to connect with, given the cache and
//!   the configured mode.
//! * [`server_moved_on`]: whether a failed connection attempt means the cached legacy
//!   verdict is stale (and the origin must be probed again).
//! * [`EraPlan`]: the three together for one connection: the mode of the attempt,
//!   the one retry after a stale verdict, and recording the verdict once connected.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use mcp_proto::jsonrpc::codes;
use mcp_proto::{Era, EraMode, ProtocolVersion};

use crate::Cause;

/// Remembers which era (and version) each origin spoke, so that the next connection to a
/// legacy server skips the `server/discover` probe.
///
/// In memory only, cheap to clone (clones share the map), `Send + Sync`: one cache can
/// serve many connections, threads and tasks, and both adapters at once. An adapter's
/// `connect_http_with` consults it (through an [`EraPlan`]) when the era mode is
/// [`EraMode::Auto`]: a legacy verdict connects with [`EraMode::Legacy`] straight away;
/// if that is answered with HTTP 400 and a 2026 error (`-32020`, `-32021`, `-32022`: the
/// server moved on, see [`server_moved_on`]), the entry is dropped and the connection is
/// retried once in `Auto`. A successful connection records its verdict. Keys are origins
/// ([`mcp_proto::http::EndpointUrl::origin`]): one verdict per server, whatever the path.
///
/// ```
/// use mcp_host::EraCache;
/// use mcp_host::mcp_proto::{Era, EraMode, ProtocolVersion};
///
/// let cache = EraCache::new();
/// cache.record("https://mcp.example.com", Era::Legacy, ProtocolVersion::V2025_11_25);
/// assert_eq!(cache.get("https://mcp.example.com").map(|(era, _)| era), Some(Era::Legacy));
/// assert_eq!(cache.connect_mode("https://mcp.example.com", EraMode::Auto), EraMode::Legacy);
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

    /// The era mode to connect to `origin` with when the configuration says
    /// `configured`: [`EraMode::Legacy`] when `configured` is [`EraMode::Auto`] and the
    /// origin is known to be legacy (no probe), `configured` otherwise (an explicit mode
    /// always wins; a modern verdict changes nothing, the probe is how 2026 starts).
    #[must_use]
    pub fn connect_mode(&self, origin: &str, configured: EraMode) -> EraMode {
        let known_legacy = || self.get(origin).is_some_and(|(era, _)| era == Era::Legacy);
        if configured == EraMode::Auto && known_legacy() {
            EraMode::Legacy
        } else {
            configured
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Era, ProtocolVersion)>> {
        // No critical section can panic half-way; a poisoned lock still holds
        // consistent data.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl fmt::Debug for EraCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.lock().iter()).finish()
    }
}

/// Whether a connection attempt made in [`EraMode::Legacy`] on the strength of a cached
/// verdict failed because the server moved on to 2026: HTTP 400 with one of the 2026
/// error codes (`-32020` header mismatch, `-32021` missing client capability, `-32022`
/// unsupported protocol version) in the body. Anything else (unreachable, 401, a legacy
/// server's own refusal) says nothing about the era and keeps the verdict.
///
/// ```
/// use mcp_host::{Cause, server_moved_on};
/// use mcp_host::mcp_proto::ErrorObject;
/// use mcp_host::mcp_proto::client::{CloseReason, HttpFailure};
///
/// let error = ErrorObject::new(-32022, "Unsupported protocol version");
/// let moved = HttpFailure::new(Some(400), Some(error.clone()), "HTTP 400");
/// assert!(server_moved_on(Cause::Connect(&CloseReason::Http(moved))));
/// let unauthorized = HttpFailure::new(Some(401), Some(error), "HTTP 401");
/// assert!(!server_moved_on(Cause::Connect(&CloseReason::Http(unauthorized))));
/// ```
#[must_use]
pub fn server_moved_on(failure: Cause<'_>) -> bool {
    failure.http_status() == Some(400)
        && failure
            .error_object()
            .is_some_and(|e| codes::is_modern_request_error(e.code))
}

/// What one HTTP connection does with an optional [`EraCache`]: the era mode of each
/// attempt, whether a failed attempt is retried, and recording the verdict. Both
/// adapters follow it the same way:
///
/// 1. connect with [`EraPlan::mode`] (the configured mode, or `Legacy` for an origin
///    cached as legacy when the configured mode is `Auto`: [`EraPlan::is_tentative`]);
/// 2. when that attempt fails before the connection is up, ask [`EraPlan::retry`]: true
///    (once at most, and only for a tentative attempt that [`server_moved_on`]) means the
///    entry was dropped and the connection is to be tried again with [`EraPlan::mode`],
///    now the configured mode;
/// 3. once connected, [`EraPlan::connected`] records the verdict.
///
/// Without a cache the plan is the configured mode, no retry, nothing recorded.
///
/// ```
/// use mcp_host::{Cause, EraCache, EraPlan};
/// use mcp_host::mcp_proto::client::{CloseReason, HttpFailure};
/// use mcp_host::mcp_proto::{Era, EraMode, ErrorObject, ProtocolVersion};
///
/// let cache = EraCache::new();
/// let origin = "https://mcp.example.com";
/// cache.record(origin, Era::Legacy, ProtocolVersion::V2025_11_25);
///
/// let mut plan = EraPlan::new(Some(cache.clone()), origin, EraMode::Auto);
/// assert_eq!(plan.mode(), EraMode::Legacy);
/// // The server moved on: `initialize` drew a 400 with -32022.
/// let error = ErrorObject::new(-32022, "Unsupported protocol version");
/// let reason = CloseReason::Http(HttpFailure::new(Some(400), Some(error), "HTTP 400"));
/// assert!(plan.retry(Cause::Connect(&reason)));
/// assert!(cache.get(origin).is_none());
/// assert_eq!(plan.mode(), EraMode::Auto);
/// assert!(!plan.retry(Cause::Connect(&reason)), "once only");
/// plan.connected(ProtocolVersion::V2026_07_28);
/// assert_eq!(cache.get(origin), Some((Era::Modern, ProtocolVersion::V2026_07_28)));
/// ```
#[derive(Debug, Clone)]
pub struct EraPlan {
    cache: Option<EraCache>,
    origin: String,
    configured: EraMode,
    /// The current attempt is `Legacy` because of a cached verdict, and has neither
    /// connected nor been retried.
    tentative: bool,
}

impl EraPlan {
    /// The plan for connecting to `origin` (an [`EndpointUrl::origin`]) with the
    /// configured era mode `configured`.
    ///
    /// [`EndpointUrl::origin`]: mcp_proto::http::EndpointUrl::origin
    #[must_use]
    pub fn new(cache: Option<EraCache>, origin: impl Into<String>, configured: EraMode) -> Self {
        let origin = origin.into();
        let tentative = cache
            .as_ref()
            .is_some_and(|c| c.connect_mode(&origin, configured) != configured);
        EraPlan {
            cache,
            origin,
            configured,
            tentative,
        }
    }

    /// The era mode for the current attempt.
    #[must_use]
    pub fn mode(&self) -> EraMode {
        if self.tentative {
            EraMode::Legacy
        } else {
            self.configured
        }
    }

    /// True while the current attempt rests on a cached legacy verdict that may be
    /// stale: it might still fail and be retried, so an adapter that queues calls
    /// before the connection is up keeps them back until it is (or until the retry).
    #[must_use]
    pub fn is_tentative(&self) -> bool {
        self.tentative
    }

    /// The attempt failed, for `failure`, before the connection was up. True when it is
    /// to be tried again with [`EraPlan::mode`]: the attempt was tentative and the
    /// server moved on ([`server_moved_on`]); the stale entry has then been dropped.
    /// True once at most.
    pub fn retry(&mut self, failure: Cause<'_>) -> bool {
        if !self.tentative || !server_moved_on(failure) {
            return false;
        }
        self.tentative = false;
        if let Some(cache) = &self.cache {
            cache.invalidate(&self.origin);
        }
        true
    }

    /// The connection is up with `version`: records the verdict in the cache.
    pub fn connected(&mut self, version: ProtocolVersion) {
        self.tentative = false;
        if let Some(cache) = &self.cache {
            cache.record(&self.origin, version.era(), version);
        }
    }

    /// The origin this plan is for.
    #[must_use]
    pub fn origin(&self) -> &str {
        &self.origin
    }
}

#[cfg(test)]
mod tests {
    use mcp_proto::ErrorObject;
    use mcp_proto::client::{CallError, CloseReason, HttpFailure};

    use super::*;

    const ORIGIN: &str = "https://mcp.example.com";

    fn http_failure(status: Option<u16>, code: Option<i64>) -> CloseReason {
        let error = code.map(|c| ErrorObject::new(c, "no"));
        CloseReason::Http(HttpFailure::new(status, error, "HTTP failure"))
    }

    fn legacy_cache() -> EraCache {
        let cache = EraCache::new();
        cache.record(ORIGIN, Era::Legacy, ProtocolVersion::V2025_11_25);
        cache
    }

    #[test]
    fn the_cache_is_shareable() {
        fn shareable<T: Clone + Send + Sync + 'static>() {}
        shareable::<EraCache>();
        shareable::<EraPlan>();
        let cache = EraCache::new();
        let clone = cache.clone();
        std::thread::spawn(move || clone.record(ORIGIN, Era::Modern, ProtocolVersion::V2026_07_28))
            .join()
            .unwrap();
        assert_eq!(cache.len(), 1);
        assert!(!cache.is_empty());
        assert!(format!("{cache:?}").contains(ORIGIN));
    }

    #[test]
    fn only_auto_with_a_legacy_verdict_skips_the_probe() {
        let cache = legacy_cache();
        assert_eq!(cache.connect_mode(ORIGIN, EraMode::Auto), EraMode::Legacy);
        // An explicit mode always wins.
        assert_eq!(cache.connect_mode(ORIGIN, EraMode::Modern), EraMode::Modern);
        assert_eq!(cache.connect_mode(ORIGIN, EraMode::Legacy), EraMode::Legacy);
        // Unknown origins and modern verdicts: the configured mode.
        assert_eq!(
            cache.connect_mode("https://other.example", EraMode::Auto),
            EraMode::Auto
        );
        cache.record(ORIGIN, Era::Modern, ProtocolVersion::V2026_07_28);
        assert_eq!(cache.connect_mode(ORIGIN, EraMode::Auto), EraMode::Auto);
    }

    #[test]
    fn moved_on_means_400_with_a_2026_code() {
        for code in [-32020, -32021, -32022] {
            let reason = http_failure(Some(400), Some(code));
            assert!(server_moved_on(Cause::Connect(&reason)), "{code}");
            assert!(server_moved_on(Cause::Closed(&reason)), "{code}");
        }
        for (status, code) in [
            (Some(400), Some(-32600)),
            (Some(400), Some(-32000)),
            (Some(400), None),
            (Some(404), Some(-32022)),
            (None, Some(-32022)),
            (None, None),
        ] {
            let reason = http_failure(status, code);
            assert!(
                !server_moved_on(Cause::Connect(&reason)),
                "{status:?} {code:?}"
            );
        }
        let refused = CloseReason::Refused(ErrorObject::new(-32022, "no"));
        assert!(!server_moved_on(Cause::Connect(&refused)));
        assert!(!server_moved_on(Cause::Connect(&CloseReason::LegacyServer)));
        assert!(!server_moved_on(Cause::Call(&CallError::Timeout(
            std::time::Duration::from_secs(1)
        ))));
        assert!(!server_moved_on(Cause::Spawn));
    }

    #[test]
    fn a_stale_legacy_verdict_is_dropped_and_retried_once() {
        let cache = legacy_cache();
        let mut plan = EraPlan::new(Some(cache.clone()), ORIGIN, EraMode::Auto);
        assert_eq!(plan.origin(), ORIGIN);
        assert!(plan.is_tentative());
        assert_eq!(plan.mode(), EraMode::Legacy);
        // Not a reason: the verdict stays, no retry.
        let unauthorized = http_failure(Some(401), None);
        assert!(!plan.retry(Cause::Connect(&unauthorized)));
        assert!(cache.get(ORIGIN).is_some());
        assert!(plan.is_tentative());
        // The server moved on.
        let moved = http_failure(Some(400), Some(-32022));
        assert!(plan.retry(Cause::Connect(&moved)));
        assert!(cache.get(ORIGIN).is_none());
        assert!(!plan.is_tentative());
        assert_eq!(plan.mode(), EraMode::Auto);
        assert!(!plan.retry(Cause::Connect(&moved)), "once only");
        plan.connected(ProtocolVersion::V2026_07_28);
        assert_eq!(
            cache.get(ORIGIN),
            Some((Era::Modern, ProtocolVersion::V2026_07_28))
        );
    }

    #[test]
    fn a_connection_records_its_verdict() {
        let cache = EraCache::new();
        let mut plan = EraPlan::new(Some(cache.clone()), ORIGIN, EraMode::Auto);
        assert!(!plan.is_tentative());
        assert_eq!(plan.mode(), EraMode::Auto);
        plan.connected(ProtocolVersion::V2025_06_18);
        assert_eq!(
            cache.get(ORIGIN),
            Some((Era::Legacy, ProtocolVersion::V2025_06_18))
        );
        // The next plan skips the probe; once connected it is no longer tentative,
        // so a later failure (a dropped session) retries nothing.
        let mut next = EraPlan::new(Some(cache.clone()), ORIGIN, EraMode::Auto);
        assert_eq!(next.mode(), EraMode::Legacy);
        next.connected(ProtocolVersion::V2025_11_25);
        assert!(!next.is_tentative());
        let moved = http_failure(Some(400), Some(-32020));
        assert!(!next.retry(Cause::Closed(&moved)));
        assert_eq!(
            cache.get(ORIGIN),
            Some((Era::Legacy, ProtocolVersion::V2025_11_25))
        );
    }

    #[test]
    fn an_explicit_mode_never_retries() {
        let cache = legacy_cache();
        let mut plan = EraPlan::new(Some(cache.clone()), ORIGIN, EraMode::Legacy);
        assert!(!plan.is_tentative());
        assert_eq!(plan.mode(), EraMode::Legacy);
        let moved = http_failure(Some(400), Some(-32022));
        assert!(!plan.retry(Cause::Connect(&moved)));
        assert!(cache.get(ORIGIN).is_some(), "the verdict stays");
    }

    #[test]
    fn without_a_cache_the_plan_is_the_configured_mode() {
        let mut plan = EraPlan::new(None, ORIGIN, EraMode::Auto);
        assert_eq!(plan.mode(), EraMode::Auto);
        assert!(!plan.is_tentative());
        let moved = http_failure(Some(400), Some(-32022));
        assert!(!plan.retry(Cause::Connect(&moved)));
        plan.connected(ProtocolVersion::V2026_07_28);
    }
}
