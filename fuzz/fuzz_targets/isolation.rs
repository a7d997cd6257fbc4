#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| mcp_proto::fuzzing::isolation::isolation(data));
