//! Where the browser comes back after an authorization (RFC 8252, loopback redirect):
//! [`LoopbackCallback`], a listener on `127.0.0.1` and an ephemeral port, and
//! [`BrowserApproval`], the [`AuthorizationHandler`] built on it.
//!
//! The redirect URI must be known when the [`AuthConfig`](mcp_proto::auth::AuthConfig)
//! is built, so the listener is bound first:
//!
//! ```no_run
//! use mcp_io::callback::{BrowserApproval, LoopbackCallback};
//! use mcp_proto::auth::AuthConfig;
//!
//! let listener = LoopbackCallback::bind()?;
//! let auth = AuthConfig::new(listener.redirect_uri(), [0; 32]);
//! let approval = BrowserApproval::new(listener, |url| {
//!     eprintln!("Open this URL to authorize: {url}");
//! });
//! // http.auth = Some(auth); options.authorization_handler(approval)
//! # let _ = (auth, approval);
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! Nothing here prints: what the person is told is the `announce` callback's business.

use std::collections::VecDeque;
use std::fmt;
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::auth::AuthorizationHandler;

/// Largest request head the listener reads.
pub const MAX_CALLBACK_HEAD: usize = 8 * 1024;

/// How long one connection may take to send its request head.
pub const CALLBACK_READ_TIMEOUT: Duration = Duration::from_secs(5);

/// How long [`BrowserApproval`] waits for the browser by default: 5 minutes.
pub const DEFAULT_APPROVAL_WAIT: Duration = Duration::from_secs(300);

/// The path the browser is sent back to.
const CALLBACK_PATH: &str = "/callback";

const DONE_PAGE: &str = "<!doctype html><html><head><meta charset=\"utf-8\">\
<title>Authorization received</title></head><body>\
<p>Authorization received. You can close this window.</p></body></html>\n";

/// A listener on `127.0.0.1`, ephemeral port, for one authorization's callback at
/// `http://127.0.0.1:<port>/callback`.
#[derive(Debug)]
pub struct LoopbackCallback {
    listener: TcpListener,
    port: u16,
}

/// What one connection to the listener brought.
enum Arrival {
    /// The callback, with its query.
    Callback(String),
    /// Something else, answered; keep waiting.
    Other,
}

impl LoopbackCallback {
    /// Binds `127.0.0.1:0`.
    ///
    /// # Errors
    ///
    /// When no loopback port can be bound.
    pub fn bind() -> io::Result<Self> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        let port = listener.local_addr()?.port();
        Ok(LoopbackCallback { listener, port })
    }

    /// The port bound.
    #[must_use]
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `http://127.0.0.1:<port>/callback`: the redirect URI to register and send.
    #[must_use]
    pub fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}{CALLBACK_PATH}", self.port)
    }

    /// Accepts connections until a `GET /callback?…` arrives (within `timeout` overall),
    /// answers it with a page saying the window can be closed, and returns the full
    /// callback URL (`http://127.0.0.1:<port>/callback?<query>`). Other requests get
    /// `404` (or `400` when malformed) and the wait goes on. Each connection has
    /// [`CALLBACK_READ_TIMEOUT`] to send a head of at most [`MAX_CALLBACK_HEAD`] bytes;
    /// up to [`MAX_CALLBACK_CONNECTIONS`] are read at once, and one that has sent nothing
    /// for 100 ms gives its place to a newcomer, so connections that send nothing cannot
    /// hold the browser's back, and a burst of them cannot push it out.
    ///
    /// # Errors
    ///
    /// When nothing came in time, or the listener failed. The message never holds the
    /// query (it carries the authorization code).
    pub fn wait(&self, timeout: Duration) -> Result<String, String> {
        self.wait_for_state(None, timeout)
    }

    /// [`LoopbackCallback::wait`] for the authorization whose `state` is `state`: a
    /// callback with another `state` (stale, or forged by another local process or a web
    /// page) is answered `400` and the wait goes on, where it would have ended the wait
    /// and left the real callback unanswered.
    ///
    /// # Errors
    ///
    /// As [`LoopbackCallback::wait`].
    pub fn wait_for_state(&self, state: Option<&str>, timeout: Duration) -> Result<String, String> {
        let deadline = crate::clock::std_after(timeout);
        let failed = |e: io::Error| format!("the callback listener failed: {e}");
        self.listener.set_nonblocking(true).map_err(failed)?;
        let mut reading: VecDeque<Incoming> = VecDeque::new();
        loop {
            let now = Instant::now();
            if now >= deadline {
                return Err(format!(
                    "no authorization came back to {} within {} s",
                    self.redirect_uri(),
                    timeout.as_secs()
                ));
            }
            let mut busy = false;
            loop {
                // Full: room is made only by a connection that has sent nothing for
                // SILENT_GRACE; else the rest wait in the backlog. A browser's
                // connection, which sends its request at once, is never the one to go.
                if reading.len() >= MAX_CALLBACK_CONNECTIONS {
                    let silent = reading.iter().position(|c| {
                        c.head.is_empty() && now.saturating_duration_since(c.since) >= SILENT_GRACE
                    });
                    match silent {
                        Some(i) => drop(reading.remove(i)),
                        None => break,
                    }
                }
                match self.listener.accept() {
                    Ok((stream, _)) => {
                        busy = true;
                        if stream.set_nonblocking(true).is_err() {
                            continue;
                        }
                        reading.push_back(Incoming::new(stream, now));
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(failed(e)),
                }
            }
            let mut i = 0;
            while i < reading.len() {
                let head = match reading[i].read(now) {
                    HeadRead::More(progress) => {
                        busy |= progress;
                        i += 1;
                        continue;
                    }
                    HeadRead::Done(head) => head,
                };
                let Some(incoming) = reading.remove(i) else {
                    break;
                };
                busy = true;
                if let Ok(Arrival::Callback(query)) = serve(incoming.stream, head, state) {
                    return Ok(format!("{}?{query}", self.redirect_uri()));
                }
            }
            if !busy {
                std::thread::sleep(Duration::from_millis(10).min(deadline - now));
            }
        }
    }
}

/// How many connections the listener reads at once.
pub const MAX_CALLBACK_CONNECTIONS: usize = 32;

/// How long a connection may send nothing before it gives its place to a newcomer.
const SILENT_GRACE: Duration = Duration::from_millis(100);

/// A connection whose request head is being read, without blocking.
struct Incoming {
    stream: TcpStream,
    head: Vec<u8>,
    since: Instant,
}

/// How far reading a head has come.
enum HeadRead {
    /// Not complete yet (whether bytes came).
    More(bool),
    /// Complete (`Some`), or cut short, too long or too slow (`None`).
    Done(Option<Vec<u8>>),
}

impl Incoming {
    fn new(stream: TcpStream, now: Instant) -> Self {
        Incoming {
            stream,
            head: Vec::new(),
            since: now,
        }
    }

    fn read(&mut self, now: Instant) -> HeadRead {
        let mut buf = [0u8; 1024];
        let mut progress = false;
        loop {
            let head = &self.head;
            if head.windows(4).any(|w| w == b"\r\n\r\n") || head.windows(2).any(|w| w == b"\n\n") {
                return HeadRead::Done(Some(std::mem::take(&mut self.head)));
            }
            if head.len() >= MAX_CALLBACK_HEAD
                || now.saturating_duration_since(self.since) >= CALLBACK_READ_TIMEOUT
            {
                return HeadRead::Done(None);
            }
            match self.stream.read(&mut buf) {
                Ok(0) => return HeadRead::Done(None),
                Ok(n) => {
                    progress = true;
                    let room = MAX_CALLBACK_HEAD - self.head.len();
                    self.head.extend_from_slice(&buf[..n.min(room)]);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return HeadRead::More(progress),
                Err(_) => return HeadRead::Done(None),
            }
        }
    }
}

/// Answers one request head (`None`: incomplete); a callback whose `state` is not
/// `state` (when given) is refused.
fn serve(mut stream: TcpStream, head: Option<Vec<u8>>, state: Option<&str>) -> io::Result<Arrival> {
    stream.set_nonblocking(false)?;
    stream.set_write_timeout(Some(CALLBACK_READ_TIMEOUT))?;
    let complete = head.is_some();
    let head = head.unwrap_or_default();
    let line = head.split(|&b| b == b'\n').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    let mut words = line.trim_end_matches('\r').split(' ');
    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let query = query.split('#').next().unwrap_or_default();
    let arrival = if !complete {
        respond(
            &mut stream,
            "400 Bad Request",
            "bad request\n",
            "text/plain",
        )?;
        Arrival::Other
    } else if path != CALLBACK_PATH {
        respond(&mut stream, "404 Not Found", "not found\n", "text/plain")?;
        Arrival::Other
    } else if method != "GET" || query.is_empty() {
        respond(
            &mut stream,
            "400 Bad Request",
            "expected GET /callback with the authorization response\n",
            "text/plain",
        )?;
        Arrival::Other
    } else if state.is_some_and(|state| !has_state(query, state)) {
        respond(
            &mut stream,
            "400 Bad Request",
            "this callback does not belong to the authorization in progress\n",
            "text/plain",
        )?;
        Arrival::Other
    } else {
        respond(&mut stream, "200 OK", DONE_PAGE, "text/html; charset=utf-8")?;
        Arrival::Callback(query.to_owned())
    };
    Ok(arrival)
}

/// Whether `query` carries `state` exactly once, equal to `state`.
fn has_state(query: &str, state: &str) -> bool {
    the_state(query).is_some_and(|s| s == state)
}

/// The `state` of an authorization request URL, when it has exactly one.
fn state_of(authorize_url: &str) -> Option<String> {
    the_state(authorize_url.split_once('?')?.1)
}

/// The one `state` parameter of `query`; `None` without one, with two, or when the
/// query does not parse.
fn the_state(query: &str) -> Option<String> {
    let params = mcp_proto::auth::form::callback_params(query).ok()?;
    let mut states = params.into_iter().filter(|(k, _)| k == "state");
    match (states.next(), states.next()) {
        (Some((_, v)), None) => Some(v),
        _ => None,
    }
}

fn respond(stream: &mut TcpStream, status: &str, body: &str, kind: &str) -> io::Result<()> {
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n\
         Cache-Control: no-store\r\nReferrer-Policy: no-referrer\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(response.as_bytes())?;
    stream.flush()
}

/// Tries to open `url` in a browser, its output discarded; whether the opener started.
/// `$BROWSER` comes first, as `xdg-open` reads it: a `:`-separated list of commands of
/// which the first is used, split at whitespace, with `%s` replaced by the URL (else the
/// URL is added as the last argument); no shell is involved. Without it, the desktop's
/// opener: `open` on macOS, `xdg-open` elsewhere. Failing is fine: the URL was shown to
/// the person too. A script plays the browser by naming itself (or `curl -L`) there.
pub fn open_in_browser(url: &str) -> bool {
    if !(url.starts_with("https://") || url.starts_with("http://")) {
        return false;
    }
    let browser = std::env::var("BROWSER").unwrap_or_default();
    let mut argv = opener_argv(&browser, url);
    if argv.is_empty() {
        let opener = if cfg!(target_os = "macos") {
            "open"
        } else {
            "xdg-open"
        };
        argv = vec![opener.to_owned(), url.to_owned()];
    }
    Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .is_ok()
}

/// The command line `$BROWSER` (its value `browser`) gives for `url`; empty when it
/// names no command.
fn opener_argv(browser: &str, url: &str) -> Vec<String> {
    let Some(command) = browser.split(':').map(str::trim).find(|c| !c.is_empty()) else {
        return Vec::new();
    };
    let mut argv: Vec<String> = command.split_whitespace().map(str::to_owned).collect();
    if argv[1..].iter().any(|a| a.contains("%s")) {
        for arg in &mut argv[1..] {
            *arg = arg.replace("%s", url);
        }
    } else {
        argv.push(url.to_owned());
    }
    argv
}

/// An [`AuthorizationHandler`] for a person at a desktop: tells them the URL through
/// `announce`, optionally opens a browser, and waits on a [`LoopbackCallback`] for the
/// browser to come back. It prints nothing itself.
pub struct BrowserApproval {
    listener: LoopbackCallback,
    open_browser: bool,
    announce: Box<dyn FnMut(&str) + Send>,
    timeout: Duration,
}

impl fmt::Debug for BrowserApproval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BrowserApproval")
            .field("listener", &self.listener)
            .field("open_browser", &self.open_browser)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl BrowserApproval {
    /// Waits on `listener`, after calling `announce` with the URL to open; opens a
    /// browser too (see [`open_browser`](Self::open_browser)); waits at most
    /// [`DEFAULT_APPROVAL_WAIT`].
    pub fn new(listener: LoopbackCallback, announce: impl FnMut(&str) + Send + 'static) -> Self {
        BrowserApproval {
            listener,
            open_browser: true,
            announce: Box::new(announce),
            timeout: DEFAULT_APPROVAL_WAIT,
        }
    }

    /// Whether to try to open a browser (default true).
    #[must_use]
    pub fn open_browser(mut self, open: bool) -> Self {
        self.open_browser = open;
        self
    }

    /// How long to wait for the browser.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The redirect URI of the listener.
    #[must_use]
    pub fn redirect_uri(&self) -> String {
        self.listener.redirect_uri()
    }
}

impl AuthorizationHandler for BrowserApproval {
    fn authorize(&mut self, url: &str) -> Result<String, String> {
        (self.announce)(url);
        if self.open_browser {
            let _ = open_in_browser(url);
        }
        let state = state_of(url);
        self.listener.wait_for_state(state.as_deref(), self.timeout)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(port: u16, target: &str) -> String {
        let mut s = TcpStream::connect((Ipv4Addr::LOCALHOST, port)).unwrap();
        write!(s, "GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    }

    #[test]
    fn browser_variable_names_the_opener() {
        let url = "http://127.0.0.1:1/authorize?a=1";
        assert!(opener_argv("", url).is_empty());
        assert!(opener_argv(" : ", url).is_empty());
        assert_eq!(opener_argv("firefox:chromium", url), ["firefox", url]);
        assert_eq!(
            opener_argv("curl -s -L -o /dev/null", url),
            ["curl", "-s", "-L", "-o", "/dev/null", url]
        );
        assert_eq!(
            opener_argv("b --url=%s --new", url),
            ["b", &format!("--url={url}"), "--new"]
        );
    }

    #[test]
    fn waits_for_the_callback_and_answers_everything_else() {
        let listener = LoopbackCallback::bind().unwrap();
        let port = listener.port();
        assert_eq!(
            listener.redirect_uri(),
            format!("http://127.0.0.1:{port}/callback")
        );
        let browser = std::thread::spawn(move || {
            // A stalled connection does not block the others for long.
            let idle = TcpStream::connect((Ipv4Addr::LOCALHOST, port)).unwrap();
            let favicon = get(port, "/favicon.ico");
            let empty = get(port, "/callback");
            let done = get(port, "/callback?code=c0de&state=s1");
            drop(idle);
            (favicon, empty, done)
        });
        let url = listener.wait(Duration::from_secs(30)).unwrap();
        assert_eq!(
            url,
            format!("http://127.0.0.1:{port}/callback?code=c0de&state=s1")
        );
        let (favicon, empty, done) = browser.join().unwrap();
        assert!(favicon.starts_with("HTTP/1.1 404"), "{favicon}");
        assert!(empty.starts_with("HTTP/1.1 400"), "{empty}");
        assert!(done.starts_with("HTTP/1.1 200"), "{done}");
        assert!(done.contains("You can close this window"));
        assert!(!done.contains("c0de"));
    }

    /// Connections that send nothing are read beside the browser's, not before it: with
    /// them served one at a time, forty of them held the callback for 200 s.
    #[test]
    fn silent_connections_do_not_hold_the_callback_back() {
        let listener = LoopbackCallback::bind().unwrap();
        let port = listener.port();
        let browser = std::thread::spawn(move || {
            let silent: Vec<TcpStream> = (0..40)
                .map(|_| TcpStream::connect((Ipv4Addr::LOCALHOST, port)).unwrap())
                .collect();
            let done = get(port, "/callback?code=c&state=s");
            drop(silent);
            done
        });
        let started = Instant::now();
        let url = listener.wait(Duration::from_secs(60)).unwrap();
        let took = started.elapsed();
        assert!(url.ends_with("/callback?code=c&state=s"), "{url}");
        assert!(took < CALLBACK_READ_TIMEOUT, "took {took:?}");
        assert!(browser.join().unwrap().starts_with("HTTP/1.1 200"));
    }

    /// A burst of silent connections right behind the browser's does not push it out
    /// (they were accepted all at once and the oldest, the browser's, dropped unread).
    #[test]
    fn a_burst_behind_the_callback_does_not_push_it_out() {
        let listener = LoopbackCallback::bind().unwrap();
        let port = listener.port();
        let browser = std::thread::spawn(move || {
            let mut s = TcpStream::connect((Ipv4Addr::LOCALHOST, port)).unwrap();
            write!(
                s,
                "GET /callback?code=c&state=s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
            )
            .unwrap();
            let burst: Vec<TcpStream> = (0..100)
                .map(|_| TcpStream::connect((Ipv4Addr::LOCALHOST, port)).unwrap())
                .collect();
            let mut out = String::new();
            let read = s.read_to_string(&mut out);
            drop(burst);
            (read.is_ok(), out)
        });
        // The burst is queued before the listener looks.
        std::thread::sleep(Duration::from_millis(200));
        let url = listener.wait(Duration::from_secs(30)).unwrap();
        assert!(url.ends_with("/callback?code=c&state=s"), "{url}");
        let (read, out) = browser.join().unwrap();
        assert!(read && out.starts_with("HTTP/1.1 200"), "{out}");
    }

    /// A callback for another authorization (stale, or forged by anyone who can reach
    /// the port) is refused and the wait goes on: it used to end the wait, the flow
    /// then rejected its state, and nobody listened for the real one any more.
    #[test]
    fn a_callback_with_another_state_is_refused_and_the_wait_goes_on() {
        let listener = LoopbackCallback::bind().unwrap();
        let port = listener.port();
        let mut approval = BrowserApproval::new(listener, |_| {})
            .open_browser(false)
            .timeout(Duration::from_secs(30));
        let browser = std::thread::spawn(move || {
            let forged = get(port, "/callback?code=evil&state=forged");
            let twice = get(port, "/callback?code=evil&state=good&state=forged");
            let real = get(port, "/callback?code=c0de&state=good");
            (forged, twice, real)
        });
        let url = approval
            .authorize("https://as.example/authorize?client_id=c&state=good&x=1")
            .unwrap();
        assert!(url.ends_with("/callback?code=c0de&state=good"), "{url}");
        let (forged, twice, real) = browser.join().unwrap();
        assert!(forged.starts_with("HTTP/1.1 400"), "{forged}");
        assert!(forged.contains("does not belong"), "{forged}");
        assert!(twice.starts_with("HTTP/1.1 400"), "{twice}");
        assert!(real.starts_with("HTTP/1.1 200"), "{real}");
    }

    #[test]
    fn gives_up_at_the_deadline_without_naming_the_query() {
        let listener = LoopbackCallback::bind().unwrap();
        let err = listener.wait(Duration::from_millis(100)).unwrap_err();
        assert!(err.contains("within"), "{err}");
    }

    #[test]
    fn the_handler_announces_then_waits() {
        let listener = LoopbackCallback::bind().unwrap();
        let port = listener.port();
        let (tx, rx) = std::sync::mpsc::channel();
        let mut approval = BrowserApproval::new(listener, move |url| {
            tx.send(url.to_owned()).unwrap();
        })
        .open_browser(false)
        .timeout(Duration::from_secs(30));
        let browser = std::thread::spawn(move || {
            let announced: String = rx.recv().unwrap();
            assert_eq!(announced, "https://as.example/authorize?x=1");
            get(port, "/callback?state=s&error=access_denied")
        });
        let url = approval
            .authorize("https://as.example/authorize?x=1")
            .unwrap();
        assert!(url.ends_with("/callback?state=s&error=access_denied"));
        assert!(browser.join().unwrap().starts_with("HTTP/1.1 200"));
    }
}
