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

    /// Polls the stream; what it wrote, read.
    pub(super) fn poll(&mut self, ep: &mut HttpEndpoint) -> Vec<u8> {
        if self.finished {
            return Vec::new();
        }
        let mut out = Vec::new();
        self.finished = ep.poll_stream(&self.stream, &mut out) == StreamStatus::Finished;
        self.read(&out);
        out
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
