//! The session on one byte channel: a stdio server's stdin and stdout.
//!
//! Messages are newline-framed. The channel exists from the start; the machine asks for a
//! [`Transmit::Respawn`] when the server exited on the era probe (the session then speaks
//! `initialize` to the fresh process), and for a [`Transmit::Close`] once the session is
//! over, after the last bytes it still had to write.
//!
//! The server's stdout normally ends when its process exits. When a process it started
//! holds the pipe open, the driver's report that the process exited
//! ([`Client::handle_process_exited`](super::Client::handle_process_exited)) starts a
//! drain of [`EXIT_DRAIN`]: what the server wrote before it exited is still read, and
//! then its stdout counts as ended, as if the pipe had closed. From then on nothing more
//! is read from that process, even if its pipe brings more: the session has failed what
//! it had in flight and voided its inputs, and a request read later would be answered
//! to a process that is gone (or, after a restart, to another one).

use std::time::Duration;

use super::session::Session;
use super::transmit::{ConnId, Transmit, TransportFailure, TransportFailureKind};
use super::{ClientConfig, CloseReason, ConnectionState, Event};
use crate::Instant;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Channel {
    /// Bytes flow.
    Open,
    /// The server's stdout ended (or counts as ended): nothing more is read from this
    /// process; a fresh one or the close comes next.
    Ended,
    /// A fresh process is wanted; nothing is written until it is there.
    RespawnWanted,
    /// Waiting for the driver to report the fresh process.
    Respawning,
    /// The session is over: the close is still to be handed out.
    CloseWanted,
    /// Closed.
    Closed,
}

/// How long the stdout of a server whose process exited is still read, when something
/// the server started keeps it open, before it counts as ended.
pub const EXIT_DRAIN: Duration = Duration::from_millis(500);

/// How long the stdout of a server that stopped reading its stdin (a write failed as
/// closed) is still read before it counts as ended: a server on its way out ends it
/// sooner, and one that stays alive without reading cannot hold calls whose requests it
/// will never see until their timeouts.
pub const STOPPED_READING_DRAIN: Duration = Duration::from_secs(2);

#[derive(Debug)]
pub(crate) struct StdioLink {
    pub(crate) session: Session,
    channel: Channel,
    /// The process exited while its stdout stayed open, or the server stopped reading:
    /// when its stdout counts as ended.
    drained_at: Option<Instant>,
    /// A write failed as closed (what the driver said), and the process was not seen
    /// to exit: if its stdout does not end by `drained_at`, the server is still running
    /// without reading, and the session closes saying so.
    stopped_reading: Option<String>,
}

impl StdioLink {
    pub(crate) fn new(config: ClientConfig, now: Instant) -> StdioLink {
        let mut link = StdioLink {
            session: Session::new(config, now),
            channel: Channel::Open,
            drained_at: None,
            stopped_reading: None,
        };
        link.pump();
        link
    }

    /// Acts on what the session wants of the channel.
    pub(crate) fn pump(&mut self) {
        if self.session.restart_wanted && matches!(self.channel, Channel::Open | Channel::Ended) {
            self.channel = Channel::RespawnWanted;
        }
        if self.session.state() == ConnectionState::Closed
            && matches!(
                self.channel,
                Channel::Open | Channel::Ended | Channel::RespawnWanted
            )
        {
            self.channel = Channel::CloseWanted;
        }
    }

    pub(crate) fn handle_connected(&mut self, now: Instant, conn: ConnId) {
        if conn == ConnId::STDIO && self.channel == Channel::Respawning {
            self.channel = Channel::Open;
            // Refused only when no restart was asked for, which the channel rules out.
            let _ = self.session.handle_transport_restarted(now);
        }
        self.pump();
    }

    pub(crate) fn handle_read(&mut self, now: Instant, conn: ConnId, data: &[u8]) {
        if conn == ConnId::STDIO && self.channel == Channel::Open {
            self.session.handle_input(now, data);
        }
        self.pump();
    }

    pub(crate) fn handle_written(&mut self, conn: ConnId, bytes: usize) {
        if conn == ConnId::STDIO && self.channel == Channel::Open {
            self.session.handle_written(bytes);
        }
    }

    pub(crate) fn handle_eof(&mut self, now: Instant, conn: ConnId) {
        self.end_of_output(now, conn, None);
    }

    /// The server's stdout ended, or counts as ended: `stopped_reading` when the server
    /// is known to run on without reading its input.
    fn end_of_output(&mut self, now: Instant, conn: ConnId, stopped_reading: Option<String>) {
        if conn == ConnId::STDIO && self.channel == Channel::Open {
            self.drained_at = None;
            self.stopped_reading = None;
            self.channel = Channel::Ended;
            match stopped_reading {
                Some(detail) => self
                    .session
                    .handle_eof_with(now, CloseReason::StoppedReading { detail }),
                None => self.session.handle_eof(now),
            }
        }
        self.pump();
    }

    /// The server's process exited: its stdout ends at once, or counts as ended after
    /// [`EXIT_DRAIN`].
    pub(crate) fn handle_process_exited(&mut self, now: Instant) {
        // It did not run on: whatever a failed write said, it exited.
        self.stopped_reading = None;
        if self.channel == Channel::Open && self.drained_at.is_none() {
            self.drained_at = Some(now + EXIT_DRAIN);
        }
    }

    pub(crate) fn handle_timeout(&mut self, now: Instant) {
        if self.drained_at.is_some_and(|at| at <= now) {
            let stopped_reading = self.stopped_reading.take();
            self.end_of_output(now, ConnId::STDIO, stopped_reading);
        }
        self.session.handle_timeout(now);
        self.pump();
    }

    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        [self.session.poll_timeout(), self.drained_at]
            .into_iter()
            .flatten()
            .min()
    }

    pub(crate) fn handle_transport_error(
        &mut self,
        now: Instant,
        conn: ConnId,
        failure: TransportFailure,
    ) {
        if conn != ConnId::STDIO {
            return;
        }
        match (self.channel, failure.kind) {
            // The server stopped reading its stdin: it is on its way out, and the end of
            // its stdout says the rest, within a bound.
            (Channel::Open, TransportFailureKind::Closed) => {
                let by = now + STOPPED_READING_DRAIN;
                if self.drained_at.is_none() {
                    self.stopped_reading = Some(failure.detail);
                }
                self.drained_at = Some(self.drained_at.map_or(by, |at| at.min(by)));
            }
            (Channel::Open | Channel::Respawning, _) => {
                self.channel = Channel::Open;
                self.drained_at = None;
                self.stopped_reading = None;
                self.session.handle_eof(now);
                self.session.close_with(CloseReason::Transport(failure));
            }
            _ => {}
        }
        self.pump();
    }

    pub(crate) fn poll_transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<Transmit> {
        match self.channel {
            Channel::RespawnWanted => {
                self.channel = Channel::Respawning;
                self.drained_at = None;
                return Some(Transmit::Respawn);
            }
            // Nothing is written to a process whose end was read.
            Channel::Ended | Channel::Respawning | Channel::Closed => return None,
            Channel::Open | Channel::CloseWanted => {}
        }
        let len = self.session.poll_transmit(now, buf);
        if len > 0 {
            return Some(Transmit::Write {
                conn: ConnId::STDIO,
                len,
            });
        }
        if self.channel == Channel::CloseWanted {
            self.channel = Channel::Closed;
            return Some(Transmit::Close {
                conn: ConnId::STDIO,
            });
        }
        None
    }

    pub(crate) fn poll_event(&mut self) -> Option<Event> {
        self.session.poll_event()
    }

    pub(crate) fn is_released(&self) -> bool {
        self.channel == Channel::Closed
    }
}
