//! Connecting has one deadline in `mcp-blocking`: the name, each address and the TLS
//! handshake share it, and a handshake that trickles in byte by byte (or a plain-HTTP
//! port behind an `https://` URL) fails in time, naming the limit that ran out.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::thread;
use std::time::{Duration, Instant};

use mcp_blocking::http::TlsConnector;
use mcp_blocking::{Client, ClientConfig, Connector, HttpOptions, Options};
use mcp_proto::http::EndpointUrl;

/// A server that reads the ClientHello and then sends the start of a TLS record, one
/// byte every 200 ms, for as long as the client stays.
fn dripping_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    thread::spawn(move || {
        let (mut socket, _) = listener.accept().unwrap();
        let mut hello = [0u8; 4096];
        let _ = socket.read(&mut hello);
        // A handshake record of 255 bytes, delivered far too slowly.
        let _ = socket.write_all(&[0x16, 0x03, 0x03, 0x00, 0xff]);
        for _ in 0..100 {
            if socket.write_all(&[0x02]).is_err() {
                return;
            }
            thread::sleep(Duration::from_millis(200));
        }
    });
    port
}

/// A plain-HTTP server that waits for a request head which a ClientHello never ends.
fn plain_http_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    thread::spawn(move || {
        let (mut socket, _) = listener.accept().unwrap();
        let mut sink = [0u8; 4096];
        while socket.read(&mut sink).is_ok_and(|n| n > 0) {}
    });
    port
}

#[test]
fn a_trickling_tls_handshake_is_cut_at_the_connect_timeout() {
    let url = format!("https://127.0.0.1:{}/mcp", dripping_server());
    let url = EndpointUrl::parse(&url, false).unwrap();
    let started = Instant::now();
    let err = TlsConnector::webpki_roots()
        .connect(&url, Duration::from_secs(1))
        .err()
        .expect("no handshake completes");
    let took = started.elapsed();
    assert_eq!(err.kind(), std::io::ErrorKind::TimedOut, "{err}");
    assert!(err.to_string().contains("TLS handshake"), "{err}");
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_millis(1500),
        "{took:?}"
    );
}

#[test]
fn an_https_url_to_a_plain_http_port_fails_as_a_stalled_tls_handshake_within_the_timeout() {
    let url = format!("https://127.0.0.1:{}/mcp", plain_http_server());
    let mut config = ClientConfig::new("deadline", "1.0");
    config.limits.connect_timeout = Duration::from_secs(1);
    let started = Instant::now();
    let err = Client::connect_http_with(&url, config, Options::new(), HttpOptions::new())
        .expect_err("nothing to connect to");
    let took = started.elapsed();
    assert_eq!(err.kind(), "timeout", "{err}");
    assert!(
        err.to_string()
            .ends_with("connecting did not finish within 1s (Limits::connect_timeout)"),
        "{err}"
    );
    assert!(took < Duration::from_millis(1300), "{took:?}");
}
