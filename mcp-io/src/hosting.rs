//! What both adapters do to host a Streamable HTTP server, written once: building the
//! endpoint (the process's allocator settings, sealed `requestState`, a random seed for
//! session ids, `Host` checks for the bound address), the size of a connection's reads,
//! and what a look at an open stream's socket tells its connection machine.

use std::io;
use std::net::IpAddr;

use mcp_proto::Instant;
use mcp_proto::server::Server;
use mcp_proto::server::http::{HttpConnection, HttpEndpoint, HttpServeOptions};

/// The read buffer of a served connection: a 64 KiB request arrives in one or two reads.
pub const READ_CHUNK: usize = 64 * 1024;

/// The endpoint for `server` on a listener bound to `bound`, with `setup` run on it
/// before anything is served: freed memory is kept ([`crate::heap::keep_freed_memory`]),
/// the server's states are sealed ([`crate::auth::seal_server_states`]), sessions get ids
/// from a fresh random seed, and a loopback server accepts only loopback `Host`s
/// ([`HttpEndpointConfig::restrict_hosts_for`](mcp_proto::server::http::HttpEndpointConfig::restrict_hosts_for)).
///
/// # Errors
/// When the operating system has no random numbers to give.
pub fn http_endpoint(
    mut server: Server,
    options: &HttpServeOptions,
    bound: IpAddr,
    setup: impl FnOnce(&mut HttpEndpoint),
) -> io::Result<HttpEndpoint> {
    crate::heap::keep_freed_memory();
    crate::auth::seal_server_states(&mut server)?;
    let seed = crate::auth::random_seed()?;
    let mut config = options.endpoint.clone();
    config.restrict_hosts_for(bound);
    let mut endpoint = HttpEndpoint::with_sessions(server, config, &seed);
    setup(&mut endpoint);
    Ok(endpoint)
}

/// Tells `machine` what a non-blocking peek at its socket saw during an open stream (the
/// client closed, or the connection failed); returns whether bytes were waiting, which
/// are a next (pipelined) request and hide whether the client is still there.
pub fn handle_peek(machine: &mut HttpConnection, now: Instant, peeked: io::Result<usize>) -> bool {
    match peeked {
        Ok(0) => machine.handle_eof(now),
        Ok(_) => return true,
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
            ) => {}
        Err(_) => machine.handle_transport_error(now),
    }
    false
}
