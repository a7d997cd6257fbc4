//! How many bytes of heap a piece of code holds at its peak, on the calling thread: for
//! tests that bound what reading a hostile message costs, not only what it yields.
//!
//! A test binary opts in with `#[global_allocator] static HEAP: CountingAlloc =
//! CountingAlloc;`, then measures with [`peak_during`]. Counts are per thread, so tests
//! running in parallel in the same binary do not see each other's allocations.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

thread_local! {
    /// Bytes allocated and not freed by this thread (freed by it, wherever allocated).
    static LIVE: Cell<isize> = const { Cell::new(0) };
    /// The highest `LIVE` since the last [`peak_during`] began.
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

/// The system allocator, counting each thread's live bytes and their peak.
#[derive(Debug)]
pub struct CountingAlloc;

fn count(delta: isize) {
    // `try_with`: a thread's last frees run after its locals are gone.
    let _ = LIVE.try_with(|live| {
        let now = live.get() + delta;
        live.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

// `GlobalAlloc` is an unsafe trait; this implementation only forwards to `System` (the
// one unsafe code of the test crate).
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size() as isize);
        // SAFETY: forwarded as received.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(-(layout.size() as isize));
        // SAFETY: forwarded as received.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size as isize - layout.size() as isize);
        // SAFETY: forwarded as received.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Runs `f` and returns its value with the most bytes it held at once on this thread
/// beyond what was live when it began (0 when the binary did not install
/// [`CountingAlloc`]).
pub fn peak_during<R>(f: impl FnOnce() -> R) -> (R, usize) {
    let start = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(start));
    let out = f();
    let peak = PEAK.with(Cell::get);
    (out, usize::try_from(peak - start).unwrap_or(0))
}

/// Runs `f` and returns its value with how many more bytes are live on this thread
/// after it than before (what the value returned holds, when `f` keeps nothing else).
pub fn live_after<R>(f: impl FnOnce() -> R) -> (R, isize) {
    let start = LIVE.with(Cell::get);
    let out = f();
    (out, LIVE.with(Cell::get) - start)
}
