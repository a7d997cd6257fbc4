//! Feeding the [`WireLog`](crate::WireLog): bytes as they cross the wire, cut into
//! lines, with secrets kept out. The loggers take a wire log of either
//! [flavour](crate::Flavour) (`&mut Option<Box<L>>` for any [`Sink`] `L`).
//!
//! The rules, the same for both adapters:
//!
//! * Every line is passed without its line end (`\n` or `\r\n`), empty lines included
//!   (an SSE event ends with one; an HTTP head ends with one).
//! * A line longer than [`MAX_LOG_LINE`] is passed in pieces of that size, so the log
//!   never holds more than that per stream, whatever the server sends.
//! * Over HTTP ([`HttpLog`]), the head of every request and response is logged with
//!   the value of every secret header replaced by [`REDACTED`] (the header name kept as
//!   written), continuation lines of such a header included, and the value of every
//!   secret query parameter of the request line replaced the same way (the parameter
//!   name kept). Bodies are logged as they are but for the OAuth secrets they may carry
//!   (see [below](self#secrets-in-bodies)). Lines are redacted whole, however the bytes
//!   arrived: a header split across reads is assembled before it is judged. An
//!   interim response's head (1xx other than 101) is followed by the next head, as the
//!   HTTP machine reads it, not by a body. A chunked body's chunk-size lines are logged
//!   as they are, and its data is put back together into the body's lines, each judged
//!   and logged whole where it ends: a chunk boundary never shows part of a secret.
//!
//! # Secret headers
//!
//! A header is secret ([`is_secret_header`]) when its name, without surrounding white
//! space and compared without regard to ASCII case,
//!
//! 1. is one the caller named ([`Options::redact_header`](crate::Options::redact_header),
//!    [`HttpLog::redacting`], [`ChannelLog::http_redacting`]), or
//! 2. is none of [`CHALLENGE_HEADERS`] (`WWW-Authenticate`, `Proxy-Authenticate`: a
//!    server's challenge, which OAuth discovery needs to be seen, carries no credential)
//!    and
//!    * is one of [`SECRET_HEADERS`] (`Authorization`, `Proxy-Authorization`, `Cookie`,
//!      `Set-Cookie`, `Mcp-Session-Id`), or
//!    * contains one of [`SECRET_HEADER_PARTS`] (`auth`, `token`, `secret`, `password`,
//!      `passwd`, `api-key`, `apikey`, `api_key`, `cookie`, `session`: `X-Api-Key`,
//!      `X-Auth-Token`, `X-Amz-Security-Token`, `Client-Secret`, …), or
//!    * is longer than [`MAX_CHECKED_NAME`] bytes (no real header is), or cannot be
//!      told because the first [`MAX_LOG_LINE`] bytes of its line hold no `:` (the
//!      whole line is then logged as [`REDACTED`]).
//!
//! # Secret query parameters
//!
//! In the first line of each message (the request line; a status line has no query),
//! the query is the part of the request target after its first `?`, up to the next
//! space or `#`; its parameters are separated by `&` (not `;`), and a parameter's value
//! is what follows its first `=`. A parameter is secret ([`is_secret_param`]) when its
//! name, `%XX` escapes decoded and compared without regard to ASCII case,
//!
//! * is one of [`SECRET_PARAMS`] (`key`, `code`, `sig`, `auth`, `pass`, `pwd`), or
//! * contains one of [`SECRET_PARAM_PARTS`] (`token`, `secret`, `password`, `passwd`,
//!   `apikey`, `api_key`, `api-key`, `signature`, `credential`, `session`:
//!   `access_token`, `client_secret`, `X-Amz-Signature`, …), or
//! * is longer than [`MAX_CHECKED_NAME`] bytes once decoded.
//!
//! A secret parameter's value, when not empty, becomes [`REDACTED`]; a parameter with
//! no `=` has no value to hide. The request line is redacted as it streams by, so a
//! request line longer than [`MAX_LOG_LINE`] keeps its secrets hidden across pieces.
//!
//! # Secrets in bodies
//!
//! The requests and responses of an authorization carry their secrets in bodies:
//!
//! * A message whose head says `Content-Type: application/x-www-form-urlencoded` (a
//!   token, revocation or registration request) has a form body: on each of its lines,
//!   the values of the secret parameters ([`is_secret_param`]: `code`, `code_verifier`,
//!   `client_secret`, `refresh_token`, `client_assertion`, `assertion`,
//!   `subject_token`, …) are replaced by [`REDACTED`], as in a query.
//! * Any other body is read as JSON, leniently and line by line: the string value of a
//!   member named one of [`SECRET_JSON_KEYS`] (compared without regard to ASCII case:
//!   `access_token`, `refresh_token`, `id_token`, `client_secret`, `code_verifier`,
//!   `assertion`, …) becomes `"[redacted]"`, in a token or registration response, and in
//!   an MCP message or SSE event alike. A number, `true` or an object there is left
//!   alone. `code` is not among the JSON names: no OAuth exchange puts the
//!   authorization code in JSON, while many tools take an argument of that name.
//! * An event-stream line `data: URL` whose value is a URL or an absolute path with a
//!   query (the `endpoint` event of the 2024-11-05 HTTP+SSE transport, whose
//!   `sessionId` is the session's only credential) has its secret query values replaced
//!   by [`REDACTED`], as in a request line.
//!
//! All of it takes time linear in the bytes logged.

use std::sync::Arc;

use crate::options::Direction;

/// What a wire log of either [flavour](crate::Flavour) is: called with every line and
/// its direction.
pub trait Sink: FnMut(Direction, &[u8]) {}

impl<T: ?Sized + FnMut(Direction, &[u8])> Sink for T {}

/// Longest line passed to the wire log whole; longer lines are passed in pieces.
pub const MAX_LOG_LINE: usize = 64 * 1024;

/// What stands in for a secret: in the wire log, and in `Debug` output of options.
pub const REDACTED: &str = "[redacted]";

mod http;
mod lines;
mod secrets;

pub use http::HttpLog;
pub(crate) use http::{is_chunked_transfer_encoding, is_form_content_type};
use lines::Lines;
pub use secrets::{
    CHALLENGE_HEADERS, MAX_CHECKED_NAME, SECRET_HEADER_PARTS, SECRET_HEADERS, SECRET_JSON_KEYS,
    SECRET_PARAM_PARTS, SECRET_PARAMS, is_secret_header, is_secret_json_key, is_secret_param,
    redact_header, redact_request_line, redacted,
};
pub(crate) use secrets::{JsonSecrets, Query};

/// The wire log of one stream of lines: a stdio server's stdout or stdin.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use mcp_io::wire_log::LineLog;
/// use mcp_io::{Direction, WireLog};
///
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let sink = seen.clone();
/// let mut log: Option<WireLog> = Some(Box::new(move |_, line| {
///     sink.lock().unwrap().push(String::from_utf8_lossy(line).into_owned());
/// }));
/// let mut lines = LineLog::new();
/// lines.feed(&mut log, Direction::Received, b"{\"a\":1}\n{\"b\"");
/// lines.feed(&mut log, Direction::Received, b":2}\r\n");
/// assert_eq!(*seen.lock().unwrap(), ["{\"a\":1}", "{\"b\":2}"]);
/// ```
#[derive(Debug, Default)]
pub struct LineLog {
    lines: Lines,
}

impl LineLog {
    /// Nothing logged yet.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Logs every line `data` completes, keeping an unfinished one for the next call.
    /// Nothing is kept while there is no log.
    pub fn feed<L: ?Sized + Sink>(
        &mut self,
        log: &mut Option<Box<L>>,
        dir: Direction,
        data: &[u8],
    ) {
        match log {
            Some(log) => self.lines.feed(data, &mut |p| log(dir, p.bytes)),
            None => self.lines.clear(),
        }
    }

    /// Logs what is left of an unfinished line (the stream ended) and starts afresh.
    pub fn finish<L: ?Sized + Sink>(&mut self, log: &mut Option<Box<L>>, dir: Direction) {
        match log {
            Some(log) => self.lines.finish(&mut |p| log(dir, p.bytes)),
            None => self.lines.clear(),
        }
    }

    /// Forgets an unfinished line without logging it.
    pub fn clear(&mut self) {
        self.lines.clear();
    }

    /// Logs `data`, a whole message or batch of messages, line by line.
    pub fn whole<L: ?Sized + Sink>(log: &mut Option<Box<L>>, dir: Direction, data: &[u8]) {
        let mut lines = LineLog::new();
        lines.feed(log, dir, data);
        lines.finish(log, dir);
    }
}

/// The wire log of one byte channel, as both adapters keep it: an HTTP connection
/// (requests logged whole as they are written, responses as they arrive, through
/// [`HttpLog`]) or a stdio server's pipes (lines both ways, through [`LineLog`]).
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use mcp_io::wire_log::ChannelLog;
/// use mcp_io::{Direction, WireLog};
///
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let sink = seen.clone();
/// let mut log: Option<WireLog> = Some(Box::new(move |dir, line| {
///     sink.lock().unwrap().push((dir, String::from_utf8_lossy(line).into_owned()));
/// }));
/// let mut conn = ChannelLog::http();
/// conn.sent(&mut log, b"POST /mcp HTTP/1.1\r\n\r\n");
/// conn.received(&mut log, b"HTTP/1.1 202 Accepted\r\n\r\n");
/// conn.finish(&mut log);
/// assert_eq!(seen.lock().unwrap().len(), 4);
/// assert_eq!(seen.lock().unwrap()[2], (Direction::Received, "HTTP/1.1 202 Accepted".into()));
/// ```
#[derive(Debug)]
pub enum ChannelLog {
    /// An HTTP connection; what it has received of the current response.
    Http(HttpLog),
    /// A stdio server's pipes; what its stdout has sent of the current line.
    Lines(LineLog),
}

impl ChannelLog {
    /// The log of an HTTP connection, hiding the secret headers of the built-in rules.
    #[must_use]
    pub fn http() -> Self {
        ChannelLog::Http(HttpLog::new())
    }

    /// The log of an HTTP connection, hiding the headers named in `headers` (compared
    /// without regard to ASCII case) besides those of the built-in rules, both ways.
    #[must_use]
    pub fn http_redacting(headers: impl Into<Arc<[String]>>) -> Self {
        ChannelLog::Http(HttpLog::redacting(headers))
    }

    /// The log of a stdio server's pipes.
    #[must_use]
    pub fn lines() -> Self {
        ChannelLog::Lines(LineLog::new())
    }

    /// Logs `bytes` written on the channel: stdio lines, or an HTTP request, which is
    /// written only once the response before it on the connection is over (its log ends
    /// here: the next bytes received start a new message).
    pub fn sent<L: ?Sized + Sink>(&mut self, log: &mut Option<Box<L>>, bytes: &[u8]) {
        match self {
            ChannelLog::Http(received) => {
                received.finish(log, Direction::Received);
                // Without a log there is nothing to cut into lines.
                if log.is_some() {
                    received.log_request(log, bytes);
                }
            }
            ChannelLog::Lines(_) if log.is_some() => LineLog::whole(log, Direction::Sent, bytes),
            ChannelLog::Lines(_) => {}
        }
    }

    /// Logs `bytes` read from the channel.
    pub fn received<L: ?Sized + Sink>(&mut self, log: &mut Option<Box<L>>, bytes: &[u8]) {
        match self {
            ChannelLog::Http(received) => received.feed(log, Direction::Received, bytes),
            ChannelLog::Lines(received) => received.feed(log, Direction::Received, bytes),
        }
    }

    /// What was received is over (a complete response, the end of the channel): logs what
    /// is left of an unfinished line.
    pub fn finish<L: ?Sized + Sink>(&mut self, log: &mut Option<Box<L>>) {
        match self {
            ChannelLog::Http(received) => received.finish(log, Direction::Received),
            ChannelLog::Lines(received) => received.finish(log, Direction::Received),
        }
    }
}
#[cfg(test)]
mod tests;
