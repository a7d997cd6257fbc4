//! A Redis reply is untrusted input: any bytes parse to a reply, a need for more, or an
//! error, never a panic; a reply claims no more bytes than it was given, and parses the
//! same from exactly those bytes.
#![no_main]
use mcp_redis::ReplyLimits;
use mcp_redis::resp::parse_reply;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let limits = ReplyLimits::default();
    if let Ok(Some((reply, used))) = parse_reply(data, &limits) {
        assert!(used > 0 && used <= data.len(), "used {used} of {}", data.len());
        assert_eq!(parse_reply(&data[..used], &limits), Ok(Some((reply, used))));
    }
});
