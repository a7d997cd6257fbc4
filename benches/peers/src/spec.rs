//! What one case is: which client talks to which server over which transport, in which
//! era, with which payload, how many calls at a time. A case travels between the suite and
//! the client process as command-line words (`case rmcp ours stdio legacy 64 1 2000`).

use std::fmt;

/// The client side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientKind {
    /// rmcp 3.11's client on a multi-threaded tokio runtime.
    Rmcp,
    /// `mcp_blocking::Client`.
    Blocking,
    /// `mcp_smol`'s client with its driver on `async_io::block_on`.
    Smol,
    /// `serde_json` both ways, no MCP logic.
    Bare,
}

/// The server side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerKind {
    /// rmcp 3.11's server with one `echo` tool.
    Rmcp,
    /// `mcp_proto::server::example::server()` on `mcp_blocking::serve_stdio`/`serve_http`.
    Ours,
    /// `serde_json` both ways, no MCP logic.
    Bare,
    /// Fixed answers to what rmcp's client sends, over HTTP only: the floor under rmcp's
    /// client.
    Canned,
}

/// stdio to a child process, or HTTP on 127.0.0.1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// The server is a child process on stdin/stdout.
    Stdio,
    /// The server is a child process listening on 127.0.0.1.
    Http,
}

/// The protocol era the client asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// 2025-11-25.
    Legacy,
    /// 2026-07-28.
    Modern,
    /// The bare pair has no era.
    None,
}

/// One cell of the comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Case {
    /// Who calls.
    pub client: ClientKind,
    /// Who answers.
    pub server: ServerKind,
    /// Over what.
    pub transport: Transport,
    /// In which era.
    pub era: Era,
    /// The echoed text's length in bytes.
    pub size: usize,
    /// Calls outstanding at a time.
    pub in_flight: usize,
}

macro_rules! words {
    ($ty:ident { $($variant:ident => $word:literal),* $(,)? }) => {
        impl $ty {
            /// The command-line word.
            pub fn word(self) -> &'static str {
                match self { $($ty::$variant => $word),* }
            }

            /// Parses the command-line word.
            pub fn parse(word: &str) -> Option<$ty> {
                match word { $($word => Some($ty::$variant),)* _ => None }
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.word())
            }
        }
    };
}

words!(ClientKind { Rmcp => "rmcp", Blocking => "blocking", Smol => "smol", Bare => "bare" });
words!(ServerKind { Rmcp => "rmcp", Ours => "ours", Bare => "bare", Canned => "canned" });
words!(Transport { Stdio => "stdio", Http => "http" });
words!(Era { Legacy => "legacy", Modern => "modern", None => "-" });

impl ClientKind {
    /// The binary the suite runs this client in: `mcp-peers` (which links tokio, hyper and
    /// rmcp for rmcp's client and the servers) only for rmcp's client; ours and the bare
    /// one each in a binary that links only what that client needs.
    pub fn binary(self) -> &'static str {
        match self {
            ClientKind::Rmcp => "mcp-peers",
            ClientKind::Blocking | ClientKind::Smol => "peers-ours",
            ClientKind::Bare => "peers-bare",
        }
    }
}

impl Case {
    /// The words after `case`, without the call count.
    pub fn words(&self) -> Vec<String> {
        vec![
            self.client.word().to_owned(),
            self.server.word().to_owned(),
            self.transport.word().to_owned(),
            self.era.word().to_owned(),
            self.size.to_string(),
            self.in_flight.to_string(),
        ]
    }

    /// Parses what [`Case::words`] wrote.
    pub fn parse(words: &[String]) -> Option<Case> {
        let [client, server, transport, era, size, in_flight] = words else {
            return None;
        };
        Some(Case {
            client: ClientKind::parse(client)?,
            server: ServerKind::parse(server)?,
            transport: Transport::parse(transport)?,
            era: Era::parse(era)?,
            size: size.parse().ok()?,
            in_flight: in_flight.parse().ok()?,
        })
    }

    /// "64 B" or "64 KiB".
    pub fn size_label(&self) -> String {
        if self.size >= 1024 {
            format!("{} KiB", self.size / 1024)
        } else {
            format!("{} B", self.size)
        }
    }
}

impl fmt::Display for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} -> {} {} {} {} x{}",
            self.client,
            self.server,
            self.transport,
            self.era,
            self.size_label(),
            self.in_flight
        )
    }
}
