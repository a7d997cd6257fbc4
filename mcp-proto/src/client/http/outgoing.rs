//! Turning the protocol machine's messages into HTTP requests.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::Instant;

use serde_json::{Map, Value};

use super::authorize::{Parked, Replay};
use super::exchange::{Body, Exchange, PendingResume, Purpose, RequestMethod};
use super::nonce::NonceResent;
use super::{GetStream, HttpLink};
use crate::auth::Authorizer;
use crate::client::session::{OutKind, Outgoing, Session};
use crate::client::{CallError, Event, PeerError};
use crate::http::headers::{
    self, BorrowedHeader, LAST_EVENT_ID, MCP_PROTOCOL_VERSION, MCP_SESSION_ID,
};
use crate::http::xmcp::{InvalidAnnotation, ParamHeader};
use crate::http::{ACCEPT_JSON_AND_SSE, EndpointUrl, HeadRef, RequestError, ResponseReader};
use crate::version::Era;

impl HttpLink {
    /// Writes the head of a request to `url` (the MCP URL, or the HTTP+SSE endpoint):
    /// the headers every request carries, the authorization flow's (`managed`, from
    /// [`auth_headers`]), then what `extra` pushes. Nothing is copied: the head borrows
    /// the configuration's strings.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn write_head<'a>(
        &'a self,
        managed: &'a [(String, String)],
        method: &'a str,
        accept: &'static str,
        url: &'a EndpointUrl,
        extra: impl FnOnce(&mut HeadRef<'a>),
        content_length: Option<usize>,
        out: &mut Vec<u8>,
    ) -> Result<(), RequestError> {
        let mut head = self.head_start(managed, method, accept, url)?;
        extra(&mut head);
        head.write(content_length, out)
    }

    /// The part of [`HttpLink::write_head`] that does not depend on the message: the
    /// request line and the fields up to the caller's own headers.
    fn head_start<'a>(
        &'a self,
        managed: &'a [(String, String)],
        method: &'a str,
        accept: &'static str,
        url: &'a EndpointUrl,
    ) -> Result<HeadRef<'a>, RequestError> {
        let mut head = HeadRef::for_endpoint(method, url);
        head.push_own("Accept", accept);
        head.push("User-Agent", &self.config.user_agent);
        if managed.is_empty() {
            // Without a usable token of the flow's, its last one (a copy kept to tell
            // values apart) is not sent: only the configured header, before the flow
            // held tokens.
            if self.static_authorization
                && let Some(auth) = &self.config.authorization
            {
                head.push("Authorization", auth);
            }
        } else {
            for (name, value) in managed {
                head.push(name, value);
            }
        }
        if let Some(sid) = &self.session_id {
            head.push(MCP_SESSION_ID, sid);
        }
        for (name, value) in &self.config.headers {
            if is_written_by_client(name) {
                return Err(RequestError::ReservedHeader(name.clone()));
            }
            head.push(name, value);
        }
        Ok(head)
    }

    /// [`HttpLink::write_head`] of a message's `POST` to the MCP URL without headers of
    /// the authorization flow's: its start (request line, `Host`, `Accept`,
    /// `User-Agent`, `Authorization`, `Mcp-Session-Id`, the configured headers) is the
    /// same for every message until the `Authorization` value or the session changes,
    /// so it is written and checked once, kept in `start`, and copied. The same bytes,
    /// and the same error, as `write_head`.
    fn write_post_head<'a>(
        &'a self,
        start: &mut PostStart,
        extra: impl FnOnce(&mut HeadRef<'a>),
        content_length: usize,
        out: &mut Vec<u8>,
    ) -> Result<(), RequestError> {
        let authorization = self
            .config
            .authorization
            .as_deref()
            .filter(|_| self.static_authorization);
        let session = self.session_id.as_deref();
        if !start.written_for(authorization, session) {
            *start = PostStart::default();
            let head = self.head_start(&[], "POST", ACCEPT_JSON_AND_SSE, &self.config.url)?;
            let mut bytes = Vec::new();
            head.write_start(&mut bytes)?;
            *start = PostStart {
                bytes,
                authorization: authorization.map(str::to_owned),
                session: session.map(str::to_owned),
            };
        }
        let mut rest = HeadRef::continuing();
        extra(&mut rest);
        let before = out.len();
        out.extend_from_slice(&start.bytes);
        let written = rest.write(Some(content_length), out);
        if written.is_err() {
            out.truncate(before);
        }
        written
    }

    pub(super) fn new_exchange(
        &self,
        purpose: Purpose,
        rpc_id: Option<i64>,
        method: &str,
    ) -> Exchange {
        let deadline = match purpose {
            Purpose::Request { .. } | Purpose::Delete { .. } => None,
            Purpose::Notify | Purpose::Initialized | Purpose::Get { .. } | Purpose::SseStream => {
                Some(self.now + self.client.config().limits.request_timeout)
            }
        };
        Exchange {
            deadline,
            purpose,
            rpc_id,
            reader: ResponseReader::new(self.config.limits.clone(), method),
            head: None,
            body: Body::Unknown,
            had_session: self.session_id.is_some(),
            session_epoch: self.session_epoch,
            delivered: 0,
            resume_from: None,
            resume_digest: None,
            last_own: None,
            replay: None,
            settled: false,
            decided: false,
            generation: self.auth_generation,
            after_refusal: false,
            nonce_resent: false,
        }
    }

    /// POSTs one message of the protocol machine. What the headers need (method, tool
    /// name, arguments) comes from the machine's own record of the request, not from
    /// parsing the message again.
    pub(super) fn send_message(&mut self, now: Instant, msg: Outgoing) {
        let parked = Parked {
            msg,
            tries: 0,
            turned_away: 0,
            nonce_resent: NonceResent::NO,
            refused: None,
        };
        self.send_parked(now, parked);
    }

    /// Sends a message again (after an authorization, or a busy server's wait), or for
    /// the first time.
    pub(super) fn send_parked(&mut self, now: Instant, parked: Parked) {
        let Parked {
            msg,
            tries,
            turned_away,
            nonce_resent,
            refused,
        } = parked;
        if let OutKind::Cancel(rpc) = msg.kind
            && self.stale_cancels.contains(&rpc)
        {
            return;
        }
        let Some(msg) = self.hold_for_endpoint(msg) else {
            return;
        };
        if let Some(held) = &mut self.held {
            held.push_back(msg);
            return;
        }
        // A token known to be expired is refreshed before the message goes, when it
        // can be: the message waits for that flow as for one a `401` started.
        if let Some(refreshing) = self.auth_wait(now) {
            self.parked.push_back(Parked {
                msg,
                tries,
                turned_away,
                nonce_resent,
                refused,
            });
            if refreshing {
                self.client.handshake_waits_on_authorization();
                self.drive_auth(now);
            }
            return;
        }
        let Some(msg) = self.hold_for_tool_headers(now, msg) else {
            return;
        };
        let Outgoing { json, kind } = msg;
        if kind == OutKind::Response {
            // An answer to the server's own request must not grow a queue the server
            // does not take from (as over stdio): a server that asks faster than it
            // accepts the answers is cut off.
            let waiting = self.pool.waiting_bytes() + json.len();
            if waiting > self.client.config().limits.max_queued_output_bytes {
                self.client
                    .close_with(crate::client::CloseReason::PeerNotReading { waiting });
                return;
            }
        }
        // The method is borrowed from the machine's record of the request: what the
        // exchange needs of it is read now.
        let (rpc_id, method) = match kind {
            OutKind::Request(rpc) => match self.client.request_info(rpc) {
                Some((method, _)) => (Some(rpc), method),
                // The call ended while its request waited (held): nothing to send.
                None => return,
            },
            OutKind::Notification(method) => (None, method),
            OutKind::Cancel(_) => (None, "notifications/cancelled"),
            OutKind::Response => (None, ""),
        };
        let request_method = RequestMethod::of(method);
        let initialized = method == "notifications/initialized";
        let version = self.client.header_version();
        let modern = version.is_some_and(|v| v.era() == Era::Modern);
        let empty = Map::new();
        let mut modern_list = Vec::new();
        if modern {
            let version = version.map_or("", |v| v.as_str());
            let listed = (&self.client, &self.excluded_tools, &self.tool_headers);
            match modern_headers(listed, rpc_id, method, version, &empty) {
                Ok(list) => modern_list = list,
                Err(e) => {
                    if let Some(rpc) = rpc_id {
                        self.client.fail_request(rpc, e);
                    }
                    return;
                }
            }
        }
        let legacy_version = version.filter(|_| !modern).map(|v| v.as_str());
        let mut bytes = self.pool.head_buffer();
        // Where messages are POSTed: the endpoint on the old transport, else the URL;
        // borrowed, not cloned, beside the authorization flow's mutable borrow.
        let url = match self.sse.as_ref().and_then(|s| s.endpoint.as_ref()) {
            Some(endpoint) => endpoint,
            None => &self.config.url,
        };
        let managed = auth_headers(&mut self.auth, self.now, "POST", url);
        let to_mcp_url = std::ptr::eq(url, &self.config.url);
        let written = if managed.is_empty() && to_mcp_url {
            let mut start = std::mem::take(&mut self.post_start);
            let extra = |head: &mut _| message_fields(head, &modern_list, legacy_version);
            let written = self.write_post_head(&mut start, extra, json.len(), &mut bytes);
            self.post_start = start;
            written
        } else {
            self.write_head(
                &managed,
                "POST",
                ACCEPT_JSON_AND_SSE,
                url,
                |head| message_fields(head, &modern_list, legacy_version),
                Some(json.len()),
                &mut bytes,
            )
        };
        drop(modern_list);
        if let Err(e) = written {
            if let Some(rpc) = rpc_id {
                self.client
                    .fail_request(rpc, CallError::Unsendable(e.to_string()));
            } else {
                self.events
                    .push_back(Event::PeerError(PeerError::MessageUnsendable(e)));
            }
            return;
        }
        // Shared, not copied: the pool writes it, the exchange may send it again.
        let json = Arc::new(json);
        let replay = Replay {
            json: Arc::clone(&json),
            kind,
            tries,
            turned_away,
            nonce_resent,
            generation: self.auth_generation,
        };
        let purpose = if rpc_id.is_some() {
            Purpose::Request {
                method: request_method,
            }
        } else if initialized {
            self.held = Some(Default::default());
            Purpose::Initialized
        } else {
            Purpose::Notify
        };
        let _ = now;
        let mut x = self.new_exchange(purpose, rpc_id, "POST");
        x.nonce_resent = nonce_resent.holds(self.auth_generation);
        // A request may be sent again after a refusal or a busy server's wait; anything
        // else only after a refusal.
        x.replay = (rpc_id.is_some() || self.auth.is_some()).then_some(replay);
        let id = self.alloc_exchange();
        self.insert_exchange(id, x, (bytes, json));
    }

    /// Opens a GET stream: the server's own (`owed` empty) or a resumption, after an
    /// event id and the digest of that event's data when it was dispatched.
    /// A resumption whose request cannot be written (an event id that is no header
    /// value) is not dropped: what it owed fails, naming the reason.
    pub(super) fn open_get(&mut self, now: Instant, get: PendingResume) {
        // As a message: a token known to be expired is refreshed first, and the `GET`
        // waits for whatever flow runs.
        if let Some(refreshing) = self.auth_wait(now) {
            self.waiting_gets.push(get);
            if refreshing {
                self.drive_auth(now);
            }
            return;
        }
        let PendingResume {
            last_event_id,
            digest,
            owed,
            attempt,
            after_refusal,
            nonce_resent,
            ..
        } = get;
        let url = self.config.url.clone();
        let version = self.client.header_version();
        let mut bytes = Vec::new();
        let managed = auth_headers(&mut self.auth, self.now, "GET", &url);
        let accept = "text/event-stream";
        let written = self.write_head(
            &managed,
            "GET",
            accept,
            &url,
            |head| {
                if let Some(v) = version {
                    head.push_own(MCP_PROTOCOL_VERSION, v.as_str());
                }
                if let Some(last) = &last_event_id {
                    head.push(LAST_EVENT_ID, last);
                }
            },
            None,
            &mut bytes,
        );
        if let Err(e) = written {
            if owed.is_empty() {
                self.get_stream = GetStream::Unavailable;
            }
            let detail = format!("the event stream cannot be resumed: {e}");
            self.events
                .push_back(Event::PeerError(PeerError::MessageUnsendable(e)));
            self.fail_owed(now, &owed, None, &detail);
            return;
        }
        let mut x = self.new_exchange(Purpose::Get { owed, attempt }, None, "GET");
        x.resume_from = last_event_id;
        x.resume_digest = digest;
        x.after_refusal = after_refusal;
        x.nonce_resent = nonce_resent.holds(self.auth_generation);
        let id = self.alloc_exchange();
        self.insert_exchange(id, x, (bytes, Arc::default()));
    }

    /// `DELETE` of the legacy session, after a refresh of a token known to be expired
    /// (which it starts). A flow already running is not waited for: after
    /// [`HttpLink::close`] nothing answers a person's approval.
    pub(super) fn send_delete(&mut self, version: Option<crate::version::ProtocolVersion>) {
        let now = self.now;
        if self
            .auth
            .as_mut()
            .is_some_and(|a| a.refresh_before_request(now))
        {
            self.waiting_delete = Some(version);
            self.drive_auth(now);
            return;
        }
        self.write_delete(version);
    }

    /// `DELETE` of the legacy session, with the token held.
    pub(super) fn write_delete(&mut self, version: Option<crate::version::ProtocolVersion>) {
        self.write_delete_marked(version, false);
    }

    /// [`HttpLink::write_delete`], `nonce_resent` when it goes again with the DPoP nonce
    /// its refusal asked for.
    pub(super) fn write_delete_marked(
        &mut self,
        version: Option<crate::version::ProtocolVersion>,
        nonce_resent: bool,
    ) {
        let url = self.config.url.clone();
        let mut bytes = Vec::new();
        let managed = auth_headers(&mut self.auth, self.now, "DELETE", &url);
        let written = self.write_head(
            &managed,
            "DELETE",
            ACCEPT_JSON_AND_SSE,
            &url,
            |head| {
                if let Some(v) = version {
                    head.push_own(MCP_PROTOCOL_VERSION, v.as_str());
                }
            },
            None,
            &mut bytes,
        );
        if written.is_err() {
            return;
        }
        let mut x = self.new_exchange(Purpose::Delete { version }, None, "DELETE");
        x.nonce_resent = nonce_resent;
        let id = self.alloc_exchange();
        self.insert_exchange(id, x, (bytes, Arc::default()));
    }
}

/// The fields of a message's `POST` after the caller's own headers: `Content-Type`,
/// the 2026 header set or the legacy `MCP-Protocol-Version`.
fn message_fields<'a>(
    head: &mut HeadRef<'a>,
    modern: &'a [BorrowedHeader<'a>],
    legacy_version: Option<&'static str>,
) {
    head.push_own("Content-Type", "application/json");
    for (name, value) in modern {
        head.push(name, value);
    }
    if let Some(v) = legacy_version {
        head.push_own(MCP_PROTOCOL_VERSION, v);
    }
}

/// The start of the last `POST` head written without headers of the authorization flow
/// (see [`HttpLink::write_post_head`]), with the values it was written for.
#[derive(Debug, Default)]
pub(super) struct PostStart {
    /// The checked start; empty until one is written (a start never is).
    bytes: Vec<u8>,
    /// The `Authorization` value it carries.
    authorization: Option<String>,
    /// The `Mcp-Session-Id` it carries.
    session: Option<String>,
}

impl PostStart {
    /// Whether `bytes` are the start of a `POST` carrying these values.
    fn written_for(&self, authorization: Option<&str>, session: Option<&str>) -> bool {
        !self.bytes.is_empty()
            && self.authorization.as_deref() == authorization
            && self.session.as_deref() == session
    }
}

/// The 2026 header set for request `rpc_id` (or a notification), borrowing the request's
/// method, params and name where it can: fails locally for a tool excluded from
/// `tools/list` and for arguments no header can carry. A free function over the fields
/// it reads, so that the list can be held while the authorization flow is asked.
fn modern_headers<'a>(
    (client, excluded_tools, tool_headers): (
        &'a Session,
        &BTreeMap<String, InvalidAnnotation>,
        &BTreeMap<String, Vec<ParamHeader>>,
    ),
    rpc_id: Option<i64>,
    method: &'a str,
    version: &'a str,
    empty: &'a Map<String, Value>,
) -> Result<Vec<BorrowedHeader<'a>>, CallError> {
    let params = rpc_id
        .and_then(|r| client.request_info(r))
        .and_then(|(_, p)| p)
        .unwrap_or(empty);
    let tool = (method == "tools/call")
        .then(|| params.get("name").and_then(Value::as_str))
        .flatten();
    if let Some(tool) = tool
        && let Some(reason) = excluded_tools.get(tool)
    {
        return Err(CallError::ToolExcluded {
            tool: tool.to_owned(),
            reason: reason.clone(),
        });
    }
    let mirrored = tool
        .and_then(|n| tool_headers.get(n))
        .map_or(&[][..], Vec::as_slice);
    headers::request_headers_borrowed(method, params, version, mirrored)
        .map_err(CallError::HeaderValue)
}

/// The authorization flow's headers for a request: its token and, when DPoP-bound, a
/// fresh proof for this request. A free function, so a caller can borrow the URL from
/// other fields of the link meanwhile.
pub(super) fn auth_headers(
    auth: &mut Option<Authorizer>,
    now: Instant,
    method: &str,
    url: &EndpointUrl,
) -> Vec<(String, String)> {
    match auth {
        Some(auth) => auth.request_headers(now, method, url),
        None => Vec::new(),
    }
}

/// Whether the client writes header `name` itself, so that the caller's
/// [`HttpConfig::headers`](super::HttpConfig::headers) may not.
fn is_written_by_client(name: &str) -> bool {
    const OWN: [&str; 10] = [
        "accept",
        "authorization",
        "content-type",
        "last-event-id",
        "mcp-session-id",
        "mcp-protocol-version",
        "mcp-method",
        "mcp-name",
        "user-agent",
        "connection",
    ];
    OWN.iter().any(|own| name.eq_ignore_ascii_case(own))
        || name
            .get(..headers::MCP_PARAM_PREFIX.len())
            .is_some_and(|p| p.eq_ignore_ascii_case(headers::MCP_PARAM_PREFIX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::check_field;
    use crate::version::ProtocolVersion;

    /// The fields written with `push_own` (not checked per request) pass the checks
    /// every other field goes through.
    #[test]
    fn own_fields_pass_the_field_checks() {
        let mut own = vec![
            ("Accept", ACCEPT_JSON_AND_SSE),
            ("Accept", "text/event-stream"),
            ("Content-Type", "application/json"),
        ];
        own.extend(
            ProtocolVersion::ALL
                .iter()
                .map(|v| (MCP_PROTOCOL_VERSION, v.as_str())),
        );
        for (name, value) in own {
            assert_eq!(check_field(name, value), Ok(()), "{name}: {value}");
        }
    }
}
