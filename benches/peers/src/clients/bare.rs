//! The bare JSON-RPC client: `serde_json` both ways, no MCP logic (no handshake, no
//! capabilities, nothing but an id check). The reference point the targets are stated
//! against.
//!
//! * stdio: one request per line. Sequential calls on one thread; with `in_flight > 1` a
//!   writer thread keeps that many requests outstanding while this thread reads the
//!   answers (the bare server answers in order).
//! * HTTP: hand-written HTTP/1.1 with `Content-Length` on keep-alive connections, one
//!   connection per call in flight, each on its own thread.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{ChildStdin, ChildStdout, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::measure::{self, Outcome, Plan};
use crate::spawn::{HttpChild, read_head, serve_env, server_exe};
use crate::spec::Case;

/// One case with the bare client.
pub fn run(case: &Case, plan: &Plan, text: &str) -> io::Result<Outcome> {
    if crate::clients::is_stdio(case) {
        stdio(case, plan, text)
    } else {
        http(case, plan, text)
    }
}

/// A request line for `id` (with its newline).
fn request(id: u64, text: &str) -> Vec<u8> {
    let request = json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": text}},
    });
    let mut out = serde_json::to_vec(&request).expect("a request is JSON");
    out.push(b'\n');
    out
}

/// Checks an answer: its id, and that the text came back whole.
fn check(answer: &[u8], id: u64, len: usize) -> io::Result<()> {
    let answer: Value = serde_json::from_slice(answer)?;
    if answer["id"] != id {
        return Err(io::Error::other("an answer to another id"));
    }
    let got = answer["result"]["content"][0]["text"]
        .as_str()
        .ok_or_else(|| io::Error::other("no text in the answer"))?;
    if got.len() != len {
        return Err(io::Error::other("the echo did not come back whole"));
    }
    Ok(())
}

struct Pipes {
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Pipes {
    fn call(&mut self, text: &str, line: &mut Vec<u8>) -> io::Result<()> {
        let id = self.next_id;
        self.next_id += 1;
        self.stdin.write_all(&request(id, text))?;
        self.read_answer(id, text.len(), line)
    }

    fn read_answer(&mut self, id: u64, len: usize, line: &mut Vec<u8>) -> io::Result<()> {
        line.clear();
        if self.stdout.read_until(b'\n', line)? == 0 {
            return Err(io::Error::other("the bare server exited"));
        }
        check(line, id, len)
    }

    /// `count` calls with `window` outstanding: a writer thread sends as the answers
    /// come back.
    fn pipelined(&mut self, text: &str, count: usize, window: usize, timed: bool) -> Vec<Duration> {
        let (permits_tx, permits_rx) = mpsc::channel::<()>();
        let (sent_tx, sent_rx) = mpsc::channel::<(u64, Instant)>();
        for _ in 0..window {
            permits_tx.send(()).expect("the writer is alive");
        }
        let first = self.next_id;
        self.next_id += count as u64;
        let Pipes { stdin, stdout, .. } = self;
        std::thread::scope(|scope| {
            scope.spawn(move || {
                for id in first..first + count as u64 {
                    if permits_rx.recv().is_err() {
                        return;
                    }
                    let start = Instant::now();
                    stdin
                        .write_all(&request(id, text))
                        .expect("write a request");
                    let _ = sent_tx.send((id, start));
                }
            });
            let mut latencies = Vec::with_capacity(if timed { count } else { 0 });
            let mut line = Vec::new();
            for (id, start) in sent_rx.iter() {
                line.clear();
                stdout.read_until(b'\n', &mut line).expect("read an answer");
                check(&line, id, text.len()).expect("the answer");
                if timed {
                    latencies.push(start.elapsed());
                }
                let _ = permits_tx.send(());
            }
            latencies
        })
    }
}

fn stdio(case: &Case, plan: &Plan, text: &str) -> io::Result<Outcome> {
    let (var, value) = serve_env(case.server, case.transport);
    let mut child = Command::new(server_exe())
        .env(var, value)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()?;
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(io::Error::other("no pipes to the child"));
    };
    let mut pipes = Pipes {
        stdin,
        stdout: BufReader::new(stdout),
        next_id: 0,
    };
    let mut line = Vec::new();
    pipes.call(text, &mut line)?;
    let timings = measure::run(plan, |count, timed| {
        if plan.in_flight > 1 {
            pipes.pipelined(text, count, plan.in_flight, timed)
        } else {
            measure::sequential(count, timed, || {
                pipes.call(text, &mut line).expect("bare echo");
            })
        }
    });
    let outcome = Outcome::new("-", &timings);
    drop(pipes);
    child.wait()?;
    Ok(outcome)
}

/// One keep-alive connection to the bare HTTP server.
struct Connection {
    output: TcpStream,
    input: BufReader<TcpStream>,
    host: String,
    next_id: u64,
    buffers: (Vec<u8>, Vec<u8>, Vec<u8>),
}

impl Connection {
    fn open(url: &str) -> io::Result<Connection> {
        let host = url
            .strip_prefix("http://")
            .and_then(|rest| rest.split('/').next())
            .ok_or_else(|| io::Error::other("not an http URL"))?;
        let output = TcpStream::connect(host)?;
        output.set_nodelay(true)?;
        Ok(Connection {
            input: BufReader::new(output.try_clone()?),
            output,
            host: host.to_owned(),
            next_id: 0,
            buffers: Default::default(),
        })
    }

    fn call(&mut self, text: &str) -> io::Result<()> {
        let id = self.next_id;
        self.next_id += 1;
        let body = request(id, text);
        let (out, line, answer) = &mut self.buffers;
        out.clear();
        write!(
            out,
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n",
            self.host,
            body.len()
        )?;
        out.extend_from_slice(&body);
        self.output.write_all(out)?;
        let length = read_head(&mut self.input, line)?
            .ok_or_else(|| io::Error::other("the bare server closed the connection"))?;
        answer.resize(length, 0);
        self.input.read_exact(answer)?;
        check(answer, id, text.len())
    }
}

fn http(case: &Case, plan: &Plan, text: &str) -> io::Result<Outcome> {
    let server = HttpChild::spawn(case.server)?;
    let mut connections = (0..plan.in_flight)
        .map(|_| Connection::open(&server.url))
        .collect::<io::Result<Vec<_>>>()?;
    for connection in &mut connections {
        connection.call(text)?;
    }
    let timings = measure::run(plan, |count, timed| {
        let workers = connections.len();
        if let [connection] = connections.as_mut_slice() {
            return measure::sequential(count, timed, || {
                connection.call(text).expect("bare echo");
            });
        }
        std::thread::scope(|scope| {
            let handles: Vec<_> = connections
                .iter_mut()
                .enumerate()
                .map(|(w, connection)| {
                    let mine = count / workers + usize::from(w < count % workers);
                    scope.spawn(move || {
                        measure::sequential(mine, timed, || {
                            connection.call(text).expect("bare echo");
                        })
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().expect("a bare worker"))
                .collect()
        })
    });
    Ok(Outcome::new("-", &timings))
}
