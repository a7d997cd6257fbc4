//! How a stdio server is ended once its stdin is closed, the same way by both adapters:
//! [`Escalation`] says what to do and when (the policy, on the machines' timeline, so a
//! test drives it with made-up instants), [`signal_group`] signals the server's process
//! group. The adapters only execute the [`Step`]s.
//!
//! # The policy
//!
//! The grace period `g` bounds the whole end, counted from the moment stdin was closed:
//!
//! 1. wait for the server to exit (most do on stdin EOF);
//! 2. at `g / 2`, send `SIGTERM` to its process group, as the 2026 stdio text asks
//!    between closing stdin and `SIGKILL`;
//! 3. at `g`, send `SIGKILL` to the group and kill the process itself, then reap it
//!    (`SIGKILL` cannot be ignored, so that wait is short);
//! 4. once it is reaped, however it ended, send `SIGKILL` to the group once more: what
//!    the server started and that outlived it (`npx`'s `node`, a shell's children).
//!
//! On Unix the server leads its own process group (see
//! [`StdioCommand`](crate::StdioCommand)), so its pid is the group's id. Elsewhere there is
//! no group: steps 2 and 4 are skipped and step 3 kills the process alone.
//!
//! # Process ids
//!
//! Steps 2 and 3 signal the group while its leader is not yet reaped (as far as the
//! adapter knows), so its pid, the group id, is still taken. Step 4 comes after the
//! reap, when that pid is free again, and whether the group still has members is not
//! known without asking the kernel the very same way; so the signal is simply sent.
//! That is safe: a process group id is not reused while the group exists (no new
//! process gets it as its pid, so none can lead a group of that id), so while members
//! are left, `kill -- -pgid` reaches exactly them. Once the group is empty the signal
//! finds nothing, unless in the few milliseconds between the reap and the signal the
//! pids wrapped around, a new process got this very pid *and* made itself a group
//! leader: a risk every shell's job control takes too.

use std::io;
use std::process::ExitStatus;
use std::time::Duration;

use mcp_proto::Instant;

use crate::Shutdown;

/// A signal for a server's process group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// `SIGTERM`: please exit.
    Term,
    /// `SIGKILL`: exit now.
    Kill,
}

impl Signal {
    /// The name the shell's `kill -s` takes.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Signal::Term => "TERM",
            Signal::Kill => "KILL",
        }
    }
}

/// What to do next with a server that has not exited yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Nothing is due before this instant: wait for the exit until then, and ask again
    /// if it has not come.
    Wait(Instant),
    /// Send [`Signal::Term`] to the process group now, then ask again.
    Terminate,
    /// Send [`Signal::Kill`] to the process group and kill the process itself, then
    /// wait for it and reap it. There is nothing after this step.
    Kill,
}

/// The escalation from a closed stdin to `SIGKILL`, within the grace period (see the
/// [module](self) docs for the policy).
///
/// ```
/// use std::time::Duration;
/// use mcp_io::ending::{Escalation, Step};
/// use mcp_io::mcp_proto::Instant;
///
/// let closed = Instant::from_millis(1000);
/// let mut end = Escalation::new(closed, Duration::from_secs(2));
/// # if cfg!(unix) {
/// assert_eq!(end.step(closed), Step::Wait(Instant::from_millis(2000)));
/// assert_eq!(end.step(Instant::from_millis(2000)), Step::Terminate);
/// # }
/// assert_eq!(end.step(Instant::from_millis(2500)), Step::Wait(Instant::from_millis(3000)));
/// assert_eq!(end.step(Instant::from_millis(3000)), Step::Kill);
/// assert!(end.finish(None).killed);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Escalation {
    /// When `SIGTERM` is due; `None` where there are no process groups.
    terminate_at: Option<Instant>,
    kill_at: Instant,
    terminated: bool,
    killed: bool,
}

impl Escalation {
    /// The escalation for a server whose stdin was closed at `closed_at`, with `grace`
    /// to end in: `SIGTERM` (Unix only) at half of it, `SIGKILL` at its end.
    #[must_use]
    pub fn new(closed_at: Instant, grace: Duration) -> Self {
        Self::with_groups(closed_at, grace, cfg!(unix))
    }

    fn with_groups(closed_at: Instant, grace: Duration, groups: bool) -> Self {
        Escalation {
            terminate_at: groups.then(|| closed_at + grace / 2),
            kill_at: closed_at + grace,
            terminated: false,
            killed: false,
        }
    }

    /// The next step for a server that has not exited by `now`. A signal step is
    /// returned once and recorded as sent; `SIGTERM` is skipped when `SIGKILL` is due
    /// already.
    pub fn step(&mut self, now: Instant) -> Step {
        if now >= self.kill_at || self.killed {
            self.killed = true;
            return Step::Kill;
        }
        match self.terminate_at {
            Some(at) if !self.terminated => {
                if now >= at {
                    self.terminated = true;
                    Step::Terminate
                } else {
                    Step::Wait(at)
                }
            }
            _ => Step::Wait(self.kill_at),
        }
    }

    /// How the server ended: its reaped `status` (`None`: not collected) and the
    /// signals sent on the way.
    #[must_use]
    pub fn finish(&self, status: Option<ExitStatus>) -> Shutdown {
        Shutdown {
            status,
            terminated: self.terminated,
            killed: self.killed,
        }
    }
}

/// The script behind [`signal_group`]: `$0` is the signal name, `$1` the group id.
#[cfg(unix)]
const KILL_GROUP: &str = r#"kill -s "$0" -- "-$1""#;

/// Sends `signal` to the process group `pgid` (a server's pid: it leads its own group)
/// and returns whether it was delivered (`false`: no such group any more, or not on
/// Unix, where this does nothing).
///
/// It runs `/bin/sh -c 'kill -s "$0" -- "-$1"' SIGNAL PGID` and waits for it (a few
/// milliseconds; `mcp-smol` runs it on the `blocking` pool). The shell's `kill`
/// builtin, because the standard library cannot signal a group and these crates
/// forbid `unsafe` (so no `libc::kill`; rustix's safe `kill_process_group` is in
/// `mcp-smol`'s dependencies only, not `mcp-blocking`'s); `/bin/sh` exists on every
/// Unix system, while `/bin/kill` is missing from some slim images. The shell gets no
/// environment and no stdio (its "No such process" goes nowhere).
///
/// Group ids 0 and 1 are refused (`false`): `-0` would be our own group and `-1` every
/// process we may signal.
///
/// # Errors
/// When `/bin/sh` cannot be started or waited for.
pub fn signal_group(pgid: u32, signal: Signal) -> io::Result<bool> {
    #[cfg(unix)]
    {
        use std::process::{Command, Stdio};

        if pgid <= 1 || i32::try_from(pgid).is_err() {
            return Ok(false);
        }
        let status = Command::new("/bin/sh")
            .args(["-c", KILL_GROUP, signal.name(), &pgid.to_string()])
            .env_clear()
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()?;
        Ok(status.success())
    }
    #[cfg(not(unix))]
    {
        let _ = (pgid, signal);
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Instant {
        Instant::from_millis(n)
    }

    #[test]
    fn sigterm_at_half_the_grace_period_and_sigkill_at_its_end() {
        let mut end = Escalation::with_groups(ms(100), Duration::from_millis(1000), true);
        assert_eq!(end.step(ms(100)), Step::Wait(ms(600)));
        assert_eq!(end.step(ms(599)), Step::Wait(ms(600)));
        assert_eq!(end.step(ms(600)), Step::Terminate);
        // Sent once; then the rest of the grace period.
        assert_eq!(end.step(ms(601)), Step::Wait(ms(1100)));
        assert_eq!(end.step(ms(1099)), Step::Wait(ms(1100)));
        assert_eq!(end.step(ms(1100)), Step::Kill);
        assert_eq!(end.step(ms(1200)), Step::Kill);
        let shutdown = end.finish(None);
        assert!(shutdown.terminated && shutdown.killed, "{shutdown:?}");
    }

    #[test]
    fn a_server_that_exits_on_eof_gets_no_signal() {
        let mut end = Escalation::with_groups(ms(0), Duration::from_secs(2), true);
        assert_eq!(end.step(ms(10)), Step::Wait(ms(1000)));
        let shutdown = end.finish(None);
        assert!(!shutdown.terminated && !shutdown.killed, "{shutdown:?}");
    }

    #[test]
    fn one_that_exits_on_sigterm_is_terminated_not_killed() {
        let mut end = Escalation::with_groups(ms(0), Duration::from_secs(2), true);
        assert_eq!(end.step(ms(1500)), Step::Terminate);
        assert_eq!(end.step(ms(1600)), Step::Wait(ms(2000)));
        let shutdown = end.finish(None);
        assert!(shutdown.terminated && !shutdown.killed, "{shutdown:?}");
    }

    #[test]
    fn sigterm_is_skipped_when_sigkill_is_due_already() {
        // A caller that looked only at the end, or a zero grace period (a restart).
        let mut late = Escalation::with_groups(ms(0), Duration::from_secs(2), true);
        assert_eq!(late.step(ms(5000)), Step::Kill);
        assert!(!late.finish(None).terminated);
        let mut zero = Escalation::with_groups(ms(50), Duration::ZERO, true);
        assert_eq!(zero.step(ms(50)), Step::Kill);
    }

    #[test]
    fn without_process_groups_the_whole_grace_period_is_waited_for() {
        let mut end = Escalation::with_groups(ms(0), Duration::from_secs(2), false);
        assert_eq!(end.step(ms(0)), Step::Wait(ms(2000)));
        assert_eq!(end.step(ms(1500)), Step::Wait(ms(2000)));
        assert_eq!(end.step(ms(2000)), Step::Kill);
        let shutdown = end.finish(None);
        assert!(!shutdown.terminated && shutdown.killed, "{shutdown:?}");
    }

    #[test]
    fn a_huge_grace_period_saturates() {
        let mut end = Escalation::with_groups(ms(1), Duration::MAX, true);
        assert!(matches!(end.step(ms(2)), Step::Wait(_)));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_shell_signals_a_group_and_refuses_ours_and_everyone() {
        use std::io::{BufRead, BufReader};
        use std::os::unix::process::CommandExt;
        use std::process::{Command, Stdio};

        assert!(!signal_group(0, Signal::Kill).unwrap());
        assert!(!signal_group(1, Signal::Kill).unwrap());
        let mut leader = Command::new("/bin/sh")
            .args(["-c", "sleep 30 & echo $!; wait"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .process_group(0)
            .spawn()
            .expect("spawn sh");
        let mut line = String::new();
        let mut out = BufReader::new(leader.stdout.take().unwrap());
        out.read_line(&mut line).unwrap();
        let sleep: u32 = line.trim().parse().expect("the pid of sleep");
        assert!(signal_group(leader.id(), Signal::Term).unwrap());
        let status = leader.wait().unwrap();
        assert!(!status.success(), "{status:?}");
        // The `sleep` got it too: gone, or a zombie waiting for its new parent.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        loop {
            let stat = std::fs::read_to_string(format!("/proc/{sleep}/stat")).unwrap_or_default();
            let state = stat.rsplit_once(')').map(|(_, rest)| rest.trim_start());
            if state.is_none_or(|s| s.starts_with('Z')) {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "sleep {sleep} lives on"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}
