//! What the client machine asks its driver to do, and how the driver reports transport
//! trouble back: [`Transmit`], [`ConnId`], [`Origin`], [`TransportFailure`].

use std::fmt;
use std::sync::Arc;

use crate::http::{EndpointUrl, Scheme};

/// One byte channel the machine reads and writes: the single stdio channel
/// ([`ConnId::STDIO`]), or one connection of Streamable HTTP.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnId(pub(crate) u64);

impl ConnId {
    /// The stdio channel: the server's stdin (written) and stdout (read). It exists from
    /// the start; the driver never gets a [`Transmit::Connect`] for it.
    pub const STDIO: ConnId = ConnId(0);

    /// A number for logs; unique per machine.
    #[must_use]
    pub fn index(self) -> u64 {
        self.0
    }
}

impl fmt::Display for ConnId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if *self == ConnId::STDIO {
            f.write_str("stdio")
        } else {
            write!(f, "conn#{}", self.0)
        }
    }
}

/// Where a connection goes: scheme, host and port. TLS is wanted exactly when the scheme
/// is `https` (the server name for SNI and certificate checks is [`Origin::host`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Origin {
    scheme: Scheme,
    host: String,
    port: u16,
    public_only: bool,
}

impl Origin {
    /// The origin of an endpoint.
    #[must_use]
    pub fn of(url: &EndpointUrl) -> Origin {
        Origin {
            scheme: url.scheme(),
            host: url.host().to_owned(),
            port: url.port(),
            public_only: false,
        }
    }

    /// The same origin, to be reached only at public addresses (see
    /// [`Origin::public_only`]).
    #[must_use]
    pub fn into_public_only(mut self) -> Origin {
        self.public_only = true;
        self
    }

    /// Whether the connection may go only to a public address: the authorization flow
    /// reaches a server a public MCP server named ([`crate::auth::AuthRequest::public_only`]).
    /// Resolve the host, refuse loopback, private and link-local addresses
    /// ([`crate::auth::is_public`]), and connect to an address that passed, without
    /// resolving again.
    #[must_use]
    pub fn public_only(&self) -> bool {
        self.public_only
    }

    /// `http` or `https`.
    #[must_use]
    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    /// Whether the connection must speak TLS.
    #[must_use]
    pub fn is_tls(&self) -> bool {
        self.scheme == Scheme::Https
    }

    /// The host: a DNS name, or an IP literal without brackets.
    #[must_use]
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The TCP port.
    #[must_use]
    pub fn port(&self) -> u16 {
        self.port
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        write!(f, "{}://{host}:{}", self.scheme.as_str(), self.port)
    }
}

/// What the driver is to do next. Drain with [`super::Client::poll_transmit`] after every
/// input and command, and obey in order. The enum may grow (a later version may ask for
/// something new, such as opening a URL for an authorization flow); a driver that meets a
/// variant it does not know cannot do what the machine needs and should close the
/// client.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Transmit {
    /// Open a connection to `origin` (TCP, then TLS when [`Origin::is_tls`]), then report
    /// [`super::Client::handle_connected`] or [`super::Client::handle_transport_error`].
    /// The machine bounds the time it waits; the driver needs no timer of its own.
    Connect {
        /// The new connection.
        conn: ConnId,
        /// Where to.
        origin: Origin,
    },
    /// Write the `len` bytes just appended to the caller's buffer on `conn`, in order
    /// after earlier writes on it. Keep reading the connection and report what arrives
    /// with [`super::Client::handle_read`] and [`super::Client::handle_eof`].
    Write {
        /// Where.
        conn: ConnId,
        /// How many bytes at the end of the buffer.
        len: usize,
    },
    /// Close `conn` and forget it. For [`ConnId::STDIO`]: close the server's stdin, give
    /// the process its grace period to exit, then kill it and reap it.
    Close {
        /// Which.
        conn: ConnId,
    },
    /// Stdio only: the server exited on the era probe, as some legacy servers do. Reap it,
    /// start the same command again, and report [`super::Client::handle_connected`] for
    /// [`ConnId::STDIO`] (or [`super::Client::handle_transport_error`] when it cannot
    /// start).
    Respawn,
}

/// Why a connection failed below HTTP, as the driver saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TransportFailureKind {
    /// The host name did not resolve.
    Dns,
    /// Nothing listens there: the connection was refused.
    Refused,
    /// No route to the host, or the network is down.
    Unreachable,
    /// A step took too long (connecting, the TLS handshake, a write the peer never read).
    Timeout,
    /// The TLS handshake or a TLS record failed (certificate, protocol, `close_notify`).
    Tls,
    /// The peer reset the connection.
    Reset,
    /// The peer had closed the connection: a write failed, or an HTTP response ended
    /// before it began or before it was complete.
    Closed,
    /// The process could not be started (stdio).
    Spawn,
    /// Any other IO error.
    Io,
}

impl TransportFailureKind {
    /// A stable name: `dns`, `refused`, `unreachable`, `timeout`, `tls`, `reset`,
    /// `closed`, `spawn`, `io`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            TransportFailureKind::Dns => "dns",
            TransportFailureKind::Refused => "refused",
            TransportFailureKind::Unreachable => "unreachable",
            TransportFailureKind::Timeout => "timeout",
            TransportFailureKind::Tls => "tls",
            TransportFailureKind::Reset => "reset",
            TransportFailureKind::Closed => "closed",
            TransportFailureKind::Spawn => "spawn",
            TransportFailureKind::Io => "io",
        }
    }

    /// The kind of a standard IO error (refused, reset, timed out, …).
    #[must_use]
    pub fn of_io(kind: std::io::ErrorKind) -> TransportFailureKind {
        use std::io::ErrorKind as K;
        match kind {
            K::ConnectionRefused => TransportFailureKind::Refused,
            K::ConnectionReset | K::ConnectionAborted => TransportFailureKind::Reset,
            K::TimedOut | K::WouldBlock => TransportFailureKind::Timeout,
            K::BrokenPipe | K::NotConnected | K::UnexpectedEof => TransportFailureKind::Closed,
            K::HostUnreachable | K::NetworkUnreachable | K::NetworkDown | K::AddrNotAvailable => {
                TransportFailureKind::Unreachable
            }
            _ => TransportFailureKind::Io,
        }
    }
}

/// A transport failure: its kind, what the driver knows for people, and optionally the
/// driver's own error value, carried through the machine untouched so that the caller
/// gets it back typed (an `io::Error`, a `rustls::Error`) on the call or close reason it
/// caused.
///
/// Its `Debug` shows the kind and the detail, not the source: like `==`, it is about
/// what the machine was told, which a [transcript](super::transcript) records and a
/// replay gives again (without the driver's error value).
#[derive(Clone)]
pub struct TransportFailure {
    /// What kind of failure.
    pub kind: TransportFailureKind,
    /// Detail for people (the OS or TLS library's words, the target).
    pub detail: String,
    /// The driver's error, if it gave one. Not compared by `==`.
    pub source: Option<Arc<dyn std::error::Error + Send + Sync>>,
}

impl fmt::Debug for TransportFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TransportFailure")
            .field("kind", &self.kind)
            .field("detail", &self.detail)
            .finish_non_exhaustive()
    }
}

impl PartialEq for TransportFailure {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind && self.detail == other.detail
    }
}

impl Eq for TransportFailure {}

impl TransportFailure {
    /// A failure of this kind.
    #[must_use]
    pub fn new(kind: TransportFailureKind, detail: impl Into<String>) -> Self {
        TransportFailure {
            kind,
            detail: detail.into(),
            source: None,
        }
    }

    /// A failure from a standard IO error, classified by [`TransportFailureKind::of_io`].
    #[must_use]
    pub fn from_io(error: &std::io::Error) -> Self {
        TransportFailure::new(TransportFailureKind::of_io(error.kind()), error.to_string())
    }

    /// The same failure carrying the driver's own error value.
    #[must_use]
    pub fn with_source(mut self, source: Arc<dyn std::error::Error + Send + Sync>) -> Self {
        self.source = Some(source);
        self
    }
}

impl fmt::Display for TransportFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            TransportFailureKind::Dns => "name resolution failed",
            TransportFailureKind::Refused => "connection refused",
            TransportFailureKind::Unreachable => "host unreachable",
            TransportFailureKind::Timeout => "timed out",
            TransportFailureKind::Tls => "TLS failed",
            TransportFailureKind::Reset => "connection reset",
            TransportFailureKind::Closed => "connection closed",
            TransportFailureKind::Spawn => "the server could not be started",
            TransportFailureKind::Io => "IO error",
        };
        if self.detail.is_empty() {
            f.write_str(what)
        } else {
            write!(f, "{what}: {}", self.detail)
        }
    }
}

impl std::error::Error for TransportFailure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}
