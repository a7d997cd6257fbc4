#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| mcp_proto::fuzzing::form_schema(data));
