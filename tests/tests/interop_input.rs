//! Sampling, roots and logging against `@modelcontextprotocol/server-everything` over
//! stdio (legacy era): its `trigger-sampling-request` and `get-roots-list` tools ask the
//! client, and it logs through `notifications/message` at the level set with
//! `logging/setLevel`.

use std::sync::{Arc, Mutex};

use mcp_blocking::{Client, Options};
use mcp_proto::client::{
    CallError, ClientConfig, InputAnswer, InputHandler, InputRequest, LogLevel, Root,
};
use mcp_proto::model::ClientCapabilities;
use mcp_proto::version::{Era, EraMode};
use mcp_tests::interop::{Fixture, Model, fixture};
use serde_json::json;

#[test]
fn server_everything_samples_lists_roots_and_logs() {
    let Some(cmd) = fixture(Fixture::Everything) else {
        return;
    };
    let mut caps = ClientCapabilities::with_elicitation();
    caps.sampling = true;
    let config = ClientConfig::new("interop-test", "1.0")
        .era_mode(EraMode::Auto)
        .capabilities(caps)
        .roots(vec![
            Root::new("file:///srv/project").named("project"),
            Root::new("file:///tmp"),
        ]);
    let prompts = Arc::new(Mutex::new(Vec::new()));
    let logs = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&logs);
    let options = Options::new()
        .input_handler(Model(Arc::clone(&prompts)))
        .on_log(move |_, m| {
            sink.lock()
                .unwrap()
                .push((m.level, m.data.get().to_owned()))
        });
    let mut client = Client::connect_stdio_with(cmd, config, options).expect("connect");
    assert_eq!(client.era(), Era::Legacy);

    client
        .set_log_level(LogLevel::Info)
        .expect("logging/setLevel");

    // Roots: answered by the machine from the config.
    let roots = client
        .call_tool("get-roots-list", json!({}))
        .expect("get-roots-list");
    let text = roots.text();
    assert!(
        text.contains("file:///srv/project") && text.contains("file:///tmp"),
        "{text}"
    );
    assert!(text.contains("project"), "{text}");
    // The server logs the roots it received, at info.
    let logged = logs.lock().unwrap().clone();
    assert!(
        logged
            .iter()
            .any(|(level, data)| *level == LogLevel::Info && data.contains("2 root(s)")),
        "{logged:?}"
    );

    // Sampling: answered by the handler.
    let sampled = client
        .call_tool(
            "trigger-sampling-request",
            json!({"prompt": "hello", "maxTokens": 20}),
        )
        .expect("trigger-sampling-request");
    assert_ne!(sampled.is_error, Some(true), "{}", sampled.text());
    assert!(
        sampled.text().contains("sampled reply"),
        "{}",
        sampled.text()
    );
    assert!(
        prompts.lock().unwrap().iter().any(|p| p.contains("hello")),
        "{prompts:?}"
    );

    // Above the level, nothing more arrives from the roots sync.
    client.set_log_level(LogLevel::Emergency).expect("setLevel");
    client.close();
}

/// Consents to every URL elicitation, remembering the URLs shown.
struct Consent(Arc<Mutex<Vec<String>>>);

impl InputHandler for Consent {
    fn answer(&mut self, request: &InputRequest) -> InputAnswer {
        match request {
            InputRequest::Elicitation(p) if p.is_url_mode() => {
                self.0
                    .lock()
                    .unwrap()
                    .push(p.url.clone().unwrap_or_default());
                InputAnswer::Result(json!({"action": "accept"}))
            }
            _ => InputAnswer::decline(),
        }
    }
}

#[test]
fn server_everything_url_elicitation_by_request_and_by_error() {
    let Some(cmd) = fixture(Fixture::Everything) else {
        return;
    };
    let mut caps = ClientCapabilities::with_elicitation();
    caps.elicitation_url = true;
    let config = ClientConfig::new("interop-test", "1.0")
        .era_mode(EraMode::Legacy)
        .capabilities(caps);
    let shown = Arc::new(Mutex::new(Vec::new()));
    let options = Options::new().input_handler(Consent(Arc::clone(&shown)));
    let mut client = Client::connect_stdio_with(cmd, config, options).expect("connect");

    // The request path: elicitation/create in URL mode, consent, a result.
    let args = json!({"url": "https://example.com/flow"});
    let out = client
        .call_tool("trigger-url-elicitation", args.clone())
        .expect("request path");
    assert_ne!(out.is_error, Some(true), "{}", out.text());
    assert_eq!(
        shown.lock().unwrap().as_slice(),
        ["https://example.com/flow"]
    );

    // A URL the policy refuses never reaches the handler; the server hears -32602.
    let out = client
        .call_tool(
            "trigger-url-elicitation",
            json!({"url": "http://example.com/flow"}),
        )
        .expect("refused url");
    assert_eq!(out.is_error, Some(true), "{}", out.text());
    assert_eq!(shown.lock().unwrap().len(), 1);

    // The error path: -32042, its elicitation presented, then a typed error; the retry
    // goes through.
    let args = json!({"url": "https://example.com/other", "errorPath": true});
    let err = client
        .call_tool("trigger-url-elicitation", args.clone())
        .expect_err("-32042");
    let mcp_blocking::Error::Call(CallError::UrlElicitationRequired { elicitations, .. }) = &err
    else {
        panic!("{err:?}");
    };
    assert_eq!(elicitations.len(), 1);
    assert!(
        shown
            .lock()
            .unwrap()
            .contains(&"https://modelcontextprotocol.io".to_owned())
    );
    let out = client
        .call_tool("trigger-url-elicitation", args)
        .expect("retry");
    assert_ne!(out.is_error, Some(true), "{}", out.text());
    client.close();
}
