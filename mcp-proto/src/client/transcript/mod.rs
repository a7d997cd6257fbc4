//! Transcripts: what a [`Client`](super::Client) was given and what it gave back, with
//! the times, as JSON lines; and the replay that checks a fresh machine does the same.
//!
//! # Theory of operation
//!
//! A machine of this crate is a function of its inputs and their times: nothing else
//! (no clock, no randomness, no IO) reaches it. So a run can be written down and played
//! again. [`Client::start_recording`](super::Client::start_recording), called right
//! after the machine is made, makes every method that changes it append an entry:
//!
//! * inputs and commands (`"in"`): `connected`, `read` (with the bytes), `written`,
//!   `eof`, `process_exited`, `transport_error`, `timeout`, `call` (the request, and the call id or the
//!   misuse it returned), `respond`, `cancel`, `close`, `set_authorization`;
//! * outputs the driver polled (`"out"`): each [`Transmit`](super::Transmit) (`connect`,
//!   `write` with the bytes, `close`, `respawn`) or `no_transmit`, each event (its
//!   `Debug` text, a stable form of every field) or `no_event`, and `deadline`, the
//!   [`poll_timeout`](super::Client::poll_timeout) value, recorded after any step that
//!   changed it (so a driver that reads it without recording still has it checked).
//!
//! Each entry carries `t`, the nanoseconds from the machine's first instant (the `now`
//! it was made with) to the `now` of the call (outputs without a `now` take the latest
//! one). The first line, the header, holds what a fresh machine needs: the transport
//! (stdio, or HTTP with the [`HttpConfig`](super::http::HttpConfig)), the
//! [`ClientConfig`](super::ClientConfig) (client info, era mode, versions, capabilities,
//! the limits that differ from the defaults, a known era) and that first instant.
//! Bytes are text when they are UTF-8, base64 otherwise.
//!
//! The machine never does IO: [`Client::poll_transcript`](super::Client::poll_transcript)
//! hands the lines out and the driver writes them where it likes. Lines nobody takes
//! are bounded: past [`DEFAULT_BUDGET`] bytes waiting (or the budget given), the
//! recording ends with a `{"truncated":…}` line, and a replay stops there with
//! [`ReplayError::Truncated`].
//!
//! # Secrets
//!
//! The machine records what it saw, secrets included. A [`Redactor`] rewrites each line
//! through a [`Redaction`] before it is written anywhere; `mcp-io` supplies the wire
//! log's (`Authorization`, cookies, `Mcp-Session-Id`, API-key-style headers, credential
//! query parameters) and the adapters apply it. The header then names the redaction,
//! and the replay applies the same to what the fresh machine writes before comparing,
//! while feeding it the redacted inputs: a redacted session id is a session id too
//! (`[redacted]` is visible ASCII), and a redacted URL keeps its syntax. A run whose
//! course depended on a secret's length or characters (a session id over the
//! 4 KiB cap, say) does not replay.
//!
//! # Replay
//!
//! [`Replay::new`] reads a text of one or more transcripts (each from its header line)
//! and [`Replay::run_with`] plays each: it builds the machine from the header, feeds
//! every input and command at its recorded time, performs every recorded poll, and
//! compares what comes with what was recorded, after each step checking the deadline
//! too. The first difference is a [`ReplayError::Mismatch`] naming the line, what was
//! recorded and what came. Everything runs on the recorded clock: a replay takes no
//! time, whatever the deadlines.

mod config;
mod entry;
mod recorder;
mod redact;
mod replay;

pub(crate) use entry::{AnswerRepr, Data, In, Out, RequestRepr, misuse};
pub(crate) use recorder::Recorder;
pub use redact::{NoRedaction, Redaction, Redactor};
pub use replay::{Replay, ReplayError, Summary};

/// Bytes of transcript lines a machine keeps for its driver before the recording is
/// cut short ([`Client::start_recording`](super::Client::start_recording)): 16 MiB.
pub const DEFAULT_BUDGET: usize = 16 * 1024 * 1024;

/// The format named in every header line.
pub const FORMAT: &str = "mcp-client-transcript/1";

/// The header of a recording of `client` (`midway`: it was in use already).
pub(crate) fn header(
    client: &super::Client,
    midway: bool,
    origin: crate::Instant,
) -> entry::Header {
    let http = client.http_config();
    entry::Header {
        transcript: FORMAT.to_owned(),
        transport: if http.is_some() { "http" } else { "stdio" }.to_owned(),
        origin_ns: u64::try_from(origin.elapsed_since_origin().as_nanos()).unwrap_or(u64::MAX),
        midway,
        client: config::ClientRepr::of(client.config()),
        http: http.map(config::HttpRepr::of),
        redaction: None,
    }
}
