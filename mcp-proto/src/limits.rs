//! Every bound the machines enforce, in one place.

use std::time::Duration;

/// Limits on everything a peer can make the client hold or repeat.
///
/// The defaults suit a desktop client talking to ordinary tool servers; raise
/// `max_message_bytes` for servers that return very large resources.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// Largest single message (one stdio line), in bytes. Default 8 MiB.
    pub max_message_bytes: usize,
    /// Deepest nesting of arrays and objects in a message received, the message object
    /// being level 1. Default [`Limits::DEFAULT_MAX_NESTING_DEPTH`] (64).
    ///
    /// Checked in one pass over the bytes before a message is decoded, so a deep message
    /// costs no more than a flat one. Without it a result nested a hundred thousand levels
    /// deep would be handed to the caller verbatim, and any recursive walk over it (a
    /// `serde_json::Value`, its `Drop`, a schema validator) could exhaust the stack. A
    /// message over the limit fails the call it answers with
    /// [`crate::jsonrpc::DecodeError::TooDeep`].
    pub max_nesting_depth: usize,
    /// Memory a message may take once parsed, estimated from its text in one pass before
    /// it is decoded (`{"a":0}`, seven bytes of text, takes a map node of over 700 bytes
    /// as a value). Counted over what the client reads into values: a request's or
    /// notification's params, an error (its `data`); a successful result, kept verbatim,
    /// is not counted, but the parts of one the client reads (the input requests of an
    /// `input_required` result) are. A message past it fails the call it answers with
    /// [`crate::jsonrpc::DecodeError::TooLargeOnceParsed`]. Default 64 MiB.
    pub max_parsed_bytes: usize,
    /// Calls in flight at once (user calls plus internal ones). Default 1024.
    pub max_calls_in_flight: usize,
    /// Pages fetched by one paginated listing before it fails. Default 64.
    pub max_list_pages: u32,
    /// Items gathered by one paginated listing before it fails. Default 100 000.
    pub max_list_items: usize,
    /// Bytes of items gathered by one paginated listing before it fails (the items are
    /// kept verbatim until the last page). Default 32 MiB.
    pub max_list_bytes: usize,
    /// Listings kept by the 2026-07-28 list cache (results with `ttlMs` and
    /// `cacheScope`); the oldest goes first. 0 turns the cache off. Default 32.
    pub max_cache_entries: usize,
    /// Bytes kept by the list cache (each listing's items and last page, verbatim); a
    /// listing larger than this is not cached. Counted in
    /// [`Client::retained_bytes`](crate::client::Client::retained_bytes). Default 4 MiB.
    pub max_cache_bytes: usize,
    /// MRTR rounds for one call (2026-07-28 `input_required`, and the snapshots of a
    /// 2026-07-28 task that ask for new input); in the legacy era, the
    /// server's requests for input that may pause one call's deadline while they wait
    /// for an answer (from the next one on, the call's deadline runs). Default 10.
    pub max_input_rounds: u32,
    /// Input requests in one MRTR round. Default 16.
    pub max_inputs_per_round: usize,
    /// Bytes of `input_required` results (input requests and `requestState` included)
    /// accepted over all rounds of one call. Default 1 MiB.
    pub max_input_bytes_per_call: usize,
    /// Server→client requests (legacy) awaiting the user's answer. Default 64.
    pub max_pending_server_requests: usize,
    /// Bytes of the server→client requests (legacy) awaiting the user's answer, their
    /// parameters as received; one more is refused (with a JSON-RPC error to the server).
    /// Default 8 MiB.
    pub max_pending_input_bytes: usize,
    /// Events a server can make the client hold without a call of its own
    /// (notifications, progress included, and reports of its protocol errors) waiting to
    /// be polled; beyond this they are dropped (and counted in a
    /// [`crate::client::Event::NotificationsDropped`]). Default 4096.
    pub max_queued_notifications: usize,
    /// Bytes of those same events waiting to be polled (their verbatim JSON and text);
    /// beyond this they are dropped and counted the same way. At least one largest
    /// message fits. Default 16 MiB.
    pub max_queued_event_bytes: usize,
    /// Bytes waiting to be written to a stdio server (handed out by `poll_transmit` and
    /// not yet reported by `handle_written`, plus what the machine still queues) past
    /// which the server's own requests are no longer answered: a server that sends
    /// requests without reading its stdin ends the connection with
    /// [`crate::client::CloseReason::PeerNotReading`] instead of growing the queue. The
    /// caller's own requests are never refused for it. Over HTTP, the requests waiting
    /// for a connection count instead, each with its head and the machine's record of it
    /// (about a kilobyte), so that a flood of tiny answers is bounded by what it costs.
    /// Default 16 MiB.
    pub max_queued_output_bytes: usize,
    /// Longest task id accepted from a server (bytes); a longer one fails the call
    /// with [`crate::client::TaskProblem::IdTooLong`]. Default 256.
    pub max_task_id_bytes: usize,
    /// `tasks/get` polls of one task before the client gives up on it (sends
    /// `tasks/cancel` where the server serves it, and fails the call with
    /// [`crate::client::TaskProblem::TooManyPolls`]). Default 10 000.
    pub max_task_polls: u32,
    /// Time allowed for any call that was given no timeout of its own. Default 60 s.
    pub request_timeout: Duration,
    /// Time the `server/discover` probe over stdio may stay unanswered before the server
    /// is taken to be legacy (at most half of what is left of `connect_timeout`). Over
    /// HTTP, where silence is an outage and not a legacy server, and for a client pinned
    /// to the modern era, which decides no fallback, the probe gets
    /// `initialize_timeout` instead. Default 3 s.
    pub probe_timeout: Duration,
    /// Time allowed for `initialize` (past it, connecting fails with
    /// [`CloseReason::HandshakeTimeout`](crate::client::CloseReason::HandshakeTimeout)),
    /// and for the probe of a client pinned to the modern era. Default 30 s.
    pub initialize_timeout: Duration,
    /// Time allowed for the whole of connecting, however many steps it takes (the probe,
    /// a retry with another version, the `initialize` fallback, a stdio server started
    /// again): one deadline for the operation, so a caller's timeout is a total. Past it,
    /// connecting fails with
    /// [`CloseReason::ConnectTimeout`](crate::client::CloseReason::ConnectTimeout).
    /// Default 60 s.
    pub connect_timeout: Duration,
}

impl Limits {
    /// The default of [`Limits::max_nesting_depth`]: 64 levels.
    ///
    /// Half of `serde_json`'s own recursion limit (128): whatever is accepted, and any
    /// part of it, still parses with `serde_json`'s defaults even after being wrapped in
    /// a few more levels (a tool result kept inside a log record of a response, say).
    /// `System.Text.Json` has the same default. Real MCP traffic, tools' JSON Schemas
    /// included, stays far below it.
    pub const DEFAULT_MAX_NESTING_DEPTH: usize = 64;
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_message_bytes: 8 * 1024 * 1024,
            max_nesting_depth: Limits::DEFAULT_MAX_NESTING_DEPTH,
            max_parsed_bytes: 64 * 1024 * 1024,
            max_calls_in_flight: 1024,
            max_list_pages: 64,
            max_list_items: 100_000,
            max_list_bytes: 32 * 1024 * 1024,
            max_cache_entries: 32,
            max_cache_bytes: 4 * 1024 * 1024,
            max_input_rounds: 10,
            max_inputs_per_round: 16,
            max_input_bytes_per_call: 1024 * 1024,
            max_pending_server_requests: 64,
            max_pending_input_bytes: 8 * 1024 * 1024,
            max_queued_notifications: 4096,
            max_queued_event_bytes: 16 * 1024 * 1024,
            max_queued_output_bytes: 16 * 1024 * 1024,
            max_task_id_bytes: 256,
            max_task_polls: 10_000,
            request_timeout: Duration::from_secs(60),
            probe_timeout: Duration::from_secs(3),
            initialize_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(60),
        }
    }
}
