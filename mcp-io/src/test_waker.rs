//! A waker that counts its wake-ups, for the tests of what wakes a task.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Wake, Waker};

/// How many times the waker from [`counting`] was woken.
#[derive(Default)]
pub(crate) struct Count(AtomicUsize);

impl Count {
    pub(crate) fn woken(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

impl Wake for Count {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A waker and its count.
pub(crate) fn counting() -> (Arc<Count>, Waker) {
    let count = Arc::new(Count::default());
    (Arc::clone(&count), Waker::from(count))
}
