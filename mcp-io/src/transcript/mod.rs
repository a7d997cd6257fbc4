//! Transcripts of a client's run, written with the wire log's redaction, and their
//! replay (see [`mcp_proto::client::transcript`] for the format and what a replay
//! checks).
//!
//! Both adapters record when [`Options::transcript`] is set: they turn recording on
//! when the machine is made ([`Recording::start`]) and pass every line through
//! [`Recording::drain`] to the sink after every step. HTTP bytes are redacted by the
//! [rules of the wire log](crate::wire_log): the values of secret headers (`Authorization`,
//! cookies, `Mcp-Session-Id`, API-key-style names, and those named with
//! [`Options::redact_header`]) become `[redacted]`, and so do the values of secret query
//! parameters in request lines; in the header line, the endpoint URL's secret query
//! values become `redacted` (a URL cannot hold brackets) and the `Authorization` value
//! `[redacted]`. On an event-stream line `data: URL` (the `endpoint` event of the
//! 2024-11-05 HTTP+SSE transport) each byte of a secret query value (its `sessionId`)
//! becomes the next byte of `redacted`, repeated: the URL stays usable on replay and
//! the chunk that carried it keeps the length it declared. Unlike the wire log, each read
//! keeps its bytes as they came (a header
//! split across reads is redacted in both), since a replay must feed them at the same
//! times. Stdio bytes are recorded as they are, as the wire log shows them.
//!
//! [`replay`] plays such a text again with the same redaction.
//!
//! ```
//! use mcp_io::transcript;
//! use mcp_proto::Instant;
//! use mcp_proto::client::{Client, ClientConfig};
//!
//! let mut client = Client::stdio(ClientConfig::new("doc", "1"), Instant::ZERO);
//! client.start_recording();
//! let mut buf = Vec::new();
//! while client.poll_transmit(Instant::ZERO, &mut buf).is_some() {}
//! let mut recording = transcript::Recording::new(&[]);
//! let mut text = String::new();
//! recording.drain(&mut client, &mut |line: &str| {
//!     text.push_str(line);
//!     text.push('\n');
//! });
//! assert_eq!(transcript::replay(&text).unwrap().entries, 3);
//! ```

mod head;

use std::sync::Arc;

use mcp_proto::client::transcript::{
    NoRedaction, Redaction, Redactor, Replay, ReplayError, Summary,
};
use mcp_proto::client::{Client, ConnId, IdMap};
use serde_json::{Value, json};

use crate::options::{Flavour, Options};
use crate::wire_log::{REDACTED, is_secret_param};
use head::Head;

/// What a secret query value of the endpoint URL becomes in a header line.
pub const URL_STAND_IN: &str = "redacted";

/// The name the header gives this redaction.
const RULES: &str = "wire-log";

/// The wire log's redaction, for transcripts: see the [module docs](self).
#[derive(Debug, Default)]
pub struct WireRedaction {
    extra: Arc<[String]>,
    /// The response being read on each connection.
    responses: IdMap<ConnId, Head>,
}

impl WireRedaction {
    /// The built-in rules, and the header names in `headers` (compared without regard
    /// to ASCII case).
    #[must_use]
    pub fn new(headers: &[String]) -> Self {
        WireRedaction {
            extra: headers.into(),
            responses: IdMap::default(),
        }
    }

    /// The redaction a transcript's header describes: none, or this one with the names
    /// it lists.
    ///
    /// # Errors
    /// A description of a redaction this crate does not make.
    pub fn described(described: Option<&Value>) -> Result<Box<dyn Redaction>, String> {
        let Some(described) = described else {
            return Ok(Box::new(NoRedaction));
        };
        if described.get("rules").and_then(Value::as_str) != Some(RULES) {
            return Err(format!("unknown redaction {described}"));
        }
        let headers: Vec<String> = match described.get("headers") {
            None => Vec::new(),
            Some(h) => serde_json::from_value(h.clone()).map_err(|e| format!("redaction: {e}"))?,
        };
        Ok(Box::new(WireRedaction::new(&headers)))
    }
}

impl Redaction for WireRedaction {
    fn request(&mut self, conn: ConnId, bytes: &[u8]) -> Vec<u8> {
        self.responses.remove(&conn);
        Head::new(Arc::clone(&self.extra)).redact(bytes)
    }

    fn response(&mut self, conn: ConnId, bytes: &[u8]) -> Vec<u8> {
        let extra = &self.extra;
        self.responses
            .entry(conn)
            .or_insert_with(|| Head::new(Arc::clone(extra)))
            .redact(bytes)
    }

    fn credential(&mut self, _: &str) -> String {
        REDACTED.to_owned()
    }

    fn url(&mut self, url: &str) -> String {
        redact_url(url)
    }

    fn describe(&self) -> Value {
        if self.extra.is_empty() {
            json!({ "rules": RULES })
        } else {
            json!({ "rules": RULES, "headers": &*self.extra })
        }
    }
}

/// `url` with the value of every secret query parameter ([`is_secret_param`]) replaced
/// by [`URL_STAND_IN`]. A query part without `=` is kept, as the wire log keeps it in
/// request lines: a transcript's URL and its requests follow one rule, so that it
/// replays.
///
/// ```
/// assert_eq!(
///     mcp_io::transcript::redact_url("https://h/mcp?access_token=abc&page=2&key="),
///     "https://h/mcp?access_token=redacted&page=2&key="
/// );
/// ```
#[must_use]
pub fn redact_url(url: &str) -> String {
    let Some((base, query)) = url.split_once('?') else {
        return url.to_owned();
    };
    let params: Vec<String> = query
        .split('&')
        .map(|param| match param.split_once('=') {
            Some((name, value)) if !value.is_empty() && is_secret_param(name.as_bytes()) => {
                format!("{name}={URL_STAND_IN}")
            }
            _ => param.to_owned(),
        })
        .collect();
    format!("{base}?{}", params.join("&"))
}

/// What an adapter keeps while its machine records: the redaction of the lines so far.
#[derive(Debug)]
pub struct Recording {
    redactor: Redactor<WireRedaction>,
}

impl Recording {
    /// A recording redacting the headers in `headers` besides the built-in ones.
    #[must_use]
    pub fn new(headers: &[String]) -> Self {
        Recording {
            redactor: Redactor::new(WireRedaction::new(headers)),
        }
    }

    /// When `options` have a [transcript sink](Options::transcript): turns recording on
    /// for `machine` (just made) and returns what to drain it with.
    pub fn start<F: Flavour>(machine: &mut Client, options: &Options<F>) -> Option<Recording> {
        options.transcript.as_ref()?;
        machine.start_recording();
        Some(Recording::new(&options.redact_headers))
    }

    /// Hands every line the machine has to `sink`, redacted.
    pub fn drain<S: ?Sized + FnMut(&str)>(&mut self, machine: &mut Client, sink: &mut S) {
        while let Some(line) = machine.poll_transcript() {
            sink(&self.redactor.redact(line));
        }
    }

    /// [`Recording::drain`] into the options' sink, when there is a recording (and a
    /// sink).
    pub fn drain_into<S: ?Sized + FnMut(&str)>(
        recording: &mut Option<Recording>,
        machine: &mut Client,
        sink: &mut Option<Box<S>>,
    ) {
        if let (Some(recording), Some(sink)) = (recording, sink) {
            recording.drain(machine, &mut **sink);
        }
    }
}

/// Plays every transcript in `text` (as the adapters write them) on a fresh machine
/// each, with the redaction its header names.
///
/// # Errors
/// The first difference, naming its line; or a text that is no transcript.
pub fn replay(text: &str) -> Result<Summary, ReplayError> {
    Replay::new(text)?.run_with(WireRedaction::described)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_redacted_url_is_still_a_url() {
        let url = "https://h.example/mcp?api_key=k1&x=1&client%5Fsecret=s";
        let redacted = redact_url(url);
        assert_eq!(
            redacted,
            "https://h.example/mcp?api_key=redacted&x=1&client%5Fsecret=redacted"
        );
        assert!(mcp_proto::http::EndpointUrl::parse(&redacted, false).is_ok());
        assert_eq!(redact_url("https://h/mcp"), "https://h/mcp");
        assert_eq!(
            redact_url("https://h/mcp?v2&page=2"),
            "https://h/mcp?v2&page=2"
        );
    }

    #[test]
    fn the_description_makes_the_same_redaction() {
        let named = WireRedaction::new(&["X-Tenant".to_owned()]);
        let mut again = WireRedaction::described(Some(&named.describe())).unwrap();
        let request = b"POST / HTTP/1.1\r\nx-tenant: t\r\n\r\n";
        assert_eq!(
            again.request(ConnId::STDIO, request),
            b"POST / HTTP/1.1\r\nx-tenant: [redacted]\r\n\r\n"
        );
        assert!(WireRedaction::described(Some(&json!({"rules": "other"}))).is_err());
    }
}
