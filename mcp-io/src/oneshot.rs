//! A reply that is sent once and awaited once, for an adapter whose caller waits on a
//! future: the [`Reply`] travels with a command to the driver, which sends the outcome;
//! the [`Answer`] is the future the caller awaits.
//!
//! One lock around the value and the waker, in one allocation: a call's reply costs
//! no more than that. A general channel (a queue, listeners, a second allocation) would
//! be paid on every call for a capacity that is never used. A [`Reply`] dropped unsent
//! (the driver went away with the command) resolves the [`Answer`] to [`Dropped`], so a
//! caller never waits for a reply that cannot come.
//!
//! ```
//! use std::future::Future;
//! use std::pin::pin;
//! use std::task::{Context, Poll, Waker};
//!
//! let mut cx = Context::from_waker(Waker::noop());
//! let (reply, answer) = mcp_io::oneshot::channel::<u32>();
//! let mut answer = pin!(answer);
//! assert!(answer.as_mut().poll(&mut cx).is_pending());
//! reply.send(7);
//! assert_eq!(answer.poll(&mut cx), Poll::Ready(Ok(7)));
//!
//! let (reply, answer) = mcp_io::oneshot::channel::<u32>();
//! drop(reply);
//! assert_eq!(pin!(answer).poll(&mut cx), Poll::Ready(Err(mcp_io::oneshot::Dropped)));
//! ```

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

/// What both ends share.
struct Slot<T> {
    value: Option<T>,
    /// The waker of the task awaiting the [`Answer`], as its last poll gave it.
    waker: Option<Waker>,
    /// The [`Reply`] is gone: sent (the value is here) or dropped unsent.
    replied: bool,
    /// The [`Answer`] was given up ([`Answer::abandon`]): a value sent now is not kept.
    abandoned: bool,
}

type Shared<T> = Arc<Mutex<Slot<T>>>;

fn lock<T>(shared: &Shared<T>) -> MutexGuard<'_, Slot<T>> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A new reply and the answer it resolves.
pub fn channel<T>() -> (Reply<T>, Answer<T>) {
    let shared = Arc::new(Mutex::new(Slot {
        value: None,
        waker: None,
        replied: false,
        abandoned: false,
    }));
    (Reply(Arc::clone(&shared)), Answer(shared))
}

/// The sending end: [`Reply::send`] once, or drop it to say no reply will come.
pub struct Reply<T>(Shared<T>);

impl<T> Reply<T> {
    /// Sends `value` and wakes the task awaiting the [`Answer`]. A value nobody awaits
    /// any more (the answer was dropped) is dropped with the last end.
    pub fn send(self, value: T) {
        lock(&self.0).value = Some(value);
        // Dropping `self` marks the reply given and wakes the awaiting task.
    }

    /// Sends `value`, or gives it back when the caller gave up its [`Answer`]
    /// ([`Answer::abandon`]): what it started is then the driver's to undo.
    ///
    /// # Errors
    /// `value`, when the answer was abandoned.
    pub fn try_send(self, value: T) -> Result<(), T> {
        {
            let mut slot = lock(&self.0);
            if slot.abandoned {
                return Err(value);
            }
            slot.value = Some(value);
        }
        Ok(())
    }
}

impl<T> Drop for Reply<T> {
    fn drop(&mut self) {
        let waker = {
            let mut slot = lock(&self.0);
            slot.replied = true;
            slot.waker.take()
        };
        // Woken outside the lock: an executor may run code of its own on a wake-up.
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

impl<T> fmt::Debug for Reply<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reply").finish_non_exhaustive()
    }
}

/// The receiving end, a future of the value sent, or of [`Dropped`] when the [`Reply`]
/// was dropped unsent.
#[must_use = "an answer does nothing unless awaited"]
pub struct Answer<T>(Shared<T>);

impl<T> Answer<T> {
    /// Gives the answer up: the value already sent, if any (the caller's to undo); a
    /// value sent later goes back to the sender ([`Reply::try_send`]).
    pub fn abandon(self) -> Option<T> {
        let mut slot = lock(&self.0);
        slot.abandoned = true;
        slot.value.take()
    }
}

impl<T> Future for Answer<T> {
    type Output = Result<T, Dropped>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut slot = lock(&self.0);
        if let Some(value) = slot.value.take() {
            return Poll::Ready(Ok(value));
        }
        if slot.replied {
            return Poll::Ready(Err(Dropped));
        }
        if !slot.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            slot.waker = Some(cx.waker().clone());
        }
        Poll::Pending
    }
}

impl<T> fmt::Debug for Answer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Answer").finish_non_exhaustive()
    }
}

/// The [`Reply`] was dropped without a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dropped;

impl fmt::Display for Dropped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the reply was dropped unsent")
    }
}

impl std::error::Error for Dropped {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_waker::counting;
    use std::pin::pin;

    #[test]
    fn the_awaiting_task_is_woken_once_by_a_send_and_by_a_drop() {
        for send in [true, false] {
            let (count, waker) = counting();
            let mut cx = Context::from_waker(&waker);
            let (reply, answer) = channel::<String>();
            let mut answer = pin!(answer);
            assert!(answer.as_mut().poll(&mut cx).is_pending());
            assert!(answer.as_mut().poll(&mut cx).is_pending());
            if send {
                reply.send("done".to_owned());
            } else {
                drop(reply);
            }
            assert_eq!(count.woken(), 1, "send: {send}");
            let expected = if send {
                Ok("done".to_owned())
            } else {
                Err(Dropped)
            };
            assert_eq!(answer.poll(&mut cx), Poll::Ready(expected));
        }
    }

    #[test]
    fn a_value_sent_from_another_thread_arrives() {
        let (reply, answer) = channel::<u64>();
        let sender = std::thread::spawn(move || reply.send(42));
        sender.join().unwrap();
        let mut cx = Context::from_waker(Waker::noop());
        assert_eq!(pin!(answer).poll(&mut cx), Poll::Ready(Ok(42)));
    }
}
