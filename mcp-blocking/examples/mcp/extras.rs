//! What the CLI offers a server besides forms: roots (`--root`), sampling through a
//! command the user configures (`--sampling-command`), and the server's log messages on
//! stderr (`--log-level`).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use mcp_blocking::mcp_proto::client::{
    InputAnswer, InputHandler, InputRequest, LogMessage, Root, SamplingResult,
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

/// Answers sampling requests with a command and passes everything else on.
pub struct WithSampling<H> {
    inner: H,
    command: Option<String>,
}

impl<H> WithSampling<H> {
    pub fn new(inner: H, command: Option<String>) -> Self {
        WithSampling { inner, command }
    }
}

impl<H: InputHandler> InputHandler for WithSampling<H> {
    fn answer(&mut self, request: &InputRequest) -> InputAnswer {
        match (request, &self.command) {
            (InputRequest::Sampling(params), Some(command)) => {
                match sample(command, &serde_json::to_vec(params).unwrap_or_default()) {
                    Ok(result) => InputAnswer::sampled(result),
                    Err(why) => {
                        eprintln!("sampling command failed: {}", clean(&why));
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

/// Runs `command` through the shell with `input` on its stdin; its stdout is the
/// `CreateMessageResult`.
fn sample(command: &str, input: &[u8]) -> Result<SamplingResult, String> {
    let mut child = Command::new("/bin/sh")
        .arg("-c")
        .arg(command)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("cannot start the sampling command: {e}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(input);
    }
    let mut out = Vec::new();
    if let Some(stdout) = child.stdout.take() {
        use std::io::Read;
        let _ = stdout.take(MAX_SAMPLING_OUTPUT).read_to_end(&mut out);
    }
    let status = child.wait().map_err(|e| e.to_string())?;
    if !status.success() {
        return Err(format!("the sampling command exited with {status}"));
    }
    serde_json::from_slice(&out)
        .map_err(|e| format!("the sampling command's output is not a CreateMessageResult: {e}"))
}

/// One log message as a line for stderr, control characters made visible.
pub fn log_line(server: &str, message: &LogMessage) -> String {
    let data = message.data.get();
    let text = serde_json::from_str::<String>(data).unwrap_or_else(|_| data.to_owned());
    let logger = message
        .logger
        .as_deref()
        .map(|l| format!(" {l}:"))
        .unwrap_or_default();
    clean(&format!("[{server}] {}{logger} {text}", message.level)).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }
}
