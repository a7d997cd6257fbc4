//! Tests of decoding, encoding, the checks of untrusted text and the scans that read a
//! message without decoding it.

use super::*;

/// [`decode_request_split`], with the `_meta` read back into the params.
fn decode_request_object(
    bytes: &[u8],
) -> Option<(Request, serde_json::Map<String, serde_json::Value>)> {
    let (request, split) = decode_request_split(bytes)?;
    let mut params = split.members;
    if let Some(meta) = split.meta {
        params.insert(META.to_owned(), serde_json::from_str(meta.get()).unwrap());
    }
    Some((request, params))
}

#[test]
fn text_that_is_not_utf8_is_named_where_it_breaks() {
    // Valid text is read as a string; text that is not UTF-8 keeps the error
    // serde_json gives for its bytes, with the line and column.
    let bytes = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\xff\"}";
    let want = serde_json::from_slice::<serde_json::Value>(bytes).unwrap_err();
    assert_eq!(want.column(), 36);
    assert_eq!(
        Message::decode(bytes).unwrap_err(),
        DecodeError::Json(want.to_string())
    );
    assert!(decode_request_object(bytes).is_none());
    let fine = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"text\":\"h\u{e9}\"}}";
    let (request, params) = decode_request_object(fine.as_bytes()).unwrap();
    assert_eq!(request.method, "tools/call");
    assert_eq!(params["text"], "h\u{e9}");
}

fn dec(s: &str) -> Result<Message, DecodeError> {
    Message::decode(s.as_bytes())
}

#[test]
fn requests_with_object_params_decode_as_message_decode_reads_them() {
    let inputs = [
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a\"b"}}}"#,
        r#" {"method":"ping","id":"x","jsonrpc":"2.0"}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{},"extra":[1,2]}"#,
        // Repeated members, `_meta` among them: the last one stands.
        r#"{"jsonrpc":"2.0","id":2,"method":"m","params":{"_meta":{"k":[1, 2]},"n":"a","n":"b","_meta":{"k":3}}}"#,
        // Anything else is left to Message::decode.
        r#"{"jsonrpc":"2.0","id":1,"method":"m","params":[1]}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"m","params":null}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"m","result":{}}"#,
        r#"{"jsonrpc":"1.0","id":1,"method":"m"}"#,
        r#"{"jsonrpc":"2.0","id":{},"method":"m"}"#,
        r#"{"jsonrpc":"2.0","id":null,"method":"m"}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"m","method":"n"}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1}"#,
        r#"[{"jsonrpc":"2.0","id":1,"method":"m"}]"#,
        "",
    ];
    let mut fast = 0;
    for input in inputs {
        let general = dec(input);
        match decode_request_object(input.as_bytes()) {
            Some((request, params)) => {
                fast += 1;
                let Ok(Message::Request(want)) = general else {
                    panic!("{input}: decoded a request that is not one: {general:?}");
                };
                assert_eq!((&request.id, &request.method), (&want.id, &want.method));
                assert!(request.params.is_none());
                let want_params: serde_json::Map<String, serde_json::Value> =
                    want.params.map_or_else(serde_json::Map::new, |p| {
                        serde_json::from_str(p.get()).unwrap()
                    });
                assert_eq!(params, want_params, "{input}");
            }
            None => assert!(
                !matches!(&general, Ok(Message::Request(r))
                    if r.params.as_deref().is_none_or(|p| p.get().starts_with('{'))),
                "{input}: a request with object params was left out"
            ),
        }
    }
    assert_eq!(fast, 4);
}

#[test]
fn a_split_request_keeps_its_meta_as_text() {
    let input = r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta": {"a" : 1},"x":2}}"#;
    let (request, params) = decode_request_split(input.as_bytes()).unwrap();
    assert_eq!(request.method, "m");
    assert_eq!(params.meta.map(RawValue::get), Some(r#"{"a" : 1}"#));
    assert_eq!(
        serde_json::Value::Object(params.members),
        serde_json::json!({"x": 2})
    );
    // A repeated `_meta` keeps its last text, as a map read by serde_json would.
    let repeated = r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":1,"_meta":[2]}}"#;
    let (_, params) = decode_request_split(repeated.as_bytes()).unwrap();
    assert_eq!(params.meta.map(RawValue::get), Some("[2]"));
    // A key serde_json gives a meaning of its own is left to the general path.
    let reserved =
        r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"$serde_json::private::RawValue":"1"}}"#;
    assert!(decode_request_split(reserved.as_bytes()).is_none());
}

#[test]
fn split_params_are_what_serde_json_reads_whatever_the_member_names_spelling() {
    // Names with escapes (read into an owned string) and without (borrowed) alike:
    // the members, and `_meta` (the last of several, however spelled), are those of
    // the params read by serde_json as a whole.
    for params in [
        r#"{"_m\u0065ta":{"a":1},"x":2}"#,
        r#"{"\u005fmeta":{"a":1},"\u0078":2}"#,
        r#"{"_meta":{"a":1},"_m\u0065ta":{"b":2}}"#,
        r#"{"_m\u0065ta":{"a":1},"_meta":[3]}"#,
        r#"{"_meta":1,"x":2,"_meta":{"c":"\u00e9"},"x":3}"#,
        r#"{"_Meta":1,"_meta ":2,"__meta":3,"meta":4}"#,
        r#"{"na\"me":1,"\u00e9\ud83d\ude00":2,"":3,"\\":4}"#,
        r#"{"_meta":{"_meta":{"_meta":1}}}"#,
        r#"{}"#,
    ] {
        let message = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{params}}}"#);
        let (_, got) = decode_request_object(message.as_bytes()).expect(params);
        let want: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(params).unwrap();
        assert_eq!(got, want, "{params}");
    }
    // serde_json's own key, escaped, is still refused.
    let reserved = r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"\u0024serde_json::private::RawValue":"1"}}"#;
    assert!(decode_request_split(reserved.as_bytes()).is_none());
}

#[test]
fn own_results_take_any_id_as_if_written_with_it() {
    // Every machine id against every client id, the message with no spare room and
    // with plenty: the text is what encoding the result with the client's id gives.
    let result =
        RawValue::from_string(r#"{"content":[{"type":"text","text":"x"}]}"#.into()).unwrap();
    let numbers = [0, 7, -1, 42, -99, 12345, i64::MAX, i64::MIN, 1 << 53];
    let strings = [
        "",
        "1",
        "a\"b",
        "\\",
        "é\u{1}",
        "\u{2028}",
        &"long".repeat(40),
    ];
    let clients = (numbers.iter().map(|n| RequestId::Number(*n)))
        .chain(strings.iter().map(|s| RequestId::String((*s).to_owned())));
    for client in clients {
        for own in numbers {
            let mut want = Vec::new();
            encode_result(&mut want, Some(&client), &result);
            let mut bytes = Vec::new();
            encode_result(&mut bytes, Some(&RequestId::Number(own)), &result);
            let (id, end) = own_result_id(&bytes).expect("our own encoding");
            assert_eq!(id, own);
            for spare in [0, 1, 20, 4096] {
                let mut b = bytes.clone();
                b.shrink_to_fit();
                b.reserve_exact(spare);
                let replaced = replace_own_result_id(b, &client, end);
                assert_eq!(
                    String::from_utf8_lossy(&replaced),
                    String::from_utf8_lossy(&want),
                    "{own} -> {client:?}, {spare} spare"
                );
            }
        }
    }
}

#[test]
fn an_own_result_full_to_its_capacity_is_not_moved_for_an_id_as_long() {
    // A large result whose buffer has no room left, its id replaced by one written
    // with as many bytes: replaced in place, not copied into a buffer twice as large.
    let text = "x".repeat(1 << 20);
    let result = to_raw(&serde_json::json!({"content": [{"type": "text", "text": text}]}));
    let mut bytes = Vec::new();
    encode_result(&mut bytes, Some(&RequestId::Number(17)), &result);
    bytes.shrink_to_fit();
    let (capacity, at) = (bytes.capacity(), bytes.as_ptr());
    let (_, end) = own_result_id(&bytes).unwrap();
    let replaced = replace_own_result_id(bytes, &RequestId::Number(42), end);
    assert_eq!(&replaced[..30], br#"{"jsonrpc":"2.0","id":42,"resu"#);
    assert_eq!(replaced.capacity(), capacity, "the message was moved");
    assert_eq!(replaced.as_ptr(), at, "the message was moved");
}

#[test]
fn own_results_get_their_id_replaced_without_parsing() {
    let result =
        RawValue::from_string(r#"{"content":[{"type":"text","text":"x"}]}"#.into()).unwrap();
    let mut bytes = Vec::new();
    encode_result(&mut bytes, Some(&RequestId::Number(-17)), &result);
    let (id, end) = own_result_id(&bytes).expect("our own encoding");
    assert_eq!(id, -17);
    for (client, text) in [
        (RequestId::Number(42), "42"),
        (RequestId::Number(7), "7"),
        (RequestId::Number(-99), "-99"),
        (RequestId::String("a\"b".into()), r#""a\"b""#),
    ] {
        let replaced = replace_own_result_id(bytes.clone(), &client, end);
        let want = format!(
            r#"{{"jsonrpc":"2.0","id":{text},"result":{}}}"#,
            result.get()
        );
        assert_eq!(String::from_utf8(replaced).unwrap(), want);
    }
    // Anything not written that way is not taken for it.
    for other in [
        r#"{"jsonrpc":"2.0","id":"1","result":{}}"#,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"m"}"#,
        r#"{"jsonrpc":"2.0","id":,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":1 ,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{}} "#,
        r#"{"id":1,"jsonrpc":"2.0","result":{}}"#,
    ] {
        assert_eq!(own_result_id(other.as_bytes()), None, "{other}");
    }
}

#[test]
fn value_encoders_write_what_the_raw_ones_write() {
    let value = serde_json::json!({
        "content": [{"type": "text", "text": "a \"quoted\" line\n\u{1}\u{7f}é\u{2028}"}],
        "n": [1, -2.5, 1e300, null, true, {}],
        "nested": {"z": [], "a": {"b": "\\"}},
    });
    let id = RequestId::String("r\"1".into());
    let (mut direct, mut raw) = (Vec::new(), Vec::new());
    encode_result_value(&mut direct, Some(&id), &value);
    encode_result(&mut raw, Some(&id), &to_raw(&value));
    assert_eq!(
        String::from_utf8(direct).unwrap(),
        String::from_utf8(raw).unwrap()
    );
    let (mut direct, mut raw) = (Vec::new(), Vec::new());
    encode_notification_value(&mut direct, "notifications/\"x\"", &value);
    encode_notification(&mut raw, "notifications/\"x\"", Some(&to_raw(&value)));
    assert_eq!(
        String::from_utf8(direct).unwrap(),
        String::from_utf8(raw).unwrap()
    );
}

#[test]
fn decodes_the_three_kinds() {
    assert!(matches!(
        dec(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#),
        Ok(Message::Request(Request {
            id: RequestId::Number(1),
            ..
        }))
    ));
    assert!(matches!(
        dec(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
        Ok(Message::Notification(_))
    ));
    let Ok(Message::Response(r)) = dec(r#"{"jsonrpc":"2.0","id":"a","result":{"x":[1, 2]}}"#)
    else {
        panic!("not a response")
    };
    assert_eq!(r.id, Some(RequestId::String("a".into())));
    assert_eq!(
        r.outcome.unwrap().get(),
        r#"{"x":[1, 2]}"#,
        "result kept verbatim"
    );
}

#[test]
fn error_keeps_data_and_null_id() {
    let Ok(Message::Response(r)) = dec(
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32022,"message":"v","data":{"supported":["2026-07-28"],"requested":"x"}}}"#,
    ) else {
        panic!()
    };
    assert_eq!(r.id, None);
    let e = r.outcome.unwrap_err();
    assert_eq!(e.code, codes::UNSUPPORTED_PROTOCOL_VERSION);
    assert_eq!(e.supported_versions(), Some(vec!["2026-07-28"]));
}

#[test]
fn rejects_bad_envelopes() {
    assert_eq!(dec("[1]").unwrap_err(), DecodeError::NotAnObject);
    assert!(matches!(dec("{nope").unwrap_err(), DecodeError::Json(_)));
    assert_eq!(
        dec(r#"{"id":1,"method":"x"}"#).unwrap_err(),
        DecodeError::Version
    );
    assert_eq!(
        dec(r#"{"jsonrpc":"2.0","id":null,"method":"x"}"#).unwrap_err(),
        DecodeError::Id
    );
    assert_eq!(
        dec(r#"{"jsonrpc":"2.0","id":1.5,"result":{}}"#).unwrap_err(),
        DecodeError::Id
    );
    assert_eq!(
        dec(r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":""}}"#).unwrap_err(),
        DecodeError::ResultAndError
    );
    assert_eq!(
        dec(r#"{"jsonrpc":"2.0","id":1,"error":{"code":"x"}}"#).unwrap_err(),
        DecodeError::ErrorObject
    );
    assert_eq!(
        dec(r#"{"jsonrpc":"2.0","id":1,"method":"m","params":3}"#).unwrap_err(),
        DecodeError::Params
    );
    assert_eq!(dec(r#"{"jsonrpc":"2.0"}"#).unwrap_err(), DecodeError::Shape);
}

#[test]
fn opening_brackets_are_counted_exactly() {
    let count = |bytes: &[u8]| bytes.iter().filter(|b| matches!(b, b'[' | b'{')).count();
    let within = |bytes: &[u8], max| super::checks::opening_brackets_within(bytes, max);
    for b in 0..=255u8 {
        for len in 0..20 {
            for at in 0..len {
                let mut bytes = vec![b'a'; len];
                bytes[at] = b;
                let n = count(&bytes);
                assert!(within(&bytes, n), "{b} at {at} of {len}");
                if n > 0 {
                    assert!(!within(&bytes, n - 1), "{b} at {at} of {len}");
                }
            }
        }
    }
    let mixed = br#"{"a":[{"b":"[{"},[[]],{}],"c":"\{"}"#;
    let n = count(mixed);
    assert!(within(mixed, n) && !within(mixed, n - 1));
    // Long text is searched past any alignment.
    let mut long = vec![b'x'; 4099];
    long[4097] = b'{';
    assert!(within(&long, 1) && !within(&long, 0));
}

#[test]
fn nesting_is_counted_outside_strings_only() {
    let depth = |s: &str| (0..10).find(|&d| check_nesting(s.as_bytes(), d).is_ok());
    assert_eq!(depth("5"), Some(0));
    assert_eq!(depth(r#""[[[""#), Some(0));
    assert_eq!(depth("[]"), Some(1));
    assert_eq!(depth(r#"{"a":[{"b":[]}]}"#), Some(4));
    assert_eq!(depth(r#"["[[[", "\"[[[", {"k\"{{":1}]"#), Some(2));
    // An escaped backslash does not escape the quote after it.
    assert_eq!(depth(r#"["\\", [[1]]]"#), Some(3));
    assert_eq!(depth(r#"["\\\"[[[", 1]"#), Some(1));
    // Closers never go below zero; an unterminated string ends the count.
    assert_eq!(depth("]]]][]"), Some(1));
    assert_eq!(depth(r#"[["abc"#), Some(2));
    assert_eq!(
        check_nesting(b"[[[]]]", 2),
        Err(DecodeError::TooDeep { limit: 2 })
    );
}

/// `decode_within` reads depth and the marks of reserved names in one pass first: its
/// verdicts are those of the separate checks, whatever the text holds.
#[test]
fn decode_within_counts_brackets_and_dollars_as_the_separate_checks_do() {
    let reserved = Err(DecodeError::ReservedName);
    let long = "x".repeat(600);
    let cases: [(&str, Result<(), DecodeError>); 11] = [
        // Longer than what the one pass is used for: the separate searches.
        (
            &format!(r#"{{"a":"{long}","$serde_json::x":1}}"#),
            reserved.clone(),
        ),
        (&format!(r#"{{"a":"{long}\\u0024"}}"#), Ok(())),
        (
            &format!(
                r#"{{"a":"{long}","b":{}{}}}"#,
                "[".repeat(63),
                "]".repeat(63)
            ),
            Err(DecodeError::TooDeep { limit: 64 }),
        ),
        (r#"{"content":[{"type":"text","text":"hi"}]}"#, Ok(())),
        (r#"{"a":"cost: $5"}"#, Ok(())),
        (r#"{"a\n":"\\u0024"}"#, Ok(())),
        (
            r#"{"$serde_json::private::RawValue":"1"}"#,
            reserved.clone(),
        ),
        (r#"{"a":[{"\u0024serde_json::x":1}]}"#, reserved),
        (&format!("{}{}", "[".repeat(63), "]".repeat(63)), Ok(())),
        (
            &format!("{}{}", "[".repeat(64), "]".repeat(64)),
            Err(DecodeError::TooDeep { limit: 64 }),
        ),
        (
            // More brackets than levels, all but one in a string: within the limit.
            &format!(r#"{{"s":"{}"}}"#, "[{".repeat(100)),
            Ok(()),
        ),
    ];
    for (result, want) in cases {
        let text = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{result}}}"#);
        let got = Message::decode_within(text.as_bytes(), 64, 1 << 20).map(|_| ());
        assert_eq!(got, want, "{result}");
    }
    // The marks are found wherever they fall, the last partial block of the one pass
    // included: padding moves them through every offset up to past its length limit.
    for pad in 0..=super::checks::Marks::MAX_LEN {
        let pad = "x".repeat(pad);
        let cases = [
            (
                format!(r#"{{"p":"{pad}","$serde_json::x":1}}"#),
                Err(DecodeError::ReservedName),
            ),
            (
                format!(r#"{{"p":"{pad}","\u0024serde_json::x":1}}"#),
                Err(DecodeError::ReservedName),
            ),
            (
                format!(
                    r#"{{"p":"{pad}","d":{}{}}}"#,
                    "[".repeat(62),
                    "]".repeat(62)
                ),
                Ok(()),
            ),
            (
                format!(
                    r#"{{"p":"{pad}","d":{}{}}}"#,
                    "[".repeat(63),
                    "]".repeat(63)
                ),
                Err(DecodeError::TooDeep { limit: 64 }),
            ),
        ];
        for (result, want) in cases {
            let text = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{result}}}"#);
            let got = Message::decode_within(text.as_bytes(), 64, 1 << 20).map(|_| ());
            assert_eq!(got, want, "{} bytes: {result}", text.len());
        }
        // Unclosed openers at the very end: too deep, found before the parse (which
        // would call the text incomplete).
        let text = format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{"p":"{pad}","d":{}"#,
            "[".repeat(63)
        );
        let got = Message::decode_within(text.as_bytes(), 64, 1 << 20).map(|_| ());
        let too_deep = Err(DecodeError::TooDeep { limit: 64 });
        assert_eq!(got, too_deep, "{} bytes", text.len());
    }
}

#[test]
fn a_very_deep_message_is_refused_in_one_pass() {
    let levels = 1_000_000;
    let text = format!(
        r#"{{"jsonrpc":"2.0","id":1,"result":{}{}}}"#,
        "[".repeat(levels),
        "]".repeat(levels)
    );
    assert_eq!(
        Message::decode_with_max_depth(text.as_bytes(), 64).unwrap_err(),
        DecodeError::TooDeep { limit: 64 }
    );
    assert_eq!(sniff(text.as_bytes()).id, Some(RequestId::Number(1)));
    let at_limit = format!(
        r#"{{"jsonrpc":"2.0","id":1,"result":{}{}}}"#,
        "[".repeat(63),
        "]".repeat(63)
    );
    let m = Message::decode_with_max_depth(at_limit.as_bytes(), 64).unwrap();
    assert_eq!(m.check_nesting(64), Ok(()));
    assert_eq!(m.check_nesting(63), Err(DecodeError::TooDeep { limit: 63 }));
}

#[test]
fn error_data_counts_from_level_three() {
    let data = serde_json::json!({"a": [[1]]}); // 3 levels
    let m = Message::Response(Response {
        id: Some(RequestId::Number(1)),
        outcome: Err(ErrorObject::new(1, "x").with_data(data)),
    });
    assert_eq!(m.check_nesting(5), Ok(()));
    assert_eq!(m.check_nesting(4), Err(DecodeError::TooDeep { limit: 4 }));
    let bare = Message::Response(Response {
        id: None,
        outcome: Err(ErrorObject::new(1, "x")),
    });
    assert_eq!(bare.check_nesting(2), Ok(()));
    assert_eq!(
        bare.check_nesting(1),
        Err(DecodeError::TooDeep { limit: 1 })
    );
}

#[test]
fn sniff_reads_top_level_members_only() {
    let s = |t: &str| sniff(t.as_bytes());
    let id = |n| Some(RequestId::Number(n));
    assert_eq!(s(r#"{"jsonrpc":"2.0","id":7,"result":{}}"#).id, id(7));
    assert_eq!(
        s(r#" { "result" : {"id":1,"x":"\"id\":2"} , "id" : -3 } "#).id,
        id(-3)
    );
    assert_eq!(
        s(r#"{"id":"a\"b","result":1}"#).id,
        Some(RequestId::String("a\"b".into()))
    );
    let whole_without_id = Sniffed {
        whole: true,
        ..Sniffed::default()
    };
    assert_eq!(s(r#"{"result":{"id":1}}"#), whole_without_id);
    assert_eq!(s(r#"{"i\u0064":8,"result":1}"#).id, id(8));
    assert_eq!(s(r#"{"id":1.5,"result":1}"#).id, None);
    assert_eq!(s(r#"{"id":null,"error":{}}"#).id, None);
    // As the decoder reads it: `-0` is no id (an error answering it said `0`).
    assert_eq!(
        dec(r#"{"jsonrpc":"2.0","id":-0,"method":"x"}"#).unwrap_err(),
        DecodeError::Id
    );
    assert_eq!(s(r#"{"id":-0,"method":"x"}"#).id, None);
    assert_eq!(s(r#"{"id":-10,"method":"x"}"#).id, id(-10));
    let request = s(r#"{"jsonrpc":"2.0","method":"x","id":4}"#);
    assert!(request.has_method);
    assert_eq!(request.id, id(4));
    // A truncated prefix: members cut off are not read.
    assert_eq!(s(r#"{"jsonrpc":"2.0","id":12"#).id, None);
    assert_eq!(s(r#"{"jsonrpc":"2.0","id":12,"res"#).id, id(12));
    assert!(!s(r#"{"jsonrpc":"2.0","id":12,"res"#).whole);
    assert!(s(r#"{"jsonrpc":"2.0","id":12} "#).whole);
    assert!(s(r#"{"method":"notifications/message","params":{"data":"xx"#).has_method);
    assert_eq!(s("[1]"), Sniffed::default());
    assert_eq!(s("not json"), Sniffed::default());
}

#[test]
fn sniff_trailing_id_reads_the_last_member() {
    let t = |s: &str| sniff_trailing_id(s.as_bytes());
    assert_eq!(
        t(r#"xxxx"},"jsonrpc":"2.0","id":7}"#),
        Some(RequestId::Number(7))
    );
    assert_eq!(t("xx\"} , \"id\" : 7 }\r"), Some(RequestId::Number(7)));
    assert_eq!(
        t(r#"x","id":"a\"b"}"#),
        Some(RequestId::String("a\"b".into()))
    );
    assert_eq!(
        t(r#"x","id":"a\\"}"#),
        Some(RequestId::String("a\\".into()))
    );
    assert_eq!(t(r#"{"id":-2}"#), Some(RequestId::Number(-2)));
    // A nested member, a cut-off id, or anything else last: nothing.
    assert_eq!(t(r#"{"x":{"id":3}}"#), None);
    assert_eq!(t(r#"23}"#), None);
    assert_eq!(t(r#""id":3}"#), None);
    assert_eq!(t(r#"x\",\"id\":3}"#), None);
    assert_eq!(t(r#","id":3,"extra":1}"#), None);
    assert_eq!(t(r#","id":null}"#), None);
    assert_eq!(t(""), None);
}

#[test]
fn scans_agree_with_the_decoder_on_mutated_messages() {
    let messages = [
        r#"{"jsonrpc":"2.0","id":7,"result":{"a":[1,{"b":"x\"y"}]}}"#,
        r#"{"result":[[["\\"]]],"jsonrpc":"2.0","id":"k\"1"}"#,
        r#"{"jsonrpc":"2.0","method":"m","params":{"id":3},"id":-4}"#,
        r#"{"jsonrpc":"2.0","method":"n","params":[{"i\u0064":1}]}"#,
        r#" { "id" : 12 , "jsonrpc" : "2.0" , "error" : {"code":1,"message":"m","data":[[]]} } "#,
    ];
    let bytes: &[u8] = b"{}[]\"\\,:1 ";
    for m in messages {
        let m = m.as_bytes();
        for end in 0..=m.len() {
            crate::fuzzing::jsonrpc_decode(&m[..end]);
        }
        for at in 0..m.len() {
            for &b in bytes {
                let mut mutated = m.to_vec();
                mutated[at] = b;
                crate::fuzzing::jsonrpc_decode(&mutated);
            }
        }
    }
}

#[test]
fn encode_round_trips() {
    let raw = to_raw(&serde_json::json!({"a": 1}));
    let mut out = Vec::new();
    encode_request(&mut out, &RequestId::Number(7), "tools/list", Some(&raw));
    assert_eq!(
        std::str::from_utf8(&out).unwrap(),
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"a":1}}"#
    );
    let m = Message::decode(&out).unwrap();
    let mut again = Vec::new();
    m.encode(&mut again);
    assert_eq!(out, again);
}
