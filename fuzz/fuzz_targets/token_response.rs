//! Token endpoint and registration responses, and callback query strings, on arbitrary
//! bytes: no panic; the first two bytes are the HTTP status. What is accepted has the
//! shape the flow relies on; decoded callback pairs re-encode and decode to themselves.
#![no_main]

use mcp_proto::auth::form::{
    MAX_INPUT_BYTES, MAX_PAIRS, callback_params, encode_pairs, parse_pairs,
};
use mcp_proto::auth::token::{TokenError, parse_registration, parse_token_response};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let (status, body) = match data {
        [a, b, rest @ ..] => (u16::from_be_bytes([*a, *b]), rest),
        _ => return,
    };
    // Statuses beyond HTTP's range stand for the interesting ones, so that random
    // inputs reach them often.
    let status = if status < 1000 {
        status
    } else {
        [200, 201, 400, 401, 302, 500][usize::from(status) % 6]
    };
    for dpop in [false, true] {
        match parse_token_response(status, body, dpop) {
            Ok(t) => {
                assert_eq!(status, 200);
                assert!(!t.access_token.is_empty());
                assert!(t.token_type == "Bearer" || (dpop && t.token_type == "DPoP"));
                assert!(t.refresh_token.as_ref().is_none_or(|r| !r.is_empty()));
                let shown = format!("{t:?}");
                assert!(shown.contains("<redacted>"));
            }
            Err(TokenError::OAuth(e)) => {
                assert!(matches!(status, 200 | 400 | 401));
                assert!(e.to_string().len() <= 2 * 6 * 256 + 8);
            }
            Err(TokenError::Status { status: s }) => assert_eq!(s, status),
            Err(e) => {
                assert_eq!(status, 200);
                let _ = e.to_string();
            }
        }
    }
    match parse_registration(status, body) {
        Ok(r) => {
            assert!(matches!(status, 200 | 201));
            assert!(!r.client_id.is_empty());
        }
        Err(TokenError::Status { status: s }) => assert_eq!(s, status),
        Err(_) => {}
    }
    let Ok(s) = std::str::from_utf8(body) else {
        return;
    };
    if let Ok(pairs) = callback_params(s) {
        assert!(pairs.len() <= MAX_PAIRS);
        let borrowed: Vec<(&str, &str)> = pairs
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        let encoded = encode_pairs(&borrowed);
        if encoded.len() <= MAX_INPUT_BYTES {
            // Empty names with empty values encode to a bare `=`, which decodes the same.
            assert_eq!(parse_pairs(&encoded).as_ref(), Ok(&pairs), "{encoded}");
            assert_eq!(callback_params(&format!("?{encoded}")).as_ref(), Ok(&pairs));
        }
    }
});
