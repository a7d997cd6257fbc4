//! The smol hosting of a sans-IO server: `serve_http` on real loopback sockets, each
//! server on a thread of its own (`futures_lite::future::block_on`, no executor) and
//! stopped through its `stop` future, against this crate's own client; and `serve` over
//! in-memory byte streams.
// The crate's `Error` is large on purpose: see its `lib.rs`.
#![allow(clippy::result_large_err)]

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use async_io::{Async, Timer};
use futures_lite::future;
use mcp_proto::server::example;
use mcp_smol::{AcceptDefaults, Client, ClientCapabilities, ClientConfig, Era, EraMode, Error};
use mcp_smol::{HttpOptions, HttpServeOptions, Options};
use serde_json::{Value, json};

/// Generous: a loaded two-core machine must never make these tests flake.
const PATIENCE: Duration = Duration::from_secs(30);

/// A `serve_http` running on its own thread.
struct Served {
    addr: SocketAddr,
    stop: Option<async_channel::Sender<()>>,
    ended: mpsc::Receiver<io::Result<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Served {
    fn start(options: HttpServeOptions) -> Served {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let addr = listener.local_addr().expect("local address");
        let listener = Async::new(listener).expect("async listener");
        let (stop, stopped) = async_channel::bounded::<()>(1);
        let (done, ended) = mpsc::channel();
        let thread = thread::spawn(move || {
            let stop = async move {
                let _ = stopped.recv().await;
            };
            let served = mcp_smol::serve_http(listener, example::server(), options, |_| {}, stop);
            let _ = done.send(future::block_on(served));
        });
        Served {
            addr,
            stop: Some(stop),
            ended,
            thread: Some(thread),
        }
    }

    fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// Signals stop and waits (within [`PATIENCE`]) for `serve_http` to return.
    fn stop(mut self) -> io::Result<()> {
        drop(self.stop.take());
        let ended = self
            .ended
            .recv_timeout(PATIENCE)
            .expect("serve_http returns after stop");
        if let Some(thread) = self.thread.take() {
            thread.join().expect("server thread");
        }
        ended
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        drop(self.stop.take());
    }
}

fn config(mode: EraMode) -> ClientConfig {
    ClientConfig::new("mcp-smol-serve-tests", "0.0.0")
        .era_mode(mode)
        .capabilities(ClientCapabilities::with_elicitation())
}

fn connect(served: &Served, mode: EraMode) -> (Client, mcp_smol::Driver) {
    let options = Options::new().input_handler(AcceptDefaults);
    mcp_smol::connect_http_with(&served.url(), config(mode), options, HttpOptions::new())
        .expect("connect_http")
}

/// Runs `scenario` joined with the client's driver, failing after [`PATIENCE`]. The
/// driver is dropped after the scenario, closing its connections.
fn run<T>(driver: mcp_smol::Driver, scenario: impl Future<Output = T>) -> T {
    let driver = async {
        let ended: Result<(), Error> = driver.await;
        panic!("the driver ended before the scenario: {ended:?}");
    };
    let late = async {
        Timer::after(PATIENCE).await;
        panic!("scenario did not finish within {PATIENCE:?}");
    };
    future::block_on(future::or(scenario, future::or(driver, late)))
}

#[test]
fn echo_in_both_eras() {
    let served = Served::start(HttpServeOptions::default());
    for (mode, era) in [
        (EraMode::Legacy, Era::Legacy),
        (EraMode::Modern, Era::Modern),
    ] {
        let (client, driver) = connect(&served, mode);
        let text = run(driver, async {
            client.connected().await.expect("connected");
            assert_eq!(client.era(), Some(era));
            let echo = client
                .call_tool("echo", json!({"text": "über"}))
                .await
                .expect("echo");
            echo.text()
        });
        assert_eq!(text, "über", "{era}");
    }
    served.stop().expect("serve_http ends cleanly");
}

/// In the legacy era the elicitation goes out on the call's open SSE stream, and the
/// answer arrives on another connection: the stream's connection must be woken by it
/// (without the wake-up, each call waits for the 250 ms look at the socket: 20 calls
/// would take 5 s). In the 2026 era the same tool is answered in rounds of ordinary
/// requests.
#[test]
fn confirm_needs_input_in_both_eras() {
    const CALLS: u32 = 20;
    let served = Served::start(HttpServeOptions::default());
    for mode in [EraMode::Legacy, EraMode::Modern] {
        let (client, driver) = connect(&served, mode);
        let started = Instant::now();
        let texts = run(driver, async {
            let mut texts = Vec::new();
            for _ in 0..CALLS {
                let confirmed = client
                    .call_tool("confirm", json!({}))
                    .await
                    .expect("confirm");
                texts.push(confirmed.text());
            }
            texts
        });
        let took = started.elapsed();
        for text in texts {
            assert_eq!(text, "accepted: proceed=true name=friend", "{mode:?}");
        }
        // Woken by the answer, not by the watch interval.
        assert!(
            took < Duration::from_secs(3),
            "{mode:?}: {CALLS} calls took {took:?}"
        );
    }
    served.stop().expect("serve_http ends cleanly");
}

fn read_some(stream: &mut TcpStream) -> String {
    stream
        .set_read_timeout(Some(PATIENCE))
        .expect("read timeout");
    let mut buf = [0u8; 512];
    let n = stream.read(&mut buf).expect("an answer");
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

#[test]
fn one_connection_over_the_bound_gets_503() {
    let mut options = HttpServeOptions::default();
    options.max_connections = 1;
    let served = Served::start(options);
    // Admitted, and in use (a stream that stays open): never evicted for a newcomer.
    let mut first = TcpStream::connect(served.addr).expect("first connection");
    first.write_all(&hang(1)).expect("request");
    let answer = read_some(&mut first);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let mut second = TcpStream::connect(served.addr).expect("second connection");
    let answer = read_some(&mut second);
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    drop(second);
    drop(first);

    // Its place is given back: a client gets in once the server has seen it close.
    // Until then a try is refused with 503, which either the call or its driver (whose
    // connection the refusal closed) may report first: both mean "try again".
    let deadline = Instant::now() + PATIENCE;
    loop {
        let (client, driver) = connect(&served, EraMode::Modern);
        let call = async {
            let echo = client.call_tool("echo", json!({"text": "in"})).await;
            echo.map_err(|e| e.to_string())
        };
        let driver_ended = async { Err(format!("the driver ended: {:?}", driver.await)) };
        let late = async {
            Timer::after(PATIENCE).await;
            Err("no answer and no refusal".to_string())
        };
        match future::block_on(future::or(call, future::or(driver_ended, late))) {
            Ok(echo) => {
                assert_eq!(echo.text(), "in");
                break;
            }
            Err(e) => assert!(Instant::now() < deadline, "never admitted again: {e}"),
        }
        thread::sleep(Duration::from_millis(50));
    }
    served.stop().expect("serve_http ends cleanly");
}

/// A browser page of a loopback origin may talk to the server: its CORS preflight is
/// answered, as the machine decides (it was `405`).
#[test]
fn a_browser_preflight_is_answered() {
    let served = Served::start(HttpServeOptions::default());
    let mut page = TcpStream::connect(served.addr).expect("connect");
    page.write_all(
        b"OPTIONS /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: http://localhost:6274\r\n\
          Access-Control-Request-Method: POST\r\n\
          Access-Control-Request-Headers: content-type\r\n\r\n",
    )
    .expect("preflight");
    let answer = read_some(&mut page);
    assert!(answer.starts_with("HTTP/1.1 204"), "{answer}");
    assert!(
        answer.contains("Access-Control-Allow-Origin: http://localhost:6274\r\n"),
        "{answer}"
    );
    drop(page);
    served.stop().expect("serve_http ends cleanly");
}

/// Connections that hold every place without finishing a request give way after a
/// second: the one waiting longest is evicted (503), the newcomer served.
#[test]
fn a_newcomer_takes_the_place_of_a_connection_that_only_holds_it() {
    let mut options = HttpServeOptions::default();
    options.max_connections = 2;
    let served = Served::start(options);
    let holders: Vec<TcpStream> = (0..2)
        .map(|_| {
            let mut c = TcpStream::connect(served.addr).expect("holder");
            c.write_all(
                b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n\r\n{",
            )
            .expect("a head");
            c
        })
        .collect();
    thread::sleep(Duration::from_millis(1200));
    let mut newcomer = TcpStream::connect(served.addr).expect("newcomer");
    newcomer.write_all(&discover(1)).expect("request");
    let answer = read_some(&mut newcomer);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    // The one waiting longest is told at once, not at its body deadline (5 s).
    let mut holders = holders.into_iter();
    let mut evicted = holders.next().expect("a holder");
    let told = Instant::now();
    let answer = read_some(&mut evicted);
    assert!(
        told.elapsed() < Duration::from_millis(1500),
        "{:?}",
        told.elapsed()
    );
    assert!(answer.starts_with("HTTP/1.1 503 "), "{answer}");
    drop(holders);
    served.stop().expect("serve_http ends cleanly");
}

/// A connection that never sent a byte is evicted for a newcomer once it has waited a
/// second, and closed at once: it used to stay until its head deadline (10 s), holding
/// its place among those being evicted.
#[test]
fn an_evicted_idle_connection_is_closed_at_once() {
    let mut options = HttpServeOptions::default();
    options.max_connections = 1;
    let served = Served::start(options);
    let mut idle = TcpStream::connect(served.addr).expect("idle");
    thread::sleep(Duration::from_millis(1200));
    let mut newcomer = TcpStream::connect(served.addr).expect("newcomer");
    newcomer.write_all(&discover(1)).expect("request");
    let answer = read_some(&mut newcomer);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let told = Instant::now();
    idle.set_read_timeout(Some(PATIENCE)).expect("read timeout");
    let mut rest = Vec::new();
    let read = idle.read_to_end(&mut rest);
    assert!(read.is_ok() && rest.is_empty(), "{read:?} {rest:?}");
    assert!(
        told.elapsed() < Duration::from_millis(1500),
        "{:?}",
        told.elapsed()
    );
    served.stop().expect("serve_http ends cleanly");
}

/// A raw 2026-07-28 `tools/call` of `hang`, which never answers: a stream that stays open.
fn hang(id: u64) -> Vec<u8> {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "hang", "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}}})
    .to_string();
    format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: tools/call\r\nMcp-Name: hang\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// A raw 2026-07-28 `server/discover` POST, as a client that pipelines sends it.
fn discover(id: u64) -> Vec<u8> {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "server/discover",
        "params": {"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
            "io.modelcontextprotocol/clientCapabilities": {}}}})
    .to_string();
    format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: server/discover\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// A client that keeps its socket full of pipelined requests, and reads the answers as
/// fast as they come, never leaves the server's awaits pending: the server must still
/// accept and answer another client meanwhile (one future serves every connection).
#[test]
fn a_flooding_client_does_not_starve_another() {
    let served = Served::start(HttpServeOptions::default());
    let flood = TcpStream::connect(served.addr).expect("flooding connection");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let burst: Vec<u8> = (0..200).flat_map(discover).collect();
    let writer = {
        let (mut flood, stop) = (flood.try_clone().expect("clone"), stop.clone());
        thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                if flood.write_all(&burst).is_err() {
                    return;
                }
            }
        })
    };
    let (under_way, first_answer) = mpsc::channel();
    let reader = {
        let mut flood = flood.try_clone().expect("clone");
        thread::spawn(move || {
            let mut buf = vec![0u8; 1 << 16];
            while let Ok(n @ 1..) = flood.read(&mut buf) {
                if buf[..n].windows(9).any(|w| w == b"HTTP/1.1 ") {
                    let _ = under_way.send(());
                }
            }
        })
    };
    first_answer
        .recv_timeout(PATIENCE)
        .expect("the flood is answered");
    let mut other = TcpStream::connect(served.addr).expect("another connection");
    other.write_all(&discover(1)).expect("request");
    let answer = read_some(&mut other);
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let _ = flood.shutdown(std::net::Shutdown::Both);
    writer.join().expect("writer");
    reader.join().expect("reader");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    served.stop().expect("serve_http ends cleanly");
}

/// Stopping ends kept-alive connections at once (the idle timeout is a minute) and the
/// listener with them.
#[test]
fn stop_ends_connections_and_the_listener() {
    let mut options = HttpServeOptions::default();
    options.idle_timeout = Duration::from_secs(60);
    options.head_timeout = Duration::from_secs(60);
    let served = Served::start(options);
    let addr = served.addr;
    let (client, driver) = connect(&served, EraMode::Modern);
    let mut driver = Box::pin(driver);
    let echo = future::block_on(future::or(
        async {
            client
                .call_tool("echo", json!({"text": "kept"}))
                .await
                .expect("echo")
        },
        async {
            let _ = driver.as_mut().await;
            panic!("the driver ended early");
        },
    ));
    assert_eq!(echo.text(), "kept");
    // The client keeps its connection open (the driver is alive, not polled).
    let started = Instant::now();
    served.stop().expect("serve_http ends cleanly");
    assert!(started.elapsed() < Duration::from_secs(20));
    assert!(TcpStream::connect(addr).is_err(), "still listening");
    drop(driver);
}

fn lines(output: &[u8]) -> Vec<Value> {
    output
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).expect("a JSON line"))
        .collect()
}

#[test]
fn serve_answers_initialize_and_tools_call_over_byte_streams() {
    let requests = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"}
        }}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "round trip"}}}),
    ];
    let mut input = Vec::new();
    for request in &requests {
        input.extend_from_slice(request.to_string().as_bytes());
        input.push(b'\n');
    }
    // An OS pipe, written by another thread in two pieces split mid-line.
    let (reader, mut writer) = io::pipe().expect("pipe");
    let (half, rest) = input.split_at(input.len() / 2);
    let (half, rest) = (half.to_vec(), rest.to_vec());
    let feeder = thread::spawn(move || {
        writer.write_all(&half).expect("write");
        thread::sleep(Duration::from_millis(20));
        writer.write_all(&rest).expect("write");
    });
    let mut server = example::server();
    let mut output = Vec::new();
    let served = future::block_on(mcp_smol::serve(
        &mut server,
        blocking::Unblock::new(reader),
        &mut output,
    ));
    feeder.join().expect("feeder");
    served.expect("serve ends at the end of input");
    let answers = lines(&output);
    assert_eq!(answers.len(), 2, "{answers:?}");
    assert_eq!(answers[0]["id"], 1);
    assert_eq!(answers[0]["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(answers[1]["id"], 2);
    assert_eq!(
        answers[1]["result"]["content"][0]["text"], "round trip",
        "{answers:?}"
    );
}

/// A 2025-11-25 `tasks/result` on a task whose outcome is 300 ms away is answered when
/// the outcome falls due, with the input still open and nothing more on it: `serve`
/// must hand the server its deadline.
#[test]
fn serve_hands_the_server_its_deadlines() {
    use mcp_proto::model::Implementation;
    use mcp_proto::server::{Server, ServerConfig, Tool, ToolCall, ToolOutcome};
    use std::io::BufRead;

    const DELAY: Duration = Duration::from_millis(300);
    let server = Server::new(
        ServerConfig::new(Implementation::new("timer", "1")).with_tool(
            Tool::new("slow", "", json!({"type": "object"}), |_: &ToolCall<'_>| {
                ToolOutcome::after(DELAY, ToolOutcome::text("slow done"))
            })
            .as_task(1),
        ),
    );
    let (input, mut to_server) = io::pipe().expect("pipe");
    let (from_server, output) = io::pipe().expect("pipe");
    let serving = thread::spawn(move || {
        let mut server = server;
        future::block_on(mcp_smol::serve(
            &mut server,
            blocking::Unblock::new(input),
            blocking::Unblock::new(output),
        ))
    });
    let (line_tx, lines) = mpsc::channel::<Value>();
    thread::spawn(move || {
        for line in io::BufReader::new(from_server).lines() {
            let Ok(line) = line else { return };
            if line_tx
                .send(serde_json::from_str(&line).expect("JSON"))
                .is_err()
            {
                return;
            }
        }
    });
    let mut send = |message: Value| {
        to_server
            .write_all(format!("{message}\n").as_bytes())
            .expect("write");
    };
    let answer = |id: i64| loop {
        let message = lines.recv_timeout(PATIENCE).expect("an answer in time");
        if message["id"] == id {
            return message;
        }
    };
    send(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}}),
    );
    answer(0);
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "slow", "arguments": {}, "task": {}}}));
    let created = answer(1);
    let task = created["result"]["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("no task: {created}"))
        .to_owned();
    let started = Instant::now();
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/result",
        "params": {"taskId": task}}));
    let result = answer(2);
    assert_eq!(
        result["result"]["content"][0]["text"], "slow done",
        "{result}"
    );
    assert!(started.elapsed() >= DELAY - Duration::from_millis(50));
    drop(to_server);
    serving
        .join()
        .expect("serve thread")
        .expect("serve ends at the end of input");
}

/// Input that is always ready: the same line, forever.
struct Endless(&'static [u8], usize);

impl futures_lite::AsyncRead for Endless {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        buf: &mut [u8],
    ) -> std::task::Poll<io::Result<usize>> {
        let mut n = 0;
        while n < buf.len() {
            let at = self.1;
            let take = (self.0.len() - at).min(buf.len() - n);
            buf[n..n + take].copy_from_slice(&self.0[at..at + take]);
            n += take;
            self.1 = (at + take) % self.0.len();
        }
        std::task::Poll::Ready(Ok(n))
    }
}

/// Input that never runs dry must not keep the thread that polls `serve` from its other
/// futures: `serve` yields now and then even when every read is ready.
#[test]
fn serve_lets_other_futures_run_under_endless_input() {
    let (done, finished) = mpsc::channel();
    thread::spawn(move || {
        let mut server = example::server();
        let serving = async {
            let input = Endless(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"}\n", 0);
            let _ = mcp_smol::serve(&mut server, input, futures_lite::io::sink()).await;
            "serve ended"
        };
        let _ = done.send(future::block_on(future::or(serving, async { "other ran" })));
    });
    assert_eq!(
        finished.recv_timeout(PATIENCE).expect("serve gave way"),
        "other ran"
    );
}
