//! What connections learned about servers' eras, per origin, as plain data.
//!
//! A client that connects to the same server again can skip the `server/discover` probe
//! when it knows the server is legacy: [`EraVerdicts::hint`] gives the value for
//! [`crate::client::ClientConfig::known_era`], and the machine itself handles a verdict
//! gone stale (it probes after all, once). After a connection, record what it settled
//! on with [`EraVerdicts::record`]. The type is plain data: keep it in memory, share it
//! behind a lock, or persist it through [`EraVerdicts::entries`] and
//! [`EraVerdicts::from_entries`] (the version as its date string).
//!
//! ```
//! use mcp_proto::{Era, ProtocolVersion};
//! use mcp_proto::verdicts::EraVerdicts;
//!
//! let mut verdicts = EraVerdicts::default();
//! verdicts.record("https://mcp.example.com", ProtocolVersion::V2025_11_25);
//! assert_eq!(
//!     verdicts.hint("https://mcp.example.com"),
//!     Some((Era::Legacy, ProtocolVersion::V2025_11_25))
//! );
//! let saved: Vec<(String, String)> = verdicts
//!     .entries()
//!     .map(|(origin, v)| (origin.to_owned(), v.as_str().to_owned()))
//!     .collect();
//! let restored = EraVerdicts::from_entries(saved.iter().map(|(o, v)| (o.as_str(), v.as_str())));
//! assert_eq!(restored, verdicts);
//! ```

use std::collections::BTreeMap;

use crate::version::{Era, ProtocolVersion};

/// The era verdict per origin (`scheme://host:port`, as
/// [`crate::http::EndpointUrl::origin`] gives it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EraVerdicts {
    by_origin: BTreeMap<String, ProtocolVersion>,
}

impl EraVerdicts {
    /// The verdicts in `entries` (origin, version string); unknown versions are skipped.
    #[must_use]
    pub fn from_entries<'a>(entries: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let by_origin = entries
            .into_iter()
            .filter_map(|(origin, v)| Some((origin.to_owned(), ProtocolVersion::parse(v)?)))
            .collect();
        EraVerdicts { by_origin }
    }

    /// Every verdict, by origin.
    pub fn entries(&self) -> impl Iterator<Item = (&str, ProtocolVersion)> {
        self.by_origin.iter().map(|(o, v)| (o.as_str(), *v))
    }

    /// What is known about `origin`, for [`crate::client::ClientConfig::known_era`].
    #[must_use]
    pub fn hint(&self, origin: &str) -> Option<(Era, ProtocolVersion)> {
        self.by_origin.get(origin).map(|v| (v.era(), *v))
    }

    /// A connection to `origin` settled on `version`.
    pub fn record(&mut self, origin: &str, version: ProtocolVersion) {
        self.by_origin.insert(origin.to_owned(), version);
    }

    /// Forgets `origin`.
    pub fn forget(&mut self, origin: &str) {
        self.by_origin.remove(origin);
    }

    /// How many origins are known.
    #[must_use]
    pub fn len(&self) -> usize {
        self.by_origin.len()
    }

    /// Whether no origin is known.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.by_origin.is_empty()
    }
}
