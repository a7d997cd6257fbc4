//! Streamable HTTP (and HTTPS) for [`crate::Client`]: opening the connections the
//! machine asks for.
//!
//! The machine decides everything about the connections within the bounds of the
//! [`HttpOptions`] (see [`mcp_io::http::HttpOptions`]). This module only carries out
//! what it asks: each connection is opened on a thread of its own, then read
//! continuously by one thread and written by another, all of them reporting to the
//! caller's thread over one bounded channel (the stdio pattern).
//!
//! Connections come from a [`Connector`]: [`TcpConnector`] for `http://`, `TlsConnector`
//! (with the `tls` feature: rustls with the ring provider; Mozilla roots from
//! `webpki-roots` unless you pass your own `rustls::ClientConfig`) for `https://`, or
//! your own, which then does TLS itself. Failures below HTTP are typed:
//! [`crate::Error::Transport`].
//!
//! ```no_run
//! use mcp_blocking::{Client, ClientConfig, HttpOptions, Options};
//!
//! # fn main() -> Result<(), mcp_blocking::Error> {
//! let config = ClientConfig::new("my-app", "1.0");
//! let http = HttpOptions::new().bearer_token("s3cr3t");
//! let mut client =
//!     Client::connect_http_with("https://mcp.example.com/mcp", config, Options::new(), http)?;
//! for tool in client.list_tools()? {
//!     println!("{}", tool.name);
//! }
//! for (tool, why) in client.excluded_tools() {
//!     println!("left out: {tool} ({why})");
//! }
//! client.close();
//! # Ok(())
//! # }
//! ```

mod connector;
mod conns;
mod one_shot;
#[cfg(feature = "tls")]
mod tls;

use std::sync::Arc;

pub use connector::{Connector, Halves, ShutdownHandle, Stream, TcpConnector};
pub(crate) use conns::HttpConns;
use mcp_io::http::HttpStart;
#[cfg(feature = "tls")]
pub use mcp_io::http::default_tls_config;
pub use one_shot::{send_auth_request, send_auth_request_within};
#[cfg(feature = "tls")]
pub use tls::TlsConnector;

/// How [`crate::Client::connect_http_with`] reaches the endpoint: the options both
/// adapters share, with this crate's [`Connector`] (see
/// [`mcp_io::http::HttpOptions`]).
///
/// ```
/// use std::time::Duration;
/// use mcp_blocking::{EraCache, HttpOptions, TcpConnector};
///
/// let http = HttpOptions::new()
///     .authorization("Bearer abc")
///     .connect_timeout(Duration::from_secs(3))
///     .connector(TcpConnector)
///     .era_cache(EraCache::new());
/// assert!(!format!("{http:?}").contains("abc"));
/// ```
pub type HttpOptions = mcp_io::http::HttpOptions<dyn Connector>;

impl<C: Connector + 'static> From<C> for Box<dyn Connector> {
    fn from(connector: C) -> Self {
        Box::new(connector)
    }
}

/// The connector for what `connect_http_with` prepared: the caller's, or TCP, or TLS
/// over TCP for `https` (the caller's connector does everything itself).
pub(crate) fn connector(http: &HttpOptions, start: &HttpStart) -> Arc<dyn Connector> {
    if let Some(custom) = &http.connector {
        return Arc::clone(custom);
    }
    #[cfg(feature = "tls")]
    if let Some(tls) = &start.tls {
        return Arc::new(TlsConnector::new(Arc::clone(tls)));
    }
    let _ = start;
    Arc::new(TcpConnector)
}
