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
