//! What a server wrote, made safe to show on a terminal.
//!
//! Servers choose the text of tool results, resources, prompts, descriptions, error
//! messages, elicitation forms, progress messages and whatever they write to stderr. Shown
//! as it is, an escape sequence in it could move the cursor, clear the screen, set the
//! window title, hide or rewrite text the CLI printed, or (on some terminals) answer back
//! into the input. Every place text output shows server text passes it through [`clean`]
//! first; JSON output ([`json`]) keeps every value exact and escapes what a terminal could
//! act on.
//!
//! The rule ([`clean`]): `\n` and `\t` stay, and so does a `\r` right before a `\n`. Every
//! other character a terminal treats as a control is made visible instead of passed on:
//!
//! * the other C0 controls in caret notation, as `cat -v` shows them: ESC (the start of
//!   every ANSI CSI and OSC sequence) as `^[`, BEL as `^G`, a lone CR as `^M`, NUL as
//!   `^@`; DEL as `^?`;
//! * the C1 controls (U+0080 to U+009F, among them the one-character CSI U+009B and OSC
//!   U+009D) as `\u{9b}`;
//! * the bidirectional embedding, override and isolate controls (U+202A to U+202E,
//!   U+2066 to U+2069), which reorder the text shown around them, as `\u{202e}`.
//!
//! With the introducer made visible, what follows it (`[31m`, `]0;title`) is plain text.

use std::borrow::Cow;

/// Where text is shown, which decides what happens to line breaks and tabs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    /// Free text: `\n`, `\t` and a `\r` right before a `\n` stay.
    Lines,
    /// A value that is one line (a name, a URI): they are made visible too, so that a
    /// server cannot make one value look like two lines of the CLI's own output.
    OneLine,
    /// Free text shown on one line (a table's wrapped last column): each becomes a space.
    Folded,
}

/// Whether `c`, followed by `next`, is shown as it is in `place`.
fn shown(c: char, next: Option<char>, place: Place) -> bool {
    match (c, place) {
        ('\n' | '\t', Place::Lines) => true,
        ('\r', Place::Lines) => next == Some('\n'),
        (c, _) => !c.is_control() && !is_bidi_control(c),
    }
}

/// The bidirectional formatting characters that reorder the text around them
/// (embeddings, overrides, isolates).
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// How a character that is not [`shown`] is written instead.
fn push_visible(out: &mut String, c: char) {
    match u32::from(c) {
        n @ 0..=0x1f => {
            out.push('^');
            out.push(char::from(b'@' + n as u8));
        }
        0x7f => out.push_str("^?"),
        n => out.push_str(&format!("\\u{{{n:x}}}")),
    }
}

/// `text` with every control character but `\n` and `\t` made visible (see the module).
pub fn clean(text: &str) -> Cow<'_, str> {
    made_safe(text, Place::Lines)
}

/// A value that is one line (a name, a URI, a role, a table's leading cell): as [`clean`],
/// with line breaks and tabs made visible too (`^J`, `^I`, `^M`).
pub fn one_line(text: &str) -> Cow<'_, str> {
    made_safe(text, Place::OneLine)
}

/// Free text shown on one line (a table's last column): as [`clean`], with each line
/// break and tab made a space.
pub fn folded(text: &str) -> Cow<'_, str> {
    made_safe(text, Place::Folded)
}

fn made_safe(text: &str, place: Place) -> Cow<'_, str> {
    let mut chars = text.char_indices().peekable();
    let first = loop {
        match chars.next() {
            None => return Cow::Borrowed(text),
            Some((i, c)) if !shown(c, chars.peek().map(|&(_, n)| n), place) => break i,
            Some(_) => {}
        }
    };
    let mut out = String::with_capacity(text.len() + 16);
    out.push_str(&text[..first]);
    let mut chars = text[first..].chars().peekable();
    while let Some(c) = chars.next() {
        if shown(c, chars.peek().copied(), place) {
            out.push(c);
        } else if place == Place::Folded && matches!(c, '\n' | '\t' | '\r') {
            out.push(' ');
        } else {
            push_visible(&mut out, c);
        }
    }
    Cow::Owned(out)
}

/// A JSON document (as `serde_json` writes it) with DEL, the C1 controls and the
/// bidirectional controls escaped as `\uXXXX`, which `serde_json` leaves as they are:
/// the same values, safe on a terminal. Outside strings a JSON document holds nothing
/// but ASCII, so every such character is inside a string.
pub fn json(document: &str) -> Cow<'_, str> {
    let escaped =
        |c: char| c == '\u{7f}' || ('\u{80}'..='\u{9f}').contains(&c) || is_bidi_control(c);
    if !document.contains(escaped) {
        return Cow::Borrowed(document);
    }
    let mut out = String::with_capacity(document.len() + 16);
    for c in document.chars() {
        if escaped(c) {
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// JSON text a server wrote, indented as `serde_json::to_string_pretty` indents it, and
/// written to `out` as it is read: one pass, nothing parsed into values, so a result of
/// millions of small objects costs no more memory than its text (read into values, each
/// `{"":0}` takes a map node of hundreds of bytes). Key order, numbers and escapes stay as
/// the server wrote them, and each string is made safe as [`json`] does. `raw` is one JSON
/// value (a `RawValue`'s text); whitespace between its tokens is dropped.
pub fn write_pretty(out: &mut impl std::io::Write, raw: &str) -> std::io::Result<()> {
    let bytes = raw.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    let newline = |out: &mut dyn std::io::Write, depth: usize| -> std::io::Result<()> {
        out.write_all(b"\n")?;
        for _ in 0..depth {
            out.write_all(b"  ")?;
        }
        Ok(())
    };
    while i < bytes.len() {
        let c = bytes[i];
        match c {
            b'"' => {
                let start = i;
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                let end = (i + 1).min(bytes.len());
                out.write_all(json(raw.get(start..end).unwrap_or(&raw[start..])).as_bytes())?;
                i = end;
                continue;
            }
            b'{' | b'[' => {
                let close = if c == b'{' { b'}' } else { b']' };
                let next = i
                    + 1
                    + bytes[i + 1..]
                        .iter()
                        .take_while(|b| b.is_ascii_whitespace())
                        .count();
                if bytes.get(next) == Some(&close) {
                    out.write_all(&[c, close])?;
                    i = next + 1;
                    continue;
                }
                out.write_all(&[c])?;
                depth += 1;
                newline(out, depth)?;
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                newline(out, depth)?;
                out.write_all(&[c])?;
            }
            b',' => {
                out.write_all(b",")?;
                newline(out, depth)?;
            }
            b':' => out.write_all(b": ")?,
            c if c.is_ascii_whitespace() => {}
            _ => {
                // A number or a literal, up to the next token or space.
                let len = bytes[i..]
                    .iter()
                    .take_while(|b| !b"{}[],:\" \t\r\n".contains(b))
                    .count();
                out.write_all(&bytes[i..i + len])?;
                i += len;
                continue;
            }
        }
        i += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `write_pretty` writes for `raw`.
    fn pretty(raw: &str) -> String {
        let mut out = Vec::new();
        write_pretty(&mut out, raw).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn verbatim_json_is_indented_as_serde_json_indents_it() {
        for raw in [
            r#"{"a":1,"b":[true,null,-1.5,"x"],"c":{},"d":[],"e":{"f":[{"g":"h"}]}}"#,
            r#"[ 1 , { "k" : "v \" ]} " } , [ ] ,{ } ]"#,
            r#""just text""#,
            "42",
            r#"{"nested":[[[[]]]],"s":"\u00e9\n"}"#,
        ] {
            let value: serde_json::Value = serde_json::from_str(raw).unwrap();
            let expected = serde_json::to_string_pretty(&value).unwrap();
            // serde_json writes the strings it parsed again; these keep their escapes.
            let expected = expected.replace("é\\n", "\\u00e9\\n");
            assert_eq!(pretty(raw), expected, "{raw}");
        }
        // Numbers as written, and the server's key order (a value's map would sort it).
        assert_eq!(pretty("[-1.5e3]"), "[\n  -1.5e3\n]");
        assert_eq!(pretty(r#"{"z":1,"a":2}"#), "{\n  \"z\": 1,\n  \"a\": 2\n}");
        // Characters a terminal acts on are escaped inside strings, as `json` does.
        assert_eq!(
            pretty("[\"\u{202e}x\u{9b}\"]"),
            "[\n  \"\\u202ex\\u009b\"\n]"
        );
    }

    #[test]
    fn one_line_values_cannot_break_the_line() {
        assert_eq!(one_line("bad\nfake"), "bad^Jfake");
        assert_eq!(one_line("a://x\r\nb://forged\tz"), "a://x^M^Jb://forged^Iz");
        assert_eq!(one_line("\u{1b}[2J"), "^[[2J");
        assert!(matches!(one_line("plain"), Cow::Borrowed("plain")));
        assert_eq!(
            folded("Adds.\n\nArgs:\ta\r\nb\u{1b}"),
            "Adds.  Args: a  b^["
        );
    }

    #[test]
    fn plain_text_is_borrowed() {
        let text = "résumé\tok\r\nnext line\n";
        assert!(matches!(clean(text), Cow::Borrowed(t) if t == text));
    }

    #[test]
    fn escape_sequences_are_made_visible() {
        let text = "a\u{1b}[2J\u{1b}]0;title\u{7}b\u{0}c\u{8}d\u{7f}";
        assert_eq!(clean(text), "a^[[2J^[]0;title^Gb^@c^Hd^?");
    }

    #[test]
    fn a_lone_carriage_return_is_made_visible() {
        assert_eq!(clean("shown\rhidden\r\nend\r"), "shown^Mhidden\r\nend^M");
    }

    #[test]
    fn c1_and_bidirectional_controls_are_made_visible() {
        assert_eq!(
            clean("x\u{9b}31my\u{9d}0;t\u{9c} \u{202e}cba\u{2066}"),
            "x\\u{9b}31my\\u{9d}0;t\\u{9c} \\u{202e}cba\\u{2066}"
        );
    }

    #[test]
    fn json_keeps_its_values() {
        let value = serde_json::json!({"text": "a\u{1b}b\u{9b}c\u{202e}d\u{7f}é"});
        let written = serde_json::to_string(&value).unwrap();
        let safe = json(&written);
        assert_eq!(safe, r#"{"text":"a\u001bb\u009bc\u202ed\u007fé"}"#);
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&safe).unwrap(),
            value
        );
        assert!(matches!(json("{\"a\":\"é\"}"), Cow::Borrowed(_)));
    }
}
