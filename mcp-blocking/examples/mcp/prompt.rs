//! Answering the server's requests for input from a person at a terminal: a line-based
//! form on stderr/stdin, validated against the requested schema, reviewed before sending.
//! What the server wrote (message, URL, titles, descriptions, defaults) is shown
//! [cleaned](clean).

use std::io::{self, BufRead, Write};

use mcp_blocking::mcp_proto::client::{InputAnswer, InputHandler, InputRequest};
use mcp_blocking::mcp_proto::jsonrpc::{ErrorObject, codes};
use mcp_blocking::mcp_proto::model::ElicitationParams;
use serde_json::{Map, Value, json};

use crate::terminal::{clean, one_line};

/// Asks the person at the terminal.
pub struct TerminalForm {
    server: String,
}

impl TerminalForm {
    pub fn new(server: &str) -> Self {
        TerminalForm {
            server: server.to_owned(),
        }
    }
}

impl InputHandler for TerminalForm {
    fn answer(&mut self, request: &InputRequest) -> InputAnswer {
        match request {
            InputRequest::Elicitation(p) if p.is_url_mode() => url(&self.server, p),
            InputRequest::Elicitation(p) => form(&self.server, p),
            InputRequest::Roots => InputAnswer::Result(json!({"roots": []})),
            _ => InputAnswer::Error(ErrorObject::new(
                codes::INVALID_REQUEST,
                "this client does not answer sampling requests",
            )),
        }
    }
}

/// Shows one line of the form on stderr.
fn say(line: &str) {
    eprintln!("{}", clean(line));
}

/// One line from stdin, `None` at end of input.
fn ask(question: &str) -> Option<String> {
    eprint!("{}", clean(question));
    let _ = io::stderr().flush();
    let mut line = String::new();
    match io::stdin().lock().read_line(&mut line) {
        Ok(0) | Err(_) => {
            eprintln!();
            None
        }
        Ok(_) => Some(line.trim().to_owned()),
    }
}

/// Free text of several lines (a message, a description), each line after the first
/// indented: none can pass for a line of the prompt's own.
fn indented(text: &str) -> String {
    clean(text).replace('\n', "\n    ")
}

fn url(server: &str, p: &ElicitationParams) -> InputAnswer {
    say(&format!(
        "\n[{server}] asks you to open a URL: {}",
        indented(&p.message)
    ));
    say(&format!(
        "  {}",
        one_line(p.url.as_deref().unwrap_or("(no url given)"))
    ));
    eprintln!("  (mcp does not open it; open it yourself if you trust it)");
    match ask("  Accept? [y/N/c]: ").as_deref() {
        Some("y" | "Y" | "yes") => {
            InputAnswer::elicit(mcp_blocking::mcp_proto::model::ElicitResult {
                action: mcp_blocking::mcp_proto::model::ElicitAction::Accept,
                content: None,
            })
        }
        Some("c" | "C") | None => InputAnswer::cancel(),
        _ => InputAnswer::decline(),
    }
}

fn form(server: &str, p: &ElicitationParams) -> InputAnswer {
    say(&format!("\n[{server}] asks: {}", indented(&p.message)));
    let schema: Value = p
        .requested_schema
        .as_deref()
        .and_then(|s| serde_json::from_str(s.get()).ok())
        .unwrap_or(Value::Null);
    let empty = Map::new();
    let props = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut content = Map::new();
    // Required fields first, in the order `required` lists them; then the rest.
    let mut fields: Vec<(&String, &Value)> = props.iter().collect();
    fields.sort_by_key(|(n, _)| required.iter().position(|r| r == n).unwrap_or(usize::MAX));
    for (name, prop) in fields {
        let is_required = required.contains(&name.as_str());
        // Titles, names, values and defaults are one line each: no line break of
        // theirs can forge the form's own lines (an answer, the question to send it).
        let label = one_line(prop.get("title").and_then(Value::as_str).unwrap_or(name));
        if let Some(d) = prop.get("description").and_then(Value::as_str) {
            say(&format!("  {}", indented(d)));
        }
        let choices = choices(prop);
        if !choices.is_empty() {
            for (i, (value, title)) in choices.iter().enumerate() {
                say(&format!(
                    "    {}) {}{}",
                    i + 1,
                    one_line(title),
                    shown_value(value, title)
                ));
            }
        }
        let question = format!(
            "  {label}{}{}{}: ",
            if is_required { " *" } else { "" },
            hint(prop),
            prop.get("default")
                .map(|d| format!(" [default: {}]", one_line(&plain(d))))
                .unwrap_or_default()
        );
        loop {
            let Some(text) = ask(&question) else {
                return InputAnswer::cancel();
            };
            if text.is_empty() {
                if let Some(d) = prop.get("default") {
                    content.insert(name.clone(), d.clone());
                    break;
                }
                if is_required {
                    eprintln!("    this field is required");
                    continue;
                }
                break;
            }
            match parse_field(prop, &choices, &text) {
                Ok(v) => {
                    content.insert(name.clone(), v);
                    break;
                }
                Err(msg) => say(&format!("    {msg}")),
            }
        }
    }
    say(&format!("  answer: {}", Value::Object(content.clone())));
    loop {
        match ask("  Send it? [Y]es / [n]o (decline) / [c]ancel: ").as_deref() {
            Some("" | "y" | "Y" | "yes") => return InputAnswer::accept(content),
            Some("n" | "N" | "no") => return InputAnswer::decline(),
            Some("c" | "C" | "cancel") | None => return InputAnswer::cancel(),
            Some(_) => {}
        }
    }
}

fn shown_value(value: &Value, title: &str) -> String {
    let v = plain(value);
    if v == title {
        String::new()
    } else {
        format!(" ({})", one_line(&v))
    }
}

fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn hint(prop: &Value) -> String {
    match prop.get("type").and_then(Value::as_str) {
        Some("boolean") => " (yes/no)".into(),
        Some("integer") => " (integer)".into(),
        Some("number") => " (number)".into(),
        Some("array") => " (numbers or values, comma-separated)".into(),
        _ => match prop.get("format").and_then(Value::as_str) {
            Some(f) => format!(" ({f})"),
            None => String::new(),
        },
    }
}

/// The allowed values with their titles: `enum` (+ legacy `enumNames`), `oneOf`/`anyOf`
/// of `{const, title}`, or the same under `items` for multi-select.
fn choices(prop: &Value) -> Vec<(Value, String)> {
    let source = if prop.get("type").and_then(Value::as_str) == Some("array") {
        prop.get("items").unwrap_or(&Value::Null)
    } else {
        prop
    };
    if let Some(values) = source.get("enum").and_then(Value::as_array) {
        let names = source.get("enumNames").and_then(Value::as_array);
        return values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let title = names
                    .and_then(|n| n.get(i))
                    .and_then(Value::as_str)
                    .map_or_else(|| plain(v), str::to_owned);
                (v.clone(), title)
            })
            .collect();
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(options) = source.get(key).and_then(Value::as_array) {
            return options
                .iter()
                .filter_map(|o| {
                    let v = o.get("const")?.clone();
                    let title = o
                        .get("title")
                        .and_then(Value::as_str)
                        .map_or_else(|| plain(&v), str::to_owned);
                    Some((v, title))
                })
                .collect();
        }
    }
    Vec::new()
}

fn pick(choices: &[(Value, String)], text: &str) -> Result<Value, String> {
    if let Some((v, _)) = choices.iter().find(|(v, t)| plain(v) == text || t == text) {
        return Ok(v.clone());
    }
    if let Ok(i) = text.parse::<usize>()
        && (1..=choices.len()).contains(&i)
    {
        return Ok(choices[i - 1].0.clone());
    }
    Err(format!("choose one of 1–{}", choices.len()))
}

/// Validates one answer against its property schema.
fn parse_field(prop: &Value, choices: &[(Value, String)], text: &str) -> Result<Value, String> {
    let num = |k: &str| prop.get(k).and_then(Value::as_f64);
    match prop.get("type").and_then(Value::as_str) {
        Some("array") => {
            let picked: Vec<Value> = text
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(|s| {
                    if choices.is_empty() {
                        Ok(Value::String(s.to_owned()))
                    } else {
                        pick(choices, s)
                    }
                })
                .collect::<Result<_, _>>()?;
            let n = picked.len() as f64;
            if num("minItems").is_some_and(|m| n < m) || num("maxItems").is_some_and(|m| n > m) {
                return Err("wrong number of choices".into());
            }
            Ok(Value::Array(picked))
        }
        _ if !choices.is_empty() => pick(choices, text),
        Some("boolean") => match text.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" | "1" => Ok(Value::Bool(true)),
            "n" | "no" | "false" | "0" => Ok(Value::Bool(false)),
            _ => Err("answer yes or no".into()),
        },
        Some(kind @ ("number" | "integer")) => {
            let v: f64 = text
                .parse()
                .ok()
                .filter(|v: &f64| v.is_finite())
                .ok_or_else(|| format!("not a {kind}"))?;
            if num("minimum").is_some_and(|m| v < m) || num("maximum").is_some_and(|m| v > m) {
                return Err("out of range".into());
            }
            if kind == "integer" {
                let i: i64 = text.parse().map_err(|_| "not an integer".to_owned())?;
                Ok(json!(i))
            } else {
                Ok(json!(v))
            }
        }
        _ => {
            let n = text.chars().count() as f64;
            if num("minLength").is_some_and(|m| n < m) {
                return Err("too short".into());
            }
            if num("maxLength").is_some_and(|m| n > m) {
                return Err("too long".into());
            }
            let ok = match prop.get("format").and_then(Value::as_str) {
                Some("email") => text.contains('@') && !text.starts_with('@'),
                Some("uri") => text.contains(':'),
                Some("date") => is_date(text),
                Some("date-time") => {
                    text.get(..10).is_some_and(is_date)
                        && text.get(10..).is_some_and(|t| t.starts_with('T'))
                }
                _ => true,
            };
            if !ok {
                return Err("not in the requested format".into());
            }
            Ok(Value::String(text.to_owned()))
        }
    }
}

fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_validated() {
        let b = json!({"type": "boolean"});
        assert_eq!(parse_field(&b, &[], "yes"), Ok(json!(true)));
        assert!(parse_field(&b, &[], "maybe").is_err());
        let n = json!({"type": "integer", "minimum": 1, "maximum": 5});
        assert_eq!(parse_field(&n, &[], "3"), Ok(json!(3)));
        assert!(parse_field(&n, &[], "9").is_err());
        assert!(parse_field(&n, &[], "2.5").is_err());
        let e = json!({"type": "string", "enum": ["red", "green"]});
        let c = choices(&e);
        assert_eq!(parse_field(&e, &c, "2"), Ok(json!("green")));
        assert!(parse_field(&e, &c, "blue").is_err());
        let d = json!({"type": "string", "format": "date"});
        assert!(parse_field(&d, &[], "2026-07-28").is_ok());
        assert!(parse_field(&d, &[], "July").is_err());
    }

    #[test]
    fn a_servers_text_cannot_forge_the_forms_lines() {
        // A message keeps its lines, each after the first indented.
        let forged = "Name?\n[other] asks you to open a URL: x";
        assert_eq!(
            indented(forged),
            "Name?\n    [other] asks you to open a URL: x"
        );
        // A value is one line.
        let value = json!("allow\n  Send it? [Y]es");
        assert_eq!(shown_value(&value, "Deny"), " (allow^J  Send it? [Y]es)");
    }
}
