//! The stdio world: the server machine as the client's child process, its stdin and
//! stdout as two pipes, started again when the client asks.

use crate::Instant;
use crate::client::{
    Client, ClientConfig, ConnId, RestartPolicy, Transmit, TransportFailure, TransportFailureKind,
};
use crate::server::Server;

use super::{Ledger, Wire, server};

/// The client, the process, the pipes between them.
pub(super) struct StdioWorld {
    /// One client.
    clients: Vec<Client>,
    variant: u8,
    /// The running process, until it exits.
    server: Option<Server>,
    /// Bytes the client wrote, in the stdin pipe.
    up: Vec<u8>,
    /// Bytes the process wrote, in the stdout pipe.
    down: Vec<u8>,
    /// The pipes hold their bytes back.
    held: bool,
    /// The process exited: the client reads the end of its stdout after `down`.
    exited: bool,
    /// The exit is reported to the client once the end of stdout is read (else when it
    /// happens).
    exit_after_eof: bool,
    /// The client was told the end of this process's stdout.
    eof_told: bool,
    /// Starts still to fail.
    failing_starts: u8,
    now: Instant,
}

impl StdioWorld {
    pub(super) fn new(config: ClientConfig, variant: u8, ledger: &Ledger) -> Self {
        let config = config.restart(RestartPolicy::up_to(1000));
        StdioWorld {
            clients: vec![Client::stdio(config, Instant::ZERO)],
            variant,
            server: Some(server(variant, ledger)),
            up: Vec::new(),
            down: Vec::new(),
            held: false,
            exited: false,
            exit_after_eof: false,
            eof_told: false,
            failing_starts: 0,
            now: Instant::ZERO,
        }
    }

    /// The process ends: what it did not read is lost; what it wrote is still read.
    fn exit(&mut self, after_eof: bool) {
        if self.server.take().is_none() {
            return;
        }
        self.up.clear();
        self.exited = true;
        self.exit_after_eof = after_eof;
        if !after_eof {
            self.clients[0].handle_process_exited(self.now);
        }
    }

    /// A few of the held bytes go through, up or down.
    fn trickle(&mut self, operand: u8) {
        let n = 1usize << (operand >> 1);
        if operand & 1 == 0 {
            let n = n.min(self.up.len());
            let bytes: Vec<u8> = self.up.drain(..n).collect();
            self.deliver_up(&bytes);
        } else if !self.eof_told {
            let n = n.min(self.down.len());
            let bytes: Vec<u8> = self.down.drain(..n).collect();
            if !bytes.is_empty() {
                self.clients[0].handle_read(self.now, ConnId::STDIO, &bytes);
            }
        }
    }

    fn deliver_up(&mut self, bytes: &[u8]) {
        if let Some(server) = &mut self.server {
            server.handle_input(self.now, bytes);
            self.clients[0].handle_written(self.now, ConnId::STDIO, bytes.len());
        }
    }

    fn client_turn(&mut self, ledger: &mut Ledger) -> bool {
        let now = self.now;
        let mut progressed = false;
        if self.clients[0].poll_timeout().is_some_and(|t| t <= now) {
            self.clients[0].handle_timeout(now);
            progressed = true;
        }
        let mut buf = Vec::new();
        loop {
            buf.clear();
            let Some(t) = self.clients[0].poll_transmit(now, &mut buf) else {
                break;
            };
            progressed = true;
            match t {
                Transmit::Write { conn, len } => {
                    assert_eq!(conn, ConnId::STDIO, "a stdio client wrote on {conn:?}");
                    assert_eq!(len, buf.len(), "a write names the bytes it appended");
                    assert!(!self.eof_told, "a write to a process known to be gone");
                    if self.server.is_some() {
                        self.up.extend_from_slice(&buf);
                    }
                }
                Transmit::Close { .. } => {
                    if let Some(server) = &mut self.server {
                        server.handle_eof(now);
                    }
                }
                Transmit::Respawn => {
                    self.server = None;
                    if self.failing_starts > 0 {
                        self.failing_starts -= 1;
                        let failure = TransportFailure::new(TransportFailureKind::Spawn, "no");
                        self.clients[0].handle_transport_error(now, ConnId::STDIO, failure);
                        continue;
                    }
                    ledger.servers += 1;
                    self.server = Some(server(self.variant, ledger));
                    self.up.clear();
                    self.down.clear();
                    self.exited = false;
                    self.eof_told = false;
                    self.clients[0].handle_connected(now, ConnId::STDIO);
                }
                other => panic!("a stdio client asked for {other:?}"),
            }
        }
        progressed | ledger.events(0, &mut self.clients[0], now)
    }

    fn pipes_turn(&mut self) -> bool {
        let now = self.now;
        let mut progressed = false;
        if self.held {
            return false;
        }
        if !self.up.is_empty() {
            let up = std::mem::take(&mut self.up);
            self.deliver_up(&up);
            progressed = true;
        }
        if !self.eof_told {
            if !self.down.is_empty() {
                let down = std::mem::take(&mut self.down);
                self.clients[0].handle_read(now, ConnId::STDIO, &down);
                progressed = true;
            }
            if self.exited {
                self.eof_told = true;
                self.clients[0].handle_eof(now, ConnId::STDIO);
                if self.exit_after_eof {
                    self.clients[0].handle_process_exited(now);
                }
                progressed = true;
            }
        }
        progressed
    }

    fn server_turn(&mut self) -> bool {
        let now = self.now;
        let Some(server) = &mut self.server else {
            return false;
        };
        let mut progressed = false;
        let mut buf = Vec::new();
        while let Some(t) = server.poll_transmit(now, &mut buf) {
            progressed = true;
            if let Transmit::Close { .. } = t {
                self.exit(true);
                break;
            }
        }
        self.down.extend_from_slice(&buf);
        progressed
    }
}

impl Wire for StdioWorld {
    fn clients(&mut self) -> &mut [Client] {
        &mut self.clients
    }

    fn now(&mut self) -> &mut Instant {
        &mut self.now
    }

    fn network(&mut self, kind: u8, operand: u8, _: &mut Ledger) {
        match kind {
            6 => self.held = !self.held,
            7 => self.trickle(operand),
            8 | 11 => self.exit(false),
            9 => self.exit(true),
            10 => self.failing_starts = operand,
            15 => self.held = false,
            _ => {}
        }
    }

    fn turn(&mut self, ledger: &mut Ledger) -> bool {
        let mut progressed = self.client_turn(ledger);
        progressed |= self.pipes_turn();
        progressed | self.server_turn()
    }

    fn check(&mut self) {}

    fn heal(&mut self) {
        self.held = false;
        self.failing_starts = 0;
    }

    fn check_released(&mut self) {
        assert!(
            self.clients[0].is_released(),
            "the closed client holds its process"
        );
        assert!(
            self.server.is_none(),
            "the process still runs after the client closed"
        );
    }

    fn server_deadline(&self) -> Option<Instant> {
        None
    }
}
