//! Request head writer: exact bytes, and refusal of anything that could inject.

use crate::http::{ACCEPT_JSON_AND_SSE, EndpointUrl, RequestError, RequestHead};

#[test]
fn writes_a_post_head() {
    let url = EndpointUrl::parse("https://Example.com:8443/mcp?x=1", false).unwrap();
    let head = RequestHead::for_endpoint("POST", &url)
        .with_header("Accept", ACCEPT_JSON_AND_SSE)
        .with_header("Content-Type", "application/json")
        .with_header("Authorization", "Bearer abc.def")
        .with_header("MCP-Protocol-Version", "2026-07-28")
        .with_header("Mcp-Method", "tools/call");
    let mut out = b"previous".to_vec();
    head.write(Some(42), &mut out).unwrap();
    let expected = "previousPOST /mcp?x=1 HTTP/1.1\r\n\
                    Host: example.com:8443\r\n\
                    Accept: application/json, text/event-stream\r\n\
                    Content-Type: application/json\r\n\
                    Authorization: Bearer abc.def\r\n\
                    MCP-Protocol-Version: 2026-07-28\r\n\
                    Mcp-Method: tools/call\r\n\
                    Content-Length: 42\r\n\
                    \r\n";
    assert_eq!(String::from_utf8(out).unwrap(), expected);
}

#[test]
fn writes_a_get_head_without_length() {
    let head =
        RequestHead::new("GET", "/", "[::1]:8080").with_header("Accept", "text/event-stream");
    let mut out = Vec::new();
    head.write(None, &mut out).unwrap();
    let expected = "GET / HTTP/1.1\r\nHost: [::1]:8080\r\nAccept: text/event-stream\r\n\r\n";
    assert_eq!(out, expected.as_bytes());
    let mut out = Vec::new();
    RequestHead::new("POST", "/", "h")
        .write(Some(0), &mut out)
        .unwrap();
    assert_eq!(
        out,
        b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n"
    );
}

#[test]
fn refuses_injection() {
    let base = || RequestHead::new("POST", "/mcp", "example.com");
    let cases = [
        (
            base().with_header("X-A", "a\r\nX-Evil: 1"),
            RequestError::InvalidHeaderValue("X-A".into()),
        ),
        (
            base().with_header("X-A", "a\nb"),
            RequestError::InvalidHeaderValue("X-A".into()),
        ),
        (
            base().with_header("X-A", "a\0b"),
            RequestError::InvalidHeaderValue("X-A".into()),
        ),
        (
            base().with_header("X-A", "caf\u{e9}"),
            RequestError::InvalidHeaderValue("X-A".into()),
        ),
        (
            base().with_header("X-A", " padded"),
            RequestError::InvalidHeaderValue("X-A".into()),
        ),
        (
            base().with_header("X-A", "padded\t"),
            RequestError::InvalidHeaderValue("X-A".into()),
        ),
        (
            base().with_header("X A", "v"),
            RequestError::InvalidHeaderName("X A".into()),
        ),
        (
            base().with_header("X:A", "v"),
            RequestError::InvalidHeaderName("X:A".into()),
        ),
        (
            base().with_header("X\r\nA", "v"),
            RequestError::InvalidHeaderName("X\r\nA".into()),
        ),
        (
            base().with_header("", "v"),
            RequestError::InvalidHeaderName(String::new()),
        ),
        (
            base().with_header("host", "evil"),
            RequestError::ReservedHeader("host".into()),
        ),
        (
            base().with_header("Content-Length", "1"),
            RequestError::ReservedHeader("Content-Length".into()),
        ),
        (
            base().with_header("Transfer-Encoding", "chunked"),
            RequestError::ReservedHeader("Transfer-Encoding".into()),
        ),
        (
            RequestHead::new("PO ST", "/", "h"),
            RequestError::InvalidMethod("PO ST".into()),
        ),
        (
            RequestHead::new("POST", "/a b", "h"),
            RequestError::InvalidTarget("/a b".into()),
        ),
        (
            RequestHead::new("POST", "/a\r\nX: y", "h"),
            RequestError::InvalidTarget("/a\r\nX: y".into()),
        ),
        (
            RequestHead::new("POST", "mcp", "h"),
            RequestError::InvalidTarget("mcp".into()),
        ),
        (
            RequestHead::new("POST", "/", "h\r\nX: y"),
            RequestError::InvalidHost("h\r\nX: y".into()),
        ),
        (
            RequestHead::new("POST", "/", ""),
            RequestError::InvalidHost(String::new()),
        ),
        (
            RequestHead::new("POST", "/", "a@b"),
            RequestError::InvalidHost("a@b".into()),
        ),
    ];
    for (head, error) in cases {
        let mut out = b"kept".to_vec();
        assert_eq!(head.write(Some(1), &mut out), Err(error));
        assert_eq!(out, b"kept", "output touched on error");
    }
    let ok = base()
        .with_header("X-Empty", "")
        .with_header("X-Inner", "a \t b");
    ok.write(None, &mut Vec::new()).unwrap();
}
