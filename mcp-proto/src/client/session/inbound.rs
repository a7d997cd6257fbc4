//! Everything the server sends: responses (including MRTR rounds and pages), requests
//! for input (legacy era), and notifications.

use std::collections::BTreeSet;

use crate::Instant;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::answer::AnswerCheck;
use super::{
    CallError, CallId, CallOutput, Event, InputAnswer, InputId, InputRequest, OutKind, PeerError,
    PendingInput, Session, cache, remember, request,
};
use crate::client::event::{MAX_ECHO_BYTES, clipped, id_text};
use crate::client::form::{FormSchema, MAX_FORM_SCHEMA_BYTES};
use crate::client::input::{
    LogMessage, MAX_ELICITATION_ID_BYTES, SamplingRequest, check_elicitation_url, roots_result,
};
use crate::json_scan::Member;
use crate::jsonrpc::{self, ErrorObject, Notification, Request, RequestId, Sniffed, codes};
use crate::model::ElicitationParams;
use crate::version::Era;

/// The JSON-RPC code of URLElicitationRequiredError (2025-11-25).
const URL_ELICITATION_REQUIRED: i64 = -32042;

/// A request for input that passed its checks.
pub(super) enum Vetted {
    /// Someone must answer it; the answer must pass the check.
    Ask(InputRequest, AnswerCheck),
    /// Answered without asking anyone (roots from the config).
    Answered(Value),
}

/// A request for input that did not pass its checks.
pub(super) struct Refusal {
    pub(super) error: ErrorObject,
    /// An elicitation the client cannot present (an unsupported form schema, a URL the
    /// policy refuses): in 2026, where an input request cannot be answered with an
    /// error, it is declined instead of failing the call.
    pub(super) declinable: bool,
    /// The kind of input asked for, when the client did not declare it.
    undeclared: Option<&'static str>,
}

impl From<ErrorObject> for Refusal {
    fn from(error: ErrorObject) -> Self {
        Refusal {
            error,
            declinable: false,
            undeclared: None,
        }
    }
}

pub(super) fn decline_value() -> Value {
    let mut m = Map::new();
    m.insert("action".into(), Value::String("decline".into()));
    Value::Object(m)
}

/// The entries of one 2026 input round, vetted.
enum Entry {
    Ask(InputRequest, AnswerCheck),
    Answered(Value),
}

/// The `resultType` of a result: a string that may be written with escapes (borrowed
/// when it is not), or anything else, which the caller refuses by name.
#[derive(Deserialize)]
struct ResultHead {
    #[serde(rename = "resultType", default)]
    result_type: Option<serde_json::Value>,
}

/// An `input_required` result: each input request is kept as received until the round's
/// bounds are checked.
#[derive(Deserialize)]
struct InputRequired<'a> {
    #[serde(rename = "inputRequests", default, borrow)]
    input_requests: Option<std::collections::BTreeMap<String, &'a RawValue>>,
    /// Kept as written (escapes included): it goes back byte for byte, never read.
    #[serde(rename = "requestState", default, borrow)]
    request_state: Option<&'a RawValue>,
}

/// The items of one listing page (verbatim), its `nextCursor` and its caching hints.
type PageParts = (Vec<Box<RawValue>>, NextCursor, Option<cache::Hint>);

/// A page's `nextCursor`.
enum NextCursor {
    /// Absent or null.
    Absent,
    /// A string.
    Text(String),
    /// Anything else: an error, found without reading the value.
    NotText,
}

/// Splits a listing result into its items under `key`, each verbatim, and its cursor.
fn read_page(raw: &RawValue, key: &str) -> Result<PageParts, String> {
    let members: std::collections::BTreeMap<std::borrow::Cow<'_, str>, &RawValue> =
        serde_json::from_str(raw.get()).map_err(|e| format!("listing result: {e}"))?;
    let items = members
        .get(key)
        .and_then(|list| serde_json::from_str::<Vec<Box<RawValue>>>(list.get()).ok())
        .ok_or_else(|| format!("listing result has no `{key}` array"))?;
    let next = match members.get("nextCursor") {
        None => NextCursor::Absent,
        Some(c) => match serde_json::from_str::<Option<String>>(c.get()) {
            Ok(Some(text)) => NextCursor::Text(text),
            Ok(None) => NextCursor::Absent,
            Err(_) => NextCursor::NotText,
        },
    };
    let hint = cache::Hint::of(
        members.get("ttlMs").copied(),
        members.get("cacheScope").copied(),
    );
    Ok((items, next, hint))
}

#[derive(Deserialize)]
struct EmbeddedRequest {
    method: String,
    #[serde(default)]
    params: Option<Box<RawValue>>,
}

impl Session {
    /// A message that cannot be used (undecodable, too deep, too large). The call it
    /// answers, when `sniffed` names one, fails at once with the reason; the handshake
    /// gets an error answer. When it names nothing and `fail_written_calls` is set (an
    /// oversized line whose id could not be read), every call whose request was written
    /// fails, since the lost message may have answered any of them.
    pub(super) fn handle_unusable(
        &mut self,
        now: Instant,
        error: PeerError,
        sniffed: &Sniffed,
        fail_written_calls: bool,
    ) {
        self.peer_error(error.clone());
        if sniffed.has_method {
            // A request or a notification: it answers nothing. A request still gets
            // its answer, an error naming what was wrong (as JSON-RPC wants, and as the
            // server machine answers its clients): the server would wait for it
            // otherwise.
            if let Some(id) = &sniffed.id
                && !matches!(id, RequestId::String(s) if s.len() > MAX_ECHO_BYTES)
                && !self.waits_under(id)
                && self.state != super::State::Closed
            {
                let e =
                    ErrorObject::new(codes::INVALID_REQUEST, format!("Invalid request: {error}"));
                let mut out = Vec::new();
                jsonrpc::encode_error(&mut out, Some(id), &e);
                self.push_out(out, OutKind::Response);
            }
            return;
        }
        let rpc = match &sniffed.id {
            Some(RequestId::Number(n)) => *n,
            Some(RequestId::String(_)) => return,
            None if fail_written_calls => return self.fail_written_calls(&error),
            None => return,
        };
        if let Some(&call) = self.by_rpc.get(&rpc) {
            self.complete(call, Err(CallError::Peer(error)));
        } else if self.is_handshake_id(Some(&RequestId::Number(rpc))) {
            let e = ErrorObject::new(codes::PARSE_ERROR, format!("unusable answer: {error}"));
            self.handle_handshake_response(now, Err(e));
        }
    }

    /// Fails (and cancels) every call whose current request has left the client.
    fn fail_written_calls(&mut self, error: &PeerError) {
        let unwritten: BTreeSet<i64> = self
            .outgoing
            .iter()
            .filter_map(|m| match m.kind {
                OutKind::Request(rpc) => Some(rpc),
                _ => None,
            })
            .collect();
        let mut written: Vec<CallId> = self
            .calls
            .iter()
            .filter(|(_, c)| c.rpc_id.is_some_and(|rpc| !unwritten.contains(&rpc)))
            .map(|(id, _)| *id)
            .collect();
        written.sort_unstable();
        for call in written {
            // The server may still be working on it: tell it to stop, and ignore a late
            // answer.
            self.send_cancel_for(call, "a message from the server could not be read");
            self.complete(call, Err(CallError::Peer(error.clone())));
        }
    }

    pub(super) fn handle_response(&mut self, now: Instant, r: jsonrpc::Response) {
        if self.is_handshake_id(r.id.as_ref()) {
            self.handle_handshake_response(now, r.outcome);
            return;
        }
        let rpc = match &r.id {
            Some(RequestId::Number(n)) => *n,
            Some(other) => {
                self.peer_error(PeerError::UnknownResponse(id_text(other)));
                return;
            }
            None => {
                match r.outcome {
                    Err(e) => self.peer_error(PeerError::UnattributedError(e)),
                    Ok(_) => self.peer_error(PeerError::ResultWithoutId),
                }
                return;
            }
        };
        let Some(call) = self.by_rpc.remove(&rpc) else {
            if self.ignored_ids.contains(&rpc) {
                self.detached.retain(|(r, _, _)| *r != rpc);
                if let Ok(raw) = &r.outcome {
                    self.late_task_answer(rpc, raw);
                }
                return; // an answer we said we no longer want
            }
            let text = rpc.to_string();
            if self.answered_ids.contains(&rpc) {
                self.peer_error(PeerError::DuplicateResponse(text));
            } else {
                self.peer_error(PeerError::UnknownResponse(text));
            }
            return;
        };
        remember(&mut self.answered_ids, rpc);
        if let Some(c) = self.calls.get_mut(&call) {
            c.rpc_id = None;
        }
        match r.outcome {
            // 2025-11-25 only: from a 2025-06-18 server the code means nothing more than
            // any other error, and its URLs are not shown.
            Err(e)
                if e.code == URL_ELICITATION_REQUIRED
                    && self.era() == Some(Era::Legacy)
                    && self.since_2025_11_25() =>
            {
                self.url_elicitation_required(call, e);
            }
            Err(e) => {
                self.task_error_answer(call, &e);
                self.complete(call, Err(CallError::Server(e)));
            }
            Ok(raw) => self.handle_result(now, call, raw),
        }
    }

    /// `-32042`: each URL-mode elicitation of `data.elicitations` that passes the
    /// checks is presented (answered to nobody), then the call fails with a typed error
    /// naming them.
    fn url_elicitation_required(&mut self, call: CallId, error: ErrorObject) {
        #[derive(Deserialize)]
        struct Data {
            elicitations: Vec<Value>,
        }
        let listed = error
            .data
            .clone()
            .and_then(|d| serde_json::from_value::<Data>(d).ok())
            .map(|d| d.elicitations)
            .unwrap_or_default();
        let limits = &self.config.limits;
        let mut waiting = self
            .inputs
            .values()
            .filter(|p| !matches!(p, PendingInput::Modern { .. } | PendingInput::Task { .. }))
            .count();
        let mut waiting_bytes: usize = self.inputs.values().map(PendingInput::bytes).sum();
        let (max_waiting, max_bytes) = (
            limits.max_pending_server_requests,
            limits.max_pending_input_bytes,
        );
        let mut ids = Vec::new();
        for value in listed
            .into_iter()
            .take(self.config.limits.max_inputs_per_round)
        {
            let text = value.to_string();
            let bytes = text.len();
            let vetted = RawValue::from_string(text)
                .map_err(|e| e.to_string())
                .and_then(|raw| {
                    self.check_input_request("elicitation/create", Some(&*raw))
                        .map_err(|r| r.error.message)
                });
            let (request, check) = match vetted {
                Ok(Vetted::Ask(request, check)) => (request, check),
                Ok(Vetted::Answered(_)) => continue,
                Err(reason) => {
                    self.peer_error(PeerError::RequestRefused {
                        method: "elicitation/create (-32042)".to_owned(),
                        reason,
                    });
                    continue;
                }
            };
            let InputRequest::Elicitation(p) = &request else {
                continue;
            };
            let Some(id) = p.elicitation_id().filter(|_| p.is_url_mode()) else {
                self.peer_error(PeerError::RequestRefused {
                    method: "elicitation/create (-32042)".to_owned(),
                    reason: "not a URL-mode elicitation with an elicitationId".to_owned(),
                });
                continue;
            };
            if waiting >= max_waiting || waiting_bytes + bytes > max_bytes {
                break;
            }
            waiting += 1;
            waiting_bytes += bytes;
            let id = id.to_owned();
            self.remember_url_elicitation(&id);
            ids.push(id);
            let input = self.alloc_input();
            self.inputs
                .insert(input, PendingInput::Notice { bytes, check });
            self.events.push_back(Event::InputRequested {
                input,
                call: Some(call),
                request,
            });
        }
        self.complete(
            call,
            Err(CallError::UrlElicitationRequired {
                error,
                elicitations: ids,
            }),
        );
    }

    /// Keeps the id of a URL-mode elicitation shown, for its completion notice.
    fn remember_url_elicitation(&mut self, id: &str) {
        if self.url_elicitations.iter().any(|known| known == id) {
            return;
        }
        if self.url_elicitations.len() >= self.config.limits.max_pending_server_requests.max(1) {
            self.url_elicitations.pop_front();
        }
        self.url_elicitations.push_back(id.to_owned());
    }

    fn handle_result(&mut self, now: Instant, id: CallId, raw: Box<RawValue>) {
        if self
            .calls
            .get(&id)
            .and_then(|c| c.task.as_ref())
            .is_some_and(|t| t.wire.is_some())
        {
            return self.task_response(now, id, raw);
        }
        if self.is_legacy_task_answer(id, &raw) {
            if self.era() != Some(Era::Legacy) {
                // The answer of a session being replaced (a legacy `404` came meanwhile):
                // the tool ran and made its task there, where it can no longer be
                // followed, as for a task between two polls (decision 14). It is not a
                // tool result, and the tool must not run again.
                return self.complete(id, Err(CallError::SessionExpired));
            }
            return self.task_created(now, id, &raw);
        }
        if self.era() == Some(Era::Modern) {
            // The common shapes are read without a pass over the whole result; anything
            // else (not an object, a duplicate, an escaped or non-string value) goes
            // through serde, which also words the error.
            let quick = match crate::json_scan::object_member(raw.get(), "resultType") {
                Member::Absent => Some(None),
                Member::Raw("null") => Some(None),
                // Borrowed from the result: no copy of the common `"complete"`.
                Member::Raw(s) if s.len() >= 2 && s.starts_with('"') && !s.contains('\\') => {
                    Some(Some(std::borrow::Cow::Borrowed(&s[1..s.len() - 1])))
                }
                _ => None,
            };
            let parsed = match quick {
                Some(head) => Ok(head),
                None => serde_json::from_str::<ResultHead>(raw.get())
                    .map_err(|e| format!("result is not an object: {e}"))
                    .and_then(|h| match h.result_type {
                        None | Some(Value::Null) => Ok(None),
                        Some(Value::String(t)) => Ok(Some(std::borrow::Cow::Owned(t))),
                        Some(other) => Err(format!("`resultType` is not a string: {other}")),
                    }),
            };
            let head = match parsed {
                Ok(h) => h,
                Err(msg) => {
                    self.complete(id, Err(CallError::InvalidResponse(msg)));
                    return;
                }
            };
            match head.as_deref() {
                None | Some("complete") => {}
                Some("input_required") => {
                    self.handle_input_required(now, id, &raw);
                    return;
                }
                Some("task") => {
                    let Some(call) = self.calls.get(&id) else {
                        return;
                    };
                    let method = &call.request.method;
                    if method != "tools/call" || !self.declares_tasks(&call.request) {
                        let p = crate::client::TaskProblem::NotOffered(method.clone());
                        self.complete(id, Err(CallError::Task(p)));
                        return;
                    }
                    self.task_created(now, id, &raw);
                    return;
                }
                Some(other) => {
                    let msg = format!("unknown resultType {other:?}");
                    self.complete(id, Err(CallError::InvalidResponse(msg)));
                    return;
                }
            }
        }
        let modern = self.era() == Some(Era::Modern);
        let Some(call) = self.calls.get_mut(&id) else {
            return;
        };
        let rounds = call.rounds;
        let Some(key) = call.request.list_key else {
            self.complete(
                id,
                Ok(CallOutput {
                    result: raw,
                    items: Vec::new(),
                    pages: 1,
                    rounds,
                }),
            );
            return;
        };
        // A page of a listing, read once: each item is kept as the server wrote it (key
        // order and unknown fields intact); typed views parse from those bytes.
        let page = match read_page(&raw, key) {
            Ok(page) => page,
            Err(msg) => {
                self.complete(id, Err(CallError::InvalidResponse(msg)));
                return;
            }
        };
        let (page_items, next, hint) = page;
        let limits = &self.config.limits;
        if let Some(pending) = &mut call.cache {
            pending.page(now, hint);
        }
        call.pages += 1;
        call.item_bytes += page_items.iter().map(|i| i.get().len()).sum::<usize>();
        call.items.extend(page_items);
        if call.items.len() > limits.max_list_items {
            self.complete(id, Err(CallError::ListTooLong("max_list_items")));
            return;
        }
        if call.item_bytes > limits.max_list_bytes {
            self.complete(id, Err(CallError::ListTooLong("max_list_bytes")));
            return;
        }
        let next = match next {
            // 2026: any string, even "", means more pages. 2025: "" is read as the end.
            NextCursor::Text(s) if modern || !s.is_empty() => Some(Value::String(s)),
            NextCursor::Absent | NextCursor::Text(_) => None,
            NextCursor::NotText => {
                let msg = "nextCursor must be a string".to_owned();
                self.complete(id, Err(CallError::InvalidResponse(msg)));
                return;
            }
        };
        match next {
            Some(cursor) => {
                if call.pages >= limits.max_list_pages {
                    self.complete(id, Err(CallError::ListTooLong("max_list_pages")));
                    return;
                }
                if call.cursor.as_ref() == Some(&cursor) {
                    let msg = "the server returned the same cursor twice".to_owned();
                    self.complete(id, Err(CallError::InvalidResponse(msg)));
                    return;
                }
                call.cursor = Some(cursor);
                // The pages of a listing share its timeout.
                let left = self.calls.get(&id).and_then(|c| self.time_left(c, now));
                if let Some(call) = self.calls.get_mut(&id) {
                    call.left = left;
                }
                self.send_call(now, id);
            }
            None => {
                let call = self
                    .calls
                    .get_mut(&id)
                    .map(|c| (std::mem::take(&mut c.items), c.pages));
                if let Some((items, pages)) = call {
                    self.complete(
                        id,
                        Ok(CallOutput {
                            result: raw,
                            items,
                            pages,
                            rounds,
                        }),
                    );
                }
            }
        }
    }

    /// The answer to `rpc`, a request given up: when that was a `tools/call` that could
    /// make a task and the answer says it did, the task is cancelled (once), not left to
    /// run with nobody following it.
    fn late_task_answer(&mut self, rpc: i64, raw: &RawValue) {
        let Some(at) = self.given_up_task_calls.iter().position(|r| *r == rpc) else {
            return;
        };
        self.given_up_task_calls.remove(at);
        let Some(era) = self.era() else { return };
        let limit = self.config.limits.max_task_id_bytes;
        if names_a_task(raw, era)
            && let Some(task_id) = crate::client::Task::id_of_result(raw, era, limit)
        {
            self.send_task_cancel(&task_id);
        }
    }

    /// 2025-11-25: whether the answer to call `id` is a `CreateTaskResult`: the call
    /// went out with `params.task` and the result has a `task` object.
    fn is_legacy_task_answer(&self, id: CallId, raw: &RawValue) -> bool {
        let asked = self.calls.get(&id).is_some_and(|c| c.augmented);
        asked && names_a_task(raw, Era::Legacy)
    }

    /// A 2026 `input_required` result: surface each input request, or retry at once when
    /// the server only sent `requestState`.
    fn handle_input_required(&mut self, now: Instant, id: CallId, raw: &RawValue) {
        let fail = |this: &mut Self, e: CallError| this.complete(id, Err(e));
        let Some(call) = self.calls.get(&id) else {
            return;
        };
        if !request::allows_input_required(&call.request.method) {
            let msg = format!("{} cannot answer input_required", call.request.method);
            return fail(self, CallError::InvalidResponse(msg));
        }
        // The bounds first, on the bytes as received: a tree of values costs many times
        // the bytes it was parsed from.
        let limits = &self.config.limits;
        let rounds = call.rounds + 1;
        if rounds > limits.max_input_rounds {
            return fail(self, CallError::TooManyRounds(limits.max_input_rounds));
        }
        let bytes = call.input_bytes + raw.get().len();
        if bytes > limits.max_input_bytes_per_call {
            let msg = format!(
                "input_required results total {bytes} bytes over this call's rounds, over the \
                 limit of {} (max_input_bytes_per_call)",
                limits.max_input_bytes_per_call
            );
            return fail(self, CallError::InvalidInputRequest(msg));
        }
        // Its input requests are read into values: bounded as such, not as text.
        let max = limits.max_parsed_bytes;
        if let Err(why) = crate::held::check_parse(raw.get().as_bytes(), max) {
            let error = crate::jsonrpc::DecodeError::unparsable(why, max);
            return fail(
                self,
                CallError::InvalidInputRequest(format!("input_required: {error}")),
            );
        }
        let parsed = match serde_json::from_str::<InputRequired<'_>>(raw.get()) {
            Ok(p) => p,
            Err(e) => {
                let msg = format!("malformed input_required result: {e}");
                return fail(self, CallError::InvalidResponse(msg));
            }
        };
        if parsed
            .request_state
            .is_some_and(|s| !s.get().starts_with('"'))
        {
            let msg = "requestState is not a string".to_owned();
            return fail(self, CallError::InvalidResponse(msg));
        }
        let requests = parsed.input_requests.unwrap_or_default();
        if requests.is_empty() && parsed.request_state.is_none() {
            let msg = "input_required without inputRequests or requestState".to_owned();
            return fail(self, CallError::InvalidResponse(msg));
        }
        if requests.len() > limits.max_inputs_per_round {
            let msg = format!("{} input requests in one round", requests.len());
            return fail(self, CallError::InvalidInputRequest(msg));
        }
        let mut typed = Vec::with_capacity(requests.len());
        for (key, raw_request) in requests {
            let value = match serde_json::from_str::<Value>(raw_request.get()) {
                Ok(v) => v,
                Err(e) => {
                    let msg = format!("malformed input request {key:?}: {e}");
                    return fail(self, CallError::InvalidResponse(msg));
                }
            };
            match self.embedded_input(value) {
                Ok(Vetted::Ask(req, check)) => typed.push((key, Entry::Ask(req, check))),
                Ok(Vetted::Answered(v)) => typed.push((key, Entry::Answered(v))),
                Err(r) if r.declinable => {
                    self.peer_error(PeerError::RequestRefused {
                        method: "elicitation/create".to_owned(),
                        reason: format!("declined without asking: {}", r.error.message),
                    });
                    typed.push((key, Entry::Answered(decline_value())));
                }
                Err(r) => {
                    if let Some(kind) = r.undeclared {
                        self.events.push_back(Event::InputUndeclared { kind });
                    }
                    return fail(self, CallError::InvalidInputRequest(r.error.message));
                }
            }
        }
        let ids: Vec<InputId> = typed.iter().map(|_| self.alloc_input()).collect();
        let Some(call) = self.calls.get_mut(&id) else {
            return;
        };
        call.rounds = rounds;
        call.input_bytes = bytes;
        call.request_state = parsed.request_state.map(RawValue::to_owned);
        // From now on the retries carry this round's answers and state only: any the
        // caller's request carried (a relayed retry) are spent.
        call.request.params.remove("inputResponses");
        call.request.params.remove("requestState");
        // The time a person takes to answer is not the server's; the rounds share one
        // timeout otherwise.
        call.left = call.deadline.map(|d| d.saturating_duration_since(now));
        call.deadline = None;
        call.pending = typed
            .iter()
            .zip(&ids)
            .map(|((key, entry), input)| {
                let answered = match entry {
                    Entry::Answered(v) => Some(v.clone()),
                    Entry::Ask(..) => None,
                };
                (key.clone(), *input, answered)
            })
            .collect();
        if call.pending.iter().all(|(_, _, a)| a.is_some()) {
            self.send_call(now, id);
            return;
        }
        for ((_, entry), input) in typed.into_iter().zip(ids) {
            if let Entry::Ask(request, check) = entry {
                self.inputs
                    .insert(input, PendingInput::Modern { call: id, check });
                self.events.push_back(Event::InputRequested {
                    input,
                    call: Some(id),
                    request,
                });
            }
        }
    }

    pub(super) fn embedded_input(&self, value: Value) -> Result<Vetted, Refusal> {
        let req: EmbeddedRequest = serde_json::from_value(value).map_err(|e| {
            Refusal::from(ErrorObject::new(
                codes::INVALID_PARAMS,
                format!("malformed input request: {e}"),
            ))
        })?;
        self.check_input_request(&req.method, req.params.as_deref())
    }

    /// A sampling request asks only for what the client declared: `tools`/`toolChoice`
    /// need `sampling.tools`; from 2025-11-25 on, an `includeContext` other than
    /// `none` needs `sampling.context` (before, it needed nothing).
    fn check_sampling_extras(&self, p: &SamplingRequest) -> Result<(), ErrorObject> {
        let caps = &self.config.capabilities;
        let refuse = |what: &str, capability: &str| {
            ErrorObject::new(
                codes::INVALID_PARAMS,
                format!("sampling with {what}: the client did not declare {capability}"),
            )
        };
        let versioned = self.since_2025_11_25();
        if p.extra.contains_key("tools") || p.extra.contains_key("toolChoice") {
            if !versioned {
                return Err(ErrorObject::new(
                    codes::INVALID_PARAMS,
                    "sampling with tools does not exist in protocol version 2025-06-18",
                ));
            }
            if !caps.sampling_tools {
                return Err(refuse("tools", "sampling.tools"));
            }
        }
        let context = p.extra.get("includeContext").and_then(Value::as_str);
        if !caps.sampling_context && versioned && context.is_some_and(|c| c != "none") {
            return Err(refuse("includeContext", "sampling.context"));
        }
        Ok(())
    }

    /// Validates a request for input against the declared capabilities, the form
    /// subset and the URL policy; answers roots from the config.
    fn check_input_request(
        &self,
        method: &str,
        params: Option<&RawValue>,
    ) -> Result<Vetted, Refusal> {
        let caps = &self.config.capabilities;
        let undeclared = |what: &str| {
            ErrorObject::new(
                codes::METHOD_NOT_FOUND,
                format!(
                    "{}: the client did not declare the {what} capability",
                    clipped(method)
                ),
            )
        };
        match method {
            "elicitation/create" => {
                if !caps.elicitation_form && !caps.elicitation_url {
                    return Err(Refusal {
                        undeclared: Some("elicitation"),
                        ..undeclared("elicitation").into()
                    });
                }
                let text = params.map_or("null", RawValue::get);
                let p: ElicitationParams = serde_json::from_str(text).map_err(|e| {
                    ErrorObject::new(
                        codes::INVALID_PARAMS,
                        format!("invalid elicitation params: {e}"),
                    )
                })?;
                if p.is_url_mode() && !self.since_2025_11_25() {
                    // A 2025-06-18 elicitation is a form (its params need a
                    // `requestedSchema`): the URL mode came with 2025-11-25.
                    return Err(ErrorObject::new(
                        codes::INVALID_PARAMS,
                        "elicitation mode \"url\" does not exist in protocol version 2025-06-18",
                    )
                    .into());
                }
                let (mode, declared) = if p.is_url_mode() {
                    ("url", caps.elicitation_url)
                } else {
                    ("form", caps.elicitation_form)
                };
                if !declared {
                    return Err(Refusal {
                        undeclared: Some(if mode == "url" {
                            "elicitation (url)"
                        } else {
                            "elicitation (form)"
                        }),
                        ..ErrorObject::new(
                            codes::INVALID_PARAMS,
                            format!("elicitation mode {mode:?} was not declared by the client"),
                        )
                        .into()
                    });
                }
                let refuse = |why: String| Refusal {
                    error: ErrorObject::new(codes::INVALID_PARAMS, why),
                    declinable: true,
                    undeclared: None,
                };
                let check = if p.is_url_mode() {
                    let url = p.url.as_deref().unwrap_or("");
                    check_elicitation_url(url).map_err(|e| refuse(format!("url refused: {e}")))?;
                    if self.era() == Some(Era::Legacy) && p.elicitation_id().is_none() {
                        return Err(refuse(
                            "a URL-mode elicitation needs an elicitationId".into(),
                        ));
                    }
                    let id_len = p.elicitation_id().map_or(0, str::len);
                    if id_len > MAX_ELICITATION_ID_BYTES {
                        return Err(refuse(format!(
                            "the elicitationId is {id_len} bytes (at most {MAX_ELICITATION_ID_BYTES})"
                        )));
                    }
                    AnswerCheck::Url
                } else {
                    let text = p.requested_schema.as_deref().map(RawValue::get);
                    if let Some(text) = text.filter(|t| t.len() > MAX_FORM_SCHEMA_BYTES) {
                        return Err(refuse(format!(
                            "the requested schema is {} bytes (at most {MAX_FORM_SCHEMA_BYTES})",
                            text.len()
                        )));
                    }
                    let schema = text
                        .and_then(|s| serde_json::from_str::<Value>(s).ok())
                        .ok_or_else(|| refuse("a form without a requestedSchema".into()))?;
                    let schema = FormSchema::parse(&schema)
                        .map_err(|e| refuse(format!("unsupported form schema: {e}")))?;
                    AnswerCheck::Form(Box::new(schema))
                };
                Ok(Vetted::Ask(InputRequest::Elicitation(p), check))
            }
            "sampling/createMessage" => {
                if !caps.sampling {
                    return Err(Refusal {
                        undeclared: Some("sampling"),
                        ..undeclared("sampling").into()
                    });
                }
                let text = params.map_or("null", RawValue::get);
                let p: SamplingRequest = serde_json::from_str(text).map_err(|e| {
                    ErrorObject::new(
                        codes::INVALID_PARAMS,
                        format!("invalid sampling params: {e}"),
                    )
                })?;
                self.check_sampling_extras(&p)?;
                Ok(Vetted::Ask(
                    InputRequest::Sampling(Box::new(p)),
                    AnswerCheck::Sampling,
                ))
            }
            "roots/list" => {
                if !caps.roots {
                    return Err(Refusal {
                        undeclared: Some("roots"),
                        ..undeclared("roots").into()
                    });
                }
                Ok(match &self.config.roots {
                    Some(roots) => Vetted::Answered(roots_result(roots)),
                    None => Vetted::Ask(InputRequest::Roots, AnswerCheck::Roots),
                })
            }
            other => Err(ErrorObject::new(
                codes::METHOD_NOT_FOUND,
                format!("method not found: {}", clipped(other)),
            )
            .into()),
        }
    }

    /// Whether a request of the server waits for the user under `id`.
    fn waits_under(&self, id: &RequestId) -> bool {
        self.inputs
            .values()
            .any(|p| matches!(p, PendingInput::Legacy { server_id, .. } if server_id == id))
    }

    /// A legacy server→client request.
    pub(super) fn handle_server_request(&mut self, now: Instant, r: Request) {
        if matches!(&r.id, RequestId::String(id) if id.len() > MAX_ECHO_BYTES) {
            // An answer would have to echo the id whole: a server could make the client
            // write (and queue) as much as it likes. Such a request is not answered.
            self.peer_error(PeerError::RequestRefused {
                method: r.method,
                reason: format!("its id is longer than {MAX_ECHO_BYTES} bytes; not answered"),
            });
            return;
        }
        // A reused id is never answered, whatever it asks, at the limit or not: an
        // answer carrying it would read as the answer to the request still waiting
        // under it. One already answered in this session, on a resumed stream, is the
        // same request again (the stream replayed from before its resumption point): the
        // server has its answer, and the user is not asked twice.
        let replayed = self.on_resumed_stream && self.answered_server_ids.contains(&r.id);
        if self.waits_under(&r.id) || replayed {
            self.peer_error(PeerError::ReusedRequestId { id: r.id });
            return;
        }
        let refuse = |this: &mut Self, e: ErrorObject| {
            this.peer_error(PeerError::RequestRefused {
                method: r.method.clone(),
                reason: e.message.clone(),
            });
            let mut out = Vec::new();
            jsonrpc::encode_error(&mut out, Some(&r.id), &e);
            this.push_out(out, OutKind::Response);
        };
        if self.era() == Some(Era::Modern) {
            let e = ErrorObject::new(
                codes::METHOD_NOT_FOUND,
                "2026-07-28 servers must not send requests",
            );
            return refuse(self, e);
        }
        if r.method == "ping" {
            let mut out = Vec::new();
            jsonrpc::encode_result(&mut out, Some(&r.id), &jsonrpc::to_raw(&Map::new()));
            self.push_out(out, OutKind::Response);
            return;
        }
        let probing = (self.handshake.as_ref())
            .is_some_and(|h| matches!(h.phase, super::Phase::Probe { .. }));
        if probing {
            // The era is not settled: a 2026-07-28 server never asks, and a legacy one
            // has not been initialized. Nothing reaches the user (nor holds deadlines).
            let e = ErrorObject::new(
                codes::INVALID_REQUEST,
                "no requests before the protocol version is agreed",
            );
            return refuse(self, e);
        }
        let (request, check) = match self.check_input_request(&r.method, r.params.as_deref()) {
            Ok(Vetted::Ask(req, check)) => (req, check),
            Ok(Vetted::Answered(v)) => {
                remember(&mut self.answered_server_ids, r.id.clone());
                let mut out = Vec::new();
                jsonrpc::encode_result(&mut out, Some(&r.id), &jsonrpc::to_raw(&v));
                self.push_out(out, OutKind::Response);
                return;
            }
            Err(refusal) => {
                if let Some(kind) = refusal.undeclared {
                    self.events.push_back(Event::InputUndeclared { kind });
                }
                return refuse(self, refusal.error);
            }
        };
        let (waiting, waiting_bytes) = self.inputs.values().fold((0, 0), |(n, b), p| match p {
            PendingInput::Legacy { bytes, .. } | PendingInput::Notice { bytes, .. } => {
                (n + 1, b + bytes)
            }
            PendingInput::Modern { .. } | PendingInput::Task { .. } => (n, b),
        });
        let limits = &self.config.limits;
        // The refusal names the limit, for the server's log and the application's report.
        if waiting >= limits.max_pending_server_requests {
            let message = format!(
                "too many requests waiting for an answer (max_pending_server_requests: {})",
                limits.max_pending_server_requests
            );
            return refuse(self, ErrorObject::new(codes::INTERNAL_ERROR, message));
        }
        let bytes = r.params.as_ref().map_or(0, |p| p.get().len());
        if waiting_bytes + bytes > limits.max_pending_input_bytes {
            let message = format!(
                "too many bytes of requests waiting for an answer (max_pending_input_bytes: {})",
                limits.max_pending_input_bytes
            );
            return refuse(self, ErrorObject::new(codes::INTERNAL_ERROR, message));
        }
        if let InputRequest::Elicitation(p) = &request
            && p.is_url_mode()
            && let Some(id) = p.elicitation_id()
        {
            let id = id.to_owned();
            self.remember_url_elicitation(&id);
        }
        // `related-task` is a 2025-11-25 key: a 2025-06-18 answer does not echo it.
        let related = (super::tasks::related_task(r.params.as_deref()))
            .filter(|t| t.len() <= self.config.limits.max_task_id_bytes)
            .filter(|_| self.since_2025_11_25());
        let call = related.as_deref().and_then(|t| self.call_of_task(t));
        let input = self.alloc_input();
        self.inputs.insert(
            input,
            PendingInput::Legacy {
                server_id: r.id,
                bytes,
                check,
                related,
            },
        );
        self.pause_deadlines(now);
        self.events.push_back(Event::InputRequested {
            input,
            call,
            request,
        });
    }

    pub(super) fn handle_notification(&mut self, now: Instant, n: Notification) {
        // A 2025-06-18 session has no tasks: a status notification there is one its
        // version does not define, passed on as such (below), not read as task news.
        let tasks = self.since_2025_11_25();
        let status = match self.era() {
            Some(Era::Legacy) => "notifications/tasks/status",
            _ => "notifications/tasks",
        };
        if tasks
            && n.method == status
            && let Err(detail) = self.task_notification(now, n.params.as_deref())
        {
            self.peer_error(PeerError::MalformedNotification {
                method: n.method.clone(),
                detail,
            });
        }
        if tasks && n.method == "notifications/tasks/status" {
            return;
        }
        if n.method != "notifications/cancelled"
            && let Some(id) = self.subscription_of(&n)
        {
            self.subscription_notification(now, id, n);
            return;
        }
        match n.method.as_str() {
            "notifications/cancelled" if self.era() == Some(Era::Modern) => {
                #[derive(Deserialize)]
                struct Cancelled {
                    #[serde(rename = "requestId")]
                    request_id: RequestId,
                }
                let listen = n
                    .params
                    .as_deref()
                    .and_then(|p| serde_json::from_str::<Cancelled>(p.get()).ok())
                    .and_then(|c| match c.request_id {
                        RequestId::Number(rpc) => self.by_rpc.get(&rpc).copied(),
                        RequestId::String(_) => None,
                    })
                    .filter(|id| {
                        self.calls
                            .get(id)
                            .is_some_and(|c| c.request.method == super::request::LISTEN)
                    });
                match listen {
                    Some(id) => self.subscription_cancelled(id),
                    None => self.push_notification(n),
                }
            }
            "notifications/progress" => {
                #[derive(Deserialize)]
                struct Progress {
                    #[serde(rename = "progressToken")]
                    token: Value,
                    progress: f64,
                    #[serde(default)]
                    total: Option<f64>,
                    #[serde(default)]
                    message: Option<String>,
                }
                let parsed = match n.params.as_deref() {
                    None => Err("no params".to_owned()),
                    Some(p) => serde_json::from_str::<Progress>(p.get()).map_err(|e| e.to_string()),
                };
                let p = match parsed {
                    Ok(p) => p,
                    Err(detail) => {
                        self.peer_error(PeerError::MalformedNotification {
                            method: n.method,
                            detail,
                        });
                        return;
                    }
                };
                let token = p.token.as_u64();
                let call = self
                    .calls
                    .iter()
                    .find(|(_, c)| c.progress_token.is_some() && c.progress_token == token)
                    .map(|(id, _)| *id);
                if let Some(call) = call {
                    self.events.push_back(Event::Progress {
                        call,
                        progress: p.progress,
                        total: p.total,
                        message: p.message,
                    });
                }
            }
            "notifications/cancelled" if self.era() != Some(Era::Modern) => {
                #[derive(Deserialize)]
                struct Cancelled {
                    #[serde(rename = "requestId")]
                    request_id: RequestId,
                }
                let Some(c) = n
                    .params
                    .as_deref()
                    .and_then(|p| serde_json::from_str::<Cancelled>(p.get()).ok())
                else {
                    return;
                };
                let found = self.inputs.iter().find_map(|(id, p)| match p {
                    PendingInput::Legacy { server_id, .. } if *server_id == c.request_id => {
                        Some(*id)
                    }
                    _ => None,
                });
                if let Some(input) = found {
                    self.inputs.remove(&input);
                    self.events.push_back(Event::InputCancelled { input });
                    self.resume_deadlines(now);
                }
            }
            "notifications/message" => {
                let parsed = match n.params.as_deref() {
                    None => Err("no params".to_owned()),
                    Some(p) => {
                        serde_json::from_str::<LogMessage>(p.get()).map_err(|e| e.to_string())
                    }
                };
                match parsed {
                    Ok(message) => {
                        let call = self
                            .stream_origin
                            .and_then(|rpc| self.by_rpc.get(&rpc).copied());
                        self.events.push_back(Event::Log { call, message });
                    }
                    Err(detail) => self.peer_error(PeerError::MalformedNotification {
                        method: n.method,
                        detail,
                    }),
                }
            }
            "notifications/elicitation/complete" => {
                #[derive(Deserialize)]
                struct Complete {
                    #[serde(rename = "elicitationId")]
                    elicitation_id: String,
                }
                let parsed = n
                    .params
                    .as_deref()
                    .and_then(|p| serde_json::from_str::<Complete>(p.get()).ok());
                let Some(c) = parsed else {
                    self.peer_error(PeerError::MalformedNotification {
                        method: n.method,
                        detail: "no string elicitationId".to_owned(),
                    });
                    return;
                };
                // Unknown or already completed ids are ignored (2025-11-25).
                if let Some(at) = self
                    .url_elicitations
                    .iter()
                    .position(|id| *id == c.elicitation_id)
                {
                    self.url_elicitations.remove(at);
                    self.events.push_back(Event::ElicitationCompleted {
                        elicitation_id: c.elicitation_id,
                    });
                }
            }
            _ => self.push_notification(n),
        }
    }

    /// The user answered one entry of a 2026 input round; retry once all are answered.
    pub(super) fn answer_round(
        &mut self,
        now: Instant,
        id: CallId,
        input: InputId,
        answer: InputAnswer,
    ) {
        let value = match answer {
            InputAnswer::Result(v) => v,
            InputAnswer::Error(e) => {
                self.complete(id, Err(CallError::InputRefused(e)));
                return;
            }
        };
        let Some(call) = self.calls.get_mut(&id) else {
            return;
        };
        if let Some(slot) = call.pending.iter_mut().find(|(_, i, _)| *i == input) {
            slot.2 = Some(value);
        }
        if call.pending.iter().all(|(_, _, a)| a.is_some()) {
            self.send_call(now, id);
        }
    }
}

/// Whether a result says a task was made: in 2025-11-25 a `CreateTaskResult` (a `task`
/// object), in 2026-07-28 `resultType: "task"`.
fn names_a_task(raw: &RawValue, era: Era) -> bool {
    #[derive(Deserialize)]
    struct Head<'a> {
        #[serde(borrow, default)]
        task: Option<&'a RawValue>,
        #[serde(rename = "resultType", default, borrow)]
        result_type: Option<std::borrow::Cow<'a, str>>,
    }
    let Ok(head) = serde_json::from_str::<Head<'_>>(raw.get()) else {
        return false;
    };
    match era {
        Era::Legacy => head.task.is_some_and(|t| t.get().starts_with('{')),
        Era::Modern => head.result_type.as_deref() == Some("task"),
    }
}
