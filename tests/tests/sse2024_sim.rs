//! The 2024-11-05 HTTP+SSE transport, reached by the backwards-compatible detection, on
//! scripted connections and a fake clock: which statuses fall back (and only with old
//! versions accepted), the `endpoint` event (relative, absolute, cross-origin, too long,
//! late, preceded by a message), a call answered on the stream, the stream cut under a
//! call, a server request answered by POST, and closing.
//!
//! The scripted server answers `POST /sse` with a configurable status (the Streamable
//! HTTP attempt), `GET /sse` with an open chunked event stream whose first event names
//! the endpoint, and `POST /message?sessionId=1` with `202`, putting its answer on the
//! stream.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use mcp_proto::client::http::{HttpConfig, HttpSseError, MAX_ENDPOINT_BYTES};
use mcp_proto::client::{
    CallError, CallOutput, CallRequest, ClientConfig, CloseReason, ConnId, Event,
};
use mcp_proto::http::EndpointUrl;
use mcp_proto::version::{EraMode, ProtocolVersion};
use mcp_tests::http_sim::{HttpSim, Reply, SeenRequest};
use serde_json::{Value, json};

const URL: &str = "http://127.0.0.1:9/sse";
const ENDPOINT: &str = "/message?sessionId=1";

/// The scripted HTTP+SSE server.
struct OldServer {
    /// The answer to a POST on the server URL (Streamable HTTP attempts).
    post_status: u16,
    /// The status of the GET (200: the stream).
    get_status: u16,
    /// Raw event-stream text sent before the endpoint event.
    before_endpoint: String,
    /// The endpoint event's data; `None`: no endpoint event.
    endpoint: Option<String>,
    /// Chunks for the stream, not yet delivered.
    outbox: Vec<u8>,
    /// The `tools/call` of `ask`, waiting for the answer to the server's ping.
    asking: Option<Value>,
    /// Everything on the stream (the endpoint event included) goes through the outbox,
    /// one byte per read.
    drip: bool,
    /// The status and body of the POSTs to the endpoint.
    post_reply: (u16, &'static str),
}

impl OldServer {
    fn new(post_status: u16) -> Self {
        OldServer {
            post_status,
            get_status: 200,
            before_endpoint: String::new(),
            endpoint: Some(ENDPOINT.to_owned()),
            outbox: Vec::new(),
            asking: None,
            drip: false,
            post_reply: (202, "Accepted"),
        }
    }

    fn push(&mut self, message: &Value) {
        let frame = format!("event: message\ndata: {message}\n\n");
        self.outbox.extend(chunk(&frame));
    }

    fn result(&mut self, id: &Value, result: Value) {
        self.push(&json!({"jsonrpc":"2.0","id":id,"result":result}));
    }

    /// A message POSTed to the endpoint: its answer goes on the stream.
    fn on_message(&mut self, body: &Value) {
        let id = &body["id"];
        match body["method"].as_str() {
            Some("initialize") => self.result(
                id,
                json!({"protocolVersion":"2024-11-05","capabilities":{"tools":{}},
                       "serverInfo":{"name":"old-sse","version":"0.1"}}),
            ),
            Some("tools/list") => self.result(
                id,
                json!({"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}),
            ),
            Some("tools/call") => match body["params"]["name"].as_str() {
                Some("echo") => {
                    let text = body["params"]["arguments"]["message"].clone();
                    self.result(id, json!({"content":[{"type":"text","text":text}]}));
                }
                Some("ask") => {
                    self.asking = Some(id.clone());
                    self.push(&json!({"jsonrpc":"2.0","id":"s1","method":"ping"}));
                }
                _ => {} // `hang`: never answered
            },
            Some(_) => {} // notifications
            None if body["id"] == "s1" => {
                if let Some(call) = self.asking.take() {
                    let text = format!("pong {}", body["result"]);
                    self.result(&call, json!({"content":[{"type":"text","text":text}]}));
                }
            }
            None => {}
        }
    }

    fn answer(&mut self, req: &SeenRequest) -> Reply {
        match (req.method.as_str(), req.target.as_str()) {
            ("POST", "/sse") => Reply::with_body(self.post_status, &[], "Cannot POST /sse"),
            ("GET", "/sse") if self.get_status != 200 => {
                Reply::with_body(self.get_status, &[], "no stream here")
            }
            ("GET", "/sse") => {
                let mut body = self.before_endpoint.clone();
                if let Some(ep) = &self.endpoint {
                    body.push_str(&format!("event: endpoint\ndata: {ep}\n\n"));
                }
                let mut out = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\
                    Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n"
                    .to_vec();
                if self.drip {
                    self.outbox.splice(0..0, chunk(&body));
                } else if !body.is_empty() {
                    out.extend(chunk(&body));
                }
                Reply::Raw(out)
            }
            ("POST", t) if t.starts_with("/message") => {
                let (status, body) = self.post_reply;
                if (200..300).contains(&status) {
                    self.on_message(&req.body);
                }
                Reply::with_body(status, &[("Content-Type", "text/plain")], body)
            }
            _ => Reply::with_body(404, &[], "not found"),
        }
    }
}

fn chunk(text: &str) -> Vec<u8> {
    format!("{:x}\r\n{text}\r\n", text.len()).into_bytes()
}

type Script = Box<dyn FnMut(&SeenRequest) -> Reply>;

/// The simulation and the server's state, with a run loop that delivers what the server
/// put on its stream.
struct Old {
    sim: HttpSim<Script>,
    server: Rc<RefCell<OldServer>>,
}

fn opted_in(mode: EraMode) -> ClientConfig {
    ClientConfig::new("sse2024-sim", "1.0")
        .era_mode(mode)
        .accept_pre_2025_06_versions()
}

impl Old {
    fn new(config: ClientConfig, server: OldServer) -> Self {
        Self::at(URL, config, server)
    }

    fn at(url: &str, config: ClientConfig, server: OldServer) -> Self {
        let server = Rc::new(RefCell::new(server));
        let script_server = Rc::clone(&server);
        let script: Script = Box::new(move |req| script_server.borrow_mut().answer(req));
        let http = HttpConfig::new(EndpointUrl::parse(url, false).unwrap());
        Old {
            sim: HttpSim::with_http(config, http, script),
            server,
        }
    }

    /// The connection carrying the GET stream, once requested.
    fn stream_conn(&self) -> Option<ConnId> {
        self.sim
            .requests
            .iter()
            .zip(&self.sim.request_conns)
            .find(|(r, _)| r.method == "GET")
            .map(|(_, c)| *c)
    }

    /// Delivers the stream's waiting bytes. True when any were.
    fn flush(&mut self) -> bool {
        let Some(conn) = self.stream_conn() else {
            return false;
        };
        if !self.sim.open.contains_key(&conn) {
            return false;
        }
        let bytes = std::mem::take(&mut self.server.borrow_mut().outbox);
        if bytes.is_empty() {
            return false;
        }
        if self.server.borrow().drip {
            for b in &bytes {
                self.sim
                    .client
                    .handle_read(self.sim.now, conn, std::slice::from_ref(b));
            }
        } else {
            self.sim.client.handle_read(self.sim.now, conn, &bytes);
        }
        true
    }

    fn run_until(&mut self, mut done: impl FnMut(&HttpSim<Script>) -> bool) {
        let mut jumps = 0;
        while !done(&self.sim) {
            let moved = self.sim.step();
            if self.flush() || moved {
                continue;
            }
            let Some(t) = self.sim.client.poll_timeout() else {
                panic!("stalled; events so far: {:#?}", self.sim.events)
            };
            self.sim.now = self.sim.now.max(t);
            self.sim.client.handle_timeout(self.sim.now);
            jumps += 1;
            assert!(jumps < 1000, "no progress");
        }
        while self.sim.step() || self.flush() {}
    }

    fn connect(&mut self) {
        self.run_until(|s| {
            s.events
                .iter()
                .any(|e| matches!(e, Event::Connected(_) | Event::Closed { .. }))
        });
    }

    fn call(&mut self, request: CallRequest) -> Result<CallOutput, CallError> {
        let id = self.sim.client.call(self.sim.now, request).expect("call");
        self.run_until(|s| s.completion(id).is_some());
        self.sim.completion(id).expect("completed")
    }

    fn closed(&self) -> Option<&CloseReason> {
        self.sim.events.iter().find_map(|e| match e {
            Event::Closed { reason } => Some(reason),
            _ => None,
        })
    }

    fn connected_version(&self) -> Option<ProtocolVersion> {
        self.sim.events.iter().find_map(|e| match e {
            Event::Connected(d) => Some(d.protocol_version),
            _ => None,
        })
    }

    /// `(method, target, JSON-RPC method)` of every request, in order.
    fn trail(&self) -> Vec<(String, String, String)> {
        self.sim
            .requests
            .iter()
            .map(|r| {
                (
                    r.method.clone(),
                    r.target.clone(),
                    r.rpc_method().to_owned(),
                )
            })
            .collect()
    }

    fn gets(&self) -> usize {
        self.sim
            .requests
            .iter()
            .filter(|r| r.method == "GET")
            .count()
    }
}

fn text(out: &CallOutput) -> String {
    out.result_as::<Value>().unwrap()["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn t(method: &str, target: &str, rpc: &str) -> (String, String, String) {
    (method.to_owned(), target.to_owned(), rpc.to_owned())
}

#[test]
fn initialize_refused_with_400_404_or_405_falls_back_to_http_sse() {
    for status in [400, 404, 405] {
        let mut old = Old::new(opted_in(EraMode::Auto), OldServer::new(status));
        old.connect();
        assert_eq!(
            old.connected_version(),
            Some(ProtocolVersion::V2024_11_05),
            "{status}: {:#?}",
            old.sim.events
        );
        assert_eq!(
            old.trail(),
            [
                t("POST", "/sse", "server/discover"),
                t("POST", "/sse", "initialize"),
                t("GET", "/sse", ""),
                t("POST", ENDPOINT, "initialize"),
                t("POST", ENDPOINT, "notifications/initialized"),
            ],
            "{status}"
        );
        let get = &old.sim.requests[2];
        assert_eq!(get.header("accept"), Some("text/event-stream"));
        assert_eq!(
            old.sim.client.http_sse_endpoint().map(|u| u.target()),
            Some(ENDPOINT)
        );
        // The initialize that drew the 4xx never ran: it goes again under a new id.
        assert_ne!(
            old.sim.requests[1].body["id"],
            old.sim.requests[3].body["id"]
        );
    }
}

#[test]
fn era_mode_legacy_falls_back_without_a_probe() {
    let mut old = Old::new(opted_in(EraMode::Legacy), OldServer::new(404));
    old.connect();
    assert_eq!(old.connected_version(), Some(ProtocolVersion::V2024_11_05));
    assert_eq!(
        old.trail()[..3],
        [
            t("POST", "/sse", "initialize"),
            t("GET", "/sse", ""),
            t("POST", ENDPOINT, "initialize"),
        ]
    );
}

#[test]
fn other_statuses_do_not_fall_back() {
    for status in [401, 403, 406, 410, 415, 500, 503] {
        let mut old = Old::new(opted_in(EraMode::Legacy), OldServer::new(status));
        old.connect();
        assert!(old.closed().is_some(), "{status}: {:#?}", old.sim.events);
        assert_eq!(old.gets(), 0, "{status}: no GET stream");
        assert!(old.sim.client.http_sse_endpoint().is_none());
    }
}

#[test]
fn a_modern_error_in_the_400_does_not_fall_back() {
    let server = Rc::new(RefCell::new(OldServer::new(400)));
    let s = Rc::clone(&server);
    let script: Script = Box::new(move |req| {
        if req.method == "POST" && req.target == "/sse" {
            let body = json!({"jsonrpc":"2.0","id":req.body["id"],
                "error":{"code":-32020,"message":"header mismatch"}});
            return Reply::json(400, &body);
        }
        s.borrow_mut().answer(req)
    });
    let http = HttpConfig::new(EndpointUrl::parse(URL, false).unwrap());
    let mut old = Old {
        sim: HttpSim::with_http(opted_in(EraMode::Legacy), http, script),
        server,
    };
    old.connect();
    assert!(old.closed().is_some(), "{:#?}", old.sim.events);
    assert_eq!(old.gets(), 0);
}

#[test]
fn without_the_opt_in_the_4xx_names_the_old_transport_and_the_opt_in() {
    for mode in [EraMode::Auto, EraMode::Legacy] {
        let config = ClientConfig::new("sse2024-sim", "1.0").era_mode(mode);
        let mut old = Old::new(config, OldServer::new(404));
        old.connect();
        let Some(CloseReason::Http(failure)) = old.closed() else {
            panic!("{:#?}", old.sim.events)
        };
        assert_eq!(failure.status, Some(404));
        assert!(
            failure.detail.contains("2024-11-05 HTTP+SSE")
                && failure.detail.contains("accept_pre_2025_06_versions"),
            "{}",
            failure.detail
        );
        assert_eq!(old.gets(), 0, "never tried without the opt-in");
    }
}

#[test]
fn endpoint_events_resolve_relative_and_absolute_urls() {
    for (url, data, target) in [
        (URL, "/message?sessionId=1", "/message?sessionId=1"),
        (URL, "message?sessionId=1", "/message?sessionId=1"),
        (
            "http://127.0.0.1:9/mcp/sse",
            "message?sessionId=1",
            "/mcp/message?sessionId=1",
        ),
        (
            URL,
            "http://127.0.0.1:9/message?sessionId=1",
            "/message?sessionId=1",
        ),
        (URL, "  /message?sessionId=1#x", "/message?sessionId=1"),
    ] {
        let mut server = OldServer::new(404);
        server.endpoint = Some(data.to_owned());
        let base_path = EndpointUrl::parse(url, false).unwrap().path().to_owned();
        let server = Rc::new(RefCell::new(server));
        let s = Rc::clone(&server);
        // This server lives under another path: map it onto the scripted one.
        let script: Script = Box::new(move |req| {
            let mut req = req.clone();
            if req.target == base_path {
                req.target = "/sse".to_owned();
            } else if let Some(rest) = req.target.strip_prefix("/mcp/message") {
                req.target = format!("/message{rest}");
            }
            s.borrow_mut().answer(&req)
        });
        let http = HttpConfig::new(EndpointUrl::parse(url, false).unwrap());
        let mut old = Old {
            sim: HttpSim::with_http(opted_in(EraMode::Legacy), http, script),
            server,
        };
        old.connect();
        assert_eq!(
            old.connected_version(),
            Some(ProtocolVersion::V2024_11_05),
            "{data}: {:#?}",
            old.sim.events
        );
        let posted: Vec<_> = old
            .sim
            .requests
            .iter()
            .skip(2)
            .map(|r| r.target.clone())
            .collect();
        assert!(posted.iter().all(|p| p == target), "{data}: {posted:?}");
    }
}

#[test]
fn a_cross_origin_endpoint_is_refused() {
    for data in [
        "http://127.0.0.1:10/message",
        "https://127.0.0.1:9/message",
        "//evil.example/message",
        "http://evil.example/message",
    ] {
        let mut server = OldServer::new(404);
        server.endpoint = Some(data.to_owned());
        let mut old = Old::new(opted_in(EraMode::Legacy), server);
        old.connect();
        assert!(
            matches!(
                old.closed(),
                Some(CloseReason::HttpSse(
                    HttpSseError::EndpointCrossOrigin { .. }
                ))
            ),
            "{data}: {:#?}",
            old.sim.events
        );
        // Nothing was sent after the GET (HttpSim also checks every connect's origin).
        assert_eq!(old.sim.requests.len(), 2, "{data}");
        assert!(old.sim.open.is_empty(), "every connection closed");
    }
}

#[test]
fn a_bad_endpoint_event_ends_the_connection_with_a_typed_error() {
    let long = format!("/{}", "a".repeat(MAX_ENDPOINT_BYTES));
    type Expect = fn(&HttpSseError) -> bool;
    let cases: [(&str, Expect); 3] = [
        (&long, |e| matches!(e, HttpSseError::EndpointTooLong { .. })),
        ("/a b", |e| {
            matches!(e, HttpSseError::EndpointInvalid { .. })
        }),
        ("", |e| matches!(e, HttpSseError::EndpointInvalid { .. })),
    ];
    for (data, expected) in cases {
        let mut server = OldServer::new(404);
        server.endpoint = Some(data.to_owned());
        let mut old = Old::new(opted_in(EraMode::Legacy), server);
        old.connect();
        match old.closed() {
            Some(CloseReason::HttpSse(e)) if expected(e) => {}
            other => panic!("{}: {other:?}", &data[..data.len().min(20)]),
        }
        assert_eq!(old.sim.requests.len(), 2);
    }
}

#[test]
fn a_message_before_the_endpoint_event_is_refused() {
    let mut server = OldServer::new(404);
    server.before_endpoint =
        "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n\n".into();
    let mut old = Old::new(opted_in(EraMode::Legacy), server);
    old.connect();
    assert!(
        matches!(
            old.closed(),
            Some(CloseReason::HttpSse(HttpSseError::MessageBeforeEndpoint { event_type }))
                if event_type == "message"
        ),
        "{:#?}",
        old.sim.events
    );
}

#[test]
fn no_endpoint_event_within_the_handshake_deadline() {
    let mut server = OldServer::new(404);
    server.endpoint = None;
    server.before_endpoint = ": waiting\n\n".into();
    let mut old = Old::new(opted_in(EraMode::Legacy), server);
    let start = old.sim.now;
    old.connect();
    let Some(CloseReason::HttpSse(HttpSseError::NoEndpoint(waited))) = old.closed() else {
        panic!("{:#?}", old.sim.events)
    };
    // The handshake's deadline: initialize_timeout (30 s) from the fallback.
    assert_eq!(*waited, Duration::from_secs(30));
    assert_eq!(
        old.sim.now.saturating_duration_since(start),
        Duration::from_secs(30)
    );
    assert_eq!(old.trail().len(), 2, "the initialize never left");
    assert!(old.sim.open.is_empty(), "the stream was dropped");
}

#[test]
fn the_stream_refused_ends_the_connection() {
    let mut server = OldServer::new(404);
    server.get_status = 405;
    let mut old = Old::new(opted_in(EraMode::Legacy), server);
    old.connect();
    assert!(
        matches!(
            old.closed(),
            Some(CloseReason::HttpSse(HttpSseError::StreamRefused {
                status: Some(405),
                ..
            }))
        ),
        "{:#?}",
        old.sim.events
    );
}

#[test]
fn a_call_is_posted_to_the_endpoint_and_answered_on_the_stream() {
    let mut old = Old::new(opted_in(EraMode::Auto), OldServer::new(404));
    old.connect();
    let tools = old.call(CallRequest::list_tools()).unwrap();
    assert!(format!("{tools:?}").contains("echo"), "{tools:?}");
    let out = old
        .call(CallRequest::call_tool("echo", json!({"message":"hello"})))
        .unwrap();
    assert_eq!(text(&out), "hello");
    let calls = old.sim.with_method("tools/call");
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].target, ENDPOINT);
    assert_eq!(old.gets(), 1, "one stream for the whole connection");
    assert!(old.closed().is_none());
}

#[test]
fn a_server_request_on_the_stream_is_answered_by_post() {
    let mut old = Old::new(opted_in(EraMode::Legacy), OldServer::new(404));
    old.connect();
    let out = old.call(CallRequest::call_tool("ask", json!({}))).unwrap();
    assert_eq!(text(&out), "pong {}");
    let answer = old
        .sim
        .requests
        .iter()
        .find(|r| r.body["id"] == "s1")
        .expect("the ping answered");
    assert_eq!(
        (answer.method.as_str(), answer.target.as_str()),
        ("POST", ENDPOINT)
    );
    assert_eq!(answer.body["result"], json!({}));
}

#[test]
fn the_stream_cut_mid_call_fails_the_call_without_sending_it_again() {
    let mut old = Old::new(opted_in(EraMode::Legacy), OldServer::new(404));
    old.connect();
    let call = old
        .sim
        .client
        .call(old.sim.now, CallRequest::call_tool("hang", json!({})))
        .unwrap();
    old.run_until(|s| s.with_method("tools/call").len() == 1);
    assert!(old.sim.completion(call).is_none());
    let conn = old.stream_conn().unwrap();
    old.sim.server_closes(conn);
    old.run_until(|s| s.completion(call).is_some());
    let err = old.sim.completion(call).unwrap().unwrap_err();
    let CallError::Closed(CloseReason::HttpSse(HttpSseError::StreamLost { .. })) = &err else {
        panic!("{err:?}")
    };
    assert!(err.to_string().contains("may have run"), "{err}");
    assert!(matches!(
        old.closed(),
        Some(CloseReason::HttpSse(HttpSseError::StreamLost { .. }))
    ));
    assert_eq!(
        old.sim.with_method("tools/call").len(),
        1,
        "never sent again"
    );
    assert_eq!(old.gets(), 1, "no new stream");
    assert!(old.sim.open.is_empty(), "every connection closed");
}

#[test]
fn close_drops_the_stream_without_a_delete() {
    let mut old = Old::new(opted_in(EraMode::Legacy), OldServer::new(404));
    old.connect();
    let conn = old.stream_conn().unwrap();
    old.sim.client.close(old.sim.now);
    old.run_until(|s| s.client.is_released());
    assert!(
        old.sim.closed.contains(&conn),
        "the stream's connection closed"
    );
    assert!(old.sim.requests.iter().all(|r| r.method != "DELETE"));
    assert!(old.sim.open.is_empty());
}

#[test]
fn the_stream_read_one_byte_at_a_time_works_the_same() {
    let mut server = OldServer::new(404);
    server.drip = true;
    let mut old = Old::new(opted_in(EraMode::Auto), server);
    old.connect();
    assert_eq!(old.connected_version(), Some(ProtocolVersion::V2024_11_05));
    let out = old
        .call(CallRequest::call_tool("echo", json!({"message":"drip"})))
        .unwrap();
    assert_eq!(text(&out), "drip");
}

#[test]
fn a_post_body_is_ignored_and_a_refused_post_fails_its_call() {
    let mut server = OldServer::new(404);
    server.post_reply = (200, "{\"jsonrpc\":\"2.0\",\"id\":999,\"result\":{}}");
    let mut old = Old::new(opted_in(EraMode::Legacy), server);
    old.connect();
    let out = old
        .call(CallRequest::call_tool(
            "echo",
            json!({"message":"body ignored"}),
        ))
        .unwrap();
    assert_eq!(text(&out), "body ignored");
    assert!(
        !old.sim
            .events
            .iter()
            .any(|e| matches!(e, Event::PeerError(_))),
        "{:#?}",
        old.sim.events
    );
    old.server.borrow_mut().post_reply = (400, "bad session");
    let err = old
        .call(CallRequest::call_tool("echo", json!({"message":"x"})))
        .unwrap_err();
    assert!(
        matches!(&err, CallError::Http(f) if f.status == Some(400)),
        "{err:?}"
    );
    assert!(
        old.closed().is_none(),
        "one refused POST is the call's failure"
    );
}

#[test]
fn a_cached_legacy_verdict_still_finds_the_old_transport() {
    let config = opted_in(EraMode::Auto)
        .known_era(Some((mcp_proto::Era::Legacy, ProtocolVersion::V2025_11_25)));
    let mut old = Old::new(config, OldServer::new(405));
    old.connect();
    assert_eq!(old.connected_version(), Some(ProtocolVersion::V2024_11_05));
    assert_eq!(
        old.trail()[..3],
        [
            t("POST", "/sse", "initialize"),
            t("GET", "/sse", ""),
            t("POST", ENDPOINT, "initialize"),
        ]
    );
}

#[test]
fn cancelling_or_timing_out_a_call_posts_notifications_cancelled_to_the_endpoint() {
    let mut old = Old::new(opted_in(EraMode::Legacy), OldServer::new(404));
    old.connect();
    let call = old
        .sim
        .client
        .call(old.sim.now, CallRequest::call_tool("hang", json!({})))
        .unwrap();
    old.run_until(|s| s.with_method("tools/call").len() == 1);
    old.sim.client.cancel(old.sim.now, call).unwrap();
    old.run_until(|s| s.completion(call).is_some());
    assert!(matches!(
        old.sim.completion(call),
        Some(Err(CallError::Cancelled))
    ));
    let timed = old
        .call(CallRequest::call_tool("hang", json!({})).timeout(Duration::from_secs(5)))
        .unwrap_err();
    assert!(matches!(timed, CallError::Timeout(_)), "{timed:?}");
    let cancelled = old.sim.with_method("notifications/cancelled");
    assert_eq!(cancelled.len(), 2, "{:#?}", old.trail());
    assert!(cancelled.iter().all(|r| r.target == ENDPOINT));
    assert!(old.closed().is_none(), "the stream and the session go on");
    let out = old
        .call(CallRequest::call_tool(
            "echo",
            json!({"message":"still here"}),
        ))
        .unwrap();
    assert_eq!(text(&out), "still here");
}
