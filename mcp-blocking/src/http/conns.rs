//! The HTTP side of a driver: the connections the machine asked for, each with its
//! threads.
//!
//! A [`Transmit::Connect`](mcp_proto::client::Transmit::Connect) starts one thread that
//! calls the [`Connector`]. On Unix, a plain TCP socket
//! ([`Stream::tcp_socket`](super::Stream::tcp_socket)) then joins the driver's poll set
//! (see the `poll_set` module): the waiting thread moves its bytes, and the connecting
//! thread ends. Any other stream is split ([`Stream::split`](super::Stream::split)): the
//! thread reports the connection open, starts a reader thread on the read half, and then
//! stays as the connection's writer. Bytes to write wait in the connection's queue
//! meanwhile.
//! A `Close` shuts the socket down through the [`ShutdownHandle`] (a blocked read
//! returns, the threads end) and forgets the connection; anything its threads still
//! report is dropped. A connection closed while its thread is still connecting is shut
//! down as soon as it opens.

use std::io;
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use mcp_io::wire_log::ChannelLog;
use mcp_io::{Flavour, Shutdown, TransportError, TransportErrorKind, WireLog};
use mcp_proto::client::{ConnId, IdMap, Origin, TransportFailure};
use mcp_proto::http::EndpointUrl;

use super::connector::{Connector, ShutdownHandle};
use crate::carrier::{self, Bell, Carrier, Inlet, IoEvent, Reporter, read_loop, write_loop};
#[cfg(unix)]
use crate::poll_set::PollSet;

/// Where a connection's thread is.
enum Slot {
    Connecting,
    Open(ShutdownHandle),
    /// In the poll set, with a handle on the socket to shut it down.
    #[cfg(unix)]
    Polled(std::net::TcpStream),
    Closed,
}

/// The driver's handle on one connection.
struct Conn {
    writes: Sender<Vec<u8>>,
    slot: Arc<Mutex<Slot>>,
    /// The response as it arrives, for the wire log.
    log: ChannelLog,
}

/// The connections of one HTTP client.
pub(crate) struct HttpConns {
    url: EndpointUrl,
    connector: Arc<dyn Connector>,
    /// Bounds the connector's own set-up, so that its thread ends; the machine keeps
    /// its own deadline.
    connect_timeout: Duration,
    /// Header names the wire log hides besides the built-in ones.
    redact_headers: Arc<[String]>,
    conns: IdMap<ConnId, Conn>,
    /// Where plain TCP connections are polled (Unix).
    #[cfg(unix)]
    polled: Arc<PollSet>,
}

impl HttpConns {
    /// No connection yet; with the bell and the inlet the driver waits on.
    pub(crate) fn start(
        url: EndpointUrl,
        connector: Arc<dyn Connector>,
        connect_timeout: Duration,
        redact_headers: &[String],
    ) -> io::Result<(Self, Bell, Inlet)> {
        #[cfg(unix)]
        let (polled, bell, inlet) = PollSet::channel()?;
        #[cfg(not(unix))]
        let (bell, inlet) = carrier::channel();
        let conns = HttpConns {
            url,
            connector,
            connect_timeout,
            redact_headers: redact_headers.into(),
            conns: IdMap::default(),
            #[cfg(unix)]
            polled,
        };
        Ok((conns, bell, inlet))
    }
}

impl<F: Flavour> Carrier<F> for HttpConns {
    /// Opens `conn` to `origin` on a thread of its own. A thread that cannot start is
    /// reported at once, as the connect failure it is.
    fn connect(
        &mut self,
        conn: ConnId,
        origin: &Origin,
        bell: &Bell,
    ) -> Result<(), TransportFailure> {
        let url = if Origin::of(&self.url) == *origin {
            self.url.clone()
        } else {
            let parsed = EndpointUrl::parse(&origin.to_string(), true);
            parsed.map_err(|e| {
                Carrier::<F>::failure(self, TransportErrorKind::Connect, io::Error::other(e))
            })?
        };
        let (writes, queue) = mpsc::channel::<Vec<u8>>();
        let slot = Arc::new(Mutex::new(Slot::Connecting));
        let report = Reporter::new(bell, conn, 0);
        #[cfg(unix)]
        let polled = Arc::clone(&self.polled);
        let (connector, timeout) = (Arc::clone(&self.connector), self.connect_timeout);
        let thread_slot = Arc::clone(&slot);
        let origin = origin.clone();
        let opened = carrier::spawn(&format!("mcp-http-{}", conn.index()), move || {
            let stream = connector.connect_origin(&origin, &url, timeout);
            #[cfg(unix)]
            if let Ok(socket) = &stream
                && let Some(socket) = socket.tcp_socket()
            {
                match poll_tcp(&polled, conn, socket, &thread_slot) {
                    Ok(true) => drop(report.send(IoEvent::Connected)),
                    Ok(false) => {}
                    Err(e) => drop(report.send(IoEvent::Failed(TransportErrorKind::Connect, e))),
                }
                return;
            }
            let halves = match stream.and_then(|s| s.split()) {
                Ok(h) => h,
                Err(e) => {
                    report.send(IoEvent::Failed(TransportErrorKind::Connect, e));
                    return;
                }
            };
            {
                let mut slot = thread_slot.lock().unwrap_or_else(PoisonError::into_inner);
                if matches!(*slot, Slot::Closed) {
                    halves.shutdown.shutdown();
                    return;
                }
                *slot = Slot::Open(halves.shutdown);
            }
            if !report.send(IoEvent::Connected) {
                return;
            }
            let reader = report.clone();
            let input = halves.reader;
            if let Err(e) = carrier::spawn("mcp-http-reader", move || read_loop(input, &reader)) {
                report.send(IoEvent::Failed(TransportErrorKind::Read, e));
                return;
            }
            write_loop(halves.writer, &queue, &report);
        });
        if let Err(e) = opened {
            return Err(Carrier::<F>::failure(self, TransportErrorKind::Connect, e));
        }
        let log = ChannelLog::http_redacting(Arc::clone(&self.redact_headers));
        self.conns.insert(conn, Conn { writes, slot, log });
        Ok(())
    }

    /// Queues a request on `conn`. The response before it on the same connection is
    /// over (the machine never pipelines), so its wire log ends here.
    fn write(&mut self, conn: ConnId, bytes: Vec<u8>, log: &mut Option<WireLog<F>>) {
        if let Some(c) = self.conns.get_mut(&conn) {
            c.log.sent(log, &bytes);
            // The machine writes only once the connection is open, so the slot of a polled
            // one says so by now (and its lock is released before the poll set's is taken).
            #[cfg(unix)]
            {
                let slot = c.slot.lock().unwrap_or_else(PoisonError::into_inner);
                let polled = matches!(*slot, Slot::Polled(_));
                drop(slot);
                if polled {
                    self.polled.send(conn, bytes);
                    return;
                }
            }
            // Gone only when the writer failed, which it reported.
            let _ = c.writes.send(bytes);
        }
    }

    #[cfg(unix)]
    fn due_writes(&self) -> Option<&Arc<PollSet>> {
        self.polled.is_due().then_some(&self.polled)
    }

    /// Shuts `conn` down and forgets it.
    fn close(&mut self, conn: ConnId, _: Duration, log: &mut Option<WireLog<F>>) {
        let Some(mut c) = self.conns.remove(&conn) else {
            return;
        };
        c.log.finish(log);
        let mut slot = c.slot.lock().unwrap_or_else(PoisonError::into_inner);
        match &*slot {
            Slot::Open(handle) => handle.shutdown(),
            #[cfg(unix)]
            Slot::Polled(socket) => {
                let _ = socket.shutdown(std::net::Shutdown::Both);
                self.polled.detach(conn, 0);
            }
            Slot::Connecting | Slot::Closed => {}
        }
        *slot = Slot::Closed;
    }

    fn is_current(&self, conn: ConnId, _: u64) -> bool {
        self.conns.contains_key(&conn)
    }

    fn is_idle(&self) -> bool {
        self.conns.is_empty()
    }

    fn channel_log(&mut self, conn: ConnId) -> Option<&mut ChannelLog> {
        self.conns.get_mut(&conn).map(|c| &mut c.log)
    }

    fn failure(&self, step: TransportErrorKind, error: io::Error) -> TransportFailure {
        TransportError::new(step, self.url.origin(), error).failure()
    }

    fn release(&mut self, _: Duration, log: &mut Option<WireLog<F>>) -> Shutdown {
        let all: Vec<ConnId> = self.conns.keys().copied().collect();
        for conn in all {
            Carrier::<F>::close(self, conn, Duration::ZERO, log);
        }
        Shutdown::default()
    }
}

/// Puts a plain TCP connection in the poll set, unless the machine closed it meanwhile
/// (`Ok(false)`).
#[cfg(unix)]
fn poll_tcp(
    polled: &PollSet,
    conn: ConnId,
    socket: &std::net::TcpStream,
    slot: &Mutex<Slot>,
) -> io::Result<bool> {
    let (socket, handle) = (socket.try_clone()?, socket.try_clone()?);
    let mut slot = slot.lock().unwrap_or_else(PoisonError::into_inner);
    if matches!(*slot, Slot::Closed) {
        return Ok(false);
    }
    polled.attach(conn, 0, socket.into(), None)?;
    *slot = Slot::Polled(handle);
    Ok(true)
}
