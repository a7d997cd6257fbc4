//! A Redis reply is untrusted input: any bytes parse to a reply, a need for more, or an
//! error, never a panic; a reply claims no more bytes than it was given, and parses the
//! same from exactly those bytes. A `ReplyScanner` given the bytes in two pieces finds
//! what the parser finds.
#![no_main]
use mcp_redis::ReplyLimits;
use mcp_redis::resp::{ReplyScanner, parse_reply};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let limits = ReplyLimits::default();
    let parsed = parse_reply(data, &limits);
    if let Ok(Some((reply, used))) = &parsed {
        let used = *used;
        assert!(used > 0 && used <= data.len(), "used {used} of {}", data.len());
        assert_eq!(
            parse_reply(&data[..used], &limits),
            Ok(Some((reply.clone(), used)))
        );
    }
    let want = parsed.map(|p| p.map(|(_, used)| used));
    let cut = data.first().map_or(0, |b| usize::from(*b) % (data.len() + 1));
    let mut scanner = ReplyScanner::new();
    let got = match scanner.scan(&data[..cut], &limits) {
        Ok(None) => scanner.scan(data, &limits),
        other => other,
    };
    assert_eq!(got, want);
});
