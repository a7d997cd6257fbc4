//! `tools/list` results over HTTP: learn each tool's `x-mcp-header` declarations, and
//! drop (and report) tools whose declarations are invalid.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::value::RawValue;

use super::HttpLink;
use crate::client::{CallId, Event};
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
        let last = result.get("nextCursor").is_none_or(|c| c.get() == "null");
        let listing = self.client.call_of(rpc);
        let excluded = self.learn_tools_retaining(listing, &mut tools);
        if last {
            // The last page of a listing (no cursor to follow): every tool the server
            // has is now known (unless names had to be let go), and a call to any other
            // needs no declarations.
            self.learning.listed = !self.names_let_go;
            self.forget_unlisted_tools(listing);
        }
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

    /// Learns the declarations of tools already inspected (a cached listing, whole).
    pub(super) fn learn_tools(&mut self, mut tools: Vec<Box<RawValue>>) {
        let _ = self.learn_tools_retaining(None, &mut tools);
        self.forget_unlisted_tools(None);
    }

    /// `listing` ended: what neither it nor another listing still running named is
    /// forgotten, so that what the server can make the client keep is what its listings
    /// in progress hold, not the union of every listing.
    fn forget_unlisted_tools(&mut self, listing: Option<CallId>) {
        self.names_let_go = false;
        let client = &self.client;
        let ended = |id: &Option<CallId>| id.is_none_or(|c| !client.is_running(c));
        let mut named: BTreeSet<String> = self.listed_names.remove(&listing).unwrap_or_default();
        // Listings that ended without their last page (failed, cancelled) name nothing.
        self.listed_names
            .retain(|id, _| !ended(id) && *id != listing);
        for names in self.listed_names.values() {
            named.extend(names.iter().cloned());
        }
        self.tool_headers.retain(|name, _| named.contains(name));
        self.excluded_tools.retain(|name, _| named.contains(name));
    }

    /// What the learned declarations hold in memory (names and header paths).
    pub(super) fn learned_bytes(&self) -> usize {
        let headers = (self.tool_headers.iter()).map(|(name, headers)| {
            let paths = (headers.iter())
                .map(|h| h.name.len() + h.path.iter().map(String::len).sum::<usize>())
                .sum::<usize>();
            name.len() + paths
        });
        let excluded = self.excluded_tools.keys().map(String::len);
        let listed = self.listed_names.values().flatten().map(String::len);
        headers.chain(excluded).chain(listed).sum()
    }

    /// Learns each tool's declarations, and removes the tools whose declarations are
    /// invalid, returning them with the reason.
    fn learn_tools_retaining(
        &mut self,
        listing: Option<CallId>,
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
            let held: usize = self.listed_names.values().map(BTreeSet::len).sum();
            if held >= self.max_learned_tools {
                // Listings piled up names (many at once, or pages past what a listing
                // may have): start over from this page.
                self.listed_names.clear();
                self.tool_headers.clear();
                self.excluded_tools.clear();
                self.names_let_go = true;
            }
            let names = self.listed_names.entry(listing).or_default();
            names.insert(name.clone());
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
