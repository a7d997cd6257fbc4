//! The wire log hides "the string value of a member named one of `SECRET_JSON_KEYS`"
//! (`mcp-io/src/wire_log.rs`, module docs). In JSON a member's name is the string its
//! text decodes to: `"access\u005ftoken"` names `access_token` for every parser, the
//! client's own token reader included, so the log must hide its value too.

use std::sync::{Arc, Mutex};

use mcp_io::WireLog;
use mcp_io::wire_log::ChannelLog;

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

#[test]
fn a_secret_member_with_an_escaped_name_is_hidden() {
    let body = br#"{"access\u005ftoken":"at-s3cr3t","token_type":"Bearer","\u0072efresh_token":"rt-s3cr3t"}"#;
    // What the client's token reader makes of it: the names are the secret ones.
    let parsed: serde_json::Value = serde_json::from_slice(body).unwrap();
    assert_eq!(parsed["access_token"], "at-s3cr3t");
    assert_eq!(parsed["refresh_token"], "rt-s3cr3t");

    let (mut log, seen) = recorder();
    let mut conn = ChannelLog::http();
    conn.sent(
        &mut log,
        b"POST /token HTTP/1.1\r\nHost: x\r\ncontent-type: application/x-www-form-urlencoded\r\n\r\ngrant_type=refresh_token&refresh_token=[x]",
    );
    let mut response =
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ".to_vec();
    response.extend_from_slice(format!("{}\r\n\r\n", body.len()).as_bytes());
    response.extend_from_slice(body);
    conn.received(&mut log, &response);
    conn.finish(&mut log);
    let lines = seen.lock().unwrap().clone();
    for secret in ["at-s3cr3t", "rt-s3cr3t"] {
        let shown: Vec<&String> = lines.iter().filter(|l| l.contains(secret)).collect();
        assert!(
            shown.is_empty(),
            "{secret:?} reached the wire log in {shown:?}"
        );
    }
}
