//! Ctrl-C. The first one while a server is connected cancels what the client is blocked
//! in (the call in flight is cancelled at the server: `notifications/cancelled`, or its
//! stream closed), the command winds down (a listen ends its subscription, the server is
//! stopped), and `mcp` exits 130. A second one, or one before any server is connected,
//! exits 130 at once.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use mcp_blocking::Canceller;

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
static CURRENT: Mutex<Option<Canceller>> = Mutex::new(None);

/// Listens for SIGINT on a thread of its own (nothing happens in a signal handler but
/// waking that thread).
pub fn install() {
    let Ok(mut signals) = async_signal::Signals::new([async_signal::Signal::Int]) else {
        return;
    };
    std::thread::spawn(move || {
        futures_lite::future::block_on(async {
            use futures_lite::StreamExt;
            while signals.next().await.is_some() {
                let canceller = CURRENT.lock().ok().and_then(|c| c.clone());
                match canceller {
                    Some(c) if !INTERRUPTED.swap(true, Ordering::AcqRel) => c.cancel(),
                    _ => std::process::exit(130),
                }
            }
        });
    });
}

/// The client a Ctrl-C cancels from now on.
pub fn watch(canceller: Canceller) {
    if let Ok(mut current) = CURRENT.lock() {
        *current = Some(canceller);
    }
}

/// Whether Ctrl-C was pressed.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Acquire)
}
