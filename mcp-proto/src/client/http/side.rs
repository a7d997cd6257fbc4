//! The authorization flow's HTTP requests: one fresh connection each (`Connection:
//! close`), to whatever origin the request names, read to the end of one response with
//! the body capped ([`crate::auth::Exchange`]), then closed. No redirect is followed and
//! nothing is reused: these requests are few, go to other servers than the MCP
//! endpoint, and carry secrets that must not share a connection with anything else.

use std::collections::{BTreeMap, VecDeque};

use crate::auth::{AuthRequest, AuthRequestId, AuthResponse, Exchange};
use crate::client::transmit::{ConnId, Origin, Transmit, TransportFailure};

#[derive(Debug)]
struct SideConn {
    exchange: Exchange,
    /// The request, until the connection is open.
    bytes: Option<Vec<u8>>,
}

#[derive(Debug)]
enum Command {
    Connect(ConnId, Origin),
    Write(ConnId, Vec<u8>),
    Close(ConnId),
}

/// How a request ended.
#[derive(Debug)]
pub(super) enum SideOutcome {
    Response(AuthRequestId, AuthResponse),
    Failed(AuthRequestId, String),
}

/// The one-shot connections of the authorization flow.
#[derive(Debug, Default)]
pub(super) struct Side {
    conns: BTreeMap<ConnId, SideConn>,
    commands: VecDeque<Command>,
}

impl Side {
    /// Starts `request` on the new connection `conn`. Returns the failure when the
    /// request cannot be written (a header value that is not one).
    pub(super) fn start(
        &mut self,
        conn: ConnId,
        request: AuthRequest,
        user_agent: &str,
        max_body: usize,
    ) -> Option<SideOutcome> {
        let id = request.id;
        let (exchange, bytes) = match Exchange::start(request, user_agent, max_body) {
            Ok(x) => x,
            Err(e) => return Some(SideOutcome::Failed(id, e)),
        };
        let origin = exchange.origin().clone();
        let bytes = Some(bytes);
        self.conns.insert(conn, SideConn { exchange, bytes });
        self.commands.push_back(Command::Connect(conn, origin));
        None
    }

    pub(super) fn owns(&self, conn: ConnId) -> bool {
        self.conns.contains_key(&conn)
    }

    pub(super) fn connected(&mut self, conn: ConnId) {
        if let Some(c) = self.conns.get_mut(&conn)
            && let Some(bytes) = c.bytes.take()
        {
            self.commands.push_back(Command::Write(conn, bytes));
        }
    }

    pub(super) fn read(&mut self, conn: ConnId, data: &[u8]) -> Option<SideOutcome> {
        let done = self.conns.get_mut(&conn)?.exchange.handle_input(data)?;
        self.finish(conn, done)
    }

    pub(super) fn eof(&mut self, conn: ConnId) -> Option<SideOutcome> {
        let done = self.conns.get_mut(&conn)?.exchange.handle_eof()?;
        self.finish(conn, done)
    }

    pub(super) fn failed(
        &mut self,
        conn: ConnId,
        failure: &TransportFailure,
    ) -> Option<SideOutcome> {
        let c = self.conns.remove(&conn)?;
        self.commands.push_back(Command::Close(conn));
        Some(SideOutcome::Failed(
            c.exchange.request(),
            failure.to_string(),
        ))
    }

    fn finish(
        &mut self,
        conn: ConnId,
        done: Result<(AuthRequestId, AuthResponse), String>,
    ) -> Option<SideOutcome> {
        let request = self.conns.remove(&conn)?.exchange.request();
        self.commands.push_back(Command::Close(conn));
        Some(match done {
            Ok((id, response)) => SideOutcome::Response(id, response),
            Err(e) => SideOutcome::Failed(request, e),
        })
    }

    /// Closes the connections of requests the flow no longer wants.
    pub(super) fn retain(&mut self, wanted: impl Fn(AuthRequestId) -> bool) {
        let gone: Vec<ConnId> = self
            .conns
            .iter()
            .filter(|(_, c)| !wanted(c.exchange.request()))
            .map(|(id, _)| *id)
            .collect();
        for conn in gone {
            self.conns.remove(&conn);
            self.commands.push_back(Command::Close(conn));
        }
    }

    pub(super) fn retained_bytes(&self) -> usize {
        self.conns
            .values()
            .map(|c| c.exchange.retained_bytes())
            .sum()
    }

    pub(super) fn poll_transmit(&mut self, buf: &mut Vec<u8>) -> Option<Transmit> {
        Some(match self.commands.pop_front()? {
            Command::Connect(conn, origin) => Transmit::Connect { conn, origin },
            Command::Write(conn, bytes) => {
                buf.extend_from_slice(&bytes);
                Transmit::Write {
                    conn,
                    len: bytes.len(),
                }
            }
            Command::Close(conn) => Transmit::Close { conn },
        })
    }

    pub(super) fn is_empty(&self) -> bool {
        self.conns.is_empty() && self.commands.is_empty()
    }
}
