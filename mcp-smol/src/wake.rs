//! Per-channel wakers, so that the driver reads and writes a channel only when it may
//! have progressed.
//!
//! Every read or write attempt on a socket or pipe is a system call. Polled with the
//! driver's own waker, a channel cannot tell the driver whether it was the one that
//! woke it, so each poll of the driver would try every open channel. Instead each
//! channel is polled with a waker of its own: waking it marks the channel ready, then
//! wakes the driver's task. A poll of the driver goes only to the channels marked ready.
//!
//! No wake-up is lost: the mark is set before the driver's task is woken, and the driver
//! clears it before it polls the channel, so a wake-up during that poll leaves the mark
//! set for the next round.
//!
//! A [`Crew`] applies the same to a set of futures run inside one task (the connections
//! of `serve_http`): a poll of the crew polls only the members woken since their last
//! poll, so an idle member costs nothing when another one progresses.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Waker};

/// The waker of the driver's task, as its last poll gave it; channels wake it.
#[derive(Default)]
pub(crate) struct TaskWaker(Mutex<Option<Waker>>);

impl TaskWaker {
    /// Keeps `waker` as the one to wake (a task may move between polls).
    pub(crate) fn register(&self, waker: &Waker) {
        let mut slot = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if !slot.as_ref().is_some_and(|w| w.will_wake(waker)) {
            *slot = Some(waker.clone());
        }
    }

    /// Wakes the waker last registered, if any.
    pub(crate) fn wake(&self) {
        // Woken outside the lock: an executor may run code of its own on a wake-up.
        let waker = self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

/// What a channel's waker holds.
struct Mark {
    ready: AtomicBool,
    task: Arc<TaskWaker>,
}

impl std::task::Wake for Mark {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.ready.store(true, Ordering::SeqCst);
        self.task.wake();
    }
}

/// One channel's readiness and the waker to poll it with. A new one is ready: nothing
/// has been tried on the channel yet. A clone is the same channel's.
#[derive(Clone)]
pub(crate) struct Readiness {
    mark: Arc<Mark>,
    waker: Waker,
}

impl Readiness {
    /// A channel whose wake-ups wake `task`.
    pub(crate) fn new(task: &Arc<TaskWaker>) -> Readiness {
        let mark = Arc::new(Mark {
            ready: AtomicBool::new(true),
            task: task.clone(),
        });
        let waker = Waker::from(mark.clone());
        Readiness { mark, waker }
    }

    /// Whether the channel may have progressed since it was last polled; clears the mark,
    /// so call it just before polling the channel.
    pub(crate) fn take(&self) -> bool {
        self.mark.ready.swap(false, Ordering::SeqCst)
    }

    /// Whether the channel is marked ready, leaving the mark as it is.
    pub(crate) fn is_set(&self) -> bool {
        self.mark.ready.load(Ordering::SeqCst)
    }

    /// Marks the channel ready from the driver itself: it has something to write, or it
    /// stopped before it had read or written everything it could.
    pub(crate) fn set(&self) {
        self.mark.ready.store(true, Ordering::SeqCst);
    }

    /// The context to poll the channel with.
    pub(crate) fn context(&self) -> Context<'_> {
        Context::from_waker(&self.waker)
    }
}

/// Futures run inside one task, each polled with a waker of its own: a poll of the crew
/// goes only to the members that woke (or are new) since their last poll. A member is
/// dropped once it resolves.
pub(crate) struct Crew<F: ?Sized> {
    task: Arc<TaskWaker>,
    members: Vec<(Readiness, Pin<Box<F>>)>,
}

impl<F: Future<Output = ()> + ?Sized> Crew<F> {
    /// An empty crew whose members' wake-ups wake `task` (the task's owner registers its
    /// waker there before each poll).
    pub(crate) fn new(task: &Arc<TaskWaker>) -> Self {
        Crew {
            task: Arc::clone(task),
            members: Vec::new(),
        }
    }

    /// Adds `member`, to be polled at the crew's next poll.
    pub(crate) fn push(&mut self, member: Pin<Box<F>>) {
        self.members.push((Readiness::new(&self.task), member));
    }

    /// Polls the members woken since their last poll; drops those that resolved.
    pub(crate) fn poll(&mut self) {
        self.members.retain_mut(|(ready, member)| {
            !ready.take() || member.as_mut().poll(&mut ready.context()).is_pending()
        });
    }

    /// Whether every member resolved.
    pub(crate) fn is_empty(&self) -> bool {
        self.members.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::task::{Poll, Wake};

    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn a_channel_wake_marks_it_and_wakes_the_task() {
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let task = Arc::new(TaskWaker::default());
        task.register(&Waker::from(count.clone()));
        let channel = Readiness::new(&task);
        assert!(channel.take(), "a new channel is ready");
        assert!(!channel.take(), "taking clears the mark");
        assert!(!channel.is_set());
        channel.context().waker().wake_by_ref();
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        assert!(channel.is_set(), "a wake-up marks the channel");
        assert!(channel.is_set(), "looking leaves the mark");
        assert!(channel.take());
        assert!(!channel.take());
        channel.set();
        assert!(channel.take());
        assert_eq!(
            count.0.load(Ordering::SeqCst),
            1,
            "set does not wake the task"
        );
    }

    /// A member that counts its polls and resolves at its third.
    struct Member {
        polls: Arc<AtomicUsize>,
        waker: Arc<Mutex<Option<Waker>>>,
    }

    impl Future for Member {
        type Output = ();
        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            let n = self.polls.fetch_add(1, Ordering::SeqCst) + 1;
            *self.waker.lock().unwrap() = Some(cx.waker().clone());
            if n == 3 {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        }
    }

    fn member() -> (Member, Arc<AtomicUsize>, Arc<Mutex<Option<Waker>>>) {
        let polls = Arc::new(AtomicUsize::new(0));
        let waker = Arc::new(Mutex::new(None));
        let m = Member {
            polls: polls.clone(),
            waker: waker.clone(),
        };
        (m, polls, waker)
    }

    #[test]
    fn a_crew_polls_only_the_members_that_woke() {
        let outer = Arc::new(Count(AtomicUsize::new(0)));
        let outer_waker = Waker::from(outer.clone());
        let cx = Context::from_waker(&outer_waker);
        let task = Arc::new(TaskWaker::default());
        task.register(cx.waker());
        let mut crew: Crew<dyn Future<Output = ()>> = Crew::new(&task);
        let (a, a_polls, a_waker) = member();
        let (b, b_polls, _) = member();
        crew.push(Box::pin(a));
        crew.push(Box::pin(b));
        crew.poll();
        assert_eq!(
            (
                a_polls.load(Ordering::SeqCst),
                b_polls.load(Ordering::SeqCst)
            ),
            (1, 1)
        );
        crew.poll();
        crew.poll();
        assert_eq!(
            (
                a_polls.load(Ordering::SeqCst),
                b_polls.load(Ordering::SeqCst)
            ),
            (1, 1),
            "nobody woke: nobody is polled"
        );
        a_waker.lock().unwrap().take().unwrap().wake();
        assert_eq!(
            outer.0.load(Ordering::SeqCst),
            1,
            "a member's wake wakes the task"
        );
        crew.poll();
        assert_eq!(
            (
                a_polls.load(Ordering::SeqCst),
                b_polls.load(Ordering::SeqCst)
            ),
            (2, 1)
        );
        a_waker.lock().unwrap().take().unwrap().wake();
        crew.poll();
        assert_eq!(a_polls.load(Ordering::SeqCst), 3);
        assert!(!crew.is_empty(), "b is still pending");
        assert_eq!(crew.members.len(), 1, "a resolved and left");
    }

    #[test]
    fn a_wake_before_the_task_registered_is_kept() {
        let task = Arc::new(TaskWaker::default());
        let channel = Readiness::new(&task);
        assert!(channel.take());
        channel.context().waker().wake_by_ref();
        assert!(channel.take());
    }
}
