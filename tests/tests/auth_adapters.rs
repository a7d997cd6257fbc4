//! What the adapters do for the authorization flow outside the machine: a lone request
//! (revocation) on a connection of its own, and the built-in connectors refusing local
//! addresses for an origin that must be public.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::thread;
use std::time::Duration;

use mcp_blocking::{HttpOptions, send_auth_request, send_auth_request_within};
use mcp_proto::auth::{Credentials, revocation_requests};
use mcp_proto::client::Origin;
use mcp_proto::http::EndpointUrl;

fn credentials(revoke: &str) -> Credentials {
    serde_json::from_value(serde_json::json!({
        "server_url": "http://127.0.0.1:1/mcp",
        "resource": "http://127.0.0.1:1/mcp",
        "issuer": "http://127.0.0.1:2",
        "access_token": "at-1",
        "refresh_token": "rt-1",
        "revocation_endpoint": revoke,
        "client": {"issuer": "http://127.0.0.1:2", "client_id": "c-1",
                   "client_secret": "s-1", "auth_method": "client_secret_basic", "source": "dcr"}
    }))
    .unwrap()
}

/// One HTTP/1.1 server on loopback answering every request with `status`, returning
/// what it read.
fn serve_once(status: u16) -> (String, thread::JoinHandle<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/revoke", listener.local_addr().unwrap());
    let handle = thread::spawn(move || {
        let (mut socket, _) = listener.accept().unwrap();
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        // Head, then the body its Content-Length announces.
        loop {
            let n = socket.read(&mut buf).unwrap();
            seen.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&seen).into_owned();
            if let Some(end) = text.find("\r\n\r\n") {
                let len: usize = text
                    .lines()
                    .find_map(|l| l.strip_prefix("Content-Length: "))
                    .map_or(0, |v| v.trim().parse().unwrap());
                if seen.len() >= end + 4 + len {
                    break;
                }
            }
        }
        let reply =
            format!("HTTP/1.1 {status} OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        socket.write_all(reply.as_bytes()).unwrap();
        String::from_utf8(seen).unwrap()
    });
    (url, handle)
}

#[test]
fn a_revocation_request_is_sent_on_a_connection_of_its_own() {
    let (url, server) = serve_once(200);
    let requests = revocation_requests(&credentials(&url), false).unwrap();
    assert_eq!(
        requests.len(),
        2,
        "the refresh token, then the access token"
    );
    let first = requests.into_iter().next().unwrap();
    let response = send_auth_request(first, &HttpOptions::new()).unwrap();
    assert_eq!(response.status, 200);
    let seen = server.join().unwrap();
    assert!(seen.starts_with("POST /revoke HTTP/1.1\r\n"), "{seen}");
    assert!(seen.contains("Connection: close\r\n"));
    // client_secret_basic: c-1:s-1.
    assert!(
        seen.contains("Authorization: Basic Yy0xOnMtMQ==\r\n"),
        "{seen}"
    );
    assert!(
        seen.ends_with("token=rt-1&token_type_hint=refresh_token"),
        "{seen}"
    );
}

/// A revocation endpoint that accepts and never answers holds the caller no longer than
/// the timeout it gave, and the error says so (it held `mcp auth logout --timeout 3` for
/// 60 s: 30 s for each of two tokens).
#[test]
fn a_silent_authorization_server_holds_a_lone_request_only_for_its_timeout() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/revoke", listener.local_addr().unwrap());
    let (done, wait) = std::sync::mpsc::channel::<()>();
    let holder = thread::spawn(move || {
        let (socket, _) = listener.accept().unwrap();
        // Silent until the client gave up (or 10 s).
        let _ = wait.recv_timeout(Duration::from_secs(10));
        drop(socket);
    });
    let request = revocation_requests(&credentials(&url), false)
        .unwrap()
        .remove(0);
    let started = std::time::Instant::now();
    let err = send_auth_request_within(request, &HttpOptions::new(), Duration::from_millis(300))
        .unwrap_err();
    let took = started.elapsed();
    assert!(took < Duration::from_secs(3), "held {took:?}");
    let text = err.to_string();
    assert!(
        text.ends_with("no response within 300ms (the timeout given)"),
        "{text}"
    );
    done.send(()).unwrap();
    holder.join().unwrap();
}

/// A connector that fails every connection with `kind`, keeping the timeouts given.
struct Failing {
    kind: std::io::ErrorKind,
    given: std::sync::Arc<std::sync::Mutex<Vec<Duration>>>,
}

impl mcp_blocking::Connector for Failing {
    fn connect(
        &self,
        _: &EndpointUrl,
        timeout: Duration,
    ) -> std::io::Result<Box<dyn mcp_blocking::http::Stream>> {
        self.given.lock().unwrap().push(timeout);
        Err(std::io::Error::new(self.kind, "the connector's own words"))
    }
}

/// A lone request whose connection is not made in time says so in the words of the
/// client's own connections, naming the limit that bounded connecting: the
/// `connect_timeout` when it is the shorter, else the timeout given for the whole.
/// Other connect failures keep their words.
#[test]
fn a_lone_request_not_connected_in_time_names_the_limit() {
    let url = "http://127.0.0.1:1/revoke";
    let request = || {
        revocation_requests(&credentials(url), false)
            .unwrap()
            .remove(0)
    };
    let given = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let options = |kind, connect: Duration| {
        HttpOptions::new()
            .connect_timeout(connect)
            .connector(Failing {
                kind,
                given: std::sync::Arc::clone(&given),
            })
    };
    let timed_out = std::io::ErrorKind::TimedOut;
    let long = Duration::from_secs(10);
    let short = Duration::from_millis(200);
    let within = Duration::from_millis(300);

    let err = send_auth_request_within(request(), &options(timed_out, long), within).unwrap_err();
    assert_eq!(err.kind(), "unreachable", "{err}");
    let text = err.to_string();
    assert!(
        text.ends_with("not connected within 300ms (the timeout given)"),
        "{text}"
    );
    let err = send_auth_request_within(request(), &options(timed_out, short), within).unwrap_err();
    let text = err.to_string();
    assert!(
        text.ends_with("not connected within 200ms (HttpOptions::connect_timeout)"),
        "{text}"
    );
    let err = send_auth_request(request(), &options(timed_out, short)).unwrap_err();
    let text = err.to_string();
    assert!(
        text.ends_with("not connected within 200ms (HttpOptions::connect_timeout)"),
        "{text}"
    );
    let refused = std::io::ErrorKind::ConnectionRefused;
    let err = send_auth_request_within(request(), &options(refused, short), within).unwrap_err();
    let text = err.to_string();
    assert!(text.ends_with("the connector's own words"), "{text}");
    assert_eq!(*given.lock().unwrap(), [within, short, short, short]);
}

#[test]
fn a_public_only_request_to_loopback_is_refused_before_anything_is_sent() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/revoke", listener.local_addr().unwrap());
    let mut request = revocation_requests(&credentials(&url), false)
        .unwrap()
        .remove(0);
    request.public_only = true;
    let err = send_auth_request(request, &HttpOptions::new()).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("no public address"), "{text}");
    // Nothing connected.
    listener.set_nonblocking(true).unwrap();
    assert!(listener.accept().is_err());
}

#[test]
fn the_smol_connector_refuses_local_addresses_for_a_public_only_origin() {
    use mcp_smol::{Connector, TcpConnector};
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = EndpointUrl::parse(
        &format!("http://{}/", listener.local_addr().unwrap()),
        false,
    )
    .unwrap();
    let origin = Origin::of(&url);
    // Allowed as it is.
    assert!(futures_lite::future::block_on(TcpConnector.connect(&origin)).is_ok());
    // Refused when it must be public.
    let refused =
        futures_lite::future::block_on(TcpConnector.connect(&origin.clone().into_public_only()));
    let err = refused.err().expect("refused");
    assert_eq!(err.kind(), std::io::ErrorKind::PermissionDenied);
    let localhost =
        EndpointUrl::parse(&format!("http://localhost:{}/", url.port()), false).unwrap();
    let refused = futures_lite::future::block_on(
        TcpConnector.connect(&Origin::of(&localhost).into_public_only()),
    );
    assert_eq!(
        refused.err().expect("refused").kind(),
        std::io::ErrorKind::PermissionDenied
    );
}

/// `Duration::MAX` is a caller's way of saying "no limit": a lone authorization request
/// given it (as its timeout, or as the connect timeout) is answered, not a panic on an
/// instant past the end of the clock.
#[test]
fn a_timeout_of_duration_max_means_no_limit() {
    use std::io::{Read, Write};
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/revoke", listener.local_addr().unwrap());
    let server = thread::spawn(move || {
        for _ in 0..2 {
            let (mut socket, _) = listener.accept().unwrap();
            let mut seen = Vec::new();
            let mut buf = [0u8; 4096];
            while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = socket.read(&mut buf).unwrap();
                assert!(n > 0, "the request ended early");
                seen.extend_from_slice(&buf[..n]);
            }
            socket
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                .unwrap();
        }
    });
    let request = || {
        revocation_requests(&credentials(&url), false)
            .unwrap()
            .remove(0)
    };
    let unbounded = HttpOptions::new().connect_timeout(Duration::MAX);
    let answer = send_auth_request_within(request(), &unbounded, Duration::MAX).unwrap();
    assert_eq!(answer.status, 200);
    let answer = send_auth_request(request(), &unbounded).unwrap();
    assert_eq!(answer.status, 200);
    server.join().unwrap();
}
