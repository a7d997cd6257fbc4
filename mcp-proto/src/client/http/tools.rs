//! `tools/list` results over HTTP: learn each tool's `x-mcp-header` declarations, and
//! drop (and report) tools whose declarations are invalid.

use std::collections::BTreeMap;

use serde_json::value::RawValue;

use super::HttpLink;
use crate::client::Event;
use crate::http::xmcp::tool_declarations;
use crate::jsonrpc::{self, RequestId, Response};
use crate::version::Era;

impl HttpLink {
    /// Looks at a response before the protocol machine does.
    pub(super) fn inspect_response(&mut self, r: Response) -> Response {
        let Some(RequestId::Number(rpc)) = r.id else {
            return r;
        };
        let listing = self
            .client
            .request_info(rpc)
            .is_some_and(|(method, _)| method == "tools/list");
        if !listing || self.era() != Some(Era::Modern) {
            return r;
        }
        let Ok(raw) = &r.outcome else {
            return r;
        };
        // Each tool stays verbatim: only the list around them is rebuilt.
        let Ok(mut result) = serde_json::from_str::<BTreeMap<String, Box<RawValue>>>(raw.get())
        else {
            return r;
        };
        let Some(Ok(mut tools)) = result
            .get("tools")
            .map(|t| serde_json::from_str::<Vec<Box<RawValue>>>(t.get()))
        else {
            return r;
        };
        // The last page of a listing (no cursor to follow): every tool the server has is
        // now known, and a call to any other needs no declarations.
        if result.get("nextCursor").is_none_or(|c| c.get() == "null") {
            self.learning.listed = true;
        }
        let excluded = self.learn_tools_retaining(&mut tools);
        if excluded.is_empty() {
            return r;
        }
        result.insert("tools".to_owned(), jsonrpc::to_raw(&tools));
        for (tool, reason) in excluded {
            self.events.push_back(Event::ToolExcluded { tool, reason });
        }
        Response {
            id: r.id,
            outcome: Ok(jsonrpc::to_raw(&result)),
        }
    }

    /// Learns the declarations of tools already inspected (a cached listing).
    pub(super) fn learn_tools(&mut self, mut tools: Vec<Box<RawValue>>) {
        let _ = self.learn_tools_retaining(&mut tools);
    }

    /// Learns each tool's declarations, and removes the tools whose declarations are
    /// invalid, returning them with the reason.
    fn learn_tools_retaining(
        &mut self,
        tools: &mut Vec<Box<RawValue>>,
    ) -> Vec<(String, crate::http::xmcp::InvalidAnnotation)> {
        let mut excluded = Vec::new();
        tools.retain(|raw_tool| {
            // Read for its name and annotations only, never as a whole `Value`: a
            // listing may be as large as a message.
            let Some((name, declared)) = tool_declarations(raw_tool.get()) else {
                // No name: nothing can call it, so nothing to learn.
                return true;
            };
            match declared {
                Ok(headers) => {
                    self.excluded_tools.remove(&name);
                    self.tool_headers.insert(name, headers);
                    true
                }
                Err(reason) => {
                    self.tool_headers.remove(&name);
                    self.excluded_tools.insert(name.clone(), reason.clone());
                    excluded.push((name, reason));
                    false
                }
            }
        });
        excluded
    }
}
