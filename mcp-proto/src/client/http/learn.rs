//! A `tools/call` needs the tool's `x-mcp-header` declarations before it can be sent
//! over 2026-07-28 HTTP (its `Mcp-Param-*` headers come from them). When they are not
//! known (a fresh client that never listed tools), the call waits while the machine lists
//! the tools itself; when the server refuses a call with `-32020` (header mismatch), the
//! listing is refreshed and the call sent again, once.
//!
//! The internal listing is an ordinary call of the session whose completion nobody sees:
//! its pages go through the same tool inspection as a caller's listing. A fresh
//! `tools/list` in the session's list cache (2026 caching hints) stands in for it, and
//! a `-32020` drops that cached listing along with the declarations.

use serde_json::Value;

use super::HttpLink;
use crate::Instant;
use crate::client::session::{OutKind, Outgoing};
use crate::client::{CallId, CallRequest, Event, IdSet};
use crate::jsonrpc::codes;
use crate::version::Era;

/// The listing in progress and the calls waiting for it.
#[derive(Debug, Default)]
pub(super) struct Learning {
    /// The internal `tools/list` call, while it runs.
    listing: Option<CallId>,
    /// `tools/call` messages waiting for it.
    waiting: Vec<Outgoing>,
    /// A complete listing arrived since the declarations were last invalidated: a tool
    /// still unknown is not in it, and its calls go without headers.
    pub(super) listed: bool,
    /// Calls already sent again after a `-32020`: never twice.
    retried: IdSet<CallId>,
}

impl HttpLink {
    /// True when `msg` must wait for the tools to be listed (and the listing is started).
    pub(super) fn hold_for_tool_headers(
        &mut self,
        now: Instant,
        msg: Outgoing,
    ) -> Option<Outgoing> {
        let OutKind::Request(rpc) = msg.kind else {
            return Some(msg);
        };
        if self.era() != Some(Era::Modern) || self.learning.listed {
            return Some(msg);
        }
        let tool = match self.client.request_info(rpc) {
            Some(("tools/call", Some(params))) => params.get("name").and_then(Value::as_str),
            _ => None,
        };
        let Some(tool) = tool else {
            return Some(msg);
        };
        if self.tool_headers.contains_key(tool) || self.excluded_tools.contains_key(tool) {
            return Some(msg);
        }
        // A fresh listing in the list cache answers without asking the server.
        if let Some(items) = self.client.cached_items(now, "tools/list") {
            let items = items.to_vec();
            self.learn_tools(items);
            self.learning.listed = true;
            return Some(msg);
        }
        self.learning.waiting.push(msg);
        if self.learning.listing.is_none() {
            match self.client.call(now, CallRequest::list_tools()) {
                Ok(id) => self.learning.listing = Some(id),
                // No room for one more call: send what waits without headers.
                Err(_) => return self.learning.waiting.pop(),
            }
        }
        None
    }

    /// Watches the session's events: the end of the internal listing releases the calls
    /// that waited for it. False when the event is the listing's own and is not passed on.
    pub(super) fn learning_event(&mut self, now: Instant, ev: &Event) -> bool {
        let Event::CallCompleted { call, outcome } = ev else {
            return true;
        };
        if self.learning.listing != Some(*call) {
            return true;
        }
        self.learning.listing = None;
        // Even a failed listing releases the calls (the server will say what it lacks),
        // and is not tried again for every call that follows.
        let _ = outcome;
        self.learning.listed = true;
        for msg in std::mem::take(&mut self.learning.waiting) {
            self.send_message(now, msg);
        }
        false
    }

    /// A `tools/call` drew HTTP 400 with `-32020`: if it is the call's first, refresh the
    /// listing and send it again. True when it was sent again.
    pub(super) fn retry_after_header_mismatch(
        &mut self,
        now: Instant,
        rpc: i64,
        status: Option<u16>,
        code: Option<i64>,
    ) -> bool {
        if status != Some(400) || code != Some(codes::HEADER_MISMATCH) {
            return false;
        }
        if self.era() != Some(Era::Modern) {
            return false;
        }
        let tool = match self.client.request_info(rpc) {
            Some(("tools/call", Some(params))) => params
                .get("name")
                .and_then(Value::as_str)
                .map(str::to_owned),
            _ => None,
        };
        let Some(tool) = tool else {
            return false;
        };
        let Some(call) = self.client.call_of(rpc) else {
            return false;
        };
        if !self.learning.retried.insert(call) {
            return false;
        }
        self.tool_headers.remove(&tool);
        self.learning.listed = false;
        // The server says the declarations are stale: so is any cached listing.
        self.client.invalidate_cache("tools/list");
        self.client.resend(now, rpc)
    }

    /// A call ended: it needs no retry record any more.
    pub(super) fn forget_call(&mut self, call: CallId) {
        self.learning.retried.remove(&call);
    }
}
