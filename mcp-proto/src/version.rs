//! Protocol versions, eras, and the classifier that reads a server's answer to the
//! `server/discover` probe.
//!
//! The era belongs to the server: a 2026-07-28 ("modern") server is spoken to statelessly
//! with `_meta` on every request; a 2025-06-18 / 2025-11-25 ("legacy") server needs the
//! `initialize` handshake. In [`EraMode::Auto`] the client probes with `server/discover`
//! and falls back to `initialize` only on legacy evidence — never because of one fixed
//! error code. The rules (and their test table, `era-detection.json`) are:
//!
//! * modern evidence: a discover result sharing a version with us, or `-32022` whose
//!   `data.supported` lists a modern version we speak (retry with it);
//! * a modern server rejecting our request (`-32020`, `-32021`): not a reason to fall back;
//! * legacy evidence on stdio: any other error, silence past the probe timeout, the process
//!   exiting, a result that is not a discover result, or version lists with only legacy
//!   versions in common.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::jsonrpc::{ErrorObject, codes};

/// A protocol version this library knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum ProtocolVersion {
    /// 2024-11-05 (refused unless the caller opts in).
    V2024_11_05,
    /// 2025-03-26 (refused unless the caller opts in).
    V2025_03_26,
    /// 2025-06-18, legacy era.
    V2025_06_18,
    /// 2025-11-25, legacy era.
    V2025_11_25,
    /// 2026-07-28, modern era.
    V2026_07_28,
}

impl ProtocolVersion {
    /// Every known version, oldest first.
    pub const ALL: [ProtocolVersion; 5] = [
        ProtocolVersion::V2024_11_05,
        ProtocolVersion::V2025_03_26,
        ProtocolVersion::V2025_06_18,
        ProtocolVersion::V2025_11_25,
        ProtocolVersion::V2026_07_28,
    ];
    /// The newest legacy (handshake) version.
    pub const LATEST_LEGACY: ProtocolVersion = ProtocolVersion::V2025_11_25;
    /// The newest modern version.
    pub const LATEST_MODERN: ProtocolVersion = ProtocolVersion::V2026_07_28;

    /// The wire string, e.g. `"2025-11-25"`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            ProtocolVersion::V2024_11_05 => "2024-11-05",
            ProtocolVersion::V2025_03_26 => "2025-03-26",
            ProtocolVersion::V2025_06_18 => "2025-06-18",
            ProtocolVersion::V2025_11_25 => "2025-11-25",
            ProtocolVersion::V2026_07_28 => "2026-07-28",
        }
    }

    /// Parses a wire string; `None` for versions this library does not know.
    #[must_use]
    pub fn parse(s: &str) -> Option<ProtocolVersion> {
        ProtocolVersion::ALL.into_iter().find(|v| v.as_str() == s)
    }

    /// The era of this version.
    #[must_use]
    pub fn era(self) -> Era {
        if self >= ProtocolVersion::V2026_07_28 {
            Era::Modern
        } else {
            Era::Legacy
        }
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ProtocolVersion {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// The two eras of the protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Era {
    /// 2025-06-18 and 2025-11-25: `initialize`, sessions, server→client requests.
    Legacy,
    /// 2026-07-28: no handshake, `_meta` on every request, MRTR.
    Modern,
}

impl fmt::Display for Era {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Era::Legacy => "legacy",
            Era::Modern => "modern",
        })
    }
}

/// How the client picks the era of a server.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EraMode {
    /// Never probe: `initialize` straight away.
    Legacy,
    /// Probe with `server/discover`, fall back to `initialize` on legacy evidence.
    #[default]
    Auto,
    /// Speak 2026-07-28 only; a legacy server is a clear error.
    Modern,
}

impl EraMode {
    /// Parses `legacy`, `auto` or `modern`.
    #[must_use]
    pub fn parse(s: &str) -> Option<EraMode> {
        match s {
            "legacy" => Some(EraMode::Legacy),
            "auto" => Some(EraMode::Auto),
            "modern" => Some(EraMode::Modern),
            _ => None,
        }
    }
}

/// The set of versions a client is willing to speak.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VersionPolicy {
    /// Accepted versions, in any order.
    pub accepted: Vec<ProtocolVersion>,
}

impl Default for VersionPolicy {
    fn default() -> Self {
        VersionPolicy {
            accepted: vec![
                ProtocolVersion::V2025_06_18,
                ProtocolVersion::V2025_11_25,
                ProtocolVersion::V2026_07_28,
            ],
        }
    }
}

impl VersionPolicy {
    /// Also accept 2024-11-05 and 2025-03-26 (off by default, never silently).
    #[must_use]
    pub fn with_pre_2025_06_versions(mut self) -> Self {
        for v in [ProtocolVersion::V2024_11_05, ProtocolVersion::V2025_03_26] {
            if !self.accepted.contains(&v) {
                self.accepted.push(v);
            }
        }
        self
    }

    /// Whether `v` is accepted.
    #[must_use]
    pub fn accepts(&self, v: ProtocolVersion) -> bool {
        self.accepted.contains(&v)
    }

    /// The newest accepted version of `era`.
    #[must_use]
    pub fn newest(&self, era: Era) -> Option<ProtocolVersion> {
        self.accepted
            .iter()
            .copied()
            .filter(|v| v.era() == era)
            .max()
    }

    /// The newest accepted version of `era` among the wire strings in `offered`.
    #[must_use]
    pub fn best_of<'a>(
        &self,
        offered: impl IntoIterator<Item = &'a str>,
        era: Era,
    ) -> Option<ProtocolVersion> {
        offered
            .into_iter()
            .filter_map(ProtocolVersion::parse)
            .filter(|v| v.era() == era && self.accepts(*v))
            .max()
    }
}

/// What came back for the `server/discover` probe.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ProbeOutcome<'a> {
    /// A result (the raw JSON of `result`).
    Result(&'a str),
    /// A JSON-RPC error.
    Error(&'a ErrorObject),
    /// No answer within the probe timeout.
    Timeout,
    /// The server process exited (stdio) before answering.
    ProcessExited,
}

/// The classifier's verdict on a probe outcome.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ProbeVerdict {
    /// The server is modern and answered discover: speak `version`.
    Modern {
        /// The version to use.
        version: ProtocolVersion,
    },
    /// The server is modern but does not serve the probed version: probe again with
    /// `version` (from `data.supported`).
    RetryModern {
        /// The version to retry with.
        version: ProtocolVersion,
    },
    /// The server is legacy: run `initialize`, offering `version`.
    Legacy {
        /// The version to offer in `initialize`.
        version: ProtocolVersion,
        /// The probe killed or lost the transport: start a fresh one first.
        restart: bool,
    },
    /// A modern server rejected the request itself (`-32020`, `-32021`): fix the request;
    /// falling back would be wrong.
    ModernRequestError(ErrorObject),
    /// Nothing usable in common.
    NoCommonVersion,
}

#[derive(Deserialize)]
struct DiscoverShape<'a> {
    // Borrowed unless written with escapes (`"2026\u002d07\u002d28"` is a version too).
    #[serde(rename = "supportedVersions", borrow)]
    supported_versions: Option<Vec<std::borrow::Cow<'a, str>>>,
    #[serde(rename = "resultType", borrow)]
    result_type: Option<std::borrow::Cow<'a, str>>,
    capabilities: Option<serde::de::IgnoredAny>,
}

/// Classifies the answer to a `server/discover` probe sent with `probed`, for a stdio
/// server (or an HTTP answer already reduced to a JSON-RPC outcome).
#[must_use]
pub fn classify_probe(
    outcome: &ProbeOutcome<'_>,
    probed: &str,
    policy: &VersionPolicy,
) -> ProbeVerdict {
    let legacy = |restart| match policy.newest(Era::Legacy) {
        Some(version) => ProbeVerdict::Legacy { version, restart },
        None => ProbeVerdict::NoCommonVersion,
    };
    match outcome {
        ProbeOutcome::Timeout => legacy(false),
        ProbeOutcome::ProcessExited => legacy(true),
        ProbeOutcome::Result(raw) => {
            let Ok(shape) = serde_json::from_str::<DiscoverShape<'_>>(raw) else {
                return legacy(false);
            };
            let (Some(list), Some(_)) = (shape.supported_versions, shape.capabilities) else {
                return legacy(false);
            };
            if shape.result_type.is_some_and(|t| t != "complete") {
                return legacy(false);
            }
            let list: Vec<&str> = list.iter().map(|v| v.as_ref()).collect();
            classify_version_list(&list, probed, policy, true)
        }
        ProbeOutcome::Error(e) => {
            if e.code == codes::UNSUPPORTED_PROTOCOL_VERSION {
                match e.supported_versions() {
                    Some(list) if !list.is_empty() => {
                        classify_version_list(&list, probed, policy, false)
                    }
                    _ => legacy(false),
                }
            } else if codes::is_modern_request_error(e.code) {
                ProbeVerdict::ModernRequestError((*e).clone())
            } else {
                legacy(false)
            }
        }
    }
}

fn classify_version_list(
    list: &[&str],
    probed: &str,
    policy: &VersionPolicy,
    answered: bool,
) -> ProbeVerdict {
    if let Some(version) = policy.best_of(list.iter().copied(), Era::Modern) {
        return if answered || version.as_str() == probed {
            // A discover result is an answer in itself; a -32022 that lists the version we
            // asked for is contradictory, so take the server at its word once.
            ProbeVerdict::Modern { version }
        } else {
            ProbeVerdict::RetryModern { version }
        };
    }
    match policy.best_of(list.iter().copied(), Era::Legacy) {
        Some(version) => ProbeVerdict::Legacy {
            version,
            restart: false,
        },
        None => match policy.newest(Era::Legacy) {
            // No overlap: a legacy server may still counter-offer in initialize.
            Some(version) => ProbeVerdict::Legacy {
                version,
                restart: false,
            },
            None => ProbeVerdict::NoCommonVersion,
        },
    }
}

/// What came back for a `server/discover` probe sent over Streamable HTTP.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum HttpProbeOutcome<'a> {
    /// An HTTP response. `message` is the JSON-RPC message of the body (for an SSE body:
    /// the data of its first message event), `None` when the body is empty or not JSON-RPC.
    Response {
        /// The status code.
        status: u16,
        /// The decoded JSON-RPC message, if any.
        message: Option<&'a crate::jsonrpc::Response>,
    },
    /// No answer in time.
    Timeout,
    /// The connection failed.
    NetworkError,
}

/// The verdict on an HTTP probe: the stdio verdicts plus the cases that are not era
/// evidence at all.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum HttpProbeVerdict {
    /// A verdict about the era.
    Era(ProbeVerdict),
    /// 401: authorise, then probe again.
    AuthRequired,
    /// Not era evidence (403, 5xx, timeouts, network errors, other statuses): surface a
    /// typed error and cache nothing.
    Error,
}

/// Classifies the answer to a `server/discover` probe sent over HTTP.
#[must_use]
pub fn classify_http_probe(
    outcome: &HttpProbeOutcome<'_>,
    probed: &str,
    policy: &VersionPolicy,
) -> HttpProbeVerdict {
    let legacy = || match policy.newest(Era::Legacy) {
        Some(version) => HttpProbeVerdict::Era(ProbeVerdict::Legacy {
            version,
            restart: false,
        }),
        None => HttpProbeVerdict::Era(ProbeVerdict::NoCommonVersion),
    };
    let (status, message) = match outcome {
        HttpProbeOutcome::Timeout | HttpProbeOutcome::NetworkError => {
            return HttpProbeVerdict::Error;
        }
        HttpProbeOutcome::Response { status, message } => (*status, *message),
    };
    match status {
        200..=299 => match message.map(|m| &m.outcome) {
            Some(Ok(raw)) => HttpProbeVerdict::Era(classify_probe(
                &ProbeOutcome::Result(raw.get()),
                probed,
                policy,
            )),
            Some(Err(e)) => {
                HttpProbeVerdict::Era(classify_probe(&ProbeOutcome::Error(e), probed, policy))
            }
            None => legacy(),
        },
        401 => HttpProbeVerdict::AuthRequired,
        400 | 404 | 405 => match message.map(|m| &m.outcome) {
            Some(Err(e))
                if codes::is_modern_request_error(e.code)
                    && (e.code != codes::UNSUPPORTED_PROTOCOL_VERSION
                        || e.supported_versions().is_some_and(|l| !l.is_empty())) =>
            {
                HttpProbeVerdict::Era(classify_probe(&ProbeOutcome::Error(e), probed, policy))
            }
            _ => legacy(),
        },
        _ => HttpProbeVerdict::Error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_strings_round_trip() {
        for v in ProtocolVersion::ALL {
            assert_eq!(ProtocolVersion::parse(v.as_str()), Some(v));
        }
        assert_eq!(ProtocolVersion::parse("2027-01-01"), None);
        assert_eq!(ProtocolVersion::V2025_11_25.era(), Era::Legacy);
        assert_eq!(ProtocolVersion::V2026_07_28.era(), Era::Modern);
    }

    #[test]
    fn old_versions_need_opt_in() {
        let p = VersionPolicy::default();
        assert!(!p.accepts(ProtocolVersion::V2025_03_26));
        assert!(
            p.with_pre_2025_06_versions()
                .accepts(ProtocolVersion::V2025_03_26)
        );
    }
}
