//! A throwaway `redis-server` for the tests of several server processes sharing state:
//! loopback only, a free port, no persistence, stopped by its process id when dropped.
//! Like the interop fixtures, a missing `redis-server` skips the test on a developer
//! machine and fails it under `CI` (`.ci/run` installs the Debian package).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// A running `redis-server`.
pub struct RedisServer {
    child: Child,
    port: u16,
}

impl std::fmt::Debug for RedisServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisServer")
            .field("pid", &self.child.id())
            .field("port", &self.port)
            .finish()
    }
}

fn installed() -> bool {
    Command::new("redis-server")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn answers_ping(port: u16) -> bool {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_millis(200)));
    let mut buf = [0u8; 16];
    s.write_all(b"PING\r\n").is_ok() && s.read(&mut buf).is_ok_and(|n| buf[..n] == *b"+PONG\r\n")
}

impl RedisServer {
    /// Starts one, or `None` (skip) when `redis-server` is not installed.
    ///
    /// # Panics
    /// Under `CI` when it is not installed, or when it does not come up.
    pub fn start() -> Option<RedisServer> {
        if !installed() {
            let msg = "redis-server is not installed (Debian: apt-get install redis-server)";
            assert!(std::env::var_os("CI").is_none(), "{msg}");
            eprintln!("skipping: {msg}");
            return None;
        }
        // The port is free when picked; another process may take it before redis binds
        // it, so a server that does not come up is tried again on another.
        for _ in 0..3 {
            let port = TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("a free loopback port")
                .port();
            let mut child = Command::new("redis-server")
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start redis-server");
            let deadline = Instant::now() + Duration::from_secs(5);
            while Instant::now() < deadline {
                if answers_ping(port) {
                    return Some(RedisServer { child, port });
                }
                if child.try_wait().ok().flatten().is_some() {
                    break;
                }
                thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("redis-server did not come up");
    }

    /// `redis://127.0.0.1:PORT`.
    #[must_use]
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Its process id.
    #[must_use]
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
