//! A shared session record comes back from a store other processes write to: any bytes
//! decode to a record within its bounds or to an error, never a panic, and a record that
//! decodes encodes to bytes that decode to the same record.
#![no_main]
use mcp_proto::server::http::SessionRecord;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(record) = SessionRecord::decode(data) {
        let again = SessionRecord::decode(&record.encode()).expect("a re-encoded record decodes");
        assert_eq!(again, record);
    }
});
