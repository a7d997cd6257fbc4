//! [`UnreadableLine`]: the first line a stdio server wrote to its stdout that is not a
//! JSON-RPC message, kept (clipped and escaped) to explain a connection that failed.
//!
//! The most common mistake of a stdio server is to print its own log lines
//! (`Server v1.2 starting...`) to stdout, where the client expects only JSON-RPC messages.
//! Each such line is a [`PeerError`] event, and the connection then usually times out or
//! ends with nothing else said; the line itself says what went wrong.

use std::fmt;

use super::PeerError;
use crate::jsonrpc::DecodeError;

/// The most bytes of a line quoted in an [`UnreadableLine`]: a longer line is cut at a
/// character boundary and its quote ends with `…`.
pub const MAX_QUOTED_LINE_BYTES: usize = 120;

/// What is wrong with an [`UnreadableLine`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum LineProblem {
    /// Not UTF-8 text.
    NotUtf8,
    /// Text that is not JSON: most often a log line the server printed to stdout
    /// instead of stderr.
    NotJson,
    /// JSON, but not a JSON-RPC message (why, as the decoder says).
    NotJsonRpc(DecodeError),
    /// Over a limit: longer than `Limits::max_message_bytes`
    /// ([`PeerError::Oversized`]), nested too deep or too large once parsed
    /// ([`PeerError::Malformed`]).
    OverLimit(PeerError),
}

/// The first line a stdio server wrote to its stdout that could not be used as a
/// JSON-RPC message, of one connection: what is wrong with it and its start, quoted.
///
/// Kept by the machine ([`Client::unreadable_line`](super::Client::unreadable_line)),
/// one line and at most [`MAX_QUOTED_LINE_BYTES`] of it, so that a connection that fails
/// afterwards can say why. Its text is the server's: every control character (an escape
/// sequence's ESC among them), every bidirectional formatting character and every byte
/// that is not UTF-8 is written as an escape (`\u{1b}`, `\u{202e}`, `\xff`), so the
/// quote is safe to show on a terminal.
///
/// ```
/// use mcp_proto::client::{LineProblem, UnreadableLine};
///
/// let line = UnreadableLine::of(b"Server v1.2 \x1b[1mstarting\x1b[0m", None);
/// assert_eq!(line.problem, LineProblem::NotJson);
/// assert_eq!(line.start, r"Server v1.2 \u{1b}[1mstarting\u{1b}[0m");
/// assert!(line.to_string().contains("is not JSON"));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct UnreadableLine {
    /// What is wrong with it.
    pub problem: LineProblem,
    /// Its first bytes (at most [`MAX_QUOTED_LINE_BYTES`]), escaped as the type says;
    /// ends with `…` when the line was longer.
    pub start: String,
}

impl UnreadableLine {
    /// The line `bytes` (or its first bytes), which could not be used for `error` (what
    /// the machine reported; `None`: a line that did not decode, classified here).
    #[must_use]
    pub fn of(bytes: &[u8], error: Option<&PeerError>) -> Self {
        let problem = match error {
            Some(
                e @ (PeerError::Oversized { .. }
                | PeerError::Malformed {
                    error: DecodeError::TooDeep { .. } | DecodeError::TooLargeOnceParsed { .. },
                }),
            ) => LineProblem::OverLimit(e.clone()),
            _ if std::str::from_utf8(bytes).is_err() => LineProblem::NotUtf8,
            Some(PeerError::Malformed {
                error:
                    e @ (DecodeError::NotAnObject
                    | DecodeError::Member(_)
                    | DecodeError::Version
                    | DecodeError::Id
                    | DecodeError::ResultAndError
                    | DecodeError::Shape
                    | DecodeError::ErrorObject
                    | DecodeError::Params),
            }) => LineProblem::NotJsonRpc(e.clone()),
            // Not JSON, or a reason not known here.
            _ => LineProblem::NotJson,
        };
        UnreadableLine {
            problem,
            start: quote(bytes),
        }
    }

    /// Bytes it holds on the heap.
    pub(crate) fn retained_bytes(&self) -> usize {
        self.start.len() + std::mem::size_of::<Self>()
    }
}

impl fmt::Display for UnreadableLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let start = &self.start;
        match &self.problem {
            LineProblem::NotUtf8 => {
                write!(
                    f,
                    "the server wrote a line to stdout that is not UTF-8: \"{start}\""
                )
            }
            LineProblem::NotJson => write!(
                f,
                "the server wrote a line to stdout that is not JSON (stdout is for JSON-RPC \
                 messages only; a server logs to stderr): \"{start}\""
            ),
            LineProblem::NotJsonRpc(e) => write!(
                f,
                "the server wrote a line of JSON to stdout that is not a JSON-RPC message \
                 ({e}): \"{start}\""
            ),
            LineProblem::OverLimit(e) => {
                write!(
                    f,
                    "the server wrote a line to stdout that was not read ({e}): \"{start}\""
                )
            }
        }
    }
}

/// The first [`MAX_QUOTED_LINE_BYTES`] of `bytes`, with what a terminal could act on
/// (and what is not UTF-8) escaped, and `…` when cut.
fn quote(bytes: &[u8]) -> String {
    let mut out = String::new();
    let mut taken = 0;
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if taken + c.len_utf8() > MAX_QUOTED_LINE_BYTES {
                out.push('…');
                return out;
            }
            taken += c.len_utf8();
            if c.is_control() || is_invisible_format(c) {
                out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
            } else {
                out.push(c);
            }
        }
        for b in chunk.invalid() {
            if taken + 1 > MAX_QUOTED_LINE_BYTES {
                out.push('…');
                return out;
            }
            taken += 1;
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

/// Formatting characters that reorder, hide or carry text unseen: the bidirectional
/// marks, embeddings, overrides and isolates, zero-width characters, the line and
/// paragraph separators, the byte order mark, the soft hyphen and the Mongolian vowel
/// separator, the deprecated format controls, the interlinear annotation characters and
/// the tag characters (invisible text an agent may still read).
fn is_invisible_format(c: char) -> bool {
    matches!(
        c,
        '\u{00ad}'
            | '\u{061c}'
            | '\u{180e}'
            | '\u{200b}'..='\u{200f}'
            | '\u{2028}'..='\u{202e}'
            | '\u{2060}'..='\u{206f}'
            | '\u{feff}'
            | '\u{fff9}'..='\u{fffb}'
            | '\u{e0000}'..='\u{e007f}'
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_line_is_cut_at_a_character_and_marked() {
        let mut line = "é".repeat(100).into_bytes();
        line.extend_from_slice(b"tail");
        let quoted = UnreadableLine::of(&line, None);
        assert_eq!(quoted.start, format!("{}…", "é".repeat(60)));
        let short = UnreadableLine::of(&[b'a'; MAX_QUOTED_LINE_BYTES], None);
        assert_eq!(short.start, "a".repeat(MAX_QUOTED_LINE_BYTES), "not cut");
    }

    #[test]
    fn what_a_terminal_acts_on_is_escaped() {
        let line = "a\u{1b}]0;title\u{7}b\u{9b}c\u{202e}d\u{200b}e\tf\r".as_bytes();
        let quoted = UnreadableLine::of(line, None);
        assert_eq!(
            quoted.start,
            r"a\u{1b}]0;title\u{7}b\u{9b}c\u{202e}d\u{200b}e\u{9}f\u{d}"
        );
        assert!(!quoted.to_string().chars().any(char::is_control));
        // Invisible text (tag characters spelling "hi") and other hidden formatting.
        let hidden = UnreadableLine::of("x\u{e0068}\u{e0069}\u{ad}\u{206a}y".as_bytes(), None);
        assert_eq!(hidden.start, r"x\u{e0068}\u{e0069}\u{ad}\u{206a}y");
        let raw = UnreadableLine::of(b"ok \xff\xfe\x1b", None);
        assert_eq!(
            (raw.problem, raw.start.as_str()),
            (LineProblem::NotUtf8, r"ok \xff\xfe\u{1b}")
        );
    }
}
