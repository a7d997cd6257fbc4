//! Keeping the C allocator from giving back memory a server needs again at once.
//!
//! glibc's `malloc` returns the top of a heap to the operating system whenever more than
//! its trim threshold (128 KiB at start) lies free there. A server thread that reads a
//! large request, answers it and frees everything does exactly that on every request,
//! and pays for it in page faults when it touches that memory again: about 50 per
//! 64 KiB `tools/call` on `serve_http`, with a third of the round trip spent in the
//! kernel. glibc raises its thresholds (mmap to the size freed, trim to twice that) the
//! first time it frees a block it had mapped; [`keep_freed_memory`] makes that happen once, with a
//! 1 MiB block, so that up to 2 MiB of free memory stays with each heap. With another
//! allocator it is one allocation and one free.

use std::sync::Once;

/// The block whose free raises glibc's thresholds: above the initial mmap threshold
/// (128 KiB), so it is mapped, and the heap then keeps up to twice this.
const BLOCK: usize = 1 << 20;

/// Keeps freed memory with the allocator's heaps for a long-running server, once per process (see the module
/// docs). The serve functions of `mcp-blocking` call it.
pub fn keep_freed_memory() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let block: Vec<u8> = Vec::with_capacity(BLOCK);
        drop(std::hint::black_box(block));
    });
}
