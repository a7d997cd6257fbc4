//! The wire log of HTTP messages: heads with secret headers and query parameters
//! hidden, bodies (chunked or not, forms, JSON, SSE) with their secrets hidden.

use std::borrow::Cow;
use std::sync::Arc;

use super::lines::{Lines, Piece};
use super::secrets::*;
use super::{MAX_LOG_LINE, REDACTED, Sink};
use crate::options::Direction;

/// The wire log of one HTTP message (a request, or a response as it arrives): lines as
/// [`LineLog`](super::LineLog) cuts them, with the values of secret headers in the head and of secret
/// query parameters in the request line replaced by [`REDACTED`] (see
/// [the rules](crate::wire_log#secret-headers)). [`finish`](Self::finish) ends the message; the
/// next bytes start a new head (a connection's next exchange).
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
///     b"POST /mcp?access_token=s3cr3t HTTP/1.1\r\nAuthorization: Bearer s3cr3t\r\n\r\n{}",
/// );
/// assert_eq!(
///     *seen.lock().unwrap(),
///     ["POST /mcp?access_token=[redacted] HTTP/1.1", "Authorization: [redacted]", "", "{}"]
/// );
/// ```
#[derive(Debug, Default)]
pub struct HttpLog {
    lines: Lines,
    head: Head,
    /// Bytes went by while there was no log and ended mid-line: the rest of that line
    /// is not logged (it may be part of a secret).
    skip_partial: bool,
}

/// Where an [`HttpLog`] is in its message, and what it hides.
#[derive(Debug, Default)]
struct Head {
    /// The empty line after the head was seen.
    in_body: bool,
    /// The current head line (and its continuation lines) belongs to a secret header.
    hiding: bool,
    /// The first line of the message is over (or went by unseen): head lines are
    /// headers.
    past_start: bool,
    /// The first line is the status line of an interim response (1xx other than 101):
    /// another head follows its head, not a body.
    interim: bool,
    /// The secret query parameters of the first line.
    query: Query,
    /// The header names the caller wants hidden too.
    extra: Arc<[String]>,
    /// What hides the secrets of the body (boxed: most messages never need it, and a
    /// connection's log stays small).
    body: Option<Box<Body>>,
}

/// How a body's secrets are hidden.
#[derive(Debug, Default)]
struct Body {
    /// The head says the body is a form (`application/x-www-form-urlencoded`).
    form: bool,
    /// The secret parameters of a form body's current line.
    form_query: Option<Query>,
    /// The secret members of a JSON body.
    json: JsonSecrets,
    /// The secret query parameters of the URL on the current `data:` line (an HTTP+SSE
    /// `endpoint` event).
    url_query: Option<Query>,
    /// The head says `Transfer-Encoding: chunked`: where the body is in its framing.
    chunked: Option<Chunked>,
}

/// Where a chunked body is in its framing. Its chunk-size lines are shown as they are and
/// kept from the rules of the body, whose data is judged as if it came whole: a secret
/// cut by a chunk boundary, or whose name and value a boundary parts, stays hidden.
#[derive(Debug, Default)]
struct Chunked {
    at: ChunkAt,
    /// The data of the body's current line so far, when chunk boundaries cut it (less
    /// than [`MAX_LOG_LINE`] bytes: a longer one is judged and logged in pieces).
    line: Vec<u8>,
    /// Part of the body's current line was judged and logged already.
    continued: bool,
    /// Lines to log before what the current piece shows.
    flushed: Vec<Vec<u8>>,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum ChunkAt {
    /// A chunk-size line; its size once read.
    #[default]
    Size,
    /// A chunk-size line whose size was read.
    SizeRead(u64),
    /// This many bytes of chunk data to come.
    Data(u64),
    /// After a chunk's data, up to the line end that closes it.
    DataEnd,
    /// The trailer section, after the last chunk.
    Trailers,
}

impl HttpLog {
    /// At the start of a message, hiding the secret headers of the built-in rules.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// At the start of a message, hiding the headers named in `headers` (compared
    /// without regard to ASCII case) besides those of the built-in rules.
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
    /// let mut response = HttpLog::redacting(vec!["X-Tenant-Key".to_owned()]);
    /// response.feed(&mut log, Direction::Received, b"HTTP/1.1 200 OK\r\nx-tenant-key: t1\r\n\r\n");
    /// assert_eq!(seen.lock().unwrap()[1], "x-tenant-key: [redacted]");
    /// ```
    #[must_use]
    pub fn redacting(headers: impl Into<Arc<[String]>>) -> Self {
        HttpLog {
            head: Head {
                extra: headers.into(),
                ..Head::default()
            },
            ..Self::default()
        }
    }

    /// Logs every line `data` completes, keeping an unfinished one for the next call.
    ///
    /// Nothing is kept while there is no log. A log that appears in the middle of a
    /// message starts at the next whole line and takes it for a header line (redacting
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
            let head = &mut self.head;
            head.in_body = false;
            head.hiding = true;
            head.past_start = true;
            head.interim = false;
            head.query = Query::default();
            return;
        };
        let Self {
            lines,
            head,
            skip_partial,
        } = self;
        lines.feed(data, &mut |p| {
            if *skip_partial {
                *skip_partial = !p.last;
            } else {
                head.log(&p, &mut |line| log(dir, line));
            }
        });
    }

    /// Logs what is left of an unfinished line and ends the message: the next bytes
    /// start a new head.
    pub fn finish<L: ?Sized + Sink>(&mut self, log: &mut Option<Box<L>>, dir: Direction) {
        if let Some(log) = log {
            let Self {
                lines,
                head,
                skip_partial,
            } = self;
            lines.finish(&mut |p| {
                if !*skip_partial {
                    head.log(&p, &mut |line| log(dir, line));
                }
            });
            // A chunked body cut short: the line it left unended ends here.
            if let Some(body) = head.body.as_deref_mut()
                && let Some(mut chunked) = body.chunked.take()
                && let Some(shown) = body.flush(&mut chunked)
            {
                log(dir, &shown);
            }
        }
        self.reset();
    }

    /// Ready for the next message, as new (the extra secret headers kept), without
    /// giving up what it allocated: a connection's log is reset after every exchange.
    fn reset(&mut self) {
        self.lines.clear();
        self.skip_partial = false;
        self.head.reset();
    }

    /// Logs `data`, one whole message (a request as sent).
    pub fn whole<L: ?Sized + Sink>(log: &mut Option<Box<L>>, dir: Direction, data: &[u8]) {
        HttpLog::new().log_whole(log, dir, data);
    }

    /// Logs `data` as one whole message.
    fn log_whole<L: ?Sized + Sink>(
        mut self,
        log: &mut Option<Box<L>>,
        dir: Direction,
        data: &[u8],
    ) {
        self.feed(log, dir, data);
        self.finish(log, dir);
    }

    /// Logs `data`, a whole request written on the connection this log reads the
    /// responses of, hiding the same extra headers.
    pub(super) fn log_request<L: ?Sized + Sink>(&self, log: &mut Option<Box<L>>, data: &[u8]) {
        HttpLog::redacting(Arc::clone(&self.head.extra)).log_whole(log, Direction::Sent, data);
    }
}

impl Head {
    /// At the start of a message (the extra secret headers kept).
    fn reset(&mut self) {
        // Every field named: one added later must be reset here too.
        let Head {
            in_body,
            hiding,
            past_start,
            interim,
            query,
            extra: _,
            body,
        } = self;
        *in_body = false;
        *hiding = false;
        *past_start = false;
        *interim = false;
        *query = Query::default();
        *body = None;
    }

    /// Logs what `piece` shows: a line of a chunked body that ends before it first,
    /// then the piece as [`Head::filter`] shows it.
    fn log(&mut self, piece: &Piece<'_>, log: &mut dyn FnMut(&[u8])) {
        let shown = self.filter(piece);
        if let Some(chunked) = self.body.as_deref_mut().and_then(|b| b.chunked.as_mut()) {
            for line in chunked.flushed.drain(..) {
                log(&line);
            }
        }
        if let Some(shown) = shown {
            log(&shown);
        }
    }

    /// What to log of `piece`, if anything.
    fn filter<'a>(&mut self, piece: &Piece<'a>) -> Option<Cow<'a, [u8]>> {
        if self.in_body {
            return self.body(piece).map(Cow::Owned);
        }
        if !self.past_start {
            if piece.first && piece.last && piece.bytes.is_empty() {
                // An empty line before the start line (RFC 9112, 2.2).
                return Some(piece.bytes.into());
            }
            if piece.first {
                self.interim = is_interim_status(piece.bytes);
            }
            let shown = self.query.redact(piece.bytes);
            if piece.last {
                self.past_start = true;
                self.query = Query::default();
            }
            return Some(shown.into());
        }
        if !piece.first {
            // The rest of a head line too long to log whole.
            return (!self.hiding).then(|| piece.bytes.into());
        }
        if piece.bytes.is_empty() && piece.last {
            if self.interim {
                // An interim response's head is followed by the next head (the HTTP
                // machine skips it), not by a body.
                self.reset();
            } else {
                self.in_body = true;
                self.hiding = false;
            }
            return Some(piece.bytes.into());
        }
        // A line starting with white space continues the previous header (obs-fold).
        let folded = piece
            .bytes
            .first()
            .is_some_and(|b| matches!(b, b' ' | b'\t'));
        if folded && self.hiding {
            return None;
        }
        match head_line(piece.bytes, piece.last, &self.extra) {
            HeadLine::Secret(colon) => {
                self.hiding = true;
                Some(hide_value(piece.bytes, colon).into())
            }
            HeadLine::Unknown => {
                self.hiding = true;
                Some(REDACTED.as_bytes().into())
            }
            HeadLine::Plain => {
                self.hiding = false;
                if is_form_content_type(piece.bytes) {
                    self.body.get_or_insert_default().form = true;
                }
                if is_chunked_transfer_encoding(piece.bytes) {
                    self.body.get_or_insert_default().chunked = Some(Chunked::default());
                }
                Some(piece.bytes.into())
            }
        }
    }

    /// A piece of the body, its secrets hidden (`None`: nothing to log for it yet).
    fn body(&mut self, piece: &Piece<'_>) -> Option<Vec<u8>> {
        let body = self.body.get_or_insert_default();
        match body.chunked.take() {
            Some(mut chunked) => {
                let shown = body.dechunked(&mut chunked, piece);
                body.chunked = Some(chunked);
                shown
            }
            None => Some(body.data(piece)),
        }
    }
}

impl Body {
    /// A piece of a chunked body. Its framing (chunk-size lines, the line ends that close
    /// chunks) is shown as it is; its data is put back together into the lines of the
    /// body, which are judged and logged whole as they end, as if the body came in one
    /// piece: a line cut by a chunk boundary is logged where it ends, after the size
    /// line that cut it, and [`Chunked::flushed`] takes the lines to log before what
    /// `piece` shows.
    fn dechunked(&mut self, chunked: &mut Chunked, piece: &Piece<'_>) -> Option<Vec<u8>> {
        let bytes = piece.bytes;
        match chunked.at {
            ChunkAt::Size | ChunkAt::SizeRead(_) => {
                if piece.first {
                    chunked.at = match chunk_size(bytes) {
                        Some(size) => ChunkAt::SizeRead(size),
                        // Not a size: the framing is no longer followed, and what comes
                        // is judged line by line as a body.
                        None => ChunkAt::Trailers,
                    };
                }
                if chunked.at == ChunkAt::Trailers {
                    let line = self.flush(chunked);
                    chunked.flushed.extend(line);
                    return Some(self.data(piece));
                }
                if piece.last {
                    chunked.at = match chunked.at {
                        ChunkAt::SizeRead(0) => {
                            // The last chunk: a line the body left unended ends here.
                            let line = self.flush(chunked);
                            chunked.flushed.extend(line);
                            ChunkAt::Trailers
                        }
                        ChunkAt::SizeRead(size) => ChunkAt::Data(size),
                        other => other,
                    };
                }
                Some(bytes.to_vec())
            }
            ChunkAt::Data(left) => {
                let len = bytes.len() as u64;
                let ending = piece.ending as u64;
                let split = usize::try_from(left.min(len)).unwrap_or(bytes.len());
                let (data, rest) = bytes.split_at(split);
                // The line end after the piece is the body's when the data goes on past
                // it; when the data ends with the piece, it is the one closing the chunk.
                let line_ends = piece.last && len < left && len + ending <= left;
                chunked.at = if line_ends {
                    match left - len - ending {
                        0 => ChunkAt::DataEnd,
                        more => ChunkAt::Data(more),
                    }
                } else if len < left && !piece.last {
                    ChunkAt::Data(left - len)
                } else if piece.last {
                    ChunkAt::Size
                } else {
                    ChunkAt::DataEnd
                };
                chunked.line.extend_from_slice(data);
                if chunked.line.len() > MAX_LOG_LINE {
                    // Longer than a log line holds: its first part is judged and logged
                    // now, in a piece of the most a log line holds, as `Lines` does.
                    let line = std::mem::take(&mut chunked.line);
                    let (head, tail) = line.split_at(MAX_LOG_LINE);
                    let shown = self.data(&Piece {
                        bytes: head,
                        first: !chunked.continued,
                        last: false,
                        ending: 0,
                    });
                    chunked.flushed.push(shown);
                    chunked.continued = true;
                    chunked.line = tail.to_vec();
                }
                let mut shown = None;
                if line_ends {
                    let line = std::mem::take(&mut chunked.line);
                    shown = Some(self.data(&Piece {
                        bytes: &line,
                        first: !chunked.continued,
                        last: true,
                        ending: 0,
                    }));
                    chunked.continued = false;
                    chunked.line = line;
                    chunked.line.clear();
                }
                if !rest.is_empty() {
                    // Bytes between a chunk's data and its line end (not HTTP): shown
                    // as they are, on a line of their own.
                    chunked.flushed.extend(shown.take());
                    shown = Some(rest.to_vec());
                }
                shown
            }
            ChunkAt::DataEnd => {
                if piece.last {
                    chunked.at = ChunkAt::Size;
                }
                Some(bytes.to_vec())
            }
            ChunkAt::Trailers => Some(self.data(piece)),
        }
    }

    /// The line of the body a chunk boundary left unended, judged as ending here.
    fn flush(&mut self, chunked: &mut Chunked) -> Option<Vec<u8>> {
        if chunked.line.is_empty() && !chunked.continued {
            return None;
        }
        let line = std::mem::take(&mut chunked.line);
        let shown = self.data(&Piece {
            bytes: &line,
            first: !chunked.continued,
            last: true,
            ending: 0,
        });
        chunked.continued = false;
        Some(shown)
    }

    /// A piece of body data (a whole body, or the data of a chunked one), its secrets
    /// hidden.
    fn data(&mut self, piece: &Piece<'_>) -> Vec<u8> {
        let body = self;
        if piece.first
            && !body.form
            && let Some(start) = url_data_start(piece.bytes)
        {
            let mut query = Query::url();
            let mut shown = piece.bytes[..start].to_vec();
            shown.extend(query.redact(&piece.bytes[start..]));
            body.url_query = (!piece.last).then_some(query);
            return shown;
        }
        if !piece.first
            && let Some(query) = &mut body.url_query
        {
            let shown = query.redact(piece.bytes);
            if piece.last {
                body.url_query = None;
            }
            return shown;
        }
        if !body.form {
            // An event's data may go on over several `data:` lines (joined by a line
            // end, white space to JSON): the prefix is no JSON, and must not make the
            // scan forget a secret member whose value is on the next line.
            let prefix = match piece.bytes.strip_prefix(b"data:") {
                Some(_) if piece.first => b"data:".len(),
                _ => 0,
            };
            let mut shown = piece.bytes[..prefix].to_vec();
            shown.extend(body.json.redact(&piece.bytes[prefix..], piece.last));
            return shown;
        }
        let query = body.form_query.get_or_insert_with(Query::form);
        let shown = query.redact(piece.bytes);
        if piece.last {
            body.form_query = None;
        }
        shown
    }
}

/// The size a chunk-size line declares (hex digits, then extensions), or `None` when it
/// is no such line.
fn chunk_size(line: &[u8]) -> Option<u64> {
    let digits = line.iter().take_while(|b| b.is_ascii_hexdigit()).count();
    let rest = line[digits..].trim_ascii_start();
    if digits == 0 || digits > 16 || !(rest.is_empty() || rest.starts_with(b";")) {
        return None;
    }
    u64::from_str_radix(std::str::from_utf8(&line[..digits]).ok()?, 16).ok()
}

/// Whether a head line is `Transfer-Encoding` ending with `chunked`.
pub(crate) fn is_chunked_transfer_encoding(line: &[u8]) -> bool {
    let Some(colon) = line.iter().position(|&b| b == b':') else {
        return false;
    };
    let name = line[..colon].trim_ascii();
    name.eq_ignore_ascii_case(b"transfer-encoding")
        && line[colon + 1..]
            .rsplit(|&b| b == b',')
            .next()
            .is_some_and(|coding| coding.trim_ascii().eq_ignore_ascii_case(b"chunked"))
}

/// Whether a start line is the status line of an interim response (1xx other than 101,
/// which switches protocols).
fn is_interim_status(line: &[u8]) -> bool {
    let status = line.strip_prefix(b"HTTP/").and_then(|rest| {
        let space = rest.iter().position(|&b| b == b' ')?;
        rest.get(space + 1..space + 4)
    });
    matches!(status, Some([b'1', d1, d2]) if [*d1, *d2] != *b"01")
}

/// Where the URL starts on an event-stream line `data: URL` whose value is a URL or an
/// absolute path (the `endpoint` event of the 2024-11-05 HTTP+SSE transport, which
/// carries the session in its query), not JSON.
fn url_data_start(line: &[u8]) -> Option<usize> {
    let rest = line.strip_prefix(b"data:")?;
    let spaces = rest.iter().take_while(|&&b| b == b' ').count();
    let value = &rest[spaces..];
    let url_like = value.starts_with(b"/")
        || value.starts_with(b"?")
        || value
            .iter()
            .position(|&b| b == b':')
            .is_some_and(|i| i > 0 && value[..i].iter().all(u8::is_ascii_alphabetic));
    (url_like && value.contains(&b'?')).then_some(5 + spaces)
}

/// Whether a head line is `Content-Type: application/x-www-form-urlencoded` (any case,
/// parameters allowed).
pub(crate) fn is_form_content_type(line: &[u8]) -> bool {
    let Some(colon) = line.iter().position(|&b| b == b':') else {
        return false;
    };
    let name = line[..colon].trim_ascii();
    let value = line[colon + 1..].trim_ascii();
    name.eq_ignore_ascii_case(b"content-type")
        && value.split(|&b| b == b';').next().is_some_and(|v| {
            v.trim_ascii()
                .eq_ignore_ascii_case(b"application/x-www-form-urlencoded")
        })
}
