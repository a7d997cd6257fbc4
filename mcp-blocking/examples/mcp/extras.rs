//! What the CLI offers a server besides forms: roots (`--root`), sampling through a
//! command the user configures (`--sampling-command`), and the server's log messages on
//! stderr (`--log-level`).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use mcp_blocking::mcp_proto::client::{
    AcceptDefaults, FormSchema, InputAnswer, InputHandler, InputRequest, LogMessage, Root,
    SamplingResult,
};
use mcp_blocking::mcp_proto::jsonrpc::{ErrorObject, codes};

use crate::terminal::clean;

/// The most bytes read from a sampling command's output.
const MAX_SAMPLING_OUTPUT: u64 = 4 * 1024 * 1024;

/// `path` as a `file://` URI: made absolute, each byte outside the unreserved set and
/// `/` percent-encoded.
pub fn file_uri(path: &str) -> Result<String, String> {
    let absolute =
        std::fs::canonicalize(Path::new(path)).map_err(|e| format!("--root {path}: {e}"))?;
    let text = absolute
        .to_str()
        .ok_or_else(|| format!("--root {path}: not valid UTF-8"))?;
    let mut uri = String::from("file://");
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            uri.push(char::from(b));
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    Ok(uri)
}

/// The roots of `--root` and of the config entry's `roots`, as `file://` URIs (an entry
/// that already is a `file://` URI is kept as it is).
pub fn roots(paths: &[String]) -> Result<Vec<Root>, String> {
    paths
        .iter()
        .map(|p| {
            let uri = if p.starts_with("file://") {
                p.clone()
            } else {
                file_uri(p)?
            };
            let name = Path::new(p)
                .file_name()
                .and_then(|n| n.to_str())
                .map(str::to_owned);
            Ok(Root { uri, name })
        })
        .collect()
}

/// Answers sampling requests with a command (killed after `limit`) and passes everything
/// else on.
pub struct WithSampling<H> {
    inner: H,
    command: Option<String>,
    limit: Duration,
    /// Failures of the command so far: only the first few are printed.
    failures: u32,
}

/// Failures of the sampling command printed in one run; the rest are counted.
const SAMPLING_FAILURES_SHOWN: u32 = 3;

impl<H> WithSampling<H> {
    pub fn new(inner: H, command: Option<String>, limit: Duration) -> Self {
        WithSampling {
            inner,
            command,
            limit,
            failures: 0,
        }
    }
}

impl<H: InputHandler> InputHandler for WithSampling<H> {
    fn answer(&mut self, request: &InputRequest) -> InputAnswer {
        match (request, &self.command) {
            (InputRequest::Sampling(params), Some(command)) => {
                let input = serde_json::to_vec(params).unwrap_or_default();
                match sample(command, &input, self.limit) {
                    Ok(result) => InputAnswer::sampled(result),
                    Err(why) => {
                        self.failures += 1;
                        if self.failures <= SAMPLING_FAILURES_SHOWN {
                            eprintln!("sampling command failed: {}", clean(&why));
                        }
                        if self.failures == SAMPLING_FAILURES_SHOWN {
                            eprintln!("(further failures of the sampling command are not shown)");
                        }
                        InputAnswer::Error(ErrorObject::new(codes::INTERNAL_ERROR, why))
                    }
                }
            }
            (InputRequest::Sampling(_), None) => InputAnswer::Error(ErrorObject::new(
                codes::INVALID_REQUEST,
                "sampling is declined (no --sampling-command)",
            )),
            _ => self.inner.answer(request),
        }
    }
}

/// The kinds of input a server asked for that nobody could answer in this run.
static UNANSWERED: std::sync::Mutex<Vec<&'static str>> = std::sync::Mutex::new(Vec::new());

/// Answers nothing (off a terminal): every request for input is refused with an error
/// that names `--auto-accept`, and remembered, so that the command can say what was
/// needed ([`unanswered`]).
pub struct Unanswered;

impl InputHandler for Unanswered {
    fn answer(&mut self, request: &InputRequest) -> InputAnswer {
        let kind = match request {
            InputRequest::Sampling(_) => "sampling",
            InputRequest::Roots => "roots",
            _ => "elicitation",
        };
        if let Ok(mut asked) = UNANSWERED.lock()
            && !asked.contains(&kind)
        {
            asked.push(kind);
        }
        InputAnswer::Error(ErrorObject::new(
            codes::INTERNAL_ERROR,
            "nobody can answer: the client runs without a terminal (it would answer with --auto-accept)",
        ))
    }
}

/// What [`Unanswered`] refused so far in this run.
pub fn unanswered() -> Vec<&'static str> {
    UNANSWERED.lock().map(|a| a.clone()).unwrap_or_default()
}

/// The first form in this run that `--auto-accept` could not answer: its message, and
/// why its defaults do not answer it.
static UNFILLED: std::sync::Mutex<Option<(String, String)>> = std::sync::Mutex::new(None);

/// `--auto-accept`: answers as [`AcceptDefaults`] does, except a form that its schema's
/// defaults do not answer (a required field without a default, a default outside its
/// field's constraints), which is refused with the reason and remembered
/// ([`unfilled`]): the command then says which field it was, with the same words in
/// both eras, instead of whatever the server makes of the refusal.
pub struct AutoAccept;

impl InputHandler for AutoAccept {
    fn answer(&mut self, request: &InputRequest) -> InputAnswer {
        if let InputRequest::Elicitation(p) = request
            && !p.is_url_mode()
        {
            let schema = p
                .requested_schema
                .as_ref()
                .and_then(|s| serde_json::from_str(s.get()).ok())
                .unwrap_or_else(|| serde_json::json!({"type": "object"}));
            let why = match FormSchema::parse(&schema) {
                Ok(form) => form.check(p.defaults()).err(),
                Err(e) => Some(e),
            };
            if let Some(why) = why {
                if let Ok(mut first) = UNFILLED.lock()
                    && first.is_none()
                {
                    *first = Some((p.message.clone(), why.to_string()));
                }
                return InputAnswer::Error(ErrorObject::new(
                    codes::INTERNAL_ERROR,
                    format!("the client could not answer with the form's defaults: {why}"),
                ));
            }
        }
        AcceptDefaults.answer(request)
    }
}

/// The first form [`AutoAccept`] refused in this run: its message and why.
pub fn unfilled() -> Option<(String, String)> {
    UNFILLED.lock().ok().and_then(|f| f.clone())
}

/// Runs `command` through the shell with `input` on its stdin; its stdout is the
/// `CreateMessageResult`. Its stdin is written while its stdout is read (a command that
/// answers before it has read everything cannot block on a full pipe), and a command
/// that has not answered within `limit` is killed with everything it started.
fn sample(command: &str, input: &[u8], limit: Duration) -> Result<SamplingResult, String> {
    let mut shell = Command::new("/bin/sh");
    shell
        .arg("-c")
        .arg(command)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    // Its own process group, so that what it starts goes when it is killed.
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut shell, 0);
    let mut child = shell
        .spawn()
        .map_err(|e| format!("cannot start the sampling command: {e}"))?;
    let (stdin, stdout) = (child.stdin.take(), child.stdout.take());
    let (done, finished) = std::sync::mpsc::channel();
    let deadline = std::time::Instant::now() + limit;
    let out = std::thread::scope(|scope| {
        if let Some(mut stdin) = stdin {
            // A command that does not read its input gets a broken pipe: not our error.
            scope.spawn(move || {
                let _ = stdin.write_all(input);
            });
        }
        scope.spawn(move || {
            let mut out = Vec::new();
            if let Some(stdout) = stdout {
                use std::io::Read;
                let _ = stdout.take(MAX_SAMPLING_OUTPUT).read_to_end(&mut out);
            }
            let _ = done.send(out);
        });
        let out = finished.recv_timeout(limit).ok();
        // Its output ended (or was cut): the command must also have exited by the
        // deadline, else it has not answered (one that closed its stdout and goes on
        // running would hold this thread, and the writer, for as long as it likes).
        let exited = out.is_some() && exits_by(&mut child, deadline);
        if !exited {
            // Ends the writer and the reader too: the pipes' other ends go with the group.
            let _ = mcp_io::ending::signal_group(child.id(), mcp_io::ending::Signal::Kill);
            let _ = child.kill();
        }
        out.filter(|_| exited)
    });
    let status = child.wait().map_err(|e| e.to_string())?;
    let Some(out) = out else {
        return Err(format!(
            "the sampling command did not answer within {}s (killed)",
            limit.as_secs_f64()
        ));
    };
    if !status.success() {
        return Err(format!("the sampling command exited with {status}"));
    }
    serde_json::from_slice(&out)
        .map_err(|e| format!("the sampling command's output is not a CreateMessageResult: {e}"))
}

/// Whether `child` exits by `deadline` (its status is then kept for `wait`).
fn exits_by(child: &mut std::process::Child, deadline: std::time::Instant) -> bool {
    loop {
        match child.try_wait() {
            Ok(Some(_)) => return true,
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5));
            }
            _ => return false,
        }
    }
}

/// One log message as a line for stderr, control characters made visible.
pub fn log_line(server: &str, message: &LogMessage) -> String {
    let data = message.data.get();
    let text = serde_json::from_str::<String>(data).unwrap_or_else(|_| data.to_owned());
    let logger = message
        .logger
        .as_deref()
        .map(|l| format!(" {}:", crate::terminal::one_line(l)))
        .unwrap_or_default();
    // A message of several lines keeps them, each after the first indented: none can
    // pass for a log line of its own.
    let text = clean(&text).replace('\n', "\n    ");
    format!("[{server}] {}{logger} {text}", message.level)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_sampling_command_is_fed_while_it_is_read_and_killed_at_its_limit() {
        use std::time::Instant;
        // `cat` answers before it has read everything: a command fed first and read
        // after would block both sides on full pipes.
        let big = vec![b'x'; 4 << 20];
        let started = Instant::now();
        let err = sample("cat", &big, Duration::from_secs(30)).unwrap_err();
        assert!(err.contains("not a CreateMessageResult"), "{err}");
        assert!(started.elapsed() < Duration::from_secs(20));
        // A command that never answers, and what it started in the background (which
        // holds its stdout open), are killed at the limit.
        let started = Instant::now();
        let err = sample("sleep 30 & sleep 30", b"{}", Duration::from_millis(300)).unwrap_err();
        assert!(err.contains("did not answer within 0.3s"), "{err}");
        assert!(started.elapsed() < Duration::from_secs(10));
        // An answer.
        let answer = r#"{"role":"assistant","content":{"type":"text","text":"hi"},"model":"m"}"#;
        let ok = sample(
            &format!("cat >/dev/null; echo '{answer}'"),
            b"{}",
            Duration::from_secs(30),
        );
        assert!(ok.is_ok(), "{ok:?}");
    }

    #[test]
    fn roots_become_file_uris() {
        let dir = std::env::temp_dir().join("mcp cli root");
        std::fs::create_dir_all(&dir).unwrap();
        let uri = file_uri(dir.to_str().unwrap()).unwrap();
        assert!(uri.starts_with("file:///"), "{uri}");
        assert!(uri.ends_with("mcp%20cli%20root"), "{uri}");
        assert!(file_uri("/no/such/dir/at/all").is_err());
        let kept = roots(&["file:///x".to_owned()]).unwrap();
        assert_eq!(kept[0].uri, "file:///x");
    }

    #[test]
    fn log_lines_are_cleaned() {
        let message: LogMessage = serde_json::from_str(
            r#"{"level":"warning","logger":"db","data":"disk \u001b[31mfull"}"#,
        )
        .unwrap();
        assert_eq!(log_line("s", &message), "[s] warning db: disk ^[[31mfull");
        let forging: LogMessage = serde_json::from_str(
            r#"{"level":"info","logger":"a\nb","data":"one\n[s] emergency two"}"#,
        )
        .unwrap();
        assert_eq!(
            log_line("s", &forging),
            "[s] info a^Jb: one\n    [s] emergency two"
        );
    }
}

#[cfg(all(test, unix))]
mod sampling_deadline {
    use super::*;
    use std::time::Instant;

    /// docs/cli.md: the sampling command "is killed (with whatever it started) when it has
    /// not answered within the request timeout". One that closes its stdout without
    /// answering and goes on running has not answered: the CLI must not wait for it past
    /// the limit.
    #[test]
    fn a_sampling_command_that_closes_its_output_and_lingers_is_killed_at_its_limit() {
        let started = Instant::now();
        let result = sample("exec >&-; sleep 10", b"{}", Duration::from_millis(300));
        let took = started.elapsed();
        assert!(result.is_err(), "{result:?}");
        assert!(
            took < Duration::from_secs(3),
            "waited {took:?} for a 0.3 s limit"
        );
    }
}
