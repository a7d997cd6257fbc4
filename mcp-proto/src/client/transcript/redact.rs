//! Keeping secrets out of a transcript: the [`Redaction`] a driver supplies, and the
//! [`Redactor`] that applies it to each line the machine hands out.

use serde_json::Value;

use super::entry::{Data, In, Line, Out};
use crate::client::ConnId;

/// How the secrets of an HTTP transcript are replaced (`mcp-io` implements the wire
/// log's rules). Stdio bytes are never passed to it.
///
/// A replay applies the same redaction to what the fresh machine writes, and feeds it
/// what the transcript holds: each stand-in must be something the machine accepts where
/// the secret was (a header value, a query value, a session id).
pub trait Redaction {
    /// An HTTP request, as one `Write` on `conn` handed it out (whole). The response
    /// read on `conn` after it starts afresh.
    fn request(&mut self, conn: ConnId, bytes: &[u8]) -> Vec<u8>;
    /// Bytes read on `conn`, in order. Each byte must be mapped as it comes, nothing
    /// held back, so that every read keeps its place in time.
    fn response(&mut self, conn: ConnId, bytes: &[u8]) -> Vec<u8>;
    /// A credential (an `Authorization` value given in the configuration or with
    /// `set_authorization`).
    fn credential(&mut self, value: &str) -> String;
    /// The endpoint URL, its secrets replaced with what URL syntax allows.
    fn url(&mut self, url: &str) -> String;
    /// What the header says about this redaction, so that a replay can make the same.
    fn describe(&self) -> Value;
}

/// No redaction: the lines stay as the machine wrote them.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoRedaction;

impl Redaction for NoRedaction {
    fn request(&mut self, _: ConnId, bytes: &[u8]) -> Vec<u8> {
        bytes.to_vec()
    }
    fn response(&mut self, _: ConnId, bytes: &[u8]) -> Vec<u8> {
        bytes.to_vec()
    }
    fn credential(&mut self, value: &str) -> String {
        value.to_owned()
    }
    fn url(&mut self, url: &str) -> String {
        url.to_owned()
    }
    fn describe(&self) -> Value {
        Value::Null
    }
}

/// Rewrites the lines of one recording (from
/// [`Client::poll_transcript`](crate::client::Client::poll_transcript), in order) through
/// a [`Redaction`]: HTTP requests and responses, the URL, `Authorization` and the
/// configured headers that requests hide of the header, `set_authorization` values. The header records
/// [`Redaction::describe`].
#[derive(Debug)]
pub struct Redactor<R> {
    redaction: R,
    http: bool,
    /// A line was seen, so the next one is not the header.
    started: bool,
}

impl<R: Redaction> Redactor<R> {
    /// A redactor for a recording that has not started yet.
    pub fn new(redaction: R) -> Self {
        Redactor {
            redaction,
            http: false,
            started: false,
        }
    }

    /// `line` with its secrets replaced. Lines with none are returned as they are.
    ///
    /// A line that cannot be read back (a value in it nested deeper than a JSON reader
    /// follows, such as an extension capability of the configuration) cannot be
    /// redacted: it is replaced by a line saying so, which a replay refuses. When that
    /// line is the header, which says whether the recording is of HTTP, every later
    /// line is redacted as HTTP.
    pub fn redact(&mut self, line: String) -> String {
        let first = !std::mem::replace(&mut self.started, true);
        let parsed = match Line::parse(&line) {
            Ok(parsed) => parsed,
            Err(error) => {
                if first {
                    self.http = true;
                }
                return Line::unreadable(line.len(), &error);
            }
        };
        let r = &mut self.redaction;
        match parsed {
            Line::Header(mut header) => {
                self.http = header.http.is_some();
                if let Some(http) = &mut header.http {
                    http.url = r.url(&http.url);
                    if let Some(Value::String(value)) = http.authorization_mut() {
                        *value = r.credential(value);
                    }
                    for (name, value) in http.headers_mut() {
                        if hides_header(r, name, value) {
                            *value = r.credential(value);
                        }
                    }
                }
                let described = r.describe();
                header.redaction = (!described.is_null()).then_some(described);
                Line::header(&header)
            }
            Line::In(t, In::Read { conn, data }) if self.http => {
                let bytes = data.bytes().unwrap_or_default();
                let data = Data::of(&r.response(ConnId(conn), &bytes));
                Line::input(t, &In::Read { conn, data })
            }
            Line::In(t, In::SetAuthorization { value: Some(v) }) => {
                let value = Some(r.credential(&v));
                Line::input(t, &In::SetAuthorization { value })
            }
            Line::Out(t, Out::Write { conn, data }) if self.http => {
                let bytes = data.bytes().unwrap_or_default();
                let data = Data::of(&r.request(ConnId(conn), &bytes));
                Line::output(t, &Out::Write { conn, data })
            }
            _ => line,
        }
    }
}

/// Whether `redaction` hides header `name` when a request carries it: then the
/// header's record of [`HttpConfig::headers`](crate::client::http::HttpConfig::headers)
/// hides its value too, and a replay writes what the redacted recording shows.
fn hides_header(redaction: &mut dyn Redaction, name: &str, value: &str) -> bool {
    let probe = format!("GET / HTTP/1.1\r\n{name}: {value}\r\n\r\n");
    // A connection no machine numbers, so no response in progress is disturbed.
    redaction.request(ConnId(u64::MAX), probe.as_bytes()) != probe.as_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Instant;
    use crate::client::http::HttpConfig;
    use crate::client::{Client, ClientConfig};
    use crate::http::EndpointUrl;

    /// Every request, response, credential and URL becomes `[gone]`.
    struct Hide;

    impl Redaction for Hide {
        fn request(&mut self, _: ConnId, _: &[u8]) -> Vec<u8> {
            b"[gone]".to_vec()
        }
        fn response(&mut self, _: ConnId, _: &[u8]) -> Vec<u8> {
            b"[gone]".to_vec()
        }
        fn credential(&mut self, _: &str) -> String {
            "[gone]".to_owned()
        }
        fn url(&mut self, _: &str) -> String {
            "http://gone/".to_owned()
        }
        fn describe(&self) -> Value {
            Value::String("hide".to_owned())
        }
    }

    #[test]
    fn a_line_that_cannot_be_read_back_is_not_passed_on_unredacted() {
        // An extension capability nested deeper than a JSON reader follows makes a
        // header line that does not parse again.
        let mut deep = Value::Bool(true);
        for _ in 0..200 {
            deep = Value::Array(vec![deep]);
        }
        let mut config = ClientConfig::new("deep", "1");
        config
            .capabilities
            .extensions
            .insert("x-deep".to_owned(), deep);
        let url = EndpointUrl::parse("http://127.0.0.1:9/mcp?access_token=urlsecret", false)
            .expect("a valid URL");
        let mut http = HttpConfig::new(url);
        http.authorization = Some("Bearer headersecret".to_owned());
        let mut client = Client::http(config, http, Instant::ZERO);
        client.start_recording();
        let mut buf = Vec::new();
        while client.poll_transmit(Instant::ZERO, &mut buf).is_some() {}
        client.handle_connected(Instant::ZERO, ConnId(1));
        while client.poll_transmit(Instant::ZERO, &mut buf).is_some() {}
        assert!(String::from_utf8_lossy(&buf).contains("headersecret"));
        let mut redactor = Redactor::new(Hide);
        let mut written = String::new();
        while let Some(line) = client.poll_transcript() {
            written.push_str(&redactor.redact(line));
            written.push('\n');
        }
        for secret in ["urlsecret", "headersecret"] {
            assert!(!written.contains(secret), "{secret} leaked: {written:.300}");
        }
        // The request went out, redacted as the HTTP it is.
        assert!(written.contains(r#""out":"write""#), "{written}");
        let refused = super::super::Replay::new(&written).unwrap_err();
        assert!(
            refused.to_string().starts_with(
                "line 1: not a transcript line: the recorder could not read this line back"
            ),
            "{refused}"
        );
    }
}
