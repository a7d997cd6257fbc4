//! Entry points for the fuzz targets in `fuzz/` that need this crate (the wire-log
//! redaction); compiled always so CI keeps them building.

use std::sync::{Arc, Mutex};

use mcp_proto::fuzzing::server::Choices;

use crate::options::Direction;
use crate::wire_log::{
    CHALLENGE_HEADERS, ChannelLog, HttpLog, MAX_CHECKED_NAME, MAX_LOG_LINE, REDACTED,
    SECRET_HEADER_PARTS, SECRET_HEADERS, SECRET_PARAM_PARTS, SECRET_PARAMS, is_secret_header,
    is_secret_param, redact_header, redact_request_line,
};

/// Header names the fuzzed logs hide besides the built-in ones.
const EXTRA: &[&str] = &["X-Tenant-Key", "Region"];

/// What stands for the secret in the second rendering of a message: bytes no other part
/// of a generated message contains.
const MARKER: &[u8] = b"\x01zQsecretQz\x02";

type Lines = Vec<(Direction, Vec<u8>)>;

/// A wire log recording every line, and what it recorded.
fn recorder() -> (Option<crate::WireLog>, Arc<Mutex<Lines>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let log: crate::WireLog = Box::new(move |dir, line| {
        if let Ok(mut s) = sink.lock() {
            s.push((dir, line.to_vec()));
        }
    });
    (Some(log), seen)
}

fn taken(seen: &Arc<Mutex<Lines>>) -> Lines {
    seen.lock()
        .map(|mut s| std::mem::take(&mut *s))
        .unwrap_or_default()
}

fn extra() -> Vec<String> {
    EXTRA.iter().map(|s| (*s).to_owned()).collect()
}

/// The wire-log redaction. The first byte picks the mode (bit 0) and piece sizes.
///
/// * Arbitrary bytes (bit 0 clear): [`redact_header`] and [`redact_request_line`] must
///   be idempotent and hide what their rules say (checked against an independent
///   reading of the line); an [`HttpLog`] and a [`ChannelLog`] must log the same lines
///   whether the bytes come whole or in pieces, none longer than [`MAX_LOG_LINE`].
/// * A structured message (bit 0 set, built by `message`): an HTTP request or response
///   whose credential headers and secret query parameters hold a secret. Logged whole,
///   in pieces, sent or received, the log must be the same whatever the secret is (the
///   fuzzed one or a marker), and must never contain the marker; the same holds for a
///   log that appears in the middle of a response.
pub fn redactor(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let chunk = 1 + usize::from(mode >> 2);
    if mode & 1 == 0 {
        arbitrary(rest, chunk);
    } else {
        structured(mode, rest, chunk);
    }
}

fn arbitrary(data: &[u8], chunk: usize) {
    let h = redact_header(data);
    assert_eq!(redact_header(&h), h, "redact_header is not idempotent");
    if let Some(colon) = data.iter().position(|b| *b == b':')
        && is_secret_header(&data[..colon], &[])
    {
        let mut expected = data[..=colon].to_vec();
        expected.extend_from_slice(b" ");
        expected.extend_from_slice(REDACTED.as_bytes());
        assert_eq!(&*h, &expected[..], "a secret header shown");
    } else {
        assert_eq!(&*h, data, "a plain header changed");
    }

    let q = redact_request_line(data);
    assert_eq!(
        redact_request_line(&q),
        q,
        "redact_request_line is not idempotent"
    );
    check_query(&q);
    if !data.contains(&b'?') {
        assert_eq!(q, data, "a line without a query changed");
    }

    let whole = http_log(&[data], false);
    let split = http_log(&data.chunks(chunk).collect::<Vec<_>>(), false);
    assert_eq!(whole, split, "the HTTP log depends on chunking");
    let bytes = http_log(&data.chunks(1).collect::<Vec<_>>(), false);
    assert_eq!(whole, bytes, "the HTTP log depends on chunking (bytes)");
    for (_, line) in &whole {
        assert!(line.len() <= MAX_LOG_LINE, "a log line over the maximum");
    }
    let received = channel_received(&data.chunks(chunk).collect::<Vec<_>>());
    assert_eq!(
        received,
        http_log(&[data], false)
            .into_iter()
            .map(|(_, l)| (Direction::Received, l))
            .collect::<Vec<_>>(),
        "ChannelLog and HttpLog differ"
    );
}

/// Reads a redacted start line independently of the redactor: every secret parameter
/// of the query has an empty or redacted value.
fn check_query(line: &[u8]) {
    let Some(space) = line.iter().position(|b| *b == b' ') else {
        return;
    };
    let target = &line[space + 1..];
    let target = target
        .split(|b| *b == b' ' || *b == b'#')
        .next()
        .unwrap_or_default();
    let Some(q) = target.iter().position(|b| *b == b'?') else {
        return;
    };
    for param in target[q + 1..].split(|b| *b == b'&') {
        let Some(eq) = param.iter().position(|b| *b == b'=') else {
            continue;
        };
        let (name, value) = (&param[..eq], &param[eq + 1..]);
        if is_secret_param(name) {
            assert!(
                value.is_empty() || value == REDACTED.as_bytes(),
                "secret parameter {} shown: {}",
                String::from_utf8_lossy(name),
                String::from_utf8_lossy(value)
            );
        }
    }
}

/// What an [`HttpLog`] hiding [`EXTRA`] logs of `pieces` (then the end of the message).
fn http_log(pieces: &[&[u8]], with_extra: bool) -> Lines {
    let (mut log, seen) = recorder();
    let mut l = if with_extra {
        HttpLog::redacting(extra())
    } else {
        HttpLog::new()
    };
    for p in pieces {
        l.feed(&mut log, Direction::Received, p);
    }
    l.finish(&mut log, Direction::Received);
    taken(&seen)
}

/// What a [`ChannelLog`] logs of `pieces` received.
fn channel_received(pieces: &[&[u8]]) -> Lines {
    let (mut log, seen) = recorder();
    let mut c = ChannelLog::http();
    for p in pieces {
        c.received(&mut log, p);
    }
    c.finish(&mut log);
    taken(&seen)
}

/// A generated HTTP message with secret slots: rendered with any secret.
struct Message {
    /// Literal parts and, between them, the secret.
    parts: Vec<Vec<u8>>,
    /// It is a request (else a response).
    request: bool,
}

impl Message {
    fn render(&self, secret: &[u8]) -> Vec<u8> {
        self.parts.join(secret)
    }

    fn slots(&self) -> usize {
        self.parts.len() - 1
    }
}

/// Bytes for a value or name: any byte but those in `not`.
fn clean(bytes: &[u8], not: &[u8]) -> Vec<u8> {
    bytes
        .iter()
        .map(|b| if not.contains(b) { b'_' } else { *b })
        .collect()
}

/// Flips the case of the letters of `name` that `mask` picks.
fn flip_case(name: &str, mask: u64) -> Vec<u8> {
    name.bytes()
        .enumerate()
        .map(|(i, b)| {
            if mask >> (i % 64) & 1 == 1 {
                if b.is_ascii_lowercase() {
                    b.to_ascii_uppercase()
                } else {
                    b.to_ascii_lowercase()
                }
            } else {
                b
            }
        })
        .collect()
}

/// A header name: a listed one (exact, containing a part, a challenge header, an extra
/// one) in mixed case, an over-long one, or arbitrary.
fn header_name(c: &mut Choices<'_>) -> Vec<u8> {
    let pick = c.byte();
    let i = usize::from(c.byte());
    let mask = c.u64();
    let name = match pick % 7 {
        0 => flip_case(SECRET_HEADERS[i % SECRET_HEADERS.len()], mask),
        1 => {
            let part = SECRET_HEADER_PARTS[i % SECRET_HEADER_PARTS.len()];
            flip_case(&format!("X-{part}-Id"), mask)
        }
        2 => flip_case(CHALLENGE_HEADERS[i % CHALLENGE_HEADERS.len()], mask),
        3 => flip_case(EXTRA[i % EXTRA.len()], mask),
        4 => vec![b'x'; MAX_CHECKED_NAME + 1 + i % 4],
        _ => {
            let n = 1 + i % 24;
            clean(c.bytes(n), b":\r\n \t")
        }
    };
    let secret = is_secret_header(&name, &extra());
    match pick % 7 {
        0 | 1 | 3 | 4 => assert!(secret, "{} not secret", String::from_utf8_lossy(&name)),
        2 => assert!(!secret, "{} secret", String::from_utf8_lossy(&name)),
        _ => {}
    }
    name
}

/// A query parameter name: a listed one, one containing a part, either with some bytes
/// `%XX`-escaped, an over-long one, or arbitrary.
fn param_name(c: &mut Choices<'_>) -> Vec<u8> {
    let pick = c.byte();
    let i = usize::from(c.byte());
    let mask = c.u64();
    let listed = match pick % 5 {
        0 => Some(SECRET_PARAMS[i % SECRET_PARAMS.len()].to_owned()),
        1 => Some(format!(
            "x_{}_y",
            SECRET_PARAM_PARTS[i % SECRET_PARAM_PARTS.len()]
        )),
        _ => None,
    };
    let name = match (listed, pick % 5) {
        (Some(n), _) => {
            let mut out = Vec::new();
            for (j, b) in flip_case(&n, mask).into_iter().enumerate() {
                if mask >> (63 - j % 64) & 1 == 1 {
                    out.extend_from_slice(format!("%{b:02X}").as_bytes());
                } else {
                    out.push(b);
                }
            }
            out
        }
        (None, 2) => vec![b'p'; MAX_CHECKED_NAME + 1 + i % 4],
        _ => {
            let n = 1 + i % 16;
            clean(c.bytes(n), b"&= #\r\n")
        }
    };
    if pick % 5 < 3 {
        assert!(
            is_secret_param(&name),
            "{} not secret",
            String::from_utf8_lossy(&name)
        );
    }
    name
}

/// Builds a message from choices.
fn message(c: &mut Choices<'_>) -> Message {
    let flags = c.byte();
    let request = flags & 1 == 0;
    let eol: &[u8] = if flags & 2 == 0 { b"\r\n" } else { b"\n" };
    let mut parts = vec![Vec::new()];
    let push = |parts: &mut Vec<Vec<u8>>, bytes: &[u8]| {
        if let Some(last) = parts.last_mut() {
            last.extend_from_slice(bytes);
        }
    };
    if request {
        push(&mut parts, if flags & 4 == 0 { b"GET " } else { b"POST " });
        let len = usize::from(c.byte() % 8);
        let path = clean(c.bytes(len), b" ?#\r\n");
        push(&mut parts, b"/");
        push(&mut parts, &path);
        let n = c.byte() % 6;
        for i in 0..n {
            push(&mut parts, if i == 0 { b"?" } else { b"&" });
            let name = param_name(c);
            push(&mut parts, &name);
            let kind = c.byte();
            if kind & 3 == 0 {
                continue;
            }
            push(&mut parts, b"=");
            if is_secret_param(&name) && kind & 3 != 3 {
                parts.push(Vec::new());
            } else {
                let n = usize::from(kind >> 3);
                let value = clean(c.bytes(n), b" &#\r\n");
                push(&mut parts, &value);
            }
        }
        if flags & 8 != 0 {
            push(&mut parts, b"#frag");
        }
        push(&mut parts, b" HTTP/1.1");
    } else {
        push(&mut parts, b"HTTP/1.1 200 OK");
    }
    push(&mut parts, eol);
    let n = c.byte() % 8;
    for _ in 0..n {
        let name = header_name(c);
        let kind = c.byte();
        if kind & 0x80 != 0 {
            push(&mut parts, b" ");
        }
        push(&mut parts, &name);
        push(&mut parts, if kind & 0x40 != 0 { b" : " } else { b": " });
        let value = clean(c.bytes(usize::from(kind & 0x0f)), b"\r\n");
        if is_secret_header(&name, &extra()) {
            if kind & 0x10 != 0 {
                // The secret in a continuation line (obs-fold).
                push(&mut parts, &value);
                push(&mut parts, eol);
                push(&mut parts, if kind & 0x20 != 0 { b"\t" } else { b"  " });
            }
            parts.push(Vec::new());
        } else {
            push(&mut parts, &value);
        }
        push(&mut parts, eol);
    }
    push(&mut parts, eol);
    push(&mut parts, c.rest());
    Message { parts, request }
}

/// Every way the message is logged: the lines of each.
fn log_all(m: &Message, secret: &[u8], chunk: usize) -> Vec<Lines> {
    let bytes = m.render(secret);
    let (mut log, seen) = recorder();
    let mut c = ChannelLog::http_redacting(extra());
    if m.request {
        // Sent: logged whole.
        c.sent(&mut log, &bytes);
    } else {
        // Received in pieces, on a channel whose request was sent first.
        c.sent(&mut log, b"GET / HTTP/1.1\r\n\r\n");
        for p in bytes.chunks(chunk) {
            c.received(&mut log, p);
        }
        c.finish(&mut log);
    }
    let pieces: Vec<&[u8]> = bytes.chunks(chunk).collect();
    vec![
        taken(&seen),
        http_log(&pieces, true),
        http_log(&[&bytes], true),
    ]
}

fn structured(mode: u8, data: &[u8], chunk: usize) {
    let mut c = Choices::new(data);
    let start = usize::from(c.byte());
    let secret = clean(c.bytes(1 + usize::from(mode >> 4)), b" &#\r\n");
    let m = message(&mut c);
    if m.slots() == 0 || secret.is_empty() {
        return;
    }
    let fuzzed = log_all(&m, &secret, chunk);
    let marked = log_all(&m, MARKER, chunk);
    assert_eq!(fuzzed, marked, "the log depends on the secret");
    let rendered = m.render(MARKER);
    let occurrences = rendered
        .windows(MARKER.len())
        .filter(|w| *w == MARKER)
        .count();
    if occurrences != m.slots() {
        return;
    }
    for lines in &marked {
        for (_, line) in lines {
            assert!(
                !line.windows(MARKER.len()).any(|w| w == MARKER),
                "a secret in the log: {}",
                String::from_utf8_lossy(line)
            );
        }
    }
    // A log that appears in the middle of a response: nothing of the secret either.
    if !m.request {
        let (mut log, seen) = recorder();
        let mut l = HttpLog::redacting(extra());
        let cut = start.min(rendered.len());
        l.feed(
            &mut None::<crate::WireLog>,
            Direction::Received,
            &rendered[..cut],
        );
        for p in rendered[cut..].chunks(chunk) {
            l.feed(&mut log, Direction::Received, p);
        }
        l.finish(&mut log, Direction::Received);
        for (_, line) in taken(&seen) {
            assert!(
                !line.windows(MARKER.len()).any(|w| w == MARKER),
                "a secret in a log started mid-message: {}",
                String::from_utf8_lossy(&line)
            );
        }
    }
}
