//! RESP2, the Redis protocol: commands out, replies in.
//!
//! A command is an array of bulk strings ([`encode_command`]). A reply is parsed by
//! [`parse_reply`] from the bytes read so far: complete, incomplete (read more), or an
//! error. Every reply is untrusted input, so the parser bounds what it accepts
//! ([`ReplyLimits`]): the length of a status or error line, of a bulk string, the number
//! of elements of an array and the nesting of arrays, and the total of elements of one
//! reply. A length header is checked against its bound before anything is allocated for
//! it, so a hostile length costs nothing.
//!
//! A reply that arrives in pieces is found complete by a [`ReplyScanner`], which goes on
//! from where it stopped at each piece, and then parsed once: reading it costs time
//! linear in its size however it is split. A bulk string is sliced, not scanned, so a
//! large one costs one copy.

/// Bounds on one reply.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReplyLimits {
    /// The longest status, error or integer line (without CRLF). Default 64 KiB.
    pub max_line_bytes: usize,
    /// The longest bulk string. Default 16 MiB.
    pub max_bulk_bytes: usize,
    /// The most elements of one array. Default 65 536.
    pub max_array_len: usize,
    /// The most elements (at every level) of one reply. Default 65 536.
    pub max_elements: usize,
    /// The deepest nesting of arrays (a flat array is 1). Default 4.
    pub max_depth: usize,
    /// The most bytes one reply (or one pipeline's replies) may take. Default 64 MiB.
    pub max_reply_bytes: usize,
}

impl Default for ReplyLimits {
    fn default() -> Self {
        ReplyLimits {
            max_line_bytes: 64 * 1024,
            max_bulk_bytes: 16 << 20,
            max_array_len: 65_536,
            max_elements: 65_536,
            max_depth: 4,
            max_reply_bytes: 64 << 20,
        }
    }
}

/// One RESP2 reply.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Reply {
    /// `+OK`: a status line.
    Status(String),
    /// `-ERR …`: an error the server answered with.
    Error(String),
    /// `:42`.
    Integer(i64),
    /// `$…`: a bulk string; `None` for the null bulk string (`$-1`).
    Bulk(Option<Vec<u8>>),
    /// `*…`: an array; `None` for the null array (`*-1`).
    Array(Option<Vec<Reply>>),
}

/// Why a reply could not be parsed. The connection it came from is unusable after.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RespError {
    /// Not RESP2: an unknown type byte, a bad length, a missing CRLF, non-UTF-8 text.
    #[error("malformed reply: {0}")]
    Malformed(&'static str),
    /// A line, bulk string or array beyond its bound.
    #[error("reply too large: {what} of {size} exceeds {limit}")]
    TooLarge {
        /// What was too large.
        what: &'static str,
        /// Its announced size.
        size: u64,
        /// The bound.
        limit: usize,
    },
    /// Arrays nested deeper than [`ReplyLimits::max_depth`].
    #[error("reply nested deeper than {0}")]
    TooDeep(usize),
}

/// Appends `args` as a RESP2 command (an array of bulk strings) to `out`.
pub fn encode_command(out: &mut Vec<u8>, args: &[&[u8]]) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for arg in args {
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
}

/// Parses one reply from the start of `buf`: `Ok(Some((reply, bytes used)))`, or
/// `Ok(None)` when more bytes are needed.
///
/// Each call parses from the start: to read a reply that arrives in pieces, find its end
/// with a [`ReplyScanner`] first and parse it once.
///
/// # Errors
/// [`RespError`] when the bytes are not a reply within `limits` (whatever follows).
pub fn parse_reply(buf: &[u8], limits: &ReplyLimits) -> Result<Option<(Reply, usize)>, RespError> {
    let mut parser = Parser {
        buf,
        at: 0,
        limits,
        elements: 0,
        clean_to: 0,
    };
    match parser.reply(1)? {
        Some(reply) => Ok(Some((reply, parser.at))),
        None => Ok(None),
    }
}

/// Finds where a reply that arrives in pieces ends, looking at each byte once: every
/// call goes on from where the last one stopped, so reading a reply costs time linear in
/// its size however it is split. It checks what [`parse_reply`] checks (the same
/// [`ReplyLimits`], the same errors) without copying anything; once it has found the
/// end, [`parse_reply`] on the bytes up to it returns the reply.
///
/// ```
/// use mcp_redis::resp::{ReplyLimits, ReplyScanner, parse_reply};
///
/// let reply = b"*2\r\n$3\r\nabc\r\n:7\r\n";
/// let limits = ReplyLimits::default();
/// let mut scanner = ReplyScanner::new();
/// for cut in 1..reply.len() {
///     assert_eq!(scanner.scan(&reply[..cut], &limits), Ok(None));
/// }
/// assert_eq!(scanner.scan(reply, &limits), Ok(Some(reply.len())));
/// assert!(parse_reply(reply, &limits).unwrap().is_some());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReplyScanner {
    /// Where the first value not yet complete starts.
    at: usize,
    /// The elements still to come of each array open around it, outermost first.
    open: Vec<usize>,
    /// Elements announced so far, as [`ReplyLimits::max_elements`] counts them.
    elements: usize,
    /// The bytes of the line at `at` before this offset hold no CR or LF.
    clean_to: usize,
}

impl ReplyScanner {
    /// A scanner at the start of a reply.
    #[must_use]
    pub fn new() -> ReplyScanner {
        ReplyScanner::default()
    }

    /// Scans `buf`, which begins with every byte given to the calls before (more may
    /// have arrived since): `Ok(Some(end))` when the reply is complete in `buf[..end]`,
    /// `Ok(None)` when more bytes are needed. Start a new scanner for the next reply.
    ///
    /// # Errors
    /// [`RespError`] when the bytes are not a reply within `limits`, as [`parse_reply`].
    pub fn scan(&mut self, buf: &[u8], limits: &ReplyLimits) -> Result<Option<usize>, RespError> {
        loop {
            let mut parser = Parser {
                buf,
                at: self.at,
                limits,
                elements: self.elements,
                clean_to: self.clean_to,
            };
            let Some(head) = parser.head(self.open.len() + 1)? else {
                self.clean_to = parser.clean_to;
                return Ok(None);
            };
            self.at = parser.at;
            self.elements = parser.elements;
            self.clean_to = 0;
            if let Head::Array(len @ 1..) = head {
                self.open.push(len);
                continue;
            }
            // A value complete: so are the arrays it ends.
            loop {
                let Some(left) = self.open.last_mut() else {
                    return Ok(Some(self.at));
                };
                *left -= 1;
                if *left > 0 {
                    break;
                }
                self.open.pop();
            }
        }
    }
}

struct Parser<'a> {
    buf: &'a [u8],
    at: usize,
    limits: &'a ReplyLimits,
    elements: usize,
    /// The bytes of the current line before this offset are known to hold no CR or LF.
    clean_to: usize,
}

/// What a value's first line says.
enum Head {
    /// A whole value: status, error, integer, null bulk string or null array.
    Value(Reply),
    /// A bulk string, at these bytes of the buffer.
    Bulk(std::ops::Range<usize>),
    /// An array of this many elements, which follow.
    Array(usize),
}

impl Parser<'_> {
    /// The next line without its CRLF, or `None` when it is not all there yet.
    fn line(&mut self) -> Result<Option<&[u8]>, RespError> {
        let rest = &self.buf[self.at..];
        let window = &rest[..rest.len().min(self.limits.max_line_bytes + 2)];
        let from = self.clean_to.saturating_sub(self.at).min(window.len());
        let Some(end) = window[from..]
            .iter()
            .position(|b| matches!(b, b'\r' | b'\n'))
            .map(|i| from + i)
        else {
            if rest.len() > self.limits.max_line_bytes + 1 {
                return Err(RespError::TooLarge {
                    what: "line",
                    size: rest.len() as u64,
                    limit: self.limits.max_line_bytes,
                });
            }
            self.clean_to = self.at + window.len();
            return Ok(None);
        };
        if rest[end] == b'\n' {
            return Err(RespError::Malformed("LF inside a line"));
        }
        match rest.get(end + 1) {
            None => return Ok(None),
            Some(b'\n') => {}
            Some(_) => return Err(RespError::Malformed("CR without LF")),
        }
        self.at += end + 2;
        Ok(Some(&rest[..end]))
    }
    /// A length or integer line: optional `-`, then 1 to 19 digits.
    fn integer(line: &[u8]) -> Result<i64, RespError> {
        let (negative, digits) = match line.split_first() {
            Some((b'-', d)) => (true, d),
            _ => (false, line),
        };
        if digits.is_empty() || digits.len() > 19 || !digits.iter().all(u8::is_ascii_digit) {
            return Err(RespError::Malformed("bad integer"));
        }
        let text = std::str::from_utf8(digits).map_err(|_| RespError::Malformed("bad integer"))?;
        let n: i64 = text
            .parse()
            .map_err(|_| RespError::Malformed("bad integer"))?;
        Ok(if negative { -n } else { n })
    }

    /// The first line of the value at `at` (and a bulk string's bytes), checked against
    /// the limits; `None` when not all there yet.
    fn head(&mut self, depth: usize) -> Result<Option<Head>, RespError> {
        let Some(&kind) = self.buf.get(self.at) else {
            return Ok(None);
        };
        self.at += 1;
        let Some(line) = self.line()? else {
            return Ok(None);
        };
        match kind {
            b'+' | b'-' => {
                let text = std::str::from_utf8(line)
                    .map_err(|_| RespError::Malformed("status line is not UTF-8"))?
                    .to_owned();
                Ok(Some(Head::Value(if kind == b'+' {
                    Reply::Status(text)
                } else {
                    Reply::Error(text)
                })))
            }
            b':' => Ok(Some(Head::Value(Reply::Integer(Self::integer(line)?)))),
            b'$' => {
                let len = Self::integer(line)?;
                if len == -1 {
                    return Ok(Some(Head::Value(Reply::Bulk(None))));
                }
                let len = usize::try_from(len).map_err(|_| RespError::Malformed("bulk length"))?;
                if len > self.limits.max_bulk_bytes {
                    return Err(RespError::TooLarge {
                        what: "bulk string",
                        size: len as u64,
                        limit: self.limits.max_bulk_bytes,
                    });
                }
                let rest = &self.buf[self.at..];
                if rest.len() < len + 2 {
                    return Ok(None);
                }
                if &rest[len..len + 2] != b"\r\n" {
                    return Err(RespError::Malformed("bulk string without CRLF"));
                }
                let bytes = self.at..self.at + len;
                self.at += len + 2;
                Ok(Some(Head::Bulk(bytes)))
            }
            b'*' => {
                let len = Self::integer(line)?;
                if len == -1 {
                    return Ok(Some(Head::Value(Reply::Array(None))));
                }
                let len = usize::try_from(len).map_err(|_| RespError::Malformed("array length"))?;
                if len > self.limits.max_array_len {
                    return Err(RespError::TooLarge {
                        what: "array",
                        size: len as u64,
                        limit: self.limits.max_array_len,
                    });
                }
                if depth > self.limits.max_depth {
                    return Err(RespError::TooDeep(self.limits.max_depth));
                }
                self.elements = self.elements.saturating_add(len);
                if self.elements > self.limits.max_elements {
                    return Err(RespError::TooLarge {
                        what: "reply elements",
                        size: self.elements as u64,
                        limit: self.limits.max_elements,
                    });
                }
                Ok(Some(Head::Array(len)))
            }
            _ => Err(RespError::Malformed("unknown reply type")),
        }
    }

    fn reply(&mut self, depth: usize) -> Result<Option<Reply>, RespError> {
        self.clean_to = 0;
        let Some(head) = self.head(depth)? else {
            return Ok(None);
        };
        match head {
            Head::Value(reply) => Ok(Some(reply)),
            Head::Bulk(bytes) => Ok(Some(Reply::Bulk(Some(self.buf[bytes].to_vec())))),
            Head::Array(len) => {
                // Never more than what the buffer could hold: one element is 3 bytes.
                let mut items = Vec::with_capacity(len.min(self.buf.len() / 3 + 1));
                for _ in 0..len {
                    match self.reply(depth + 1)? {
                        Some(item) => items.push(item),
                        None => return Ok(None),
                    }
                }
                Ok(Some(Reply::Array(Some(items))))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(bytes: &[u8]) -> Result<Option<(Reply, usize)>, RespError> {
        parse_reply(bytes, &ReplyLimits::default())
    }

    fn bulk(b: &[u8]) -> Reply {
        Reply::Bulk(Some(b.to_vec()))
    }

    #[test]
    fn commands_are_arrays_of_bulk_strings() {
        let mut out = Vec::new();
        encode_command(&mut out, &[b"SET", b"k", b"a\r\nb"]);
        assert_eq!(out, b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$4\r\na\r\nb\r\n");
    }

    #[test]
    fn every_reply_type_parses_whole_and_not_before() {
        let cases: Vec<(&[u8], Reply)> = vec![
            (b"+OK\r\n", Reply::Status("OK".into())),
            (b"-ERR no\r\n", Reply::Error("ERR no".into())),
            (b":-42\r\n", Reply::Integer(-42)),
            (b"$3\r\na\rb\r\n", bulk(b"a\rb")),
            (b"$0\r\n\r\n", bulk(b"")),
            (b"$-1\r\n", Reply::Bulk(None)),
            (b"*-1\r\n", Reply::Array(None)),
            (
                b"*2\r\n$1\r\nx\r\n*1\r\n:1\r\n",
                Reply::Array(Some(vec![
                    bulk(b"x"),
                    Reply::Array(Some(vec![Reply::Integer(1)])),
                ])),
            ),
        ];
        for (bytes, want) in cases {
            for cut in 0..bytes.len() {
                assert_eq!(parse(&bytes[..cut]), Ok(None), "{bytes:?} cut at {cut}");
            }
            let mut more = bytes.to_vec();
            more.extend_from_slice(b"+next\r\n");
            assert_eq!(parse(&more), Ok(Some((want, bytes.len()))), "{bytes:?}");
        }
    }

    #[test]
    fn oversized_lengths_are_refused_before_any_allocation() {
        let huge = format!("${}\r\n", u64::MAX >> 1);
        assert!(matches!(
            parse(huge.as_bytes()),
            Err(RespError::TooLarge {
                what: "bulk string",
                ..
            })
        ));
        let big = format!("${}\r\n", (16 << 20) + 1);
        assert!(matches!(
            parse(big.as_bytes()),
            Err(RespError::TooLarge { .. })
        ));
        let wide = format!("*{}\r\n", 1u64 << 40);
        assert!(matches!(
            parse(wide.as_bytes()),
            Err(RespError::TooLarge { what: "array", .. })
        ));
        // Many arrays each within bounds, too many elements in all.
        let limits = ReplyLimits {
            max_elements: 10,
            ..ReplyLimits::default()
        };
        let nested = b"*2\r\n*6\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n*6\r\n";
        assert!(matches!(
            parse_reply(nested, &limits),
            Err(RespError::TooLarge {
                what: "reply elements",
                ..
            })
        ));
        // A line that never ends.
        let endless = vec![b'+'; 64 * 1024 + 8];
        assert!(matches!(
            parse(&endless),
            Err(RespError::TooLarge { what: "line", .. })
        ));
    }

    #[test]
    fn deep_arrays_are_refused() {
        let deep = b"*1\r\n".repeat(5);
        assert_eq!(parse(&deep), Err(RespError::TooDeep(4)));
        let mut ok = b"*1\r\n".repeat(4);
        ok.extend_from_slice(b":7\r\n");
        assert!(parse(&ok).unwrap().is_some());
        // A million levels: refused at the fifth, no stack overflow.
        assert_eq!(
            parse(&b"*1\r\n".repeat(1_000_000)),
            Err(RespError::TooDeep(4))
        );
    }

    #[test]
    fn mutated_replies_never_panic_and_never_exceed_the_buffer() {
        let seeds: &[&[u8]] = &[
            b"*3\r\n$3\r\nabc\r\n:12\r\n*2\r\n+OK\r\n$-1\r\n",
            b"$5\r\nhello\r\n",
            b"-ERR x\r\n",
        ];
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let limits = ReplyLimits {
            max_bulk_bytes: 64,
            max_array_len: 8,
            ..ReplyLimits::default()
        };
        for round in 0..20_000 {
            let mut bytes = seeds[round % seeds.len()].to_vec();
            for _ in 0..(next() % 4 + 1) {
                let at = usize::try_from(next() % bytes.len() as u64).unwrap();
                let alphabet = b"*$:+-\r\n0123456789-x";
                let byte = alphabet[usize::try_from(next() % alphabet.len() as u64).unwrap()];
                match next() % 3 {
                    0 => bytes[at] = byte,
                    1 => bytes.insert(at, byte),
                    _ => {
                        bytes.remove(at);
                    }
                }
                if bytes.is_empty() {
                    bytes.push(byte);
                }
            }
            let parsed = parse_reply(&bytes, &limits);
            if let Ok(Some((_, used))) = parsed {
                assert!(used <= bytes.len());
            }
            // The scanner, given the bytes at once or one at a time, finds what the
            // parser finds: the same end, the same need for more, the same error.
            let want = parsed.map(|p| p.map(|(_, used)| used));
            assert_eq!(ReplyScanner::new().scan(&bytes, &limits), want, "{bytes:?}");
            let mut scanner = ReplyScanner::new();
            let mut got = Ok(None);
            for cut in 1..=bytes.len() {
                got = scanner.scan(&bytes[..cut], &limits);
                if !matches!(got, Ok(None)) {
                    break;
                }
            }
            assert_eq!(got, want, "{bytes:?} byte by byte");
        }
    }

    #[test]
    fn a_reply_arriving_byte_by_byte_is_found_complete_at_its_last_byte() {
        // A long line, a long bulk string and a nested array, given one byte more at
        // each call: each call goes on from where the last one stopped.
        let limits = ReplyLimits::default();
        let mut reply = b"*3\r\n".to_vec();
        reply.extend_from_slice(&[b'+'; 60_000]);
        reply.extend_from_slice(b"\r\n$40000\r\n");
        reply.extend_from_slice(&[b'x'; 40_000]);
        reply.extend_from_slice(b"\r\n*2\r\n:1\r\n:2\r\n");
        let mut scanner = ReplyScanner::new();
        for cut in 1..reply.len() {
            assert_eq!(
                scanner.scan(&reply[..cut], &limits),
                Ok(None),
                "cut at {cut}"
            );
        }
        assert_eq!(scanner.scan(&reply, &limits), Ok(Some(reply.len())));
        let (parsed, used) = parse_reply(&reply, &limits).unwrap().unwrap();
        assert_eq!(used, reply.len());
        let Reply::Array(Some(items)) = parsed else {
            panic!()
        };
        assert_eq!(items.len(), 3);
    }

    #[test]
    fn garbage_is_malformed() {
        let bad: &[&[u8]] = &[
            b"?\r\n",
            b"GARBAGE\r\n",
            b":12a\r\n",
            b":\r\n",
            b":99999999999999999999\r\n",
            b"$-2\r\n",
            b"*-5\r\n",
            b"$3\r\nabcde\r\n",
            b"+a\rb\r\n",
            b"+\xff\r\n",
            b"$ 3\r\nabc\r\n",
            b"+a\nb\r\n",
        ];
        for b in bad {
            assert!(
                matches!(parse(b), Err(RespError::Malformed(_))),
                "{:?}: {:?}",
                String::from_utf8_lossy(b),
                parse(b)
            );
        }
    }
}
