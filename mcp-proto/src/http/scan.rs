//! Finding the end of a header block (a head or a trailer section) incrementally.
//!
//! httparse is only called once a block is complete, so a head that trickles in a byte at
//! a time costs linear, not quadratic, time. Line ends may be CRLF or a bare LF, as
//! httparse accepts both.

/// Where the block in `data` ends (the index just after its empty line), if it is
/// complete. `scanned` carries the progress between calls on a growing buffer (start it
/// at 0); `may_be_empty` says the block may consist of the empty line alone (a trailer
/// section), whereas a head always starts with a non-empty line.
pub(crate) fn block_end(data: &[u8], scanned: &mut usize, may_be_empty: bool) -> Option<usize> {
    if may_be_empty && *scanned == 0 {
        match data {
            [b'\n', ..] => return Some(1),
            [b'\r', b'\n', ..] => return Some(2),
            [] | [b'\r'] => return None,
            _ => {}
        }
    }
    let mut i = *scanned;
    while let Some(at) = next_newline(data, i) {
        match (data.get(at + 1), data.get(at + 2)) {
            (None, _) | (Some(b'\r'), None) => {
                *scanned = at;
                return None;
            }
            (Some(b'\n'), _) => return Some(at + 2),
            (Some(b'\r'), Some(b'\n')) => return Some(at + 3),
            _ => i = at + 1,
        }
    }
    *scanned = i.max(data.len());
    None
}

/// The index of the first `\n` in `data` at or after `from`. Eight bytes are looked at
/// at once: a byte equal to `\n` is a zero byte of the word XOR `0x0a0a…`, and the
/// lowest set bit of `(w - 0x0101…) & !w & 0x8080…` marks the first zero byte.
fn next_newline(data: &[u8], from: usize) -> Option<usize> {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    const NEWLINES: u64 = u64::from_ne_bytes([b'\n'; 8]);
    let rest = data.get(from..)?;
    let mut chunks = rest.chunks_exact(8);
    let mut at = from;
    for chunk in &mut chunks {
        let mut word = [0; 8];
        word.copy_from_slice(chunk);
        let w = u64::from_le_bytes(word) ^ NEWLINES;
        let zeros = w.wrapping_sub(ONES) & !w & HIGHS;
        if zeros != 0 {
            return Some(at + (zeros.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    let tail = chunks.remainder();
    tail.iter().position(|b| *b == b'\n').map(|p| at + p)
}

/// Where a head at the front of `data` stands ([`scan_head`]).
pub(crate) enum HeadScan {
    /// Not complete: skip this many bytes (an empty line before the head, which RFC 9112
    /// §2.2 lets a reader skip), or, with `None`, wait for more input.
    Pending(Option<usize>),
    /// No head ends within the limit.
    TooLarge,
    /// The head is `data[..end]`, its empty line included.
    Complete(usize),
}

/// How far the head at the front of `data` (a request's or a response's) has come, with
/// at most `limit` bytes of it looked at. `scanned` carries the progress between calls
/// on a growing buffer, as for [`block_end`].
pub(crate) fn scan_head(data: &[u8], scanned: &mut usize, limit: usize) -> HeadScan {
    if *scanned == 0 {
        let blank = leading_empty_line(data);
        if blank != Some(0) {
            return HeadScan::Pending(blank);
        }
    }
    let window = &data[..data.len().min(limit)];
    match block_end(window, scanned, false) {
        Some(end) => HeadScan::Complete(end),
        None if data.len() >= limit => HeadScan::TooLarge,
        None => HeadScan::Pending(None),
    }
}

/// Before a head: how many bytes an empty line at the front of `data` takes (RFC 9112
/// §2.2 lets a reader skip them): `Some(0)` when `data` starts with something else,
/// `None` when it cannot tell yet.
fn leading_empty_line(data: &[u8]) -> Option<usize> {
    match data {
        [] | [b'\r'] => None,
        [b'\n', ..] => Some(1),
        [b'\r', b'\n', ..] => Some(2),
        _ => Some(0),
    }
}

#[cfg(test)]
mod tests {
    use super::block_end;

    /// `block_end` as a plain byte-by-byte loop.
    fn reference(data: &[u8], scanned: &mut usize) -> Option<usize> {
        let mut i = *scanned;
        while let Some(&b) = data.get(i) {
            if b == b'\n' {
                match (data.get(i + 1), data.get(i + 2)) {
                    (None, _) | (Some(b'\r'), None) => break,
                    (Some(b'\n'), _) => return Some(i + 2),
                    (Some(b'\r'), Some(b'\n')) => return Some(i + 3),
                    _ => {}
                }
            }
            i += 1;
        }
        *scanned = i;
        None
    }

    #[test]
    fn matches_a_byte_by_byte_scan() {
        // Every string of up to 7 symbols over {a, \r, \n, \xff}, behind 0 to 9 bytes of
        // padding (so each lands at every offset within a word), fed whole and growing.
        let symbols = [b'a', b'\r', b'\n', 0xff];
        for len in 0..=7u32 {
            for code in 0..4usize.pow(len) {
                let tail: Vec<u8> = (0..len).map(|k| symbols[(code >> (2 * k)) & 3]).collect();
                for pad in 0..=9 {
                    let mut input = vec![b'x'; pad];
                    input.extend_from_slice(&tail);
                    let (mut a, mut b) = (0, 0);
                    for n in 0..=input.len() {
                        let got = block_end(&input[..n], &mut a, false);
                        assert_eq!(got, reference(&input[..n], &mut b), "{input:?} at {n}");
                        assert_eq!(a, b, "{input:?} at {n}");
                        if got.is_some() {
                            break;
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn finds_block_ends_incrementally() {
        let input = b"HTTP/1.1 200 OK\r\nA: b\r\n\r\nrest";
        let mut scanned = 0;
        for n in 0..input.len() {
            let got = block_end(&input[..n], &mut scanned, false);
            assert_eq!(got, (n >= 25).then_some(25), "prefix {n}");
            if got.is_some() {
                break;
            }
        }
        assert_eq!(block_end(b"\r\n", &mut 0, true), Some(2));
        assert_eq!(block_end(b"\n", &mut 0, true), Some(1));
        assert_eq!(block_end(b"X: y\n\nz", &mut 0, true), Some(6));
        assert_eq!(block_end(b"X: y\n\r", &mut 0, true), None);
    }
}
