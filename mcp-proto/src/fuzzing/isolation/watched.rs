//! The victim's streams, read as they are written, and its legacy calls followed over
//! them or over the `GET`s that resume them.

use serde_json::Value;

use crate::http::{HttpLimits, ResponseEvent, ResponseReader};
use crate::server::http::{HttpEndpoint, HttpStream, StreamStatus};
use crate::sse::{SseDecoder, SseLimits};

use super::{Got, LegacyAsk, Watched, assert_no_mallory};

impl Watched {
    pub(super) fn new(stream: HttpStream) -> Self {
        let mut w = Self {
            wire: Vec::new(),
            reader: ResponseReader::new(HttpLimits::default(), "POST"),
            sse: SseDecoder::new(SseLimits::new(1 << 20, 1 << 22)),
            messages: Vec::new(),
            last_event: None,
            finished: false,
            stream,
        };
        let mut head = Vec::new();
        w.stream.write_head(&mut head);
        w.read(&head);
        w
    }

    /// Polls the stream and reads what it wrote.
    pub(super) fn poll(&mut self, ep: &mut HttpEndpoint) {
        if self.finished {
            return;
        }
        let mut out = Vec::new();
        self.finished = ep.poll_stream(&self.stream, &mut out) == StreamStatus::Finished;
        self.read(&out);
    }

    fn read(&mut self, bytes: &[u8]) {
        self.wire.extend_from_slice(bytes);
        self.reader.handle_input(bytes);
        while let Some(event) = self.reader.poll_event() {
            match event {
                ResponseEvent::Body(b) => self.sse.handle_input(&b),
                ResponseEvent::Error(e) => panic!("a stream the response reader refuses: {e}"),
                _ => {}
            }
        }
        for event in self.sse.events() {
            let event = event.expect("an SSE event over the limits");
            if event.id.is_some() {
                self.last_event.clone_from(&event.id);
            }
            if event.data.is_empty() {
                continue;
            }
            let m = serde_json::from_str(&event.data).expect("an SSE event that is not JSON");
            self.messages.push(m);
        }
    }
}

/// The JSON-RPC messages of a complete SSE body, and its last event id.
pub(super) fn sse_body(body: &[u8]) -> (Vec<Value>, Option<String>) {
    let mut decoder = SseDecoder::new(SseLimits::new(1 << 20, 1 << 22));
    decoder.handle_input(body);
    let (mut messages, mut last_event) = (Vec::new(), None);
    for event in decoder.events().flatten() {
        if event.id.is_some() {
            last_event = event.id;
        }
        if let Ok(m) = serde_json::from_str::<Value>(&event.data) {
            messages.push(m);
        }
    }
    (messages, last_event)
}

/// The response among `messages`, if any.
pub(super) fn response_in(messages: &[Value]) -> Option<&Value> {
    messages.iter().find(|m| m.get("method").is_none())
}

impl LegacyAsk {
    /// Polls its open stream: what it wrote joins the messages.
    pub(super) fn poll(&mut self, ep: &mut HttpEndpoint) {
        if let Some(w) = &mut self.watched {
            w.poll(ep);
            assert_no_mallory(&w.wire);
            self.messages.append(&mut w.messages);
            if w.last_event.is_some() {
                self.last_event.clone_from(&w.last_event);
            }
            if w.finished {
                self.watched = None;
            }
        }
    }

    /// What a request of its got.
    pub(super) fn take(&mut self, mut got: Got) {
        self.messages.append(&mut got.messages);
        if got.last_event.is_some() {
            self.last_event = got.last_event;
        }
        self.watched = got.open.filter(|w| !w.finished);
    }
}

/// The id of the `elicitation/create` among `messages`.
pub(super) fn elicitation(messages: &[Value]) -> Option<Value> {
    messages
        .iter()
        .find(|m| m["method"] == "elicitation/create")
        .map(|m| m["id"].clone())
}
