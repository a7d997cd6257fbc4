#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| mcp_proto::fuzzing::http_host::http_host(data));
