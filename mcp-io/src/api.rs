//! The names both adapters export at their root (`pub use mcp_io::api::*;`), so that
//! `mcp_blocking::X` and `mcp_smol::X` are one and the same for each of them and an
//! application moves between the adapters by changing the crate name: the protocol
//! types of the API, what this crate shares ([`Options`], [`Error`], [`StdioCommand`],
//! …), and the crates behind the API.

pub use crate::auth::{AuthorizationHandler, KeySigner, Reply};
pub use crate::callback::{BrowserApproval, LoopbackCallback};
pub use crate::credentials::{CredentialStore, FileCredentialStore};
pub use crate::http::{DEFAULT_CONNECT_TIMEOUT, DEFAULT_MAX_CONNECTIONS, TlsUnavailable};
/// Transcripts of a connection ([`Options::transcript`]) and their replay.
pub use crate::transcript;
pub use crate::{
    DEFAULT_GRACE_PERIOD, DEFAULT_STDERR_LIMIT, Direction, EraCache, Error, Flavour, Local,
    LogSink, Options, PendingInput, Progress, ProgressHandler, ResolveError, Sendable, Shutdown,
    StdioCommand, TranscriptSink, TransportError, TransportErrorKind, WireLog,
};
pub use mcp_proto::auth::{AuthConfig, AuthError, ClientIdentity, Credentials, Grant};
pub use mcp_proto::client::{
    AcceptDefaults, CallError, CallId, CallOutput, CallRequest, Change, ClientConfig, CloseReason,
    DeclineAll, Event, FormSchema, HttpFailure, InputAnswer, InputHandler, InputRequest, ListenEnd,
    ListenFilter, LogLevel, LogMessage, Origin, PeerError, RestartPolicy, Root, SamplingRequest,
    SamplingResult, Task, TaskProblem, TaskStatus, TransportFailure, TransportFailureKind,
};
pub use mcp_proto::http::{EndpointUrl, UrlError};
pub use mcp_proto::jsonrpc::Notification;
pub use mcp_proto::model::{
    CallToolResult, ClientCapabilities, Implementation, Prompt, Resource, ServerDetails, Tool,
};
pub use mcp_proto::{Era, EraMode, Limits, ProtocolVersion};

/// The protocol crate the adapters drive, re-exported so its types need no second
/// dependency.
pub use mcp_proto;
/// The TLS crate of [`HttpOptions::tls`](crate::http::HttpOptions::tls), re-exported so
/// a configuration can be built with the very version the adapters use. With the `tls`
/// feature only.
#[cfg(feature = "tls")]
pub use rustls;
/// The JSON crate of the API (arguments and results are [`serde_json::Value`]s),
/// re-exported so that `serde_json::json!` needs no second dependency.
pub use serde_json;
