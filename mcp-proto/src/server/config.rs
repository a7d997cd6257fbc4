//! What a [`Server`](super::Server) is built from: identity, versions, limits, cache hints
//! and the registry of tools, resources and prompts.

use std::fmt;

use crate::model::Implementation;
use crate::version::VersionPolicy;

use super::registry::{Prompt, Resource, Tool};
use super::state::{PlainStateCodec, RequestStateCodec};

/// Bounds on what a client can make the server hold or repeat.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerLimits {
    /// Largest single message (one stdio line), in bytes. Longer lines are skipped and
    /// answered with `-32600` (with their id when it can be read from their first or
    /// last bytes). Default 8 MiB.
    pub max_line_bytes: usize,
    /// Deepest nesting of arrays and objects in a message received, the message object
    /// being level 1; deeper messages are answered with `-32600` before being decoded.
    /// Default [`Limits::DEFAULT_MAX_NESTING_DEPTH`](crate::Limits::DEFAULT_MAX_NESTING_DEPTH)
    /// (64), for the reasons given there.
    pub max_nesting_depth: usize,
    /// Memory one message may take once parsed, estimated from its text in one pass
    /// before it is parsed (as for `max_task_bytes`: `{"a":0}`, seven bytes of text,
    /// takes a map node of over 700 bytes). A message past it is answered with `-32600`
    /// naming the limit, never parsed. Messages of up to a 256th of it are not scanned.
    /// Default 64 MiB: eight times `max_line_bytes` of text, where an 8 MiB message of
    /// one-member objects would take close to a gigabyte.
    pub max_parsed_bytes: usize,
    /// Legacy era: server→client input requests (`elicitation/create`, …) awaiting the
    /// client's answer, over all calls. A tool call that would exceed it fails with
    /// `-32603`. Default 64.
    pub max_pending_inputs: usize,
    /// Tool calls whose work was deferred ([`ToolOutcome::Deferred`](super::ToolOutcome::Deferred))
    /// waiting for it at once, over every session and client; one more is answered
    /// with `-32603` at once and its completer cancelled. Default 1024.
    pub max_deferred_calls: usize,
    /// What the calls waiting for deferred work may hold in memory together (their
    /// arguments and answers so far, estimated); a call past it is answered with
    /// `-32603` at once. Default 64 MiB.
    pub max_deferred_bytes: usize,
    /// Of `max_deferred_bytes`, what the calls of one principal waiting for deferred
    /// work may hold together (all unauthenticated clients together are one principal);
    /// a call past it is answered with `-32603` at once. Without it, one client's few
    /// calls with large arguments held the whole budget, and every other client's
    /// deferred calls were refused until they ended. Default 16 MiB, a quarter of
    /// `max_deferred_bytes`, as for `max_task_bytes_per_principal`.
    pub max_deferred_bytes_per_principal: usize,
    /// Input rounds one tool call may take (both eras) before it fails with an `isError`
    /// result. Default 10.
    pub max_input_rounds: u32,
    /// Input requests a tool may ask for in one round. Default 16.
    pub max_inputs_per_round: usize,
    /// Legacy era: resources one session may be subscribed to; one more
    /// `resources/subscribe` is refused with `-32603` (and a URI longer than 8 KiB with
    /// `-32602`), as is one that would make the session's URIs take more than 128 KiB
    /// as JSON (what a session record can keep for a session store). Default 256.
    pub max_subscriptions: usize,
    /// 2026-07-28: `subscriptions/listen` streams open at once per authenticated
    /// principal; one more is refused with `-32603`. Default 16.
    pub max_listens: usize,
    /// 2026-07-28: `subscriptions/listen` streams open at once for all unauthenticated
    /// clients together (nothing tells them apart: over HTTP they are also bounded by
    /// the endpoint's open streams); one more is refused with `-32603`. Default 64: with
    /// `max_listens` for them, the 17th anonymous client of an HTTP server could not
    /// listen.
    pub max_anonymous_listens: usize,
    /// 2026-07-28: URIs in one listen's `resourceSubscriptions`, and task ids in its
    /// `taskIds`; more is `-32602`, as is a URI longer than 8 KiB or URIs taking more than
    /// 128 KiB together. Default 256.
    pub max_listen_items: usize,
    /// Bytes the stored tasks keep, over all of them: what clients sent (each task's
    /// arguments, capabilities and answers) and the outcomes their handlers gave, as
    /// held in memory (estimated from above; a parsed value takes many times its JSON
    /// text, ten times and more for small members). A new task that would pass it
    /// makes room by dropping the oldest ended tasks, and is refused (`-32603`) when only
    /// running ones are left. Default 64 MiB.
    pub max_task_bytes: usize,
    /// Of `max_task_bytes`, what the tasks of one principal may keep, over all its
    /// sessions and both eras (all unauthenticated clients together are one principal):
    /// a new task or answer past it makes room by dropping that principal's oldest ended
    /// tasks, and is refused (`-32603`) when none may go. Without it, one principal's
    /// tasks, never ended, kept every other from starting one for their lifetime.
    /// Default 16 MiB, a quarter of `max_task_bytes`, as the count of a principal's tasks
    /// is of the server's.
    pub max_task_bytes_per_principal: usize,
    /// Legacy era: bytes kept for the tool calls of one session that wait for more input
    /// (their arguments and their earlier rounds' answers), as held in memory (estimated
    /// as for `max_task_bytes`). A call that would pass it by waiting, or an answer that
    /// would, fails its call with an `isError` result. Default 16 MiB.
    pub max_input_bytes: usize,
}

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits {
            max_line_bytes: 8 * 1024 * 1024,
            max_nesting_depth: crate::Limits::DEFAULT_MAX_NESTING_DEPTH,
            max_parsed_bytes: 64 * 1024 * 1024,
            max_pending_inputs: 64,
            max_deferred_calls: 1024,
            max_deferred_bytes: 64 * 1024 * 1024,
            max_deferred_bytes_per_principal: 16 * 1024 * 1024,
            max_input_rounds: 10,
            max_inputs_per_round: 16,
            max_subscriptions: 256,
            max_listens: 16,
            max_anonymous_listens: 64,
            max_listen_items: 256,
            max_task_bytes: 64 * 1024 * 1024,
            max_task_bytes_per_principal: 16 * 1024 * 1024,
            max_input_bytes: 16 * 1024 * 1024,
        }
    }
}

/// Answers `completion/complete`: `(ref, argument, partial value, context arguments)`
/// to the suggested values (at most 100 are sent, with `total` and `hasMore`).
pub type CompletionHandler = Box<
    dyn FnMut(
            &serde_json::Value,
            &str,
            &str,
            &serde_json::Map<String, serde_json::Value>,
        ) -> Result<Vec<String>, crate::jsonrpc::ErrorObject>
        + Send,
>;

/// Reads a resource outside [`ServerConfig::resources`] (one named by a resource
/// template): given the URI, the `ReadResourceResult` JSON (`{contents: [...]}`), or
/// `None` when there is no such resource.
pub type ResourceReader = Box<dyn FnMut(&str) -> Option<serde_json::Value> + Send>;

/// Who may reuse a cached result (2026-07-28 `cacheScope`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CacheScope {
    /// Any user and any shared cache may reuse it.
    #[default]
    Public,
    /// Only the same authorisation context may reuse it.
    Private,
}

impl CacheScope {
    /// The wire string: `"public"` or `"private"`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            CacheScope::Public => "public",
            CacheScope::Private => "private",
        }
    }
}

/// Everything a server is built from. Start with [`ServerConfig::new`], then set fields
/// or chain the `with_*` methods.
#[non_exhaustive]
pub struct ServerConfig {
    /// The server's `Implementation` (legacy `serverInfo`, modern `_meta` serverInfo).
    pub info: Implementation,
    /// Instructions for the model, sent in `initialize` and `server/discover` results.
    pub instructions: Option<String>,
    /// The versions served. Default: 2025-06-18, 2025-11-25 and 2026-07-28. Without a
    /// legacy version `initialize` is refused; without a modern one the modern leg is off
    /// and `server/discover` is an unknown method.
    pub versions: VersionPolicy,
    /// Items per page of `tools/list`, `resources/list` and `prompts/list`; `None` (or 0)
    /// gives one page.
    pub page_size: Option<usize>,
    /// Bounds.
    pub limits: ServerLimits,
    /// 2026-07-28 `ttlMs` on discover, list and read results. Default 60 000.
    pub ttl_ms: u64,
    /// 2026-07-28 `cacheScope` on the same results. Default public.
    pub cache_scope: CacheScope,
    /// The tools, listed in this order.
    pub tools: Vec<Tool>,
    /// The resources, listed in this order.
    pub resources: Vec<Resource>,
    /// The prompts, listed in this order.
    pub prompts: Vec<Prompt>,
    /// The resource templates (`ResourceTemplate` objects), listed in this order by
    /// `resources/templates/list`.
    pub resource_templates: Vec<serde_json::Value>,
    /// Answers `completion/complete` (and advertises `completions`): the `ref`, the
    /// argument name, its partial value and `context.arguments` give the values.
    pub completion: Option<CompletionHandler>,
    /// Skills served through the Skills extension (declared, with `directoryRead`, when
    /// there is at least one).
    pub skills: Vec<super::ServedSkill>,
    /// How 2026-07-28 `requestState` is written and read back. Default
    /// [`PlainStateCodec`] (not integrity-protected).
    pub state_codec: Box<dyn RequestStateCodec>,
    /// Reads the resources the templates name (tried after the static `resources`).
    pub resource_reader: Option<ResourceReader>,
    /// Advertise `logging` and serve legacy `logging/setLevel`; tools' log notes are
    /// sent only when this is on. Default off.
    pub logging: bool,
    /// Advertise `resources.subscribe`, serve legacy `resources/subscribe` and
    /// `resources/unsubscribe`, and honour the `resourceSubscriptions` of 2026-07-28
    /// listens ([`Server::resource_updated`](super::Server::resource_updated) then
    /// notifies the subscribed session and listens). Default off.
    pub resource_subscriptions: bool,
    /// Report changes of the tools, prompts and resources lists: their capabilities carry
    /// `listChanged: true`, and a change ([`Server::add_tool`](super::Server::add_tool),
    /// [`Server::list_changed`](super::Server::list_changed), …) is notified to legacy
    /// sessions and to the 2026 listens that ask for it. Default off.
    pub list_changed: bool,
}

impl ServerConfig {
    /// A server with no tools, resources or prompts and default settings.
    #[must_use]
    pub fn new(info: Implementation) -> Self {
        ServerConfig {
            info,
            instructions: None,
            versions: VersionPolicy::default(),
            page_size: None,
            limits: ServerLimits::default(),
            ttl_ms: 60_000,
            cache_scope: CacheScope::default(),
            tools: Vec::new(),
            resources: Vec::new(),
            prompts: Vec::new(),
            resource_templates: Vec::new(),
            completion: None,
            skills: Vec::new(),
            state_codec: Box::new(PlainStateCodec),
            resource_reader: None,
            logging: false,
            resource_subscriptions: false,
            list_changed: false,
        }
    }

    /// Reads template resources with `reader`.
    #[must_use]
    pub fn with_resource_reader(mut self, reader: ResourceReader) -> Self {
        self.resource_reader = Some(reader);
        self
    }

    /// Turns on `logging` (see [`ServerConfig::logging`]).
    #[must_use]
    pub fn with_logging(mut self) -> Self {
        self.logging = true;
        self
    }

    /// Turns on resource subscriptions (see [`ServerConfig::resource_subscriptions`]).
    #[must_use]
    pub fn with_resource_subscriptions(mut self) -> Self {
        self.resource_subscriptions = true;
        self
    }

    /// Turns on list change notifications (see [`ServerConfig::list_changed`]).
    #[must_use]
    pub fn with_list_changed(mut self) -> Self {
        self.list_changed = true;
        self
    }

    /// Adds a tool.
    #[must_use]
    pub fn with_tool(mut self, tool: Tool) -> Self {
        self.tools.push(tool);
        self
    }

    /// Adds a resource.
    #[must_use]
    pub fn with_resource(mut self, resource: Resource) -> Self {
        self.resources.push(resource);
        self
    }

    /// Adds a prompt.
    #[must_use]
    pub fn with_prompt(mut self, prompt: Prompt) -> Self {
        self.prompts.push(prompt);
        self
    }

    /// Adds a resource template (a `ResourceTemplate` object).
    #[must_use]
    pub fn with_resource_template(mut self, template: serde_json::Value) -> Self {
        self.resource_templates.push(template);
        self
    }

    /// Answers `completion/complete` with `handler`.
    #[must_use]
    pub fn with_completion(mut self, handler: CompletionHandler) -> Self {
        self.completion = Some(handler);
        self
    }

    /// Adds a skill (the Skills extension).
    #[must_use]
    pub fn with_skill(mut self, skill: super::ServedSkill) -> Self {
        self.skills.push(skill);
        self
    }

    /// Sets the instructions.
    #[must_use]
    pub fn with_instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }
}

impl fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerConfig")
            .field("info", &self.info)
            .field("instructions", &self.instructions)
            .field("versions", &self.versions)
            .field("page_size", &self.page_size)
            .field("limits", &self.limits)
            .field("ttl_ms", &self.ttl_ms)
            .field("cache_scope", &self.cache_scope)
            .field("tools", &self.tools)
            .field("resources", &self.resources)
            .field("prompts", &self.prompts)
            .field("resource_templates", &self.resource_templates)
            .field("completion", &self.completion.is_some())
            .field("skills", &self.skills)
            .field("resource_reader", &self.resource_reader.is_some())
            .field("logging", &self.logging)
            .field("resource_subscriptions", &self.resource_subscriptions)
            .field("list_changed", &self.list_changed)
            .finish_non_exhaustive()
    }
}
