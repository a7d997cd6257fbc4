//! Connecting: the `server/discover` probe, the `initialize` fallback, and the verdicts
//! in between.

use crate::Instant;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::{
    CloseReason, Event, Handshake, HttpFailure, OutKind, Phase, Session, State, Transport,
    remember, request,
};
use crate::jsonrpc::{self, ErrorObject, RequestId};
use crate::model::{Implementation, ServerDetails};
use crate::version::{Era, EraMode, ProbeOutcome, ProbeVerdict, ProtocolVersion, classify_probe};

#[derive(Deserialize)]
struct DiscoverResult {
    #[serde(rename = "supportedVersions", default)]
    supported_versions: Vec<String>,
    #[serde(default)]
    capabilities: Value,
    #[serde(default)]
    instructions: Option<String>,
    #[serde(rename = "_meta", default)]
    meta: Option<DiscoverMeta>,
}

#[derive(Deserialize)]
struct DiscoverMeta {
    #[serde(rename = "io.modelcontextprotocol/serverInfo", default)]
    server_info: Option<Implementation>,
}

#[derive(Deserialize)]
struct InitializeResult {
    #[serde(rename = "protocolVersion")]
    protocol_version: String,
    #[serde(default)]
    capabilities: Value,
    #[serde(rename = "serverInfo", default)]
    server_info: Option<Implementation>,
    #[serde(default)]
    instructions: Option<String>,
}

impl Session {
    pub(super) fn start(&mut self, now: Instant) {
        let known_legacy = self
            .config
            .known_era
            .filter(|(era, v)| *era == Era::Legacy && self.config.versions.accepts(*v));
        match (self.config.era_mode, known_legacy) {
            // The verdict says which era, not which version: `initialize` offers the
            // newest legacy version as ever (the server counter-offers if it must), so a
            // version the origin once settled on does not stick to it for good.
            (EraMode::Auto, Some(_)) => {
                self.tentative_legacy = true;
                self.send_initialize(now, self.newest_legacy());
            }
            (EraMode::Legacy, _) => self.send_initialize(now, self.newest_legacy()),
            _ => self.send_probe(now, ProtocolVersion::LATEST_MODERN, false),
        }
    }

    fn set_envelope(&mut self, version: ProtocolVersion) {
        let caps = self.config.capabilities.to_json(version);
        let info = serde_json::to_value(&self.config.client_info).unwrap_or(Value::Null);
        self.envelope = request::modern_envelope(version.as_str(), &caps, &info);
        let caps = self
            .config
            .capabilities
            .clone()
            .with_tasks()
            .to_json(version);
        self.task_envelope = request::modern_envelope(version.as_str(), &caps, &info);
    }

    /// The newest legacy version the client accepts, for an `initialize` that follows no
    /// counter-offer.
    pub(super) fn newest_legacy(&self) -> ProtocolVersion {
        self.config
            .versions
            .newest(Era::Legacy)
            .unwrap_or(ProtocolVersion::LATEST_LEGACY)
    }

    /// The cached legacy verdict was stale: the server refused `initialize` the 2026
    /// way. Probe as if nothing were known. True when that is what happened.
    pub(super) fn reprobe_after_stale_verdict(
        &mut self,
        now: Instant,
        refusal: Option<&ErrorObject>,
        status: Option<u16>,
    ) -> bool {
        let moved_on = status == Some(400) && refusal.is_some_and(|e| self.refusal_is_modern(e));
        if !self.tentative_legacy || !moved_on {
            return false;
        }
        self.tentative_legacy = false;
        self.reprobed = true;
        self.handshake = None;
        self.send_probe(now, ProtocolVersion::LATEST_MODERN, false);
        true
    }

    /// Whether a refusal of `initialize` says the server is modern: a 2026 request error,
    /// or the 2025 way of refusing a version (`-32602` whose `data.supported` lists a
    /// modern version the client speaks, as a modern-only server answers a legacy
    /// `initialize`).
    fn refusal_is_modern(&self, e: &ErrorObject) -> bool {
        jsonrpc::codes::is_modern_request_error(e.code)
            || (e.code == jsonrpc::codes::INVALID_PARAMS
                && e.supported_versions().is_some_and(|list| {
                    (self.config.versions)
                        .best_of(list, crate::version::Era::Modern)
                        .is_some()
                }))
    }

    pub(super) fn send_probe(&mut self, now: Instant, version: ProtocolVersion, retried: bool) {
        self.set_envelope(version);
        let rpc_id = self.alloc_rpc_id();
        let mut params = Vec::new();
        request::write_params(
            &mut params,
            &self.envelope,
            None,
            None,
            &Default::default(),
            &[],
        );
        let params = RawValue::from_string(String::from_utf8(params).unwrap_or_default()).ok();
        let mut out = Vec::new();
        jsonrpc::encode_request(
            &mut out,
            &RequestId::Number(rpc_id),
            "server/discover",
            params.as_deref(),
        );
        self.push_out(out, OutKind::Request(rpc_id));
        // A pinned modern client is not deciding a fallback, and over HTTP silence is an
        // outage, not legacy evidence (the connection may still be opening): both give
        // the probe the full handshake time rather than the short probe window.
        // Deciding over stdio, where silence is legacy evidence, the probe takes at most
        // half of what is left of connecting, so that a short connect budget still leaves
        // the `initialize` fallback its time.
        let wait = if self.config.era_mode == EraMode::Modern || self.transport == Transport::Http {
            self.config.limits.initialize_timeout
        } else {
            let left = self.connect_deadline.saturating_duration_since(now);
            self.config.limits.probe_timeout.min(left / 2)
        };
        self.handshake = Some(Handshake {
            rpc_id,
            deadline: (now + wait).min(self.connect_deadline),
            phase: Phase::Probe { version, retried },
        });
    }

    pub(super) fn send_initialize(&mut self, now: Instant, version: ProtocolVersion) {
        let rpc_id = self.alloc_rpc_id();
        let params = serde_json::json!({
            "protocolVersion": version.as_str(),
            "capabilities": self.config.capabilities.to_json(version),
            "clientInfo": self.config.client_info,
        });
        let mut out = Vec::new();
        jsonrpc::encode_request(
            &mut out,
            &RequestId::Number(rpc_id),
            "initialize",
            Some(&jsonrpc::to_raw(&params)),
        );
        self.push_out(out, OutKind::Request(rpc_id));
        self.handshake = Some(Handshake {
            rpc_id,
            deadline: (now + self.config.limits.initialize_timeout).min(self.connect_deadline),
            phase: Phase::Initialize { version },
        });
    }

    /// The `initialize` in flight was refused by a transport that does not carry it
    /// (HTTP+SSE detection): it never ran, so it is sent again under a new id with the
    /// same version, and a fresh deadline within the connect deadline. False when no
    /// `initialize` is in flight.
    pub(crate) fn restart_initialize(&mut self, now: Instant) -> bool {
        let Some(Handshake {
            rpc_id,
            phase: Phase::Initialize { version },
            ..
        }) = self.handshake
        else {
            return false;
        };
        remember(&mut self.ignored_ids, rpc_id);
        self.handshake = None;
        self.tentative_legacy = false;
        self.send_initialize(now, version);
        true
    }

    /// The handshake's request was refused for want of authorization and waits on the
    /// flow: the server answered, so the probe's short window no longer applies; the
    /// handshake keeps the connect deadline, the one bound of the whole operation.
    pub(crate) fn handshake_waits_on_authorization(&mut self) {
        if let Some(h) = &mut self.handshake {
            h.deadline = self.connect_deadline;
        }
    }

    /// When the handshake in flight gives up.
    pub(crate) fn handshake_deadline(&self) -> Option<Instant> {
        self.handshake.as_ref().map(|h| h.deadline)
    }

    /// Whether a response id belongs to the handshake in progress.
    pub(super) fn is_handshake_id(&self, id: Option<&RequestId>) -> bool {
        match (&self.handshake, id) {
            (Some(h), Some(RequestId::Number(n))) => h.rpc_id == *n,
            // An id-less error while only the handshake is in flight answers it (a server
            // that could not parse our first line, say).
            (Some(_), None) => self.by_rpc.is_empty(),
            _ => false,
        }
    }

    pub(super) fn handle_handshake_response(
        &mut self,
        now: Instant,
        outcome: Result<Box<RawValue>, ErrorObject>,
    ) {
        let Some(h) = self.handshake.take() else {
            return;
        };
        match h.phase {
            Phase::Probe { version, retried } => {
                let probe = match &outcome {
                    Ok(raw) => ProbeOutcome::Result(raw.get()),
                    Err(e) => ProbeOutcome::Error(e),
                };
                let verdict = classify_probe(&probe, version.as_str(), &self.config.versions);
                self.act_on_verdict(now, verdict, retried, outcome);
            }
            Phase::Initialize { version } => match outcome {
                // `initialize` went out on a guess (a probe that went unanswered, a cached
                // verdict) and the server refused it the 2026 way: it is modern after
                // all, only slow to start. Probe again, once, within the same deadline.
                Err(e) if self.tentative_legacy && self.refusal_is_modern(&e) => {
                    self.tentative_legacy = false;
                    self.reprobed = true;
                    self.send_probe(now, ProtocolVersion::LATEST_MODERN, false);
                }
                Err(e) => self.close_with(CloseReason::Refused(e)),
                Ok(raw) => self.finish_initialize(now, version, &raw),
            },
        }
    }

    pub(super) fn act_on_verdict(
        &mut self,
        now: Instant,
        verdict: ProbeVerdict,
        retried: bool,
        outcome: Result<Box<RawValue>, ErrorObject>,
    ) {
        match verdict {
            ProbeVerdict::Modern { version } => match outcome {
                Ok(raw) => self.finish_discover(now, version, &raw),
                // A -32022 naming the version we asked for: ask again once.
                Err(_) if !retried => self.send_probe(now, version, true),
                Err(e) => self.close_with(CloseReason::Refused(e)),
            },
            ProbeVerdict::RetryModern { version } if !retried => {
                self.send_probe(now, version, true);
            }
            ProbeVerdict::RetryModern { version } => self.close_with(CloseReason::Negotiation(
                format!("the server keeps refusing version {version}"),
            )),
            ProbeVerdict::Legacy { version, restart } => {
                if self.config.era_mode == EraMode::Modern {
                    self.close_with(CloseReason::LegacyServer);
                } else if restart {
                    self.state = State::AwaitingRestart;
                    self.restart_wanted = true;
                } else {
                    self.send_initialize(now, version);
                }
            }
            ProbeVerdict::ModernRequestError(e) => self.close_with(CloseReason::Refused(e)),
            _ => self.close_with(CloseReason::Negotiation(
                "no protocol version in common with the server".into(),
            )),
        }
    }

    fn finish_discover(&mut self, now: Instant, version: ProtocolVersion, raw: &RawValue) {
        let Ok(d) = serde_json::from_str::<DiscoverResult>(raw.get()) else {
            self.close_with(CloseReason::Negotiation(
                "malformed server/discover result".into(),
            ));
            return;
        };
        self.set_envelope(version);
        self.server = Some(ServerDetails {
            protocol_version: version,
            server_info: d.meta.and_then(|m| m.server_info),
            capabilities: d.capabilities,
            instructions: d.instructions,
            supported_versions: d.supported_versions,
        });
        self.become_ready(now, Era::Modern, version);
    }

    fn finish_initialize(&mut self, now: Instant, asked: ProtocolVersion, raw: &RawValue) {
        let init = match serde_json::from_str::<InitializeResult>(raw.get()) {
            Ok(i) => i,
            Err(e) => {
                self.close_with(CloseReason::Negotiation(format!(
                    "malformed initialize result: {e}"
                )));
                return;
            }
        };
        let version = match ProtocolVersion::parse(&init.protocol_version) {
            Some(v) if v.era() == Era::Legacy && self.config.versions.accepts(v) => v,
            _ => {
                self.close_with(CloseReason::Negotiation(format!(
                    "asked for {asked}, the server offered {:?}, which this client does not accept",
                    init.protocol_version
                )));
                return;
            }
        };
        let mut out = Vec::new();
        jsonrpc::encode_notification(&mut out, "notifications/initialized", None);
        self.push_out(out, OutKind::Notification("notifications/initialized"));
        self.server = Some(ServerDetails {
            protocol_version: version,
            server_info: init.server_info,
            capabilities: init.capabilities,
            instructions: init.instructions,
            supported_versions: Vec::new(),
        });
        self.become_ready(now, Era::Legacy, version);
    }

    fn become_ready(&mut self, now: Instant, era: Era, version: ProtocolVersion) {
        self.state = State::Ready(era, version);
        self.settled = Some((era, version));
        self.tentative_legacy = false;
        if let Some(details) = &self.server {
            self.events
                .push_back(Event::Connected(Box::new(details.clone())));
        }
        let mut queued: Vec<_> = self
            .calls
            .iter()
            .filter(|(_, c)| c.rpc_id.is_none() && c.pending.is_empty())
            .map(|(id, _)| *id)
            .collect();
        queued.sort_unstable();
        for id in queued {
            self.send_call(now, id);
        }
    }

    pub(super) fn handle_handshake_timeout(&mut self, now: Instant) {
        let Some(h) = self.handshake.take() else {
            return;
        };
        remember(&mut self.ignored_ids, h.rpc_id);
        if now >= self.connect_deadline {
            // The operation as a whole is out of time, whatever step it was at.
            let total = self.config.limits.connect_timeout;
            self.close_with(CloseReason::ConnectTimeout(total));
            return;
        }
        match h.phase {
            Phase::Probe { .. } if self.transport == Transport::Http => {
                // On HTTP, silence is an outage, not a legacy server. The message names
                // the limit that ran out (see `send_probe`).
                self.close_with(CloseReason::Http(HttpFailure::new(
                    None,
                    None,
                    format!(
                        "no answer to server/discover within {:?} (Limits::initialize_timeout)",
                        self.config.limits.initialize_timeout
                    ),
                )));
            }
            Phase::Probe { version, retried } if self.config.era_mode == EraMode::Auto => {
                let verdict = classify_probe(
                    &ProbeOutcome::Timeout,
                    version.as_str(),
                    &self.config.versions,
                );
                let outcome = Err(ErrorObject::new(0, "probe timed out"));
                self.act_on_verdict(now, verdict, retried, outcome);
                // Silence is a guess, not a verdict: a refusal of the `initialize` that
                // follows may still say the server is modern.
                self.tentative_legacy = !self.reprobed
                    && matches!(
                        &self.handshake,
                        Some(Handshake {
                            phase: Phase::Initialize { .. },
                            ..
                        })
                    );
            }
            _ => self.close_with(CloseReason::HandshakeTimeout(
                self.config.limits.initialize_timeout,
            )),
        }
    }

    pub(super) fn handle_probe_exit(&mut self, now: Instant) {
        let Some(h) = self.handshake.take() else {
            return;
        };
        if let Phase::Probe { version, retried } = h.phase {
            if self.config.era_mode == EraMode::Modern {
                self.close_with(CloseReason::ServerExited { truncated: 0 });
                return;
            }
            let verdict = classify_probe(
                &ProbeOutcome::ProcessExited,
                version.as_str(),
                &self.config.versions,
            );
            let outcome = Err(ErrorObject::new(0, "process exited"));
            self.act_on_verdict(now, verdict, retried, outcome);
        }
    }
}
