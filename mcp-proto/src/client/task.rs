//! Tasks: a typed view of the task records of both eras, and what can be wrong with one.
//!
//! The 2025-11-25 core feature wraps a `Task` in `{"task": …}` when it is created and
//! spells its durations `ttl` / `pollInterval`; the 2026-07-28 extension
//! `io.modelcontextprotocol/tasks` answers `{"resultType": "task", …Task}` flat, with
//! `ttlMs` / `pollIntervalMs`, and inlines the final `result` or `error` (or the
//! outstanding `inputRequests`) in `tasks/get`. [`Task`] is the one shape both become.
//! The session (`session/tasks.rs`) drives the life of a task behind a call.

use std::fmt;
use std::time::Duration;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::version::Era;

/// The id of the 2026-07-28 tasks extension, declared in
/// `clientCapabilities.extensions` and advertised by servers in `server/discover`.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// The `_meta` key tying a 2025-11-25 message to its task (`{"taskId": …}`).
pub const RELATED_TASK_KEY: &str = "io.modelcontextprotocol/related-task";

/// The shortest wait between two `tasks/get` polls, whatever the server asks: a
/// `pollInterval` of 0 would otherwise make the client poll in a loop.
pub const MIN_POLL_INTERVAL: Duration = Duration::from_millis(100);

/// The first wait between polls when the server names no poll interval; it doubles
/// after every poll that shows no change, up to [`MAX_DEFAULT_POLL_INTERVAL`].
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(1);

/// The longest wait between polls the client chooses by itself.
pub const MAX_DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(30);

/// The longest wait between polls, whatever the server asks: a `pollInterval` of an
/// hour (or of `u64::MAX` milliseconds) would otherwise leave the call asleep for that
/// long. Between [`MIN_POLL_INTERVAL`] and this, the server's interval is honoured as
/// given; the wait never runs past the end of the task's `ttl` either.
pub const MAX_POLL_INTERVAL: Duration = Duration::from_secs(60);

/// Where a task stands. The three terminal statuses never change again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TaskStatus {
    /// In progress.
    Working,
    /// The server needs input (2026: `inputRequests`; 2025: requests sent while
    /// `tasks/result` is open).
    InputRequired,
    /// Finished with a result.
    Completed,
    /// Finished with an error.
    Failed,
    /// Cancelled.
    Cancelled,
}

impl TaskStatus {
    /// The status named `s` on the wire, if it is one of the five.
    #[must_use]
    pub fn parse(s: &str) -> Option<TaskStatus> {
        Some(match s {
            "working" => TaskStatus::Working,
            "input_required" => TaskStatus::InputRequired,
            "completed" => TaskStatus::Completed,
            "failed" => TaskStatus::Failed,
            "cancelled" => TaskStatus::Cancelled,
            _ => return None,
        })
    }

    /// Its name on the wire.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::InputRequired => "input_required",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
        }
    }

    /// Completed, failed or cancelled: it never changes again.
    #[must_use]
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }
}

impl fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A task as the server describes it, in either era.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Task {
    /// The id the server gave it (at most `Limits::max_task_id_bytes`).
    pub task_id: String,
    /// Where it stands.
    pub status: TaskStatus,
    /// Free text for people, when the server sent one (cut to
    /// [`MAX_ECHO_BYTES`](super::MAX_ECHO_BYTES)).
    pub status_message: Option<String>,
    /// When it was created (ISO 8601, as the server wrote it, cut to
    /// [`MAX_ECHO_BYTES`](super::MAX_ECHO_BYTES); empty when absent).
    pub created_at: String,
    /// When it last changed (ISO 8601, as the server wrote it, cut to
    /// [`MAX_ECHO_BYTES`](super::MAX_ECHO_BYTES); empty when absent).
    pub last_updated_at: String,
    /// How long the server keeps it from its creation; `None` for unlimited.
    pub ttl: Option<Duration>,
    /// The spacing of polls the server asks for, when it names one.
    pub poll_interval: Option<Duration>,
}

/// What is wrong with a task record a server sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TaskProblem {
    /// The record is not a JSON object, or a member has the wrong type (the member).
    #[error("malformed task: {0}")]
    Malformed(String),
    /// A required member is missing (its name).
    #[error("the task has no {0}")]
    Missing(&'static str),
    /// `taskId` is longer than `Limits::max_task_id_bytes`.
    #[error("task id of {len} bytes exceeds the limit of {limit} bytes (max_task_id_bytes)")]
    IdTooLong {
        /// Its length.
        len: usize,
        /// The limit in force.
        limit: usize,
    },
    /// `taskId` is empty.
    #[error("the task id is empty")]
    EmptyId,
    /// A status outside the five defined (as received, cut short).
    #[error("unknown task status {0:?}")]
    UnknownStatus(String),
    /// A poll or notification about another task than the one asked about.
    #[error("expected task {expected:?}, the server described {got:?}")]
    WrongTask {
        /// The task asked about.
        expected: String,
        /// The one described (cut short).
        got: String,
    },
    /// A status that needs a payload came without it (`completed` without `result`,
    /// `failed` without `error`, `input_required` without `inputRequests`): the member.
    #[error("a {status} task without {member}")]
    MissingPayload {
        /// The status.
        status: TaskStatus,
        /// The member that should carry the payload.
        member: &'static str,
    },
    /// 2026-07-28: a result with `resultType: "task"` in answer to a request that did
    /// not declare the extension, or that is not a `tools/call`.
    #[error("resultType \"task\" in answer to {0}, which cannot create a task")]
    NotOffered(String),
    /// The task's `ttl` passed (counted from when the client learned of the task) and
    /// it had not ended: the server may have deleted it already.
    #[error("the task did not end within its ttl of {0:?}")]
    Expired(std::time::Duration),
    /// The task was polled `Limits::max_task_polls` times without reaching an end.
    #[error("the task did not finish within {0} polls (max_task_polls)")]
    TooManyPolls(u32),
}

impl Task {
    /// Reads a task record: the bare `Task` (2025-11-25 `tasks/get`, `tasks/cancel`,
    /// `notifications/tasks/status`, the inside of a `CreateTaskResult`, a `tasks/list`
    /// item) or the flat 2026-07-28 one (`CreateTaskResult`, `tasks/get`,
    /// `notifications/tasks`). Unknown members are ignored; `ttl` and the poll interval
    /// are read under the era's names, a negative or fractional value counting as
    /// absent; a missing `ttl` is read as unlimited. `max_id` bounds the id's bytes.
    ///
    /// # Errors
    /// A [`TaskProblem`] naming what is wrong.
    pub fn from_object(
        object: &Map<String, Value>,
        era: Era,
        max_id: usize,
    ) -> Result<Task, TaskProblem> {
        let task_id = match object.get("taskId") {
            Some(Value::String(s)) => s,
            Some(_) => return Err(TaskProblem::Malformed("taskId is not a string".into())),
            None => return Err(TaskProblem::Missing("taskId")),
        };
        if task_id.is_empty() {
            return Err(TaskProblem::EmptyId);
        }
        if task_id.len() > max_id {
            return Err(TaskProblem::IdTooLong {
                len: task_id.len(),
                limit: max_id,
            });
        }
        let status = match object.get("status") {
            Some(Value::String(s)) => TaskStatus::parse(s)
                .ok_or_else(|| TaskProblem::UnknownStatus(super::event::clipped(s).into()))?,
            Some(_) => return Err(TaskProblem::Malformed("status is not a string".into())),
            None => return Err(TaskProblem::Missing("status")),
        };
        // Every text a server chose is cut short before it is kept.
        let text = |key: &str| {
            object.get(key).and_then(Value::as_str).map(|s| {
                let mut s = s.to_owned();
                super::event::clip(&mut s);
                s
            })
        };
        let status_message = text("statusMessage");
        let (ttl_key, poll_key) = match era {
            Era::Legacy => ("ttl", "pollInterval"),
            Era::Modern => ("ttlMs", "pollIntervalMs"),
        };
        let millis = |key: &str| {
            object
                .get(key)
                .and_then(Value::as_u64)
                .map(Duration::from_millis)
        };
        Ok(Task {
            task_id: task_id.clone(),
            status,
            status_message,
            created_at: text("createdAt").unwrap_or_default(),
            last_updated_at: text("lastUpdatedAt").unwrap_or_default(),
            ttl: millis(ttl_key),
            poll_interval: millis(poll_key),
        })
    }

    /// Reads the task of a call's result, as [`Task::from_object`]: a 2025-11-25
    /// `CreateTaskResult` (`{"task": …}`), any other bare 2025 `Task`, or a 2026 record.
    ///
    /// # Errors
    /// A [`TaskProblem`] naming what is wrong.
    pub fn from_result(raw: &RawValue, era: Era, max_id: usize) -> Result<Task, TaskProblem> {
        let not_object =
            |e: serde_json::Error| TaskProblem::Malformed(format!("not a JSON object: {e}"));
        let members = RecordMembers::read(raw.get()).map_err(not_object)?;
        if era == Era::Legacy
            && let Some(inner) = members.task.filter(|t| t.get().starts_with('{'))
        {
            let inner = RecordMembers::read(inner.get()).map_err(not_object)?;
            return Task::from_object(&inner.object().map_err(not_object)?, era, max_id);
        }
        Task::from_object(&members.object().map_err(not_object)?, era, max_id)
    }

    /// The `taskId` of a call's result read as [`Task::from_result`] reads it, when it is
    /// a usable one (a non-empty string of at most `max_id` bytes), whatever else is wrong
    /// with the record: a task the server made under that id may be running.
    pub(crate) fn id_of_result(raw: &RawValue, era: Era, max_id: usize) -> Option<String> {
        let members = RecordMembers::read(raw.get()).ok()?;
        let members = match members.task.filter(|t| t.get().starts_with('{')) {
            Some(inner) if era == Era::Legacy => RecordMembers::read(inner.get()).ok()?,
            _ => members,
        };
        let id: String = serde_json::from_str(members.read[0]?.get()).ok()?;
        (!id.is_empty() && id.len() <= max_id).then_some(id)
    }

    /// True when this record says the same as `other` for a person: status and message.
    #[must_use]
    pub fn same_view(&self, other: &Task) -> bool {
        self.status == other.status && self.status_message == other.status_message
    }
}

/// The members of a task record read as values (by [`Task::from_object`] and the
/// session), in the order [`RecordMembers::object`] gives them.
const READ_MEMBERS: [&str; 12] = [
    "taskId",
    "status",
    "statusMessage",
    "createdAt",
    "lastUpdatedAt",
    "ttl",
    "pollInterval",
    "ttlMs",
    "pollIntervalMs",
    "resultType",
    "error",
    "inputRequests",
];

/// The most memory the members of a task record read into values (its error, its input
/// requests, …) may take once parsed, estimated from their text: a record past it is
/// malformed. Its `result` is kept verbatim and not counted.
pub(crate) const MAX_RECORD_PARSED_BYTES: usize = 16 * 1024 * 1024;

/// The members of a task record that anything here reads, each as it came; any other
/// member is stepped over unread, so a record padded with megabytes of members nobody
/// reads costs no more than its text (read into a [`Map`], it cost many times that).
#[derive(Debug, Default)]
pub(crate) struct RecordMembers<'a> {
    /// `task` (a 2025 `CreateTaskResult`'s record), verbatim.
    pub(crate) task: Option<&'a RawValue>,
    /// `result` (a 2026 record's outcome), verbatim.
    pub(crate) result: Option<&'a RawValue>,
    /// The [`READ_MEMBERS`] present, verbatim, at their index there.
    read: [Option<&'a RawValue>; READ_MEMBERS.len()],
}

impl<'a> RecordMembers<'a> {
    /// Reads the members of the object `text`.
    ///
    /// # Errors
    /// When `text` is not an object, or names a member it reads twice.
    pub(crate) fn read(text: &'a str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// The [`READ_MEMBERS`] present, read as values: what [`Task::from_object`] and the
    /// session look at (`task` and `result` stay verbatim).
    ///
    /// # Errors
    /// When they would take more than [`MAX_RECORD_PARSED_BYTES`] once parsed (the
    /// estimate is taken from their text first); never else for a record that was read
    /// (each member is valid JSON).
    pub(crate) fn object(&self) -> Result<Map<String, Value>, serde_json::Error> {
        let members = self.read.iter().flatten();
        let text: usize = members.clone().map(|raw| raw.get().len()).sum();
        let estimate = || {
            (members.map(|raw| crate::held::parsed_bytes(raw.get().as_bytes())))
                .fold(0, usize::saturating_add)
        };
        if !crate::held::parse_fits_by_length(text, MAX_RECORD_PARSED_BYTES)
            && estimate() > MAX_RECORD_PARSED_BYTES
        {
            return Err(serde::de::Error::custom(format!(
                "its members would take more than {MAX_RECORD_PARSED_BYTES} bytes of memory \
                 once parsed"
            )));
        }
        let mut object = Map::new();
        for (key, raw) in READ_MEMBERS.iter().zip(self.read) {
            if let Some(raw) = raw {
                object.insert((*key).to_owned(), serde_json::from_str(raw.get())?);
            }
        }
        Ok(object)
    }
}

/// Which member a key of a record names, told without copying the key.
enum RecordKey {
    Task,
    Result,
    Read(usize),
    Other,
}

impl<'de> serde::Deserialize<'de> for RecordKey {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Name;
        impl serde::de::Visitor<'_> for Name {
            type Value = RecordKey;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a member name")
            }
            fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<RecordKey, E> {
                Ok(match key {
                    "task" => RecordKey::Task,
                    "result" => RecordKey::Result,
                    _ => READ_MEMBERS
                        .iter()
                        .position(|m| *m == key)
                        .map_or(RecordKey::Other, RecordKey::Read),
                })
            }
        }
        deserializer.deserialize_str(Name)
    }
}

impl<'de: 'a, 'a> serde::Deserialize<'de> for RecordMembers<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Members<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Members<'a> {
            type Value = RecordMembers<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a task record (an object)")
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(
                self,
                mut map: M,
            ) -> Result<RecordMembers<'a>, M::Error> {
                let mut members = RecordMembers::default();
                while let Some(key) = map.next_key::<RecordKey>()? {
                    let (slot, name) = match key {
                        RecordKey::Task => (&mut members.task, "task"),
                        RecordKey::Result => (&mut members.result, "result"),
                        RecordKey::Read(i) => (&mut members.read[i], READ_MEMBERS[i]),
                        RecordKey::Other => {
                            map.next_value::<serde::de::IgnoredAny>()?;
                            continue;
                        }
                    };
                    if slot.is_some() {
                        return Err(serde::de::Error::duplicate_field(name));
                    }
                    *slot = Some(map.next_value()?);
                }
                Ok(members)
            }
        }
        deserializer.deserialize_map(Members(std::marker::PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => unreachable!(),
        }
    }

    /// The members read into values are bounded as memory, not text: an `error` of
    /// 3 MB of one-member objects (over 300 MB once parsed) makes the record malformed,
    /// unparsed; a `result` as large, kept verbatim, does not.
    #[test]
    fn a_record_whose_read_members_are_too_large_once_parsed_is_malformed() {
        let padding = format!("[{}]", vec![r#"{"":0}"#; 400_000].join(","));
        let record = |member: &str| {
            format!(r#"{{"taskId":"t","status":"failed","{member}":{{"x":{padding}}}}}"#)
        };
        let raw = RawValue::from_string(record("error")).unwrap();
        let e = Task::from_result(&raw, Era::Modern, 64).unwrap_err();
        assert!(e.to_string().contains("bytes of memory once parsed"), "{e}");
        let raw = RawValue::from_string(record("result")).unwrap();
        assert_eq!(
            Task::from_result(&raw, Era::Modern, 64).unwrap().task_id,
            "t"
        );
    }

    #[test]
    fn a_record_is_read_for_its_members_once_each() {
        let text = r#"{"task\u0049d":"t","pad":[1,{"status":"x"}],"status":"working",
            "result":{"b":1,"a":2},"ttl":null}"#;
        let members = RecordMembers::read(text).unwrap();
        assert_eq!(
            members.object().unwrap(),
            obj(json!({"taskId": "t", "status": "working", "ttl": null}))
        );
        assert_eq!(members.result.map(RawValue::get), Some(r#"{"b":1,"a":2}"#));
        assert!(members.task.is_none());
        for twice in [
            r#"{"status":"working","status":"completed"}"#,
            r#"{"result":1,"result":2}"#,
            r#"{"taskId":"a","task\u0049d":"b"}"#,
        ] {
            let e = RecordMembers::read(twice).unwrap_err().to_string();
            assert!(e.contains("duplicate field"), "{twice}: {e}");
        }
        assert!(RecordMembers::read("[1]").is_err());
    }

    #[test]
    fn reads_both_eras() {
        let legacy = obj(json!({"taskId":"t","status":"working","createdAt":"a",
            "lastUpdatedAt":"b","ttl":60000,"pollInterval":5000}));
        let t = Task::from_object(&legacy, Era::Legacy, 64).unwrap();
        assert_eq!(t.poll_interval, Some(Duration::from_secs(5)));
        assert_eq!(t.ttl, Some(Duration::from_secs(60)));
        let modern = obj(json!({"taskId":"t","status":"input_required","ttlMs":null,
            "pollIntervalMs":-5}));
        let t = Task::from_object(&modern, Era::Modern, 64).unwrap();
        assert_eq!((t.ttl, t.poll_interval), (None, None));
        assert_eq!(t.status, TaskStatus::InputRequired);
    }

    #[test]
    fn the_fuzz_entry_takes_odd_records() {
        let long = format!(
            r#"{{"taskId":"t","status":"working","statusMessage":"{}"}}"#,
            "é".repeat(300)
        );
        for text in [
            r#"{"task":{"taskId":"t","status":"completed","ttl":1.5,"pollInterval":-1}}"#,
            r#"{"task":7,"taskId":"x","status":"failed"}"#,
            r#"{"taskId":"0123456789abcdefX","status":"working"}"#,
            long.as_str(),
            "null",
            "[]",
        ] {
            crate::fuzzing::task_records(text.as_bytes());
        }
    }

    #[test]
    fn names_what_is_wrong() {
        let bad = |v: Value| Task::from_object(&obj(v), Era::Modern, 8).unwrap_err();
        assert_eq!(
            bad(json!({"taskId":"t","status":"queued"})),
            TaskProblem::UnknownStatus("queued".into())
        );
        assert_eq!(
            bad(json!({"taskId":"123456789","status":"working"})),
            TaskProblem::IdTooLong { len: 9, limit: 8 }
        );
        assert_eq!(
            bad(json!({"status":"working"})),
            TaskProblem::Missing("taskId")
        );
        assert_eq!(
            bad(json!({"taskId":"","status":"working"})),
            TaskProblem::EmptyId
        );
        assert!(matches!(
            bad(json!({"taskId":7,"status":"working"})),
            TaskProblem::Malformed(_)
        ));
    }
}
