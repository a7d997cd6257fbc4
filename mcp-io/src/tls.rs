//! TLS as bytes in and bytes out, the same for both adapters: [`TlsSession`], a rustls
//! client connection that never touches a socket (with the `tls` feature), and [`Layer`],
//! a byte channel's optional session, for a driver that moves the records itself.
//!
//! The adapter reads ciphertext from its socket and hands it to
//! [`TlsSession::receive`], which gives the plaintext back; it hands plaintext to
//! [`TlsSession::send`] and writes what [`TlsSession::take_records`] gives out. The
//! handshake is the same exchange with no plaintext yet: records out, ciphertext in,
//! until [`TlsSession::is_handshaking`] turns false. A failure is an `io::Error` with the
//! `rustls::Error` inside, which [`crate::TransportError`] reports as a TLS failure.
//!
//! ```
//! # #[cfg(feature = "tls")] {
//! use mcp_io::http::http1_tls_config;
//! use mcp_io::tls::TlsSession;
//!
//! let mut tls = TlsSession::new(http1_tls_config(None), "mcp.example.com").unwrap();
//! let mut hello = Vec::new();
//! tls.take_records(&mut hello);
//! assert!(tls.is_handshaking() && hello[0] == 0x16, "a handshake record first");
//! # }
//! ```

use std::io;
#[cfg(feature = "tls")]
use std::io::{Read, Write};
#[cfg(feature = "tls")]
use std::net::IpAddr;
#[cfg(feature = "tls")]
use std::sync::Arc;

#[cfg(feature = "tls")]
use rustls::pki_types::ServerName;
#[cfg(feature = "tls")]
use rustls::{ClientConfig, ClientConnection};

use crate::TransportErrorKind;

/// The TLS of one byte channel whose records the driver moves itself: a [`TlsSession`]
/// (an `https` origin whose connector does not do TLS), or nothing, and the bytes pass
/// as they are. It also says when the channel counts as open (the handshake is over)
/// and what a failure before that is (a failure to connect).
#[derive(Debug, Default)]
pub struct Layer {
    #[cfg(feature = "tls")]
    session: Option<TlsSession>,
    /// The plaintext of the last [`Layer::receive`].
    #[cfg(feature = "tls")]
    plain: Vec<u8>,
}

impl Layer {
    /// TLS through `session` (`None`: none).
    #[cfg(feature = "tls")]
    #[must_use]
    pub fn new(session: Option<TlsSession>) -> Self {
        Layer {
            session,
            plain: Vec::new(),
        }
    }

    /// Whether the handshake is still going on: the machine is told the channel is open
    /// once it is over.
    #[must_use]
    pub fn handshaking(&self) -> bool {
        #[cfg(feature = "tls")]
        return self
            .session
            .as_ref()
            .is_some_and(TlsSession::is_handshaking);
        #[cfg(not(feature = "tls"))]
        false
    }

    /// What a failure at `step` is: before the handshake is over, a failure to connect.
    #[must_use]
    pub fn step(&self, step: TransportErrorKind) -> TransportErrorKind {
        match self.handshaking() {
            true => TransportErrorKind::Connect,
            false => step,
        }
    }

    /// The bytes to write for `plaintext` (and any records waiting), appended to `out`.
    pub fn send(&mut self, plaintext: &[u8], out: &mut Vec<u8>) {
        #[cfg(feature = "tls")]
        if let Some(session) = &mut self.session {
            // Cannot fail: the session is never closed while the channel is open.
            let _ = session.send(plaintext);
            return session.take_records(out);
        }
        out.extend_from_slice(plaintext);
    }

    /// [`Layer::send`] of a buffer the caller gives up: without TLS, and with nothing
    /// else queued in `out`, the buffer itself becomes `out` (no copy of a large
    /// message).
    pub fn send_owned(&mut self, plaintext: Vec<u8>, out: &mut Vec<u8>) {
        #[cfg(feature = "tls")]
        let plain = self.session.is_none();
        #[cfg(not(feature = "tls"))]
        let plain = true;
        if plain && out.is_empty() {
            *out = plaintext;
        } else {
            self.send(&plaintext, out);
        }
    }

    /// The records waiting to be written (the handshake's first), appended to `out`.
    pub fn take_records(&mut self, out: &mut Vec<u8>) {
        #[cfg(feature = "tls")]
        if let Some(session) = &mut self.session {
            session.take_records(out);
        }
        let _ = out;
    }

    /// What `read`, bytes read on the channel, carried: its plaintext (`read` itself
    /// without TLS); the session's answers (the handshake's next flight, an alert) are
    /// appended to `out`.
    ///
    /// # Errors
    /// A TLS failure ([`TlsSession::receive`]).
    pub fn receive<'a>(
        &'a mut self,
        read: &'a [u8],
        out: &mut Vec<u8>,
    ) -> io::Result<Received<'a>> {
        #[cfg(feature = "tls")]
        if let Some(session) = &mut self.session {
            let handshaking = session.is_handshaking();
            self.plain.clear();
            let closed = session.receive(read, &mut self.plain);
            session.take_records(out);
            return Ok(Received {
                plaintext: &self.plain,
                closed: closed?,
                opened: handshaking && !session.is_handshaking(),
            });
        }
        let _ = out;
        Ok(Received {
            plaintext: read,
            closed: false,
            opened: false,
        })
    }

    /// The channel's input ended.
    ///
    /// # Errors
    /// Over TLS, an end without `close_notify` ([`TlsSession::receive_eof`]).
    pub fn receive_eof(&mut self) -> io::Result<()> {
        #[cfg(feature = "tls")]
        if let Some(session) = &mut self.session {
            return session.receive_eof();
        }
        Ok(())
    }
}

/// What bytes read on a channel carried ([`Layer::receive`]).
#[derive(Debug)]
#[non_exhaustive]
pub struct Received<'a> {
    /// The plaintext, for the machine.
    pub plaintext: &'a [u8],
    /// The peer said `close_notify`: its input is over.
    pub closed: bool,
    /// The handshake is over with these bytes: the channel is open now.
    pub opened: bool,
}

/// One TLS client session over a byte stream the adapter moves: ciphertext in, plaintext
/// out, and the reverse.
#[cfg(feature = "tls")]
pub struct TlsSession {
    conn: ClientConnection,
}

#[cfg(feature = "tls")]
impl TlsSession {
    /// A session with `config` for `host`, which names the server (SNI) and its
    /// certificate: an IP literal (bracketed or not) as an IP address, anything else as
    /// a DNS name. Its first records are the handshake's.
    ///
    /// # Errors
    /// `InvalidInput` when `host` is no valid server name, or the rustls error when the
    /// configuration cannot make a session.
    pub fn new(config: Arc<ClientConfig>, host: &str) -> io::Result<Self> {
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        let name = match bare.parse::<IpAddr>() {
            Ok(ip) => ServerName::IpAddress(ip.into()),
            Err(_) => ServerName::try_from(bare.to_owned()).map_err(|e| {
                let why = format!("{host:?} is not a valid TLS server name: {e}");
                io::Error::new(io::ErrorKind::InvalidInput, why)
            })?,
        };
        Ok(ClientConnection::new(config, name).map_err(tls_io)?.into())
    }

    /// Whether the handshake is still going on: no plaintext can be sent yet.
    #[must_use]
    pub fn is_handshaking(&self) -> bool {
        self.conn.is_handshaking()
    }

    /// Ciphertext from the peer; the plaintext it carried is appended to `plaintext`.
    /// True once the peer has said `close_notify`: its input is over. Records may then
    /// wait to be sent ([`Self::take_records`]): the next handshake flight, a key update,
    /// or, when this fails, the alert that says why (worth sending before reporting).
    ///
    /// # Errors
    /// A TLS failure, with the `rustls::Error` inside.
    pub fn receive(&mut self, mut ciphertext: &[u8], plaintext: &mut Vec<u8>) -> io::Result<bool> {
        loop {
            let closed = self.drain(plaintext)?;
            if closed || ciphertext.is_empty() {
                return Ok(closed);
            }
            self.conn.read_tls(&mut ciphertext)?;
            self.conn.process_new_packets().map_err(tls_io)?;
        }
    }

    /// The peer's input ended (the socket read end of file).
    ///
    /// # Errors
    /// `UnexpectedEof` when the peer had not said `close_notify` (its message says so):
    /// what came may be cut short. A TLS failure, with the `rustls::Error` inside.
    pub fn receive_eof(&mut self) -> io::Result<()> {
        self.conn.read_tls(&mut &[][..])?;
        self.conn.process_new_packets().map_err(tls_io)?;
        self.drain(&mut Vec::new()).map(drop)
    }

    /// Plaintext for the peer, encrypted into records ([`Self::take_records`]); sent
    /// once the handshake is over when given before.
    ///
    /// # Errors
    /// When the session is closed.
    pub fn send(&mut self, plaintext: &[u8]) -> io::Result<()> {
        self.conn.writer().write_all(plaintext)
    }

    /// Says `close_notify` to the peer (with the next [`Self::take_records`]).
    pub fn close(&mut self) {
        self.conn.send_close_notify();
    }

    /// The records to send now, appended to `out`: handshake messages, data, alerts.
    pub fn take_records(&mut self, out: &mut Vec<u8>) {
        // Writing into a `Vec` cannot fail.
        while self.conn.wants_write() && self.conn.write_tls(out).is_ok() {}
    }

    /// Moves the plaintext rustls holds into `plaintext`; true once `close_notify` came.
    fn drain(&mut self, plaintext: &mut Vec<u8>) -> io::Result<bool> {
        match self.conn.reader().read_to_end(plaintext) {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(false),
            Err(e) => Err(e),
        }
    }
}

#[cfg(feature = "tls")]
impl From<ClientConnection> for TlsSession {
    /// A session over a rustls connection made elsewhere, handshaken already or not.
    fn from(mut conn: ClientConnection) -> Self {
        // Records are taken after every `send`: rustls need not hold any back.
        conn.set_buffer_limit(None);
        TlsSession { conn }
    }
}

#[cfg(feature = "tls")]
impl std::fmt::Debug for TlsSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsSession")
            .field("handshaking", &self.is_handshaking())
            .finish_non_exhaustive()
    }
}

/// A rustls error as the I/O error `crate::http::tls_error` recognises.
#[cfg(feature = "tls")]
fn tls_io(e: rustls::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

#[cfg(test)]
mod tests {
    use super::Layer;

    /// Without TLS, a buffer handed over whole becomes the write buffer when nothing
    /// waits there (no copy of a large message), and is appended after what waits.
    #[test]
    fn an_owned_buffer_is_taken_not_copied() {
        let mut layer = Layer::default();
        let message = vec![7u8; 64 * 1024];
        let at = message.as_ptr();
        let mut out = Vec::new();
        layer.send_owned(message, &mut out);
        assert_eq!(out.as_ptr(), at, "the message itself is the write buffer");
        assert_eq!(out.len(), 64 * 1024);
        let mut queued = b"head".to_vec();
        layer.send_owned(b"tail".to_vec(), &mut queued);
        assert_eq!(queued, b"headtail");
    }
}
