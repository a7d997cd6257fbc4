//! Finding one top-level member of a JSON object that was validated already (a
//! `RawValue`), without deserializing the rest.
//!
//! Reading `resultType` with a serde struct walks every byte of the result, strings
//! included, one at a time: for a tool result carrying 64 KiB of text that was a full
//! extra pass. Here strings are skipped with `memchr` (a vectorised search for the closing
//! quote or a backslash), so the pass costs a small fraction of it.

/// What [`object_member`] found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Member<'a> {
    /// The text is not an object.
    NotObject,
    /// The member is absent.
    Absent,
    /// The member's raw value (whitespace trimmed).
    Raw(&'a str),
    /// The member appears more than once.
    Duplicate,
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// How many bytes of a string [`skip_string`] looks at eight at a time before it
/// searches with `memchr`: most keys and many values end sooner, and a search call
/// costs more than stepping over them.
const SHORT_STRING: usize = 128;

const ONES: u64 = u64::from_le_bytes([0x01; 8]);
const HIGH: u64 = u64::from_le_bytes([0x80; 8]);

/// The high bit of each byte of `word` that is zero, exact up to and including the
/// lowest one (a borrow may set the bit of a byte above a zero byte, never below).
fn zero_bytes(word: u64) -> u64 {
    word.wrapping_sub(ONES) & !word & HIGH
}

/// The high bit of each byte of `word` (read little-endian) equal to `byte`, exact up to
/// and including the lowest one.
fn bytes_equal(word: u64, byte: u8) -> u64 {
    zero_bytes(word ^ (ONES * u64::from(byte)))
}

/// The eight bytes of `b` from `j`, as a little-endian word, when there are eight.
fn word_at(b: &[u8], j: usize) -> Option<u64> {
    b.get(j..)
        .and_then(<[u8]>::first_chunk::<8>)
        .map(|w| u64::from_le_bytes(*w))
}

/// The offset in the word of the first byte its mask marks (`mask` is not zero).
fn first_marked(mask: u64) -> usize {
    (mask.trailing_zeros() / 8) as usize
}

/// `i` is at an opening quote: the index after the closing one.
fn skip_string(b: &[u8], i: usize) -> usize {
    let mut j = i + 1;
    let short_end = b.len().min(j + SHORT_STRING);
    while j < short_end {
        // Eight bytes at a time: the first quote or backslash of a word is found at once.
        if let Some(word) = word_at(b, j) {
            let mask = bytes_equal(word, b'"') | bytes_equal(word, b'\\');
            if mask == 0 {
                j += 8;
                continue;
            }
            j += first_marked(mask);
        }
        match b.get(j) {
            Some(b'"') => return j + 1,
            Some(b'\\') => j += 2,
            Some(_) => j += 1,
            None => return b.len(),
        }
    }
    while let Some(k) = memchr::memchr2(b'"', b'\\', &b[j.min(b.len())..]) {
        let at = j + k;
        if b[at] == b'\\' {
            j = at + 2;
        } else {
            return at + 1;
        }
    }
    b.len()
}

/// `i` is at the start of a value: the index after it.
fn skip_value(b: &[u8], i: usize) -> usize {
    match b.get(i) {
        Some(b'"') => skip_string(b, i),
        Some(b'{' | b'[') => {
            let mut depth = 0usize;
            let mut j = i;
            // Byte by byte between strings: in the results this reads, a string comes
            // every few bytes, too soon for a wider step to pay.
            while j < b.len() {
                match b[j] {
                    b'"' => {
                        j = skip_string(b, j);
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return j + 1;
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            b.len()
        }
        _ => {
            let mut j = i;
            while j < b.len() && !matches!(b[j], b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
            {
                j += 1;
            }
            j
        }
    }
}

/// Whether the raw key `raw` (quotes included) names `key`.
fn key_is(raw: &str, key: &str) -> bool {
    // An escape is never shorter in the text than what it stands for: a key whose text
    // is shorter than `key` cannot name it.
    if raw.len() < key.len() + 2 {
        return false;
    }
    // Keys are short: a plain loop finds a backslash sooner than a search call starts.
    if raw.bytes().any(|c| c == b'\\') {
        serde_json::from_str::<String>(raw).is_ok_and(|k| k == key)
    } else {
        raw.len() == key.len() + 2 && &raw[1..raw.len() - 1] == key
    }
}

/// Texts at least this long are searched for `key` whole ([`memchr::memmem`]) rather
/// than for one of its bytes: building the searcher costs more than a short text, and
/// in a long one the byte recurs (a capital `T` every few hundred bytes of prose).
const LONG_TEXT: usize = 4 * 1024;

/// Whether `text` may hold a member named `key`: it holds `key`'s bytes, or a backslash
/// (an escape may spell it). Vectorised searches, much cheaper than walking the members:
/// in a short text, for a backslash or one byte of `key` (its first capital, rarer in
/// JSON text than a lower-case letter), each find of that byte compared with `key`; in
/// a long one, for a backslash, then for `key` itself.
fn may_name(text: &[u8], key: &str) -> bool {
    let key = key.as_bytes();
    if text.len() >= LONG_TEXT {
        return memchr::memchr(b'\\', text).is_some() || memchr::memmem::find(text, key).is_some();
    }
    let Some(pivot) = key
        .iter()
        .position(u8::is_ascii_uppercase)
        .or((!key.is_empty()).then_some(0))
    else {
        return true;
    };
    memchr::memchr2_iter(b'\\', key[pivot], text).any(|at| {
        text[at] == b'\\'
            || at
                .checked_sub(pivot)
                .and_then(|start| text.get(start..start + key.len()))
                == Some(key)
    })
}

/// The top-level member `key` of `json`, which must be valid JSON.
///
/// The members are walked only as far as they must be: not at all when the text cannot
/// name `key`, and not past the member found when the rest cannot name it again (a
/// duplicate is looked for, as a full parse would fail on it).
pub(crate) fn object_member<'a>(json: &'a str, key: &str) -> Member<'a> {
    let b = json.as_bytes();
    let mut i = skip_ws(b, 0);
    if b.get(i) != Some(&b'{') {
        return Member::NotObject;
    }
    if !may_name(b, key) {
        return Member::Absent;
    }
    let mut found = None;
    i += 1;
    loop {
        i = skip_ws(b, i);
        match b.get(i) {
            Some(b'"') => {}
            _ => break, // `}` (or the end of a text that was not valid after all)
        }
        let key_end = skip_string(b, i);
        let raw_key = &json[i..key_end.min(json.len())];
        i = skip_ws(b, key_end);
        if b.get(i) != Some(&b':') {
            break;
        }
        i = skip_ws(b, i + 1);
        let value_end = skip_value(b, i).min(b.len());
        if key_is(raw_key, key) {
            if found.is_some() {
                return Member::Duplicate;
            }
            found = Some(&json[i..value_end]);
            if !may_name(&b[value_end..], key) {
                break;
            }
        }
        i = skip_ws(b, value_end);
        if b.get(i) == Some(&b',') {
            i += 1;
        } else {
            break;
        }
    }
    found.map_or(Member::Absent, Member::Raw)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_top_level_members_only() {
        let json = r#" { "content" : [ {"type":"text","text":"a \"resultType\": \\ } ] {"}, {"resultType":"nested"} ],
            "structuredContent": {"x": [1, 2, {"resultType": 3}]}, "n": -1.5e3, "t": true,
            "resultType" : "complete" , "_meta": {} } "#;
        assert_eq!(
            object_member(json, "resultType"),
            Member::Raw("\"complete\"")
        );
        assert_eq!(object_member(json, "n"), Member::Raw("-1.5e3"));
        assert_eq!(object_member(json, "t"), Member::Raw("true"));
        assert_eq!(object_member(json, "_meta"), Member::Raw("{}"));
        assert_eq!(object_member(json, "missing"), Member::Absent);
        assert_eq!(object_member("{}", "resultType"), Member::Absent);
        assert_eq!(object_member(" [1] ", "resultType"), Member::NotObject);
        assert_eq!(object_member("\"x\"", "resultType"), Member::NotObject);
        assert_eq!(
            object_member(r#"{"resultType":"a","resultType":"b"}"#, "resultType"),
            Member::Duplicate
        );
        assert_eq!(
            object_member(r#"{"result\u0054ype":null}"#, "resultType"),
            Member::Raw("null")
        );
        let big = format!(
            r#"{{"content":[{{"text":"{}"}}],"resultType":"task"}}"#,
            "x".repeat(70_000)
        );
        assert_eq!(object_member(&big, "resultType"), Member::Raw("\"task\""));
        // Escapes within and past the part of a string stepped over byte by byte.
        for at in [
            0, 1, 6, 7, 8, 9, 29, 30, 31, 32, 33, 40, 47, 48, 49, 63, 64, 65, 70,
        ] {
            let text = format!("{}\\\"}}{}", "y".repeat(at), "z".repeat(80 - at));
            let json = format!(r#"{{"a":"{text}","resultType":"r","b\"":1}}"#);
            assert_eq!(
                object_member(&json, "resultType"),
                Member::Raw("\"r\""),
                "{at}"
            );
            assert_eq!(object_member(&json, "b\""), Member::Raw("1"), "{at}");
        }
    }

    /// The walk stops early only where the rest of the text cannot name the member: a
    /// second one, plain or escaped, anywhere after the first, is still found.
    #[test]
    fn a_duplicate_is_found_after_the_member_whatever_precedes_it() {
        for (json, want) in [
            (r#"{"resultType":"a","b":{"c":"x"}}"#, Member::Raw("\"a\"")),
            (
                r#"{"resultType":"a","b":{"resultType":"x"},"resultType":"b"}"#,
                Member::Duplicate,
            ),
            (
                r#"{"resultType":"a","b":"T","result\u0054ype":"b"}"#,
                Member::Duplicate,
            ),
            (r#"{"resultType":"a","b":"\\"}"#, Member::Raw("\"a\"")),
            (r#"{"b":{"resultType":"x"}}"#, Member::Absent),
            (r#"{"b":"TTT","c":[1]}"#, Member::Absent),
            (r#"{"b":"\\","c":"resultType"}"#, Member::Absent),
            (r#"{"Type":1,"resultType":2}"#, Member::Raw("2")),
        ] {
            assert_eq!(object_member(json, "resultType"), want, "{json}");
        }
    }

    /// Past `LONG_TEXT` the text is searched for the whole key: a member is found when
    /// spelt plainly or with an escape anywhere, and absent however often the bytes of
    /// its name recur apart.
    #[test]
    fn long_texts_are_searched_for_the_whole_name() {
        let filler = "Type resultTyp esultType TTTT ".repeat(LONG_TEXT / 10);
        for (json, want) in [
            (
                format!(r#"{{"a":"{filler}","resultType":"r"}}"#),
                Member::Raw("\"r\""),
            ),
            (
                format!(r#"{{"a":"{filler}","result\u0054ype":"r"}}"#),
                Member::Raw("\"r\""),
            ),
            (
                format!(r#"{{"resultType":"r","a":"{filler}"}}"#),
                Member::Raw("\"r\""),
            ),
            (
                format!(r#"{{"resultType":"r","a":"{filler}","resultType":"s"}}"#),
                Member::Duplicate,
            ),
            (
                format!(r#"{{"resultType":"r","a":"{filler}","result\u0054ype":"s"}}"#),
                Member::Duplicate,
            ),
            (
                format!(r#"{{"a":"{filler}","b":{{"resultType":1}}}}"#),
                Member::Absent,
            ),
            (format!(r#"{{"a":"{filler}\\","b":1}}"#), Member::Absent),
            (format!(r#"{{"a":"{filler}"}}"#), Member::Absent),
        ] {
            assert!(json.len() >= LONG_TEXT);
            assert_eq!(object_member(&json, "resultType"), want);
        }
        let filler = filler.as_bytes();
        assert!(!may_name(filler, "resultType"));
        assert!(may_name(&[filler, b"resultType"].concat(), "resultType"));
        assert!(may_name(&[b"\\", filler].concat(), "resultType"));
    }

    /// Values nesting arrays and objects, with numbers, literals, whitespace and strings
    /// (escaped and not, short and long) at every offset from an eight-byte boundary:
    /// each member found is the one a full parse reads.
    #[test]
    fn skips_nested_values_at_every_alignment() {
        let parts = [
            "[1, 22, 333.5e-7, true, false, null]",
            "{\"k\" : [ {}, [], {\"x\":[[ ]]}, \"]}\" ], \"e\": \"\\\\\\\"\"}",
            "[\"a\\\\\", \"[{\",\"}]\\\"\", {\"\":-0}]",
        ];
        for pad in 0..24 {
            for long in [0, 60, 63, 64, 65, 127, 128, 129, 200] {
                let text = "t".repeat(long);
                for part in parts {
                    let json = format!(
                        "{{{ws}\"a\":{part},\"s\":\"{text}\",\"n\":{part}{ws},\"resultType\":{part}}}",
                        ws = " ".repeat(pad)
                    );
                    let value: serde_json::Value = serde_json::from_str(&json).expect(&json);
                    for key in ["a", "s", "n", "resultType"] {
                        let Member::Raw(raw) = object_member(&json, key) else {
                            panic!("{key} not found in {json}");
                        };
                        let parsed: serde_json::Value = serde_json::from_str(raw).expect(raw);
                        assert_eq!(parsed, value[key], "{key} in {json}");
                    }
                    assert_eq!(object_member(&json, "k"), Member::Absent, "{json}");
                }
            }
        }
    }
}
