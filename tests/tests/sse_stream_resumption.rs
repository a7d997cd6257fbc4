//! Deterministic simulations of how a legacy (2025-06-18 / 2025-11-25) client resumes
//! its event streams: SSE polling (SEP-1699), the resumption of the session's own GET
//! stream, cancelling a call while its stream is being resumed, and events a server
//! replays at the resumption point.

use std::time::Duration;

use mcp_proto::client::{CallError, CallRequest, ClientConfig, Event, InputAnswer};
use mcp_proto::model::ClientCapabilities;
use mcp_proto::version::EraMode;
use mcp_tests::http_sim::{HttpSim, Reply, SeenRequest};
use serde_json::{Value, json};

fn config() -> ClientConfig {
    ClientConfig::new("sse-resume", "1.0")
        .era_mode(EraMode::Legacy)
        .capabilities(ClientCapabilities::with_elicitation())
}

fn legacy_init(req: &SeenRequest, session: &str) -> Reply {
    Reply::with_body(
        200,
        &[
            ("Content-Type", "application/json"),
            ("Mcp-Session-Id", session),
        ],
        &json!({"jsonrpc":"2.0","id":req.body["id"],"result":{
            "protocolVersion":"2025-11-25","capabilities":{"tools":{}},
            "serverInfo":{"name":"legacy","version":"1"}}})
        .to_string(),
    )
}

/// A complete (cleanly ended) event-stream response with this body.
fn sse_complete(body: &str) -> Reply {
    Reply::with_body(200, &[("Content-Type", "text/event-stream")], body)
}

/// An event-stream response whose head and first bytes arrive, and that then stays
/// open without another byte.
fn sse_open(first: &str) -> Reply {
    Reply::Raw(
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{first}\r\n",
            first.len()
        )
        .into_bytes(),
    )
}

fn tool_result(id: &Value, text: &str) -> String {
    json!({"jsonrpc":"2.0","id":id,"result":{"content":[{"type":"text","text":text}]}}).to_string()
}

/// Runs until `done`, or until nothing is left to do before `limit` on the fake clock.
fn run_for<F: FnMut(&SeenRequest) -> Reply>(
    sim: &mut HttpSim<F>,
    limit: Duration,
    done: impl Fn(&HttpSim<F>) -> bool,
) {
    let end = mcp_proto::Instant::ZERO + limit;
    for _ in 0..100_000 {
        if done(sim) {
            return;
        }
        if sim.step() {
            continue;
        }
        match sim.client.poll_timeout() {
            Some(t) if t <= end => {
                sim.now = sim.now.max(t);
                sim.client.handle_timeout(sim.now);
            }
            _ => return,
        }
    }
    panic!("no end");
}

fn resumptions(sim: &HttpSim<impl FnMut(&SeenRequest) -> Reply>) -> Vec<usize> {
    (0..sim.requests.len())
        .filter(|i| sim.requests[*i].header("last-event-id").is_some())
        .collect()
}

/// SEP-1699 polling, as 2025-11-25 describes it and as this project's own server does
/// in `sse_polling` mode: the POST gets only a priming event with `retry:` and ends;
/// every `GET` resuming the unfinished request gets what is new (here, for a while,
/// nothing), `retry:` again, and its end. The client must keep polling at the server's
/// pace until the response comes or the call's own deadline passes; it must not give the
/// call up after a few empty polls, nor stretch its polls far past the server's `retry`.
/// Connects, makes the call `named`, answers the first request for input (the server's
/// id 7) and runs the call to its success; then checks that the user was asked once and
/// the server answered once.
fn call_answering_the_question_once(sim: &mut HttpSim<impl FnMut(&SeenRequest) -> Reply>) {
    let id = sim.start(CallRequest::call_tool("named", json!({})));
    sim.run_until(|s| {
        s.events
            .iter()
            .any(|e| matches!(e, Event::InputRequested { .. }))
    });
    let input = sim
        .events
        .iter()
        .find_map(|e| match e {
            Event::InputRequested { input, .. } => Some(*input),
            _ => None,
        })
        .unwrap();
    let content = json!({"action":"accept","content":{"n":"ada"}});
    sim.client
        .respond(sim.now, input, InputAnswer::Result(content))
        .unwrap();
    sim.run_until(|s| s.completion(id).is_some());
    sim.step();
    assert!(sim.completion(id).unwrap().is_ok());
    let asked = sim
        .events
        .iter()
        .filter(|e| matches!(e, Event::InputRequested { .. }))
        .count();
    let answers = sim
        .requests
        .iter()
        .filter(|r| {
            r.method == "POST" && r.body["id"] == json!(7) && r.body.get("method").is_none()
        })
        .count();
    assert_eq!(
        (asked, answers),
        (1, 1),
        "asked {asked} times, answered {answers} times"
    );
}

#[test]
fn a_polling_server_with_nothing_new_yet_is_followed_until_the_response() {
    let mut call_id = Value::Null;
    let mut polls = 0;
    let mut sim = HttpSim::new(config(), move |req| {
        match (req.method.as_str(), req.rpc_method()) {
            ("POST", "initialize") => legacy_init(req, "s"),
            ("POST", "notifications/initialized") => Reply::accepted(),
            ("GET", _) if req.header("last-event-id").is_none() => Reply::with_body(405, &[], ""),
            ("POST", "tools/call") => {
                call_id = req.body["id"].clone();
                sse_complete("id: p-0\nretry: 1000\ndata:\n\n")
            }
            ("GET", _) => {
                assert_eq!(req.header("last-event-id"), Some("p-0"));
                polls += 1;
                if polls < 12 {
                    sse_complete("retry: 1000\n\n")
                } else {
                    sse_complete(&format!(
                        "id: p-1\ndata: {}\n\n",
                        tool_result(&call_id, "finally")
                    ))
                }
            }
            _ => Reply::accepted(),
        }
    });
    sim.connect();
    let id = sim
        .client
        .call(
            sim.now,
            CallRequest::call_tool("slow", json!({})).timeout(Duration::from_secs(120)),
        )
        .unwrap();
    sim.run_until(|s| s.completion(id).is_some());
    let outcome = sim.completion(id).unwrap();
    assert!(
        outcome
            .as_ref()
            .is_ok_and(|o| o.tool_result().unwrap().text() == "finally"),
        "the call was given up while the server was still polling it: {outcome:?}"
    );
    let polls = resumptions(&sim);
    assert_eq!(polls.len(), 12);
    for pair in polls.windows(2) {
        let gap = sim.request_times[pair[1]] - sim.request_times[pair[0]];
        assert!(
            gap <= Duration::from_secs(2),
            "polled {gap:?} apart, asked 1 s"
        );
    }
}

/// The session's own GET stream under 2025-11-25 polling ("GET streams follow the same
/// polling behaviour"): each GET gets a priming event (or nothing new), `retry:`, and its
/// end. The client keeps listening: a server request sent on the stream after a few quiet
/// polls still reaches it.
#[test]
fn a_polled_server_stream_keeps_being_listened_to() {
    let mut gets = 0;
    let mut sim = HttpSim::new(config(), move |req| {
        match (req.method.as_str(), req.rpc_method()) {
            ("POST", "initialize") => legacy_init(req, "s"),
            ("POST", "notifications/initialized") => Reply::accepted(),
            ("GET", _) => {
                gets += 1;
                match (req.header("last-event-id"), gets) {
                    (None, 1) => sse_complete("id: g-0\nretry: 1000\ndata:\n\n"),
                    (Some("g-0"), n) if n < 10 => sse_complete("retry: 1000\n\n"),
                    (Some("g-0"), _) => sse_open(
                        "id: g-1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"still here\"}}\n\n",
                    ),
                    (other, n) => panic!("GET #{n} with Last-Event-ID {other:?}"),
                }
            }
            _ => Reply::accepted(),
        }
    });
    sim.connect();
    run_for(&mut sim, Duration::from_secs(120), |s| {
        s.events.iter().any(|e| matches!(e, Event::Log { .. }))
    });
    let gets: Vec<_> = sim.requests.iter().filter(|r| r.method == "GET").collect();
    assert!(
        sim.events.iter().any(|e| matches!(e, Event::Log { .. })),
        "the client stopped listening after {} GETs; events: {:?}",
        gets.len(),
        sim.events
    );
}

/// A call cancelled while its stream is being resumed: the `GET` carrying the
/// resumption is let go like the call's own POST would be, so a server that holds it
/// open (it will never answer a cancelled request) does not keep a connection, and a
/// stream slot, for ever.
#[test]
fn cancelling_a_call_lets_its_resumption_stream_go() {
    let mut sim = HttpSim::new(config(), |req| {
        match (req.method.as_str(), req.rpc_method()) {
            ("POST", "initialize") => legacy_init(req, "s"),
            ("POST", "notifications/initialized") => Reply::accepted(),
            ("GET", _) if req.header("last-event-id").is_none() => Reply::with_body(405, &[], ""),
            ("POST", "tools/call") => Reply::sse_then_drop(None, &[(Some("c-0"), "")]),
            ("GET", _) => sse_open("id: c-1\ndata:\n\n"),
            _ => Reply::accepted(),
        }
    });
    sim.connect();
    let id = sim.start(CallRequest::call_tool("slow", json!({})));
    sim.run_until(|s| !resumptions(s).is_empty());
    sim.step();
    let get = resumptions(&sim)[0];
    let conn = sim.request_conns[get];
    assert!(sim.open.contains_key(&conn), "the resumption is open");
    sim.client.cancel(sim.now, id).unwrap();
    sim.step();
    sim.advance(Duration::from_secs(5));
    assert!(matches!(
        sim.completion(id),
        Some(Err(CallError::Cancelled))
    ));
    assert!(
        sim.closed.contains(&conn),
        "the resumption of a cancelled call is still open on {conn}"
    );
}

/// The same for a call that timed out.
#[test]
fn a_timed_out_call_lets_its_resumption_stream_go() {
    let mut sim = HttpSim::new(config(), |req| {
        match (req.method.as_str(), req.rpc_method()) {
            ("POST", "initialize") => legacy_init(req, "s"),
            ("POST", "notifications/initialized") => Reply::accepted(),
            ("GET", _) if req.header("last-event-id").is_none() => Reply::with_body(405, &[], ""),
            ("POST", "tools/call") => Reply::sse_then_drop(None, &[(Some("t-0"), "")]),
            ("GET", _) => sse_open("id: t-1\ndata:\n\n"),
            _ => Reply::accepted(),
        }
    });
    sim.connect();
    let err = sim
        .call(CallRequest::call_tool("slow", json!({})).timeout(Duration::from_secs(5)))
        .unwrap_err();
    assert!(matches!(err, CallError::Timeout(_)), "{err:?}");
    sim.advance(Duration::from_secs(5));
    let conn = sim.request_conns[resumptions(&sim)[0]];
    assert!(
        sim.closed.contains(&conn),
        "the resumption of a timed-out call is still open on {conn}"
    );
}

/// The session's GET stream broke after event `g-2`; reopening it fails once (the
/// server answers 500 while it restarts). The next attempt must still resume after `g-2`:
/// without `Last-Event-ID` the server starts a fresh stream and whatever it sent in the
/// gap (a server request, say) is never replayed.
#[test]
fn a_failed_reopening_of_the_server_stream_keeps_its_resumption_point() {
    let mut gets = 0;
    let mut sim = HttpSim::new(config(), move |req| {
        match (req.method.as_str(), req.rpc_method()) {
            ("POST", "initialize") => legacy_init(req, "s"),
            ("POST", "notifications/initialized") => Reply::accepted(),
            ("GET", _) => {
                gets += 1;
                match gets {
                    1 => Reply::sse_then_drop(
                        None,
                        &[
                            (Some("g-1"), ""),
                            (
                                Some("g-2"),
                                r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"one"}}"#,
                            ),
                        ],
                    ),
                    2 => Reply::with_body(500, &[], "restarting"),
                    _ => sse_open(": ok\n\n"),
                }
            }
            _ => Reply::accepted(),
        }
    });
    sim.connect();
    sim.run_until(|s| s.requests.iter().filter(|r| r.method == "GET").count() >= 3);
    let gets: Vec<Option<&str>> = sim
        .requests
        .iter()
        .filter(|r| r.method == "GET")
        .map(|r| r.header("last-event-id"))
        .collect();
    assert_eq!(gets, vec![None, Some("g-2"), Some("g-2")]);
}

/// A server that, asked to resume after `e-1`, sends `e-1` again: the client already
/// has that event (it said so), so it is not acted on twice. Here it is a request for
/// input: the user must not be asked the same question twice, nor the server answered
/// twice.
#[test]
fn an_event_replayed_at_the_resumption_point_is_not_acted_on_twice() {
    let ask = r#"{"jsonrpc":"2.0","id":7,"method":"elicitation/create","params":{"message":"Name?","requestedSchema":{"type":"object","properties":{"n":{"type":"string"}}}}}"#;
    let mut call_id = Value::Null;
    let mut sim = HttpSim::new(config(), move |req| {
        match (req.method.as_str(), req.rpc_method()) {
            ("POST", "initialize") => legacy_init(req, "s"),
            ("POST", "notifications/initialized") => Reply::accepted(),
            ("GET", _) if req.header("last-event-id").is_none() => Reply::with_body(405, &[], ""),
            ("POST", "tools/call") => {
                call_id = req.body["id"].clone();
                Reply::sse_then_drop(Some(2000), &[(Some("e-0"), ""), (Some("e-1"), ask)])
            }
            ("GET", _) => {
                assert_eq!(req.header("last-event-id"), Some("e-1"));
                Reply::sse(
                    &[],
                    &[
                        (Some("e-1"), ask),
                        (Some("e-2"), &tool_result(&call_id, "named")),
                    ],
                )
            }
            _ => Reply::accepted(),
        }
    });
    sim.connect();
    call_answering_the_question_once(&mut sim);
}

/// A log message belongs to the call whose stream carried it, on the call's own POST
/// stream and on the `GET` that resumes that stream alike.
#[test]
fn a_log_on_a_resumed_stream_still_belongs_to_its_call() {
    let log = |n: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/message","params":{{"level":"info","data":"{n}"}}}}"#
        )
    };
    let mut call_id = Value::Null;
    let mut sim = HttpSim::new(config(), move |req| {
        match (req.method.as_str(), req.rpc_method()) {
            ("POST", "initialize") => legacy_init(req, "s"),
            ("POST", "notifications/initialized") => Reply::accepted(),
            ("GET", _) if req.header("last-event-id").is_none() => Reply::with_body(405, &[], ""),
            ("POST", "tools/call") => {
                call_id = req.body["id"].clone();
                Reply::sse_then_drop(None, &[(Some("l-0"), ""), (Some("l-1"), &log("before"))])
            }
            ("GET", _) => Reply::sse(
                &[],
                &[
                    (Some("l-2"), &log("after")),
                    (Some("l-3"), &tool_result(&call_id, "done")),
                ],
            ),
            _ => Reply::accepted(),
        }
    });
    sim.connect();
    let id = sim.start(CallRequest::call_tool("t", json!({})));
    sim.run_until(|s| s.completion(id).is_some());
    let logs: Vec<_> = sim
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Log { call, message } => Some((message.data.to_string(), *call)),
            _ => None,
        })
        .collect();
    assert_eq!(
        logs,
        vec![
            ("\"before\"".to_owned(), Some(id)),
            ("\"after\"".to_owned(), Some(id))
        ]
    );
}

/// A server that replays a stream from its start (it ignores where `Last-Event-ID`
/// points) sends again a request for input the client already answered, under its
/// own event id. Legacy request ids are never reused within a session, so that is the
/// same request: the user is not asked again, and the server gets one answer.
#[test]
fn a_request_for_input_replayed_from_before_the_resumption_point_is_not_asked_again() {
    let ask = r#"{"jsonrpc":"2.0","id":7,"method":"elicitation/create","params":{"message":"Name?","requestedSchema":{"type":"object","properties":{"n":{"type":"string"}}}}}"#;
    let log = r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"thinking"}}"#;
    let mut call_id = Value::Null;
    let mut sim = HttpSim::new(config(), move |req| {
        match (req.method.as_str(), req.rpc_method()) {
            ("POST", "initialize") => legacy_init(req, "s"),
            ("POST", "notifications/initialized") => Reply::accepted(),
            ("GET", _) if req.header("last-event-id").is_none() => Reply::with_body(405, &[], ""),
            ("POST", "tools/call") => {
                call_id = req.body["id"].clone();
                Reply::sse_then_drop(Some(2000), &[(Some("e-0"), ""), (Some("e-1"), ask)])
            }
            ("GET", _) if req.header("last-event-id") == Some("e-1") => {
                Reply::sse_then_drop(Some(2000), &[(Some("e-2"), log)])
            }
            // Resumed after e-2, it starts over from the beginning.
            ("GET", _) => Reply::sse(
                &[],
                &[
                    (Some("e-0"), ""),
                    (Some("e-1"), ask),
                    (Some("e-2"), log),
                    (Some("e-3"), &tool_result(&call_id, "named")),
                ],
            ),
            _ => Reply::accepted(),
        }
    });
    sim.connect();
    call_answering_the_question_once(&mut sim);
    assert!(
        sim.events.iter().any(|e| matches!(
            e,
            Event::PeerError(mcp_proto::client::PeerError::ReusedRequestId { .. })
        )),
        "the replay is reported"
    );
}

/// A server that gives every event of a stream the same id (its stream's, say) resumes
/// a stream with events under the very id it was resumed after. Only the event at the
/// resumption point sent again (the same id and the same data) is the client's already:
/// the answer that comes under that id is new, and it completes the call.
#[test]
fn a_new_event_under_the_id_the_stream_was_resumed_after_is_delivered() {
    let log = r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"thinking"}}"#;
    let mut call_id = Value::Null;
    let mut sim = HttpSim::new(config(), move |req| {
        match (req.method.as_str(), req.rpc_method()) {
            ("POST", "initialize") => legacy_init(req, "s"),
            ("POST", "notifications/initialized") => Reply::accepted(),
            ("GET", _) if req.header("last-event-id").is_none() => Reply::with_body(405, &[], ""),
            ("POST", "tools/call") => {
                call_id = req.body["id"].clone();
                Reply::sse_then_drop(Some(1000), &[(Some("stream-1"), log)])
            }
            ("GET", _) => {
                assert_eq!(req.header("last-event-id"), Some("stream-1"));
                Reply::sse(
                    &[],
                    &[
                        // The resumption point, replayed: not acted on again.
                        (Some("stream-1"), log),
                        (Some("stream-1"), &tool_result(&call_id, "answered")),
                    ],
                )
            }
            _ => Reply::accepted(),
        }
    });
    sim.connect();
    let id = sim.start(CallRequest::call_tool("t", json!({})).timeout(Duration::from_secs(60)));
    run_for(&mut sim, Duration::from_secs(60), |s| {
        s.completion(id).is_some()
    });
    let outcome = sim.completion(id).expect("completed");
    let text = outcome
        .unwrap_or_else(|e| panic!("{e}"))
        .tool_result()
        .unwrap()
        .text();
    assert_eq!(text, "answered");
    let logs = sim
        .events
        .iter()
        .filter(|e| matches!(e, Event::Log { .. }))
        .count();
    assert_eq!(logs, 1, "the replayed event is not delivered twice");
    assert_eq!(resumptions(&sim).len(), 1);
}

/// The ids of requests for input answered belong to their session: after the session
/// expired (a `404`) and a new one began, the server numbers its requests afresh, and a
/// request on a resumed stream of the new session under an id answered in the old one is
/// new, asked and answered (not taken for a replay and left unanswered).
#[test]
fn a_request_for_input_in_a_new_session_under_an_id_answered_in_the_old_is_asked() {
    let ask = r#"{"jsonrpc":"2.0","id":7,"method":"elicitation/create","params":{"message":"Name?","requestedSchema":{"type":"object","properties":{"n":{"type":"string"}}}}}"#;
    let mut inits = 0;
    let mut call_id = Value::Null;
    let mut sim = HttpSim::new(config(), move |req| {
        let session = req.header("mcp-session-id").unwrap_or("").to_owned();
        match (req.method.as_str(), req.rpc_method()) {
            ("POST", "initialize") => {
                inits += 1;
                legacy_init(req, &format!("s{inits}"))
            }
            ("POST", "notifications/initialized") => Reply::accepted(),
            ("GET", _) if req.header("last-event-id").is_none() => Reply::with_body(405, &[], ""),
            // The first session has expired once its first call is over.
            ("POST", "tools/call") if session == "s1" && !call_id.is_null() => {
                Reply::with_body(404, &[], "")
            }
            ("POST", "tools/call") => {
                call_id = req.body["id"].clone();
                Reply::sse_then_drop(Some(2000), &[(Some(&format!("{session}-0")), "")])
            }
            // In either session: the request for input on the resumed stream, then the
            // result once it is answered.
            ("GET", _) if req.header("last-event-id") == Some(&format!("{session}-0")) => {
                Reply::sse_then_drop(Some(2000), &[(Some(&format!("{session}-1")), ask)])
            }
            ("GET", _) => Reply::sse(
                &[],
                &[(
                    Some(&format!("{session}-2")),
                    &tool_result(&call_id, "named"),
                )],
            ),
            _ => Reply::accepted(),
        }
    });
    sim.connect();
    let mut answered = std::collections::BTreeSet::new();
    let mut answer_inputs = |sim: &mut HttpSim<_>, id| {
        for _ in 0..50 {
            sim.run_until(|s| {
                s.completion(id).is_some()
                    || s.events.iter().any(|e| {
                        matches!(e, Event::InputRequested { input, .. } if !answered.contains(input))
                    })
            });
            if sim.completion(id).is_some() {
                return;
            }
            let input = sim
                .events
                .iter()
                .find_map(|e| match e {
                    Event::InputRequested { input, .. } if !answered.contains(input) => {
                        Some(*input)
                    }
                    _ => None,
                })
                .unwrap();
            answered.insert(input);
            let content = json!({"action":"accept","content":{"n":"ada"}});
            sim.client
                .respond(sim.now, input, InputAnswer::Result(content))
                .unwrap();
        }
    };
    let first = sim.start(CallRequest::call_tool("named", json!({})));
    answer_inputs(&mut sim, first);
    assert!(sim.completion(first).unwrap().is_ok());
    // Met with the 404: a new session.
    let second = sim.start(CallRequest::call_tool("named", json!({})));
    sim.run_until(|s| s.completion(second).is_some());
    let third = sim.start(CallRequest::call_tool("named", json!({})));
    answer_inputs(&mut sim, third);
    let asked = sim
        .events
        .iter()
        .filter(|e| matches!(e, Event::InputRequested { .. }))
        .count();
    assert_eq!(asked, 2, "{:?}", sim.events);
    assert!(sim.completion(third).unwrap().is_ok());
    assert!(
        (sim.requests.iter()).any(|r| r.header("mcp-session-id") == Some("s2")),
        "a new session began"
    );
}
