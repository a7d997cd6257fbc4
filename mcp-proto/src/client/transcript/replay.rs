//! Playing a transcript again: a fresh machine, the recorded inputs at their recorded
//! times, and every recorded output compared with what comes.

use std::fmt;
use std::time::Duration;

use serde_json::Value;

use super::entry::{Data, Header, In, Line, Out, show};
use super::redact::{NoRedaction, Redaction};
use crate::Instant;
use crate::client::{CallId, Client, ConnId, InputId, TransportFailure, TransportFailureKind};

/// Why a transcript did not replay.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// A line that is not a transcript line.
    #[error("line {line}: not a transcript line: {error}")]
    Malformed {
        /// The line number, from 1.
        line: usize,
        /// What is wrong.
        error: String,
    },
    /// Entries before any header line.
    #[error("line {line}: a transcript starts with its header line")]
    NoHeader {
        /// The line number, from 1.
        line: usize,
    },
    /// The header cannot rebuild the machine, or names a redaction this replay does not
    /// know.
    #[error("line {line}: {error}")]
    Header {
        /// The line number, from 1.
        line: usize,
        /// What is wrong.
        error: String,
    },
    /// The recording started after the machine had been used.
    #[error("line {line}: the recording started after the machine was in use")]
    Midway {
        /// The header's line number, from 1.
        line: usize,
    },
    /// The recording was cut short here (nobody took its lines); nothing after it
    /// replays.
    #[error("line {line}: the recording was cut short here (its budget ran out)")]
    Truncated {
        /// The line number, from 1.
        line: usize,
    },
    /// The fresh machine did something else.
    #[error("line {line}: expected {expected}, came {came}")]
    Mismatch {
        /// The line number of the recorded entry, from 1.
        line: usize,
        /// The recorded entry (without its time), cut around the first difference
        /// when long.
        expected: String,
        /// What the fresh machine did, in the same form.
        came: String,
    },
}

/// What a replay went through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Summary {
    /// Transcripts replayed.
    pub transcripts: usize,
    /// Entries replayed (header lines not counted).
    pub entries: usize,
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = if self.transcripts == 1 { "" } else { "s" };
        write!(
            f,
            "{} transcript{s}, {} entries",
            self.transcripts, self.entries
        )
    }
}

/// One or more transcripts, read and ready to play.
///
/// ```
/// use mcp_proto::Instant;
/// use mcp_proto::client::transcript::Replay;
/// use mcp_proto::client::{Client, ClientConfig};
///
/// let mut client = Client::stdio(ClientConfig::new("doc", "1"), Instant::ZERO);
/// client.start_recording();
/// let mut buf = Vec::new();
/// while client.poll_transmit(Instant::ZERO, &mut buf).is_some() {}
/// client.close(Instant::from_millis(5));
/// while client.poll_event().is_some() {}
/// let mut text = String::new();
/// while let Some(line) = client.poll_transcript() {
///     text.push_str(&line);
///     text.push('\n');
/// }
/// let summary = Replay::new(&text).unwrap().run().unwrap();
/// assert_eq!(summary.transcripts, 1);
///
/// let tampered = text.replace("server/discover", "server/discovery");
/// let error = Replay::new(&tampered).unwrap().run().unwrap_err();
/// assert!(error.to_string().starts_with("line 3: expected"), "{error}");
/// ```
#[derive(Debug)]
pub struct Replay {
    transcripts: Vec<Transcript>,
}

#[derive(Debug)]
struct Transcript {
    line: usize,
    header: Header,
    entries: Vec<(usize, Line)>,
}

impl Replay {
    /// Reads `text`: one or more transcripts, each from its header line. Empty lines
    /// are skipped.
    ///
    /// # Errors
    /// [`ReplayError::Malformed`] or [`ReplayError::NoHeader`], naming the line.
    pub fn new(text: &str) -> Result<Replay, ReplayError> {
        let mut transcripts: Vec<Transcript> = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            if raw.trim().is_empty() {
                continue;
            }
            let parsed =
                Line::parse(raw).map_err(|error| ReplayError::Malformed { line, error })?;
            match (parsed, transcripts.last_mut()) {
                (Line::Header(header), _) => transcripts.push(Transcript {
                    line,
                    header: *header,
                    entries: Vec::new(),
                }),
                (entry, Some(t)) => t.entries.push((line, entry)),
                (_, None) => return Err(ReplayError::NoHeader { line }),
            }
        }
        Ok(Replay { transcripts })
    }

    /// How many transcripts were read.
    #[must_use]
    pub fn transcripts(&self) -> usize {
        self.transcripts.len()
    }

    /// Plays transcripts that were written without redaction.
    ///
    /// # Errors
    /// The first difference, or a transcript that cannot be played (one whose header
    /// names a redaction: play it with [`Replay::run_with`]).
    pub fn run(self) -> Result<Summary, ReplayError> {
        self.run_with(|described| match described {
            None => Ok(Box::new(NoRedaction)),
            Some(d) => Err(format!(
                "the transcript was redacted ({d}): replay it with the same redaction"
            )),
        })
    }

    /// Plays every transcript, with the redaction `redaction` makes from what the
    /// header says of the one that wrote it (`None`: none).
    ///
    /// # Errors
    /// The first difference, or a transcript that cannot be played.
    pub fn run_with(
        self,
        redaction: impl Fn(Option<&Value>) -> Result<Box<dyn Redaction>, String>,
    ) -> Result<Summary, ReplayError> {
        let mut summary = Summary::default();
        for t in self.transcripts {
            let redaction =
                redaction(t.header.redaction.as_ref()).map_err(|error| ReplayError::Header {
                    line: t.line,
                    error,
                })?;
            summary.entries += t.entries.len();
            Player::new(&t, redaction)?.play(&t.entries)?;
            summary.transcripts += 1;
        }
        Ok(summary)
    }
}

/// One transcript being played.
struct Player {
    machine: Client,
    origin: Instant,
    http: bool,
    redaction: Box<dyn Redaction>,
    /// The deadline last recorded; `None` before the first.
    deadline: Option<Option<Instant>>,
    buf: Vec<u8>,
}

impl Player {
    fn new(t: &Transcript, redaction: Box<dyn Redaction>) -> Result<Player, ReplayError> {
        let line = t.line;
        let header = &t.header;
        if header.midway {
            return Err(ReplayError::Midway { line });
        }
        let error = |error| ReplayError::Header { line, error };
        let config = header.client.config().map_err(error)?;
        let origin = Instant::from_elapsed(Duration::from_nanos(header.origin_ns));
        let machine = match (header.transport.as_str(), &header.http) {
            ("stdio", None) => Client::stdio(config, origin),
            ("http", Some(http)) => Client::http(config, http.config().map_err(error)?, origin),
            (other, _) => return Err(error(format!("unknown transport {other:?}"))),
        };
        Ok(Player {
            machine,
            origin,
            http: header.http.is_some(),
            redaction,
            deadline: None,
            buf: Vec::new(),
        })
    }

    fn at(&self, t: i64) -> Instant {
        let d = Duration::from_nanos(t.unsigned_abs());
        if t < 0 {
            self.origin - d
        } else {
            self.origin + d
        }
    }

    fn offset(&self, at: Instant) -> i64 {
        match at.checked_duration_since(self.origin) {
            Some(d) => i64::try_from(d.as_nanos()).unwrap_or(i64::MAX),
            None => i64::try_from(self.origin.saturating_duration_since(at).as_nanos())
                .map_or(i64::MIN, |n| -n),
        }
    }

    fn play(mut self, entries: &[(usize, Line)]) -> Result<(), ReplayError> {
        let mut next = 0;
        self.check_deadline(entries, &mut next)?;
        while let Some((line, entry)) = entries.get(next) {
            let line = *line;
            next += 1;
            match entry {
                Line::In(t, step) => self.input(line, self.at(*t), step)?,
                Line::Out(t, step) => self.output(line, self.at(*t), step)?,
                Line::Truncated => return Err(ReplayError::Truncated { line }),
                Line::Header(_) => unreachable!("headers start transcripts"),
            }
            self.check_deadline(entries, &mut next)?;
        }
        Ok(())
    }

    /// After a step: a changed deadline is the next entry, an unchanged one is not.
    fn check_deadline(
        &mut self,
        entries: &[(usize, Line)],
        next: &mut usize,
    ) -> Result<(), ReplayError> {
        let now = self.machine.poll_timeout();
        let recorded = match entries.get(*next) {
            Some((line, Line::Out(_, Out::Deadline { at }))) => Some((*line, *at)),
            _ => None,
        };
        let came = Out::Deadline {
            at: now.map(|at| self.offset(at)),
        };
        match (self.deadline == Some(now), recorded) {
            (true, None) => Ok(()),
            (false, Some((line, at))) => {
                *next += 1;
                self.deadline = Some(now);
                let expected = Out::Deadline { at };
                compare(line, &expected, &came)
            }
            (true, Some((line, at))) => Err(mismatch(
                line,
                &show(&Out::Deadline { at }),
                "the deadline unchanged",
            )),
            // A transcript may end anywhere (the recording process may have been
            // killed): nothing more is owed.
            (false, None) => match entries.get(*next) {
                None => Ok(()),
                Some((line, entry)) => Err(mismatch(*line, &shown(entry), &show(&came))),
            },
        }
    }

    fn input(&mut self, line: usize, now: Instant, step: &In) -> Result<(), ReplayError> {
        let m = &mut self.machine;
        let malformed = |error| ReplayError::Malformed { line, error };
        let came = match step {
            In::Connected { conn } => {
                m.handle_connected(now, ConnId(*conn));
                return Ok(());
            }
            In::Read { conn, data } => {
                m.handle_read(now, ConnId(*conn), &data.bytes().map_err(malformed)?);
                return Ok(());
            }
            In::Written { conn, bytes } => {
                m.handle_written(now, ConnId(*conn), *bytes);
                return Ok(());
            }
            In::Eof { conn } => {
                m.handle_eof(now, ConnId(*conn));
                return Ok(());
            }
            In::ProcessExited => {
                m.handle_process_exited(now);
                return Ok(());
            }
            In::TransportError { conn, kind, detail } => {
                let kind = failure_kind(kind)
                    .ok_or_else(|| malformed(format!("unknown failure kind {kind:?}")))?;
                m.handle_transport_error(
                    now,
                    ConnId(*conn),
                    TransportFailure::new(kind, detail.clone()),
                );
                return Ok(());
            }
            In::Timeout => {
                m.handle_timeout(now);
                return Ok(());
            }
            In::Close => {
                m.close(now);
                return Ok(());
            }
            In::SetAuthorization { value } => {
                m.set_authorization(value.clone());
                return Ok(());
            }
            In::Call { request, .. } => {
                let result = m.call(now, request.request().map_err(malformed)?);
                In::call(request.clone(), &result)
            }
            In::Respond { input, answer, .. } => {
                let result = m.respond(now, InputId(*input), answer.answer());
                In::respond(InputId(*input), answer.clone(), &result)
            }
            In::SetRoots { roots, .. } => {
                let result = m.set_roots(now, roots.clone());
                In::SetRoots {
                    roots: roots.clone(),
                    misuse: super::entry::misuse(&result),
                }
            }
            In::Cancel { call, .. } => {
                let result = m.cancel(now, CallId(*call));
                In::Cancel {
                    call: *call,
                    misuse: super::entry::misuse(&result),
                }
            }
        };
        compare(line, step, &came)
    }

    fn output(&mut self, line: usize, now: Instant, step: &Out) -> Result<(), ReplayError> {
        let came = match step {
            Out::Event { .. } | Out::NoEvent => Out::event(self.machine.poll_event().as_ref()),
            Out::Deadline { .. } => {
                return Err(mismatch(line, &show(step), "the deadline unchanged"));
            }
            _ => {
                self.buf.clear();
                let transmit = self.machine.poll_transmit(now, &mut self.buf);
                match Out::transmit(transmit.as_ref(), &self.buf) {
                    Out::Write { conn, data } if self.http => {
                        let bytes = data.bytes().unwrap_or_default();
                        let data = Data::of(&self.redaction.request(ConnId(conn), &bytes));
                        Out::Write { conn, data }
                    }
                    other => other,
                }
            }
        };
        compare(line, step, &came)
    }
}

fn failure_kind(name: &str) -> Option<TransportFailureKind> {
    use TransportFailureKind as K;
    [
        K::Dns,
        K::Refused,
        K::Unreachable,
        K::Timeout,
        K::Tls,
        K::Reset,
        K::Closed,
        K::Spawn,
        K::Io,
    ]
    .into_iter()
    .find(|k| k.as_str() == name)
}

fn shown(entry: &Line) -> String {
    match entry {
        Line::In(_, step) => show(step),
        Line::Out(_, step) => show(step),
        Line::Truncated => "the truncation mark".to_owned(),
        Line::Header(_) => "a header".to_owned(),
    }
}

fn compare<T: PartialEq + serde::Serialize>(
    line: usize,
    expected: &T,
    came: &T,
) -> Result<(), ReplayError> {
    if expected == came {
        return Ok(());
    }
    Err(mismatch(line, &show(expected), &show(came)))
}

/// Longest text of either side shown whole in a mismatch.
const SHOWN: usize = 240;

fn mismatch(line: usize, expected: &str, came: &str) -> ReplayError {
    let (expected, came) = if expected.len() <= SHOWN && came.len() <= SHOWN {
        (expected.to_owned(), came.to_owned())
    } else {
        let first = expected
            .bytes()
            .zip(came.bytes())
            .take_while(|(a, b)| a == b)
            .count();
        (excerpt(expected, first), excerpt(came, first))
    };
    ReplayError::Mismatch {
        line,
        expected,
        came,
    }
}

/// `text` around byte `at`.
fn excerpt(text: &str, at: usize) -> String {
    let mut start = at.saturating_sub(SHOWN / 2);
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    let mut end = (start + SHOWN).min(text.len());
    while !text.is_char_boundary(end) {
        end += 1;
    }
    let head = if start > 0 { "…" } else { "" };
    let tail = if end < text.len() { "…" } else { "" };
    format!("{head}{}{tail}", &text[start..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::{ClientConfig, Event};
    use crate::server::{Server, example};
    use crate::version::EraMode;

    /// Drives `client` against `server` over stdio until `done` holds, time standing
    /// still; returns the transcript.
    fn run(client: &mut Client, server: &mut Server, done: impl Fn(&Event) -> bool) {
        let now = Instant::from_millis(10);
        let mut buf = Vec::new();
        for _ in 0..100 {
            while let Some(t) = client.poll_transmit(now, &mut buf) {
                if let crate::client::Transmit::Write { conn, len } = t {
                    client.handle_written(now, conn, len);
                }
            }
            server.handle_input(now, &buf);
            buf.clear();
            let mut back = Vec::new();
            while server.poll_transmit(now, &mut back).is_some() {}
            if !back.is_empty() {
                client.handle_read(now, ConnId::STDIO, &back);
            }
            while let Some(e) = client.poll_event() {
                if done(&e) {
                    return;
                }
            }
        }
        panic!("never done");
    }

    fn transcript(client: &mut Client) -> Vec<String> {
        std::iter::from_fn(|| client.poll_transcript()).collect()
    }

    fn recorded_add() -> Vec<String> {
        let start = Instant::from_millis(10);
        let config = ClientConfig::new("t", "1").era_mode(EraMode::Legacy);
        let mut client = Client::stdio(config, start);
        client.start_recording();
        let mut server = example::server();
        run(&mut client, &mut server, |e| {
            matches!(e, Event::Connected(_))
        });
        let call =
            crate::client::CallRequest::call_tool("add", serde_json::json!({"a": 2, "b": 3}));
        client.call(start, call).unwrap();
        run(&mut client, &mut server, |e| {
            matches!(e, Event::CallCompleted { .. })
        });
        transcript(&mut client)
    }

    #[test]
    fn a_recorded_run_replays_and_a_changed_answer_is_named_by_line() {
        let lines = recorded_add();
        let text = lines.join("\n");
        let summary = Replay::new(&text).unwrap().run().unwrap();
        assert_eq!(
            summary,
            Summary {
                transcripts: 1,
                entries: lines.len() - 1
            }
        );

        // The server's answer to the call, one byte changed: 5 becomes 6.
        let read = lines
            .iter()
            .rposition(|l| l.contains(r#""in":"read""#) && l.contains(r#"\"text\":\"5\""#))
            .expect("the answer");
        let mut tampered = lines.clone();
        tampered[read] = tampered[read].replace(r#"\"text\":\"5\""#, r#"\"text\":\"6\""#);
        let error = Replay::new(&tampered.join("\n"))
            .unwrap()
            .run()
            .unwrap_err();
        let ReplayError::Mismatch {
            line,
            expected,
            came,
        } = &error
        else {
            panic!("{error}")
        };
        // The first output that differs is the completion polled after the read.
        assert!(*line > read + 1, "{error}");
        assert!(tampered[line - 1].contains("CallCompleted"), "{error}");
        assert!(
            expected.contains(r#"\"5\""#) && came.contains(r#"\"6\""#),
            "{error}"
        );

        // A written request changed: named at its own line.
        let write = lines
            .iter()
            .position(|l| l.contains(r#""out":"write""#))
            .unwrap();
        let mut tampered = lines.clone();
        tampered[write] = tampered[write].replacen("initialize", "initialise", 1);
        let error = Replay::new(&tampered.join("\n"))
            .unwrap()
            .run()
            .unwrap_err();
        assert!(
            matches!(error, ReplayError::Mismatch { line, .. } if line == write + 1),
            "{error}"
        );
    }

    #[test]
    fn a_recording_nobody_drains_is_cut_short_and_says_so() {
        let mut client = Client::stdio(ClientConfig::new("t", "1"), Instant::ZERO);
        client.start_recording_within(600);
        let mut server = example::server();
        run(&mut client, &mut server, |e| {
            matches!(e, Event::Connected(_))
        });
        let lines = transcript(&mut client);
        assert!(lines.iter().map(String::len).sum::<usize>() < 600 + 100);
        assert_eq!(lines.last().unwrap(), r#"{"truncated":{"budget":600}}"#);
        let error = Replay::new(&lines.join("\n")).unwrap().run().unwrap_err();
        assert_eq!(error, ReplayError::Truncated { line: lines.len() });
    }

    #[test]
    fn a_recording_started_late_is_refused_and_so_are_stray_lines() {
        let mut client = Client::stdio(ClientConfig::new("t", "1"), Instant::ZERO);
        let mut buf = Vec::new();
        let _ = client.poll_transmit(Instant::ZERO, &mut buf);
        client.start_recording();
        let text = transcript(&mut client).join("\n");
        assert!(text.contains(r#""midway":true"#));
        assert_eq!(
            Replay::new(&text).unwrap().run(),
            Err(ReplayError::Midway { line: 1 })
        );
        let stray = r#"{"t":0,"out":"no_event"}"#;
        assert_eq!(
            Replay::new(stray).unwrap_err(),
            ReplayError::NoHeader { line: 1 }
        );
        let error = Replay::new(&format!("{text}\n\nnot json")).unwrap_err();
        assert!(
            matches!(error, ReplayError::Malformed { line: 4, .. }),
            "{error}"
        );
    }
}
