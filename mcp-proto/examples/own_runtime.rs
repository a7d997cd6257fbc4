//! A complete MCP client on nothing but `std` and `mcp-proto`: the whole of what an
//! adapter does, for anyone whose runtime is not one we ship.
//!
//! ```text
//! cargo run -p mcp-proto --example own_runtime -- PROGRAM [ARGS...]
//! ```
//!
//! It starts PROGRAM as a stdio server, lists its tools, calls `add` with `{"a":2,"b":3}`
//! when the server has it, and closes. The machine decides everything; this file only
//! spawns processes, moves bytes, keeps one timer and prints events.
// This example is the IO side: it may use the clock, processes and threads that the
// library itself never touches.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::Instant as StdInstant;

use mcp_proto::client::{
    AcceptDefaults, CallRequest, Client, ClientConfig, ConnId, Event, InputHandler, Transmit,
};
use mcp_proto::{Instant, client::TransportFailure};

/// What the stdout reader thread saw.
enum Input {
    Bytes(Vec<u8>),
    Eof,
}

fn spawn(argv: &[String], tx: &Sender<Input>) -> std::io::Result<Child> {
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
            if tx.send(Input::Bytes(buf[..n].to_vec())).is_err() {
                return;
            }
        }
        let _ = tx.send(Input::Eof);
    });
    Ok(child)
}

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    assert!(!argv.is_empty(), "usage: own_runtime PROGRAM [ARGS...]");
    let origin = StdInstant::now();
    let now = || Instant::from_elapsed(origin.elapsed());
    let (tx, rx): (Sender<Input>, Receiver<Input>) = mpsc::channel();
    let mut child = spawn(&argv, &tx).expect("start the server");
    let mut client = Client::stdio(ClientConfig::new("own-runtime", "1.0"), now());
    let list = client.call(now(), CallRequest::list_tools()).expect("call");
    let mut add = None;
    let mut buf = Vec::new();
    loop {
        // 1. Do what the machine asks.
        while let Some(transmit) = client.poll_transmit(now(), &mut buf) {
            match transmit {
                Transmit::Write { conn, len } => {
                    let stdin = child.stdin.as_mut().expect("piped");
                    // A server that stopped reading is about to end its stdout, which
                    // says the rest.
                    if stdin.write_all(&buf).and_then(|()| stdin.flush()).is_ok() {
                        client.handle_written(now(), conn, len);
                    }
                }
                Transmit::Respawn => {
                    let _ = child.wait();
                    match spawn(&argv, &tx) {
                        Ok(fresh) => {
                            child = fresh;
                            client.handle_connected(now(), ConnId::STDIO);
                        }
                        Err(e) => client.handle_transport_error(
                            now(),
                            ConnId::STDIO,
                            TransportFailure::from_io(&e),
                        ),
                    }
                }
                Transmit::Close { .. } => {
                    drop(child.stdin.take());
                    let _ = child.wait();
                    return;
                }
                _ => {}
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
                    let tools = outcome.and_then(|o| o.tools()).expect("tools/list");
                    println!(
                        "tools: {}",
                        tools
                            .iter()
                            .map(|t| t.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    );
                    if tools.iter().any(|t| t.name == "add") {
                        let request =
                            CallRequest::call_tool("add", serde_json::json!({"a": 2, "b": 3}));
                        add = Some(client.call(now(), request).expect("call"));
                    } else {
                        client.close(now());
                    }
                }
                Event::CallCompleted { call, outcome } if Some(call) == add => {
                    let result = outcome.and_then(|o| o.tool_result()).expect("tools/call");
                    println!("add(2, 3) = {}", result.text());
                    client.close(now());
                }
                Event::Closed { reason } => println!("closed: {reason}"),
                _ => {}
            }
        }
        if acted {
            continue;
        }
        // 3. Wait for bytes, or for the machine's next deadline.
        let wait = client
            .poll_timeout()
            .map(|t| t.saturating_duration_since(now()));
        let input = match wait {
            Some(d) => rx.recv_timeout(d),
            None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
        };
        match input {
            Ok(Input::Bytes(bytes)) => client.handle_read(now(), ConnId::STDIO, &bytes),
            Ok(Input::Eof) => client.handle_eof(now(), ConnId::STDIO),
            Err(RecvTimeoutError::Timeout) => client.handle_timeout(now()),
            Err(RecvTimeoutError::Disconnected) => {
                let _ = child.kill();
                let _ = child.wait();
                return;
            }
        }
    }
}
