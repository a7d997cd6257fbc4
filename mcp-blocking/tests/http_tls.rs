//! HTTPS: a rustls server on 127.0.0.1 with a throwaway self-signed certificate (made by
//! the `openssl` command at test time) in front of the tiny test server.
//! With the `tls` feature only; `http_client.rs` checks what `https://` does without it.
#![cfg(feature = "tls")]

mod http_support;

use std::io;
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, OnceLock};

use http_support::{Behavior, Conn, TestServer};
use mcp_blocking::TransportErrorKind;
use mcp_blocking::http::TlsConnector;
use mcp_blocking::mcp_proto::Era;
use mcp_blocking::mcp_proto::client::ClientConfig;
use mcp_blocking::rustls::pki_types::pem::PemObject;
use mcp_blocking::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use mcp_blocking::rustls::{self, ServerConnection, StreamOwned};
use mcp_blocking::{Client, Error, HttpOptions, Options};
use serde_json::json;

/// A certificate for `localhost` and 127.0.0.1, with its key, as PEM files.
struct Cert {
    cert: PathBuf,
    key: PathBuf,
}

/// The certificate of this test run (made once), or `None` (skip) when `openssl` is
/// missing outside CI.
fn make_cert(test: &str) -> Option<&'static Cert> {
    static CERT: OnceLock<Option<Cert>> = OnceLock::new();
    let cert = CERT.get_or_init(new_cert).as_ref();
    if cert.is_none() {
        eprintln!("skipping {test}: openssl could not make a certificate");
    }
    cert
}

fn new_cert() -> Option<Cert> {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("mcp-blocking-tls")
        .join(std::process::id().to_string());
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let (cert, key) = (dir.join("c.pem"), dir.join("k.pem"));
    let status = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=localhost",
        ])
        .args([
            "-addext",
            "subjectAltName=DNS:localhost,IP:127.0.0.1",
            "-days",
            "1",
        ])
        // `req -x509` marks the certificate as a CA by default, and webpki refuses a CA
        // certificate as a server's own (CaUsedAsEndEntity): make it a leaf.
        .args(["-addext", "basicConstraints=critical,CA:FALSE"])
        .args(["-addext", "extendedKeyUsage=serverAuth"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
    match status {
        Ok(s) if s.success() => Some(Cert { cert, key }),
        other => {
            assert!(
                std::env::var_os("CI").is_none(),
                "openssl is needed for the TLS tests under CI: {other:?}"
            );
            eprintln!("openssl could not make a certificate: {other:?}");
            None
        }
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

struct TlsConn(StreamOwned<ServerConnection, TcpStream>);

impl io::Read for TlsConn {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf)
    }
}

impl io::Write for TlsConn {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

impl Conn for TlsConn {
    fn finish(&mut self) {
        self.0.conn.send_close_notify();
        let _ = io::Write::flush(&mut self.0);
        let _ = self.0.sock.shutdown(std::net::Shutdown::Both);
    }
    fn abort(&mut self) {
        let _ = self.0.sock.shutdown(std::net::Shutdown::Both);
    }
}

/// The test server behind TLS with `cert`.
fn tls_server(cert: &Cert, behavior: Behavior) -> TestServer {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&cert.cert)
        .expect("cert file")
        .collect::<Result<_, _>>()
        .expect("cert PEM");
    let key = PrivateKeyDer::from_pem_file(&cert.key).expect("key PEM");
    let config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .expect("server config");
    let config = Arc::new(config);
    TestServer::start_with(behavior, move |socket| {
        let conn = ServerConnection::new(Arc::clone(&config)).map_err(io::Error::other)?;
        Ok(Box::new(TlsConn(StreamOwned::new(conn, socket))) as Box<dyn Conn>)
    })
}

/// A client configuration trusting only `cert`.
fn trusting(cert: &Cert) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_file_iter(&cert.cert).unwrap() {
        roots.add(c.unwrap()).unwrap();
    }
    Arc::new(
        rustls::ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth(),
    )
}

fn config() -> ClientConfig {
    ClientConfig::new("tls-test", "0")
}

#[test]
fn https_with_a_custom_root() {
    let Some(cert) = make_cert("custom-root") else {
        return;
    };
    let server = tls_server(cert, Behavior::default());
    let port = server.addr.port();
    let http = HttpOptions::new().tls(trusting(cert));
    for host in ["localhost", "127.0.0.1"] {
        let url = format!("https://{host}:{port}/mcp");
        let mut client =
            Client::connect_http_with(&url, config(), Options::new(), http.clone()).unwrap();
        assert_eq!(client.era(), Era::Modern);
        assert!(client.list_tools().unwrap().iter().any(|t| t.name == "add"));
        for i in 0..3 {
            let sum = client.call_tool("add", json!({"a": i, "b": 2})).unwrap();
            assert_eq!(sum.text(), (i + 2).to_string());
        }
        assert_eq!(client.http_connections_opened(), 1, "TLS keep-alive");
        client.close();
    }
    assert_eq!(server.accepted(), 2);
}

#[test]
fn https_through_a_custom_connector() {
    let Some(cert) = make_cert("connector") else {
        return;
    };
    let server = tls_server(cert, Behavior::default());
    let url = format!("https://localhost:{}/mcp", server.addr.port());
    let http = HttpOptions::new().connector(TlsConnector::new(trusting(cert)));
    let mut client = Client::connect_http_with(&url, config(), Options::new(), http).unwrap();
    assert_eq!(
        client
            .call_tool("echo", json!({"text": "tls"}))
            .unwrap()
            .text(),
        "tls"
    );
}

/// Three rounds of a listing (which races the server's close and goes again if it
/// loses) and a tool call (never sent twice, placed once the close has been seen)
/// against a TLS server that ends every connection after one response as `behavior`
/// says; every request runs once.
fn closing_server_loses_nothing(name: &str, behavior: Behavior) {
    let Some(cert) = make_cert(name) else {
        return;
    };
    let server = tls_server(cert, behavior);
    let url = format!("https://localhost:{}/mcp", server.addr.port());
    let http = HttpOptions::new().tls(trusting(cert));
    // Every listing must reach the server: no list cache.
    let mut limits = mcp_blocking::mcp_proto::Limits::default();
    limits.max_cache_entries = 0;
    let config = config().limits(limits);
    let mut client = Client::connect_http_with(&url, config, Options::new(), http).unwrap();
    for i in 0..3 {
        assert!(!client.list_tools().unwrap().is_empty());
        std::thread::sleep(std::time::Duration::from_millis(60));
        let out = client.call_tool("add", json!({"a": i, "b": 1})).unwrap();
        assert_eq!(out.text(), (i + 1).to_string());
    }
    // Whether a listing lost the race is up to the scheduler (the retry itself is pinned
    // by the simulations): at most one retry each.
    assert!(client.http_retries() <= 3);
    let methods: Vec<String> = server
        .seen()
        .iter()
        .map(|r| r.rpc_method().to_owned())
        .collect();
    let once = ["tools/list", "tools/call"].repeat(3);
    assert_eq!(methods[0], "server/discover");
    assert_eq!(methods[1..], once, "each request once");
}

#[test]
fn a_tls_server_closing_idle_connections_loses_no_request() {
    closing_server_loses_nothing(
        "close-idle",
        Behavior {
            close_after_response: true,
            ..Behavior::default()
        },
    );
}

#[test]
fn a_tls_close_without_close_notify_after_a_response_loses_nothing() {
    closing_server_loses_nothing(
        "abrupt",
        Behavior {
            abrupt_close: true,
            ..Behavior::default()
        },
    );
}

#[test]
fn a_tls_answer_cut_without_close_notify_is_a_typed_error_not_a_short_answer() {
    let Some(cert) = make_cert("truncated") else {
        return;
    };
    let server = tls_server(
        cert,
        Behavior {
            truncate_tool_calls: true,
            ..Behavior::default()
        },
    );
    let url = format!("https://localhost:{}/mcp", server.addr.port());
    let http = HttpOptions::new().tls(trusting(cert));
    let mut client = Client::connect_http_with(&url, config(), Options::new(), http).unwrap();
    assert!(!client.list_tools().unwrap().is_empty());
    let err = client
        .call_tool("add", json!({"a": 1, "b": 1}))
        .expect_err("half an answer is no answer");
    assert!(
        matches!(&err, Error::Transport(t) if t.kind() == TransportErrorKind::Read)
            && err.to_string().contains("close_notify"),
        "{err:?}"
    );
    let calls = server
        .seen()
        .iter()
        .filter(|r| r.rpc_method() == "tools/call")
        .count();
    assert_eq!(calls, 1, "not sent again");
    // The client goes on: the next request takes a fresh connection.
    assert!(!client.list_tools().unwrap().is_empty());
}

#[test]
fn the_default_roots_reject_a_self_signed_certificate() {
    let Some(cert) = make_cert("default-roots") else {
        return;
    };
    let server = tls_server(cert, Behavior::default());
    let url = format!("https://localhost:{}/mcp", server.addr.port());
    let err = Client::connect_http(&url, config()).unwrap_err();
    let Error::Transport(t) = &err else {
        panic!("expected a TLS failure, got {err:?}")
    };
    assert_eq!(t.kind(), TransportErrorKind::Tls);
    assert!(
        matches!(
            t.tls_error(),
            Some(rustls::Error::InvalidCertificate(
                rustls::CertificateError::UnknownIssuer
            ))
        ),
        "{:?}",
        t.tls_error()
    );
    assert_eq!(err.kind(), "tls");
    let text = err.to_string();
    eprintln!("{text}");
    assert!(text.contains("certificate"), "{text}");
    assert!(text.contains("localhost"), "{text}");
    assert!(
        server.seen().is_empty(),
        "no request went over an untrusted connection"
    );
}
