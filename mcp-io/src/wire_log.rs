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
//! * Over HTTP ([`HttpLog`]), the head of every request and response is logged with the
//!   values of [`SECRET_HEADERS`] replaced by [`REDACTED`] (the header name kept as
//!   written), continuation lines of such a header included; bodies are logged as they
//!   are.

use crate::options::Direction;

/// What a wire log of either [flavour](crate::Flavour) is: called with every line and
/// its direction.
pub trait Sink: FnMut(Direction, &[u8]) {}

impl<T: ?Sized + FnMut(Direction, &[u8])> Sink for T {}

/// Longest line passed to the wire log whole; longer lines are passed in pieces.
pub const MAX_LOG_LINE: usize = 64 * 1024;

/// What stands in for a secret: in the wire log, and in `Debug` output of options.
pub const REDACTED: &str = "[redacted]";

/// Header names (lowercase) whose values never reach the wire log, in either direction.
pub const SECRET_HEADERS: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "cookie",
    "set-cookie",
];

/// [`REDACTED`] when a secret is set: for `Debug` implementations.
///
/// ```
/// assert_eq!(mcp_io::wire_log::redacted(&Some("Bearer abc")), Some("[redacted]"));
/// assert_eq!(mcp_io::wire_log::redacted::<String>(&None), None);
/// ```
#[must_use]
pub fn redacted<T>(secret: &Option<T>) -> Option<&'static str> {
    secret.as_ref().map(|_| REDACTED)
}

/// The name of a secret header in `line` (a header line, without its line end), and
/// where its value starts, or `None` when the line is not one.
fn secret_header(line: &[u8]) -> Option<usize> {
    let colon = line.iter().position(|&b| b == b':')?;
    let name = line[..colon].trim_ascii();
    SECRET_HEADERS
        .iter()
        .any(|secret| name.eq_ignore_ascii_case(secret.as_bytes()))
        .then_some(colon)
}

/// A header line with its value replaced by [`REDACTED`] when the header is one of
/// [`SECRET_HEADERS`]; other lines unchanged.
///
/// ```
/// use mcp_io::wire_log::redact_header;
///
/// assert_eq!(&*redact_header(b"Authorization: Bearer abc"), b"Authorization: [redacted]");
/// assert_eq!(&*redact_header(b"set-cookie: a=b"), b"set-cookie: [redacted]");
/// assert_eq!(&*redact_header(b"Content-Type: x"), b"Content-Type: x");
/// ```
#[must_use]
pub fn redact_header(line: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    match secret_header(line) {
        Some(colon) => {
            let mut out = line[..=colon].to_vec();
            out.push(b' ');
            out.extend_from_slice(REDACTED.as_bytes());
            out.into()
        }
        None => line.into(),
    }
}

/// Cuts a byte stream into lines of at most [`MAX_LOG_LINE`] bytes.
#[derive(Debug, Default)]
struct Lines {
    /// The line being assembled (never more than `MAX_LOG_LINE` bytes).
    line: Vec<u8>,
    /// Part of the current line was passed on already.
    continued: bool,
}

/// One piece handed on by [`Lines`].
struct Piece<'a> {
    bytes: &'a [u8],
    /// The first piece of its line.
    first: bool,
    /// The last piece of its line (the line end was seen, or the stream ended).
    last: bool,
}

impl Lines {
    fn feed(&mut self, mut data: &[u8], emit: &mut dyn FnMut(Piece<'_>)) {
        while !data.is_empty() {
            let (mut chunk, end) = match data.iter().position(|&b| b == b'\n') {
                Some(i) => {
                    let chunk = &data[..i];
                    data = &data[i + 1..];
                    (chunk, true)
                }
                None => (std::mem::take(&mut data), false),
            };
            if end {
                // The `\r` of a `\r\n`, in this chunk or at the end of the line so far.
                match chunk.strip_suffix(b"\r") {
                    Some(rest) => chunk = rest,
                    None if chunk.is_empty() && self.line.last() == Some(&b'\r') => {
                        self.line.pop();
                    }
                    None => {}
                }
            }
            while !chunk.is_empty() {
                // A full line is passed on only when more of it arrives, so that a
                // line of exactly the maximum is one piece.
                if self.line.len() == MAX_LOG_LINE {
                    self.emit(false, emit);
                }
                let take = chunk.len().min(MAX_LOG_LINE - self.line.len());
                self.line.extend_from_slice(&chunk[..take]);
                chunk = &chunk[take..];
            }
            if end {
                self.emit(true, emit);
            }
        }
    }

    /// Passes on what is left of an unfinished line.
    fn finish(&mut self, emit: &mut dyn FnMut(Piece<'_>)) {
        if !self.line.is_empty() {
            self.emit(true, emit);
        }
        self.clear();
    }

    fn emit(&mut self, last: bool, emit: &mut dyn FnMut(Piece<'_>)) {
        emit(Piece {
            bytes: &self.line,
            first: !self.continued,
            last,
        });
        self.line.clear();
        self.continued = !last;
    }

    fn clear(&mut self) {
        self.line.clear();
        self.continued = false;
    }
}

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

/// The wire log of one HTTP message (a request, or a response as it arrives): lines as
/// [`LineLog`] cuts them, with the values of [`SECRET_HEADERS`] in the head replaced by
/// [`REDACTED`]. [`finish`](Self::finish) ends the message; the next bytes start a new
/// head (a connection's next exchange).
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use mcp_io::wire_log::HttpLog;
/// use mcp_io::{Direction, WireLog};
///
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let sink = seen.clone();
/// let mut log: Option<WireLog> = Some(Box::new(move |_, line| {
///     sink.lock().unwrap().push(String::from_utf8_lossy(line).into_owned());
/// }));
/// HttpLog::whole(
///     &mut log,
///     Direction::Sent,
///     b"POST /mcp HTTP/1.1\r\nAuthorization: Bearer s3cr3t\r\n\r\n{}",
/// );
/// assert_eq!(
///     *seen.lock().unwrap(),
///     ["POST /mcp HTTP/1.1", "Authorization: [redacted]", "", "{}"]
/// );
/// ```
#[derive(Debug, Default)]
pub struct HttpLog {
    lines: Lines,
    /// The empty line after the head was seen.
    in_body: bool,
    /// The current head line (and its continuation lines) belongs to a secret header.
    hiding: bool,
    /// Bytes went by while there was no log and ended mid-line: the rest of that line
    /// is not logged (it may be part of a secret).
    skip_partial: bool,
}

impl HttpLog {
    /// At the start of a message.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Logs every line `data` completes, keeping an unfinished one for the next call.
    ///
    /// Nothing is kept while there is no log. A log that appears in the middle of a
    /// message starts at the next whole line and takes it for a head line (redacting
    /// what looks like a secret header) until the next empty line: no secret slips
    /// through because the start of the message went unseen.
    pub fn feed<L: ?Sized + Sink>(
        &mut self,
        log: &mut Option<Box<L>>,
        dir: Direction,
        data: &[u8],
    ) {
        let Some(log) = log else {
            self.lines.clear();
            if let Some(&last) = data.last() {
                self.skip_partial = last != b'\n';
            }
            self.in_body = false;
            self.hiding = true;
            return;
        };
        let Self {
            lines,
            in_body,
            hiding,
            skip_partial,
        } = self;
        lines.feed(data, &mut |p| {
            if *skip_partial {
                *skip_partial = !p.last;
            } else if let Some(shown) = Self::filter(in_body, hiding, &p) {
                log(dir, &shown);
            }
        });
    }

    /// Logs what is left of an unfinished line and ends the message: the next bytes
    /// start a new head.
    pub fn finish<L: ?Sized + Sink>(&mut self, log: &mut Option<Box<L>>, dir: Direction) {
        if let Some(log) = log {
            let Self {
                lines,
                in_body,
                hiding,
                skip_partial,
            } = self;
            lines.finish(&mut |p| {
                if !*skip_partial && let Some(shown) = Self::filter(in_body, hiding, &p) {
                    log(dir, &shown);
                }
            });
        }
        *self = Self::default();
    }

    /// Logs `data`, one whole message (a request as sent).
    pub fn whole<L: ?Sized + Sink>(log: &mut Option<Box<L>>, dir: Direction, data: &[u8]) {
        let mut message = HttpLog::new();
        message.feed(log, dir, data);
        message.finish(log, dir);
    }

    /// What to log of `piece`, if anything.
    fn filter<'a>(
        in_body: &mut bool,
        hiding: &mut bool,
        piece: &Piece<'a>,
    ) -> Option<std::borrow::Cow<'a, [u8]>> {
        if *in_body {
            return Some(piece.bytes.into());
        }
        if !piece.first {
            // The rest of a head line too long to log whole.
            return (!*hiding).then(|| piece.bytes.into());
        }
        if piece.bytes.is_empty() && piece.last {
            *in_body = true;
            *hiding = false;
            return Some(piece.bytes.into());
        }
        // A line starting with white space continues the previous header (obs-fold).
        let folded = piece
            .bytes
            .first()
            .is_some_and(|b| matches!(b, b' ' | b'\t'));
        if folded && *hiding {
            return None;
        }
        *hiding = secret_header(piece.bytes).is_some();
        Some(redact_header(piece.bytes))
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
    /// The log of an HTTP connection.
    #[must_use]
    pub fn http() -> Self {
        ChannelLog::Http(HttpLog::new())
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
                HttpLog::whole(log, Direction::Sent, bytes);
            }
            ChannelLog::Lines(_) => LineLog::whole(log, Direction::Sent, bytes),
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
mod tests {
    use super::*;
    use crate::WireLog;
    use std::sync::{Arc, Mutex};

    type Seen = Arc<Mutex<Vec<(Direction, Vec<u8>)>>>;

    fn recorder() -> (Option<WireLog>, Seen) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        let log: WireLog =
            Box::new(move |dir, line| sink.lock().unwrap().push((dir, line.to_vec())));
        (Some(log), seen)
    }

    fn texts(seen: &Mutex<Vec<(Direction, Vec<u8>)>>) -> Vec<String> {
        seen.lock()
            .unwrap()
            .iter()
            .map(|(_, l)| String::from_utf8_lossy(l).into_owned())
            .collect()
    }

    #[test]
    fn lines_are_split_across_chunks_and_long_lines_come_in_pieces() {
        let (mut log, seen) = recorder();
        let rx = Direction::Received;
        let mut lines = LineLog::new();
        lines.feed(&mut log, rx, b"{\"a\":1}\n{\"b\"");
        lines.feed(&mut log, rx, b":2}\r\n");
        lines.feed(&mut log, rx, b"\n");
        assert_eq!(texts(&seen), ["{\"a\":1}", "{\"b\":2}", ""]);
        seen.lock().unwrap().clear();

        let long = vec![b'x'; MAX_LOG_LINE * 2 + 5];
        lines.feed(&mut log, rx, &long);
        assert_eq!(seen.lock().unwrap().len(), 2);
        lines.finish(&mut log, rx);
        let seen = seen.lock().unwrap();
        let sizes: Vec<usize> = seen.iter().map(|(_, l)| l.len()).collect();
        assert_eq!(sizes, [MAX_LOG_LINE, MAX_LOG_LINE, 5]);
        assert!(seen.iter().all(|(d, _)| *d == rx));
    }

    #[test]
    fn a_line_of_exactly_the_maximum_is_one_piece() {
        let (mut log, seen) = recorder();
        let mut line = vec![b'y'; MAX_LOG_LINE];
        line.extend_from_slice(b"\r\n");
        LineLog::whole(&mut log, Direction::Sent, &line);
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].1.len(), MAX_LOG_LINE);
    }

    #[test]
    fn no_log_keeps_nothing() {
        let mut log: Option<WireLog> = None;
        let mut lines = LineLog::new();
        lines.feed(&mut log, Direction::Received, b"partial");
        let (mut log, seen) = recorder();
        lines.feed(&mut log, Direction::Received, b" line\n");
        assert_eq!(texts(&seen), [" line"]);
    }

    #[test]
    fn requests_hide_every_secret_header() {
        let (mut log, seen) = recorder();
        HttpLog::whole(
            &mut log,
            Direction::Sent,
            b"POST /mcp HTTP/1.1\r\nHost: x\r\nauthorization: Bearer s3cr3t\r\n\
              Proxy-Authorization : Basic abc\r\nCookie: a=b\r\nContent-Length: 2\r\n\r\n{}",
        );
        assert_eq!(
            texts(&seen),
            [
                "POST /mcp HTTP/1.1",
                "Host: x",
                "authorization: [redacted]",
                "Proxy-Authorization : [redacted]",
                "Cookie: [redacted]",
                "Content-Length: 2",
                "",
                "{}",
            ]
        );
    }

    #[test]
    fn responses_hide_set_cookie_in_the_head_only() {
        let (mut log, seen) = recorder();
        let rx = Direction::Received;
        let mut response = HttpLog::new();
        response.feed(&mut log, rx, b"HTTP/1.1 200 OK\r\nSet-Cookie: id=");
        response.feed(&mut log, rx, b"42\r\n\tmore=1\r\nX: y\r\n\r\n");
        response.feed(&mut log, rx, b"data: {\"set-cookie: no\"}\n\n");
        response.finish(&mut log, rx);
        // The next exchange on the connection starts with a head again.
        response.feed(
            &mut log,
            rx,
            b"HTTP/1.1 202 Accepted\r\nSet-Cookie: b=2\r\n\r\n",
        );
        assert_eq!(
            texts(&seen),
            [
                "HTTP/1.1 200 OK",
                "Set-Cookie: [redacted]",
                "X: y",
                "",
                "data: {\"set-cookie: no\"}",
                "",
                "HTTP/1.1 202 Accepted",
                "Set-Cookie: [redacted]",
                "",
            ]
        );
    }

    #[test]
    fn a_secret_too_long_for_one_line_stays_hidden() {
        let (mut log, seen) = recorder();
        let mut head = b"GET / HTTP/1.1\r\nAuthorization: Bearer ".to_vec();
        head.extend(std::iter::repeat_n(b's', MAX_LOG_LINE * 2));
        head.extend_from_slice(b"\r\nHost: x\r\n\r\n");
        HttpLog::whole(&mut log, Direction::Sent, &head);
        assert_eq!(
            texts(&seen),
            ["GET / HTTP/1.1", "Authorization: [redacted]", "Host: x", ""]
        );
    }

    #[test]
    fn a_log_set_mid_message_still_sees_no_secret() {
        let mut none: Option<WireLog> = None;
        let mut response = HttpLog::new();
        response.feed(&mut none, Direction::Received, b"HTTP/1.1 200 OK\r\nSet-Co");
        let (mut log, seen) = recorder();
        response.feed(&mut log, Direction::Received, b"okie: a=b\r\n\r\n");
        // The piece before the log existed is not logged; the header is still hidden.
        assert!(texts(&seen).iter().all(|l| !l.contains("a=b")));
    }
}
