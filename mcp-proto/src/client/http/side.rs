//! The authorization flow's HTTP requests: one fresh connection each (`Connection:
//! close`), to whatever origin the request names, read to the end of one response with
//! the body capped, then closed. No redirect is followed and nothing is reused: these
//! requests are few, go to other servers than the MCP endpoint, and carry secrets that
//! must not share a connection with anything else.

use std::collections::{BTreeMap, VecDeque};

use crate::auth::{AuthRequest, AuthRequestId, AuthResponse};
use crate::client::transmit::{ConnId, Origin, Transmit, TransportFailure};
use crate::http::{HttpLimits, RequestHead, ResponseEvent, ResponseHead, ResponseReader};

#[derive(Debug)]
struct SideConn {
    request: AuthRequestId,
    /// The request, until the connection is open.
    bytes: Option<Vec<u8>>,
    reader: ResponseReader,
    head: Option<ResponseHead>,
    body: Vec<u8>,
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
        let mut head = RequestHead::for_endpoint(request.method, &request.url)
            .with_header("User-Agent", user_agent)
            .with_header("Connection", "close");
        for (k, v) in request.headers {
            head = head.with_header(k, v);
        }
        let mut bytes = Vec::new();
        let len = request.body.as_ref().map(Vec::len);
        if let Err(e) = head.write(len, &mut bytes) {
            return Some(SideOutcome::Failed(request.id, e.to_string()));
        }
        bytes.extend_from_slice(request.body.as_deref().unwrap_or_default());
        let mut origin = Origin::of(&request.url);
        if request.public_only {
            origin = origin.public();
        }
        let limits = HttpLimits {
            max_body_bytes: Some(max_body as u64),
            ..HttpLimits::default()
        };
        self.conns.insert(
            conn,
            SideConn {
                request: request.id,
                bytes: Some(bytes),
                reader: ResponseReader::new(limits, request.method),
                head: None,
                body: Vec::new(),
            },
        );
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
        let c = self.conns.get_mut(&conn)?;
        c.reader.handle_input(data);
        self.drain(conn)
    }

    pub(super) fn eof(&mut self, conn: ConnId) -> Option<SideOutcome> {
        let c = self.conns.get_mut(&conn)?;
        c.reader.handle_eof();
        self.drain(conn)
    }

    pub(super) fn failed(
        &mut self,
        conn: ConnId,
        failure: &TransportFailure,
    ) -> Option<SideOutcome> {
        let c = self.conns.remove(&conn)?;
        self.commands.push_back(Command::Close(conn));
        Some(SideOutcome::Failed(c.request, failure.to_string()))
    }

    /// Closes the connections of requests the flow no longer wants.
    pub(super) fn retain(&mut self, wanted: impl Fn(AuthRequestId) -> bool) {
        let gone: Vec<ConnId> = self
            .conns
            .iter()
            .filter(|(_, c)| !wanted(c.request))
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
            .map(|c| c.reader.retained_bytes() + c.body.capacity())
            .sum()
    }

    fn drain(&mut self, conn: ConnId) -> Option<SideOutcome> {
        let c = self.conns.get_mut(&conn)?;
        let outcome = loop {
            match c.reader.poll_event()? {
                ResponseEvent::Head(h) => c.head = Some(h),
                ResponseEvent::Body(b) => c.body.extend_from_slice(&b),
                ResponseEvent::End { .. } => {
                    let head = c.head.take();
                    let status = head.as_ref().map_or(0, |h| h.status);
                    let headers = head.map(|h| h.headers).unwrap_or_default();
                    let body = std::mem::take(&mut c.body);
                    break SideOutcome::Response(
                        c.request,
                        AuthResponse {
                            status,
                            headers,
                            body,
                        },
                    );
                }
                ResponseEvent::Error(e) => break SideOutcome::Failed(c.request, e.to_string()),
            }
        };
        self.conns.remove(&conn);
        self.commands.push_back(Command::Close(conn));
        Some(outcome)
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
