//! The recording side: entries appended as the machine is driven, kept until the driver
//! takes them, within a budget.

use std::collections::VecDeque;

use super::entry::{Header, In, Line, Out};
use crate::Instant;

/// The lines of a recording not yet handed out.
#[derive(Debug)]
pub(crate) struct Recorder {
    origin: Instant,
    /// The latest `now` the machine was given (outputs without one are recorded at it).
    now: Instant,
    /// The deadline last recorded; `None` before the first.
    deadline: Option<Option<Instant>>,
    lines: VecDeque<String>,
    /// Bytes in `lines`.
    queued: usize,
    budget: usize,
    /// The budget ran out: the truncation mark is the last line.
    stopped: bool,
}

impl Recorder {
    /// A recording of a machine made at `origin`, its header first.
    pub(crate) fn new(header: &Header, origin: Instant, budget: usize) -> Recorder {
        let mut recorder = Recorder {
            origin,
            now: origin,
            deadline: None,
            lines: VecDeque::new(),
            queued: 0,
            budget,
            stopped: false,
        };
        recorder.push(Line::header(header));
        recorder
    }

    /// An input or command, given at `now` (or at the latest instant when it takes
    /// none).
    pub(crate) fn input(&mut self, now: Option<Instant>, step: &In) {
        let now = now.unwrap_or(self.now);
        self.now = self.now.max(now);
        let t = self.offset(now);
        self.push(Line::input(t, step));
    }

    /// An output, polled at `now` (or at the latest instant when the poll takes none).
    pub(crate) fn output(&mut self, now: Option<Instant>, step: &Out) {
        let now = now.unwrap_or(self.now);
        self.now = self.now.max(now);
        let t = self.offset(now);
        self.push(Line::output(t, step));
    }

    /// What `poll_timeout` says after a step: recorded when it changed.
    pub(crate) fn deadline(&mut self, at: Option<Instant>) {
        if self.deadline == Some(at) {
            return;
        }
        self.deadline = Some(at);
        let at = at.map(|at| self.offset(at));
        self.output(None, &Out::Deadline { at });
    }

    /// The next line for the driver.
    pub(crate) fn poll(&mut self) -> Option<String> {
        let line = self.lines.pop_front()?;
        self.queued -= line.len();
        Some(line)
    }

    /// Nanoseconds from the first instant to `at`, negative for an earlier one.
    fn offset(&self, at: Instant) -> i64 {
        match at.checked_duration_since(self.origin) {
            Some(d) => i64::try_from(d.as_nanos()).unwrap_or(i64::MAX),
            None => {
                let d = self.origin.saturating_duration_since(at);
                i64::try_from(d.as_nanos()).map_or(i64::MIN, |n| -n)
            }
        }
    }

    fn push(&mut self, line: String) {
        if self.stopped {
            return;
        }
        // One line always fits when nothing waits: a driver that takes the lines after
        // every step never loses any.
        if !self.lines.is_empty() && self.queued + line.len() > self.budget {
            self.stopped = true;
            let mark = Line::truncated(self.budget);
            self.queued += mark.len();
            self.lines.push_back(mark);
            return;
        }
        self.queued += line.len();
        self.lines.push_back(line);
    }
}
