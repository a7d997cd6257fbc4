//! What both adapters keep about a server child process: how it ended ([`Shutdown`])
//! and the newest bytes of its stderr ([`StderrTail`]).

use std::collections::VecDeque;
use std::process::ExitStatus;

/// How a server process ended.
///
/// After its stdin is closed a server gets the grace period to exit: it is sent
/// `SIGTERM` half-way through it and `SIGKILL` at its end, each time with its whole
/// process group (Unix; elsewhere it is only killed at the end). See
/// [`ending`](crate::ending).
///
/// * exited on its own: neither `terminated` nor `killed`;
/// * ended by `SIGTERM`: `terminated`, not `killed`;
/// * killed: `killed` (and `terminated`, unless `SIGTERM` was skipped: not on Unix,
///   or no time left for it, as with a zero grace period).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Shutdown {
    /// Its exit status, when it could be collected.
    pub status: Option<ExitStatus>,
    /// True when it had not exited half-way through the grace period and its process
    /// group was sent `SIGTERM` (Unix only).
    pub terminated: bool,
    /// True when it did not exit within the grace period and was killed.
    pub killed: bool,
}

impl Shutdown {
    /// A process that ended with `status` (`None`: not collected), killed or not (and
    /// not sent `SIGTERM`; [`Escalation::finish`](crate::ending::Escalation::finish)
    /// records that).
    #[must_use]
    pub fn new(status: Option<ExitStatus>, killed: bool) -> Self {
        Shutdown {
            status,
            terminated: false,
            killed,
        }
    }
}

/// The newest bytes of a child's stderr, at most a limit of them.
///
/// The adapters share it between the reader of the pipe and the handles behind a
/// mutex; it is plain data.
///
/// ```
/// use mcp_io::StderrTail;
///
/// let mut tail = StderrTail::new(5);
/// tail.push(b"abc");
/// tail.push(b"defg");
/// assert_eq!(tail.text(), "cdefg");
/// ```
#[derive(Debug, Clone, Default)]
pub struct StderrTail {
    bytes: VecDeque<u8>,
    limit: usize,
    /// How many of the newest kept bytes the current process wrote.
    current: usize,
}

impl StderrTail {
    /// An empty tail keeping at most `limit` bytes (`0`: none).
    #[must_use]
    pub fn new(limit: usize) -> Self {
        StderrTail {
            bytes: VecDeque::new(),
            limit,
            current: 0,
        }
    }

    /// A new process of the server is about to write: what is kept stays, and
    /// [`StderrTail::current_text`] starts over.
    pub fn new_process(&mut self) {
        self.current = 0;
    }

    /// The kept bytes the current process wrote (since the last
    /// [`StderrTail::new_process`]), as text (invalid UTF-8 replaced).
    #[must_use]
    pub fn current_text(&self) -> String {
        let skip = self.bytes.len() - self.current;
        let bytes: Vec<u8> = self.bytes.iter().skip(skip).copied().collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// Appends `data`, dropping the oldest bytes beyond the limit.
    pub fn push(&mut self, data: &[u8]) {
        let data = &data[data.len().saturating_sub(self.limit)..];
        let excess = (self.bytes.len() + data.len()).saturating_sub(self.limit);
        self.bytes.drain(..excess);
        self.bytes.extend(data);
        self.current = (self.current + data.len()).min(self.bytes.len());
    }

    /// The kept bytes as text (invalid UTF-8 replaced).
    #[must_use]
    pub fn text(&self) -> String {
        let (a, b) = self.bytes.as_slices();
        let mut all = Vec::with_capacity(a.len() + b.len());
        all.extend_from_slice(a);
        all.extend_from_slice(b);
        String::from_utf8_lossy(&all).into_owned()
    }

    /// The limit in bytes.
    #[must_use]
    pub fn limit(&self) -> usize {
        self.limit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_keeps_the_newest_bytes() {
        let mut t = StderrTail::new(5);
        t.push(b"abc");
        t.push(b"defg");
        assert_eq!(t.text(), "cdefg");
        t.push(b"0123456789");
        assert_eq!(t.text(), "56789");
        t.new_process();
        assert_eq!(t.current_text(), "");
        t.push(b"ab");
        assert_eq!((t.text(), t.current_text()), ("789ab".into(), "ab".into()));
        t.push(b"0123456789");
        assert_eq!(t.current_text(), "56789");
        let mut none = StderrTail::new(0);
        none.push(b"anything");
        assert_eq!(none.text(), "");
    }
}
