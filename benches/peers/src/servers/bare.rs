//! The bare echo: read a JSON-RPC request with `serde_json`, answer
//! `{"content":[{"type":"text","text":…}]}` with the same id. No MCP logic, no
//! handshake. Over stdio, one thread on locked stdio, one message per line; over HTTP,
//! a keep-alive HTTP/1.1 server with one thread per connection and `Content-Length`
//! bodies.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};

use mcp_peers::spawn::read_head;
use serde_json::{Value, json};

/// The answer to one request, serialised into `out` (cleared first).
fn answer(request: &[u8], out: &mut Vec<u8>) -> io::Result<()> {
    let request: Value = serde_json::from_slice(request)?;
    let text = request["params"]["arguments"]["text"]
        .as_str()
        .unwrap_or_default();
    let response = json!({
        "jsonrpc": "2.0",
        "id": request["id"],
        "result": {"content": [{"type": "text", "text": text}]},
    });
    out.clear();
    serde_json::to_writer(&mut *out, &response)?;
    Ok(())
}

/// Line-delimited JSON-RPC on stdin/stdout until stdin closes.
pub fn serve_stdio() -> io::Result<()> {
    let mut input = io::stdin().lock();
    let mut output = io::stdout().lock();
    let (mut line, mut out) = (Vec::new(), Vec::new());
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            return Ok(());
        }
        answer(&line, &mut out)?;
        out.push(b'\n');
        output.write_all(&out)?;
        output.flush()?;
    }
}

/// JSON-RPC over HTTP/1.1 on 127.0.0.1 until stdin closes.
pub fn serve_http() -> io::Result<()> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    super::announce(&format!("http://{}/mcp", listener.local_addr()?))?;
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                if let Err(e) = connection(stream) {
                    eprintln!("bare http server: {e}");
                }
            });
        }
    });
    super::wait_for_stdin_eof()
}

fn connection(stream: TcpStream) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let mut output = stream.try_clone()?;
    let mut input = BufReader::new(stream);
    let (mut line, mut body, mut json, mut out) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    while let Some(length) = read_head(&mut input, &mut line)? {
        body.resize(length, 0);
        input.read_exact(&mut body)?;
        answer(&body, &mut json)?;
        out.clear();
        write!(
            out,
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            json.len()
        )?;
        out.extend_from_slice(&json);
        output.write_all(&out)?;
    }
    Ok(())
}
