//! The Rust SDK's server (rmcp 3.11) used as a peer by the interop tests: `add`, and
//! `sample` and `roots`, which ask the client through rmcp's own API (legacy: a
//! `sampling/createMessage` or `roots/list` request mid-call; 2026-07-28: an
//! `input_required` round, then the retry's `inputResponses`).
//!
//! Included with `#[path]` by `tests/interop_client_features.rs` (served in process over
//! loopback HTTP) and by the `rmcp_stdio_server` example (served over stdio).

// Sampling is deprecated in 2026-07-28 (SEP-2577); rmcp marks its API so.
#![allow(deprecated)]

use rmcp::handler::server::tool::InputResponses;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResponse, CallToolResult, ContentBlock, CreateMessageRequest,
    CreateMessageRequestParams, ErrorData, InputRequest, InputRequests, InputRequiredResult,
    ListRootsRequest, ProtocolVersion, SamplingMessage,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{schemars, tool, tool_router};
use serde::Deserialize;
use serde_json::Value;

#[derive(Clone)]
pub struct Calc;

#[derive(Deserialize, schemars::JsonSchema)]
pub struct AddArgs {
    a: i64,
    b: i64,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct SampleArgs {
    prompt: String,
}

fn text_of(result: &Value) -> String {
    result["content"]["text"].as_str().unwrap_or("").to_owned()
}

fn ask(prompt: &str) -> CreateMessageRequestParams {
    CreateMessageRequestParams::new(vec![SamplingMessage::user_text(prompt)], 50)
}

#[tool_router(server_handler)]
impl Calc {
    #[tool(description = "Add two numbers")]
    fn add(&self, Parameters(AddArgs { a, b }): Parameters<AddArgs>) -> String {
        (a + b).to_string()
    }

    /// Legacy: a `sampling/createMessage` request mid-call; 2026-07-28: an
    /// `input_required` result, then the retry's `inputResponses`.
    #[tool(description = "Ask the client to sample")]
    async fn sample(
        &self,
        Parameters(SampleArgs { prompt }): Parameters<SampleArgs>,
        InputResponses(responses): InputResponses,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let modern = context
            .protocol_version()
            .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
        let text = if modern {
            let answered = responses.as_ref().and_then(|r| r.get("llm"));
            let Some(answer) = answered else {
                let mut requests = InputRequests::new();
                requests.insert(
                    "llm".to_owned(),
                    InputRequest::CreateMessage(CreateMessageRequest::new(ask(&prompt))),
                );
                return Ok(InputRequiredResult::new(Some(requests), None).into());
            };
            text_of(&serde_json::to_value(answer).expect("json"))
        } else {
            let result = context
                .peer
                .create_message(ask(&prompt))
                .await
                .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
            text_of(&serde_json::to_value(result).expect("json"))
        };
        Ok(CallToolResult::success(vec![ContentBlock::text(format!("sampled={text}"))]).into())
    }

    /// Legacy: a `roots/list` request mid-call; 2026-07-28: an `input_required` round.
    #[tool(description = "Ask the client for its roots")]
    async fn roots(
        &self,
        InputResponses(responses): InputResponses,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let modern = context
            .protocol_version()
            .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
        let listed = if modern {
            let Some(answer) = responses.as_ref().and_then(|r| r.get("roots")) else {
                let mut requests = InputRequests::new();
                requests.insert(
                    "roots".to_owned(),
                    InputRequest::ListRoots(ListRootsRequest::default()),
                );
                return Ok(InputRequiredResult::new(Some(requests), None).into());
            };
            serde_json::to_value(answer).expect("json")
        } else {
            let result = context
                .peer
                .list_roots()
                .await
                .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
            serde_json::to_value(result).expect("json")
        };
        let uris: Vec<&str> = listed["roots"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| r["uri"].as_str())
            .collect();
        Ok(CallToolResult::success(vec![ContentBlock::text(format!(
            "roots={}",
            uris.join(" ")
        ))])
        .into())
    }
}
