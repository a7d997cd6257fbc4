//! Newline-delimited JSON framing for the stdio transport.
//!
//! One message per line; a line ends at `\n` (a preceding `\r` is dropped), and a UTF-8
//! byte-order mark opening the stream is dropped (some runtimes write one before the
//! first line of their standard output). Input may
//! arrive in any chunks: the decoder keeps at most one partial line, bounded by
//! `max_line_bytes`. A longer line is not buffered: the decoder skips to the next newline
//! keeping only its first and last [`SNIFF_BYTES`] bytes (so the receiver can tell which
//! request it answered), reports it once, and goes on with the lines after it.

use crate::held::give_back;

/// The UTF-8 byte-order mark.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// How many bytes of the start and of the end of an oversized line are kept for
/// [`Line::Oversized`] (fewer when the limit is smaller): enough for the envelope members
/// a serialiser writes before `params`/`result` (`jsonrpc`, `id`, `method`), or after them.
pub const SNIFF_BYTES: usize = 256;

/// One item out of the [`LineDecoder`].
#[derive(Debug, PartialEq, Eq)]
pub enum Line<'a> {
    /// A complete line, without its line end. Blank lines are skipped.
    Message(&'a [u8]),
    /// A line longer than the limit was discarded. Reported when it ends, in order with
    /// the lines around it.
    Oversized {
        /// Its length, without the `\n` (at least the limit plus one).
        seen: usize,
        /// Its first bytes: at most [`SNIFF_BYTES`], and at most the limit.
        head: &'a [u8],
        /// Its last bytes before the `\n` (a `\r` included): at most [`SNIFF_BYTES`], and
        /// at most the limit. Overlaps `head` when the line is short.
        tail: &'a [u8],
    },
}

/// The parts kept of an oversized line.
#[derive(Debug, Default)]
struct Skipped {
    seen: usize,
    head: Vec<u8>,
    tail: Vec<u8>,
}

/// Splits a byte stream into lines with bounded memory.
#[derive(Debug)]
pub struct LineDecoder {
    buf: Vec<u8>,
    /// Bytes of `buf` already consumed by [`LineDecoder::poll_line`].
    start: usize,
    /// Bytes after `start` already searched for a newline (so a long line arriving in
    /// many reads is scanned once, not once per read).
    scanned: usize,
    max_line_bytes: usize,
    /// `SNIFF_BYTES`, or less under a smaller limit.
    sniff_bytes: usize,
    /// Inside an oversized line: its size so far, its start and its latest bytes.
    skipping: Option<Skipped>,
    /// An oversized line ended and has not yet been reported.
    report: Option<Skipped>,
    /// The line last reported as oversized, which the returned [`Line`] borrows.
    reported: Skipped,
    /// How many bytes of a byte-order mark opened the stream so far (held back, not in
    /// `buf`), until the stream's first bytes settle whether it opens with one; `None`
    /// once settled.
    bom_seen: Option<usize>,
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
            sniff_bytes: SNIFF_BYTES.min(max_line_bytes),
            skipping: None,
            report: None,
            reported: Skipped::default(),
            bom_seen: Some(0),
        }
    }

    /// Adds input. Call [`LineDecoder::poll_line`] until it returns `None` afterwards.
    pub fn handle_input(&mut self, mut data: &[u8]) {
        if let Some(seen) = self.bom_seen {
            // The stream's first bytes: a mark is dropped whole, however it is split.
            let matched = (BOM[seen..].iter().zip(data))
                .take_while(|(b, d)| b == d)
                .count();
            if seen + matched == BOM.len() {
                self.bom_seen = None;
                data = &data[matched..];
            } else if matched == data.len() {
                self.bom_seen = Some(seen + matched);
                return;
            } else {
                // Not a mark: what was held back is the peer's.
                self.bom_seen = None;
                self.buf.extend_from_slice(&BOM[..seen]);
            }
        }
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        if let Some(skipped) = &mut self.skipping {
            let end = memchr::memchr(b'\n', data);
            let part = &data[..end.unwrap_or(data.len())];
            skipped.seen = skipped.seen.saturating_add(part.len());
            keep_last(&mut skipped.tail, part, self.sniff_bytes);
            let Some(i) = end else {
                return;
            };
            self.report = self.skipping.take();
            data = &data[i + 1..];
        }
        self.buf.extend_from_slice(data);
    }

    /// The next complete line, an oversize report, or `None` when more input is needed.
    pub fn poll_line(&mut self) -> Option<Line<'_>> {
        if let Some(skipped) = self.report.take() {
            self.reported = skipped;
            return Some(Line::Oversized {
                seen: self.reported.seen,
                head: &self.reported.head,
                tail: &self.reported.tail,
            });
        }
        loop {
            let pending_len = self.buf.len() - self.start;
            let from = self.start + self.scanned;
            let newline = memchr::memchr(b'\n', &self.buf[from..]).map(|i| i + from - self.start);
            let Some(i) = newline else {
                if pending_len > self.max_line_bytes {
                    // Drop the partial line now so memory stays bounded: keep only what
                    // the report needs.
                    let partial = &self.buf[self.start..];
                    let mut skipped = Skipped {
                        seen: pending_len,
                        head: partial[..self.sniff_bytes].to_vec(),
                        tail: Vec::new(),
                    };
                    keep_last(&mut skipped.tail, partial, self.sniff_bytes);
                    self.skipping = Some(skipped);
                    self.buf.clear();
                    self.start = 0;
                    self.scanned = 0;
                } else {
                    self.scanned = pending_len;
                    if self.start > 0 {
                        // Consumed lines go now, so only the partial line stays held.
                        self.buf.drain(..self.start);
                        self.start = 0;
                    }
                    // After a large line, the memory goes back: the buffer does not keep
                    // its high-water mark (a 64 KiB line leaves at most 4× that).
                    give_back(&mut self.buf);
                }
                return None;
            };
            let line_start = self.start;
            self.start += i + 1;
            self.scanned = 0;
            if i > self.max_line_bytes {
                let line = &self.buf[line_start..line_start + i];
                return Some(Line::Oversized {
                    seen: i,
                    head: &line[..self.sniff_bytes],
                    tail: &line[i - self.sniff_bytes..],
                });
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

    /// The oversized line being skipped, if one is: its size so far and its first bytes.
    /// It is reported by [`LineDecoder::poll_line`] only once it ends; this lets the
    /// receiver act before that (a line that never ends is never reported).
    #[must_use]
    pub fn oversized_in_progress(&self) -> Option<(usize, &[u8])> {
        self.skipping.as_ref().map(|s| (s.seen, s.head.as_slice()))
    }

    /// Bytes of an unfinished line held at end of input (a truncated last message).
    #[must_use]
    pub fn partial_len(&self) -> usize {
        self.buf.len() - self.start
            + self.skipping.as_ref().map_or(0, |s| s.seen)
            + self.bom_seen.unwrap_or(0)
    }

    /// Bytes the decoder holds between calls (its buffers' contents), for checking that
    /// a peer cannot make it hold more than one line's worth.
    #[must_use]
    pub fn retained_bytes(&self) -> usize {
        let kept = |s: &Skipped| s.head.len() + s.tail.len();
        self.buf.len()
            + self.skipping.as_ref().map_or(0, kept)
            + self.report.as_ref().map_or(0, kept)
            + kept(&self.reported)
    }
}

/// Makes `tail` the last `max` bytes of `tail` followed by `more`. Costs at most
/// `max` plus what is kept, however long `more` is.
fn keep_last(tail: &mut Vec<u8>, more: &[u8], max: usize) {
    if more.len() >= max {
        tail.clear();
        tail.extend_from_slice(&more[more.len() - max..]);
        return;
    }
    let excess = (tail.len() + more.len()).saturating_sub(max);
    tail.drain(..excess);
    tail.extend_from_slice(more);
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
        while let Some(l) = d.poll_line() {
            out.push(match l {
                Line::Message(m) => String::from_utf8_lossy(m).into_owned(),
                Line::Oversized { seen, head, tail } => format!(
                    "<oversized {seen} {} {}>",
                    String::from_utf8_lossy(head),
                    String::from_utf8_lossy(tail)
                ),
            });
        }
    }

    fn run(input: &[u8], chunks: &[usize], max: usize) -> Vec<String> {
        let mut d = LineDecoder::new(max);
        let mut out = Vec::new();
        let mut rest = input;
        for &c in chunks {
            let (a, b) = rest.split_at(c.min(rest.len()));
            d.handle_input(a);
            collect(&mut d, &mut out);
            rest = b;
        }
        d.handle_input(rest);
        collect(&mut d, &mut out);
        out
    }

    const INPUT: &[u8] = b"{\"a\":1}\r\n\n{\"b\":2}\nAAAAAAAAAAAAAAAAAAAAAAAAA\n{\"c\":3}\npartial";

    #[test]
    fn chunking_invariance() {
        let whole = run(INPUT, &[], 16);
        assert_eq!(
            whole,
            [
                "{\"a\":1}",
                "{\"b\":2}",
                "<oversized 25 AAAAAAAAAAAAAAAA AAAAAAAAAAAAAAAA>",
                "{\"c\":3}"
            ]
        );
        let bytewise = run(INPUT, &vec![1; INPUT.len()], 16);
        assert_eq!(bytewise, whole);
        for split in 0..=INPUT.len() {
            assert_eq!(run(INPUT, &[split], 16), whole, "split at {split}");
        }
    }

    #[test]
    fn a_large_line_does_not_pin_its_buffer() {
        let mut d = LineDecoder::new(4 << 20);
        let line = format!("{{\"t\":\"{}\"}}\n", "x".repeat(1 << 20));
        for part in line.as_bytes().chunks(16 * 1024) {
            d.handle_input(part);
            if let Some(l) = d.poll_line() {
                assert!(matches!(l, Line::Message(m) if m.len() == line.len() - 1));
            }
        }
        d.handle_input(b"{}");
        assert!(d.poll_line().is_none());
        assert!(
            d.buf.capacity() <= 4 * crate::held::KEEP_CAPACITY,
            "{}",
            d.buf.capacity()
        );
        d.handle_input(b"\n");
        assert_eq!(d.poll_line(), Some(Line::Message(b"{}")));
    }

    #[test]
    fn oversized_partial_is_not_buffered() {
        let mut d = LineDecoder::new(8);
        for _ in 0..1000 {
            d.handle_input(b"xxxxxxxxxxxxxxxx");
            assert!(d.poll_line().is_none());
            assert!(d.retained_bytes() <= 16, "{}", d.retained_bytes());
        }
        d.handle_input(b"\n{}\n");
        assert!(matches!(d.poll_line(), Some(Line::Oversized { seen, .. }) if seen == 16000));
        assert_eq!(d.poll_line(), Some(Line::Message(b"{}")));
    }

    #[test]
    fn oversized_line_keeps_its_first_and_last_bytes_only() {
        let max = 4096;
        let line = format!(
            "{{\"jsonrpc\":\"2.0\",\"result\":\"{}\",\"id\":7}}\r\n",
            "x".repeat(100_000)
        );
        for chunk in [1, 7, 1000, 4097, line.len()] {
            let mut d = LineDecoder::new(max);
            let mut reports = Vec::new();
            for part in line.as_bytes().chunks(chunk) {
                d.handle_input(part);
                while let Some(l) = d.poll_line() {
                    let Line::Oversized { seen, head, tail } = l else {
                        panic!("not oversized");
                    };
                    reports.push((seen, head.to_vec(), tail.to_vec()));
                }
                assert!(d.retained_bytes() <= max + chunk.min(max), "chunk {chunk}");
            }
            assert_eq!(reports.len(), 1, "chunk {chunk}");
            let (seen, head, tail) = &reports[0];
            assert_eq!(*seen, line.len() - 1, "chunk {chunk}");
            assert_eq!(head.as_slice(), &line.as_bytes()[..SNIFF_BYTES]);
            assert_eq!(
                tail.as_slice(),
                &line.as_bytes()[line.len() - 1 - SNIFF_BYTES..line.len() - 1]
            );
            assert!(tail.ends_with(b",\"id\":7}\r"));
        }
    }

    #[test]
    fn a_byte_order_mark_opening_the_stream_is_dropped() {
        // Whole, or split across reads.
        for split in 0..=4 {
            let input = b"\xEF\xBB\xBF{\"a\":1}\n\xEF\xBB\xBF{}\n";
            let mut d = LineDecoder::new(1024);
            d.handle_input(&input[..split]);
            assert_eq!(d.poll_line(), None);
            d.handle_input(&input[split..]);
            assert_eq!(d.poll_line(), Some(Line::Message(b"{\"a\":1}")));
            // Only the stream's first bytes: later it is the peer's (malformed) message.
            assert_eq!(d.poll_line(), Some(Line::Message(b"\xEF\xBB\xBF{}")));
        }
        // An oversized first line is the same line whole or split (found by fuzzing:
        // the mark was dropped only from a line that ended within one read).
        let mut long = b"\xEF\xBB\xBF".to_vec();
        long.extend_from_slice(&[b'x'; 100]);
        long.push(b'\n');
        let lines = |chunk: usize| {
            let mut d = LineDecoder::new(64);
            let mut out = Vec::new();
            for c in long.chunks(chunk) {
                d.handle_input(c);
                while let Some(l) = d.poll_line() {
                    out.push(format!("{l:?}"));
                }
            }
            out
        };
        let whole = lines(long.len());
        assert!(whole[0].contains("seen: 100"), "{whole:?}");
        for chunk in [1, 2, 3, 4, 50] {
            assert_eq!(lines(chunk), whole, "chunks of {chunk}");
        }
        // A stream opening with part of a mark keeps those bytes.
        let mut d = LineDecoder::new(64);
        d.handle_input(b"\xEF\xBB");
        assert_eq!(d.partial_len(), 2);
        d.handle_input(b"x\n");
        assert_eq!(d.poll_line(), Some(Line::Message(b"\xEF\xBBx")));
        // A mark alone on the first line leaves a blank line, skipped.
        let mut d = LineDecoder::new(1024);
        d.handle_input(b"\xEF\xBB\xBF\r\n{}\n");
        assert_eq!(d.poll_line(), Some(Line::Message(b"{}")));
    }
}
