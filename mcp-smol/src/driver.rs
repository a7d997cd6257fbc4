//! The `Driver`: the one future that owns a connection and all of its IO.
//!
//! One `Driver` type serves every transport: it is a boxed future running a transport's
//! `run` over the shared [`Core`](crate::core::Core) — [`crate::stdio`] for a server child
//! process, [`crate::http`] for a Streamable HTTP endpoint. The constructor picks the
//! transport; nothing outside this module (and no user) needs to know which one is
//! inside, so the [`Client`](crate::Client) handle and the `Driver` are the same types
//! for both.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use async_process::Child;
use mcp_host::{EraPlan, Flavour, Local, Options, Sendable};
use mcp_proto::client::ClientConfig;
use mcp_proto::client::http::HttpConfig;

use crate::client::Shared;
use crate::core::{Channels, Core};
use crate::http::{Http, HttpSetup};
use crate::stdio::Stdio;
use crate::{Error, StdioCommand};

/// The future that does all the IO of one connection: for stdio it reads the server's
/// stdout and stderr and writes its stdin; over HTTP it opens, reuses and closes the
/// connections to the endpoint and reads and writes every exchange on them. In both
/// cases it runs the protocol timers, serves the [`Client`](crate::Client) handles and
/// answers input requests.
///
/// Run it on any executor (`smol::spawn`, an `Executor`, a `LocalExecutor`, another
/// runtime's spawn) or join it with your own future (`futures_lite::future::zip`). The
/// library never spawns a task or a thread of its own (async-io, async-process and
/// blocking keep their usual helper threads: the fallback reactor driver, the child
/// reaper, and the pool that resolves host names).
///
/// It resolves when the connection is over: `Ok(())` when the client closed it (every
/// handle dropped, or [`Client::close`](crate::Client::close)), `Err` with the reason
/// otherwise (the server exited, negotiation failed, a restart could not spawn, the HTTP
/// endpoint could not be reached). For stdio that is once the server process has exited
/// (or was killed after the grace period) and been reaped; over HTTP once the last
/// exchange is over (or the grace period ran out) and every connection is closed.
/// `F` is the [flavour](mcp_host::Flavour) of the handlers in its [`Options`]: a
/// `Driver` (that is, `Driver<Sendable>`) is `Send` and runs on any executor; a
/// `Driver<Local>`, from [`connect_stdio_with`](crate::connect_stdio_with) with
/// `Options::local()`, runs handlers that are not `Send`, so it is not `Send` either:
/// run it on a `LocalExecutor`, or join it with your own future on one thread.
///
/// Dropping it early kills the server process, or closes every connection, at once, and
/// every call still waiting (queued or in flight), every [`Client::connected`] waiter and
/// every later call ends at once with [`Error::DriverGone`].
///
/// [`Client::connected`]: crate::Client::connected
#[must_use = "the Driver does all the IO: run it on an executor or await it alongside your code"]
pub struct Driver<F: DriverFlavour = Sendable> {
    inner: <F as sealed::Boxing>::Future,
}

/// The [flavours](mcp_host::Flavour) a [`Driver`] comes in: [`Sendable`] (the default,
/// a `Send` driver) and [`Local`] (handlers that are not `Send`). Sealed.
pub trait DriverFlavour: Flavour + sealed::Boxing {}

impl DriverFlavour for Sendable {}
impl DriverFlavour for Local {}

mod sealed {
    use super::*;

    /// What a stdio driver is made of.
    pub struct StdioParts<F: Flavour> {
        pub(crate) command: StdioCommand,
        pub(crate) config: ClientConfig,
        pub(crate) options: Options<F>,
        pub(crate) child: Child,
        pub(crate) channels: Channels,
        pub(crate) shared: Arc<Shared>,
    }

    /// How a driver of a flavour holds its future: boxed as `Send` or not. (Only
    /// concrete code knows that the future is `Send` for `Sendable` handlers.)
    pub trait Boxing: Flavour {
        type Future: Future<Output = Result<(), Error>> + Unpin;

        fn stdio(parts: StdioParts<Self>) -> Self::Future;
    }

    impl Boxing for Sendable {
        type Future = Pin<Box<dyn Future<Output = Result<(), Error>> + Send>>;

        fn stdio(parts: StdioParts<Self>) -> Self::Future {
            Box::pin(run_stdio(parts))
        }
    }

    impl Boxing for Local {
        type Future = Pin<Box<dyn Future<Output = Result<(), Error>>>>;

        fn stdio(parts: StdioParts<Self>) -> Self::Future {
            Box::pin(run_stdio(parts))
        }
    }

    async fn run_stdio<F: Flavour>(parts: StdioParts<F>) -> Result<(), Error> {
        let StdioParts {
            command,
            config,
            options,
            child,
            channels,
            shared,
        } = parts;
        // The machine is created on first poll so that the probe timeout does not run
        // while the driver waits to be spawned.
        let transport = Stdio::new(command, config, child);
        transport.run(Core::new(options, channels, shared)).await
    }
}

impl<F: DriverFlavour> fmt::Debug for Driver<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Driver").finish_non_exhaustive()
    }
}

impl<F: DriverFlavour> Future for Driver<F> {
    type Output = Result<(), Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.inner).poll(cx)
    }
}

impl<F: DriverFlavour> Driver<F> {
    /// A driver for a server child process.
    pub(crate) fn stdio(
        command: StdioCommand,
        config: ClientConfig,
        options: Options<F>,
        child: Child,
        channels: Channels,
        shared: Arc<Shared>,
    ) -> Driver<F> {
        Driver {
            inner: F::stdio(sealed::StdioParts {
                command,
                config,
                options,
                child,
                channels,
                shared,
            }),
        }
    }
}

impl Driver {
    /// A driver for a Streamable HTTP endpoint, connecting as `plan` says (the era cache).
    pub(crate) fn http(
        config: ClientConfig,
        http: HttpConfig,
        setup: HttpSetup,
        plan: EraPlan,
        options: Options,
        channels: Channels,
        shared: Arc<Shared>,
    ) -> Driver {
        let inner = async move {
            // As for stdio: no clock runs before the first poll.
            let transport = Http::new(config, http, setup, plan.mode());
            let mut core = Core::new(options, channels, shared);
            core.set_era_plan(plan);
            transport.run(core).await
        };
        Driver {
            inner: Box::pin(inner),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_driver_is_send() {
        fn send<T: Send + 'static>() {}
        send::<Driver>();
    }
}
