//! A raw HTTP/1.1 client on `std::net::TcpStream`, for tests that must see exactly what a
//! server writes (SSE events as they come, streams left open).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// Sends a request on a fresh connection (reads time out after 50 ms, so that
/// [`read_until`] can look at its deadline); returns the connection.
pub fn send(addr: SocketAddr, method: &str, headers: &[(&str, &str)], body: &str) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
    let mut head = format!("{method} /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    for (n, v) in headers {
        head.push_str(&format!("{n}: {v}\r\n"));
    }
    if method == "POST" {
        head.push_str(&format!(
            "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             Content-Length: {}\r\n",
            body.len()
        ));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body.as_bytes()).unwrap();
    s
}

/// Reads from `s` until `done` holds for what was read (or the connection ends), within
/// five seconds.
pub fn read_until(s: &mut TcpStream, seen: &mut String, done: impl Fn(&str) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut buf = [0; 4096];
    while !done(seen) {
        assert!(Instant::now() < deadline, "timed out; so far:\n{seen}");
        match s.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => seen.push_str(&String::from_utf8_lossy(&buf[..n])),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) => panic!("read: {e}"),
        }
    }
}

/// One request on its own connection (`Connection: close`), read to its end; with a
/// session, its id and `version` are sent as headers.
pub fn post(
    addr: SocketAddr,
    session: Option<&str>,
    version: &str,
    body: &serde_json::Value,
) -> String {
    let mut headers = vec![("Connection", "close")];
    if let Some(s) = session {
        headers.push(("Mcp-Session-Id", s));
        headers.push(("MCP-Protocol-Version", version));
    }
    let mut c = send(addr, "POST", &headers, &body.to_string());
    let mut text = String::new();
    read_until(&mut c, &mut text, |_| false);
    text
}

/// The `Mcp-Session-Id` of a response's head (any case); panics without one.
pub fn session_id(text: &str) -> String {
    let head = text.split("\r\n\r\n").next().unwrap_or("");
    head.lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("mcp-session-id")
                .then(|| value.trim().to_owned())
        })
        .unwrap_or_else(|| panic!("no session: {text}"))
}

/// Opens the session's standalone `GET` stream and reads its head, which must be `200`;
/// returns the stream and what was read of it so far.
pub fn open_get_stream(addr: SocketAddr, session: &str, version: &str) -> (TcpStream, String) {
    let headers = [
        ("Accept", "text/event-stream"),
        ("Mcp-Session-Id", session),
        ("MCP-Protocol-Version", version),
    ];
    let mut stream = send(addr, "GET", &headers, "");
    let mut head = String::new();
    read_until(&mut stream, &mut head, |t| t.contains("\r\n\r\n"));
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    (stream, head)
}

/// The JSON messages of a response: its JSON body, or the `data:` lines of its SSE body
/// (lines that are not JSON are skipped).
pub fn messages(text: &str) -> Vec<serde_json::Value> {
    let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    if body.starts_with('{') {
        return serde_json::from_str(body).into_iter().collect();
    }
    body.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str(d).ok())
        .collect()
}
