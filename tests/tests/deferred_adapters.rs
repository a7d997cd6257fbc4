//! Deferred tool work through both adapters' servers, over HTTP (each era) and over
//! byte streams: while one call's work is handed off, other calls are served, and the
//! call is answered once the test completes its work. Nothing sleeps: the test holds the
//! completer the tool handed out and completes it after the other call came back.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::Mutex;
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread;
use std::time::Duration;

use futures_lite::future;
use mcp_blocking::Client;
use mcp_proto::client::{CallRequest, ClientConfig};
use mcp_proto::model::Implementation;
use mcp_proto::server::{Completer, Server, ServerConfig, Tool, ToolCall, ToolOutcome};
use mcp_proto::version::EraMode;
use serde_json::{Value, json};

/// How long any step may take before the test fails instead of hanging.
const PATIENCE: Duration = Duration::from_secs(20);

/// `later` hands its completer to the test and defers; `echo` answers at once.
fn server(completers: Sender<Completer>) -> Server {
    let completers = Mutex::new(completers);
    let config = ServerConfig::new(Implementation::new("deferring", "1"))
        .with_tool(Tool::new(
            "later",
            "answers when the test says",
            json!({"type": "object"}),
            move |call: &ToolCall<'_>| {
                let _ = completers.lock().unwrap().send(call.defer());
                ToolOutcome::Deferred
            },
        ))
        .with_tool(Tool::new(
            "echo",
            "echoes",
            json!({"type": "object", "properties": {"text": {"type": "string"}}}),
            |call: &ToolCall<'_>| ToolOutcome::text(call.arguments["text"].as_str().unwrap_or("")),
        ));
    Server::new(config)
}

/// Against the server at `url`, in `mode`: `later` waits in a thread of its own while
/// another client's `echo` is answered; then its work completes, and so does the call.
fn other_calls_go_on_while_work_is_deferred(
    url: &str,
    mode: EraMode,
    completers: &Receiver<Completer>,
) {
    let config = move || ClientConfig::new("deferred", "1").era_mode(mode);
    let waiting_url = url.to_owned();
    let waiting = thread::spawn(move || {
        let mut client = Client::connect_http(&waiting_url, config()).expect("connect");
        let out = client.call_tool("later", json!({})).expect("later");
        out.text()
    });
    let completer = completers.recv_timeout(PATIENCE).expect("the handler ran");
    let mut other = Client::connect_http(url, config()).expect("connect");
    let echoed = other
        .call_tool("echo", json!({"text": "meanwhile"}))
        .expect("echo");
    assert_eq!(echoed.text(), "meanwhile");
    assert!(!waiting.is_finished(), "answered before its work completed");
    assert!(!completer.is_cancelled());
    completer.complete(ToolOutcome::text("work done"));
    assert_eq!(waiting.join().expect("no panic"), "work done");
}

#[test]
fn mcp_blocking_serves_other_calls_while_work_is_deferred() {
    let (tx, rx) = mpsc::channel();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let handle = mcp_blocking::serve_http(listener, server(tx)).unwrap();
    for mode in [EraMode::Modern, EraMode::Legacy] {
        other_calls_go_on_while_work_is_deferred(&handle.url(), mode, &rx);
    }
    handle.stop();
}

#[test]
fn mcp_smol_serves_other_calls_while_work_is_deferred() {
    let (tx, rx) = mpsc::channel();
    let listener = async_io::Async::<TcpListener>::bind(([127, 0, 0, 1], 0)).unwrap();
    let url = format!("http://{}/mcp", listener.get_ref().local_addr().unwrap());
    let (stop, stopped) = async_channel::bounded::<()>(1);
    let serving = thread::spawn(move || {
        let stop = async move {
            let _ = stopped.recv().await;
        };
        let options = mcp_smol::HttpServeOptions::default();
        future::block_on(mcp_smol::serve_http(
            listener,
            server(tx),
            options,
            |_| {},
            stop,
        ))
    });
    for mode in [EraMode::Modern, EraMode::Legacy] {
        other_calls_go_on_while_work_is_deferred(&url, mode, &rx);
    }
    drop(stop);
    serving.join().unwrap().expect("serve_http ends cleanly");
}

/// A client that gives up on a deferred call (its timeout closes the stream) cancels the
/// work: the completer says so.
#[test]
fn a_client_giving_up_cancels_the_deferred_work() {
    let (tx, rx) = mpsc::channel();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let handle = mcp_blocking::serve_http(listener, server(tx)).unwrap();
    let mut client =
        Client::connect_http(&handle.url(), ClientConfig::new("deferred", "1")).expect("connect");
    let request = CallRequest::call_tool("later", json!({})).timeout(Duration::from_millis(300));
    assert!(client.request(request).is_err(), "timed out");
    let completer = rx.recv_timeout(PATIENCE).expect("the handler ran");
    let deadline = std::time::Instant::now() + PATIENCE;
    while !completer.is_cancelled() {
        assert!(std::time::Instant::now() < deadline, "never cancelled");
        thread::yield_now();
    }
    handle.stop();
}

/// The line-by-line exchange over a byte stream: `later` (id 1), then `echo` (id 2),
/// whose answer comes first; then the work completes and id 1 is answered.
fn over_a_byte_stream(
    serve: impl FnOnce(Server, std::io::PipeReader, std::io::PipeWriter) + Send + 'static,
) {
    let (tx, rx) = mpsc::channel();
    let (input, mut to_server) = std::io::pipe().unwrap();
    let (from_server, output) = std::io::pipe().unwrap();
    let serving = thread::spawn(move || serve(server(tx), input, output));
    let mut lines = BufReader::new(from_server).lines();
    // Owns the pipe: dropping it ends the server's input.
    let mut send = move |m: Value| {
        let mut line = m.to_string();
        line.push('\n');
        to_server.write_all(line.as_bytes()).unwrap();
    };
    send(
        json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}),
    );
    send(json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
    let mut next = || -> Value { serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap() };
    assert_eq!(next()["id"], 0);
    send(json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"later"}}));
    let completer = rx.recv_timeout(PATIENCE).expect("the handler ran");
    send(
        json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"meanwhile"}}}),
    );
    let echoed = next();
    assert_eq!(echoed["id"], 2, "{echoed}");
    completer.complete(ToolOutcome::text("work done"));
    let done = next();
    assert_eq!(done["id"], 1, "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "work done");
    drop(send);
    serving.join().unwrap();
}

#[test]
fn mcp_blocking_serve_answers_deferred_work_over_a_byte_stream() {
    over_a_byte_stream(|mut server, input, output| {
        mcp_blocking::serve(&mut server, input, output).expect("served");
    });
}

#[cfg(unix)]
#[test]
fn mcp_smol_serve_answers_deferred_work_over_a_byte_stream() {
    over_a_byte_stream(|mut server, input, output| {
        let input = async_io::Async::new(input).unwrap();
        let output = async_io::Async::new(output).unwrap();
        future::block_on(mcp_smol::serve(&mut server, input, output)).expect("served");
    });
}

/// Input that is always ready: the handshake and a call of `later` (id 1), then `pings`
/// pings (ids from 2), handed out a few lines per read, then the end. Each read first
/// completes any work `later` handed out: the completion happens while input keeps
/// coming, as a client's pings, progress or cancellations of other calls do.
struct Flood {
    completers: Receiver<Completer>,
    queued: Vec<u8>,
    next_ping: u64,
    last_ping: u64,
}

impl Flood {
    fn new(completers: Receiver<Completer>, pings: u64) -> Self {
        let mut queued = Vec::new();
        for m in [
            json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}),
            json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
            json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"later"}}),
        ] {
            queued.extend_from_slice(m.to_string().as_bytes());
            queued.push(b'\n');
        }
        Flood {
            completers,
            queued,
            next_ping: 2,
            last_ping: pings + 1,
        }
    }

    fn fill(&mut self, buf: &mut [u8]) -> usize {
        while let Ok(completer) = self.completers.try_recv() {
            completer.complete(ToolOutcome::text("work done"));
        }
        while self.queued.len() < buf.len() && self.next_ping <= self.last_ping {
            let ping = format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"ping\"}}\n",
                self.next_ping
            );
            self.queued.extend_from_slice(ping.as_bytes());
            self.next_ping += 1;
            // A few lines per read: many reads, each ready at once.
            if self.queued.len() > 256 {
                break;
            }
        }
        let n = self.queued.len().min(buf.len());
        buf[..n].copy_from_slice(&self.queued[..n]);
        self.queued.drain(..n);
        n
    }
}

impl std::io::Read for Flood {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        Ok(self.fill(buf))
    }
}

impl futures_lite::AsyncRead for Flood {
    fn poll_read(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        buf: &mut [u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::task::Poll::Ready(Ok(self.get_mut().fill(buf)))
    }
}

/// Which ping was answered last before the answer to `later` (id 1), in `output`; `None`
/// when `later` was never answered.
fn pings_before_the_deferred_answer(output: &[u8]) -> Option<u64> {
    let mut last_ping = 0;
    for line in output.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        let m: Value = serde_json::from_slice(line).unwrap();
        match m["id"].as_u64() {
            Some(1) => {
                assert_eq!(m["result"]["content"][0]["text"], "work done", "{m}");
                return Some(last_ping);
            }
            Some(id) if id > 1 => last_ping = id,
            _ => {}
        }
    }
    None
}

/// A client whose input never pauses (10,000 pings, read as fast as the server takes
/// them) while its deferred call completes: the call is answered, and soon, not held
/// until the input pauses. `mcp_smol::serve` raced the read against the completion and
/// the server's deadlines with the read first, so ready input always won: the completed
/// call waited for a pause in the input, and here, where the input ends without one,
/// was abandoned at its end, never answered.
#[test]
fn deferred_work_completing_during_a_flood_of_input_is_answered_in_both_adapters() {
    const PINGS: u64 = 10_000;
    let mut failures = Vec::new();
    let (tx, rx) = mpsc::channel();
    let mut output = Vec::new();
    mcp_blocking::serve(&mut server(tx), Flood::new(rx, PINGS), &mut output).expect("served");
    let blocking = pings_before_the_deferred_answer(&output);
    let (tx, rx) = mpsc::channel();
    let mut output = Vec::new();
    future::block_on(mcp_smol::serve(
        &mut server(tx),
        Flood::new(rx, PINGS),
        &mut output,
    ))
    .expect("served");
    let smol = pings_before_the_deferred_answer(&output);
    for (adapter, answered) in [("mcp-blocking", blocking), ("mcp-smol", smol)] {
        // Completed at the first read after the call: answered within a few reads.
        match answered {
            Some(after) if after < 1_000 => {}
            Some(after) => failures.push(format!("{adapter}: answered after ping {after}")),
            None => failures.push(format!("{adapter}: never answered")),
        }
    }
    assert!(failures.is_empty(), "{failures:?}");
}
