//! Character classes of HTTP/1.1 (RFC 9110 §5.6.2, §5.5), looked up in one table: a head
//! is checked byte by byte on every request and response, so each byte costs one load
//! and one mask instead of a chain of range comparisons.

/// A `tchar`: a letter, a digit, or one of ``!#$%&'*+-.^_`|~``.
const TCHAR: u8 = 1;
/// A byte a field value may hold: visible ASCII (`VCHAR`), SP or HTAB. `obs-text` is
/// left out: nothing this crate writes or reads needs it.
const FIELD: u8 = 2;
/// A byte a `Host` header this crate writes may hold: visible ASCII but for the
/// delimiters and characters no authority carries (`/?#@\"<>{}|^` and the backquote).
const HOST: u8 = 4;

const CLASSES: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        let tchar = c.is_ascii_alphanumeric()
            || matches!(
                c,
                b'!' | b'#'
                    | b'$'
                    | b'%'
                    | b'&'
                    | b'\''
                    | b'*'
                    | b'+'
                    | b'-'
                    | b'.'
                    | b'^'
                    | b'_'
                    | b'`'
                    | b'|'
                    | b'~'
            );
        let field = c.is_ascii_graphic() || c == b' ' || c == b'\t';
        let host = c.is_ascii_graphic()
            && !matches!(
                c,
                b'/' | b'?'
                    | b'#'
                    | b'@'
                    | b'\\'
                    | b'"'
                    | b'<'
                    | b'>'
                    | b'{'
                    | b'}'
                    | b'|'
                    | b'^'
                    | b'`'
            );
        table[b] = (if tchar { TCHAR } else { 0 })
            | (if field { FIELD } else { 0 })
            | (if host { HOST } else { 0 });
        b += 1;
    }
    table
};

/// Whether `b` is a `tchar`.
pub(crate) fn is_tchar(b: u8) -> bool {
    CLASSES[usize::from(b)] & TCHAR != 0
}

/// Whether `s` may be written as a `Host` header: not empty, and every byte one a host
/// and port carry (see [`HOST`]).
pub(crate) fn is_host(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| CLASSES[usize::from(b)] & HOST != 0)
}

/// `token = 1*tchar`.
pub(crate) fn is_token(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(is_tchar)
}

/// A field value as this crate writes it: visible ASCII with SP/HTAB inside, and no
/// whitespace around it (a receiver would strip it, changing the value). Empty is
/// allowed.
pub(crate) fn is_field_value(s: &str) -> bool {
    let bytes = s.as_bytes();
    let ws = |b: &u8| *b == b' ' || *b == b'\t';
    // Almost every value is printable ASCII: checked eight bytes at a time; the table
    // decides the others (a tab inside is allowed).
    (all_printable(bytes) || bytes.iter().all(|&b| CLASSES[usize::from(b)] & FIELD != 0))
        && !bytes.first().is_some_and(ws)
        && !bytes.last().is_some_and(ws)
}

/// Whether every byte is printable ASCII (`0x20..=0x7E`), eight bytes at a time: once
/// no byte of a word has its high bit set, no byte's sum below carries into the next,
/// and `b + 0x60` reaches `0x80` exactly when `b >= 0x20`, `b + 1` exactly when
/// `b >= 0x7F`.
fn all_printable(bytes: &[u8]) -> bool {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
    let (words, rest) = bytes.as_chunks::<8>();
    for word in words {
        let w = u64::from_ne_bytes(*word);
        if w & HIGH != 0
            || w.wrapping_add(0x60 * ONES) & HIGH != HIGH
            || w.wrapping_add(ONES) & HIGH != 0
        {
            return false;
        }
    }
    rest.iter().all(|b| (0x20..0x7f).contains(b))
}

/// Whether `a` and `b` are equal ignoring ASCII case (as [`str::eq_ignore_ascii_case`]),
/// eight bytes at a time: header names are looked up several times per response.
pub(crate) fn eq_ignore_case(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let (a_words, a_rest) = a.as_chunks::<8>();
    let (b_words, b_rest) = b.as_chunks::<8>();
    a_words.iter().zip(b_words).all(|(x, y)| {
        let (x, y) = (u64::from_ne_bytes(*x), u64::from_ne_bytes(*y));
        x == y || words_eq_ignore_case(x, y)
    }) && a_rest.eq_ignore_ascii_case(b_rest)
}

/// Whether the eight bytes of `x` and `y` are equal ignoring ASCII case: every byte
/// either equal, or a letter in both with only its case bit (`0x20`) different.
fn words_eq_ignore_case(x: u64, y: u64) -> bool {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
    const CASE: u64 = u64::from_ne_bytes([0x20; 8]);
    let diff = x ^ y;
    if diff & !CASE != 0 {
        return false;
    }
    if (x | y) & HIGH != 0 {
        return x.to_ne_bytes().eq_ignore_ascii_case(&y.to_ne_bytes());
    }
    // Bytes below 0x80 now: adding to each cannot carry into the next. `lower` has a
    // letter's lowercase form; its byte is a letter when it is at least `a` (adding
    // 0x1F reaches 0x80) and at most `z` (adding 0x05 stays below 0x80).
    let lower = x | CASE;
    let at_least_a = lower.wrapping_add(0x1F * ONES) & HIGH;
    let at_most_z = !lower.wrapping_add(0x05 * ONES) & HIGH;
    // A byte that differs has its 0x20 bit in `diff`: shifted to that byte's 0x80 bit.
    let differing = (diff << 2) & HIGH;
    differing & !(at_least_a & at_most_z) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table agrees with the grammar's definitions for every byte.
    #[test]
    fn the_table_matches_the_grammar() {
        for b in 0..=255u8 {
            let tchar = b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
            assert_eq!(is_tchar(b), tchar, "tchar {b:#04x}");
            let one = [b];
            let field = (0x21..0x7f).contains(&b);
            if let Ok(s) = std::str::from_utf8(&one) {
                assert_eq!(is_field_value(s), field, "field value {b:#04x}");
            }
        }
        for b in 0..=255u8 {
            let host = b.is_ascii_graphic() && !b"/?#@\\\"<>{}|^`".contains(&b);
            if let Ok(s) = std::str::from_utf8(&[b]) {
                assert_eq!(is_host(s), host, "host {b:#04x}");
            }
        }
        assert!(is_host("127.0.0.1:8080"));
        assert!(is_host("[::1]:80"));
        assert!(!is_host(""));
        assert!(is_token("Mcp-Param-Region"));
        assert!(!is_token(""));
        assert!(!is_token("a b"));
        assert!(is_field_value(""));
        assert!(is_field_value("a \tb"));
        assert!(!is_field_value(" a"));
        assert!(!is_field_value("a\t"));
        assert!(!is_field_value("a\r\nb"));
        assert!(!is_field_value("é"));
    }

    /// The word-at-a-time check agrees with the byte-at-a-time one for every byte at
    /// every position of a word and of the tail.
    #[test]
    fn printable_words_agree_with_the_bytes() {
        for len in [1, 7, 8, 9, 16, 17, 23] {
            for at in 0..len {
                for b in 0..=255u8 {
                    let mut bytes = vec![b'a'; len];
                    bytes[at] = b;
                    assert_eq!(
                        all_printable(&bytes),
                        (0x20..0x7f).contains(&b),
                        "{b:#04x} at {at} of {len}"
                    );
                }
            }
        }
        assert!(all_printable(b""));
        assert!(all_printable(b"Bearer abc.DEF-123_~+/= x"));
    }
    /// The word-at-a-time comparison agrees with the standard one for every pair of
    /// bytes at every position of a word and of the tail.
    #[test]
    fn case_insensitive_words_agree_with_the_standard_comparison() {
        for len in [1, 8, 9, 14, 17] {
            for at in [0, len / 2, len - 1] {
                for x in 0..=255u8 {
                    for y in [x, x ^ 0x20, x.wrapping_add(1), b'a', b'A', b'z', 0x80] {
                        let mut a = vec![b'k'; len];
                        let mut b = vec![b'K'; len];
                        a[at] = x;
                        b[at] = y;
                        let expected = a.eq_ignore_ascii_case(&b);
                        if let (Ok(a), Ok(b)) = (std::str::from_utf8(&a), std::str::from_utf8(&b)) {
                            assert_eq!(
                                eq_ignore_case(a, b),
                                expected,
                                "{x:#04x}/{y:#04x} at {at} of {len}"
                            );
                        }
                        let (wa, wb) = (&a[..8.min(len)], &b[..8.min(len)]);
                        if let (Ok(wa), Ok(wb)) = (<[u8; 8]>::try_from(wa), <[u8; 8]>::try_from(wb))
                        {
                            assert_eq!(
                                words_eq_ignore_case(
                                    u64::from_ne_bytes(wa),
                                    u64::from_ne_bytes(wb)
                                ),
                                wa.eq_ignore_ascii_case(&wb),
                                "word {x:#04x}/{y:#04x} at {at}"
                            );
                        }
                    }
                }
            }
        }
        assert!(eq_ignore_case("Content-Length", "content-length"));
        assert!(!eq_ignore_case("Content-Length", "content-lengti"));
        assert!(!eq_ignore_case("content-type", "content-length"));
        assert!(eq_ignore_case("", ""));
    }
}
