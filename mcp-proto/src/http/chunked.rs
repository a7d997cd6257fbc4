//! The chunked transfer coding (RFC 9112 §7.1), one step at a time.
//!
//! Chunk data is never buffered: [`Chunked::step`] reports how many bytes at the front of
//! the input are data and the reader hands them on. Only the chunk-size line (bounded by
//! `max_chunk_size_line`) and the trailer section (bounded by `max_trailer_bytes`) wait for
//! completion. Extensions are validated and ignored; trailers are parsed (so garbage is
//! refused) and dropped.

use super::error::ResponseError;
use super::head::reason;
use super::limits::HttpLimits;
use super::scan::block_end;

/// Where the decoder is within the chunked body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Chunked {
    /// Expecting a chunk-size line, of which the first `scanned` bytes are known to hold
    /// no line end (so a line that trickles in is searched once, not once per byte).
    Size { scanned: usize },
    /// Inside chunk data; this many bytes remain.
    Data(u64),
    /// Expecting the line end after chunk data.
    DataEnd,
    /// After the last chunk, reading the trailer section (`scanned` as in [`block_end`]).
    Trailers { scanned: usize },
}

/// What one step did with the front of the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Step {
    /// Nothing can be decided before more input arrives.
    NeedMore,
    /// This many bytes of framing were consumed.
    Framing(usize),
    /// A chunk-size line of this many bytes announced a non-empty chunk of `size`.
    Size { consumed: usize, size: u64 },
    /// The first this many bytes are chunk data.
    Data(usize),
    /// The body ended; this many bytes (the trailer section) were consumed.
    End(usize),
}

impl Chunked {
    /// Decodes from the front of `data`, the unconsumed input.
    pub(super) fn step(&mut self, data: &[u8], limits: &HttpLimits) -> Result<Step, ResponseError> {
        match self {
            Chunked::Size { scanned } => {
                let window = &data[..data.len().min(limits.max_chunk_size_line)];
                let from = (*scanned).min(window.len());
                let Some(nl) = memchr::memchr(b'\n', &window[from..]).map(|i| i + from) else {
                    *scanned = window.len();
                    return if data.len() >= limits.max_chunk_size_line {
                        Err(ResponseError::ChunkLineTooLong {
                            limit: limits.max_chunk_size_line,
                        })
                    } else {
                        Ok(Step::NeedMore)
                    };
                };
                let line = &window[..nl];
                let line = line.strip_suffix(b"\r").unwrap_or(line);
                let size = chunk_size(line)?;
                let consumed = nl + 1;
                if size == 0 {
                    *self = Chunked::Trailers { scanned: 0 };
                    Ok(Step::Framing(consumed))
                } else {
                    *self = Chunked::Data(size);
                    Ok(Step::Size { consumed, size })
                }
            }
            Chunked::Data(remaining) => {
                if data.is_empty() {
                    return Ok(Step::NeedMore);
                }
                let n = usize::try_from(*remaining).map_or(data.len(), |r| r.min(data.len()));
                // `n` is at most `remaining`, so this cannot underflow.
                *remaining -= n as u64;
                if *remaining == 0 {
                    *self = Chunked::DataEnd;
                }
                Ok(Step::Data(n))
            }
            Chunked::DataEnd => match data {
                [] | [b'\r'] => Ok(Step::NeedMore),
                [b'\n', ..] => {
                    *self = Chunked::Size { scanned: 0 };
                    Ok(Step::Framing(1))
                }
                [b'\r', b'\n', ..] => {
                    *self = Chunked::Size { scanned: 0 };
                    Ok(Step::Framing(2))
                }
                _ => Err(ResponseError::InvalidChunk {
                    reason: "chunk data not followed by a line end",
                }),
            },
            Chunked::Trailers { scanned } => {
                let window = &data[..data.len().min(limits.max_trailer_bytes)];
                match block_end(window, scanned, true) {
                    Some(end) => {
                        check_trailers(&window[..end], limits.max_headers)?;
                        Ok(Step::End(end))
                    }
                    None if data.len() >= limits.max_trailer_bytes => {
                        Err(ResponseError::TrailersTooLarge {
                            limit: limits.max_trailer_bytes,
                        })
                    }
                    None => Ok(Step::NeedMore),
                }
            }
        }
    }
}

/// Parses a chunk-size line without its line end: `1*HEXDIG [BWS] *( ";" ext )`.
fn chunk_size(line: &[u8]) -> Result<u64, ResponseError> {
    let digits = line.iter().take_while(|b| b.is_ascii_hexdigit()).count();
    if digits == 0 {
        return Err(ResponseError::InvalidChunk {
            reason: "chunk size is not hexadecimal",
        });
    }
    let (hex, rest) = line.split_at(digits);
    let mut size = 0u64;
    for &b in hex {
        let digit = u64::from(char::from(b).to_digit(16).unwrap_or(0));
        size = size
            .checked_mul(16)
            .and_then(|s| s.checked_add(digit))
            .ok_or(ResponseError::ChunkSizeOverflow)?;
    }
    let rest = trim_start_ws(rest);
    if rest.is_empty() {
        return Ok(size);
    }
    // Extensions: validated for stray control bytes (CR, NUL…) and otherwise ignored.
    let valid_ext = rest.first() == Some(&b';')
        && rest
            .iter()
            .all(|&b| b == b'\t' || (b' '..=b'~').contains(&b));
    if valid_ext {
        Ok(size)
    } else {
        Err(ResponseError::InvalidChunk {
            reason: "invalid bytes after chunk size",
        })
    }
}

fn trim_start_ws(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    s
}

/// Checks that a complete trailer section is valid header-field syntax.
fn check_trailers(block: &[u8], max_headers: usize) -> Result<(), ResponseError> {
    let slots = max_headers.min(block.len() / 3 + 1);
    let mut fields = vec![httparse::EMPTY_HEADER; slots];
    match httparse::parse_headers(block, &mut fields) {
        Ok(httparse::Status::Complete((n, _))) if n == block.len() => Ok(()),
        Ok(_) => Err(ResponseError::InvalidTrailer {
            reason: "incomplete trailer section",
        }),
        Err(httparse::Error::TooManyHeaders) => {
            Err(ResponseError::TooManyHeaders { limit: max_headers })
        }
        Err(e) => Err(ResponseError::InvalidTrailer { reason: reason(e) }),
    }
}
