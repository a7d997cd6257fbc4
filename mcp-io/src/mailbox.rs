//! The commands of many handles for one driver task: [`Poster`]s (cloned with the
//! handles, used from any thread) post into one [`Mailbox`], which the driver polls.
//!
//! A queue behind one lock, with the driver's waker beside it: posting is a push and,
//! when the driver waits, one wake-up. The mailbox closes when the driver says so
//! ([`Mailbox::close`]: posting fails from then on, what was posted can still be taken)
//! or goes away (what was posted is dropped, so a reply travelling in a command resolves
//! as dropped). When the last poster is gone, the driver's next poll says so (`None`):
//! no handle is left to ask for anything.
//!
//! ```
//! use std::task::{Context, Poll, Waker};
//!
//! let mut cx = Context::from_waker(Waker::noop());
//! let (poster, mut mailbox) = mcp_io::mailbox::mailbox::<&str>();
//! let second = poster.clone();
//! poster.post("list").unwrap();
//! assert_eq!(mailbox.poll_next(&mut cx), Poll::Ready(Some("list")));
//! assert!(mailbox.poll_next(&mut cx).is_pending());
//! drop((poster, second));
//! assert_eq!(mailbox.poll_next(&mut cx), Poll::Ready(None));
//! ```

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

/// What the posters and the mailbox share.
struct State<T> {
    queue: VecDeque<T>,
    /// The driver's waker, as its last poll that found nothing gave it.
    waker: Option<Waker>,
    posters: usize,
    closed: bool,
}

type Shared<T> = Arc<Mutex<State<T>>>;

fn lock<T>(shared: &Shared<T>) -> MutexGuard<'_, State<T>> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A new mailbox and its first poster.
pub fn mailbox<T>() -> (Poster<T>, Mailbox<T>) {
    let shared = Arc::new(Mutex::new(State {
        queue: VecDeque::new(),
        waker: None,
        posters: 1,
        closed: false,
    }));
    (Poster(Arc::clone(&shared)), Mailbox(shared))
}

/// Posts into a [`Mailbox`]; clone it for every handle.
pub struct Poster<T>(Shared<T>);

impl<T> Poster<T> {
    /// Queues `item` and wakes the driver if it waits.
    ///
    /// # Errors
    /// `item` back, when the mailbox is closed or gone.
    pub fn post(&self, item: T) -> Result<(), T> {
        let waker = {
            let mut state = lock(&self.0);
            if state.closed {
                return Err(item);
            }
            state.queue.push_back(item);
            state.waker.take()
        };
        // Woken outside the lock: an executor may run code of its own on a wake-up.
        if let Some(waker) = waker {
            waker.wake();
        }
        Ok(())
    }

    /// Whether posting fails: the mailbox is closed or gone.
    #[must_use]
    pub fn is_closed(&self) -> bool {
        lock(&self.0).closed
    }
}

impl<T> Clone for Poster<T> {
    fn clone(&self) -> Self {
        lock(&self.0).posters += 1;
        Poster(Arc::clone(&self.0))
    }
}

impl<T> Drop for Poster<T> {
    fn drop(&mut self) {
        let waker = {
            let mut state = lock(&self.0);
            state.posters -= 1;
            if state.posters > 0 {
                return;
            }
            state.waker.take()
        };
        // The last one: the driver learns that no handle is left.
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

impl<T> fmt::Debug for Poster<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Poster").finish_non_exhaustive()
    }
}

/// The driver's end: takes what was posted, in order.
pub struct Mailbox<T>(Shared<T>);

impl<T> Mailbox<T> {
    /// The next item; `None` once the mailbox is closed and empty, or every poster is
    /// gone and nothing is left; pending (the driver is woken by the next post, or by
    /// the last poster leaving) otherwise.
    pub fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let mut state = lock(&self.0);
        if let Some(item) = state.queue.pop_front() {
            return Poll::Ready(Some(item));
        }
        if state.closed || state.posters == 0 {
            return Poll::Ready(None);
        }
        if !state
            .waker
            .as_ref()
            .is_some_and(|w| w.will_wake(cx.waker()))
        {
            state.waker = Some(cx.waker().clone());
        }
        Poll::Pending
    }

    /// The next item already posted, without waiting.
    pub fn try_next(&mut self) -> Option<T> {
        lock(&self.0).queue.pop_front()
    }

    /// Refuses further posts; what was posted can still be taken.
    pub fn close(&self) {
        lock(&self.0).closed = true;
    }
}

impl<T> Drop for Mailbox<T> {
    fn drop(&mut self) {
        let left = {
            let mut state = lock(&self.0);
            state.closed = true;
            std::mem::take(&mut state.queue)
        };
        // Dropped outside the lock: an item may hold a reply that wakes its waiter.
        drop(left);
    }
}

impl<T> fmt::Debug for Mailbox<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mailbox").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_waker::counting;

    #[test]
    fn a_waiting_driver_is_woken_by_a_post_and_by_the_last_poster_leaving() {
        let (count, waker) = counting();
        let mut cx = Context::from_waker(&waker);
        let (poster, mut mailbox) = mailbox::<u32>();
        let other = poster.clone();
        assert!(mailbox.poll_next(&mut cx).is_pending());
        other.post(1).unwrap();
        assert_eq!(count.woken(), 1);
        // Not waiting: posts wake nobody, and are taken in order.
        other.post(2).unwrap();
        assert_eq!(count.woken(), 1);
        assert_eq!(mailbox.poll_next(&mut cx), Poll::Ready(Some(1)));
        assert_eq!(mailbox.poll_next(&mut cx), Poll::Ready(Some(2)));
        assert!(mailbox.poll_next(&mut cx).is_pending());
        drop(other);
        assert_eq!(count.woken(), 1, "a poster is left");
        drop(poster);
        assert_eq!(count.woken(), 2);
        assert_eq!(mailbox.poll_next(&mut cx), Poll::Ready(None));
    }

    #[test]
    fn a_closed_mailbox_refuses_posts_and_hands_out_what_it_holds() {
        let mut cx = Context::from_waker(Waker::noop());
        let (poster, mut mailbox) = mailbox::<u32>();
        poster.post(1).unwrap();
        mailbox.close();
        assert!(poster.is_closed());
        assert_eq!(poster.post(2), Err(2));
        assert_eq!(mailbox.try_next(), Some(1));
        assert_eq!(mailbox.poll_next(&mut cx), Poll::Ready(None));
    }

    #[test]
    fn a_dropped_mailbox_drops_what_it_held_and_refuses_posts() {
        let (poster, mailbox) = mailbox::<Arc<()>>();
        let held = Arc::new(());
        poster.post(Arc::clone(&held)).unwrap();
        drop(mailbox);
        assert_eq!(Arc::strong_count(&held), 1);
        assert!(poster.post(Arc::new(())).is_err());
    }
}
