//! Shared by `serve_slow_clients.rs` and `serve_eviction.rs`: both HTTP hosting adapters started side by side, and
//! raw HTTP/1.1 requests written by hand.
#![allow(dead_code)]

use std::io::{self, Read};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use async_io::Async;
use futures_lite::future;
use mcp_proto::server::{Server, example};
use mcp_smol::HttpServeOptions;
use serde_json::{Value, json};

pub const V: &str = "2026-07-28";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Adapter {
    Blocking,
    Smol,
}

pub const BOTH: [Adapter; 2] = [Adapter::Blocking, Adapter::Smol];

/// A server running on one of the adapters.
pub struct Running {
    pub adapter: Adapter,
    pub addr: SocketAddr,
    blocking: Option<mcp_blocking::HttpServerHandle>,
    smol_stop: Option<async_channel::Sender<()>>,
    smol_ended: Option<mpsc::Receiver<io::Result<()>>>,
    smol_thread: Option<JoinHandle<()>>,
}

pub fn start(adapter: Adapter, options: HttpServeOptions) -> Running {
    start_with(adapter, options, example::server)
}

pub fn start_with(
    adapter: Adapter,
    options: HttpServeOptions,
    server: impl FnOnce() -> Server + Send + 'static,
) -> Running {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let addr = listener.local_addr().expect("local address");
    match adapter {
        Adapter::Blocking => {
            let handle = mcp_blocking::serve_http_with(listener, server(), options).unwrap();
            Running {
                adapter,
                addr,
                blocking: Some(handle),
                smol_stop: None,
                smol_ended: None,
                smol_thread: None,
            }
        }
        Adapter::Smol => {
            let listener = Async::new(listener).expect("async listener");
            let (stop, stopped) = async_channel::bounded::<()>(1);
            let (done, ended) = mpsc::channel();
            let thread = thread::spawn(move || {
                let stop = async move {
                    let _ = stopped.recv().await;
                };
                let served = mcp_smol::serve_http(listener, server(), options, |_| {}, stop);
                let _ = done.send(future::block_on(served));
            });
            Running {
                adapter,
                addr,
                blocking: None,
                smol_stop: Some(stop),
                smol_ended: Some(ended),
                smol_thread: Some(thread),
            }
        }
    }
}

impl Running {
    /// Stops the server; how long it took to return (at most `patience`, else `None`:
    /// the server had not returned by then).
    pub fn stop_within(mut self, patience: Duration) -> Option<Duration> {
        let started = Instant::now();
        if let Some(handle) = self.blocking.take() {
            let (tx, rx) = mpsc::channel();
            thread::spawn(move || {
                handle.stop();
                let _ = tx.send(());
            });
            return rx.recv_timeout(patience).ok().map(|()| started.elapsed());
        }
        drop(self.smol_stop.take());
        let ended = self.smol_ended.take().unwrap().recv_timeout(patience).ok();
        let took = started.elapsed();
        if ended.is_some()
            && let Some(t) = self.smol_thread.take()
        {
            let _ = t.join();
        }
        ended.map(|_| took)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        drop(self.smol_stop.take());
    }
}

/// A raw request to `/mcp`.
pub fn request(method: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut out = format!("{method} /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    if !body.is_empty() {
        out.push_str("Content-Type: application/json\r\n");
        out.push_str("Accept: application/json, text/event-stream\r\n");
        out.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    for (n, v) in headers {
        out.push_str(&format!("{n}: {v}\r\n"));
    }
    out.push_str("\r\n");
    let mut out = out.into_bytes();
    out.extend_from_slice(body);
    out
}

/// A 2026-07-28 POST of `method` with `params` (the `_meta` added).
pub fn modern(id: i64, method: &str, mut params: Value, extra: &[(&str, &str)]) -> Vec<u8> {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": V,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "attacker", "version": "1"}
    });
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let mut headers = vec![("MCP-Protocol-Version", V), ("Mcp-Method", method)];
    headers.extend_from_slice(extra);
    request("POST", &headers, body.to_string().as_bytes())
}

pub fn call(id: i64, tool: &str, arguments: Value) -> Vec<u8> {
    modern(
        id,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
        &[("Mcp-Name", tool)],
    )
}

pub fn list(id: i64) -> Vec<u8> {
    modern(id, "tools/list", json!({}), &[])
}

/// Reads until `done` holds for what was read, the connection ends, or `patience`
/// passes; what was read, and whether the connection ended.
pub fn read_for(
    s: &mut TcpStream,
    patience: Duration,
    done: impl Fn(&[u8]) -> bool,
) -> (Vec<u8>, bool) {
    let deadline = Instant::now() + patience;
    let mut seen = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
    while !done(&seen) && Instant::now() < deadline {
        match s.read(&mut buf) {
            Ok(0) => return (seen, true),
            Ok(n) => seen.extend_from_slice(&buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) => {}
            Err(_) => return (seen, true),
        }
    }
    (seen, false)
}

/// Whether `bytes` hold a whole response with a `Content-Length` body.
pub fn whole_response(bytes: &[u8]) -> bool {
    let Some(end) = bytes.windows(4).position(|w| w == b"\r\n\r\n") else {
        return false;
    };
    let head = String::from_utf8_lossy(&bytes[..end]).to_ascii_lowercase();
    let Some(len) = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok())
    else {
        return false;
    };
    bytes.len() >= end + 4 + len
}

pub fn status(bytes: &[u8]) -> Option<u16> {
    let text = String::from_utf8_lossy(bytes.get(..12.min(bytes.len()))?);
    text.strip_prefix("HTTP/1.1 ")?.get(..3)?.parse().ok()
}

/// One request on a fresh connection, its whole response within `patience`.
pub fn fresh_roundtrip(addr: SocketAddr, request: &[u8], patience: Duration) -> Vec<u8> {
    use std::io::Write;
    let mut s = TcpStream::connect(addr).expect("connect");
    s.write_all(request).expect("send");
    read_for(&mut s, patience, whole_response).0
}

/// Threads of this process whose name starts with `prefix`.
pub fn threads_named(prefix: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| {
                    std::fs::read_to_string(e.path().join("comm"))
                        .is_ok_and(|c| c.trim().starts_with(prefix))
                })
                .count()
        })
        .unwrap_or(0)
}
