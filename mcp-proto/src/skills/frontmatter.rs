//! The YAML frontmatter of a `SKILL.md`, read as JSON values so that it can be compared
//! field by field with the entry a server listed.
//!
//! Frontmatter is a small YAML document: a mapping of scalar fields, sometimes a nested
//! `metadata` mapping, a list or a folded description. This module reads that subset
//! and refuses the rest ([`FrontmatterError::Unsupported`]) rather than guessing: a
//! skill whose frontmatter cannot be read with certainty is not loaded.
//!
//! Read: block mappings (any depth up to [`MAX_DEPTH`]), block sequences of scalars or
//! of mappings, plain / single-quoted / double-quoted scalars (a plain scalar may go on
//! over more indented lines), literal (`|`) and folded (`>`) block scalars with `-` /
//! `+` chomping, flow sequences of scalars (`[a, "b"]`), the empty flow mapping `{}`,
//! and comments. Plain scalars resolve by the YAML 1.2 core schema: `null`, `~` and
//! nothing are null, `true` / `false` (three spellings each) booleans, decimal, `0o`
//! and `0x` integers and decimal floats numbers, everything else a string.
//!
//! Refused: anchors, aliases, tags, directives, multi-document streams, flow mappings
//! with members, nested flow collections, infinities and NaN (which JSON cannot carry),
//! tabs in indentation, and duplicate keys.

use serde_json::{Map, Number, Value};

/// Deepest nesting of mappings and sequences read.
pub const MAX_DEPTH: usize = 16;

/// Why a `SKILL.md` frontmatter could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrontmatterError {
    /// The file does not begin with a `---` line.
    #[error("the file does not begin with a --- frontmatter block")]
    Missing,
    /// The opening `---` has no closing `---` line.
    #[error("the frontmatter block is not closed by a --- line")]
    Unterminated,
    /// The frontmatter is longer than allowed.
    #[error("the frontmatter is longer than {0} bytes")]
    TooLong(usize),
    /// Line `line` (1-based, counted from the opening `---`) is not YAML this reader
    /// accepts.
    #[error("line {line}: {what}")]
    Unsupported {
        /// The line.
        line: usize,
        /// What is wrong with it.
        what: &'static str,
    },
    /// The frontmatter is not a mapping.
    #[error("the frontmatter is not a mapping")]
    NotMapping,
}

/// Splits a `SKILL.md` into its frontmatter text (between the `---` lines) and its body,
/// after a byte-order mark if there is one.
///
/// # Errors
/// [`FrontmatterError::Missing`], [`FrontmatterError::Unterminated`], or
/// [`FrontmatterError::TooLong`] when the block is longer than `max_bytes`.
pub fn split(text: &str, max_bytes: usize) -> Result<(&str, &str), FrontmatterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or(FrontmatterError::Missing)?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        let content = line.trim_end_matches(['\n', '\r']);
        if content.trim_end_matches([' ', '\t']) == "---" {
            let block = &rest[..offset];
            let block = block.strip_suffix('\n').unwrap_or(block);
            let block = block.strip_suffix('\r').unwrap_or(block);
            return Ok((block, &rest[offset + line.len()..]));
        }
        offset += line.len();
        if offset > max_bytes {
            return Err(FrontmatterError::TooLong(max_bytes));
        }
    }
    Err(FrontmatterError::Unterminated)
}

/// Reads the frontmatter of a `SKILL.md` (the whole file) as a JSON object.
///
/// ```
/// use mcp_proto::skills::frontmatter::parse;
/// use serde_json::json;
///
/// let md = "---\nname: pdf\ndescription: >\n  Fill\n  forms\nmetadata:\n  version: 2\n---\nBody";
/// let fm = parse(md, 65536).unwrap();
/// assert_eq!(serde_json::Value::Object(fm),
///            json!({"name": "pdf", "description": "Fill forms\n", "metadata": {"version": 2}}));
/// ```
///
/// # Errors
/// A [`FrontmatterError`] when the block is missing, too long, or not in the subset read.
pub fn parse(text: &str, max_bytes: usize) -> Result<Map<String, Value>, FrontmatterError> {
    let (block, _) = split(text, max_bytes)?;
    let mut lines = Vec::new();
    for (i, raw) in block.split('\n').enumerate() {
        let raw = raw.strip_suffix('\r').unwrap_or(raw);
        lines.push(Line::new(i + 2, raw)?);
    }
    let mut reader = Reader { lines, pos: 0 };
    reader.skip_blank();
    if reader.pos == reader.lines.len() {
        return Err(FrontmatterError::NotMapping);
    }
    let first = &reader.lines[reader.pos];
    if first.indent != 0 {
        return Err(unsupported(first.number, "the first field is indented"));
    }
    if first.text.starts_with("- ") || first.text == "-" {
        return Err(FrontmatterError::NotMapping);
    }
    let value = reader.mapping(0, 0)?;
    reader.skip_blank();
    if let Some(line) = reader.lines.get(reader.pos) {
        return Err(unsupported(line.number, "unexpected indentation"));
    }
    match value {
        Value::Object(map) => Ok(map),
        _ => Err(FrontmatterError::NotMapping),
    }
}

/// Whether two JSON values are the same frontmatter value: numbers by value (`1` and
/// `1.0` are equal), objects member by member with an absent member equal to `null`,
/// everything else exactly.
#[must_use]
pub fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => same_number(x, y),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_value(a, b))
        }
        (Value::Object(x), Value::Object(y)) => first_difference(x, y).is_none(),
        _ => a == b,
    }
}

/// The first field (in `a`'s order, then `b`'s) whose values differ, an absent field being
/// `null`.
#[must_use]
pub fn first_difference(a: &Map<String, Value>, b: &Map<String, Value>) -> Option<String> {
    let null = Value::Null;
    a.keys()
        .chain(b.keys().filter(|k| !a.contains_key(*k)))
        .find(|k| !same_value(a.get(*k).unwrap_or(&null), b.get(*k).unwrap_or(&null)))
        .cloned()
}

fn same_number(x: &Number, y: &Number) -> bool {
    if let (Some(a), Some(b)) = (x.as_i64(), y.as_i64()) {
        return a == b;
    }
    if let (Some(a), Some(b)) = (x.as_u64(), y.as_u64()) {
        return a == b;
    }
    match (x.as_f64(), y.as_f64()) {
        #[allow(clippy::float_cmp)]
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

fn unsupported(line: usize, what: &'static str) -> FrontmatterError {
    FrontmatterError::Unsupported { line, what }
}

struct Line<'a> {
    number: usize,
    indent: usize,
    /// Without indentation and without a trailing comment-free whitespace.
    text: &'a str,
    /// The line as written (for block scalars).
    raw: &'a str,
}

impl<'a> Line<'a> {
    fn new(number: usize, raw: &'a str) -> Result<Self, FrontmatterError> {
        let indent = raw.len() - raw.trim_start_matches(' ').len();
        let text = raw[indent..].trim_end();
        if text.starts_with('\t') {
            return Err(unsupported(number, "a tab in indentation"));
        }
        Ok(Line {
            number,
            indent,
            text,
            raw,
        })
    }

    fn blank(&self) -> bool {
        self.text.is_empty() || self.text.starts_with('#')
    }
}

struct Reader<'a> {
    lines: Vec<Line<'a>>,
    pos: usize,
}

impl<'a> Reader<'a> {
    fn skip_blank(&mut self) {
        while self.lines.get(self.pos).is_some_and(Line::blank) {
            self.pos += 1;
        }
    }

    /// The next non-blank line's indentation, if any.
    fn next_indent(&mut self) -> Option<usize> {
        self.skip_blank();
        self.lines.get(self.pos).map(|l| l.indent)
    }

    fn mapping(&mut self, indent: usize, depth: usize) -> Result<Value, FrontmatterError> {
        let mut map = Map::new();
        while self.next_indent() == Some(indent) {
            let line = &self.lines[self.pos];
            let number = line.number;
            let text = line.text;
            if text.starts_with("- ") || text == "-" {
                break;
            }
            let (key, rest) = split_key(text, number)?;
            self.pos += 1;
            let value = self.value_after(rest, indent, number, depth)?;
            if map.insert(key, value).is_some() {
                return Err(unsupported(number, "a duplicate key"));
            }
        }
        Ok(Value::Object(map))
    }

    fn sequence(&mut self, indent: usize, depth: usize) -> Result<Value, FrontmatterError> {
        let mut items = Vec::new();
        while self.next_indent() == Some(indent) {
            let line = &self.lines[self.pos];
            let number = line.number;
            let Some(rest) = line.text.strip_prefix('-') else {
                break;
            };
            if !(rest.is_empty() || rest.starts_with(' ')) {
                break;
            }
            let rest = rest.trim_start();
            self.pos += 1;
            if rest.is_empty() {
                items.push(self.nested(indent, number, depth)?);
            } else if looks_like_key(rest) {
                // A mapping in a sequence item: its first key sits after "- ", the others
                // align with it.
                let inner = indent + (line.text.len() - rest.len());
                let (key, value_text) = split_key(rest, number)?;
                let mut map = Map::new();
                let first = self.value_after(value_text, inner, number, depth + 1)?;
                map.insert(key, first);
                if self.next_indent() == Some(inner)
                    && let Value::Object(more) = self.mapping(inner, depth + 1)?
                {
                    for (k, v) in more {
                        if map.insert(k, v).is_some() {
                            return Err(unsupported(number, "a duplicate key"));
                        }
                    }
                }
                items.push(Value::Object(map));
            } else {
                items.push(self.inline(rest, indent, number, depth)?);
            }
        }
        Ok(Value::Array(items))
    }

    /// The value of a key whose text after `:` is `rest`.
    fn value_after(
        &mut self,
        rest: &'a str,
        indent: usize,
        number: usize,
        depth: usize,
    ) -> Result<Value, FrontmatterError> {
        let rest = strip_comment(rest).trim();
        if rest.is_empty() {
            return self.nested(indent, number, depth);
        }
        self.inline(rest, indent, number, depth)
    }

    /// A block under a key or a `-` with nothing after it: a mapping, a sequence, or null.
    fn nested(
        &mut self,
        indent: usize,
        number: usize,
        depth: usize,
    ) -> Result<Value, FrontmatterError> {
        if depth + 1 > MAX_DEPTH {
            return Err(unsupported(number, "nested too deep"));
        }
        match self.next_indent() {
            Some(i) if i > indent => {
                let line = &self.lines[self.pos];
                if line.text.starts_with("- ") || line.text == "-" {
                    self.sequence(i, depth + 1)
                } else {
                    self.mapping(i, depth + 1)
                }
            }
            // YAML allows a sequence under a key at the key's own indentation.
            Some(i) if i == indent && self.lines[self.pos].text.starts_with("- ") => {
                self.sequence(i, depth + 1)
            }
            _ => Ok(Value::Null),
        }
    }

    /// A value written on the line itself (`rest`, comment not yet removed for quoted
    /// scalars), with the continuation lines of a plain or block scalar.
    fn inline(
        &mut self,
        rest: &'a str,
        indent: usize,
        number: usize,
        depth: usize,
    ) -> Result<Value, FrontmatterError> {
        let first = rest.as_bytes()[0];
        match first {
            b'"' => {
                let (s, after) = double_quoted(rest, number)?;
                trailing(after, number)?;
                Ok(Value::String(s))
            }
            b'\'' => {
                let (s, after) = single_quoted(rest, number)?;
                trailing(after, number)?;
                Ok(Value::String(s))
            }
            b'|' | b'>' => self.block_scalar(rest, indent, number),
            b'[' => flow_sequence(strip_comment(rest).trim(), number, depth),
            b'{' => {
                if strip_comment(rest).trim() == "{}" {
                    Ok(Value::Object(Map::new()))
                } else {
                    Err(unsupported(number, "a flow mapping"))
                }
            }
            b'&' | b'*' | b'!' | b'%' | b'@' | b'`' => Err(unsupported(
                number,
                "an anchor, alias, tag or reserved indicator",
            )),
            _ => {
                let mut text = strip_comment(rest).trim().to_owned();
                // A plain scalar goes on over more indented lines, folded with spaces.
                let mut continued = false;
                while let Some(line) = self.lines.get(self.pos)
                    && line.indent > indent
                    && !line.text.is_empty()
                {
                    if line.text.starts_with('#') {
                        break;
                    }
                    text.push(' ');
                    text.push_str(strip_comment(line.text).trim());
                    self.pos += 1;
                    continued = true;
                }
                if find_colon(&text).is_some() {
                    return Err(unsupported(number, "': ' inside a plain scalar"));
                }
                if continued {
                    return Ok(Value::String(text));
                }
                plain(&text, number)
            }
        }
    }

    fn block_scalar(
        &mut self,
        header: &str,
        indent: usize,
        number: usize,
    ) -> Result<Value, FrontmatterError> {
        let header = strip_comment(header).trim();
        let literal = header.starts_with('|');
        let chomp = match &header[1..] {
            "" => Chomp::Clip,
            "-" => Chomp::Strip,
            "+" => Chomp::Keep,
            _ => return Err(unsupported(number, "a block scalar indentation indicator")),
        };
        let mut block: Vec<&str> = Vec::new();
        let mut block_indent = None;
        while let Some(line) = self.lines.get(self.pos) {
            if line.text.is_empty() {
                block.push("");
                self.pos += 1;
                continue;
            }
            if line.indent <= indent {
                break;
            }
            let bi = *block_indent.get_or_insert(line.indent);
            if line.indent < bi {
                return Err(unsupported(
                    line.number,
                    "a block scalar line indented less",
                ));
            }
            block.push(&line.raw[bi..]);
            self.pos += 1;
        }
        // Trailing blank lines belong to the chomping, not the content.
        let trailing_blank = block.iter().rev().take_while(|l| l.is_empty()).count();
        let content = &block[..block.len() - trailing_blank];
        let mut out = String::new();
        if literal {
            out = content.join("\n");
        } else {
            let mut previous_blank = true;
            for line in content {
                if line.is_empty() {
                    out.push('\n');
                    previous_blank = true;
                } else {
                    if !previous_blank && !out.ends_with('\n') {
                        out.push(' ');
                    }
                    out.push_str(line);
                    previous_blank = false;
                }
            }
        }
        match chomp {
            Chomp::Strip => {}
            Chomp::Clip if !content.is_empty() => out.push('\n'),
            Chomp::Clip => {}
            Chomp::Keep => {
                if !content.is_empty() {
                    out.push('\n');
                }
                for _ in 0..trailing_blank {
                    out.push('\n');
                }
            }
        }
        Ok(Value::String(out))
    }
}

enum Chomp {
    Clip,
    Strip,
    Keep,
}

fn looks_like_key(text: &str) -> bool {
    if text.starts_with(['"', '\'', '[', '{', '|', '>']) {
        return false;
    }
    find_colon(text).is_some()
}

/// The offset of the `:` that ends a plain key (followed by a space or the end), if it
/// comes before any ` #` comment.
fn find_colon(text: &str) -> Option<usize> {
    let b = text.as_bytes();
    for i in 0..b.len() {
        if b[i] == b'#' && i > 0 && b[i - 1] == b' ' {
            return None;
        }
        if b[i] == b':' && (i + 1 == b.len() || b[i + 1] == b' ') {
            return Some(i);
        }
    }
    None
}

fn split_key(text: &str, number: usize) -> Result<(String, &str), FrontmatterError> {
    if text.starts_with('"') {
        let (key, after) = double_quoted(text, number)?;
        let after = after
            .strip_prefix(':')
            .ok_or(unsupported(number, "a quoted key without ':'"))?;
        return Ok((key, after));
    }
    if text.starts_with('\'') {
        let (key, after) = single_quoted(text, number)?;
        let after = after
            .strip_prefix(':')
            .ok_or(unsupported(number, "a quoted key without ':'"))?;
        return Ok((key, after));
    }
    if text.starts_with(['?', '&', '*', '!', '[', '{', '%', '@', '`', '|', '>']) {
        return Err(unsupported(number, "a complex key"));
    }
    let colon = find_colon(text).ok_or(unsupported(number, "a line that is not key: value"))?;
    let key = text[..colon].trim_end();
    if key.is_empty() {
        return Err(unsupported(number, "an empty key"));
    }
    Ok((key.to_owned(), &text[colon + 1..]))
}

/// `text` up to a ` #` comment (outside quotes: only called on plain text).
fn strip_comment(text: &str) -> &str {
    if text.starts_with('#') {
        return "";
    }
    match text.find(" #").or_else(|| text.find("\t#")) {
        Some(i) => &text[..i],
        None => text,
    }
}

fn trailing(after: &str, number: usize) -> Result<(), FrontmatterError> {
    let after = after.trim();
    if after.is_empty() || after.starts_with('#') {
        Ok(())
    } else {
        Err(unsupported(number, "text after a quoted scalar"))
    }
}

fn double_quoted(text: &str, number: usize) -> Result<(String, &str), FrontmatterError> {
    let mut out = String::new();
    let mut chars = text[1..].char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Ok((out, &text[i + 2..])),
            '\\' => {
                let (_, e) = chars
                    .next()
                    .ok_or(unsupported(number, "an unterminated string"))?;
                let simple = match e {
                    '0' => Some('\0'),
                    'a' => Some('\u{7}'),
                    'b' => Some('\u{8}'),
                    't' | '\t' => Some('\t'),
                    'n' => Some('\n'),
                    'v' => Some('\u{b}'),
                    'f' => Some('\u{c}'),
                    'r' => Some('\r'),
                    'e' => Some('\u{1b}'),
                    ' ' => Some(' '),
                    '"' => Some('"'),
                    '/' => Some('/'),
                    '\\' => Some('\\'),
                    'N' => Some('\u{85}'),
                    '_' => Some('\u{a0}'),
                    'L' => Some('\u{2028}'),
                    'P' => Some('\u{2029}'),
                    _ => None,
                };
                if let Some(s) = simple {
                    out.push(s);
                    continue;
                }
                let len = match e {
                    'x' => 2,
                    'u' => 4,
                    'U' => 8,
                    _ => return Err(unsupported(number, "an unknown escape")),
                };
                let mut code = 0u32;
                for _ in 0..len {
                    let (_, h) = chars.next().ok_or(unsupported(number, "a short escape"))?;
                    let d = h
                        .to_digit(16)
                        .ok_or(unsupported(number, "a bad hex escape"))?;
                    code = code * 16 + d;
                }
                out.push(char::from_u32(code).ok_or(unsupported(number, "a bad code point"))?);
            }
            _ => out.push(c),
        }
    }
    Err(unsupported(number, "a string not closed on its line"))
}

fn single_quoted(text: &str, number: usize) -> Result<(String, &str), FrontmatterError> {
    let mut out = String::new();
    let body = &text[1..];
    let mut iter = body.char_indices().peekable();
    while let Some((i, c)) = iter.next() {
        if c == '\'' {
            if iter.peek().map(|(_, c)| *c) == Some('\'') {
                iter.next();
                out.push('\'');
                continue;
            }
            return Ok((out, &body[i + 1..]));
        }
        out.push(c);
    }
    Err(unsupported(number, "a string not closed on its line"))
}

fn flow_sequence(text: &str, number: usize, depth: usize) -> Result<Value, FrontmatterError> {
    if depth + 1 > MAX_DEPTH {
        return Err(unsupported(number, "nested too deep"));
    }
    let inner = text
        .strip_prefix('[')
        .and_then(|t| t.strip_suffix(']'))
        .ok_or(unsupported(
            number,
            "a flow sequence not closed on its line",
        ))?;
    let mut items = Vec::new();
    let mut rest = inner.trim();
    while !rest.is_empty() {
        let (value, after) = match rest.as_bytes()[0] {
            b'"' => {
                let (s, after) = double_quoted(rest, number)?;
                (Value::String(s), after)
            }
            b'\'' => {
                let (s, after) = single_quoted(rest, number)?;
                (Value::String(s), after)
            }
            b'[' | b'{' => return Err(unsupported(number, "a nested flow collection")),
            _ => {
                let end = rest.find(',').unwrap_or(rest.len());
                (plain(rest[..end].trim(), number)?, &rest[end..])
            }
        };
        items.push(value);
        let after = after.trim_start();
        rest = match after.strip_prefix(',') {
            Some(r) => r.trim_start(),
            None if after.is_empty() => after,
            None => return Err(unsupported(number, "text after a flow item")),
        };
    }
    Ok(Value::Array(items))
}

/// A plain scalar resolved by the YAML 1.2 core schema.
fn plain(text: &str, number: usize) -> Result<Value, FrontmatterError> {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Ok(Value::Null),
        "true" | "True" | "TRUE" => return Ok(Value::Bool(true)),
        "false" | "False" | "FALSE" => return Ok(Value::Bool(false)),
        _ => {}
    }
    let lower = text.to_ascii_lowercase();
    let unsigned = lower.trim_start_matches(['+', '-']);
    if matches!(unsigned, ".inf" | ".nan") {
        return Err(unsupported(number, "an infinity or NaN"));
    }
    if let Some(octal) = text.strip_prefix("0o")
        && !octal.is_empty()
        && octal.bytes().all(|b| (b'0'..=b'7').contains(&b))
    {
        return u64::from_str_radix(octal, 8)
            .map(|n| Value::Number(n.into()))
            .map_err(|_| unsupported(number, "an integer out of range"));
    }
    if let Some(hex) = text.strip_prefix("0x")
        && !hex.is_empty()
        && hex.bytes().all(|b| b.is_ascii_hexdigit())
    {
        return u64::from_str_radix(hex, 16)
            .map(|n| Value::Number(n.into()))
            .map_err(|_| unsupported(number, "an integer out of range"));
    }
    if is_decimal_int(text) {
        if let Ok(n) = text.parse::<i64>() {
            return Ok(Value::Number(n.into()));
        }
        if let Ok(n) = text.trim_start_matches('+').parse::<u64>() {
            return Ok(Value::Number(n.into()));
        }
    }
    if is_float(text) {
        let f: f64 = text
            .parse()
            .map_err(|_| unsupported(number, "a bad number"))?;
        return Number::from_f64(f)
            .map(Value::Number)
            .ok_or(unsupported(number, "a number out of range"));
    }
    if text.starts_with(['&', '*', '!', '%', '@', '`']) {
        return Err(unsupported(
            number,
            "an anchor, alias, tag or reserved indicator",
        ));
    }
    Ok(Value::String(text.to_owned()))
}

fn is_decimal_int(text: &str) -> bool {
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// `[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`
fn is_float(text: &str) -> bool {
    let s = text.strip_prefix(['-', '+']).unwrap_or(text).as_bytes();
    let mut i = 0;
    let int_digits = s.iter().take_while(|b| b.is_ascii_digit()).count();
    i += int_digits;
    let mut frac_digits = 0;
    if s.get(i) == Some(&b'.') {
        i += 1;
        frac_digits = s[i..].iter().take_while(|b| b.is_ascii_digit()).count();
        i += frac_digits;
    }
    if int_digits == 0 && frac_digits == 0 {
        return false;
    }
    if matches!(s.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(s.get(i), Some(b'-' | b'+')) {
            i += 1;
        }
        let exp = s[i..].iter().take_while(|b| b.is_ascii_digit()).count();
        if exp == 0 {
            return false;
        }
        i += exp;
    }
    i == s.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fm(yaml: &str) -> Result<Value, FrontmatterError> {
        parse(&format!("---\n{yaml}\n---\nbody\n"), 65536).map(Value::Object)
    }

    #[test]
    fn reads_the_common_shapes() {
        let v = fm("name: pdf-processing\n\
                    description: \"Extract: fill \\u00e9\"\n\
                    license: 'it''s MIT'\n\
                    # a comment\n\
                    metadata:\n  version: \"2.1.0\"\n  build: 7\n  ratio: 0.5\n  flag: true\n  none: ~\n\
                    allowed-tools: [Read, \"Write\"]\n\
                    tags:\n  - a\n  - b # note\n\
                    people:\n- name: x\n  role: y\n\
                    empty: {}")
        .unwrap();
        assert_eq!(
            v,
            json!({
                "name": "pdf-processing", "description": "Extract: fill é", "license": "it's MIT",
                "metadata": {"version": "2.1.0", "build": 7, "ratio": 0.5, "flag": true, "none": null},
                "allowed-tools": ["Read", "Write"], "tags": ["a", "b"],
                "people": [{"name": "x", "role": "y"}], "empty": {}
            })
        );
    }

    #[test]
    fn block_scalars_and_folded_plain_scalars() {
        let v = fm(
            "a: |\n  one\n  two\n\nb: >-\n  one\n  two\n\n  three\nc: plain\n  goes on\nd: |+\n  x",
        )
        .unwrap();
        assert_eq!(
            v,
            json!({"a": "one\ntwo\n", "b": "one two\nthree", "c": "plain goes on", "d": "x\n"})
        );
    }

    #[test]
    fn refuses_what_it_cannot_read_for_sure() {
        for bad in [
            "a: &x 1",
            "a: *x",
            "a: !!str 1",
            "a: {b: 1}",
            "a: 1\na: 2",
            "a: .inf",
            "a: [[1]]",
            "a: \"open",
            "? complex",
            "- item",
            "not a mapping",
        ] {
            assert!(fm(bad).is_err(), "{bad:?} was accepted");
        }
        assert_eq!(parse("no frontmatter", 100), Err(FrontmatterError::Missing));
        assert_eq!(
            parse("---\nname: x\n", 100),
            Err(FrontmatterError::Unterminated)
        );
        let long = format!("---\nname: {}\n---\n", "x".repeat(200));
        assert_eq!(parse(&long, 100), Err(FrontmatterError::TooLong(100)));
    }

    #[test]
    fn crlf_and_a_byte_order_mark() {
        let v = parse(
            "\u{feff}---\r\nname: a\r\ndescription: b\r\n---\r\nbody",
            100,
        )
        .unwrap();
        assert_eq!(Value::Object(v), json!({"name": "a", "description": "b"}));
    }

    #[test]
    fn comparison_by_value() {
        let a = json!({"n": 1, "m": {"x": null}})
            .as_object()
            .unwrap()
            .clone();
        let b = json!({"n": 1.0, "m": {}}).as_object().unwrap().clone();
        assert_eq!(first_difference(&a, &b), None);
        let c = json!({"n": "1"}).as_object().unwrap().clone();
        assert_eq!(first_difference(&a, &c), Some("m".into()));
    }
}
