//! The blocking client against real child processes: the bundled example server (both
//! eras) and small `sh` scripts that misbehave on purpose.

mod common;

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

#[cfg(unix)]
use mcp_blocking::mcp_proto::Limits;
use mcp_blocking::mcp_proto::client::{
    AcceptDefaults, CallError, CallRequest, ClientConfig, CloseReason, InputAnswer, InputHandler,
    InputRequest,
};
use mcp_blocking::mcp_proto::model::ClientCapabilities;
use mcp_blocking::mcp_proto::server::example;
use mcp_blocking::mcp_proto::{Era, EraMode, ProtocolVersion};
use mcp_blocking::{Client, Direction, Error, HttpOptions, Local, Options, StdioCommand};
use serde_json::json;

fn example_server(era: &str) -> StdioCommand {
    StdioCommand::new(common::example("example-server")).args(["--era", era])
}

fn config(mode: EraMode) -> ClientConfig {
    ClientConfig::new("mcp-blocking-tests", "0").era_mode(mode)
}

fn connect(era: &str, mode: EraMode) -> Client {
    Client::connect_stdio(example_server(era), config(mode)).expect("connect")
}

#[cfg(unix)]
fn sh(script: &str) -> StdioCommand {
    StdioCommand::new("sh").arg("-c").arg(script)
}

#[test]
fn auto_mode_finds_the_modern_era() {
    let mut client = connect("both", EraMode::Auto);
    assert_eq!(client.era(), Era::Modern);
    assert_eq!(client.protocol_version(), ProtocolVersion::V2026_07_28);
    assert_eq!(client.server_name(), "mcp-example");
    assert_eq!(client.restarts(), 0);
    let tools: Vec<String> = client
        .list_tools()
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    for name in ["echo", "add", "confirm", "hang", "fail"] {
        assert!(
            tools.iter().any(|t| t == name),
            "{name} missing from {tools:?}"
        );
    }
    let sum = client.call_tool("add", json!({"a": 2, "b": 3})).unwrap();
    assert_eq!(sum.text(), "5");
    assert_eq!(sum.is_error, None);
    let shutdown = client.close();
    assert!(!shutdown.killed, "the example server exits on stdin EOF");
    assert!(shutdown.status.is_some_and(|s| s.success()));
}

#[test]
fn modern_mode_pins_2026() {
    let mut client = connect("both", EraMode::Modern);
    assert_eq!(client.era(), Era::Modern);
    assert_eq!(
        client
            .call_tool("add", json!({"a": 1.5, "b": 2}))
            .unwrap()
            .text(),
        "3.5"
    );
}

#[test]
fn legacy_mode_runs_initialize() {
    let mut client = connect("both", EraMode::Legacy);
    assert_eq!(client.era(), Era::Legacy);
    assert_eq!(client.protocol_version(), ProtocolVersion::V2025_11_25);
    assert_eq!(
        client
            .call_tool("add", json!({"a": 2, "b": 3}))
            .unwrap()
            .text(),
        "5"
    );
    assert_eq!(client.list_tools().unwrap().len(), 6);
}

#[test]
fn auto_mode_falls_back_for_a_legacy_only_server() {
    let mut client = connect("legacy", EraMode::Auto);
    assert_eq!(client.era(), Era::Legacy);
    assert_eq!(
        client
            .call_tool("echo", json!({"text": "hi"}))
            .unwrap()
            .text(),
        "hi"
    );
}

#[test]
fn modern_mode_refuses_a_legacy_server() {
    let err = Client::connect_stdio(example_server("legacy"), config(EraMode::Modern)).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Connect {
                reason: CloseReason::LegacyServer,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(err.kind(), "legacy-server");
}

#[test]
fn resources_prompts_and_failures() {
    for mode in [EraMode::Auto, EraMode::Legacy] {
        let mut client = connect("both", mode);
        let resources = client.list_resources().unwrap();
        assert_eq!(resources[0].uri, "example://readme");
        let read = client.read_resource("example://readme").unwrap();
        assert!(
            read["contents"][0]["text"]
                .as_str()
                .unwrap()
                .contains("mcp-example")
        );
        let prompts = client.list_prompts().unwrap();
        assert_eq!(prompts[0].name, "greet");
        let prompt = client.get_prompt("greet", json!({"name": "Ada"})).unwrap();
        assert!(prompt.to_string().contains("Ada"), "{prompt}");
        let missing = client.get_prompt("greet", json!(null)).unwrap_err();
        assert_eq!(missing.code(), Some(-32602), "{missing:?}");
        let failed = client.call_tool("fail", json!({})).unwrap();
        assert_eq!(failed.is_error, Some(true));
        assert_eq!(failed.text(), "failed on purpose");
    }
}

#[test]
fn confirm_is_answered_from_the_schema_defaults_in_both_eras() {
    for mode in [EraMode::Modern, EraMode::Legacy] {
        let config = config(mode).capabilities(ClientCapabilities::with_elicitation());
        let options = Options::new().input_handler(AcceptDefaults);
        let mut client =
            Client::connect_stdio_with(example_server("both"), config, options).unwrap();
        let result = client.call_tool("confirm", json!({})).unwrap();
        assert_eq!(
            result.text(),
            "accepted: proceed=true name=friend",
            "{mode:?}"
        );
        // The default handler declines.
        client.set_input_handler(Box::new(mcp_blocking::mcp_proto::client::DeclineAll));
        assert_eq!(
            client.call_tool("confirm", json!({})).unwrap().text(),
            "declined"
        );
    }
}

/// `Options::queue_input_requests` queues requests for `mcp-smol`'s
/// `next_input_request`; the blocking client has no way to take them, so its input
/// handler answers as the option documents, instead of the call waiting for good (a
/// legacy call's deadline is paused while its input is pending).
#[test]
fn queued_input_options_still_reach_the_blocking_handler() {
    let server = mcp_blocking::serve_http_on("127.0.0.1:0", example::server()).unwrap();
    for mode in [EraMode::Modern, EraMode::Legacy] {
        let url = server.url();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let config = config(mode).capabilities(ClientCapabilities::with_elicitation());
            let options = Options::new()
                .input_handler(AcceptDefaults)
                .queue_input_requests();
            let mut client =
                Client::connect_http_with(&url, config, options, HttpOptions::new()).unwrap();
            let confirm =
                CallRequest::call_tool("confirm", json!({})).timeout(Duration::from_secs(5));
            let answer = client.request(confirm);
            let answer = answer.map(|o| o.tool_result().unwrap().text());
            let _ = tx.send(answer.map_err(|e| e.to_string()));
        });
        let answer = rx
            .recv_timeout(Duration::from_secs(20))
            .unwrap_or_else(|_| panic!("{mode:?}: the call never ended"));
        assert_eq!(
            answer.expect("answered"),
            "accepted: proceed=true name=friend",
            "{mode:?}"
        );
    }
}

#[test]
fn confirm_without_the_elicitation_capability() {
    // Modern: the server refuses with -32021 (missing client capability).
    let mut client = connect("both", EraMode::Modern);
    let err = client.call_tool("confirm", json!({})).unwrap_err();
    assert_eq!(err.code(), Some(-32021), "{err:?}");
    // Legacy: the server reports an isError result.
    let mut client = connect("both", EraMode::Legacy);
    let result = client.call_tool("confirm", json!({})).unwrap();
    assert_eq!(result.is_error, Some(true), "{}", result.text());
}

#[test]
fn a_call_times_out_and_the_connection_survives() {
    let mut client = connect("both", EraMode::Auto);
    let hang = CallRequest::call_tool("hang", json!({})).timeout(Duration::from_millis(100));
    let started = Instant::now();
    let err = client.request(hang).unwrap_err();
    assert!(matches!(err, Error::Call(CallError::Timeout(_))), "{err:?}");
    assert_eq!(err.kind(), "timeout");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(
        client
            .call_tool("add", json!({"a": 1, "b": 1}))
            .unwrap()
            .text(),
        "2"
    );
}

#[test]
fn the_wire_log_sees_both_directions() {
    use std::sync::{Arc, Mutex};
    let lines = Arc::new(Mutex::new(Vec::<(Direction, String)>::new()));
    let sink = Arc::clone(&lines);
    let options = Options::new().wire_log(move |dir, line| {
        sink.lock()
            .unwrap()
            .push((dir, String::from_utf8_lossy(line).into_owned()));
    });
    let mut client =
        Client::connect_stdio_with(example_server("both"), config(EraMode::Auto), options).unwrap();
    client.call_tool("add", json!({"a": 2, "b": 3})).unwrap();
    client.close();
    let lines = lines.lock().unwrap();
    assert!(lines[0].0 == Direction::Sent && lines[0].1.contains("server/discover"));
    assert!(
        lines
            .iter()
            .any(|(d, l)| *d == Direction::Received && l.contains("supportedVersions"))
    );
    assert!(lines.iter().all(|(_, l)| !l.ends_with('\n')));
}

/// `Options::transcript`: the run's transcript, in both eras, replays on a fresh machine.
#[test]
fn a_transcript_of_the_run_replays() {
    use std::sync::{Arc, Mutex};
    for mode in [EraMode::Auto, EraMode::Legacy] {
        let text = Arc::new(Mutex::new(String::new()));
        let sink = Arc::clone(&text);
        let options = Options::new()
            .input_handler(AcceptDefaults)
            .transcript(move |line| {
                let mut text = sink.lock().unwrap();
                text.push_str(line);
                text.push('\n');
            });
        let config = config(mode).capabilities(ClientCapabilities::with_elicitation());
        let mut client =
            Client::connect_stdio_with(example_server("both"), config, options).unwrap();
        client.call_tool("add", json!({"a": 2, "b": 3})).unwrap();
        client.call_tool("confirm", json!({})).unwrap();
        client.close();
        let text = text.lock().unwrap();
        assert!(text.starts_with(r#"{"transcript":"#), "{text}");
        assert!(text.contains("InputRequested"), "{text}");
        let summary = mcp_blocking::transcript::replay(&text).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(summary.transcripts, 1);
    }
}

#[test]
#[cfg(unix)]
fn the_child_sees_only_the_named_environment_and_its_stderr_is_captured() {
    // CARGO_PKG_NAME is set by cargo for this test process; PATH and HOME are set too but
    // not passed.
    assert!(std::env::var_os("PATH").is_some());
    let server = common::example("example-server");
    let cmd = sh(r#"env >&2; echo "to stderr only" >&2; exec "$SERVER""#)
        .pass_env("CARGO_PKG_NAME")
        .env("EXPLICIT", "yes")
        .env("SERVER", &server)
        .pass_env("MCP_BLOCKING_SURELY_UNSET_VARIABLE");
    let mut client = Client::connect_stdio(cmd, config(EraMode::Auto)).unwrap();
    assert_eq!(
        client
            .call_tool("echo", json!({"text": "ok"}))
            .unwrap()
            .text(),
        "ok"
    );
    // The stderr thread runs on its own; give it a moment.
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut tail = client.stderr_tail();
    while !tail.contains("to stderr only") && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
        tail = client.stderr_tail();
    }
    assert!(tail.contains("CARGO_PKG_NAME=mcp-blocking"), "{tail}");
    assert!(tail.contains("EXPLICIT=yes"), "{tail}");
    assert!(!tail.contains("PATH="), "PATH leaked: {tail}");
    assert!(!tail.contains("HOME="), "HOME leaked: {tail}");
    assert!(
        !tail.contains("MCP_BLOCKING_SURELY_UNSET_VARIABLE"),
        "{tail}"
    );
}

#[test]
#[cfg(unix)]
fn a_server_that_exits_on_the_probe_is_restarted_and_initialized() {
    let dir = common::temp_dir("probe-exit");
    let marker = dir.join("started-once");
    let cmd = sh(r#"if [ -e "$MARKER" ]; then exec "$SERVER" --era legacy; else : > "$MARKER"; read line; exit 0; fi"#)
        .env("MARKER", &marker)
        .env("SERVER", common::example("example-server"));
    let mut client = Client::connect_stdio(cmd, config(EraMode::Auto)).unwrap();
    assert!(marker.exists());
    assert_eq!(client.restarts(), 1);
    assert_eq!(client.era(), Era::Legacy);
    assert_eq!(
        client
            .call_tool("add", json!({"a": 20, "b": 22}))
            .unwrap()
            .text(),
        "42"
    );
}

#[test]
#[cfg(unix)]
fn a_silent_probe_falls_back_to_initialize_after_the_probe_timeout() {
    // Ignores the probe, answers initialize (id 1, the probe was id 0), then waits.
    let init = common::INIT_RESULT.replace(r#""id":0"#, r#""id":1"#);
    let script = format!("read probe; read init; echo '{init}'; while read line; do :; done");
    let mut limits = Limits::default();
    limits.probe_timeout = Duration::from_millis(150);
    let started = Instant::now();
    let client = Client::connect_stdio(sh(&script), config(EraMode::Auto).limits(limits)).unwrap();
    assert!(started.elapsed() >= Duration::from_millis(150));
    assert_eq!(client.era(), Era::Legacy);
    assert_eq!(client.restarts(), 0);
    assert!(!client.close().killed);
}

#[test]
#[cfg(unix)]
fn close_kills_a_server_that_ignores_stdin_eof() {
    // Answers initialize, then ignores EOF and SIGTERM. Its `sleep` children keep the
    // pipes open for up to 5 s after it is killed: close must not wait for them.
    let script = format!(
        "trap '' TERM; read line; echo '{}'; while :; do sleep 5; done",
        common::INIT_RESULT
    );
    let mut client = Client::connect_stdio(sh(&script), config(EraMode::Legacy)).unwrap();
    assert_eq!(client.server_name(), "sh-server");
    client.set_grace_period(Duration::from_millis(200));
    let pid = client.process_id().unwrap();
    let started = Instant::now();
    let shutdown = client.close();
    let took = started.elapsed();
    assert!(shutdown.killed);
    assert!(took < Duration::from_secs(2), "close took {took:?}");
    assert_reaped(pid);
}

#[test]
#[cfg(unix)]
fn drop_cleans_up_too() {
    let script = format!(
        "trap '' TERM; read line; echo '{}'; while :; do sleep 5; done",
        common::INIT_RESULT
    );
    let options = Options::new().grace_period(Duration::from_millis(100));
    let client = Client::connect_stdio_with(sh(&script), config(EraMode::Legacy), options).unwrap();
    let pid = client.process_id().unwrap();
    let started = Instant::now();
    drop(client);
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_reaped(pid);
}

#[test]
#[cfg(unix)]
fn a_server_that_dies_mid_session_closes_the_connection() {
    let script = format!(
        "read line; echo '{}'; read line; read line; exit 3",
        common::INIT_RESULT
    );
    let mut client = Client::connect_stdio(sh(&script), config(EraMode::Legacy)).unwrap();
    // `notifications/initialized` was the second line; this call is the third.
    let err = client.call_tool("anything", json!({})).unwrap_err();
    assert!(
        matches!(err, Error::Closed(CloseReason::ServerExited { .. })),
        "{err:?}"
    );
    assert!(
        client.process_id().is_none(),
        "reaped as soon as the connection ended"
    );
    let again = client.call_tool("anything", json!({})).unwrap_err();
    assert_eq!(again.kind(), "closed");
    let shutdown = client.close();
    assert_eq!(shutdown.status.and_then(|s| s.code()), Some(3));
}

/// A call that timed out after the server logged to stdout: a handle reads the line the
/// machine kept (as `Client::machine` does), also once the client is closed, so that the
/// failure can quote it.
#[test]
#[cfg(unix)]
fn a_handle_reads_the_log_line_that_a_timed_out_call_met() {
    let script = format!(
        "read line; echo '{}'; read line; read line; echo 'Listing tools...'; \
         while read line; do :; done",
        common::INIT_RESULT
    );
    let mut client = Client::connect_stdio(sh(&script), config(EraMode::Legacy)).unwrap();
    let handle = client.handle();
    assert_eq!(handle.unreadable_line(), None);
    let list = CallRequest::list_tools().timeout(Duration::from_millis(200));
    let err = client.request(list).unwrap_err();
    assert_eq!(err.kind(), "timeout", "{err}");
    let line = handle.unreadable_line().expect("the log line");
    assert_eq!(line.start, "Listing tools...");
    assert_eq!(client.machine().unreadable_line(), Some(&line));
    client.close();
    assert_eq!(handle.unreadable_line(), Some(line));
}

#[test]
#[cfg(unix)]
fn a_server_that_never_answers_fails_the_handshake_in_time() {
    let mut limits = Limits::default();
    limits.initialize_timeout = Duration::from_millis(200);
    let options = Options::new().grace_period(Duration::from_millis(50));
    let started = Instant::now();
    let err = Client::connect_stdio_with(
        sh("echo starting >&2; while read line; do :; done"),
        config(EraMode::Legacy).limits(limits),
        options,
    )
    .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(
        matches!(
            err,
            Error::Connect {
                reason: CloseReason::HandshakeTimeout(_),
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.stderr_tail().unwrap().contains("starting"));
}

#[test]
fn spawn_errors_name_the_program() {
    let err = Client::connect_stdio(
        StdioCommand::new("surely-not-an-mcp-server-program"),
        config(EraMode::Auto),
    )
    .unwrap_err();
    assert_eq!(err.kind(), "spawn");
    assert!(
        err.to_string().contains("surely-not-an-mcp-server-program"),
        "{err}"
    );
}

/// The process is gone (reaped, not a zombie). Linux only: looks at /proc.
#[cfg(unix)]
fn assert_reaped(pid: u32) {
    #[cfg(target_os = "linux")]
    {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"));
        // Reaped: /proc entry gone (or reused by an unrelated, non-zombie process).
        if let Ok(stat) = stat {
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            assert!(!state.starts_with('Z'), "process {pid} is a zombie");
        }
    }
    let _ = pid;
}

/// An input handler that is not `Send`: its state sits behind an `Rc<RefCell<…>>`, as a
/// single-threaded UI's would. It fills the form with a name of its own.
struct Dialog {
    asked: Rc<RefCell<Vec<String>>>,
}

impl InputHandler for Dialog {
    fn answer(&mut self, request: &InputRequest) -> InputAnswer {
        let InputRequest::Elicitation(form) = request else {
            return InputAnswer::decline();
        };
        self.asked.borrow_mut().push(form.message.clone());
        let mut content = serde_json::Map::new();
        content.insert("proceed".into(), json!(true));
        content.insert("name".into(), json!("Ada"));
        InputAnswer::accept(content)
    }
}

/// `Options::local()` with a handler and a wire log that are not `Send`: a
/// `Client<Local>`, on this thread, answering the example server's `confirm` form.
fn local_client_answers_the_form(connect: impl FnOnce(Options<Local>) -> Client<Local>) {
    let asked = Rc::new(RefCell::new(Vec::new()));
    let lines = Rc::new(RefCell::new(Vec::<String>::new()));
    let sink = lines.clone();
    let options = Options::local()
        .input_handler(Dialog {
            asked: asked.clone(),
        })
        .wire_log(move |_, line| {
            sink.borrow_mut()
                .push(String::from_utf8_lossy(line).into_owned());
        });
    let mut client = connect(options);
    let answer = client.call_tool("confirm", json!({})).expect("confirm");
    assert_eq!(answer.text(), "accepted: proceed=true name=Ada");
    assert_eq!(*asked.borrow(), ["Proceed with the example action?"]);
    client.close();
    assert!(
        lines.borrow().iter().any(|l| l.contains("\"confirm\"")),
        "{:#?}",
        lines.borrow()
    );
}

#[test]
fn handlers_that_are_not_send_answer_over_stdio() {
    for mode in [EraMode::Auto, EraMode::Legacy] {
        local_client_answers_the_form(|options| {
            let config = config(mode).capabilities(ClientCapabilities::with_elicitation());
            Client::connect_stdio_with(example_server("both"), config, options).expect("connect")
        });
    }
}

#[test]
fn handlers_that_are_not_send_answer_over_http() {
    let server = mcp_blocking::serve_http_on("127.0.0.1:0", example::server()).expect("serve");
    for mode in [EraMode::Auto, EraMode::Legacy] {
        local_client_answers_the_form(|options| {
            let config = config(mode).capabilities(ClientCapabilities::with_elicitation());
            Client::connect_http_with(&server.url(), config, options, HttpOptions::new())
                .expect("connect")
        });
    }
}
