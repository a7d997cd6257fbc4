//! A minimal blocking Redis client: one `std::net::TcpStream`, RESP2, timeouts on
//! connecting, reading and writing, and an overall deadline per reply so that a server
//! dripping bytes cannot hold a caller. A connection that failed (IO error, timeout,
//! malformed reply) is dropped and the next command connects again; a command is never
//! resent by the client (whether it ran is unknown, and `SET NX` must not run twice).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use mcp_proto::held::give_back;

use crate::resp::{Reply, ReplyLimits, ReplyScanner, RespError, encode_command, parse_reply};

/// How a [`RedisClient`] talks to its server.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RedisOptions {
    /// How long connecting may take. Default 2 s.
    pub connect_timeout: Duration,
    /// How long one command may take, from sending it to its complete reply.
    /// Default 2 s.
    pub command_timeout: Duration,
    /// Bounds on every reply.
    pub limits: ReplyLimits,
}

impl Default for RedisOptions {
    fn default() -> Self {
        RedisOptions {
            connect_timeout: Duration::from_secs(2),
            command_timeout: Duration::from_secs(2),
            limits: ReplyLimits::default(),
        }
    }
}

/// What went wrong talking to Redis.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RedisError {
    /// The URL is not `redis://HOST:PORT[/DB]`: the URL, any user and password in it
    /// replaced by `[redacted]`.
    #[error("not a redis://HOST:PORT[/DB] URL: {0}")]
    BadUrl(String),
    /// Connecting, reading or writing failed (timeouts included).
    #[error("redis connection: {0}")]
    Io(#[from] std::io::Error),
    /// The command took longer than [`RedisOptions::command_timeout`].
    #[error("redis did not answer within {0:?}")]
    Timeout(Duration),
    /// The server closed the connection before its reply was complete.
    #[error("redis closed the connection")]
    Closed,
    /// The reply was not acceptable RESP2.
    #[error("redis reply: {0}")]
    Protocol(#[from] RespError),
    /// The server answered with an error.
    #[error("redis error: {0}")]
    Server(String),
    /// A well-formed reply of a type the command does not return.
    #[error("unexpected redis reply to {0}")]
    Unexpected(&'static str),
}

/// A blocking connection to one Redis server, reconnected on demand.
#[derive(Debug)]
pub struct RedisClient {
    addrs: Vec<SocketAddr>,
    db: u32,
    options: RedisOptions,
    stream: Option<TcpStream>,
    buf: Vec<u8>,
}

/// `url` as an error may show it: the user and password of a `scheme://user:pass@host`
/// (the usual form of a Redis URL with credentials) replaced by `[redacted]`.
fn shown_url(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..end].rfind('@') {
        Some(at) if !scheme.is_empty() => format!("{scheme}://[redacted]{}", &rest[at..]),
        _ => url.to_owned(),
    }
}

/// Splits `redis://HOST:PORT[/DB]`.
fn parse_url(url: &str) -> Result<(String, u32), RedisError> {
    let bad = || RedisError::BadUrl(shown_url(url));
    let rest = url.strip_prefix("redis://").ok_or_else(bad)?;
    let (host, db) = match rest.split_once('/') {
        Some((h, "")) => (h, 0),
        Some((h, d)) => (h, d.parse().map_err(|_| bad())?),
        None => (rest, 0),
    };
    let port_ok = host
        .rsplit_once(':')
        .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok());
    if host.contains('@') || !port_ok {
        return Err(bad());
    }
    Ok((host.to_owned(), db))
}

impl RedisClient {
    /// A client of the server at `redis://HOST:PORT[/DB]` (no credentials in the URL).
    /// Connects at once, so that a wrong address is found at start-up.
    ///
    /// # Errors
    /// [`RedisError::BadUrl`], or the first connection failing.
    pub fn connect(url: &str, options: RedisOptions) -> Result<RedisClient, RedisError> {
        let (host, db) = parse_url(url)?;
        let addrs: Vec<SocketAddr> = host.to_socket_addrs()?.collect();
        if addrs.is_empty() {
            return Err(RedisError::BadUrl(shown_url(url)));
        }
        let mut client = RedisClient {
            addrs,
            db,
            options,
            stream: None,
            buf: Vec::new(),
        };
        match client.command(&[b"PING"])? {
            Reply::Status(s) if s == "PONG" => Ok(client),
            _ => Err(RedisError::Unexpected("PING")),
        }
    }

    fn open(&mut self) -> Result<(), RedisError> {
        let mut last = None;
        for addr in &self.addrs {
            match TcpStream::connect_timeout(addr, self.options.connect_timeout) {
                Ok(stream) => {
                    stream.set_nodelay(true)?;
                    self.stream = Some(stream);
                    self.buf.clear();
                    if self.db != 0 {
                        let db = self.db.to_string();
                        match self.exchange(&[&[b"SELECT", db.as_bytes()]])?.pop() {
                            Some(Reply::Status(_)) => {}
                            _ => return Err(RedisError::Unexpected("SELECT")),
                        }
                    }
                    return Ok(());
                }
                Err(e) => last = Some(e),
            }
        }
        Err(last.map_or(RedisError::Closed, RedisError::Io))
    }

    /// Runs one command; its reply (an error reply is [`RedisError::Server`]).
    ///
    /// # Errors
    /// [`RedisError`]; after any but `Server`, the connection is dropped.
    pub fn command(&mut self, args: &[&[u8]]) -> Result<Reply, RedisError> {
        let mut replies = self.pipeline(&[args])?;
        let reply = replies.pop().ok_or(RedisError::Unexpected("command"))?;
        match reply {
            Reply::Error(e) => Err(RedisError::Server(e)),
            other => Ok(other),
        }
    }

    /// Sends several commands at once and reads their replies, in order (error replies
    /// included, as [`Reply::Error`]).
    ///
    /// # Errors
    /// [`RedisError`]; the connection is then dropped.
    pub fn pipeline(&mut self, commands: &[&[&[u8]]]) -> Result<Vec<Reply>, RedisError> {
        if self.stream.is_none() {
            self.open()?;
        }
        let result = self.exchange(commands);
        if result.is_err() {
            self.stream = None;
            self.buf.clear();
        }
        result
    }

    fn exchange(&mut self, commands: &[&[&[u8]]]) -> Result<Vec<Reply>, RedisError> {
        let deadline = Instant::now() + self.options.command_timeout;
        let mut out = Vec::new();
        for args in commands {
            encode_command(&mut out, args);
        }
        let stream = self.stream.as_mut().ok_or(RedisError::Closed)?;
        // Each write waits at most what is left of the deadline: a server reading slowly
        // must not stretch the command past it.
        let mut sent = 0;
        while sent < out.len() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(RedisError::Timeout(self.options.command_timeout));
            }
            stream.set_write_timeout(Some(left))?;
            let timeout = self.options.command_timeout;
            sent += moved(stream.write(&out[sent..]), timeout)?;
        }
        let mut replies = Vec::with_capacity(commands.len());
        let mut chunk = [0u8; 16 * 1024];
        // Where the reply being read starts in the buffer: the bound is on the whole
        // pipeline, and the bytes of the replies before it go at the end, at once.
        let mut start = 0usize;
        // Each reply's end is found by scanning each byte once as it arrives, then the
        // reply is parsed once.
        let mut scanner = ReplyScanner::new();
        while replies.len() < commands.len() {
            let end = scanner.scan(&self.buf[start..], &self.options.limits)?;
            let size = start.saturating_add(end.unwrap_or(self.buf.len() - start));
            if size > self.options.limits.max_reply_bytes {
                return Err(RedisError::Protocol(RespError::TooLarge {
                    what: "reply",
                    size: size as u64,
                    limit: self.options.limits.max_reply_bytes,
                }));
            }
            if let Some(end) = end {
                let bytes = &self.buf[start..start + end];
                let Some((reply, _)) = parse_reply(bytes, &self.options.limits)? else {
                    return Err(RedisError::Protocol(RespError::Malformed(
                        "reply cut short",
                    )));
                };
                start += end;
                scanner = ReplyScanner::new();
                replies.push(reply);
                continue;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(RedisError::Timeout(self.options.command_timeout));
            }
            stream.set_read_timeout(Some(left))?;
            let n = moved(stream.read(&mut chunk), self.options.command_timeout)?;
            self.buf.extend_from_slice(&chunk[..n]);
        }
        self.buf.drain(..start);
        // A large reply read, its memory goes back: the connection does not keep the
        // buffer's high-water mark (up to `max_reply_bytes`) for as long as it lives.
        give_back(&mut self.buf);
        Ok(replies)
    }
}

/// What one read or write of a command moved: the bytes (0 when interrupted, to try
/// again), or the failure it means for the command (the connection closed, the timeout
/// `timeout` passed, another error).
fn moved(result: std::io::Result<usize>, timeout: Duration) -> Result<usize, RedisError> {
    match result {
        Ok(0) => Err(RedisError::Closed),
        Ok(n) => Ok(n),
        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => Ok(0),
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) =>
        {
            Err(RedisError::Timeout(timeout))
        }
        Err(e) => Err(RedisError::Io(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;
    use std::thread;

    #[test]
    fn urls_name_a_host_port_and_database() {
        assert_eq!(
            parse_url("redis://127.0.0.1:6379").unwrap(),
            ("127.0.0.1:6379".into(), 0)
        );
        assert_eq!(
            parse_url("redis://localhost:1/3").unwrap(),
            ("localhost:1".into(), 3)
        );
        // The common URL with credentials is refused without showing them.
        let e = parse_url("redis://user:hunter2@x:1/0")
            .unwrap_err()
            .to_string();
        assert!(!e.contains("hunter2") && !e.contains("user"), "{e}");
        assert!(e.contains("@x:1/0"), "{e}");
        let e = parse_url("redis://:hunter2@x:1").unwrap_err().to_string();
        assert!(!e.contains("hunter2"), "{e}");
        for bad in [
            "http://x:1",
            "redis://x",
            "redis://:1",
            "redis://u:p@x:1",
            "redis://x:1/a",
            "redis://x:99999",
        ] {
            assert!(parse_url(bad).is_err(), "{bad}");
        }
    }

    /// A fake server answering each connection's first command with `reply`.
    fn fake(reply: &'static [u8], then_hold: bool) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        thread::spawn(move || {
            if let Ok((mut s, _)) = listener.accept() {
                let mut buf = [0u8; 64];
                let _ = s.read(&mut buf);
                let _ = s.write_all(reply);
                if then_hold {
                    thread::sleep(Duration::from_secs(3));
                }
            }
        });
        format!("redis://{addr}")
    }

    fn quick() -> RedisOptions {
        RedisOptions {
            command_timeout: Duration::from_millis(300),
            ..RedisOptions::default()
        }
    }

    #[test]
    fn a_large_reply_leaves_no_large_buffer_behind() {
        // PING, then one 4 MiB bulk reply, then small ones on the same connection.
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        thread::spawn(move || {
            let Ok((mut s, _)) = listener.accept() else {
                return;
            };
            let mut big = format!("${}\r\n", 4 << 20).into_bytes();
            big.resize(big.len() + (4 << 20), b'x');
            big.extend_from_slice(b"\r\n");
            let replies: [&[u8]; 4] = [b"+PONG\r\n", &big, b"+OK\r\n", b"+OK\r\n"];
            for reply in replies {
                let mut buf = [0u8; 256];
                if s.read(&mut buf).unwrap_or(0) == 0 || s.write_all(reply).is_err() {
                    return;
                }
            }
        });
        let mut client = RedisClient::connect(&format!("redis://{addr}"), quick()).unwrap();
        let Reply::Bulk(Some(v)) = client.command(&[b"GET", b"k"]).unwrap() else {
            panic!()
        };
        assert_eq!(v.len(), 4 << 20);
        for _ in 0..2 {
            assert_eq!(
                client.command(&[b"PING"]).unwrap(),
                Reply::Status("OK".into())
            );
        }
        let kept = client.buf.capacity();
        assert!(kept <= 256 * 1024, "the connection keeps {kept} bytes");
    }

    #[test]
    fn a_reply_of_many_large_elements_is_read_in_linear_time() {
        // An event stream's replay: 60 events of 1 MiB each (within `max_reply_bytes`),
        // which the client reads 16 KiB at a time. Parsing it again from the start after
        // every read copied every complete element each time: some 2,000 parses of up
        // to 60 MiB, far beyond the deadline.
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let element = vec![b'x'; 1 << 20];
        thread::spawn(move || {
            let Ok((mut s, _)) = listener.accept() else {
                return;
            };
            let mut reply = b"*60\r\n".to_vec();
            for _ in 0..60 {
                reply.extend_from_slice(format!("${}\r\n", element.len()).as_bytes());
                reply.extend_from_slice(&element);
                reply.extend_from_slice(b"\r\n");
            }
            let replies: [&[u8]; 2] = [b"+PONG\r\n", &reply];
            for reply in replies {
                let mut buf = [0u8; 256];
                if s.read(&mut buf).unwrap_or(0) == 0 || s.write_all(reply).is_err() {
                    return;
                }
            }
        });
        let options = RedisOptions {
            command_timeout: Duration::from_secs(20),
            ..RedisOptions::default()
        };
        let mut client = RedisClient::connect(&format!("redis://{addr}"), options).unwrap();
        let started = Instant::now();
        let reply = client.command(&[b"LRANGE", b"k", b"0", b"-1"]);
        let took = started.elapsed();
        let Ok(Reply::Array(Some(items))) = reply else {
            panic!("{reply:?} after {took:?}")
        };
        assert_eq!(items.len(), 60);
        assert!(took < Duration::from_secs(5), "took {took:?}");
    }

    #[test]
    fn hostile_servers_give_typed_errors() {
        let e = RedisClient::connect(&fake(b"$99999999999\r\n", true), quick()).unwrap_err();
        assert!(
            matches!(e, RedisError::Protocol(RespError::TooLarge { .. })),
            "{e:?}"
        );
        let e = RedisClient::connect(&fake(b"%garbage\r\n", true), quick()).unwrap_err();
        assert!(
            matches!(e, RedisError::Protocol(RespError::Malformed(_))),
            "{e:?}"
        );
        // Half a reply, then silence: the command's deadline ends it.
        let e = RedisClient::connect(&fake(b"$10\r\nabc", true), quick()).unwrap_err();
        assert!(matches!(e, RedisError::Timeout(_)), "{e:?}");
        let e = RedisClient::connect(&fake(b"+PON", false), quick()).unwrap_err();
        assert!(matches!(e, RedisError::Closed), "{e:?}");
        let e = RedisClient::connect(&fake(b":1\r\n", false), quick()).unwrap_err();
        assert!(matches!(e, RedisError::Unexpected("PING")), "{e:?}");
    }
}
