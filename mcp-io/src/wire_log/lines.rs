//! Cutting a byte stream into the lines the wire log is given.

use super::MAX_LOG_LINE;

/// Cuts a byte stream into lines of at most [`MAX_LOG_LINE`] bytes.
#[derive(Debug, Default)]
pub(super) struct Lines {
    /// The line being assembled (never more than `MAX_LOG_LINE` bytes).
    line: Vec<u8>,
    /// Part of the current line was passed on already.
    continued: bool,
    /// The input so far ended with a `\r` not yet in `line`: the next byte tells whether
    /// it ends the line (`\n`) or belongs to it.
    cr: bool,
}

/// One piece handed on by [`Lines`].
pub(super) struct Piece<'a> {
    pub(super) bytes: &'a [u8],
    /// The first piece of its line.
    pub(super) first: bool,
    /// The last piece of its line (the line end was seen, or the stream ended).
    pub(super) last: bool,
    /// Bytes of the line end that followed it (`\n` 1, `\r\n` 2; 0 when none did), for
    /// following a chunked body's framing.
    pub(super) ending: usize,
}

impl Lines {
    pub(super) fn feed(&mut self, mut data: &[u8], emit: &mut dyn FnMut(Piece<'_>)) {
        while !data.is_empty() {
            let (mut chunk, end) = match data.iter().position(|&b| b == b'\n') {
                Some(i) => {
                    let chunk = &data[..i];
                    data = &data[i + 1..];
                    (chunk, true)
                }
                None => (std::mem::take(&mut data), false),
            };
            // The `\r` of a `\r\n` is not part of the line, whether it came with this
            // chunk or ended the input before it. One that ends the input is held back,
            // so the line is cut into the same pieces however the bytes arrive.
            let mut held = std::mem::take(&mut self.cr);
            let mut ending = 1;
            if end {
                match chunk.strip_suffix(b"\r") {
                    Some(rest) => {
                        chunk = rest;
                        ending = 2;
                    }
                    None if chunk.is_empty() => {
                        if held {
                            ending = 2;
                        }
                        held = false;
                    }
                    None => {}
                }
            } else if let Some(rest) = chunk.strip_suffix(b"\r") {
                chunk = rest;
                self.cr = true;
            }
            if held {
                self.append(b"\r", emit);
            }
            self.append(chunk, emit);
            if end {
                self.emit(true, ending, emit);
            }
        }
    }

    /// Adds bytes to the current line, passing it on in pieces when it is full.
    fn append(&mut self, mut chunk: &[u8], emit: &mut dyn FnMut(Piece<'_>)) {
        while !chunk.is_empty() {
            // A full line is passed on only when more of it arrives, so that a line of
            // exactly the maximum is one piece.
            if self.line.len() == MAX_LOG_LINE {
                self.emit(false, 0, emit);
            }
            let take = chunk.len().min(MAX_LOG_LINE - self.line.len());
            self.line.extend_from_slice(&chunk[..take]);
            chunk = &chunk[take..];
        }
    }

    /// Passes on what is left of an unfinished line.
    pub(super) fn finish(&mut self, emit: &mut dyn FnMut(Piece<'_>)) {
        if std::mem::take(&mut self.cr) {
            self.append(b"\r", emit);
        }
        if !self.line.is_empty() {
            self.emit(true, 0, emit);
        }
        self.clear();
    }

    fn emit(&mut self, last: bool, ending: usize, emit: &mut dyn FnMut(Piece<'_>)) {
        emit(Piece {
            bytes: &self.line,
            first: !self.continued,
            last,
            ending,
        });
        self.line.clear();
        self.continued = !last;
    }

    pub(super) fn clear(&mut self) {
        self.line.clear();
        self.continued = false;
        self.cr = false;
    }
}
