//! Newline-delimited JSON framing for the stdio transport.
//!
//! One message per line; a line ends at `\n` (a preceding `\r` is dropped). Input may
//! arrive in any chunks: the decoder keeps at most one partial line, bounded by
//! `max_line_bytes`. A longer line is not buffered: the decoder reports it once, skips to
//! the next newline, and goes on with the lines after it.

/// One item out of the [`LineDecoder`].
#[derive(Debug, PartialEq, Eq)]
pub enum Line<'a> {
    /// A complete line, without its line end. Blank lines are skipped.
    Message(&'a [u8]),
    /// A line longer than the limit was discarded.
    Oversized {
        /// Bytes seen of it (at least the limit plus one).
        seen: usize,
    },
}

/// Splits a byte stream into lines with bounded memory.
#[derive(Debug)]
pub struct LineDecoder {
    buf: Vec<u8>,
    /// Bytes of `buf` already consumed by [`LineDecoder::next_line`].
    start: usize,
    /// Bytes after `start` already searched for a newline (so a long line arriving in
    /// many reads is scanned once, not once per read).
    scanned: usize,
    max_line_bytes: usize,
    /// Inside an oversized line: bytes dropped so far.
    skipping: Option<usize>,
    /// An oversized line ended and has not yet been reported.
    report: Option<usize>,
}

impl LineDecoder {
    /// A decoder that refuses lines longer than `max_line_bytes`.
    #[must_use]
    pub fn new(max_line_bytes: usize) -> Self {
        LineDecoder {
            buf: Vec::new(),
            start: 0,
            scanned: 0,
            max_line_bytes,
            skipping: None,
            report: None,
        }
    }

    /// Adds input. Call [`LineDecoder::next_line`] until it returns `None` afterwards.
    pub fn push(&mut self, mut data: &[u8]) {
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        if let Some(seen) = self.skipping {
            match memchr::memchr(b'\n', data) {
                None => {
                    self.skipping = Some(seen.saturating_add(data.len()));
                    return;
                }
                Some(i) => {
                    self.skipping = None;
                    self.report = Some(seen.saturating_add(i));
                    data = &data[i + 1..];
                }
            }
        }
        self.buf.extend_from_slice(data);
    }

    /// The next complete line, an oversize report, or `None` when more input is needed.
    pub fn next_line(&mut self) -> Option<Line<'_>> {
        if let Some(seen) = self.report.take() {
            return Some(Line::Oversized { seen });
        }
        loop {
            let pending_len = self.buf.len() - self.start;
            let from = self.start + self.scanned;
            let newline = memchr::memchr(b'\n', &self.buf[from..]).map(|i| i + from - self.start);
            let Some(i) = newline else {
                if pending_len > self.max_line_bytes {
                    // Drop the partial line now so memory stays bounded.
                    self.skipping = Some(pending_len);
                    self.buf.clear();
                    self.start = 0;
                    self.scanned = 0;
                } else {
                    self.scanned = pending_len;
                }
                return None;
            };
            let line_start = self.start;
            self.start += i + 1;
            self.scanned = 0;
            if i > self.max_line_bytes {
                return Some(Line::Oversized { seen: i });
            }
            let mut end = line_start + i;
            if end > line_start && self.buf[end - 1] == b'\r' {
                end -= 1;
            }
            if self.buf[line_start..end]
                .iter()
                .all(u8::is_ascii_whitespace)
            {
                continue;
            }
            return Some(Line::Message(&self.buf[line_start..end]));
        }
    }

    /// Bytes of an unfinished line held at end of input (a truncated last message).
    #[must_use]
    pub fn partial_len(&self) -> usize {
        self.buf.len() - self.start + self.skipping.unwrap_or(0)
    }
}

/// Appends `json` and the line end to `out`. `json` must be compact (no raw newlines);
/// everything this crate serialises is.
pub fn frame(out: &mut Vec<u8>, json: &[u8]) {
    debug_assert!(!json.contains(&b'\n'));
    out.extend_from_slice(json);
    out.push(b'\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(d: &mut LineDecoder, out: &mut Vec<String>) {
        while let Some(l) = d.next_line() {
            out.push(match l {
                Line::Message(m) => String::from_utf8_lossy(m).into_owned(),
                Line::Oversized { .. } => "<oversized>".to_owned(),
            });
        }
    }

    fn run(input: &[u8], chunks: &[usize], max: usize) -> Vec<String> {
        let mut d = LineDecoder::new(max);
        let mut out = Vec::new();
        let mut rest = input;
        for &c in chunks {
            let (a, b) = rest.split_at(c.min(rest.len()));
            d.push(a);
            collect(&mut d, &mut out);
            rest = b;
        }
        d.push(rest);
        collect(&mut d, &mut out);
        out
    }

    const INPUT: &[u8] = b"{\"a\":1}\r\n\n{\"b\":2}\nAAAAAAAAAAAAAAAAAAAAAAAAA\n{\"c\":3}\npartial";

    #[test]
    fn chunking_invariance() {
        let whole = run(INPUT, &[], 16);
        assert_eq!(
            whole,
            ["{\"a\":1}", "{\"b\":2}", "<oversized>", "{\"c\":3}"]
        );
        let bytewise = run(INPUT, &vec![1; INPUT.len()], 16);
        assert_eq!(bytewise, whole);
        for split in 0..=INPUT.len() {
            assert_eq!(run(INPUT, &[split], 16), whole, "split at {split}");
        }
    }

    #[test]
    fn oversized_partial_is_not_buffered() {
        let mut d = LineDecoder::new(8);
        for _ in 0..1000 {
            d.push(b"xxxxxxxxxxxxxxxx");
            assert!(d.next_line().is_none());
            assert!(d.buf.len() <= 16);
        }
        d.push(b"\n{}\n");
        assert!(matches!(d.next_line(), Some(Line::Oversized { seen }) if seen == 16000));
        assert_eq!(d.next_line(), Some(Line::Message(b"{}")));
    }
}
