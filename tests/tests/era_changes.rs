//! Era detection against a server that changes era between connections.

use mcp_proto::client::ClientConfig;
use mcp_proto::version::{Era, EraMode, ProtocolVersion};
use mcp_tests::http_sim::{HttpSim, Reply, SeenRequest};
use serde_json::json;

/// An origin cached as legacy (2025-11-25) has become modern-only since. A server that
/// no longer speaks the legacy era refuses the `initialize` that the cached verdict sent
/// the 2025 way: `-32602` "Unsupported protocol version" with
/// `data.supported: ["2026-07-28"]` (2025-11-25 lifecycle; it is what this project's own
/// server answers with `versions.accepted = [2026-07-28]`, `server/legacy.rs`,
/// `initialize`). That refusal names a modern version the client speaks: the verdict is
/// stale. `mcp_proto::verdicts` and `mcp_io::EraCache` promise that "the machine itself
/// handles a verdict gone stale (it probes after all, once)"; instead the connection
/// closes with `Refused`, and since nothing forgets the verdict, every later connection
/// through the same cache fails the same way.
#[test]
fn a_stale_legacy_verdict_refused_with_a_2025_version_error_is_probed_again() {
    for status in [200, 400] {
        let modern_only = move |req: &SeenRequest| match req.rpc_method() {
            "initialize" => Reply::json(
                status,
                &json!({"jsonrpc":"2.0","id":req.body["id"],"error":{"code":-32602,
                    "message":"Unsupported protocol version",
                    "data":{"supported":["2026-07-28"],"requested":"2025-11-25"}}}),
            ),
            "server/discover" => Reply::json(
                200,
                &json!({"jsonrpc":"2.0","id":req.body["id"],"result":{"resultType":"complete",
                    "supportedVersions":["2026-07-28"],"capabilities":{},"ttlMs":0}}),
            ),
            _ => Reply::with_body(404, &[], ""),
        };
        let known = Some((Era::Legacy, ProtocolVersion::V2025_11_25));
        let config = ClientConfig::new("hostile-server-test", "1.0")
            .era_mode(EraMode::Auto)
            .known_era(known);
        let mut sim = HttpSim::new(config, modern_only);
        sim.connect();
        let methods: Vec<_> = sim.requests.iter().map(|r| r.rpc_method()).collect();
        assert_eq!(
            sim.client.close_reason(),
            None,
            "HTTP {status}: a stale legacy verdict refused by a modern-only server should be \
             probed again, once; requests: {methods:?}"
        );
        assert_eq!(methods, ["initialize", "server/discover"], "HTTP {status}");
    }
}
