//! The HTTP client machine driven by arbitrary server bytes, and the server's request
//! reader fed arbitrary client bytes.

use std::time::Duration;

use crate::Instant;

use crate::client::http::HttpConfig;
use crate::client::{
    AcceptDefaults, CallRequest, Client, ClientConfig, Event, InputHandler, Transmit,
    TransportFailure, TransportFailureKind,
};
use crate::http::EndpointUrl;
use crate::server::http::{HttpRequestLimits, HttpRequestReader};

/// Every connection the client opens is accepted, and every request written on one is
/// answered with the next slice of `data` (split at a few fixed sizes), then the
/// connection ends (end of input, or a reset); time passes between rounds. The machine must never
/// panic, and every call must complete exactly once.
pub fn http_client_with_server_bytes(data: &[u8], start: Instant) {
    let Some((&mode, data)) = data.split_first() else {
        return;
    };
    let Ok(url) = EndpointUrl::parse("http://127.0.0.1:9/mcp", false) else {
        return;
    };
    let mut now = start;
    let config = ClientConfig::new("fuzz", "0");
    let mut client = Client::http(config, HttpConfig::new(url), now);
    let mut calls = Vec::new();
    for r in [
        CallRequest::list_tools(),
        CallRequest::call_tool("t", serde_json::json!({"a": 1})),
    ] {
        if let Ok(id) = client.call(now, r) {
            calls.push(id);
        }
    }
    let chunk = 1 + usize::from(mode % 64);
    let mut pieces = data.chunks(chunk * 17);
    let mut handler = AcceptDefaults;
    let mut completed = Vec::new();
    for _round in 0..64 {
        let mut written = Vec::new();
        let mut sink = Vec::new();
        while let Some(t) = client.poll_transmit(now, &mut sink) {
            match t {
                Transmit::Connect { conn, .. } => client.handle_connected(now, conn),
                Transmit::Write { conn, .. } => written.push(conn),
                _ => {}
            }
        }
        for conn in written {
            if let Some(piece) = pieces.next() {
                for part in piece.chunks(chunk) {
                    client.handle_read(now, conn, part);
                }
            }
            if mode & 0x80 == 0 {
                client.handle_eof(now, conn);
            } else {
                let reset = TransportFailure::new(TransportFailureKind::Reset, "reset");
                client.handle_transport_error(now, conn, reset);
            }
        }
        while let Some(ev) = client.poll_event() {
            match ev {
                Event::InputRequested { input, request, .. } => {
                    let answer = handler.answer(&request);
                    let _ = client.respond(now, input, answer);
                }
                Event::CallCompleted { call, .. } => {
                    assert!(!completed.contains(&call), "call completed twice");
                    completed.push(call);
                }
                _ => {}
            }
        }
        now += Duration::from_secs(7);
        client.handle_timeout(now);
    }
    client.close(now);
    while let Some(ev) = client.poll_event() {
        if let Event::CallCompleted { call, .. } = ev {
            assert!(!completed.contains(&call), "call completed twice");
            completed.push(call);
        }
    }
    for call in calls {
        assert!(completed.contains(&call), "call {call} never completed");
    }
}

/// The server's HTTP request reader: whole input and input split in pieces must give the
/// same requests and errors, and nothing may panic. The split reading gives every request
/// back once taken, as the connection does, so that its buffers hold the next one: what
/// it reads must not depend on that either.
pub fn http_request_reader(data: &[u8]) {
    let Some((&split, input)) = data.split_first() else {
        return;
    };
    let read = |pieces: &mut dyn Iterator<Item = &[u8]>, recycle: bool| {
        let limits = HttpRequestLimits {
            max_head_bytes: 4096,
            max_body_bytes: 8192,
            ..HttpRequestLimits::default()
        };
        let mut reader = HttpRequestReader::new(limits);
        let mut out = Vec::new();
        let mut take = |reader: &mut HttpRequestReader| {
            while let Some(r) = reader.poll_request() {
                out.push(format!("{r:?}"));
                match r {
                    Ok(r) if recycle => {
                        // The raw fields too: the debug form hides credentials.
                        let fields = r.headers().map(|(n, v)| format!("{n}: {v:?}"));
                        out.extend(fields);
                        reader.recycle(r);
                    }
                    Ok(r) => out.extend(r.headers().map(|(n, v)| format!("{n}: {v:?}"))),
                    Err(_) => {}
                }
            }
        };
        for piece in pieces {
            reader.handle_input(piece);
            take(&mut reader);
        }
        reader.handle_eof();
        take(&mut reader);
        out
    };
    let whole = read(&mut std::iter::once(input), false);
    let split = read(&mut input.chunks(1 + usize::from(split)), true);
    assert_eq!(whole, split, "request reading depends on chunking");
}
