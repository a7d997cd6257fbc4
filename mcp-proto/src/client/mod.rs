//! The client connection machine.
//!
//! # Theory of operation
//!
//! A [`Client`] is one connection to one MCP server. It owns every protocol decision
//! (era negotiation, calls, input rounds, pagination, deadlines: see the session
//! layer) and every transport decision: for stdio, when to restart a server that exited
//! on the era probe and when to let it go; for Streamable HTTP, how many connections to
//! open, which exchange rides on which, when a keep-alive connection is reused, expired
//! or retried once, which streams are long-lived, when a legacy session is re-established
//! and when it is ended with `DELETE`. The driver (an adapter, or your own loop) only
//! moves bytes, in the run loop every machine of this crate follows:
//!
//! * inputs: [`Client::handle_connected`], [`Client::handle_read`],
//!   [`Client::handle_written`], [`Client::handle_eof`],
//!   [`Client::handle_transport_error`] (with a typed [`TransportFailure`]),
//!   [`Client::handle_timeout`], and for a stdio server whose exit the driver can see,
//!   [`Client::handle_process_exited`];
//! * commands: [`Client::call`], [`Client::respond`], [`Client::set_roots`],
//!   [`Client::cancel`], [`Client::close`];
//! * outputs, drained after every input and command: [`Client::poll_transmit`] (a
//!   [`Transmit`]: connect, write, close, respawn), [`Client::poll_event`],
//!   [`Client::poll_timeout`].
//!
//! Every connection is named by a [`ConnId`]; the stdio channel is [`ConnId::STDIO`] and
//! exists from the start. Every call ends with exactly one [`Event::CallCompleted`].
//! Input is never trusted: lines, bodies and events are bounded, malformed or
//! unattributable messages become [`Event::PeerError`] (or fail the one call they name),
//! and every count a server could grow has a limit in [`Limits`].
//!
//! # Tasks
//!
//! A `tools/call` may run as a task: asked for with [`CallRequest::as_task`] (2025-11-25
//! task augmentation; 2026-07-28 with the `io.modelcontextprotocol/tasks` extension
//! declared on the request), or chosen by a 2026 server when the config declares the
//! extension ([`ClientCapabilities::with_tasks`](crate::model::ClientCapabilities::with_tasks)),
//! or by a 2025 tool listed `taskSupport: "required"`. The machine then follows the task
//! under the same [`CallId`]: [`Event::TaskCreated`], [`Event::TaskStatus`] for each
//! change, polls at the server's interval on [`Client::poll_timeout`], input requests as
//! [`Event::InputRequested`], and one [`Event::CallCompleted`] with the task's result.
//! [`Client::task`] shows the latest view; [`Client::cancel`] sends `tasks/cancel` (to a
//! 2025-11-25 server only when it declared `tasks.cancel`; without it the call ends
//! locally).
//! [`CallRequest::list_tasks`], [`CallRequest::task_status`],
//! [`CallRequest::task_result`] and [`CallRequest::cancel_task`] are the one-off
//! requests. Records are read into [`Task`]; what is wrong with one is a [`TaskProblem`].
//!
//! # Transcripts
//!
//! Since the machine is a function of its inputs and their times, a run can be written
//! down and played again: [`Client::start_recording`] makes every input, command and
//! poll above append a JSON line (with its `now`, and the deadline whenever it
//! changes), handed out by [`Client::poll_transcript`]; [`transcript::Replay`] builds a
//! fresh machine from the first line, feeds it the recorded inputs at their recorded
//! times and checks that every output is the same. Secrets are replaced before a line
//! leaves the process ([`transcript::Redactor`]; the adapters apply the wire log's
//! rules). See the [`transcript`] module.

mod change;
mod event;
mod event_queue;
pub mod form;
pub mod http;
mod id_hash;
mod input;
mod machine;
mod output;
mod session;
mod stdio_link;
mod task;
pub mod transcript;
mod transmit;
mod unreadable;

pub use change::{
    Change, ListenEnd, ListenFilter, MAX_FILTER_URIS, SUBSCRIPTION_ID_KEY, subscription_id,
};
pub use event::{
    ApiMisuse, BodyHint, CallError, CallId, CallOutput, CloseReason, ConnectionState, Event,
    HttpFailure, InputAnswer, InputId, InputRequest, InvalidParams, MAX_ECHO_BYTES, PeerError,
    UnreadableBody,
};
pub use form::{FormError, FormSchema};
pub use id_hash::{IdHasher, IdMap, IdSet};
pub use input::{
    LogLevel, LogMessage, MAX_ELICITATION_ID_BYTES, Role, Root, SamplingMessage, SamplingRequest,
    SamplingResult, UrlRefused, check_elicitation_url, roots_result,
};
pub use machine::Client;
pub use output::{AcceptDefaults, DeclineAll, InputHandler, ReadContents};
pub use session::request::CallRequest;
pub use stdio_link::{EXIT_DRAIN, STOPPED_READING_DRAIN};
pub use task::{
    DEFAULT_POLL_INTERVAL, MAX_DEFAULT_POLL_INTERVAL, MAX_POLL_INTERVAL, MIN_POLL_INTERVAL,
    RELATED_TASK_KEY, TASKS_EXTENSION, Task, TaskProblem, TaskStatus,
};
pub use transmit::{ConnId, Origin, Transmit, TransportFailure, TransportFailureKind};
pub use unreadable::{LineProblem, MAX_QUOTED_LINE_BYTES, UnreadableLine};

use crate::limits::Limits;
use crate::model::{ClientCapabilities, Implementation};
use crate::version::{EraMode, VersionPolicy};

/// How the client presents itself and what it accepts.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ClientConfig {
    /// `clientInfo`.
    pub client_info: Implementation,
    /// How the era is chosen.
    pub era_mode: EraMode,
    /// Versions the client accepts.
    pub versions: VersionPolicy,
    /// What the client can do for the server.
    pub capabilities: ClientCapabilities,
    /// Every bound and default timeout.
    pub limits: Limits,
    /// The roots offered to the server, answered by the machine itself to `roots/list`
    /// (legacy requests and 2026 input requests alike) without asking anyone. `None`:
    /// a declared roots capability is answered through [`InputRequest::Roots`]. Change
    /// them on a live connection with [`Client::set_roots`].
    pub roots: Option<Vec<input::Root>>,
    /// What an earlier connection to the same server learned about its era (from a
    /// cache the caller keeps, per origin). With [`EraMode::Auto`] and a legacy verdict
    /// the probe is skipped and `initialize` goes first; if the server has moved on
    /// (HTTP 400 with a 2026 error code), the machine probes after all, once.
    pub known_era: Option<(crate::Era, crate::ProtocolVersion)>,
    /// Whether a stdio server that exits after connecting is started again
    /// ([`RestartPolicy::never`] by default).
    pub restart: RestartPolicy,
}

/// Whether and how a stdio server that exits after the connection was established is
/// started again (over Streamable HTTP there is no process to start).
///
/// The calls in flight when it exits fail once with [`CallError::ServerExited`]: whether
/// they ran cannot be known, so none is sent again. Calls made while it restarts wait
/// for the new connection (within their own deadlines). After a wait that doubles from
/// `first_delay` up to `max_delay`, the machine asks for a fresh process
/// ([`Transmit::Respawn`]) and connects again in the era it had settled on
/// ([`Event::ServerRestarting`] says so first). `max_attempts` restarts in a row without
/// a call answered in between, and the next exit closes the connection.
///
/// ```
/// use std::time::Duration;
/// use mcp_proto::client::{ClientConfig, RestartPolicy};
///
/// let config = ClientConfig::new("my-app", "1.0").restart(RestartPolicy::up_to(3));
/// assert_eq!(config.restart.max_attempts, 3);
/// assert_eq!(config.restart.first_delay, Duration::from_millis(500));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RestartPolicy {
    /// Restarts in a row (no call answered in between) before an exit closes the
    /// connection; 0: never restart.
    pub max_attempts: u32,
    /// The wait before the first restart in a row.
    pub first_delay: std::time::Duration,
    /// The longest wait before a restart.
    pub max_delay: std::time::Duration,
}

impl RestartPolicy {
    /// Never restart: an exit closes the connection (the default).
    #[must_use]
    pub const fn never() -> RestartPolicy {
        RestartPolicy {
            max_attempts: 0,
            first_delay: std::time::Duration::from_millis(500),
            max_delay: std::time::Duration::from_secs(30),
        }
    }

    /// Up to `attempts` restarts in a row, waiting 0.5 s before the first and doubling
    /// up to 30 s.
    #[must_use]
    pub const fn up_to(attempts: u32) -> RestartPolicy {
        RestartPolicy {
            max_attempts: attempts,
            ..RestartPolicy::never()
        }
    }

    /// The same policy with other waits.
    #[must_use]
    pub const fn delays(
        mut self,
        first: std::time::Duration,
        max: std::time::Duration,
    ) -> RestartPolicy {
        self.first_delay = first;
        self.max_delay = max;
        self
    }

    /// The wait before restart number `attempt` in a row (from 1).
    pub(crate) fn delay(&self, attempt: u32) -> std::time::Duration {
        let doublings = attempt.saturating_sub(1).min(16);
        self.first_delay
            .saturating_mul(1 << doublings)
            .min(self.max_delay)
    }
}

impl Default for RestartPolicy {
    fn default() -> Self {
        RestartPolicy::never()
    }
}

impl ClientConfig {
    /// Defaults: `Auto` era mode, the three current versions, no optional capability.
    #[must_use]
    pub fn new(name: &str, version: &str) -> Self {
        ClientConfig {
            client_info: Implementation::new(name, version),
            era_mode: EraMode::Auto,
            versions: VersionPolicy::default(),
            capabilities: ClientCapabilities::none(),
            limits: Limits::default(),
            roots: None,
            known_era: None,
            restart: RestartPolicy::never(),
        }
    }

    /// The same config with this restart policy for a stdio server that exits after
    /// connecting.
    #[must_use]
    pub fn restart(mut self, policy: RestartPolicy) -> Self {
        self.restart = policy;
        self
    }

    /// The same config offering these roots: declares the roots capability (with
    /// `listChanged` in the legacy era) and answers `roots/list` with them. Call it
    /// after [`ClientConfig::capabilities`], which replaces every capability flag.
    #[must_use]
    pub fn roots(mut self, roots: Vec<input::Root>) -> Self {
        self.capabilities.roots = true;
        self.capabilities.roots_list_changed = true;
        self.roots = Some(roots);
        self
    }

    /// The same config with what an earlier connection learned about the server's era.
    #[must_use]
    pub fn known_era(mut self, verdict: Option<(crate::Era, crate::ProtocolVersion)>) -> Self {
        self.known_era = verdict;
        self
    }

    /// The same config with another era mode.
    #[must_use]
    pub fn era_mode(mut self, mode: EraMode) -> Self {
        self.era_mode = mode;
        self
    }

    /// The same config with these capabilities.
    #[must_use]
    pub fn capabilities(mut self, caps: ClientCapabilities) -> Self {
        self.capabilities = caps;
        self
    }

    /// The same config with these limits.
    #[must_use]
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Also accept 2024-11-05 and 2025-03-26 when a server offers them.
    #[must_use]
    pub fn accept_pre_2025_06_versions(mut self) -> Self {
        self.versions = self.versions.with_pre_2025_06_versions();
        self
    }
}
