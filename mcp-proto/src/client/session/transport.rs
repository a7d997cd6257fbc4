//! Hooks for message-oriented transports (Streamable HTTP): failures below JSON-RPC,
//! session expiry, and cancellation by aborting an exchange.

use crate::Instant;

use super::{CallError, CallId, CloseReason, HttpFailure, Phase, ProtocolVersion, Session, State};
use crate::jsonrpc::Response;
use crate::version::{Era, HttpProbeOutcome, HttpProbeVerdict, classify_http_probe};

impl Session {
    /// The method and params of request `rpc_id` as the caller gave them (`None` params
    /// for the handshake's own requests), so a transport need not parse the message.
    pub(crate) fn request_info(
        &self,
        rpc_id: i64,
    ) -> Option<(&str, Option<&serde_json::Map<String, serde_json::Value>>)> {
        if let Some(call) = self.by_rpc.get(&rpc_id).and_then(|c| self.calls.get(c)) {
            if let Some((method, params)) = call.task.as_ref().and_then(|t| t.wire()) {
                return Some((method, Some(params)));
            }
            return Some((&call.request.method, Some(&call.request.params)));
        }
        if let Some((_, method, params)) = self.detached.iter().find(|(r, _, _)| *r == rpc_id) {
            return Some((method, Some(params)));
        }
        match self
            .handshake
            .as_ref()
            .filter(|h| h.rpc_id == rpc_id)?
            .phase
        {
            Phase::Probe { .. } => Some(("server/discover", None)),
            Phase::Initialize { .. } => Some(("initialize", None)),
        }
    }

    /// When request `rpc_id` is given up: its call's deadline, or the handshake's.
    pub(crate) fn deadline_of(&self, rpc_id: i64) -> Option<Instant> {
        if let Some(c) = self.by_rpc.get(&rpc_id).and_then(|c| self.calls.get(c)) {
            return c.deadline;
        }
        let handshake = self.handshake.as_ref().filter(|h| h.rpc_id == rpc_id);
        handshake.map(|h| h.deadline)
    }

    /// The call whose current request is `rpc_id`.
    /// Whether call `id` has not completed yet.
    pub(crate) fn is_running(&self, id: CallId) -> bool {
        self.calls.contains_key(&id)
    }

    pub(crate) fn call_of(&self, rpc_id: i64) -> Option<CallId> {
        self.by_rpc.get(&rpc_id).copied()
    }

    /// Sends the request `rpc_id` again under a new id, when the server refused it
    /// without running it (a header mismatch). Only a call's first request, with no
    /// input round or page behind it, can be rebuilt exactly. True when sent again.
    pub(crate) fn resend(&mut self, now: Instant, rpc_id: i64) -> bool {
        let Some(call) = self.by_rpc.get(&rpc_id).copied() else {
            return false;
        };
        let Some(c) = self.calls.get(&call) else {
            return false;
        };
        if c.rounds > 0 || c.pages > 0 || c.request_state.is_some() || c.task.is_some() {
            return false;
        }
        let deadline = c.deadline;
        self.by_rpc.remove(&rpc_id);
        super::remember(&mut self.ignored_ids, rpc_id);
        self.send_call(now, call);
        // The same operation: its deadline does not move.
        if let Some(c) = self.calls.get_mut(&call) {
            c.deadline = deadline;
        }
        true
    }

    /// Whether request `rpc_id` (a call or the handshake) still waits for its answer.
    pub(crate) fn is_awaiting(&self, rpc_id: i64) -> bool {
        self.by_rpc.contains_key(&rpc_id) || self.is_handshake(rpc_id)
    }

    /// Whether `rpc_id` is the request of the handshake (the probe or `initialize`).
    pub(crate) fn is_handshake(&self, rpc_id: i64) -> bool {
        self.handshake.as_ref().is_some_and(|h| h.rpc_id == rpc_id)
    }

    /// Fails the call whose request `rpc_id` could not be sent.
    pub(crate) fn fail_request(&mut self, rpc_id: i64, error: CallError) {
        if let Some(call) = self.by_rpc.remove(&rpc_id) {
            if let Some(c) = self.calls.get_mut(&call) {
                c.rpc_id = None;
            }
            self.complete(call, Err(error));
        } else if self.is_handshake(rpc_id) {
            self.handshake = None;
            let reason = match error {
                CallError::Authorization(e) => CloseReason::Authorization(e),
                other => CloseReason::Negotiation(other.to_string()),
            };
            self.close_with(reason);
        }
    }

    /// The next JSON-RPC id whose HTTP exchange should be aborted.
    pub(crate) fn poll_abort(&mut self) -> Option<i64> {
        self.aborts.pop_front()
    }

    /// The protocol version for the `MCP-Protocol-Version` header: the negotiated one, or
    /// during the probe the version being probed.
    pub(crate) fn header_version(&self) -> Option<ProtocolVersion> {
        match self.state {
            State::Ready(_, v) => Some(v),
            _ => match self.handshake.as_ref().map(|h| h.phase) {
                Some(Phase::Probe { version, .. }) => Some(version),
                _ => None,
            },
        }
    }

    /// The HTTP exchange carrying request `rpc_id` ended without a JSON-RPC answer.
    /// `status` is `None` for network errors and timeouts; `response` is the JSON-RPC
    /// message of the body, when it had one.
    pub(crate) fn handle_http_failure(
        &mut self,
        now: Instant,
        rpc_id: i64,
        mut failure: HttpFailure,
        challenge: Option<String>,
        response: Option<Response>,
    ) {
        let status = failure.status;
        failure.error = response.as_ref().and_then(|r| r.outcome.clone().err());
        if let Some(h) = &self.handshake
            && h.rpc_id == rpc_id
        {
            let phase = h.phase;
            match phase {
                Phase::Probe { version, retried } => {
                    let outcome = match status {
                        Some(status) => HttpProbeOutcome::Response {
                            status,
                            message: response.as_ref(),
                        },
                        None => HttpProbeOutcome::NetworkError,
                    };
                    let verdict =
                        classify_http_probe(&outcome, version.as_str(), &self.config.versions);
                    self.handshake = None;
                    match verdict {
                        HttpProbeVerdict::Era(v) => {
                            let outcome = match failure.error.clone() {
                                Some(e) => Err(e),
                                None => Err(crate::jsonrpc::ErrorObject::new(0, "http")),
                            };
                            self.act_on_verdict(now, v, retried, outcome);
                        }
                        HttpProbeVerdict::AuthRequired => {
                            self.close_with(CloseReason::AuthRequired { challenge });
                        }
                        _ => self.close_with(CloseReason::Http(failure)),
                    }
                }
                Phase::Initialize { .. } => {
                    if self.reprobe_after_stale_verdict(now, failure.error.as_ref(), status) {
                        return;
                    }
                    self.handshake = None;
                    if status == Some(401) {
                        self.close_with(CloseReason::AuthRequired { challenge });
                    } else {
                        self.close_with(CloseReason::Http(failure));
                    }
                }
            }
            return;
        }
        let Some(call) = self.by_rpc.remove(&rpc_id) else {
            return;
        };
        if let Some(c) = self.calls.get_mut(&call) {
            c.rpc_id = None;
        }
        let listen = self
            .calls
            .get(&call)
            .is_some_and(|c| c.request.method == super::request::LISTEN);
        if listen && status.is_none() {
            super::remember(&mut self.ignored_ids, rpc_id);
            if self.reconnect_subscription(now, call) {
                return;
            }
        }
        if (status.is_none() || status.is_some_and(|s| s >= 500))
            && self.retry_task_poll(now, call, rpc_id)
        {
            return;
        }
        self.complete(call, Err(CallError::Http(failure)));
    }

    /// The legacy session is gone (HTTP 404 on a request carrying its id): a fresh
    /// `initialize` starts a new session. The calls whose requests never ran
    /// (`never_ran`: the one that drew the 404, since the server did not know the
    /// session; those waiting out a busy server's `Retry-After`) are sent again on the
    /// new session, once; a second expiry fails them. So are the other calls
    /// in flight whose requests are harmless to repeat (listings, reads: see
    /// [`repeatable_method`](super::request::repeatable_method); not the task methods, whose
    /// tasks belong to the old session). The requests of `waiting` (JSON-RPC ids) wait
    /// for their own answer ([`Session::handle_refused_on_replaced_session`] when it is a `404`).
    /// The rest fail with [`CallError::SessionExpired`]: whether they ran cannot be
    /// known, and a call is never run twice behind the caller's back. Calls not yet
    /// written wait for the new session.
    pub(crate) fn handle_session_expired(
        &mut self,
        now: Instant,
        never_ran: &[i64],
        waiting: &[i64],
    ) {
        let State::Ready(Era::Legacy, version) = self.state else {
            return;
        };
        let never_ran: std::collections::BTreeSet<CallId> = never_ran
            .iter()
            .filter_map(|rpc| self.by_rpc.get(rpc).copied())
            .collect();
        let mut again: Vec<CallId> = self
            .calls
            .iter()
            .filter(|(id, c)| {
                let method = c.request.method.as_str();
                let read = super::request::repeatable_method(method)
                    && !method.starts_with("tasks/")
                    && c.task.is_none();
                c.rpc_id.is_some() && !c.resent_on_new_session && (read || never_ran.contains(id))
            })
            .map(|(id, _)| *id)
            .collect();
        again.sort_unstable();
        for id in again {
            if let Some(c) = self.calls.get_mut(&id)
                && let Some(rpc) = c.rpc_id.take()
            {
                c.resent_on_new_session = true;
                // A listing starts over: cursors are not kept across sessions (2025
                // pagination), nor are the old session's pages.
                c.cursor = None;
                c.items = Vec::new();
                c.item_bytes = 0;
                c.pages = 0;
                self.by_rpc.remove(&rpc);
                super::remember(&mut self.ignored_ids, rpc);
            }
        }
        self.fail_in_flight_but(&CallError::SessionExpired, waiting);
        // A new session numbers its requests afresh.
        self.answered_server_ids.clear();
        // Its requests for input are void: the calls sent again keep the time held.
        self.resume_deadlines(now);
        self.server = None;
        self.state = State::Connecting;
        // A new session is a new connecting operation, with a deadline of its own.
        self.connect_deadline = now + self.config.limits.connect_timeout;
        self.send_initialize(now, version);
    }

    /// A request of a legacy session already replaced was refused: a `404` of its own,
    /// or a busy server's wait that outlived its session (or ended while the new one is
    /// being made). It never ran: its call is sent on the new session, unless it was sent
    /// again once already.
    pub(crate) fn handle_refused_on_replaced_session(&mut self, now: Instant, rpc: i64) {
        let Some(id) = self.by_rpc.remove(&rpc) else {
            return;
        };
        super::remember(&mut self.ignored_ids, rpc);
        let Some(c) = self.calls.get_mut(&id) else {
            return;
        };
        c.rpc_id = None;
        if c.resent_on_new_session {
            self.complete(id, Err(CallError::SessionExpired));
            return;
        }
        c.resent_on_new_session = true;
        // Sent now if the new session is ready, else with the calls it waits for.
        if matches!(self.state, State::Ready(..)) {
            self.send_call(now, id);
        }
    }
}
