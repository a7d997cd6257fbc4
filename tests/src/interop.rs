//! Real servers built with other SDKs, installed by `tests/interop/setup.sh`.
//!
//! A test that needs a fixture calls [`fixture`]: when the packages are missing it skips
//! (prints why and returns `None`) on a developer machine, and fails under `CI`.

use std::path::{Path, PathBuf};

use mcp_blocking::StdioCommand;
use mcp_proto::client::{InputAnswer, InputHandler, InputRequest};
use serde_json::{Map, Value};

/// `tests/interop/`.
pub fn interop_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("interop")
}

/// The servers available as fixtures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fixture {
    /// TypeScript SDK v2 (`srv.mjs`), both eras.
    TypeScript,
    /// Python SDK 2.3 (`srv.py`), both eras.
    Python,
    /// `@modelcontextprotocol/server-everything`, legacy era only.
    Everything,
}

fn require(path: &Path, what: &str) -> bool {
    if path.exists() {
        return true;
    }
    let msg = format!(
        "interop fixture missing: {what} ({}); run `bash tests/interop/setup.sh`",
        path.display()
    );
    if std::env::var_os("CI").is_some() {
        panic!("{msg}");
    }
    eprintln!("skipping: {msg}");
    false
}

/// The stdio command that starts `f`, or `None` (skip) when it is not installed.
pub fn fixture(f: Fixture) -> Option<StdioCommand> {
    let dir = interop_dir();
    match f {
        Fixture::TypeScript => {
            let marker = dir.join("node_modules/@modelcontextprotocol/server/package.json");
            require(&marker, "TypeScript SDK").then(|| {
                StdioCommand::new("node")
                    .arg(dir.join("srv.mjs"))
                    .arg("stdio")
                    .pass_env("PATH")
            })
        }
        Fixture::Python => {
            let pydeps = dir.join("pydeps");
            require(&pydeps.join("mcp"), "Python SDK").then(|| {
                StdioCommand::new("python3")
                    .arg(dir.join("srv.py"))
                    .arg("stdio")
                    .env("PYTHONPATH", pydeps)
                    .pass_env("PATH")
                    .pass_env("HOME")
            })
        }
        Fixture::Everything => {
            let entry =
                dir.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
            require(&entry, "server-everything").then(|| {
                StdioCommand::new("node")
                    .arg(entry)
                    .arg("stdio")
                    .pass_env("PATH")
            })
        }
    }
}

/// Accepts every form, filling each schema property: its default when there is one,
/// otherwise a plain value of its type (`true`, `1`, `"interop"`).
#[derive(Debug, Default)]
pub struct FillForms {
    /// Every request seen.
    pub seen: Vec<String>,
}

impl InputHandler for FillForms {
    fn answer(&mut self, request: &InputRequest) -> InputAnswer {
        let InputRequest::Elicitation(p) = request else {
            return InputAnswer::Error(mcp_proto::ErrorObject::new(-32600, "not supported"));
        };
        self.seen.push(p.message.clone());
        let schema: Value = p
            .requested_schema
            .as_ref()
            .and_then(|s| serde_json::from_str(s.get()).ok())
            .unwrap_or(Value::Null);
        let mut content = Map::new();
        if let Some(props) = schema.get("properties").and_then(Value::as_object) {
            for (name, prop) in props {
                let value = prop.get("default").cloned().unwrap_or_else(|| {
                    match prop.get("type").and_then(Value::as_str) {
                        Some("boolean") => Value::Bool(true),
                        Some("integer") | Some("number") => Value::from(1),
                        _ => Value::String("interop".into()),
                    }
                });
                content.insert(name.clone(), value);
            }
        }
        InputAnswer::accept(content)
    }
}
