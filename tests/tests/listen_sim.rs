//! Simulations on the fake clock for change notifications and subscriptions: the
//! legacy `resources/subscribe` / `resources/unsubscribe` and unsolicited
//! `notifications/*/list_changed`, and the 2026-07-28 `subscriptions/listen`.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

use mcp_proto::Instant;
use mcp_proto::client::http::HttpConfig;
use mcp_proto::client::http::pool::PoolConfig;
use mcp_proto::client::{
    ApiMisuse, CallError, CallId, CallRequest, Change, ClientConfig, CloseReason, Event, ListenEnd,
    ListenFilter, PeerError,
};
use mcp_proto::http::EndpointUrl;
use mcp_proto::version::{EraMode, ProtocolVersion};
use mcp_tests::http_sim::{HttpSim, Reply, SeenRequest};
use mcp_tests::{Peer, Scripted, Sim, load_vectors};
use serde_json::{Value, json};

fn config(mode: EraMode) -> ClientConfig {
    ClientConfig::new("listen-sim", "1.0").era_mode(mode)
}

fn answer(m: &Value, result: Value) -> String {
    json!({"jsonrpc":"2.0","id":m["id"],"result":result}).to_string()
}

/// Handshake answers for either era: `server/discover` (2026) or `initialize` (2025).
fn handshake(m: &Value) -> Option<Vec<String>> {
    match m["method"].as_str()? {
        "server/discover" => Some(vec![answer(
            m,
            json!({"resultType":"complete","supportedVersions":["2026-07-28"],
                "capabilities":{"tools":{"listChanged":true},"prompts":{"listChanged":true},
                    "resources":{"subscribe":true,"listChanged":true}}}),
        )]),
        "initialize" => Some(vec![answer(
            m,
            json!({"protocolVersion":"2025-11-25",
                "capabilities":{"tools":{"listChanged":true},"resources":{"subscribe":true,"listChanged":true}},
                "serverInfo":{"name":"s","version":"1"}}),
        )]),
        "notifications/initialized" => Some(Vec::new()),
        _ => None,
    }
}

fn changes(sim: &Sim) -> Vec<Change> {
    sim.events
        .iter()
        .filter_map(|e| match e {
            Event::Notification(n) => Change::from_notification(n),
            _ => None,
        })
        .collect()
}

// ----- legacy: resources/subscribe and unsolicited list_changed -------------------------

#[test]
fn legacy_subscribe_delivers_updates_and_list_changes_until_unsubscribed() {
    let peer = Scripted::new(|m: &Value| {
        handshake(m).unwrap_or_else(|| match m["method"].as_str() {
            Some("resources/subscribe") => vec![
                answer(m, json!({})),
                json!({"jsonrpc":"2.0","method":"notifications/resources/updated",
                    "params":{"uri":m["params"]["uri"]}})
                .to_string(),
                json!({"jsonrpc":"2.0","method":"notifications/tools/list_changed"}).to_string(),
                json!({"jsonrpc":"2.0","method":"notifications/prompts/list_changed"}).to_string(),
                json!({"jsonrpc":"2.0","method":"notifications/resources/list_changed"})
                    .to_string(),
            ],
            Some("resources/unsubscribe") => vec![answer(m, json!({}))],
            _ => Vec::new(),
        })
    });
    let mut sim = Sim::new(config(EraMode::Legacy), peer);
    sim.connect();
    sim.call(CallRequest::subscribe_resource("file:///a"))
        .unwrap();
    let sent = sim.sent_with_method("resources/subscribe");
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["params"], json!({"uri":"file:///a"}));
    sim.run_until(|s| changes(s).len() == 4);
    assert_eq!(
        changes(&sim),
        vec![
            Change::ResourceUpdated {
                uri: "file:///a".into()
            },
            Change::ToolsListChanged,
            Change::PromptsListChanged,
            Change::ResourcesListChanged,
        ]
    );
    sim.call(CallRequest::unsubscribe_resource("file:///a"))
        .unwrap();
    assert_eq!(
        sim.sent_with_method("resources/unsubscribe")[0]["params"],
        json!({"uri":"file:///a"})
    );
}

#[test]
fn resources_subscribe_is_refused_locally_in_2026() {
    let peer = Scripted::new(|m: &Value| handshake(m).unwrap_or_default());
    let mut sim = Sim::new(config(EraMode::Auto), peer);
    sim.connect();
    for (request, method) in [
        (
            CallRequest::subscribe_resource("file:///a"),
            "resources/subscribe",
        ),
        (
            CallRequest::unsubscribe_resource("file:///a"),
            "resources/unsubscribe",
        ),
    ] {
        assert_eq!(
            sim.call(request).unwrap_err(),
            CallError::NotInVersion {
                method: method.into(),
                version: ProtocolVersion::V2026_07_28
            }
        );
        assert!(sim.sent_with_method(method).is_empty());
    }
}

// ----- 2026-07-28: subscriptions/listen over stdio -------------------------------------

/// A 2026 server that acknowledges every listen with what `grant` makes of the filter,
/// and whose further lines the test pushes with [`Server::say`].
#[derive(Clone, Default)]
struct Server {
    out: Rc<RefCell<Vec<u8>>>,
    /// The listen requests seen, in order.
    listens: Rc<RefCell<Vec<Value>>>,
    /// Cancellations seen.
    cancelled: Rc<RefCell<Vec<Value>>>,
    /// Acknowledge with this filter instead of the one asked for.
    grant: Rc<RefCell<Option<Value>>>,
    /// Do not acknowledge at all.
    silent: Rc<Cell<bool>>,
    buf: Vec<u8>,
}

impl Server {
    fn say(&self, message: Value) {
        let mut out = self.out.borrow_mut();
        out.extend_from_slice(message.to_string().as_bytes());
        out.push(b'\n');
    }

    fn listen_id(&self, i: usize) -> Value {
        self.listens.borrow()[i]["id"].clone()
    }
}

impl Peer for Server {
    fn handle(&mut self, _now: Instant, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
        while let Some(i) = self.buf.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.buf.drain(..=i).collect();
            let m: Value = serde_json::from_slice(&line[..i]).unwrap();
            if let Some(lines) = handshake(&m) {
                for l in lines {
                    self.say(serde_json::from_str(&l).unwrap());
                }
                continue;
            }
            match m["method"].as_str() {
                Some("subscriptions/listen") => {
                    let granted = self
                        .grant
                        .borrow()
                        .clone()
                        .unwrap_or_else(|| m["params"]["notifications"].clone());
                    self.listens.borrow_mut().push(m.clone());
                    if self.silent.get() {
                        continue;
                    }
                    self.say(
                        json!({"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged",
                        "params":{"_meta":{"io.modelcontextprotocol/subscriptionId":m["id"]},
                            "notifications":granted}}),
                    );
                }
                Some("notifications/cancelled") => self.cancelled.borrow_mut().push(m),
                _ => {}
            }
        }
    }
    fn transmit(&mut self, out: &mut Vec<u8>) {
        out.append(&mut self.out.borrow_mut());
    }
}

fn modern() -> (Sim, Server) {
    let server = Server::default();
    let mut sim = Sim::new(config(EraMode::Auto), server.clone());
    sim.connect();
    (sim, server)
}

fn listen(sim: &mut Sim, filter: &ListenFilter) -> CallId {
    let id = sim
        .client
        .call(sim.now, CallRequest::listen(filter))
        .unwrap();
    sim.run_until(|s| acknowledged(s, id).is_some());
    id
}

fn acknowledged(sim: &Sim, id: CallId) -> Option<(ListenFilter, ListenFilter)> {
    sim.events.iter().find_map(|e| match e {
        Event::SubscriptionAcknowledged {
            subscription,
            acknowledged,
            refused,
        } if *subscription == id => Some((acknowledged.clone(), refused.clone())),
        _ => None,
    })
}

fn received(sim: &Sim, id: CallId) -> Vec<(Option<Change>, String)> {
    sim.events
        .iter()
        .filter_map(|e| match e {
            Event::SubscriptionNotification {
                subscription,
                change,
                notification,
            } if *subscription == id => Some((change.clone(), notification.method.clone())),
            _ => None,
        })
        .collect()
}

fn ended(sim: &Sim, id: CallId) -> Option<ListenEnd> {
    sim.events.iter().find_map(|e| match e {
        Event::SubscriptionEnded { subscription, end } if *subscription == id => Some(end.clone()),
        _ => None,
    })
}

/// `message` with every `subscriptionId` and `id` that was `"listen-1"` or `1` set to `id`.
fn retarget(mut message: Value, id: &Value) -> Value {
    if message.get("id").is_some() {
        message["id"] = id.clone();
    }
    if let Some(meta) = message.pointer_mut("/params/_meta")
        && meta.get("io.modelcontextprotocol/subscriptionId").is_some()
    {
        meta["io.modelcontextprotocol/subscriptionId"] = id.clone();
    }
    if let Some(meta) = message.pointer_mut("/result/_meta") {
        meta["io.modelcontextprotocol/subscriptionId"] = id.clone();
    }
    if message.pointer("/params/requestId").is_some() {
        message["params"]["requestId"] = id.clone();
    }
    message
}

fn vector(id: &str) -> Value {
    let all = load_vectors("subscriptions.json");
    all["vectors_2026"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["id"] == id)
        .unwrap_or_else(|| panic!("no vector {id}"))
        .clone()
}

#[test]
fn the_spec_vectors_play_out_over_stdio_up_to_the_graceful_end() {
    let (mut sim, server) = modern();
    let request = vector("spec-listen-request")["message"].clone();
    let filter = ListenFilter::from_json(&request["params"]["notifications"]);
    let sub = listen(&mut sim, &filter);
    let sent = server.listens.borrow()[0].clone();
    assert_eq!(
        sent["params"]["notifications"],
        request["params"]["notifications"]
    );
    assert_eq!(
        sent["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    let (granted, refused) = acknowledged(&sim, sub).unwrap();
    assert_eq!(granted, filter);
    assert!(refused.is_empty());
    let id = server.listen_id(0);
    server.say(retarget(
        vector("spec-resource-updated")["message"].clone(),
        &id,
    ));
    server.say(
        json!({"jsonrpc":"2.0","method":"notifications/tools/list_changed",
        "params":{"_meta":{"io.modelcontextprotocol/subscriptionId":id}}}),
    );
    sim.run_until(|s| received(s, sub).len() == 2);
    assert_eq!(
        received(&sim, sub),
        vec![
            (
                Some(Change::ResourceUpdated {
                    uri: "file:///project/config.json".into()
                }),
                "notifications/resources/updated".into()
            ),
            (
                Some(Change::ToolsListChanged),
                "notifications/tools/list_changed".into()
            ),
        ]
    );
    // No timeout: a subscription outlives any request deadline.
    sim.advance(Duration::from_secs(3600));
    assert_eq!(ended(&sim, sub), None);
    server.say(retarget(
        vector("spec-graceful-close")["message"].clone(),
        &id,
    ));
    sim.run_until(|s| ended(s, sub).is_some());
    assert_eq!(ended(&sim, sub), Some(ListenEnd::Complete));
    assert!(
        sim.completion(sub).is_none(),
        "the end is the only completion"
    );
}

#[test]
fn a_partial_acknowledgement_reports_what_was_refused() {
    let (mut sim, server) = modern();
    let v = vector("partial-ack");
    *server.grant.borrow_mut() = Some(v["ack_filter"].clone());
    let sub = listen(&mut sim, &ListenFilter::from_json(&v["request_filter"]));
    let (granted, refused) = acknowledged(&sim, sub).unwrap();
    assert_eq!(granted, ListenFilter::from_json(&v["ack_filter"]));
    assert_eq!(refused, ListenFilter::new().prompts().resource("file:///b"));
}

#[test]
fn two_subscriptions_on_stdio_are_told_apart_by_subscription_id() {
    let (mut sim, server) = modern();
    let a = listen(&mut sim, &ListenFilter::new().tools());
    let b = listen(&mut sim, &ListenFilter::new().prompts());
    let (ia, ib) = (server.listen_id(0), server.listen_id(1));
    assert_ne!(ia, ib);
    for (id, method) in [
        (&ib, "notifications/prompts/list_changed"),
        (&ia, "notifications/tools/list_changed"),
        (&ib, "notifications/prompts/list_changed"),
    ] {
        server.say(json!({"jsonrpc":"2.0","method":method,
            "params":{"_meta":{"io.modelcontextprotocol/subscriptionId":id}}}));
    }
    // Not for any subscription: an ordinary notification, as before.
    server.say(json!({"jsonrpc":"2.0","method":"notifications/tools/list_changed"}));
    sim.run_until(|s| received(s, a).len() + received(s, b).len() == 3);
    sim.step();
    assert_eq!(
        received(&sim, a),
        vec![(
            Some(Change::ToolsListChanged),
            "notifications/tools/list_changed".into()
        )]
    );
    assert_eq!(received(&sim, b).len(), 2);
    assert!(
        sim.events
            .iter()
            .any(|e| matches!(e, Event::Notification(_)))
    );
}

#[test]
fn a_server_cancellation_ends_only_its_subscription() {
    let (mut sim, server) = modern();
    let a = listen(&mut sim, &ListenFilter::new().tools());
    let b = listen(&mut sim, &ListenFilter::new().tools());
    let teardown = vector("stdio-server-teardown")["message"].clone();
    server.say(retarget(teardown, &server.listen_id(0)));
    sim.run_until(|s| ended(s, a).is_some());
    assert_eq!(ended(&sim, a), Some(ListenEnd::CancelledByServer));
    assert_eq!(ended(&sim, b), None);
    // A late answer for the torn-down listen is ignored, not a stranger.
    server
        .say(json!({"jsonrpc":"2.0","id":server.listen_id(0),"result":{"resultType":"complete"}}));
    sim.step();
    assert!(!sim.events.iter().any(|e| matches!(e, Event::PeerError(_))));
}

#[test]
fn the_client_ends_a_stdio_subscription_with_notifications_cancelled() {
    let (mut sim, server) = modern();
    let sub = listen(&mut sim, &ListenFilter::new().tools());
    sim.client.cancel(sim.now, sub).unwrap();
    sim.step();
    assert_eq!(ended(&sim, sub), Some(ListenEnd::EndedByClient));
    let cancelled = server.cancelled.borrow();
    assert_eq!(cancelled.len(), 1);
    assert_eq!(cancelled[0]["params"]["requestId"], server.listen_id(0));
    let expected = vector("stdio-client-cancel")["message"].clone();
    assert_eq!(cancelled[0]["method"], expected["method"]);
}

#[test]
fn a_closed_transport_ends_every_subscription() {
    let (mut sim, _server) = modern();
    let a = listen(&mut sim, &ListenFilter::new().tools());
    let b = listen(&mut sim, &ListenFilter::new().resource("file:///a"));
    sim.client
        .handle_eof(sim.now, mcp_proto::client::ConnId::STDIO);
    sim.drain();
    for sub in [a, b] {
        assert!(
            matches!(
                ended(&sim, sub),
                Some(ListenEnd::Failed(CallError::Closed(
                    CloseReason::ServerExited { .. }
                )))
            ),
            "{:?}",
            ended(&sim, sub)
        );
    }
}

#[test]
fn subscriptions_are_bounded_and_legacy_has_none() {
    let (mut sim, _server) = modern();
    let filter = ListenFilter::new().tools();
    let open: Vec<CallId> = (0..16)
        .map(|_| {
            sim.client
                .call(sim.now, CallRequest::listen(&filter))
                .unwrap()
        })
        .collect();
    assert_eq!(
        sim.client.call(sim.now, CallRequest::listen(&filter)),
        Err(ApiMisuse::TooManySubscriptions)
    );
    sim.client.cancel(sim.now, open[0]).unwrap();
    sim.client
        .call(sim.now, CallRequest::listen(&filter))
        .unwrap();

    let peer = Scripted::new(|m: &Value| handshake(m).unwrap_or_default());
    let mut sim = Sim::new(config(EraMode::Legacy), peer);
    sim.connect();
    let sub = sim
        .client
        .call(sim.now, CallRequest::listen(&filter))
        .unwrap();
    sim.run_until(|s| ended(s, sub).is_some());
    assert!(matches!(
        ended(&sim, sub),
        Some(ListenEnd::Failed(CallError::NotInVersion { .. }))
    ));
    assert!(sim.sent_with_method("subscriptions/listen").is_empty());
}

// ----- 2026-07-28: subscriptions/listen over Streamable HTTP ---------------------------

fn http_result(req: &SeenRequest, result: Value) -> Reply {
    Reply::json(
        200,
        &json!({"jsonrpc":"2.0","id":req.body["id"],"result":result}),
    )
}

fn ack_for(req: &SeenRequest) -> String {
    json!({"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged",
        "params":{"_meta":{"io.modelcontextprotocol/subscriptionId":req.body["id"]},
            "notifications":req.body["params"]["notifications"]}})
    .to_string()
}

/// The head and first chunk of an SSE response that stays open.
fn open_stream(events: &[String]) -> Reply {
    let mut body = String::new();
    for e in events {
        body.push_str(&format!("event: message\ndata: {e}\n\n: keep-alive\n\n"));
    }
    Reply::Raw(
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{body}\r\n",
            body.len()
        )
        .into_bytes(),
    )
}

fn chunk(event: &Value) -> Vec<u8> {
    let body = format!("event: message\ndata: {event}\n\n");
    format!("{:x}\r\n{body}\r\n", body.len()).into_bytes()
}

fn http_config(max_connections: usize) -> HttpConfig {
    let url = EndpointUrl::parse("http://127.0.0.1:9/mcp", false).unwrap();
    let mut http = HttpConfig::new(url);
    let mut pool = PoolConfig::default();
    pool.max_connections = max_connections;
    http.pool = pool;
    http
}

/// A connected HTTP simulation (a pool of four) with a listen for tool changes started.
fn http_listening<F: FnMut(&SeenRequest) -> Reply>(script: F) -> (HttpSim<F>, CallId) {
    let mut sim = HttpSim::with_http(config(EraMode::Auto), http_config(4), script);
    sim.connect();
    let sub = sim
        .client
        .call(sim.now, CallRequest::listen(&ListenFilter::new().tools()))
        .unwrap();
    (sim, sub)
}

fn http_discover(req: &SeenRequest) -> Option<Reply> {
    (req.rpc_method() == "server/discover").then(|| {
        http_result(
            req,
            json!({"resultType":"complete","supportedVersions":["2026-07-28"],
                "capabilities":{"tools":{"listChanged":true},"resources":{"subscribe":true}}}),
        )
    })
}

fn http_ended<F: FnMut(&SeenRequest) -> Reply>(sim: &HttpSim<F>, id: CallId) -> Option<ListenEnd> {
    sim.events.iter().find_map(|e| match e {
        Event::SubscriptionEnded { subscription, end } if *subscription == id => Some(end.clone()),
        _ => None,
    })
}

fn http_received<F: FnMut(&SeenRequest) -> Reply>(sim: &HttpSim<F>, id: CallId) -> Vec<Change> {
    sim.events
        .iter()
        .filter_map(|e| match e {
            Event::SubscriptionNotification {
                subscription,
                change: Some(c),
                ..
            } if *subscription == id => Some(c.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn over_http_a_dropped_stream_listens_again_with_backoff_and_holds_no_request_slot() {
    let mut listens = 0;
    let script = move |req: &SeenRequest| {
        if let Some(r) = http_discover(req) {
            return r;
        }
        match req.rpc_method() {
            "subscriptions/listen" => {
                listens += 1;
                let changed = json!({"jsonrpc":"2.0","method":"notifications/tools/list_changed",
                    "params":{"_meta":{"io.modelcontextprotocol/subscriptionId":req.body["id"]}}})
                .to_string();
                match listens {
                    // Acknowledged, one notification, then the stream drops.
                    1 => Reply::sse_then_drop(None, &[(None, &ack_for(req)), (None, &changed)]),
                    // The connection fails before any response.
                    2 => Reply::NetworkError,
                    _ => open_stream(&[ack_for(req)]),
                }
            }
            "tools/list" => http_result(req, json!({"resultType":"complete","tools":[]})),
            other => panic!("unexpected {other}"),
        }
    };
    let mut sim = HttpSim::with_http(config(EraMode::Auto), http_config(1), script);
    sim.connect();
    let start = sim.now;
    let sub = sim
        .client
        .call(sim.now, CallRequest::listen(&ListenFilter::new().tools()))
        .unwrap();
    sim.run_until(|s| s.with_method("subscriptions/listen").len() == 3 && {
        s.events
            .iter()
            .filter(|e| matches!(e, Event::SubscriptionAcknowledged { subscription, .. } if *subscription == sub))
            .count()
            == 2
    });
    let delays: Vec<(u32, Duration)> = sim
        .events
        .iter()
        .filter_map(|e| match e {
            Event::SubscriptionReconnecting { attempt, delay, .. } => Some((*attempt, *delay)),
            _ => None,
        })
        .collect();
    // The first drop followed an acknowledgement; the second brought nothing: doubled.
    assert_eq!(
        delays,
        vec![(1, Duration::from_secs(1)), (2, Duration::from_secs(2))]
    );
    assert_eq!(sim.now - start, Duration::from_secs(3));
    assert_eq!(http_received(&sim, sub), vec![Change::ToolsListChanged]);
    assert_eq!(http_ended(&sim, sub), None);
    // Each attempt is a fresh request id, all naming the same filter.
    let listens: Vec<SeenRequest> = sim
        .with_method("subscriptions/listen")
        .into_iter()
        .cloned()
        .collect();
    assert_ne!(listens[0].body["id"], listens[2].body["id"]);
    assert_eq!(
        listens[2].body["params"]["notifications"],
        json!({"toolsListChanged":true})
    );

    // The open stream holds no request connection, even with a pool of one, and has
    // no deadline.
    sim.advance(Duration::from_secs(3600));
    sim.call(CallRequest::list_tools()).unwrap();
    assert_eq!(http_ended(&sim, sub), None);

    // Notifications on the stream are its own, by stream as by subscriptionId.
    let stream = sim.request_conns[sim.requests.len() - 2];
    let rpc = listens[2].body["id"].clone();
    sim.server_sends(
        stream,
        &chunk(
            &json!({"jsonrpc":"2.0","method":"notifications/resources/updated",
            "params":{"_meta":{"io.modelcontextprotocol/subscriptionId":rpc},"uri":"file:///a"}}),
        ),
    );
    assert_eq!(
        http_received(&sim, sub).last(),
        Some(&Change::ResourceUpdated {
            uri: "file:///a".into()
        })
    );

    // The client ends it by closing the stream: nothing else is sent.
    let sent = sim.requests.len();
    sim.client.cancel(sim.now, sub).unwrap();
    sim.step();
    assert_eq!(http_ended(&sim, sub), Some(ListenEnd::EndedByClient));
    assert!(sim.closed.contains(&stream));
    assert_eq!(sim.requests.len(), sent);
}

#[test]
fn over_http_the_complete_result_ends_the_subscription_and_reconnects_are_bounded() {
    let script = |req: &SeenRequest| {
        if let Some(r) = http_discover(req) {
            return r;
        }
        match req.rpc_method() {
            "subscriptions/listen"
                if req.body["params"]["notifications"]["toolsListChanged"] == true =>
            {
                let done = json!({"jsonrpc":"2.0","id":req.body["id"],
                    "result":{"resultType":"complete",
                        "_meta":{"io.modelcontextprotocol/subscriptionId":req.body["id"]}}})
                .to_string();
                Reply::sse(&[], &[(None, &ack_for(req)), (None, &done)])
            }
            // Never acknowledged: the connection always fails.
            "subscriptions/listen" => Reply::NetworkError,
            other => panic!("unexpected {other}"),
        }
    };
    let (mut sim, done) = http_listening(script);
    sim.run_until(|s| http_ended(s, done).is_some());
    assert_eq!(http_ended(&sim, done), Some(ListenEnd::Complete));

    let start = sim.now;
    let failing = sim
        .client
        .call(sim.now, CallRequest::listen(&ListenFilter::new().prompts()))
        .unwrap();
    sim.run_until(|s| http_ended(s, failing).is_some());
    assert!(matches!(
        http_ended(&sim, failing),
        Some(ListenEnd::Failed(CallError::Http(_)))
    ));
    // Five reconnections, waits 1 + 2 + 4 + 8 + 16 s, then it gives up.
    assert_eq!(sim.with_method("subscriptions/listen").len(), 1 + 6);
    assert_eq!(sim.now - start, Duration::from_secs(31));
}

#[test]
fn a_notification_before_the_acknowledgement_is_delivered_and_reported() {
    let (mut sim, server) = modern();
    server.silent.set(true);
    let sub = sim
        .client
        .call(sim.now, CallRequest::listen(&ListenFilter::new().tools()))
        .unwrap();
    sim.run_until(|s| s.sent_with_method("subscriptions/listen").len() == 1);
    let id = server.listen_id(0);
    let changed = json!({"jsonrpc":"2.0","method":"notifications/tools/list_changed",
        "params":{"_meta":{"io.modelcontextprotocol/subscriptionId":id}}});
    server.say(changed.clone());
    sim.run_until(|s| received(s, sub).len() == 1);
    assert!(sim.events.iter().any(|e| matches!(
        e,
        Event::PeerError(PeerError::BeforeAcknowledgement { method })
            if method == "notifications/tools/list_changed"
    )));
    // Acknowledged (with nothing granted): later notifications are in order.
    server.say(
        json!({"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged",
        "params":{"_meta":{"io.modelcontextprotocol/subscriptionId":id},"notifications":{}}}),
    );
    sim.run_until(|s| acknowledged(s, sub).is_some());
    assert_eq!(
        acknowledged(&sim, sub),
        Some((ListenFilter::new(), ListenFilter::new().tools()))
    );
    sim.events.clear();
    server.say(changed);
    sim.run_until(|s| received(s, sub).len() == 1);
    assert!(!sim.events.iter().any(|e| matches!(e, Event::PeerError(_))));
}

#[test]
fn over_http_ending_a_subscription_while_it_waits_to_reconnect_sends_nothing_more() {
    let script = |req: &SeenRequest| {
        if let Some(r) = http_discover(req) {
            return r;
        }
        Reply::NetworkError
    };
    let (mut sim, sub) = http_listening(script);
    sim.run_until(|s| {
        s.events
            .iter()
            .any(|e| matches!(e, Event::SubscriptionReconnecting { .. }))
    });
    sim.client.cancel(sim.now, sub).unwrap();
    sim.step();
    assert_eq!(http_ended(&sim, sub), Some(ListenEnd::EndedByClient));
    sim.advance(Duration::from_secs(60));
    assert_eq!(sim.with_method("subscriptions/listen").len(), 1);
    assert_eq!(
        sim.client.cancel(sim.now, sub),
        Err(ApiMisuse::UnknownCall(sub))
    );
}

#[test]
fn a_listen_never_acknowledged_ends_at_its_timeout_and_an_acknowledged_one_has_none() {
    let (mut sim, server) = modern();
    server.silent.set(true);
    let start = sim.now;
    let listen_5s = |sim: &mut Sim| {
        let request = CallRequest::listen(&ListenFilter::new().tools());
        let request = request.timeout(Duration::from_secs(5));
        sim.client.call(sim.now, request).unwrap()
    };
    let sub = listen_5s(&mut sim);
    sim.run_until(|s| ended(s, sub).is_some());
    assert_eq!(
        ended(&sim, sub),
        Some(ListenEnd::Failed(CallError::Timeout(Duration::from_secs(
            5
        ))))
    );
    assert_eq!(sim.now - start, Duration::from_secs(5));
    // The server is told the listen is over.
    sim.step();
    assert_eq!(server.cancelled.borrow().len(), 1);
    assert_eq!(
        server.cancelled.borrow()[0]["params"]["requestId"],
        server.listen_id(0)
    );

    // Acknowledged within its timeout: open for as long as it lasts.
    server.silent.set(false);
    let sub = listen_5s(&mut sim);
    sim.run_until(|s| acknowledged(s, sub).is_some());
    sim.advance(Duration::from_secs(3600));
    assert_eq!(ended(&sim, sub), None);
}

/// The reconnection delays of the subscriptions so far, in order.
fn reconnect_delays<F: FnMut(&SeenRequest) -> Reply>(sim: &HttpSim<F>) -> Vec<(u32, u64)> {
    sim.events
        .iter()
        .filter_map(|e| match e {
            Event::SubscriptionReconnecting { attempt, delay, .. } => {
                Some((*attempt, delay.as_secs()))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn over_http_a_server_that_acknowledges_and_drops_the_stream_is_backed_off_and_given_up() {
    let script = |req: &SeenRequest| {
        if let Some(r) = http_discover(req) {
            return r;
        }
        Reply::sse_then_drop(None, &[(None, &ack_for(req))])
    };
    let (mut sim, sub) = http_listening(script);
    let start = sim.now;
    sim.run_until(|s| http_ended(s, sub).is_some() || s.requests.len() > 40);
    assert_eq!(
        reconnect_delays(&sim),
        [(1, 1), (2, 2), (3, 4), (4, 8), (5, 16)]
    );
    assert!(matches!(
        http_ended(&sim, sub),
        Some(ListenEnd::Failed(CallError::Http(_)))
    ));
    assert_eq!(sim.with_method("subscriptions/listen").len(), 6);
    assert_eq!(sim.now - start, Duration::from_secs(31));
}

#[test]
fn over_http_a_stream_that_lasted_starts_the_backoff_afresh() {
    let mut listens = 0;
    let script = move |req: &SeenRequest| {
        if let Some(r) = http_discover(req) {
            return r;
        }
        listens += 1;
        match listens {
            2 => Reply::sse_then_drop(None, &[(None, &ack_for(req))]),
            _ => open_stream(&[ack_for(req)]),
        }
    };
    let (mut sim, sub) = http_listening(script);
    let acks = |s: &HttpSim<_>| {
        s.events
            .iter()
            .filter(|e| matches!(e, Event::SubscriptionAcknowledged { subscription, .. } if *subscription == sub))
            .count()
    };
    sim.run_until(|s| acks(s) == 1);
    // Up 10 s, then lost: not steady yet.
    sim.advance(Duration::from_secs(10));
    let stream = *sim.request_conns.last().unwrap();
    sim.server_closes(stream);
    sim.run_until(|s| acks(s) == 3);
    assert_eq!(reconnect_delays(&sim), [(1, 1), (2, 2)]);
    // Up 40 s: its loss starts again from the first delay.
    sim.advance(Duration::from_secs(40));
    let stream = *sim.request_conns.last().unwrap();
    sim.server_closes(stream);
    sim.run_until(|s| acks(s) == 4);
    assert_eq!(reconnect_delays(&sim), [(1, 1), (2, 2), (1, 1)]);
    assert_eq!(http_ended(&sim, sub), None);
}
