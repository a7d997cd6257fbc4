#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    mcp_proto::fuzzing::http_client::http_client_with_server_bytes(data, mcp_proto::Instant::ZERO)
});
