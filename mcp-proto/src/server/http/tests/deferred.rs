//! Deferred tool work over HTTP with legacy sessions: the call's output reaches its own
//! stream, in its own session, though another session's call has the same request id.

use std::sync::{Arc, Mutex};

use super::streams::{call, open_session};
use super::*;
use crate::server::Completer;

type Outbox = Arc<Mutex<Vec<Completer>>>;

/// Sessions over a server whose `later` tool defers, its completers kept in `outbox`.
fn endpoint_with(outbox: &Outbox) -> HttpEndpoint {
    let kept = outbox.clone();
    let tool = Tool::new(
        "later",
        "",
        json!({"type": "object"}),
        move |c: &ToolCall<'_>| {
            kept.lock().unwrap().push(c.defer());
            ToolOutcome::Deferred
        },
    );
    let server = example::server_with(|c| {
        c.tools.push(tool);
    });
    HttpEndpoint::with_sessions(server, HttpEndpointConfig::default(), &[7; 32])
}

#[test]
fn a_completed_call_answers_on_its_own_sessions_stream() {
    let outbox = Outbox::default();
    let mut ep = endpoint_with(&outbox);
    let v = "2025-11-25";
    let (a, b) = (open_session(&mut ep, v), open_session(&mut ep, v));
    // The same request id in both sessions.
    let stream_a = stream(ep.handle_request(now(), &call(&a, v, 5, "later")));
    let stream_b = stream(ep.handle_request(now(), &call(&b, v, 5, "later")));
    let (first, second) = {
        let mut o = outbox.lock().unwrap();
        (o.remove(0), o.remove(0))
    };
    let drain = |ep: &mut HttpEndpoint, s: &HttpStream| {
        let mut out = Vec::new();
        ep.poll_stream(s, &mut out);
        String::from_utf8_lossy(&out).into_owned()
    };
    second.complete(ToolOutcome::text("for b"));
    ep.handle_deferred(now());
    let ready: Vec<StreamId> = std::iter::from_fn(|| ep.poll_ready()).collect();
    assert_eq!(ready, [stream_b.id()]);
    let text = drain(&mut ep, &stream_b);
    assert!(
        text.contains("for b") && text.contains("\"id\":5"),
        "{text}"
    );
    assert!(!drain(&mut ep, &stream_a).contains("for"));
    // Completed work is due at once: a driver that only hands the endpoint its
    // deadlines goes on with it, in its own session, as well.
    first.complete(ToolOutcome::text("for a"));
    assert!(ep.poll_timeout().is_some_and(|t| t <= now()));
    assert!(ep.handle_due(now()));
    let text = drain(&mut ep, &stream_a);
    assert!(text.contains("for a"), "{text}");
}
