#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| mcp_proto::fuzzing::http::http_sse_endpoint(data));
