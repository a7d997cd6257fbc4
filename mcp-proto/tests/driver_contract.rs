//! A careless driver: its clock jumps back and forth, it fires timeouts early, late and
//! twice with the same instant, leaves events unpolled for a while, splits and delays
//! the server's bytes, cancels at random, and keeps calling inputs and polls after the
//! close. The client must not panic, and every call must end with exactly one
//! `CallCompleted`, by the close at the latest.

use std::collections::BTreeMap;
use std::time::Duration;

use mcp_proto::Instant;
use mcp_proto::client::{CallId, CallRequest, Client, ClientConfig, ConnId, Event, Transmit};
use mcp_proto::server::{Server, example};
use serde_json::json;

/// A small deterministic generator (xorshift), so that a failure replays.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Runs one careless drive; returns how many calls succeeded.
fn run(seed: u64) -> usize {
    let mut rng = Rng(seed | 1);
    let mut now = Instant::from_millis(10_000);
    let mut client = Client::stdio(ClientConfig::new("careless", "1"), now);
    let mut server: Server = example::server();
    let mut completed: BTreeMap<CallId, usize> = BTreeMap::new();
    let mut calls: Vec<CallId> = Vec::new();
    let mut to_server = Vec::new();
    let mut to_client: Vec<u8> = Vec::new();
    let mut closed_at = None;
    let mut released = false;
    let mut succeeded = 0;
    for step in 0..3000 {
        // The clock: mostly forwards, sometimes backwards, sometimes far ahead.
        now = match rng.below(40) {
            0..=3 => now - Duration::from_millis(rng.below(5_000)),
            4 => now + Duration::from_secs(rng.below(40)),
            5..=8 => now,
            _ => now + Duration::from_millis(rng.below(50)),
        };
        match rng.below(12) {
            0 | 1 if closed_at.is_none() && calls.len() < 60 => {
                let request = match rng.below(4) {
                    0 => CallRequest::list_tools(),
                    1 => CallRequest::call_tool("hang", json!({}))
                        .timeout(Duration::from_millis(rng.below(3_000) + 1)),
                    _ => CallRequest::call_tool("add", json!({"a": 1, "b": 2})),
                };
                if let Ok(call) = client.call(now, request) {
                    calls.push(call);
                }
            }
            2 if !calls.is_empty() => {
                let call = calls[rng.below(calls.len() as u64) as usize];
                let _ = client.cancel(now, call);
            }
            3 => {
                // Early, on time or late; sometimes twice with the same instant.
                client.handle_timeout(now);
                if rng.below(2) == 0 {
                    client.handle_timeout(now);
                }
            }
            4 if !to_client.is_empty() => {
                let cut = rng.below(to_client.len() as u64 + 1) as usize;
                let rest = to_client.split_off(cut);
                client.handle_read(now, ConnId::STDIO, &to_client);
                to_client = rest;
            }
            5 if closed_at.is_some() => {
                // Inputs after the close: reads, a written report, an end, an exit.
                client.handle_read(
                    now,
                    ConnId::STDIO,
                    b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n",
                );
                client.handle_written(now, ConnId::STDIO, 10);
                client.handle_eof(now, ConnId::STDIO);
                client.handle_process_exited(now);
                client.handle_connected(now, ConnId::STDIO);
            }
            _ => {}
        }
        if closed_at.is_none() && step == 2500 {
            client.close(now);
            closed_at = Some(step);
        }
        let mut buf = Vec::new();
        while let Some(transmit) = client.poll_transmit(now, &mut buf) {
            match transmit {
                Transmit::Write { conn, len } => {
                    to_server.extend_from_slice(&buf[buf.len() - len..]);
                    client.handle_written(now, conn, len);
                }
                Transmit::Close { .. } => released = true,
                other => panic!("seed {seed}: a stdio client asked for {other:?}"),
            }
        }
        if !to_server.is_empty() {
            server.handle_input(now, &to_server);
            to_server.clear();
            let mut out = Vec::new();
            while server.poll_transmit(now, &mut out).is_some() {}
            to_client.extend_from_slice(&out);
        }
        // Events are left waiting now and then.
        if rng.below(3) != 0 {
            while let Some(event) = client.poll_event() {
                if let Event::CallCompleted { call, outcome } = event {
                    *completed.entry(call).or_default() += 1;
                    succeeded += usize::from(outcome.is_ok());
                }
            }
        }
        let _ = client.poll_timeout();
    }
    while let Some(event) = client.poll_event() {
        if let Event::CallCompleted { call, outcome } = event {
            *completed.entry(call).or_default() += 1;
            succeeded += usize::from(outcome.is_ok());
        }
    }
    assert!(released, "seed {seed}: the channel was never released");
    for call in &calls {
        assert_eq!(
            completed.get(call).copied(),
            Some(1),
            "seed {seed}: {call:?} completed {:?} times",
            completed.get(call)
        );
    }
    assert_eq!(completed.len(), calls.len(), "seed {seed}: {completed:?}");
    assert!(client.poll_transmit(now, &mut Vec::new()).is_none());
    succeeded
}

#[test]
fn a_careless_driver_cannot_break_the_client() {
    let succeeded: usize = (1..=40).map(|seed| run(seed * 0x9E37_79B9)).sum();
    // The drive is careless, not hopeless: calls do get through.
    assert!(succeeded > 100, "only {succeeded} calls succeeded");
}
