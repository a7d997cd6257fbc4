//! A request whose `_meta` is the text kept from the last one is read without its
//! `_meta` (found in place, in a copy with the text blanked out): it must be answered as
//! any reading of it would answer it, and nothing else may pass for that `_meta`.

use serde_json::{Value, json};

use super::{PV, Peer, meta};
use crate::server::example;

/// The kept text, and a server that keeps it.
fn warm() -> (Peer, String) {
    let mut p = Peer::new(example::server());
    let params = json!({"_meta": meta(json!({})), "name": "echo", "arguments": {"text": "hi"}});
    let reply = p.call(json!(1), "tools/call", params.clone());
    assert_eq!(reply["result"]["content"][0]["text"], "hi", "{reply}");
    let text = serde_json::to_string(&params["_meta"]).unwrap();
    assert!(p.server.keeps_meta(&text));
    (p, text)
}

/// Whether the server reads `line` with the kept `_meta` found in place.
fn found_in_place(p: &mut Peer, line: &str) -> bool {
    p.server
        .split_request(line.as_bytes())
        .is_some_and(|(_, split)| split.meta_kept)
}

/// What a server that keeps nothing answers to `line`.
fn fresh_reply(line: &str) -> Vec<Value> {
    Peer::new(example::server()).raw(format!("{line}\n").as_bytes())
}

#[test]
fn a_kept_meta_found_in_place_answers_as_a_reading_of_the_message() {
    let (mut p, kept) = warm();
    let retired = serde_json::to_string(&json!({PV: "2025-11-25", "x": {}})).unwrap();
    let long = "y".repeat(9 * 1024);
    let request = |params: String| {
        format!(r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{params}}}"#)
    };
    // (params, whether the kept text is taken in place, what the echo says: null for an
    // error, whichever a reading of the message names)
    let cases = [
        (
            format!(r#"{{"_meta":{kept},"name":"echo","arguments":{{"text":"a"}}}}"#),
            true,
            json!("a"),
        ),
        (
            format!(r#"{{"name":"echo","arguments":{{"text":"b"}},"_meta" :	{kept} }}"#),
            true,
            json!("b"),
        ),
        // The kept text under another `_meta` (the arguments') is not the request's.
        (
            format!(
                r#"{{"arguments":{{"_meta":{kept},"text":"c"}},"name":"echo","_meta":{retired}}}"#
            ),
            false,
            Value::Null,
        ),
        (
            format!(r#"{{"arguments":{{"_meta":{kept},"text":"d"}},"name":"echo"}}"#),
            false,
            Value::Null,
        ),
        // A second `_meta` is the one read, as in any reading of the message.
        (
            format!(
                r#"{{"_meta":{kept},"name":"echo","arguments":{{"text":"e"}},"_meta":{retired}}}"#
            ),
            false,
            Value::Null,
        ),
        (
            format!(
                r#"{{"_meta":{retired},"name":"echo","arguments":{{"text":"f"}},"_meta":{kept}}}"#
            ),
            false,
            json!("f"),
        ),
        // Too long to copy: read as it is.
        (
            format!(r#"{{"_meta":{kept},"name":"echo","arguments":{{"text":"{long}"}}}}"#),
            false,
            json!(long),
        ),
    ];
    for (params, in_place, expected) in cases {
        let line = request(params);
        let shown = &line[..line.len().min(200)];
        assert_eq!(found_in_place(&mut p, &line), in_place, "{shown}");
        let reply = p.raw(format!("{line}\n").as_bytes());
        assert_eq!(reply, fresh_reply(&line), "{shown}");
        let said = reply[0]["result"]["content"][0]["text"].clone();
        assert_eq!(said, expected, "{shown}: {reply:?}");
        // The kept value went back: the next request takes it in place again.
        let again = request(format!(
            r#"{{"_meta":{kept},"name":"echo","arguments":{{}}}}"#
        ));
        if expected.is_string() {
            assert!(found_in_place(&mut p, &again), "{shown}");
        }
    }
    // Broken text after the kept `_meta`, or a message that is not a request: answered
    // as a server that keeps nothing answers it.
    for line in [
        request(format!(r#"{{"_meta":{kept},"name":"echo",}}"#)),
        request(format!(r#"{{"_meta":{kept},"name":"echo"}}"#)).replace(r#""id":7"#, r#""id":[]"#),
        format!(r#"{{"jsonrpc":"2.0","id":8,"result":{{"_meta":{kept}}}}}"#),
        request(format!(r#"{{"_meta":{kept} "name":"echo"}}"#)),
    ] {
        let reply = p.raw(format!("{line}\n").as_bytes());
        assert_eq!(reply, fresh_reply(&line), "{line}");
    }
}

/// What the differential fuzz target (`server_fast_paths`) builds beyond the cases above:
/// the kept text under a key that is `_meta` only once unescaped, or that merely ends in
/// `_meta`; beside the params rather than in them; and messages either side of the
/// longest one copied. Each is answered as a server that keeps nothing answers it, and
/// found in place exactly when the params' own (last) `_meta` is the kept text at the
/// first `"_meta":`.
#[test]
fn escaped_keys_a_meta_beside_the_params_and_the_copied_bound() {
    let (mut p, kept) = warm();
    let retired = serde_json::to_string(&json!({PV: "2025-11-25", "x": {}})).unwrap();
    let request = |params: String| {
        format!(r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{params}}}"#)
    };
    // A message of exactly `len` bytes with the kept `_meta` first in its params.
    let sized = |len: usize| {
        let bare = request(format!(
            r#"{{"_meta":{kept},"name":"echo","arguments":{{"text":""}}}}"#
        ));
        let text = "z".repeat(len - bare.len());
        request(format!(
            r#"{{"_meta":{kept},"name":"echo","arguments":{{"text":"{text}"}}}}"#
        ))
    };
    let cases = [
        // The last `_meta` is the one read, however its key is spelled.
        (
            request(format!(
                r#"{{"\u005fmeta":{retired},"name":"echo","arguments":{{"text":"a"}},"_meta":{kept}}}"#
            )),
            true,
        ),
        (
            request(format!(
                r#"{{"_meta":{kept},"name":"echo","arguments":{{"text":"b"}},"_m\u0065ta":{retired}}}"#
            )),
            false,
        ),
        (
            request(format!(
                r#"{{"\u005fmeta":{kept},"name":"echo","arguments":{{"text":"c"}}}}"#
            )),
            false,
        ),
        // A key ending in `_meta` is a member of its own.
        (
            request(format!(
                r#"{{"\"_meta":{kept},"name":"echo","arguments":{{"text":"d"}},"_meta":{retired}}}"#
            )),
            false,
        ),
        (
            request(format!(
                r#"{{"\"_meta":{kept},"name":"echo","arguments":{{"text":"e"}}}}"#
            )),
            false,
        ),
        // The kept text beside the params, whose `_meta` is another.
        (
            format!(
                r#"{{"_meta":{kept},"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"f"}},"_meta":{retired}}}}}"#
            ),
            false,
        ),
        (sized(8 * 1024), true),
        (sized(8 * 1024 + 1), false),
    ];
    for (line, in_place) in cases {
        let shown = &line[..line.len().min(200)];
        assert_eq!(found_in_place(&mut p, &line), in_place, "{shown}");
        let reply = p.raw(format!("{line}\n").as_bytes());
        assert_eq!(reply, fresh_reply(&line), "{shown}");
        // The kept text is read (or found in place) again for the next case.
        let again = request(format!(
            r#"{{"_meta":{kept},"name":"echo","arguments":{{}}}}"#
        ));
        let reply = p.raw(format!("{again}\n").as_bytes());
        assert!(reply[0]["result"].is_object(), "{shown}: {reply:?}");
    }
}
