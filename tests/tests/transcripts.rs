//! Transcripts (`mcp_proto::client::transcript`, `mcp_io::transcript`): simulated runs
//! over stdio and HTTP in both eras, with a round of input and a timeout, recorded and
//! replayed; and the transcripts recorded against the TypeScript and Python SDK servers
//! (`tests/transcripts/`), replayed with no server at all.
//!
//! # Re-recording the SDK transcripts
//!
//! With the fixtures installed (`bash tests/interop/setup.sh`):
//!
//! ```text
//! MCP_RECORD_TRANSCRIPTS=1 cargo test -p mcp-tests --test transcripts record_sdk_transcripts
//! ```
//!
//! It starts each server (stdio, and Streamable HTTP on a free loopback port), connects
//! with `mcp-blocking` in each era with a transcript sink, lists the tools, calls
//! `add(2, 3)`, closes, and writes `tests/transcripts/<sdk>-<transport>-<era>.jsonl`,
//! each checked by a replay before it is written. The times in them are the real ones
//! of that run; any run replays the same way.
//!
//! They are not seeds for `fuzz/fuzz_targets/client_server_bytes.rs`: that target takes
//! raw stdio bytes from a server, fed in fixed chunks, not transcript lines.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use mcp_blocking::{Client, HttpOptions, Options};
use mcp_io::transcript::{Recording, replay};
use mcp_proto::Instant;
use mcp_proto::client::http::HttpConfig;
use mcp_proto::client::{
    AcceptDefaults, CallError, CallRequest, ClientConfig, Event, InputHandler,
};
use mcp_proto::http::EndpointUrl;
use mcp_proto::model::ClientCapabilities;
use mcp_proto::server::example;
use mcp_proto::version::{Era, EraMode};
use mcp_tests::Sim;
use mcp_tests::http_sim::{HttpSim, Reply, SeenRequest};
use mcp_tests::interop::{Fixture, fixture, http_fixture};
use serde_json::{Value, json};

fn config(mode: EraMode) -> ClientConfig {
    ClientConfig::new("transcripts", "1.0")
        .era_mode(mode)
        .capabilities(ClientCapabilities::with_elicitation())
}

/// Every line the machine has, redacted as the adapters write them.
fn drain(client: &mut mcp_proto::client::Client, recording: &mut Recording) -> String {
    let mut text = String::new();
    recording.drain(client, &mut |line: &str| {
        text.push_str(line);
        text.push('\n');
    });
    text
}

fn replays(text: &str) -> usize {
    let summary = replay(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(summary.transcripts, 1);
    summary.entries
}

// ----- simulations ---------------------------------------------------------------------

#[test]
fn stdio_runs_with_input_and_a_timeout_replay_in_both_eras() {
    for mode in [EraMode::Auto, EraMode::Legacy] {
        let mut sim = Sim::new(config(mode), example::server());
        sim.client.start_recording();
        let mut recording = Recording::new(&[]);
        sim.handler = Some(Box::new(AcceptDefaults));
        sim.connect();
        let out = sim
            .call(CallRequest::call_tool("confirm", json!({})))
            .unwrap();
        assert_eq!(
            out.tool_result().unwrap().text(),
            "accepted: proceed=true name=friend"
        );
        let hang = CallRequest::call_tool("hang", json!({})).timeout(Duration::from_secs(5));
        assert_eq!(
            sim.call(hang).unwrap_err(),
            CallError::Timeout(Duration::from_secs(5))
        );
        sim.client.close(sim.now);
        sim.step();
        let text = drain(&mut sim.client, &mut recording);
        assert!(text.contains("InputRequested"), "{mode:?}");
        assert!(text.contains("Err(Timeout(5s))"), "{mode:?}");
        assert!(replays(&text) > 20, "{mode:?}");
    }
}

#[test]
fn a_restart_after_the_server_exits_replays() {
    let policy = mcp_proto::client::RestartPolicy::up_to(2);
    let mut sim = Sim::new(config(EraMode::Auto).restart(policy), example::server());
    sim.client.start_recording();
    let mut recording = Recording::new(&[]);
    sim.connect();
    sim.client
        .handle_eof(sim.now, mcp_proto::client::ConnId::STDIO);
    sim.restarts.push(Box::new(example::server()));
    let out = sim.call(CallRequest::call_tool("echo", json!({"text": "back"})));
    assert_eq!(out.unwrap().tool_result().unwrap().text(), "back");
    sim.client.close(sim.now);
    sim.step();
    let text = drain(&mut sim.client, &mut recording);
    assert!(text.contains("ServerRestarting"), "{text}");
    // The policy is part of the recorded config: without it the replay would close.
    assert!(text.contains(r#""restart":[2,500,30000]"#), "{text}");
    assert!(replays(&text) > 10);
}

/// The bundled example server answering each POST body as its stdio machine would: the
/// modern era is stateless, so one machine serves every request.
fn example_over_http() -> impl FnMut(&SeenRequest) -> Reply {
    let mut server = example::server();
    move |req| {
        if req.method != "POST" {
            return Reply::with_body(405, &[("Allow", "POST")], "");
        }
        let mut line = serde_json::to_vec(&req.body).unwrap();
        line.push(b'\n');
        server.handle_input(Instant::ZERO, &line);
        let mut out = Vec::new();
        while server.poll_transmit(Instant::ZERO, &mut out).is_some() {}
        match out.split(|b| *b == b'\n').next() {
            _ if req.body.get("id").is_none() => Reply::accepted(),
            Some(answer) if !answer.is_empty() => Reply::with_body(
                200,
                &[("Content-Type", "application/json")],
                std::str::from_utf8(answer).unwrap(),
            ),
            _ => Reply::Silence,
        }
    }
}

#[test]
fn a_modern_http_run_with_an_input_round_and_a_timeout_replays() {
    let mut sim = HttpSim::new(config(EraMode::Modern), example_over_http());
    sim.client.start_recording();
    let mut recording = Recording::new(&[]);
    sim.connect();
    let id = sim
        .client
        .call(sim.now, CallRequest::call_tool("confirm", json!({})))
        .unwrap();
    answer_input(&mut sim);
    sim.run_until(|s| s.completion(id).is_some());
    let out = sim.completion(id).unwrap().unwrap();
    assert_eq!(
        (out.rounds, out.tool_result().unwrap().text().as_str()),
        (1, "accepted: proceed=true name=friend")
    );
    let hang = CallRequest::call_tool("hang", json!({})).timeout(Duration::from_secs(5));
    assert_eq!(
        sim.call(hang).unwrap_err(),
        CallError::Timeout(Duration::from_secs(5))
    );
    sim.client.close(sim.now);
    sim.run_until(|s| s.client.is_released());
    let text = drain(&mut sim.client, &mut recording);
    assert!(text.contains("input_required") && text.contains("Err(Timeout(5s))"));
    assert!(replays(&text) > 20);
}

/// A URL whose query has a part without `=` (`?v2`): the transcript names it as the
/// requests went (the URL and the request lines follow one redaction rule), so the run
/// replays.
#[test]
fn a_run_on_a_url_with_a_bare_query_part_replays() {
    let url = "http://127.0.0.1:9/mcp?v2&api_key=k3y&page=1";
    let http = HttpConfig::new(EndpointUrl::parse(url, false).unwrap());
    let mut sim = HttpSim::with_http(config(EraMode::Modern), http, example_over_http());
    sim.client.start_recording();
    let mut recording = Recording::new(&[]);
    sim.connect();
    let echo = CallRequest::call_tool("echo", json!({"text": "hi"}));
    assert_eq!(sim.call(echo).unwrap().tool_result().unwrap().text(), "hi");
    sim.client.close(sim.now);
    sim.run_until(|s| s.client.is_released());
    let text = drain(&mut sim.client, &mut recording);
    assert!(!text.contains("k3y"), "{text}");
    assert!(text.contains("/mcp?v2&api_key=redacted&page=1"), "{text}");
    assert!(replays(&text) > 5);
}

/// Answers the first request for input with the schema's defaults.
fn answer_input<F: FnMut(&SeenRequest) -> Reply>(sim: &mut HttpSim<F>) {
    sim.run_until(|s| {
        s.events
            .iter()
            .any(|e| matches!(e, Event::InputRequested { .. }))
    });
    let Some(Event::InputRequested { input, request, .. }) = sim
        .events
        .iter()
        .find(|e| matches!(e, Event::InputRequested { .. }))
    else {
        unreachable!()
    };
    let answer = AcceptDefaults.answer(request);
    sim.client.respond(sim.now, *input, answer).unwrap();
}

const SESSION: &str = "sess-s3cr3t";

/// A legacy server with a session and a cookie: `confirm` asks for input on its event
/// stream (and answers once the test sends the rest), `hang` never answers.
fn legacy_with_session(req: &SeenRequest) -> Reply {
    let result = |id: &Value, result: Value| json!({"jsonrpc":"2.0","id":id,"result":result});
    match (req.method.as_str(), req.rpc_method()) {
        ("POST", "initialize") => Reply::with_body(
            200,
            &[
                ("Content-Type", "application/json"),
                ("Mcp-Session-Id", SESSION),
                ("Set-Cookie", "sid=c00kie-s3cr3t"),
            ],
            &result(
                &req.body["id"],
                json!({"protocolVersion":"2025-11-25","capabilities":{"tools":{}},
                    "serverInfo":{"name":"legacy","version":"1"}}),
            )
            .to_string(),
        ),
        ("GET", _) => Reply::with_body(405, &[("Allow", "POST")], ""),
        ("DELETE", _) => Reply::with_body(200, &[], ""),
        ("POST", "tools/call") if req.body["params"]["name"] == "hang" => Reply::Silence,
        ("POST", "tools/call") => {
            let ask = json!({"jsonrpc":"2.0","id":"e1","method":"elicitation/create","params":{
                "message":"Proceed?","requestedSchema":{"type":"object","properties":{
                    "ok":{"type":"boolean","default":true}}}}});
            let event = format!("data: {ask}\n\n");
            Reply::Raw(
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\
                     Transfer-Encoding: chunked\r\n\r\n{:x}\r\n{event}\r\n",
                    event.len()
                )
                .into_bytes(),
            )
        }
        _ => Reply::accepted(),
    }
}

#[test]
fn a_legacy_http_run_replays_with_its_secrets_redacted() {
    let url = "http://127.0.0.1:9/mcp?access_token=qs3cr3t&page=1";
    let mut http = HttpConfig::new(EndpointUrl::parse(url, false).unwrap());
    http.authorization = Some("Bearer tok-s3cr3t".into());
    // Configured headers: the one the redaction names is hidden in the header's record
    // of the configuration as in the requests, the other kept in both, so the replay
    // writes what the recording shows.
    http.headers = vec![
        ("X-Tenant".into(), "t3nant-s3cr3t".into()),
        ("X-Region".into(), "eu-west".into()),
    ];
    let mut sim = HttpSim::with_http(config(EraMode::Legacy), http, legacy_with_session);
    sim.client.start_recording();
    let mut recording = Recording::new(&["X-Tenant".to_owned()]);
    sim.connect();
    sim.client
        .set_authorization(Some("Bearer tok2-s3cr3t".into()));
    let id = sim
        .client
        .call(sim.now, CallRequest::call_tool("confirm", json!({})))
        .unwrap();
    answer_input(&mut sim);
    sim.run_until(|s| s.requests.iter().any(|r| r.body["id"] == "e1"));
    // The answer arrived: the server ends the call's stream with the result.
    let at = sim
        .requests
        .iter()
        .position(|r| r.rpc_method() == "tools/call")
        .unwrap();
    let done = json!({"jsonrpc":"2.0","id":sim.requests[at].body["id"],"result":{
        "content":[{"type":"text","text":"ok"}]}});
    let event = format!("data: {done}\n\n");
    let rest = format!("{:x}\r\n{event}\r\n0\r\n\r\n", event.len());
    sim.server_sends(sim.request_conns[at], rest.as_bytes());
    sim.run_until(|s| s.completion(id).is_some());
    assert_eq!(
        sim.completion(id)
            .unwrap()
            .unwrap()
            .tool_result()
            .unwrap()
            .text(),
        "ok"
    );
    let hang = CallRequest::call_tool("hang", json!({})).timeout(Duration::from_secs(5));
    assert_eq!(
        sim.call(hang).unwrap_err(),
        CallError::Timeout(Duration::from_secs(5))
    );
    sim.client.close(sim.now);
    sim.run_until(|s| s.client.is_released());
    assert_eq!(sim.requests.last().unwrap().method, "DELETE");

    let text = drain(&mut sim.client, &mut recording);
    for secret in [
        SESSION,
        "c00kie",
        "tok-s3cr3t",
        "tok2-s3cr3t",
        "qs3cr3t",
        "t3nant-s3cr3t",
    ] {
        assert!(
            !text.contains(secret),
            "{secret} in the transcript:\n{text}"
        );
    }
    assert!(text.contains(r#""url":"http://127.0.0.1:9/mcp?access_token=redacted&page=1""#));
    assert!(text.contains(r#"Mcp-Session-Id: [redacted]\r\n"#));
    assert!(text.contains(r#"X-Region: eu-west\r\n"#), "{text}");
    assert!(text.contains(r#"["X-Region","eu-west"]"#), "{text}");
    assert!(text.contains(r#"POST /mcp?access_token=[redacted]&page=1 HTTP/1.1"#));
    assert!(text.contains(r#""redaction":{"headers":["X-Tenant"],"rules":"wire-log"}"#));
    assert!(replays(&text) > 40);

    // A byte of the recorded answer changed: the replay names the event it changes.
    let tampered: String = text
        .lines()
        .map(|l| match l.contains(r#""in":"read""#) {
            true => l.replace(r#"\"text\":\"ok\""#, r#"\"text\":\"no\""#) + "\n",
            false => format!("{l}\n"),
        })
        .collect();
    assert_ne!(tampered, text);
    let error = replay(&tampered).unwrap_err().to_string();
    assert!(
        error.contains("CallCompleted") && error.contains("no"),
        "{error}"
    );
}

// ----- the SDK servers -------------------------------------------------------------------

fn transcripts_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("transcripts")
}

/// The recorded runs: (file stem, SDK, transport, era mode).
const RECORDED: [(&str, Fixture, &str, EraMode); 8] = [
    (
        "ts-stdio-modern",
        Fixture::TypeScript,
        "stdio",
        EraMode::Modern,
    ),
    (
        "ts-stdio-legacy",
        Fixture::TypeScript,
        "stdio",
        EraMode::Legacy,
    ),
    (
        "ts-http-modern",
        Fixture::TypeScript,
        "http",
        EraMode::Modern,
    ),
    (
        "ts-http-legacy",
        Fixture::TypeScript,
        "http",
        EraMode::Legacy,
    ),
    ("py-stdio-modern", Fixture::Python, "stdio", EraMode::Modern),
    ("py-stdio-legacy", Fixture::Python, "stdio", EraMode::Legacy),
    ("py-http-modern", Fixture::Python, "http", EraMode::Modern),
    ("py-http-legacy", Fixture::Python, "http", EraMode::Legacy),
];

#[test]
fn the_sdk_transcripts_replay_without_a_server() {
    for (stem, _, transport, mode) in RECORDED {
        let path = transcripts_dir().join(format!("{stem}.jsonl"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!("{}: {e} (see the module docs to record it)", path.display())
        });
        let summary = replay(&text).unwrap_or_else(|e| panic!("{stem}: {e}"));
        assert_eq!(summary.transcripts, 1, "{stem}");
        let header: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        assert_eq!(header["transport"], transport, "{stem}");
        let era = if mode == EraMode::Modern {
            Era::Modern
        } else {
            Era::Legacy
        };
        let version = if era == Era::Modern {
            "V2026_07_28"
        } else {
            "V2025_11_25"
        };
        assert!(
            text.contains(&format!(
                "Connected(ServerDetails {{ protocol_version: {version}"
            )),
            "{stem}"
        );
        assert!(
            text.contains(r#"\"text\":\"5\""#),
            "{stem}: add(2, 3) answered"
        );
    }
}

#[test]
fn record_sdk_transcripts() {
    if std::env::var_os("MCP_RECORD_TRANSCRIPTS").is_none() {
        eprintln!("skipping: set MCP_RECORD_TRANSCRIPTS=1 to record tests/transcripts/ again");
        return;
    }
    for (stem, sdk, transport, mode) in RECORDED {
        let lines = Arc::new(Mutex::new(String::new()));
        let sink = Arc::clone(&lines);
        let options = Options::new().transcript(move |line| {
            let mut text = sink.lock().unwrap_or_else(PoisonError::into_inner);
            text.push_str(line);
            text.push('\n');
        });
        let config = ClientConfig::new("transcripts", "1.0").era_mode(mode);
        // Kept alive until the client closed.
        let mut server = None;
        let mut client = match transport {
            "stdio" => {
                let Some(cmd) = fixture(sdk) else { return };
                Client::connect_stdio_with(cmd, config, options)
            }
            _ => {
                let Some(s) = http_fixture(sdk, &[]) else {
                    return;
                };
                let url = s.url.clone();
                server = Some(s);
                Client::connect_http_with(&url, config, options, HttpOptions::new())
            }
        }
        .unwrap_or_else(|e| panic!("{stem}: {e}"));
        let tools = client
            .list_tools()
            .unwrap_or_else(|e| panic!("{stem}: {e}"));
        assert!(tools.iter().any(|t| t.name == "add"), "{stem}");
        let sum = client.call_tool("add", json!({"a": 2, "b": 3}));
        assert_eq!(sum.unwrap_or_else(|e| panic!("{stem}: {e}")).text(), "5");
        client.close();
        drop(server);
        let text = std::mem::take(&mut *lines.lock().unwrap_or_else(PoisonError::into_inner));
        replay(&text).unwrap_or_else(|e| panic!("{stem} does not replay: {e}"));
        let path = transcripts_dir().join(format!("{stem}.jsonl"));
        std::fs::create_dir_all(transcripts_dir()).unwrap();
        std::fs::write(&path, text).unwrap();
        eprintln!("recorded {}", path.display());
    }
}
