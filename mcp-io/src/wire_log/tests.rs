use super::*;
use crate::WireLog;
use std::sync::{Arc, Mutex};

type Seen = Arc<Mutex<Vec<(Direction, Vec<u8>)>>>;

fn recorder() -> (Option<WireLog>, Seen) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let log: WireLog = Box::new(move |dir, line| sink.lock().unwrap().push((dir, line.to_vec())));
    (Some(log), seen)
}

fn texts(seen: &Mutex<Vec<(Direction, Vec<u8>)>>) -> Vec<String> {
    seen.lock()
        .unwrap()
        .iter()
        .map(|(_, l)| String::from_utf8_lossy(l).into_owned())
        .collect()
}

#[test]
fn lines_are_split_across_chunks_and_long_lines_come_in_pieces() {
    let (mut log, seen) = recorder();
    let rx = Direction::Received;
    let mut lines = LineLog::new();
    lines.feed(&mut log, rx, b"{\"a\":1}\n{\"b\"");
    lines.feed(&mut log, rx, b":2}\r\n");
    lines.feed(&mut log, rx, b"\n");
    assert_eq!(texts(&seen), ["{\"a\":1}", "{\"b\":2}", ""]);
    seen.lock().unwrap().clear();

    let long = vec![b'x'; MAX_LOG_LINE * 2 + 5];
    lines.feed(&mut log, rx, &long);
    assert_eq!(seen.lock().unwrap().len(), 2);
    lines.finish(&mut log, rx);
    let seen = seen.lock().unwrap();
    let sizes: Vec<usize> = seen.iter().map(|(_, l)| l.len()).collect();
    assert_eq!(sizes, [MAX_LOG_LINE, MAX_LOG_LINE, 5]);
    assert!(seen.iter().all(|(d, _)| *d == rx));
}

#[test]
fn a_line_of_exactly_the_maximum_is_one_piece() {
    let (mut log, seen) = recorder();
    let mut line = vec![b'y'; MAX_LOG_LINE];
    line.extend_from_slice(b"\r\n");
    LineLog::whole(&mut log, Direction::Sent, &line);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].1.len(), MAX_LOG_LINE);
}

#[test]
fn lines_do_not_depend_on_where_a_crlf_is_split() {
    let run = |pieces: &[&[u8]]| {
        let (mut log, seen) = recorder();
        let mut lines = LineLog::new();
        for p in pieces {
            lines.feed(&mut log, Direction::Received, p);
        }
        lines.finish(&mut log, Direction::Received);
        let seen = seen.lock().unwrap();
        seen.iter().map(|(_, l)| l.clone()).collect::<Vec<_>>()
    };
    // A line of exactly the maximum, its `\r\n` split: one piece, not the line and
    // an empty one.
    let mut full = vec![b'y'; MAX_LOG_LINE];
    full.extend_from_slice(b"\r\nz\r");
    let whole = run(&[&full]);
    assert_eq!(whole.len(), 2);
    assert_eq!(whole[0].len(), MAX_LOG_LINE);
    assert_eq!(whole[1], b"z\r");
    for at in 0..full.len() {
        let (a, b) = full.split_at(at);
        if at < MAX_LOG_LINE - 2 {
            continue;
        }
        assert_eq!(run(&[a, b]), whole, "split at {at}");
    }
    // A `\r` that is not before a `\n` stays in the line, however it arrives.
    let text = b"a\rb\r\r\nc\r\n\r";
    let whole = run(&[text]);
    assert_eq!(whole, [&b"a\rb\r"[..], b"c", b"\r"]);
    for at in 0..=text.len() {
        let (a, b) = text.split_at(at);
        assert_eq!(run(&[a, b]), whole, "split at {at}");
    }
    let bytes: Vec<&[u8]> = text.chunks(1).collect();
    assert_eq!(run(&bytes), whole);
}

#[test]
fn no_log_keeps_nothing() {
    let mut log: Option<WireLog> = None;
    let mut lines = LineLog::new();
    lines.feed(&mut log, Direction::Received, b"partial");
    let (mut log, seen) = recorder();
    lines.feed(&mut log, Direction::Received, b" line\n");
    assert_eq!(texts(&seen), [" line"]);
}

#[test]
fn requests_hide_every_secret_header() {
    let (mut log, seen) = recorder();
    HttpLog::whole(
        &mut log,
        Direction::Sent,
        b"POST /mcp HTTP/1.1\r\nHost: x\r\nauthorization: Bearer s3cr3t\r\n\
          Proxy-Authorization : Basic abc\r\nCookie: a=b\r\nContent-Length: 2\r\n\r\n{}",
    );
    assert_eq!(
        texts(&seen),
        [
            "POST /mcp HTTP/1.1",
            "Host: x",
            "authorization: [redacted]",
            "Proxy-Authorization : [redacted]",
            "Cookie: [redacted]",
            "Content-Length: 2",
            "",
            "{}",
        ]
    );
}

#[test]
fn responses_hide_set_cookie_in_the_head_only() {
    let (mut log, seen) = recorder();
    let rx = Direction::Received;
    let mut response = HttpLog::new();
    response.feed(&mut log, rx, b"HTTP/1.1 200 OK\r\nSet-Cookie: id=");
    response.feed(&mut log, rx, b"42\r\n\tmore=1\r\nX: y\r\n\r\n");
    response.feed(&mut log, rx, b"data: {\"set-cookie: no\"}\n\n");
    response.finish(&mut log, rx);
    // The next exchange on the connection starts with a head again.
    response.feed(
        &mut log,
        rx,
        b"HTTP/1.1 202 Accepted\r\nSet-Cookie: b=2\r\n\r\n",
    );
    assert_eq!(
        texts(&seen),
        [
            "HTTP/1.1 200 OK",
            "Set-Cookie: [redacted]",
            "X: y",
            "",
            "data: {\"set-cookie: no\"}",
            "",
            "HTTP/1.1 202 Accepted",
            "Set-Cookie: [redacted]",
            "",
        ]
    );
}

#[test]
fn a_secret_too_long_for_one_line_stays_hidden() {
    let (mut log, seen) = recorder();
    let mut head = b"GET / HTTP/1.1\r\nAuthorization: Bearer ".to_vec();
    head.extend(std::iter::repeat_n(b's', MAX_LOG_LINE * 2));
    head.extend_from_slice(b"\r\nHost: x\r\n\r\n");
    HttpLog::whole(&mut log, Direction::Sent, &head);
    assert_eq!(
        texts(&seen),
        ["GET / HTTP/1.1", "Authorization: [redacted]", "Host: x", ""]
    );
}

#[test]
fn a_log_set_mid_message_still_sees_no_secret() {
    let mut none: Option<WireLog> = None;
    let mut response = HttpLog::new();
    response.feed(&mut none, Direction::Received, b"HTTP/1.1 200 OK\r\nSet-Co");
    let (mut log, seen) = recorder();
    response.feed(&mut log, Direction::Received, b"okie: a=b\r\n\r\n");
    // The piece before the log existed is not logged; the header is still hidden.
    assert!(texts(&seen).iter().all(|l| !l.contains("a=b")));
}

/// The lines `message` is logged as, sent whole.
fn sent(message: &[u8]) -> Vec<String> {
    let (mut log, seen) = recorder();
    HttpLog::whole(&mut log, Direction::Sent, message);
    texts(&seen)
}

/// The lines `message` is logged as, received one byte at a time.
fn received_bytewise(mut log: HttpLog, message: &[u8]) -> Vec<String> {
    let (mut sink, seen) = recorder();
    for b in message {
        log.feed(&mut sink, Direction::Received, std::slice::from_ref(b));
    }
    log.finish(&mut sink, Direction::Received);
    texts(&seen)
}

#[test]
fn the_session_id_is_hidden_both_ways() {
    let lines = sent(b"DELETE /mcp HTTP/1.1\r\nMcp-Session-Id: 1868a90c\r\n\r\n");
    assert_eq!(
        lines,
        ["DELETE /mcp HTTP/1.1", "Mcp-Session-Id: [redacted]", ""]
    );
    let (mut log, seen) = recorder();
    let mut response = HttpLog::new();
    response.feed(
        &mut log,
        Direction::Received,
        b"HTTP/1.1 200 OK\r\nmcp-session-id: 1868a90c\r\n\r\n",
    );
    assert_eq!(
        texts(&seen),
        ["HTTP/1.1 200 OK", "mcp-session-id: [redacted]", ""]
    );
}

#[test]
fn the_http_sse_endpoint_event_hides_its_session() {
    let message = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n\
        event: endpoint\ndata: /message?sessionId=5f2a&x=1\n\n\
        event: endpoint\ndata:http://127.0.0.1:9/m?session_id=ab#f\n\n\
        event: message\ndata: {\"id\":1,\"result\":{\"u\":\"/a?session=keep\"}}\n\n";
    let expected = [
        "HTTP/1.1 200 OK",
        "Content-Type: text/event-stream",
        "",
        "event: endpoint",
        "data: /message?sessionId=[redacted]&x=1",
        "",
        "event: endpoint",
        "data:http://127.0.0.1:9/m?session_id=[redacted]#f",
        "",
        "event: message",
        "data: {\"id\":1,\"result\":{\"u\":\"/a?session=keep\"}}",
        "",
    ];
    assert_eq!(received_bytewise(HttpLog::new(), message), expected);
    let (mut sink, seen) = recorder();
    HttpLog::whole(&mut sink, Direction::Received, message);
    assert_eq!(texts(&seen), expected);
}

#[test]
fn headers_named_like_credentials_are_hidden() {
    let lines = sent(
        b"POST /mcp HTTP/1.1\r\nX-Api-Key: k1\r\nX-APIKEY: k2\r\napi_key: k3\r\n\
          X-Auth-Token: k4\r\nX-Amz-Security-Token: k5\r\nClient-Secret: k6\r\n\
          X-Password: k7\r\nX-Session: k8\r\nCookie2: k9\r\nX-Authorization-Extra: k10\r\n\
          Content-Type: application/json\r\nAccept: text/event-stream\r\n\
          MCP-Protocol-Version: 2025-11-25\r\n\r\n{\"token\": \"body\"}",
    );
    assert_eq!(
        lines,
        [
            "POST /mcp HTTP/1.1",
            "X-Api-Key: [redacted]",
            "X-APIKEY: [redacted]",
            "api_key: [redacted]",
            "X-Auth-Token: [redacted]",
            "X-Amz-Security-Token: [redacted]",
            "Client-Secret: [redacted]",
            "X-Password: [redacted]",
            "X-Session: [redacted]",
            "Cookie2: [redacted]",
            "X-Authorization-Extra: [redacted]",
            "Content-Type: application/json",
            "Accept: text/event-stream",
            "MCP-Protocol-Version: 2025-11-25",
            "",
            "{\"token\": \"body\"}",
        ]
    );
}

#[test]
fn challenges_are_shown() {
    let challenge = "WWW-Authenticate: Bearer resource_metadata=\"https://x/.well-known\"";
    let (mut log, seen) = recorder();
    let mut response = HttpLog::new();
    let head =
        format!("HTTP/1.1 401 Unauthorized\r\n{challenge}\r\nProxy-Authenticate: Basic\r\n\r\n");
    response.feed(&mut log, Direction::Received, head.as_bytes());
    assert_eq!(
        texts(&seen),
        [
            "HTTP/1.1 401 Unauthorized",
            challenge,
            "Proxy-Authenticate: Basic",
            ""
        ]
    );
    // Unless the caller names one.
    let named = HttpLog::redacting(vec!["www-authenticate".to_owned()]);
    let lines = received_bytewise(named, head.as_bytes());
    assert_eq!(lines[1], "WWW-Authenticate: [redacted]");
}

#[test]
fn a_secret_header_split_across_reads_stays_hidden() {
    let head: &[u8] = b"HTTP/1.1 200 OK\r\nMcp-Session-Id: 1868a90c\r\n\
                        X-Api-Key: k1\r\n\tfolded-k1\r\nContent-Length: 2\r\n\r\n{}";
    let expected = [
        "HTTP/1.1 200 OK",
        "Mcp-Session-Id: [redacted]",
        "X-Api-Key: [redacted]",
        "Content-Length: 2",
        "",
        "{}",
    ];
    assert_eq!(received_bytewise(HttpLog::new(), head), expected);
    // Cut inside the name, inside the value, and between `\r` and `\n`.
    for cut in [20, 28, 36, 42, 44] {
        let (mut log, seen) = recorder();
        let mut response = HttpLog::new();
        response.feed(&mut log, Direction::Received, &head[..cut]);
        response.feed(&mut log, Direction::Received, &head[cut..]);
        response.finish(&mut log, Direction::Received);
        assert_eq!(texts(&seen), expected, "cut at {cut}");
    }
}

#[test]
fn headers_the_caller_names_are_hidden_both_ways_for_every_exchange() {
    let (mut log, seen) = recorder();
    let mut conn = ChannelLog::http_redacting(vec![" X-Tenant-Key ".to_owned()]);
    for _ in 0..2 {
        conn.sent(
            &mut log,
            b"POST /mcp HTTP/1.1\r\nx-tenant-key: t1\r\nX-Tenant: t2\r\n\r\n{}",
        );
        conn.received(&mut log, b"HTTP/1.1 200 OK\r\nX-TENANT-KEY: t");
        conn.received(&mut log, b"3\r\n\r\n{}");
        conn.finish(&mut log);
    }
    let lines = texts(&seen);
    let once = [
        "POST /mcp HTTP/1.1",
        "x-tenant-key: [redacted]",
        "X-Tenant: t2",
        "",
        "{}",
        "HTTP/1.1 200 OK",
        "X-TENANT-KEY: [redacted]",
        "",
        "{}",
    ];
    assert_eq!(lines, [once, once].concat());
    // Without the name, the header is not one of the built-in secrets.
    assert!(!is_secret_header(b"X-Tenant-Key", &[]));
}

#[test]
fn secret_query_parameters_are_hidden_in_the_request_line() {
    let lines = sent(
        b"GET /mcp?access_token=t1&page=2&API_KEY=k1&apikey=k2&key=k3&secret=s1&\
          password=p1&sig=s2&signature=s3&code=c1&x-amz-signature=s4&client%5Fsecret=s5&\
          empty=&token&keyword=rust&codec=h264&session_id=s6 HTTP/1.1\r\n\
          Referer: /x?page=1\r\n\r\n",
    );
    assert_eq!(
        lines,
        [
            "GET /mcp?access_token=[redacted]&page=2&API_KEY=[redacted]&apikey=[redacted]&\
             key=[redacted]&secret=[redacted]&password=[redacted]&sig=[redacted]&\
             signature=[redacted]&code=[redacted]&x-amz-signature=[redacted]&\
             client%5Fsecret=[redacted]&empty=&token&keyword=rust&codec=h264&\
             session_id=[redacted] HTTP/1.1",
            "Referer: /x?page=1",
            "",
        ]
    );
    // Only the query: not the path, not a fragment, not the version.
    assert_eq!(
        redact_request_line(b"GET /token=a/b?x=1&code=abc=def#code=c HTTP/1.1"),
        b"GET /token=a/b?x=1&code=[redacted]#code=c HTTP/1.1"
    );
    // A status line has no query.
    assert_eq!(redact_request_line(b"HTTP/1.1 200 OK"), b"HTTP/1.1 200 OK");
}

#[test]
fn a_request_line_split_across_reads_keeps_its_secrets_hidden() {
    let line: &[u8] = b"POST /mcp?page=1&access_token=s3cr3t&x=2 HTTP/1.1\r\n\r\n";
    let expected = ["POST /mcp?page=1&access_token=[redacted]&x=2 HTTP/1.1", ""];
    assert_eq!(received_bytewise(HttpLog::new(), line), expected);
}

#[test]
fn a_request_line_too_long_for_one_piece_keeps_its_secrets_hidden() {
    // The first piece ends inside the name `access_token`, the second inside its
    // value.
    let mut line = b"GET /mcp?pad=".to_vec();
    line.resize(MAX_LOG_LINE - "&access_to".len(), b'p');
    line.extend_from_slice(b"&access_token=");
    line.extend(std::iter::repeat_n(b's', MAX_LOG_LINE * 2));
    line.extend_from_slice(b"&after=1 HTTP/1.1\r\nHost: x\r\n\r\n");
    let (mut log, seen) = recorder();
    HttpLog::whole(&mut log, Direction::Sent, &line);
    let lines = texts(&seen);
    assert!(lines.iter().all(|l| !l.contains("sss")), "the token leaked");
    let joined: String = lines[..lines.len() - 2].concat();
    assert!(
        joined.ends_with("&access_token=[redacted]&after=1 HTTP/1.1"),
        "{}",
        &joined[joined.len() - 60..]
    );
    assert_eq!(lines[lines.len() - 2..], ["Host: x", ""]);
}

#[test]
fn names_too_long_to_check_count_as_secret() {
    let long = "X-".to_owned() + &"a".repeat(MAX_CHECKED_NAME);
    assert!(is_secret_header(long.as_bytes(), &[]));
    let param = "a".repeat(MAX_CHECKED_NAME + 1);
    assert!(is_secret_param(param.as_bytes()));
    assert!(!is_secret_param("a".repeat(MAX_CHECKED_NAME).as_bytes()));
    // Escaped, the same name takes three times the bytes.
    assert!(!is_secret_param("%61".repeat(MAX_CHECKED_NAME).as_bytes()));
    let line = format!("GET /?{}=v HTTP/1.1", "%61".repeat(MAX_CHECKED_NAME + 1));
    assert!(redact_request_line(line.as_bytes()).ends_with(b"=[redacted] HTTP/1.1"));
    // A header line whose first piece holds no colon is hidden whole.
    let mut head = b"GET / HTTP/1.1\r\n".to_vec();
    head.extend(std::iter::repeat_n(b'n', MAX_LOG_LINE + 10));
    head.extend_from_slice(b": value\r\nHost: x\r\n\r\n");
    assert_eq!(sent(&head), ["GET / HTTP/1.1", "[redacted]", "Host: x", ""]);
}

#[test]
fn oauth_secrets_in_form_bodies_are_hidden() {
    let lines = sent(
        b"POST /token HTTP/1.1\r\nContent-Type: Application/X-WWW-Form-Urlencoded; charset=utf-8\r\n\r\n\
          grant_type=authorization_code&code=c0de&code_verifier=v3r&redirect_uri=http%3A%2F%2F127.0.0.1\
          &client_id=c1&client_secret=s3c&resource=r&refresh_token=rt&assertion=a1&\
          client_assertion=a2&subject_token=st",
    );
    assert_eq!(
        lines[3],
        "grant_type=authorization_code&code=[redacted]&code_verifier=[redacted]&\
         redirect_uri=http%3A%2F%2F127.0.0.1&client_id=c1&client_secret=[redacted]&resource=r&\
         refresh_token=[redacted]&assertion=[redacted]&client_assertion=[redacted]&\
         subject_token=[redacted]"
    );
    // Revocation: `token` itself.
    let lines = sent(
        b"POST /revoke HTTP/1.1\r\ncontent-type: application/x-www-form-urlencoded\r\n\r\n\
          token=rt1&token_type_hint=refresh_token",
    );
    assert_eq!(lines[3], "token=[redacted]&token_type_hint=[redacted]");
}

#[test]
fn oauth_secrets_in_json_bodies_are_hidden() {
    let response: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n\
        {\"access_token\":\"at\\\"1\",\"token_type\":\"Bearer\",\"expires_in\":3600,\
        \"Refresh_Token\" : \"rt1\",\"id_token\":\"it\",\"scope\":\"a b\"}\n\
        {\"client_id\":\"c1\",\"client_secret\":\"s3c\",\"client_secret_expires_at\":0}\n\
        {\"access_token\":\n  \"split-across-lines\"}\n\
        {\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32600,\"message\":\"access_token\"}}\n\
        [\"access_token\", \"shown\"]";
    let expected = [
        "HTTP/1.1 200 OK",
        "Content-Type: application/json",
        "",
        "{\"access_token\":\"[redacted]\",\"token_type\":\"Bearer\",\"expires_in\":3600,\
         \"Refresh_Token\" : \"[redacted]\",\"id_token\":\"[redacted]\",\"scope\":\"a b\"}",
        "{\"client_id\":\"c1\",\"client_secret\":\"[redacted]\",\"client_secret_expires_at\":0}",
        "{\"access_token\":",
        "  \"[redacted]\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32600,\"message\":\"access_token\"}}",
        "[\"access_token\", \"shown\"]",
    ];
    assert_eq!(received_bytewise(HttpLog::new(), response), expected);
    let (mut log, seen) = recorder();
    let mut whole = HttpLog::new();
    whole.feed(&mut log, Direction::Received, response);
    whole.finish(&mut log, Direction::Received);
    assert_eq!(texts(&seen), expected);
    // A request too (a JWT bearer grant sent as JSON), and an SSE event.
    let lines = sent(b"POST /x HTTP/1.1\r\n\r\ndata: {\"assertion\": \"eyJ\"}");
    assert_eq!(lines[2], "data: {\"assertion\": \"[redacted]\"}");
    // A tool argument named `code` stays visible.
    let lines = sent(b"POST /mcp HTTP/1.1\r\n\r\n{\"arguments\":{\"code\":\"print(1)\"}}");
    assert_eq!(lines[2], "{\"arguments\":{\"code\":\"print(1)\"}}");
}

#[test]
fn a_secret_json_value_longer_than_a_line_piece_stays_hidden() {
    let mut body = b"HTTP/1.1 200 OK\r\n\r\n{\"access_token\":\"".to_vec();
    body.extend(std::iter::repeat_n(b's', MAX_LOG_LINE * 2));
    body.extend_from_slice(b"\",\"x\":1}");
    let lines = received_bytewise(HttpLog::new(), &body);
    assert!(lines.iter().all(|l| !l.contains("sss")), "the token leaked");
    assert_eq!(
        lines.concat(),
        "HTTP/1.1 200 OK{\"access_token\":\"[redacted]\",\"x\":1}"
    );
}

#[test]
fn redaction_takes_linear_time() {
    // Many parameters and headers, fed in small reads: quadratic work would take
    // minutes here.
    let mut message = b"GET /?".to_vec();
    for i in 0..200_000 {
        message.extend_from_slice(if i % 2 == 0 { b"token=ab&" } else { b"x=1&" });
    }
    message.extend_from_slice(b" HTTP/1.1\r\n");
    for _ in 0..20_000 {
        message.extend_from_slice(b"X-Api-Key: k\r\nA: b\r\n");
    }
    message.extend_from_slice(b"\r\n");
    let (mut log, seen) = recorder();
    let mut request = HttpLog::new();
    for chunk in message.chunks(7) {
        request.feed(&mut log, Direction::Sent, chunk);
    }
    request.finish(&mut log, Direction::Sent);
    assert!(
        texts(&seen)
            .iter()
            .all(|l| !l.contains("=ab") && !l.contains(": k"))
    );
}
