//! The Streamable HTTP world: connections the client opens, served by an [`HttpHost`]
//! and one [`HttpConnection`] each, as the adapters run them.

use crate::Instant;
use crate::client::http::HttpConfig;
use crate::client::{
    Client, ClientConfig, ConnId, Transmit, TransportFailure, TransportFailureKind,
};
use crate::http::EndpointUrl;
use crate::server::http::{
    HttpConnection, HttpConnectionConfig, HttpEndpoint, HttpEndpointConfig, HttpHost, HttpTransmit,
};

use super::{Ledger, Wire, server};

/// Connections the client may carry requests on (as many more may carry streams).
const CLIENT_CONNECTIONS: usize = 3;

/// Places of the server: as many as two clients may hold (requests and streams), so
/// that the server refuses no connection of its own accord (the `http_host` target
/// drives its refusals and evictions; here the network refuses)...
const SERVER_PLACES: usize = 4 * CLIENT_CONNECTIONS;

/// ...or a busy server's: as many as one client's connections, so that some are
/// answered `503` with `Retry-After`, or take the place of an idle one.
const BUSY_SERVER_PLACES: usize = CLIENT_CONNECTIONS;

/// A connection as both ends see it.
struct Link {
    /// The client that opened it (its index).
    owner: usize,
    conn: ConnId,
    /// The client was told it is open (else it is still connecting).
    connected: bool,
    /// The server's side, until the server closes it.
    server: Option<HttpConnection>,
    /// The client closed its side (`Transmit::Close`) or was told it ended.
    client_done: bool,
    /// The client closed its socket: the server reads the end after `unread`, and what
    /// it writes fails.
    client_closed: bool,
    /// The server was told of the end of its input.
    server_eof_told: bool,
    /// The server's side ended: the client reads the end after `down`.
    server_closed: bool,
    /// Bytes the client wrote, on the way.
    up: Vec<u8>,
    /// Bytes that reached the server and that it has not read.
    unread: Vec<u8>,
    /// Bytes the server wrote, on the way.
    down: Vec<u8>,
    /// The network holds this connection's bytes back.
    held: bool,
}

/// The clients, the server, the connections between them.
pub(super) struct HttpWorld {
    /// One client, or two sharing the server.
    clients: Vec<Client>,
    host: HttpHost,
    endpoint: HttpEndpoint,
    variant: u8,
    sse_polling: bool,
    links: Vec<Link>,
    now: Instant,
    /// Connections still to refuse.
    refuse: u8,
    /// New connections stay connecting until released.
    slow_connects: bool,
    /// Server processes started so far: each seeds its session ids afresh, as the
    /// adapters do.
    starts: u8,
    /// The server's places (connections it serves at once).
    places: usize,
}

/// The endpoint of a server with `places`: open streams and `GET` streams are bounded to
/// a third of them each, so that requests always have room (as `HttpServeOptions` asks
/// of a server).
fn endpoint(
    variant: u8,
    sse_polling: bool,
    places: usize,
    starts: u8,
    ledger: &Ledger,
) -> HttpEndpoint {
    let config = HttpEndpointConfig {
        max_open_streams: places / 3,
        max_get_streams: places / 3,
        sse_polling,
        ..HttpEndpointConfig::default()
    };
    HttpEndpoint::with_sessions(server(variant, ledger), config, &[starts; 32])
}

impl HttpWorld {
    pub(super) fn new(
        config: &ClientConfig,
        clients: usize,
        variant: u8,
        sse_polling: bool,
        busy: bool,
        ledger: &Ledger,
    ) -> Self {
        let places = if busy {
            BUSY_SERVER_PLACES
        } else {
            SERVER_PLACES
        };
        let url = EndpointUrl::parse("http://127.0.0.1:9/mcp", false).expect("a valid URL");
        let mut http = HttpConfig::new(url);
        http.pool.max_connections = CLIENT_CONNECTIONS;
        HttpWorld {
            clients: (0..clients)
                .map(|_| Client::http(config.clone(), http.clone(), Instant::ZERO))
                .collect(),
            host: HttpHost::new(places, HttpConnectionConfig::default()),
            endpoint: endpoint(variant, sse_polling, places, 0, ledger),
            variant,
            sse_polling,
            links: Vec::new(),
            now: Instant::ZERO,
            refuse: 0,
            slow_connects: false,
            starts: 0,
            places,
        }
    }

    fn pick(&mut self, operand: u8) -> Option<&mut Link> {
        let n = self.links.len();
        (n > 0).then(|| &mut self.links[usize::from(operand) % n])
    }

    /// A few of a held connection's bytes go through, up or down.
    fn trickle(&mut self, operand: u8) {
        let now = self.now;
        let n = 1usize << (operand >> 1);
        let Some(link) = self.pick(operand) else {
            return;
        };
        if operand & 1 == 0 {
            let n = n.min(link.up.len());
            let bytes: Vec<u8> = link.up.drain(..n).collect();
            link.unread.extend_from_slice(&bytes);
        } else if !link.client_done && link.connected {
            let n = n.min(link.down.len());
            let (owner, conn) = (link.owner, link.conn);
            let bytes: Vec<u8> = link.down.drain(..n).collect();
            if !bytes.is_empty() {
                self.clients[owner].handle_read(now, conn, &bytes);
            }
        }
    }

    /// The connection is cut: both ends see it fail; what was on the way is lost.
    fn cut(&mut self, operand: u8) {
        let now = self.now;
        let n = self.links.len();
        if n == 0 {
            return;
        }
        let link = &mut self.links[usize::from(operand) % n];
        link.up.clear();
        link.down.clear();
        link.unread.clear();
        if let Some(server) = &mut link.server {
            server.handle_transport_error(now);
        }
        link.client_closed = true;
        if !link.client_done {
            link.client_done = true;
            let failure = TransportFailure::new(TransportFailureKind::Reset, "cut");
            self.clients[link.owner].handle_transport_error(now, link.conn, failure);
        }
    }

    /// A new server process: every connection fails, every session is gone.
    fn restart(&mut self, ledger: &mut Ledger) {
        let now = self.now;
        for link in std::mem::take(&mut self.links) {
            if !link.client_done {
                let failure = TransportFailure::new(TransportFailureKind::Reset, "restart");
                self.clients[link.owner].handle_transport_error(now, link.conn, failure);
            }
        }
        self.host = HttpHost::new(self.places, HttpConnectionConfig::default());
        self.starts = self.starts.wrapping_add(1);
        ledger.servers += 1;
        self.endpoint = endpoint(
            self.variant,
            self.sse_polling,
            self.places,
            self.starts,
            ledger,
        );
    }

    fn client_turn(&mut self, who: usize, ledger: &mut Ledger) -> bool {
        let now = self.now;
        let mut progressed = false;
        if self.clients[who].poll_timeout().is_some_and(|t| t <= now) {
            self.clients[who].handle_timeout(now);
            progressed = true;
        }
        let mut buf = Vec::new();
        loop {
            buf.clear();
            let Some(t) = self.clients[who].poll_transmit(now, &mut buf) else {
                break;
            };
            progressed = true;
            match t {
                Transmit::Connect { conn, .. } => self.connect(who, conn),
                Transmit::Write { conn, len } => {
                    assert_eq!(len, buf.len(), "a write names the bytes it appended");
                    let link = self
                        .links
                        .iter_mut()
                        .find(|l| l.owner == who && l.conn == conn && !l.client_done)
                        .unwrap_or_else(|| panic!("a write on {conn:?}, which is not open"));
                    assert!(link.connected, "a write on {conn:?} before it connected");
                    link.up.extend_from_slice(&buf);
                }
                Transmit::Close { conn } => {
                    let link = self
                        .links
                        .iter_mut()
                        .find(|l| l.owner == who && l.conn == conn);
                    if let Some(link) = link {
                        link.client_done = true;
                        link.client_closed = true;
                        link.down.clear();
                    }
                }
                other => panic!("an HTTP client asked for {other:?}"),
            }
        }
        progressed | ledger.events(who, &mut self.clients[who], now)
    }

    fn connect(&mut self, who: usize, conn: ConnId) {
        let now = self.now;
        if self.refuse > 0 {
            self.refuse -= 1;
            let failure = TransportFailure::new(TransportFailureKind::Refused, "refused");
            self.clients[who].handle_transport_error(now, conn, failure);
            return;
        }
        assert!(
            self.links.iter().all(|l| l.owner != who || l.conn != conn),
            "connection {conn:?} opened twice"
        );
        let server = self.host.accept(now);
        let server_closed = server.is_none();
        self.links.push(Link {
            owner: who,
            conn,
            connected: !self.slow_connects,
            server,
            client_done: false,
            client_closed: false,
            server_eof_told: false,
            server_closed,
            up: Vec::new(),
            unread: Vec::new(),
            down: Vec::new(),
            held: false,
        });
        if !self.slow_connects {
            self.clients[who].handle_connected(now, conn);
        }
    }

    fn network_turn(&mut self) -> bool {
        let now = self.now;
        let mut progressed = false;
        let mut i = 0;
        while i < self.links.len() {
            let link = &mut self.links[i];
            if !link.held && !link.up.is_empty() {
                let up = std::mem::take(&mut link.up);
                link.unread.extend_from_slice(&up);
                progressed = true;
            }
            if !link.client_done && link.connected && !link.held {
                if !link.down.is_empty() {
                    let down = std::mem::take(&mut link.down);
                    self.clients[link.owner].handle_read(now, link.conn, &down);
                    progressed = true;
                }
                if link.server_closed {
                    link.client_done = true;
                    self.clients[link.owner].handle_eof(now, link.conn);
                    progressed = true;
                }
            }
            if link.client_done && link.server.is_none() {
                self.links.swap_remove(i);
            } else {
                i += 1;
            }
        }
        progressed
    }

    fn server_turn(&mut self) -> bool {
        let now = self.now;
        let mut progressed = self.endpoint.handle_due(now);
        let mut buf = Vec::new();
        for link in &mut self.links {
            let Some(server) = &mut link.server else {
                continue;
            };
            progressed |= server.handle_due(now);
            if server.wants_input() && !link.unread.is_empty() {
                let unread = std::mem::take(&mut link.unread);
                server.handle_input(now, &unread);
                progressed = true;
            } else if link.client_closed
                && !link.server_eof_told
                && link.unread.is_empty()
                && link.up.is_empty()
                && (server.wants_input() || server.stream().is_some())
            {
                server.handle_eof(now);
                link.server_eof_told = true;
                progressed = true;
            }
            loop {
                buf.clear();
                match server.poll_transmit(now, &mut self.endpoint, &mut buf) {
                    Some(HttpTransmit::Write { len }) => {
                        assert_eq!(len, buf.len(), "a write names the bytes it appended");
                        if link.client_closed {
                            server.handle_transport_error(now);
                        } else {
                            link.down.extend_from_slice(&buf);
                        }
                        progressed = true;
                    }
                    Some(HttpTransmit::Close { .. }) => {
                        link.server = None;
                        link.server_closed = true;
                        progressed = true;
                        break;
                    }
                    Some(_) => progressed = true,
                    None => break,
                }
            }
        }
        while self.endpoint.poll_ready().is_some() {
            progressed = true;
        }
        progressed
    }
}

impl Wire for HttpWorld {
    fn clients(&mut self) -> &mut [Client] {
        &mut self.clients
    }

    fn now(&mut self) -> &mut Instant {
        &mut self.now
    }

    fn network(&mut self, kind: u8, operand: u8, ledger: &mut Ledger) {
        let now = self.now;
        match kind {
            6 => {
                if let Some(link) = self.pick(operand) {
                    link.held = !link.held;
                }
            }
            7 => self.trickle(operand),
            8 => self.cut(operand),
            9 => {
                if let Some(link) = self.pick(operand)
                    && let Some(server) = &mut link.server
                {
                    server.close(now);
                }
            }
            10 => self.refuse = operand,
            11 => self.restart(ledger),
            13 => self.slow_connects = !self.slow_connects,
            14 => self.connect_all(),
            _ => self.heal_links(),
        }
    }

    fn turn(&mut self, ledger: &mut Ledger) -> bool {
        let mut progressed = false;
        for who in 0..self.clients.len() {
            progressed |= self.client_turn(who, ledger);
        }
        progressed |= self.network_turn();
        progressed | self.server_turn()
    }

    fn check(&mut self) {
        for who in 0..self.clients.len() {
            let open = self
                .links
                .iter()
                .filter(|l| l.owner == who && !l.client_done);
            let open = open.count();
            assert!(
                open <= 2 * CLIENT_CONNECTIONS,
                "{open} connections open for a pool of {CLIENT_CONNECTIONS}"
            );
        }
    }

    fn heal(&mut self) {
        self.heal_links();
        self.refuse = 0;
        self.slow_connects = false;
        self.connect_all();
    }

    fn check_released(&mut self) {
        let released = self.clients.iter().all(Client::is_released);
        assert!(released, "a closed client holds connections");
        assert!(self.links.is_empty(), "connections left open");
        assert_eq!(
            self.endpoint.open_streams(),
            0,
            "streams left on the server"
        );
        assert_eq!(self.host.connections(), 0, "places held on the server");
    }

    fn server_deadline(&self) -> Option<Instant> {
        self.links
            .iter()
            .filter_map(|l| l.server.as_ref()?.poll_timeout())
            .chain(self.endpoint.poll_timeout())
            .min()
    }
}

impl HttpWorld {
    /// Connections left connecting connect.
    fn connect_all(&mut self) {
        let now = self.now;
        for link in &mut self.links {
            if !link.connected && !link.client_done {
                link.connected = true;
                self.clients[link.owner].handle_connected(now, link.conn);
            }
        }
    }

    fn heal_links(&mut self) {
        for link in &mut self.links {
            link.held = false;
        }
    }
}
