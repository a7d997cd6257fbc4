//! A complete MCP client on nothing but `std` and `mcp-proto`: the whole of what an
//! adapter does, for anyone whose runtime is not one we ship.
//!
//! ```text
//! cargo run -p mcp-proto --example own_runtime -- PROGRAM [ARGS...]
//! ```
//!
//! It starts PROGRAM as a stdio server, lists its tools, calls `add` with `{"a":2,"b":3}`
//! when the server has it, and closes. The machine decides everything; this file only
//! spawns processes, moves bytes, keeps one timer, reports what its IO did (a server
//! that cannot be started, stops reading or exits) and prints events. It exits 0 when
//! every call succeeded, 1 otherwise (the server failed, refused or went away).
// This example is the IO side: it may use the clock, processes and threads that the
// library itself never touches.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant as StdInstant};

use mcp_proto::Instant;
use mcp_proto::client::{
    AcceptDefaults, CallRequest, Client, ClientConfig, ConnId, Event, InputHandler, Transmit,
    TransportFailure, TransportFailureKind,
};

/// How long a closed server may take to exit before it is killed.
const GRACE: Duration = Duration::from_secs(2);
/// How often a running server is checked for having exited (its stdout may stay open
/// when a process it started holds the pipe).
const EXIT_CHECK: Duration = Duration::from_millis(100);

/// What a stdout reader thread saw, tagged with the process it reads: after a restart,
/// what the former process's pipe still brings is not the new server's.
enum Input {
    Bytes(u64, Vec<u8>),
    Eof(u64),
}

/// The running server process, and whether it was seen to exit.
struct Server {
    child: Child,
    exited: bool,
}

fn spawn(argv: &[String], generation: u64, tx: &Sender<Input>) -> std::io::Result<Server> {
    let mut child = Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()?;
    let mut stdout = child.stdout.take().expect("piped");
    let tx = tx.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        while let Ok(n @ 1..) = stdout.read(&mut buf) {
            if tx
                .send(Input::Bytes(generation, buf[..n].to_vec()))
                .is_err()
            {
                return;
            }
        }
        let _ = tx.send(Input::Eof(generation));
    });
    Ok(Server {
        child,
        exited: false,
    })
}

/// Closes the server's stdin, gives it [`GRACE`] to exit, then kills it; reaps it.
fn stop(mut server: Server) {
    drop(server.child.stdin.take());
    let give_up = StdInstant::now() + GRACE;
    while StdInstant::now() < give_up {
        if !matches!(server.child.try_wait(), Ok(None)) {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = server.child.kill();
    let _ = server.child.wait();
}

/// Starts the server, or tells the machine why it could not.
fn start(
    client: &mut Client,
    now: Instant,
    argv: &[String],
    generation: u64,
    tx: &Sender<Input>,
) -> Option<Server> {
    match spawn(argv, generation, tx) {
        Ok(server) => Some(server),
        Err(e) => {
            let failure =
                TransportFailure::new(TransportFailureKind::Spawn, format!("{}: {e}", argv[0]));
            client.handle_transport_error(now, ConnId::STDIO, failure);
            None
        }
    }
}

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    assert!(!argv.is_empty(), "usage: own_runtime PROGRAM [ARGS...]");
    let origin = StdInstant::now();
    let now = || Instant::from_elapsed(origin.elapsed());
    let (tx, rx): (Sender<Input>, Receiver<Input>) = mpsc::channel();
    let mut client = Client::stdio(ClientConfig::new("own-runtime", "1.0"), now());
    let list = client.call(now(), CallRequest::list_tools()).expect("call");
    // The stdio channel exists from the start: a server that cannot be started is a
    // transport failure like any other, and the machine closes with it.
    let mut generation = 0;
    let mut server = start(&mut client, now(), &argv, generation, &tx);
    let mut add = None;
    let mut failed = false;
    let mut released = false;
    let mut buf = Vec::new();
    loop {
        // 1. Do what the machine asks.
        while let Some(transmit) = client.poll_transmit(now(), &mut buf) {
            match transmit {
                Transmit::Write { conn, len } => {
                    let stdin = server.as_mut().and_then(|s| s.child.stdin.as_mut());
                    let written = match stdin {
                        Some(stdin) => stdin.write_all(&buf).and_then(|()| stdin.flush()),
                        None => Err(std::io::ErrorKind::BrokenPipe.into()),
                    };
                    match written {
                        Ok(()) => client.handle_written(now(), conn, len),
                        // A server that stopped reading: the machine bounds how long
                        // its output may still run.
                        Err(e) => client.handle_transport_error(
                            now(),
                            conn,
                            TransportFailure::from_io(&e),
                        ),
                    }
                }
                Transmit::Respawn => {
                    if let Some(old) = server.take() {
                        stop(old);
                    }
                    generation += 1;
                    server = start(&mut client, now(), &argv, generation, &tx);
                    if server.is_some() {
                        client.handle_connected(now(), ConnId::STDIO);
                    }
                }
                Transmit::Close { .. } => {
                    if let Some(old) = server.take() {
                        stop(old);
                    }
                    released = true;
                }
                // Connect is for HTTP; a request this driver does not know cannot be
                // carried out, so the client is closed.
                _ => client.close(now()),
            }
            buf.clear();
        }
        // 2. Act on what happened; a command given here has output: back to 1.
        let mut acted = false;
        while let Some(event) = client.poll_event() {
            acted = true;
            match event {
                Event::Connected(details) => println!("connected: {}", details.protocol_version),
                Event::InputRequested { input, request, .. } => {
                    let answer = AcceptDefaults.answer(&request);
                    let _ = client.respond(now(), input, answer);
                }
                Event::CallCompleted { call, outcome } if call == list => {
                    match outcome.and_then(|o| o.tools()) {
                        Ok(tools) => {
                            let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
                            println!("tools: {}", names.join(", "));
                            if names.contains(&"add") {
                                let request = CallRequest::call_tool(
                                    "add",
                                    serde_json::json!({"a": 2, "b": 3}),
                                );
                                add = client.call(now(), request).ok();
                            }
                        }
                        Err(e) => {
                            println!("tools/list failed: {e}");
                            failed = true;
                        }
                    }
                    if add.is_none() {
                        client.close(now());
                    }
                }
                Event::CallCompleted { call, outcome } if Some(call) == add => {
                    match outcome.and_then(|o| o.tool_result()) {
                        Ok(result) => println!("add(2, 3) = {}", result.text()),
                        Err(e) => {
                            println!("tools/call failed: {e}");
                            failed = true;
                        }
                    }
                    client.close(now());
                }
                Event::Closed { reason } => println!("closed: {reason}"),
                _ => {}
            }
        }
        if acted {
            continue;
        }
        // Every output is drained: once the channel is released, nothing more comes.
        if released {
            std::process::exit(i32::from(failed));
        }
        // 3. Wait for bytes, the machine's next deadline, or the next look at whether the
        //    server exited.
        let deadline = client.poll_timeout();
        let mut wait = deadline.map_or(Duration::MAX, |t| t.saturating_duration_since(now()));
        if server.as_ref().is_some_and(|s| !s.exited) {
            wait = wait.min(EXIT_CHECK);
        }
        match rx.recv_timeout(wait) {
            Ok(Input::Bytes(g, bytes)) if g == generation => {
                client.handle_read(now(), ConnId::STDIO, &bytes);
            }
            Ok(Input::Eof(g)) if g == generation => client.handle_eof(now(), ConnId::STDIO),
            // What a former process's pipe still brings.
            Ok(_) => {}
            // This loop holds a sender: the channel never disconnects.
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => {}
        }
        if let Some(s) = server.as_mut().filter(|s| !s.exited)
            && !matches!(s.child.try_wait(), Ok(None))
        {
            s.exited = true;
            client.handle_process_exited(now());
        }
        if deadline.is_some_and(|t| t <= now()) {
            client.handle_timeout(now());
        }
    }
}
