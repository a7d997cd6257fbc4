//! `mcp_io::heap::keep_freed_memory` keeps freed memory with glibc's heaps: a loop that allocates
//! and frees more than 128 KiB in blocks below the mmap threshold (as a server answering
//! 64 KiB calls does) page-faults on every round before, and not after. Its own test
//! binary: nothing else in the process may have raised the thresholds first.
#![cfg(all(target_os = "linux", target_env = "gnu"))]

/// Minor page faults of this process so far (`/proc/self/stat`, field 10).
fn minor_faults() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    // The command name (field 2) may hold spaces; count from after its ')'.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    rest.split(' ').nth(7).unwrap().parse().unwrap()
}

/// Faults taken by `rounds` rounds of four 100 KiB blocks written and freed.
fn churn(rounds: usize) -> u64 {
    let before = minor_faults();
    for round in 0..rounds {
        let blocks: Vec<Vec<u8>> = (0..4)
            .map(|i| vec![(round + i) as u8; 100 * 1024])
            .collect();
        std::hint::black_box(&blocks);
    }
    minor_faults() - before
}

#[test]
fn freed_memory_stays_with_the_heap() {
    churn(5);
    let before = churn(200);
    mcp_io::heap::keep_freed_memory();
    churn(5);
    let kept = churn(200);
    assert!(
        before > 10_000,
        "only {before} faults without it: glibc no longer gives the memory back, and this test has lost its premise"
    );
    assert!(kept * 20 < before, "kept: {kept} faults, before: {before}");
}
