//! `WWW-Authenticate` parsing on arbitrary UTF-8: no panic; what parses respects the
//! bounds and the grammar's shape, re-serialises to a value that parses to the same
//! challenges, and `bearer_challenge` agrees with the parsed list.
#![no_main]

use mcp_proto::auth::challenge::{
    Challenge, MAX_CHALLENGES, MAX_HEADER_BYTES, MAX_PARAMS, bearer_challenge, parse_challenges,
};

fn serialise(challenges: &[Challenge]) -> String {
    let mut out = String::new();
    for (i, c) in challenges.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(&c.scheme);
        for (j, (name, value)) in c.params.iter().enumerate() {
            out.push_str(if j == 0 { " " } else { ", " });
            if name.is_empty() {
                out.push_str(value);
                continue;
            }
            out.push_str(name);
            out.push_str("=\"");
            for ch in value.chars() {
                if ch == '"' || ch == '\\' {
                    out.push('\\');
                }
                out.push(ch);
            }
            out.push('"');
        }
    }
    out
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let parsed = parse_challenges(s);
    let first_bearer = bearer_challenge([s]);
    let Ok(challenges) = parsed else {
        assert!(
            first_bearer.is_none(),
            "a malformed value yielded a challenge"
        );
        return;
    };
    assert!(challenges.len() <= MAX_CHALLENGES);
    for c in &challenges {
        assert!(!c.scheme.is_empty());
        assert!(c.params.len() <= MAX_PARAMS);
        let token68 = c.params.iter().any(|(n, _)| n.is_empty());
        assert!(!token68 || c.params.len() == 1, "token68 with parameters");
        for (i, (name, value)) in c.params.iter().enumerate() {
            assert_eq!(*name, name.to_ascii_lowercase(), "name not lowercased");
            assert_eq!(c.param(name), Some(value.as_str()));
            assert!(
                c.params[..i].iter().all(|(n, _)| n != name),
                "duplicate parameter kept"
            );
        }
    }
    let again = serialise(&challenges);
    if again.len() <= MAX_HEADER_BYTES {
        assert_eq!(
            parse_challenges(&again).as_ref(),
            Ok(&challenges),
            "re-serialised {again:?}"
        );
    }
    let bearer = challenges
        .iter()
        .find(|c| c.is_scheme("Bearer"))
        .or_else(|| challenges.iter().find(|c| c.is_scheme("DPoP")));
    assert_eq!(bearer.is_some(), first_bearer.is_some());
    if let (Some(c), Some(b)) = (bearer, &first_bearer) {
        assert_eq!(b.scope.as_deref(), c.param("scope"));
        assert_eq!(b.resource_metadata.as_deref(), c.param("resource_metadata"));
        assert_eq!(b.error.as_deref(), c.param("error"));
        let scopes = b.scopes();
        let unique: std::collections::HashSet<_> = scopes.iter().collect();
        assert_eq!(unique.len(), scopes.len(), "scopes not deduplicated");
        // The same value twice, or after a malformed one, gives the same answer.
        assert_eq!(bearer_challenge(["Bearer \"", s, s]).as_ref(), Some(b));
    }
});
