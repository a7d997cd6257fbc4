//! [`Driver::join`]: the driver and the code that uses its client, run as one future
//! that hands work back and forth without an executor turn in between.
//!
//! Joined with `futures_lite::future::zip(driver, work)`, one call costs two turns of the
//! executor: the driver's answer wakes `work`, whose next request wakes the driver, and
//! both wake-ups reach the task's waker while it is being polled. `async_io::block_on`
//! (`smol::block_on`) answers a poll that woke its own task with a turn of the reactor
//! that waits for nothing (five system calls on Linux: `timerfd_settime`, `epoll_ctl`,
//! `epoll_pwait`, the eventfd's `read` and `epoll_ctl`) before polling again.
//!
//! [`Join`] polls each half with a waker of its own. A wake-up that comes while the join
//! is polling only marks the half, and the join polls the marked halves again before it
//! returns; only a wake-up that comes while it is not polling (the reactor, another
//! thread) wakes the task. A half that wakes itself while it is being polled asks to
//! yield (a `yield_now`, the driver at the end of its own budget of reads): it is left
//! to the next poll of the join, whose task is woken, so that input that never pauses
//! keeps the executor's thread no longer than under `zip`. After [`BUDGET`] passes
//! (halves that keep waking each other) the join yields all the same.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use mcp_io::{Flavour, Sendable};

use crate::Error;
use crate::driver::Driver;
use crate::wake::TaskWaker;

/// Passes over both halves in one poll before the join yields even with more to do.
const BUDGET: usize = 64;

/// What both halves' wakers share: whether the join is polling, and the task's waker.
#[derive(Default)]
struct Shared {
    polling: AtomicBool,
    task: TaskWaker,
}

/// One half's waker.
struct Half {
    woken: AtomicBool,
    /// Its future is being polled.
    in_poll: AtomicBool,
    /// Woken while its future was being polled: it asked to yield (a `yield_now`, a
    /// driver at the end of its budget), and is left to the next poll of the join.
    yielded: AtomicBool,
    shared: Arc<Shared>,
}

impl Wake for Half {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::SeqCst);
        if self.in_poll.load(Ordering::SeqCst) {
            // The join is polling (it polls this half): it sees the mark.
            self.yielded.store(true, Ordering::SeqCst);
            return;
        }
        // Polling: the join looks at the mark before it returns. A wake-up just as it
        // stops polling sees `polling` false (both are SeqCst), and wakes the task.
        if !self.shared.polling.load(Ordering::SeqCst) {
            self.shared.task.wake();
        }
    }
}

/// A half: its future (or output, once it resolved) and its waker.
struct Slot<T: Future> {
    future: Option<Pin<Box<T>>>,
    output: Option<T::Output>,
    half: Arc<Half>,
    waker: Waker,
}

impl<T: Future> Slot<T> {
    fn new(future: T, shared: &Arc<Shared>) -> Self {
        let half = Arc::new(Half {
            woken: AtomicBool::new(true),
            in_poll: AtomicBool::new(false),
            yielded: AtomicBool::new(false),
            shared: Arc::clone(shared),
        });
        Slot {
            future: Some(Box::pin(future)),
            output: None,
            waker: Waker::from(Arc::clone(&half)),
            half,
        }
    }

    /// Polls the future if it was woken and did not ask to yield; true when it was
    /// polled.
    fn poll_if_woken(&mut self) -> bool {
        let Some(future) = self.future.as_mut() else {
            return false;
        };
        if self.half.yielded.load(Ordering::SeqCst)
            || !self.half.woken.swap(false, Ordering::SeqCst)
        {
            return false;
        }
        self.half.in_poll.store(true, Ordering::SeqCst);
        let poll = future.as_mut().poll(&mut Context::from_waker(&self.waker));
        self.half.in_poll.store(false, Ordering::SeqCst);
        if let Poll::Ready(output) = poll {
            self.output = Some(output);
            self.future = None;
        }
        true
    }

    /// Whether it woke itself during its last poll (see [`Half::yielded`]).
    fn yielded(&self) -> bool {
        self.future.is_some() && self.half.yielded.load(Ordering::SeqCst)
    }

    fn is_woken(&self) -> bool {
        self.future.is_some() && self.half.woken.load(Ordering::SeqCst)
    }
}

/// The future [`Driver::join`] returns: both outputs once both resolved.
#[must_use = "the Driver does all the IO: await the join"]
pub struct Join<W: Future, F: Flavour = Sendable>(Pair<Driver<F>, W>);

impl<W: Future, F: Flavour> std::fmt::Debug for Join<W, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let pair = &self.0;
        f.debug_struct("Join")
            .field("driver_done", &pair.a.future.is_none())
            .field("work_done", &pair.b.future.is_none())
            .finish_non_exhaustive()
    }
}

impl<F: Flavour> Driver<F> {
    /// Runs `work` (the code that uses this driver's [`Client`](crate::Client)) and the
    /// driver as one future, which resolves to both outputs once both are done: what
    /// `futures_lite::future::zip(driver, work)` does, without an executor turn each time
    /// one hands over to the other (see [`Join`]). Under `smol::block_on` a sequential
    /// call then costs one turn of the reactor instead of two.
    ///
    /// ```no_run
    /// use mcp_smol::{ClientConfig, StdioCommand};
    ///
    /// # fn main() -> Result<(), mcp_smol::Error> {
    /// let (client, driver) =
    ///     mcp_smol::connect_stdio(StdioCommand::new("my-mcp-server"), ClientConfig::new("app", "1"))?;
    /// let work = async move {
    ///     let tools = client.list_tools().await;
    ///     drop(client); // ends the driver
    ///     tools
    /// };
    /// let (driven, tools) = smol::block_on(driver.join(work));
    /// driven?;
    /// println!("{} tools", tools?.len());
    /// # Ok(()) }
    /// ```
    pub fn join<W: Future>(self, work: W) -> Join<W, F> {
        Join(Pair::new(self, work))
    }
}

impl<W: Future, F: Flavour> Future for Join<W, F> {
    type Output = (Result<(), Error>, W::Output);

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.0).poll(cx)
    }
}

/// Two futures polled as one, each with a waker of its own (see the module).
struct Pair<A: Future, B: Future> {
    shared: Arc<Shared>,
    a: Slot<A>,
    b: Slot<B>,
}

// Both futures are boxed and the outputs are never pinned.
impl<A: Future, B: Future> Unpin for Pair<A, B> {}

impl<A: Future, B: Future> Pair<A, B> {
    fn new(a: A, b: B) -> Self {
        let shared = Arc::new(Shared::default());
        Pair {
            a: Slot::new(a, &shared),
            b: Slot::new(b, &shared),
            shared,
        }
    }
}

impl<A: Future, B: Future> Future for Pair<A, B> {
    type Output = (A::Output, B::Output);

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        assert!(
            this.a.future.is_some() || this.a.output.is_some(),
            "the mcp-smol Join was polled after it completed"
        );
        this.shared.task.register(cx.waker());
        // A half that yielded had its turn of the executor: it may run again.
        this.a.half.yielded.store(false, Ordering::SeqCst);
        this.b.half.yielded.store(false, Ordering::SeqCst);
        this.shared.polling.store(true, Ordering::SeqCst);
        for _ in 0..BUDGET {
            let mut polled = this.a.poll_if_woken();
            polled |= this.b.poll_if_woken();
            if this.a.future.is_none() && this.b.future.is_none() {
                this.shared.polling.store(false, Ordering::SeqCst);
                let a = this.a.output.take().expect("an output once resolved");
                let b = this.b.output.take().expect("an output once resolved");
                return Poll::Ready((a, b));
            }
            if !polled && (this.a.yielded() || this.b.yielded()) {
                // Only halves that asked to yield are left: the executor gets the thread.
                break;
            }
            if !polled {
                // Where a wake-up from another thread is the hardest to see.
                #[cfg(test)]
                tests::before_idle();
                this.shared.polling.store(false, Ordering::SeqCst);
                // A wake-up between the last look and the store above only marked a half.
                if !this.a.is_woken() && !this.b.is_woken() {
                    return Poll::Pending;
                }
                this.shared.polling.store(true, Ordering::SeqCst);
            }
        }
        this.shared.polling.store(false, Ordering::SeqCst);
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::sync::Mutex;
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

    thread_local! {
        /// Run by a pair polled on this thread when a pass found nothing woken, just
        /// before it stops polling: what another thread may do at that instant.
        static BEFORE_IDLE: RefCell<Option<Box<dyn FnMut()>>> = const { RefCell::new(None) };
    }

    pub(super) fn before_idle() {
        BEFORE_IDLE.with(|hook| {
            if let Some(hook) = hook.borrow_mut().as_mut() {
                hook();
            }
        });
    }

    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn outer() -> (Arc<Count>, Waker) {
        let count = Arc::new(Count(AtomicUsize::new(0)));
        (Arc::clone(&count), Waker::from(count))
    }

    /// A one-slot handover: `put` stores a value and wakes whoever waits in `take`.
    #[derive(Default)]
    struct Baton(Mutex<(Option<u32>, Option<Waker>)>);

    impl Baton {
        fn put(&self, value: u32) {
            let waker = {
                let mut slot = self.0.lock().unwrap();
                slot.0 = Some(value);
                slot.1.take()
            };
            if let Some(waker) = waker {
                waker.wake();
            }
        }

        async fn take(&self) -> u32 {
            std::future::poll_fn(|cx| {
                let mut slot = self.0.lock().unwrap();
                match slot.0.take() {
                    Some(v) => Poll::Ready(v),
                    None => {
                        slot.1 = Some(cx.waker().clone());
                        Poll::Pending
                    }
                }
            })
            .await
        }
    }

    #[test]
    fn halves_that_wake_each_other_finish_in_one_poll_without_waking_the_task() {
        // Ping-pong ten times: each hand-over wakes the other half while the pair polls.
        let (ping, pong) = (Arc::new(Baton::default()), Arc::new(Baton::default()));
        let (p1, q1) = (Arc::clone(&ping), Arc::clone(&pong));
        let a = async move {
            let mut sum = 0;
            for i in 0..10 {
                p1.put(i);
                sum += q1.take().await;
            }
            sum
        };
        let (p2, q2) = (Arc::clone(&ping), Arc::clone(&pong));
        let b = async move {
            for _ in 0..10 {
                let v = p2.take().await;
                q2.put(v * 2);
            }
            "done"
        };
        let (count, waker) = outer();
        let mut pair = Pair::new(a, b);
        let poll = Pin::new(&mut pair).poll(&mut Context::from_waker(&waker));
        assert_eq!(poll, Poll::Ready((90, "done")));
        assert_eq!(
            count.0.load(Ordering::SeqCst),
            0,
            "the task was never woken"
        );
    }

    #[test]
    fn a_wake_while_not_polling_wakes_the_task_and_polls_only_that_half() {
        let baton = Arc::new(Baton::default());
        let theirs = Arc::clone(&baton);
        let polls = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&polls);
        let idle = std::future::poll_fn(move |_| {
            counted.fetch_add(1, Ordering::SeqCst);
            Poll::<()>::Pending
        });
        let (count, waker) = outer();
        let mut cx = Context::from_waker(&waker);
        let mut pair = Pair::new(async move { theirs.take().await }, idle);
        assert!(Pin::new(&mut pair).poll(&mut cx).is_pending());
        assert_eq!(polls.load(Ordering::SeqCst), 1);
        assert_eq!(count.0.load(Ordering::SeqCst), 0);
        baton.put(7);
        assert_eq!(
            count.0.load(Ordering::SeqCst),
            1,
            "woken from outside a poll"
        );
        assert!(Pin::new(&mut pair).poll(&mut cx).is_pending());
        assert_eq!(
            polls.load(Ordering::SeqCst),
            1,
            "the idle half was not woken"
        );
        assert_eq!(pair.a.output, Some(7));
    }

    #[test]
    fn a_half_that_wakes_itself_yields_to_the_executor() {
        let spins = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&spins);
        let spin = spinner(&counted);
        let (count, waker) = outer();
        let mut cx = Context::from_waker(&waker);
        let mut pair = Pair::new(spin, std::future::pending::<()>());
        for round in 1..=3 {
            assert!(Pin::new(&mut pair).poll(&mut cx).is_pending());
            assert_eq!(spins.load(Ordering::SeqCst), round, "polled once a poll");
            assert_eq!(
                count.0.load(Ordering::SeqCst),
                round,
                "it comes back at once"
            );
        }
    }

    #[test]
    fn halves_that_keep_waking_each_other_yield_after_the_budget() {
        let (ping, pong) = (Arc::new(Baton::default()), Arc::new(Baton::default()));
        let passes = Arc::new(AtomicUsize::new(0));
        let (p1, q1, counted) = (Arc::clone(&ping), Arc::clone(&pong), Arc::clone(&passes));
        let a = async move {
            loop {
                counted.fetch_add(1, Ordering::SeqCst);
                p1.put(1);
                q1.take().await;
            }
        };
        let b = async move {
            loop {
                ping.take().await;
                pong.put(2);
            }
        };
        let (count, waker) = outer();
        let mut pair = Pair::new(a, b);
        let poll = Pin::new(&mut pair).poll(&mut Context::from_waker(&waker));
        assert!(poll.is_pending());
        let passes = passes.load(Ordering::SeqCst);
        assert!(
            (BUDGET / 2..=BUDGET).contains(&passes),
            "{passes} hand-overs"
        );
        assert_eq!(count.0.load(Ordering::SeqCst), 1, "it comes back at once");
    }

    /// A future that wakes itself at every poll and never resolves; it counts its polls,
    /// and fails the test instead of spinning forever when polled far past the budget.
    fn spinner(polls: &Arc<AtomicUsize>) -> impl Future<Output = ()> + use<> {
        let polls = Arc::clone(polls);
        std::future::poll_fn(move |cx| {
            let n = polls.fetch_add(1, Ordering::SeqCst) + 1;
            assert!(n <= 4 * BUDGET, "polled {n} times without a yield");
            cx.waker().wake_by_ref();
            Poll::Pending
        })
    }

    #[test]
    fn both_halves_are_polled_in_every_pass() {
        let (left, right) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let (count, waker) = outer();
        let mut cx = Context::from_waker(&waker);
        let mut pair = Pair::new(spinner(&left), spinner(&right));
        assert!(Pin::new(&mut pair).poll(&mut cx).is_pending());
        let polls = |c: &AtomicUsize| c.load(Ordering::SeqCst);
        assert_eq!((polls(&left), polls(&right)), (1, 1));
        assert_eq!(count.0.load(Ordering::SeqCst), 1, "it yielded");
    }

    #[test]
    fn a_wake_from_another_thread_as_the_pair_stops_polling_is_not_lost() {
        // `a` waits for a value that "another thread" hands over at the worst moment:
        // after the last pass looked at both halves, before the pair stops polling. It
        // then hands it on to `b`, which wakes `b` while the pair polls again.
        let (from_outside, to_b) = (Arc::new(Baton::default()), Arc::new(Baton::default()));
        let (inbox, outbox) = (Arc::clone(&from_outside), Arc::clone(&to_b));
        let a = async move {
            let v = inbox.take().await;
            outbox.put(v + 1);
            v
        };
        let b_inbox = Arc::clone(&to_b);
        let b = async move { b_inbox.take().await };
        let mut handed = false;
        let outside = Arc::clone(&from_outside);
        BEFORE_IDLE.with(|hook| {
            *hook.borrow_mut() = Some(Box::new(move || {
                if !std::mem::replace(&mut handed, true) {
                    outside.put(7);
                }
            }));
        });
        let (count, waker) = outer();
        let mut pair = Pair::new(a, b);
        let poll = Pin::new(&mut pair).poll(&mut Context::from_waker(&waker));
        BEFORE_IDLE.with(|hook| hook.borrow_mut().take());
        assert_eq!(poll, Poll::Ready((7, 8)), "the late wake-up was seen");
        assert_eq!(
            count.0.load(Ordering::SeqCst),
            0,
            "the hand-over after it was seen did not wake the task"
        );
    }

    #[test]
    fn a_wake_from_outside_wakes_the_waker_of_the_latest_poll() {
        let baton = Arc::new(Baton::default());
        let theirs = Arc::clone(&baton);
        let mut pair = Pair::new(
            async move { theirs.take().await },
            std::future::pending::<()>(),
        );
        let (first, first_waker) = outer();
        let (second, second_waker) = outer();
        assert!(
            Pin::new(&mut pair)
                .poll(&mut Context::from_waker(&first_waker))
                .is_pending()
        );
        assert!(
            Pin::new(&mut pair)
                .poll(&mut Context::from_waker(&second_waker))
                .is_pending()
        );
        baton.put(1);
        assert_eq!(first.0.load(Ordering::SeqCst), 0);
        assert_eq!(second.0.load(Ordering::SeqCst), 1, "the task moved");
    }

    #[test]
    fn wake_ups_from_another_thread_are_never_lost() {
        // The pair's `a` and a thread hand a value back and forth. The thread hands its
        // answer over once the pair has found nothing to do and is about to stop polling;
        // the pair then waits for the wake-up to be done (every third round), or a
        // little (a longer time each round), or not at all, so that the wake-ups land on
        // either side of the moment it stops. Nothing else wakes the pair: a lost
        // wake-up hangs it.
        const ROUNDS: u32 = 20_000;
        let (to_thread, from_thread) = (Arc::new(Baton::default()), Arc::new(Baton::default()));
        let idle = Arc::new(AtomicBool::new(false));
        let woke = Arc::new(AtomicUsize::new(0));
        let (inbox, outbox, stopping, waking) = (
            Arc::clone(&to_thread),
            Arc::clone(&from_thread),
            Arc::clone(&idle),
            Arc::clone(&woke),
        );
        let echo = std::thread::spawn(move || {
            for _ in 0..ROUNDS {
                let v = loop {
                    if let Some(v) = inbox.0.lock().unwrap().0.take() {
                        break v;
                    }
                    std::hint::spin_loop();
                };
                while !stopping.swap(false, Ordering::SeqCst) {
                    std::hint::spin_loop();
                }
                outbox.put(v + 1);
                waking.fetch_add(1, Ordering::SeqCst);
            }
        });
        let a = async move {
            let mut v = 0;
            for _ in 0..ROUNDS {
                to_thread.put(v);
                v = from_thread.take().await;
            }
            v
        };
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut calls = 0_u32;
            BEFORE_IDLE.with(|hook| {
                *hook.borrow_mut() = Some(Box::new(move || {
                    let before = woke.load(Ordering::SeqCst);
                    idle.store(true, Ordering::SeqCst);
                    calls += 1;
                    let wait = match calls % 3 {
                        0 => Duration::from_millis(1),
                        1 => Duration::from_nanos(u64::from(calls % 40) * 100),
                        _ => Duration::ZERO,
                    };
                    let start = std::time::Instant::now();
                    while woke.load(Ordering::SeqCst) == before && start.elapsed() < wait {
                        std::hint::spin_loop();
                    }
                }));
            });
            let _ = done.send(futures_lite::future::block_on(Pair::new(a, async {})));
        });
        let outcome = finished.recv_timeout(Duration::from_secs(60));
        assert_eq!(outcome, Ok((ROUNDS, ())), "a wake-up was lost");
        echo.join().unwrap();
    }

    #[test]
    fn a_join_of_send_work_is_send() {
        fn send<T: Send>() {}
        send::<Join<std::future::Ready<u8>>>();
    }

    #[test]
    #[should_panic(expected = "the mcp-smol Join was polled after it completed")]
    fn polling_after_completion_says_so() {
        let (_, waker) = outer();
        let mut cx = Context::from_waker(&waker);
        let mut pair = Pair::new(async { 1 }, async { 2 });
        assert_eq!(Pin::new(&mut pair).poll(&mut cx), Poll::Ready((1, 2)));
        let _ = Pin::new(&mut pair).poll(&mut cx);
    }
}
