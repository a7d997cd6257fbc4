//! Every row of `vectors/era-detection.json`, through the classifiers and (for stdio)
//! through the client machine itself.

use mcp_proto::client::{ClientConfig, ConnId, Event, Transmit};
use mcp_proto::jsonrpc::{Message, Response};
use mcp_proto::version::{
    HttpProbeOutcome, HttpProbeVerdict, ProbeOutcome, ProbeVerdict, ProtocolVersion, VersionPolicy,
    classify_http_probe, classify_probe,
};
use mcp_tests::{Scripted, Sim, load_vectors};
use serde_json::Value;

fn as_response(body: &Value) -> Option<Response> {
    let text = match body {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    match Message::decode(text.as_bytes()) {
        Ok(Message::Response(r)) => Some(r),
        _ => None,
    }
}

/// The verdict as the vector names it.
fn name_of(v: &ProbeVerdict) -> &'static str {
    match v {
        ProbeVerdict::Modern { .. } | ProbeVerdict::RetryModern { .. } => "modern",
        ProbeVerdict::Legacy { .. } => "legacy",
        ProbeVerdict::ModernRequestError(_) => "modern-request-error",
        _ => "none",
    }
}

fn expected(row: &Value) -> &str {
    let v = row["expected"]["verdict"].as_str().unwrap();
    // "legacy-or-error" (-32601 to discover): decision 4 of the design reads it as legacy.
    if v == "legacy-or-error" { "legacy" } else { v }
}

#[test]
fn every_http_row() {
    let doc = load_vectors("era-detection.json");
    let policy = VersionPolicy::default();
    let mut seen = 0;
    for row in doc["vectors"].as_array().unwrap() {
        if row["transport"] != "streamable-http" {
            continue;
        }
        seen += 1;
        let id = row["id"].as_str().unwrap();
        let probed = row["client_probe_version"].as_str().unwrap();
        let out = &row["probe_outcome"];
        let response = if let Some(sse) = out.get("sse").and_then(Value::as_str) {
            let data: String = sse
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(str::trim_start)
                .collect();
            as_response(&Value::String(data))
        } else {
            out.get("body").and_then(as_response)
        };
        let outcome = if out.get("timeout").is_some() {
            HttpProbeOutcome::Timeout
        } else if out.get("network_error").is_some() {
            HttpProbeOutcome::NetworkError
        } else {
            HttpProbeOutcome::Response {
                status: out["http_status"].as_u64().unwrap() as u16,
                message: response.as_ref(),
            }
        };
        let got = match classify_http_probe(&outcome, probed, &policy) {
            HttpProbeVerdict::Era(v) => name_of(&v),
            HttpProbeVerdict::AuthRequired => "auth-required",
            HttpProbeVerdict::Error => "error",
            _ => "other",
        };
        assert_eq!(got, expected(row), "row {id}");
    }
    assert!(seen >= 20, "only {seen} http rows");
}

#[test]
fn every_stdio_row_through_the_classifier() {
    let doc = load_vectors("era-detection.json");
    let policy = VersionPolicy::default();
    for row in doc["vectors"].as_array().unwrap() {
        if row["transport"] != "stdio" {
            continue;
        }
        let id = row["id"].as_str().unwrap();
        let probed = row["client_probe_version"].as_str().unwrap();
        let out = &row["probe_outcome"];
        let response = out.get("line").and_then(as_response);
        let outcome = if out.get("timeout").is_some() {
            ProbeOutcome::Timeout
        } else if out.get("process_exited").is_some() {
            ProbeOutcome::ProcessExited
        } else {
            match &response.as_ref().unwrap().outcome {
                Ok(raw) => ProbeOutcome::Result(raw.get()),
                Err(e) => ProbeOutcome::Error(e),
            }
        };
        let verdict = classify_probe(&outcome, probed, &policy);
        assert_eq!(name_of(&verdict), expected(row), "row {id}");
        if id == "stdio-32022" {
            assert_eq!(
                verdict,
                ProbeVerdict::RetryModern {
                    version: ProtocolVersion::V2026_07_28
                }
            );
        }
        if id == "stdio-process-exit" {
            assert!(matches!(
                verdict,
                ProbeVerdict::Legacy { restart: true, .. }
            ));
        }
    }
}

/// The machine's next move after each stdio probe outcome: connect modern, send
/// `initialize`, probe again, or ask for a fresh process.
#[test]
fn every_stdio_row_through_the_machine() {
    let doc = load_vectors("era-detection.json");
    for row in doc["vectors"].as_array().unwrap() {
        if row["transport"] != "stdio" {
            continue;
        }
        let id = row["id"].as_str().unwrap().to_owned();
        let out = row["probe_outcome"].clone();
        let line = out.get("line").cloned();
        let mut first = true;
        let peer = Scripted::new(move |msg: &Value| {
            if !first {
                return Vec::new();
            }
            first = false;
            assert_eq!(msg["method"], "server/discover");
            match &line {
                Some(l) => {
                    let mut l = l.clone();
                    // Answer the id actually used.
                    if !l["id"].is_null() {
                        l["id"] = msg["id"].clone();
                    }
                    vec![l.to_string()]
                }
                None => Vec::new(),
            }
        });
        let mut sim = Sim::new(ClientConfig::new("vectors", "0"), peer);
        if out.get("process_exited").is_some() {
            sim.step();
            sim.client.handle_eof(sim.now, ConnId::STDIO);
            let mut sink = Vec::new();
            let t = sim.client.poll_transmit(sim.now, &mut sink);
            assert_eq!(t, Some(Transmit::Respawn), "row {id}");
            continue;
        }
        if out.get("timeout").is_some() {
            sim.step();
            let deadline = sim.client.poll_timeout().expect("probe deadline");
            sim.now = deadline;
            sim.client.handle_timeout(sim.now);
        } else {
            sim.step();
        }
        let mut tail = Vec::new();
        sim.client.poll_transmit(sim.now, &mut tail);
        let next: Vec<Value> = tail
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice(l).unwrap())
            .collect();
        let method = next
            .first()
            .and_then(|m| m["method"].as_str())
            .unwrap_or("");
        match expected(row) {
            "legacy" => assert_eq!(method, "initialize", "row {id}"),
            "modern" if id == "stdio-32022" => {
                assert_eq!(method, "server/discover", "row {id}: probes again");
                assert_eq!(
                    next[0]["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
                    "2026-07-28"
                );
            }
            "modern" => assert!(
                sim.events.iter().any(|e| matches!(e, Event::Connected(_))),
                "row {id}"
            ),
            other => panic!("row {id}: unexpected verdict {other}"),
        }
    }
}
