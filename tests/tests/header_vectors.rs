//! Every row of the 2026-07-28 header vector files, checked against
//! `mcp_proto::http::{headers, xmcp}`. Each test walks all rows of one file, collects the
//! failures with their row ids, and reports them together.
//!
//! Rows the vectors mark as ambiguous follow the project's decisions (`docs/decisions.md`):
//! * `integer-out-of-safe-range` (expected `"unspecified"`): decision 2, the call fails
//!   locally with `HeaderError::IntegerOutOfRange`.
//! * `sep-float-not-allowed` / `type-number`: decision 1, a `number` property with
//!   `x-mcp-header` makes the tool invalid (`InvalidAnnotation::NumberType`).
//! * `integer-written-as-42.0`: sent in canonical form `42` (the row's first choice).
//! * `sep-empty-string`: the empty string is sent as an empty value (the row's first
//!   choice); the sentinel form `=?base64??=` is accepted on decoding.
//! * `overlap-ambiguity`: `=?base64?=` is rejected on decoding (the row's recommendation).
//! * `type-missing`, `type-union-nullable`, `under-additionalProperties`, `via-ref`,
//!   `on-root`, non-string annotations: rejected, as the rows recommend.

use std::collections::BTreeMap;

use mcp_proto::http::headers::{
    HeaderError, LAST_EVENT_ID, MCP_METHOD, MCP_NAME, MCP_PARAM_PREFIX, MCP_PROTOCOL_VERSION,
    MCP_SESSION_ID, decode_header_value, encode_header_value, find_header, is_wrapped,
    request_headers,
};
use mcp_proto::http::xmcp::{
    InvalidAnnotation, ParamHeader, Primitive, extract_param_values, is_valid_header_name,
    tool_param_headers,
};
use mcp_tests::load_vectors;
use serde_json::{Value, json};

const VERSION: &str = "2026-07-28";

/// Collects failures per row.
#[derive(Default)]
struct Report {
    rows: usize,
    failures: Vec<String>,
}

impl Report {
    fn row(&mut self, id: &str, result: Result<(), String>) {
        self.rows += 1;
        if let Err(e) = result {
            self.failures.push(format!("[{id}] {e}"));
        }
    }

    fn finish(self, file: &str, min_rows: usize) {
        assert!(
            self.failures.is_empty(),
            "{} of {} rows of {file} failed:\n{}",
            self.failures.len(),
            self.rows,
            self.failures.join("\n")
        );
        assert!(
            self.rows >= min_rows,
            "{file}: only {} rows checked",
            self.rows
        );
    }
}

fn rows<'a>(doc: &'a Value, key: &str) -> &'a [Value] {
    doc[key]
        .as_array()
        .unwrap_or_else(|| panic!("no `{key}` array"))
}

fn id(row: &Value) -> &str {
    row["id"].as_str().unwrap_or("<no id>")
}

fn ensure(cond: bool, msg: impl FnOnce() -> String) -> Result<(), String> {
    if cond { Ok(()) } else { Err(msg()) }
}

fn as_map(headers: &[(String, String)]) -> BTreeMap<String, String> {
    headers.iter().cloned().collect()
}

fn primitive(json_type: &str) -> Option<Primitive> {
    match json_type {
        "string" => Some(Primitive::String),
        "integer" => Some(Primitive::Integer),
        "boolean" => Some(Primitive::Boolean),
        _ => None,
    }
}

/// The value of a row: `value`, `value_json_text` parsed, or `None` for `value_absent`.
fn row_value(row: &Value) -> Result<Option<Value>, String> {
    if row.get("value_absent").and_then(Value::as_bool) == Some(true) {
        return Ok(None);
    }
    if let Some(text) = row.get("value_json_text").and_then(Value::as_str) {
        return serde_json::from_str(text)
            .map(Some)
            .map_err(|e| format!("value_json_text: {e}"));
    }
    row.get("value")
        .cloned()
        .map(Some)
        .ok_or_else(|| "row has no value".to_owned())
}

// ---------------------------------------------------------------------------------------
// header-value-encoding.json

fn encoding_row(row: &Value) -> Result<(), String> {
    let header_name = row["header_name"].as_str().ok_or("no header_name")?;
    let json_type = row["json_type"].as_str().ok_or("no json_type")?;
    let expected = &row["expected"];
    let value = row_value(row)?;

    if json_type == "number" {
        // Decision 1: such a tool is invalid, so no header is ever produced.
        let suffix = header_name
            .strip_prefix(MCP_PARAM_PREFIX)
            .ok_or("not a param header")?;
        let schema = json!({"type": "object", "properties": {"v": {"type": "number", "x-mcp-header": suffix}}});
        ensure(expected["emit_header"] == json!(false), || {
            "expected emit_header false".into()
        })?;
        return match tool_param_headers(&schema) {
            Err(InvalidAnnotation::NumberType { .. }) => Ok(()),
            other => Err(format!("number property accepted: {other:?}")),
        };
    }
    let kind = primitive(json_type).ok_or_else(|| format!("unknown json_type {json_type}"))?;

    // What our client emits for this row.
    let emitted: Result<Vec<(String, String)>, HeaderError> = if header_name == MCP_NAME {
        let params = match &value {
            Some(v) => json!({ "name": v }),
            None => json!({}),
        };
        request_headers("tools/call", &params, VERSION, &[])
            .map(|h| h.into_iter().filter(|(n, _)| n == MCP_NAME).collect())
    } else {
        let suffix = header_name
            .strip_prefix(MCP_PARAM_PREFIX)
            .ok_or("not a param header")?;
        let declared = ParamHeader {
            name: suffix.to_owned(),
            path: vec!["v".to_owned()],
            kind,
        };
        let arguments = match &value {
            Some(v) => json!({ "v": v }),
            None => json!({}),
        };
        extract_param_values(&[declared], &arguments)
    };

    match &expected["emit_header"] {
        Value::Bool(true) => {
            let want = expected["header_value"].as_str().ok_or("no header_value")?;
            let got = emitted.map_err(|e| format!("error {e}"))?;
            ensure(got.len() == 1, || {
                format!("expected one header, got {got:?}")
            })?;
            let (name, got_value) = &got[0];
            ensure(name == header_name, || format!("header name {name:?}"))?;
            ensure(got_value == want, || {
                format!("emitted {got_value:?}, want {want:?}")
            })?;
            if let Some(b64) = expected.get("base64_used").and_then(Value::as_bool) {
                ensure(is_wrapped(got_value) == b64, || {
                    format!("base64_used should be {b64}")
                })?;
            }
            // The receiving side gets the text back.
            let decoded = decode_header_value(got_value).map_err(|e| format!("decode: {e}"))?;
            let text = match value.as_ref().ok_or("value absent")? {
                Value::String(s) => s.clone(),
                Value::Bool(b) => b.to_string(),
                Value::Number(_) => want.to_owned(),
                other => return Err(format!("unexpected value {other}")),
            };
            ensure(decoded == text, || {
                format!("decodes to {decoded:?}, want {text:?}")
            })?;
            if kind == Primitive::String {
                for alt in row["also_acceptable_header_values"]
                    .as_array()
                    .into_iter()
                    .flatten()
                {
                    let alt = alt.as_str().ok_or("alt not a string")?;
                    let d = decode_header_value(alt).map_err(|e| format!("alt {alt:?}: {e}"))?;
                    ensure(d == text, || format!("alt {alt:?} decodes to {d:?}"))?;
                }
            }
            Ok(())
        }
        Value::Bool(false) => match emitted {
            Ok(h) if h.is_empty() => Ok(()),
            other => Err(format!("expected no header, got {other:?}")),
        },
        // Decision 2: an integer outside ±(2^53−1) fails the call locally.
        Value::String(s) if s == "unspecified" => match emitted {
            Err(HeaderError::IntegerOutOfRange { .. }) => Ok(()),
            other => Err(format!("expected IntegerOutOfRange, got {other:?}")),
        },
        other => Err(format!("unknown emit_header {other}")),
    }
}

#[test]
fn header_value_encoding() {
    let doc = load_vectors("header-value-encoding.json");
    let mut report = Report::default();
    for row in rows(&doc, "vectors") {
        report.row(id(row), encoding_row(row));
    }
    report.finish("header-value-encoding.json", 49);
}

// ---------------------------------------------------------------------------------------
// header-value-decoding.json

fn decoding_row(row: &Value) -> Result<(), String> {
    let raw = row["raw_header_value"]
        .as_str()
        .ok_or("no raw_header_value")?;
    let expected = &row["expected"];
    let outcome = expected["outcome"].as_str().ok_or("no outcome")?;
    let got = decode_header_value(raw);
    match outcome {
        "decoded" | "literal" => {
            let want = expected["decoded_value"]
                .as_str()
                .ok_or("no decoded_value")?;
            let got = got.map_err(|e| format!("rejected: {e}"))?;
            ensure(got == want, || format!("decoded {got:?}, want {want:?}"))?;
            let wrapped = is_wrapped(raw.trim_matches([' ', '\t']));
            ensure(wrapped == (outcome == "decoded"), || {
                format!("sentinel form detected: {wrapped}, outcome {outcome}")
            })
        }
        "reject" => {
            ensure(expected["jsonrpc_error_code"] == json!(-32020), || {
                "code".into()
            })?;
            ensure(got.is_err(), || format!("accepted as {got:?}"))
        }
        other => Err(format!("unknown outcome {other}")),
    }
}

#[test]
fn header_value_decoding() {
    let doc = load_vectors("header-value-decoding.json");
    let mut report = Report::default();
    for row in rows(&doc, "vectors") {
        report.row(id(row), decoding_row(row));
    }
    report.finish("header-value-decoding.json", 17);
}

// ---------------------------------------------------------------------------------------
// header-names.json

fn one_annotation_schema(annotation: &Value) -> Value {
    json!({"type": "object", "properties": {"p": {"type": "string", "x-mcp-header": annotation}}})
}

fn header_name_row(row: &Value) -> Result<(), String> {
    let annotation = &row["x_mcp_header"];
    let expected = &row["expected"];
    let got = tool_param_headers(&one_annotation_schema(annotation));
    if let Some(s) = annotation.as_str() {
        let valid = expected["valid"].as_bool().ok_or("no valid")?;
        ensure(is_valid_header_name(s) == valid, || {
            "is_valid_header_name disagrees".into()
        })?;
    }
    if expected["valid"] == json!(true) {
        let want = expected["resulting_header_name"]
            .as_str()
            .ok_or("no resulting name")?;
        let got = got.map_err(|e| format!("rejected: {e}"))?;
        ensure(got.len() == 1, || format!("got {got:?}"))?;
        ensure(got[0].header_name() == want, || {
            format!("header {:?}", got[0].header_name())
        })?;
        ensure(got[0].path == ["p"], || format!("path {:?}", got[0].path))
    } else {
        match (annotation, got) {
            (Value::String(s), Err(InvalidAnnotation::Empty { .. })) if s.is_empty() => Ok(()),
            (Value::String(_), Err(InvalidAnnotation::NotAToken { .. })) => Ok(()),
            (v, Err(InvalidAnnotation::NotAString { .. })) if !v.is_string() => Ok(()),
            (_, other) => Err(format!("wrong outcome {other:?}")),
        }
    }
}

fn uniqueness_row(row: &Value) -> Result<(), String> {
    let names = row["x_mcp_header_values_in_one_schema"]
        .as_array()
        .ok_or("no values")?;
    let props: serde_json::Map<String, Value> = names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            (
                format!("p{i}"),
                json!({"type": "string", "x-mcp-header": n}),
            )
        })
        .collect();
    let got = tool_param_headers(&json!({"type": "object", "properties": props}));
    if row["expected"]["valid"] == json!(true) {
        let got = got.map_err(|e| format!("rejected: {e}"))?;
        ensure(got.len() == names.len(), || format!("got {got:?}"))
    } else {
        match got {
            Err(InvalidAnnotation::Duplicate { .. }) => Ok(()),
            other => Err(format!("expected Duplicate, got {other:?}")),
        }
    }
}

fn name_case_row(row: &Value) -> Result<(), String> {
    let pair = row["request_header"]
        .as_array()
        .ok_or("no request_header")?;
    let (name, value) = match pair.as_slice() {
        [Value::String(n), Value::String(v)] => (n.clone(), v.clone()),
        _ => return Err("bad request_header".into()),
    };
    let headers = [(name, value)];
    let accept = if let Some(body_method) = row.get("body_method").and_then(Value::as_str) {
        // Mcp-Method: name matched case-insensitively, value compared exactly.
        find_header(&headers, MCP_METHOD) == Some(body_method)
    } else {
        let annotation = row["x_mcp_header"].as_str().ok_or("no x_mcp_header")?;
        let body = row["body_value"].as_str().ok_or("no body_value")?;
        let declared = ParamHeader {
            name: annotation.to_owned(),
            path: vec!["p".to_owned()],
            kind: Primitive::String,
        };
        find_header(&headers, &declared.header_name())
            .map(decode_header_value)
            .is_some_and(|d| d.as_deref() == Ok(body))
    };
    let want = row["expected"]["outcome"].as_str().ok_or("no outcome")?;
    ensure((if accept { "accept" } else { "reject" }) == want, || {
        format!("got accept={accept}, want {want}")
    })
}

#[test]
fn header_names() {
    let doc = load_vectors("header-names.json");
    let mut report = Report::default();
    for row in rows(&doc, "x_mcp_header_values") {
        report.row(id(row), header_name_row(row));
    }
    for row in rows(&doc, "uniqueness") {
        report.row(id(row), uniqueness_row(row));
    }
    for row in rows(&doc["standard_header_name_case"], "vectors") {
        report.row(id(row), name_case_row(row));
    }
    report.finish("header-names.json", 40);
}

// ---------------------------------------------------------------------------------------
// x-mcp-header-tools.json

/// Checks that the error matches the row's stated reason.
fn reason_matches(reason: &str, err: &InvalidAnnotation) -> bool {
    use InvalidAnnotation as E;
    let r = reason.to_ascii_lowercase();
    match err {
        E::NumberType { .. } => r.contains("'number'"),
        E::NonPrimitiveType { .. } => {
            r.contains("non-primitive") || r.contains("one invalid annotation")
        }
        E::MissingType { .. } => r.contains("type not declared"),
        E::TypeNotSingle { .. } => r.contains("single primitive"),
        E::Empty { .. } => r.contains("empty"),
        E::NotAToken { .. } => r.contains("not a token") || r.contains("control character"),
        E::Duplicate { .. } => r.contains("duplicate"),
        E::NotReachable { via, .. } => {
            r.contains("not statically reachable") && r.contains(&via.to_ascii_lowercase())
                || r.contains("$ref") && via == "$defs"
        }
        E::OnRoot => r.contains("root"),
        E::NotAString { .. } => false,
        _ => false,
    }
}

fn tool_row(row: &Value) -> Result<(), String> {
    let tool = &row["tool"];
    let name = tool["name"].as_str().ok_or("no tool name")?;
    let expected = &row["expected"];
    // On stdio annotations may be ignored entirely: nothing is ever dropped there.
    ensure(
        expected["keep_in_tools_list_on_stdio"] == json!(true),
        || "stdio keep".into(),
    )?;
    let got = tool_param_headers(&tool["inputSchema"]);
    let keep = expected["keep_in_tools_list_on_streamable_http"]
        .as_bool()
        .ok_or("no keep flag")?;
    let declared = match (keep, got) {
        (true, Ok(d)) => d,
        (true, Err(e)) => return Err(format!("tool rejected: {e}")),
        (false, Ok(d)) => return Err(format!("tool accepted with {d:?}")),
        (false, Err(e)) => {
            let reason = expected["reason"].as_str().ok_or("no reason")?;
            return ensure(reason_matches(reason, &e), || {
                format!("error {e:?} does not match reason {reason:?}")
            });
        }
    };
    for (i, call) in row["calls"].as_array().into_iter().flatten().enumerate() {
        let params = json!({"name": name, "arguments": call["arguments"]});
        let got = request_headers("tools/call", &params, VERSION, &declared)
            .map_err(|e| format!("call {i}: {e}"))?;
        let mut got = as_map(&got);
        ensure(
            got.remove(MCP_PROTOCOL_VERSION).as_deref() == Some(VERSION),
            || format!("call {i}: no {MCP_PROTOCOL_VERSION}"),
        )?;
        let want: BTreeMap<String, String> = call["expected_headers"]
            .as_object()
            .ok_or("no expected_headers")?
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
            .collect();
        ensure(got == want, || {
            format!("call {i}: headers {got:?}, want {want:?}")
        })?;
    }
    Ok(())
}

fn list_filtering_row(row: &Value) -> Result<(), String> {
    let tools = row["tools_list_result"]["tools"]
        .as_array()
        .ok_or("no tools")?;
    let names = |keep: &dyn Fn(&Value) -> bool| -> Vec<Value> {
        tools
            .iter()
            .filter(|t| keep(t))
            .map(|t| t["name"].clone())
            .collect()
    };
    let http = names(&|t| tool_param_headers(&t["inputSchema"]).is_ok());
    let stdio = names(&|_| true);
    ensure(
        Value::from(http.clone()) == row["expected_visible_tool_names_http"],
        || format!("http list {http:?}"),
    )?;
    ensure(
        Value::from(stdio.clone()) == row["expected_visible_tool_names_stdio"],
        || format!("stdio list {stdio:?}"),
    )
}

#[test]
fn x_mcp_header_tools() {
    let doc = load_vectors("x-mcp-header-tools.json");
    let mut report = Report::default();
    let filtering = &doc["list_filtering"];
    report.row(id(filtering), list_filtering_row(filtering));
    for row in rows(&doc, "vectors") {
        report.row(id(row), tool_row(row));
    }
    report.finish("x-mcp-header-tools.json", 28);
}

// ---------------------------------------------------------------------------------------
// request-headers.json

fn example_row(row: &Value) -> Result<(), String> {
    let method = row["method"].as_str().ok_or("no method")?;
    let params = row.get("params").cloned().unwrap_or_else(|| json!({}));
    let got = request_headers(method, &params, VERSION, &[]).map_err(|e| e.to_string())?;
    // Order: version, method, then name.
    ensure(
        got[0].0 == MCP_PROTOCOL_VERSION && got[1].0 == MCP_METHOD,
        || format!("order {got:?}"),
    )?;
    let want: BTreeMap<String, String> = row["headers"]
        .as_object()
        .ok_or("no headers")?
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
        .collect();
    let got = as_map(&got);
    ensure(got == want, || format!("headers {got:?}, want {want:?}"))
}

fn name_source_row(method: &str, source: &str) -> Result<(), String> {
    // "params.taskId (tasks extension, SEP-2663)" -> "taskId"
    let field = source
        .strip_prefix("params.")
        .and_then(|s| s.split_whitespace().next())
        .ok_or_else(|| format!("unparsed source {source:?}"))?;
    let mut params = serde_json::Map::new();
    params.insert(field.to_owned(), json!("n a/m\u{e9}"));
    let got =
        request_headers(method, &Value::Object(params), VERSION, &[]).map_err(|e| e.to_string())?;
    let value = find_header(&got, MCP_NAME).ok_or("no Mcp-Name")?;
    ensure(
        decode_header_value(value).as_deref() == Ok("n a/m\u{e9}"),
        || format!("Mcp-Name {value:?}"),
    )?;
    // Without the source member the request cannot be sent.
    match request_headers(method, &json!({}), VERSION, &[]) {
        Err(HeaderError::MissingName { .. }) => Ok(()),
        other => Err(format!("missing {field}: {other:?}")),
    }
}

fn no_name_row(method: &str) -> Result<(), String> {
    // Even with a `name` in params, these methods send version and method only.
    let params = json!({"name": "x", "uri": "y", "arguments": {"a": 1}});
    let declared = [ParamHeader {
        name: "A".into(),
        path: vec!["a".into()],
        kind: Primitive::Integer,
    }];
    let got = request_headers(method, &params, VERSION, &declared).map_err(|e| e.to_string())?;
    let want = vec![
        (MCP_PROTOCOL_VERSION.to_owned(), VERSION.to_owned()),
        (MCP_METHOD.to_owned(), method.to_owned()),
    ];
    ensure(got == want, || format!("headers {got:?}"))
}

#[test]
fn request_headers_table() {
    let doc = load_vectors("request-headers.json");
    let mut report = Report::default();
    for (i, row) in rows(&doc, "examples").iter().enumerate() {
        let rid = format!("examples[{i}] {}", row["method"].as_str().unwrap_or("?"));
        report.row(&rid, example_row(row));
    }
    for (method, source) in doc["mcp_name_source"].as_object().expect("mcp_name_source") {
        let rid = format!("mcp_name_source {method}");
        let r = source
            .as_str()
            .ok_or_else(|| "source not a string".to_owned())
            .and_then(|s| name_source_row(method, s));
        report.row(&rid, r);
    }
    for method in rows(&doc, "no_mcp_name") {
        let m = method.as_str().unwrap_or("?");
        report.row(&format!("no_mcp_name {m}"), no_name_row(m));
    }
    // `always`: version and method on every request, notifications included ("harmless").
    let always = doc["always"].as_object().expect("always");
    report.row(
        "always",
        ensure(
            always.contains_key(MCP_PROTOCOL_VERSION) && always.contains_key(MCP_METHOD),
            || "header names differ from the table".into(),
        )
        .and_then(|()| no_name_row("notifications/initialized")),
    );
    // `legacy_2025`: only the names are ours to check.
    let legacy = doc["legacy_2025"].as_object().expect("legacy_2025");
    report.row(
        "legacy_2025",
        ensure(
            legacy.contains_key(MCP_SESSION_ID) && legacy.contains_key(LAST_EVENT_ID),
            || "header names differ from the table".into(),
        ),
    );
    report.finish("request-headers.json", 20);
}

/// `mcp_param`: mirrored arguments go on `tools/call` only, after the standard headers.
#[test]
fn param_headers_follow_standard_headers() {
    let declared = tool_param_headers(&json!({"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "n": {"type": "integer", "x-mcp-header": "N"}
    }}))
    .expect("valid tool");
    let params =
        json!({"name": "t", "arguments": {"region": "eu west", "n": 9_007_199_254_740_992_u64}});
    assert!(matches!(
        request_headers("tools/call", &params, VERSION, &declared),
        Err(HeaderError::IntegerOutOfRange { .. })
    ));
    let params = json!({"name": "t", "arguments": {"region": " eu", "n": -3}});
    let got = request_headers("tools/call", &params, VERSION, &declared).expect("headers");
    let names: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names[..3], [MCP_PROTOCOL_VERSION, MCP_METHOD, MCP_NAME]);
    assert_eq!(
        find_header(&got, "mcp-param-region"),
        Some(encode_header_value(" eu").as_str())
    );
    assert_eq!(find_header(&got, "MCP-PARAM-N"), Some("-3"));
}
