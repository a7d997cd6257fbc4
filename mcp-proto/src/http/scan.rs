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

/// Before a head: how many bytes an empty line at the front of `data` takes (RFC 9112
/// §2.2 lets a reader skip them): `Some(0)` when `data` starts with something else,
/// `None` when it cannot tell yet.
pub(crate) fn leading_empty_line(data: &[u8]) -> Option<usize> {
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
