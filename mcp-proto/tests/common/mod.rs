//! The stdio simulation the client tests share: a client over stdio against a scripted
//! server, on a fake clock that jumps to the next deadline when nothing moves.
#![allow(dead_code)]

use mcp_proto::Instant;
use mcp_proto::client::{
    CallError, CallId, CallOutput, CallRequest, Client, ClientConfig, ConnId, Event, Transmit,
};
use serde_json::Value;

pub type Script = Box<dyn FnMut(&Value) -> Vec<Value>>;

/// A client over stdio against a scripted server (each message in, the messages out).
pub struct Stdio {
    pub now: Instant,
    pub client: Client,
    pub server: Script,
    pub sent: Vec<Value>,
    pub events: Vec<Event>,
}

impl Stdio {
    pub fn new(config: ClientConfig, server: Script) -> Stdio {
        Stdio {
            now: Instant::ZERO,
            client: Client::stdio(config, Instant::ZERO),
            server,
            sent: Vec::new(),
            events: Vec::new(),
        }
    }

    pub fn step(&mut self) -> bool {
        let mut moved = false;
        let mut wire = Vec::new();
        while let Some(t) = self.client.poll_transmit(self.now, &mut wire) {
            match t {
                Transmit::Write { conn, len } => self.client.handle_written(self.now, conn, len),
                Transmit::Close { .. } => {}
                other => panic!("a stdio client asked for {other:?}"),
            }
        }
        let mut back = Vec::new();
        for line in wire.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            moved = true;
            let msg: Value = serde_json::from_slice(line).expect("JSON");
            for out in (self.server)(&msg) {
                back.extend_from_slice(out.to_string().as_bytes());
                back.push(b'\n');
            }
            self.sent.push(msg);
        }
        if !back.is_empty() {
            self.client.handle_read(self.now, ConnId::STDIO, &back);
        }
        while let Some(e) = self.client.poll_event() {
            moved = true;
            self.events.push(e);
        }
        moved
    }

    pub fn run_until(&mut self, done: impl Fn(&Stdio) -> bool) {
        let mut jumps = 0;
        while !done(self) {
            if self.step() {
                continue;
            }
            let t = self.client.poll_timeout().expect("stalled: no deadline");
            self.now = self.now.max(t);
            self.client.handle_timeout(self.now);
            jumps += 1;
            assert!(jumps < 1000, "no progress");
        }
    }

    pub fn connect(&mut self) {
        self.run_until(|s| s.events.iter().any(|e| matches!(e, Event::Connected(_))));
    }

    pub fn call(&mut self, request: CallRequest) -> Result<CallOutput, CallError> {
        let id = self.client.call(self.now, request).unwrap();
        self.wait(id)
    }

    pub fn wait(&mut self, id: CallId) -> Result<CallOutput, CallError> {
        self.run_until(|s| outcome(&s.events, id).is_some());
        outcome(&self.events, id).unwrap()
    }

    pub fn sent_with_method(&self, method: &str) -> Vec<&Value> {
        self.sent.iter().filter(|m| m["method"] == method).collect()
    }
}

pub fn outcome(events: &[Event], call: CallId) -> Option<Result<CallOutput, CallError>> {
    events.iter().find_map(|e| match e {
        Event::CallCompleted { call: c, outcome } if *c == call => Some(outcome.clone()),
        _ => None,
    })
}
