//! Character classes of HTTP/1.1 (RFC 9110 §5.6.2, §5.5), looked up in one table: a head
//! is checked byte by byte on every request and response, so each byte costs one load
//! and one mask instead of a chain of range comparisons.

/// A `tchar`: a letter, a digit, or one of ``!#$%&'*+-.^_`|~``.
const TCHAR: u8 = 1;
/// A byte a field value may hold: visible ASCII (`VCHAR`), SP or HTAB. `obs-text` is
/// left out: nothing this crate writes or reads needs it.
const FIELD: u8 = 2;

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
        table[b] = (if tchar { TCHAR } else { 0 }) | (if field { FIELD } else { 0 });
        b += 1;
    }
    table
};

/// Whether `b` is a `tchar`.
pub(crate) fn is_tchar(b: u8) -> bool {
    CLASSES[usize::from(b)] & TCHAR != 0
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
}
