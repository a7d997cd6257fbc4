//! The wire log's redaction (`mcp_io::wire_log`) and the transcript's: responses whose framing
//! the log must follow, and secrets that must not reach it.
//!
//! The promise held to (`mcp-io/src/wire_log.rs`, module docs, and `Options::wire_log`):
//! over HTTP "the head of every request and response is logged with the value of every
//! secret header replaced by `[redacted]`" (`Mcp-Session-Id`, `Set-Cookie`, …), and "the
//! string value of a member named one of `SECRET_JSON_KEYS` … becomes `"[redacted]"`, in
//! a token or registration response, and in an MCP message or SSE event alike". Lines are
//! redacted "however the bytes arrived". The transcript, which applies "the wire log's
//! rules" (docs/decisions.md, decision 24), already knows that "an interim (1xx) response
//! head is followed by another head" (`mcp-io/src/transcript/head.rs`).

use std::sync::{Arc, Mutex};

use mcp_io::wire_log::{ChannelLog, HttpLog};
use mcp_io::{Direction, WireLog};

type Seen = Arc<Mutex<Vec<String>>>;

fn recorder() -> (Option<WireLog>, Seen) {
    let seen: Seen = Arc::default();
    let sink = seen.clone();
    let log: WireLog = Box::new(move |_, line| {
        sink.lock()
            .unwrap()
            .push(String::from_utf8_lossy(line).into_owned());
    });
    (Some(log), seen)
}

/// The lines a response is logged as when it arrives in `reads`, as the adapters feed it
/// (`ChannelLog::received` per read, `finish` once the response is over).
fn received(reads: &[&[u8]]) -> Vec<String> {
    let (mut log, seen) = recorder();
    let mut conn = ChannelLog::http();
    conn.sent(&mut log, b"POST /mcp HTTP/1.1\r\nHost: x\r\n\r\n{}");
    for read in reads {
        conn.received(&mut log, read);
    }
    conn.finish(&mut log);
    seen.lock().unwrap().clone()
}

fn assert_hidden(lines: &[String], secrets: &[&str]) {
    for secret in secrets {
        let shown: Vec<&String> = lines.iter().filter(|l| l.contains(secret)).collect();
        assert!(
            shown.is_empty(),
            "the secret {secret:?} reached the wire log in {shown:?}; all lines: {lines:#?}"
        );
    }
}

/// A server (or a CDN in front of it: Cloudflare sends `103 Early Hints`) may send
/// interim 1xx heads before the final one; the HTTP machine skips them
/// (`mcp-proto/src/http/response.rs`: "1xx interim head (not 101): dropped"). The wire
/// log took everything after the interim head's empty line for the body, so the final
/// head's `Mcp-Session-Id` and `Set-Cookie` were logged as they are.
#[test]
fn secret_headers_after_an_interim_response_are_hidden() {
    for interim in [
        &b"HTTP/1.1 100 Continue\r\n\r\n"[..],
        b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n",
    ] {
        let mut response = interim.to_vec();
        response.extend_from_slice(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
              Mcp-Session-Id: 5e551on-s3cr3t\r\nSet-Cookie: sid=c00kie-s3cr3t\r\n\
              Content-Length: 36\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}",
        );
        let lines = received(&[&response]);
        assert_hidden(&lines, &["5e551on-s3cr3t", "c00kie-s3cr3t"]);
        // Byte by byte too: the rules hold however the bytes arrive.
        let bytes: Vec<&[u8]> = response.chunks(1).collect();
        assert_hidden(&received(&bytes), &["5e551on-s3cr3t", "c00kie-s3cr3t"]);
    }
}

/// An SSE event's data may come on several `data:` lines (joined with a line end, which
/// JSON takes as white space): a member's name on one line and its string value on the
/// next is the same JSON as on one line, and the docs promise the same redaction "in an
/// MCP message or SSE event alike". The `data:` prefix of the second line made the log
/// forget that a secret value was due.
#[test]
fn a_secret_member_split_across_data_lines_of_an_event_is_hidden() {
    let response = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n\
        event: message\n\
        data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"structuredContent\":{\"refresh_token\":\n\
        data: \"r3fresh-s3cr3t\"}}}\n\n";
    let lines = received(&[response]);
    assert_hidden(&lines, &["r3fresh-s3cr3t"]);
    // The same member with its value on the same `data:` line is hidden today.
    let one_line = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n\
        data: {\"refresh_token\":\"r3fresh-s3cr3t\"}\n\n";
    assert_hidden(&received(&[one_line]), &["r3fresh-s3cr3t"]);
}

/// Sanity: the request side of the same rules, fed whole, keeps its secrets (these held).
#[test]
fn requests_keep_their_secrets_however_written() {
    let (mut log, seen) = recorder();
    HttpLog::whole(
        &mut log,
        Direction::Sent,
        b"POST /token?client_secret=q5ecret HTTP/1.1\r\nAUTHORIZATION:Basic YmFzaWM=\r\n\
          X-Custom-Api-Key: k3y\r\nContent-Type: Application/X-WWW-Form-Urlencoded;charset=UTF-8\r\n\
          \r\ngrant_type=refresh_token&refresh%5Ftoken=r3fresh&client_id=c",
    );
    let lines = seen.lock().unwrap().clone();
    assert_hidden(&lines, &["q5ecret", "YmFzaWM=", "k3y", "r3fresh"]);
}

/// The transcript's redaction makes "the wire log's rules" (decision 24) byte by byte;
/// it follows interim heads, and `data:` lines as the wire log does.
fn transcript_response(response: &[u8]) -> String {
    use mcp_io::mcp_proto::client::ConnId;
    use mcp_io::mcp_proto::client::transcript::Redaction;
    let mut redaction = mcp_io::transcript::WireRedaction::new(&[]);
    let conn = ConnId::STDIO;
    let _ = redaction.request(conn, b"POST /mcp HTTP/1.1\r\nHost: x\r\n\r\n{}");
    String::from_utf8_lossy(&redaction.response(conn, response)).into_owned()
}

#[test]
fn the_transcript_hides_a_secret_member_split_across_data_lines() {
    let response = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n\
        data: {\"refresh_token\":\n\
        data: \"r3fresh-s3cr3t\"}\n\n";
    let shown = transcript_response(response);
    assert!(
        !shown.contains("r3fresh-s3cr3t"),
        "a secret value on the event's next data line is in the transcript: {shown}"
    );
}

/// A pretty-printed token response (the member's value on the line after its name) is
/// hidden by the wire log, which carries what it saw across lines; the transcript took
/// the line end for the end of the member and showed the token.
#[test]
fn the_transcript_hides_a_pretty_printed_token_as_the_wire_log_does() {
    let response =
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 44\r\n\r\n\
        {\n  \"access_token\":\n    \"pr3tty-s3cr3t\"\n}\n";
    assert_hidden(&received(&[response]), &["pr3tty-s3cr3t"]);
    let shown = transcript_response(response);
    assert!(
        !shown.contains("pr3tty-s3cr3t"),
        "a pretty-printed token is in the transcript: {shown}"
    );
}
/// A token response sent with `Transfer-Encoding: chunked` (Go's `net/http` chunks any
/// response larger than its 4 KiB buffer that has no `Content-Length`, so a response
/// with a long JWT does) has chunk-size lines wherever the server cut it. The log reads
/// the body line by line and forgets, at each line end, that it was inside a secret
/// value: the part of the token after a chunk boundary was logged as it is, and a
/// boundary between the member name and its value showed the whole token.
#[test]
fn a_chunk_boundary_inside_a_token_response_does_not_show_the_token() {
    let token = "eyJhbGciOiJSUzI1NiJ9.c2VjcmV0LXBheWxvYWQ.s1gnatur3-0f-the-t0ken";
    let body = format!(
        "{{\"access_token\":\"{token}\",\"token_type\":\"Bearer\",\"refresh_token\":\"r3fresh-s3cr3t\"}}"
    );
    // Cut inside the access token, and between the refresh token's name and value.
    let cuts = [
        body.find(token).unwrap() + 20,
        body.find("\"r3fresh").unwrap() - 1,
    ];
    let mut response =
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
            .to_vec();
    let mut from = 0;
    for to in cuts.into_iter().chain([body.len()]) {
        let chunk = &body.as_bytes()[from..to];
        response.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        response.extend_from_slice(chunk);
        response.extend_from_slice(b"\r\n");
        from = to;
    }
    response.extend_from_slice(b"0\r\n\r\n");
    let lines = received(&[&response]);
    assert_hidden(&lines, &[&token[..20], &token[20..], "r3fresh-s3cr3t"]);
}

#[test]
fn the_transcript_hides_a_token_cut_by_a_chunk_boundary() {
    let response = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
        Transfer-Encoding: chunked\r\n\r\n\
        15\r\n{\"access_token\":\"eyJh\r\n\
        1a\r\nbGciOi-s3cr3t-t0ken-rest\"}\r\n0\r\n\r\n";
    let shown = transcript_response(response);
    assert!(
        !shown.contains("s3cr3t-t0ken-rest"),
        "the rest of the token after a chunk boundary is in the transcript: {shown}"
    );
}

/// Chunk framing is followed wherever a chunk ends and however the bytes arrive: a
/// pretty-printed token response and an event stream whose secret value is on its second
/// `data:` line, cut into two chunks at every position, read whole and one byte at a time,
/// never show any part of the secret, in the wire log or the transcript; the chunk-size
/// lines stay in the log as they are.
#[test]
fn chunked_bodies_keep_their_secrets_wherever_a_chunk_ends() {
    let secret = "Zq9xW3vK7mP2rT8y";
    let windows: Vec<&str> = (0..=secret.len() - 5).map(|i| &secret[i..i + 5]).collect();
    let bodies = [
        format!("{{\n  \"access_token\":\n    \"{secret}\",\n  \"token_type\": \"Bearer\"\n}}\n"),
        format!(
            "event: message\ndata: {{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{{\"refresh_token\":\n\
             data: \"{secret}\"}}}}\n\n"
        ),
    ];
    for body in &bodies {
        for cut in 1..body.len() {
            let mut response = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
            for part in [&body[..cut], &body[cut..]] {
                response.extend_from_slice(format!("{:x}\r\n{part}\r\n", part.len()).as_bytes());
            }
            response.extend_from_slice(b"0\r\n\r\n");
            let lines = received(&[&response]);
            assert_hidden(&lines, &windows);
            // The body's lines are logged whole, wherever the chunk boundary fell.
            let redacted = [r#"    "[redacted]","#, r#"data: "[redacted]"}}"#];
            assert!(
                lines.iter().any(|l| redacted.contains(&l.as_str())),
                "cut at {cut}: {lines:#?}"
            );
            assert!(
                lines.contains(&format!("{cut:x}")),
                "the chunk-size line is shown: {lines:#?}"
            );
            let bytes: Vec<&[u8]> = response.chunks(1).collect();
            assert_hidden(&received(&bytes), &windows);
            let shown = transcript_response(&response);
            for window in &windows {
                assert!(!shown.contains(window), "cut at {cut}: {shown}");
            }
        }
    }
}

/// A chunked body's lines longer than a log line holds are logged in pieces of at most
/// `MAX_LOG_LINE` bytes, as an unchunked body's are, wherever the chunk boundaries fall,
/// and nothing of the data is lost or added.
#[test]
fn long_lines_of_a_chunked_body_come_in_pieces_of_the_most_a_log_line_holds() {
    use mcp_io::wire_log::MAX_LOG_LINE;
    let line: String = (0..3 * MAX_LOG_LINE + 17)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    let body = format!("{line}\n{line}");
    for cut in [
        1,
        MAX_LOG_LINE - 1,
        MAX_LOG_LINE,
        MAX_LOG_LINE + 1,
        line.len(),
        line.len() + 2,
    ] {
        let mut response = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        for part in [&body[..cut], &body[cut..]] {
            response.extend_from_slice(format!("{:x}\r\n{part}\r\n", part.len()).as_bytes());
        }
        response.extend_from_slice(b"0\r\n\r\n");
        for reads in [vec![&response[..]], response.chunks(7).collect()] {
            let lines = received(&reads);
            assert!(
                lines.iter().all(|l| l.len() <= MAX_LOG_LINE),
                "cut at {cut}: a line over the maximum"
            );
            let data: String = lines
                .iter()
                .filter(|l| l.chars().all(|c| c.is_ascii_lowercase()) && !l.is_empty())
                .filter(|l| !l.chars().all(|c| c.is_ascii_hexdigit()) || l.len() > 16)
                .map(String::as_str)
                .collect();
            assert_eq!(data.len(), 2 * line.len(), "cut at {cut}");
        }
    }
}
