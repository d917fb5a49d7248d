//! The runtime's deadlines, caps and address ([`Config`]), and its errors.

use crate::RosError;
use std::time::Duration;

/// A runtime's deadlines and caps, and where it is reached.
#[derive(Debug, Clone)]
pub struct Config {
    /// The master's XML-RPC URI.
    pub master_uri: String,
    /// The host name or address other nodes reach this one at (in the slave URI and in
    /// `requestTopic` answers).
    pub host: String,
    /// `from:=to` remappings applied to the names this node registers.
    pub remappings: Vec<String>,
    /// How long a TCPROS peer has, from its connection, to send its whole connection
    /// header and take ours. A peer on the same network needs a few milliseconds.
    pub handshake_within: Duration,
    /// TCPROS connections open at once on this node (linked, or exchanging headers).
    pub max_connections: usize,
    /// Subscribers linked to one publisher at once.
    pub max_links_per_publisher: usize,
    /// How long a link's blocking write may wait for room in the socket's send buffer
    /// before the link is dropped (the buffer holds [`crate::net::LinkOptions::NODES`]'s
    /// `send_buffer` bytes: a subscriber that long behind is gone, not slow).
    pub write_within: Duration,
    /// How long an XML-RPC caller has, from its connection, to send its whole request.
    pub request_within: Duration,
    /// The largest XML-RPC request body taken.
    pub max_request_bytes: usize,
    /// XML-RPC callers served at once.
    pub max_callers: usize,
}

impl Config {
    /// The defaults for a node reached at `host`, registered with `master_uri`.
    ///
    /// - `handshake_within` 2 s: on the car's network a header takes milliseconds; 2 s
    ///   forgives a starved peer, and a stalled one costs a thread that long.
    /// - `max_connections` 256 and `max_links_per_publisher` 64: the suite's busiest topic
    ///   has under ten subscribers; the caps keep a flood's threads and descriptors small.
    /// - `write_within` 100 ms ([`crate::net::LinkOptions::NODES`]).
    /// - `request_within` 2 s, `max_request_bytes` 4 MiB (a parameter value fits),
    ///   `max_callers` 32 (the master and a few tools call at once).
    pub fn new(master_uri: impl Into<String>, host: impl Into<String>) -> Config {
        Config {
            master_uri: master_uri.into(),
            host: host.into(),
            remappings: Vec::new(),
            handshake_within: Duration::from_secs(2),
            max_connections: 256,
            max_links_per_publisher: 64,
            write_within: crate::net::LinkOptions::NODES.send_timeout,
            request_within: Duration::from_secs(2),
            max_request_bytes: 4 << 20,
            max_callers: 32,
        }
    }

    /// The defaults, reached where ROS 1's environment says: `ROS_MASTER_URI`, and the
    /// host from `ROS_HOSTNAME`, `ROS_IP` or the machine's name; remappings from the
    /// command line.
    pub fn from_env() -> Config {
        let host = ["ROS_HOSTNAME", "ROS_IP"]
            .iter()
            .find_map(|v| std::env::var(v).ok().filter(|h| !h.is_empty()))
            .unwrap_or_else(machine_name);
        let mut config = Config::new(crate::xmlrpc::master_uri(), host);
        config.remappings = std::env::args()
            .skip(1)
            .filter(|a| a.contains(":="))
            .collect();
        config
    }
}

fn machine_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most `buf.len()` bytes into `buf`.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    match std::str::from_utf8(&buf[..end]) {
        Ok(name) if rc == 0 && !name.is_empty() => name.to_owned(),
        _ => "localhost".to_owned(),
    }
}

/// Why the runtime could not do something.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// A socket could not be opened or a thread started.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The system's error.
        source: std::io::Error,
    },
    /// A name that ROS does not accept.
    #[error(transparent)]
    Name(RosError),
    /// The master refused a call or could not be reached.
    #[error(transparent)]
    Master(RosError),
    /// The topic is advertised by this node already.
    #[error("{0} is advertised by this node already")]
    Advertised(String),
    /// A message could not be encoded.
    #[error("cannot encode a message for {topic}: {source}")]
    Encode {
        /// The topic.
        topic: String,
        /// The encoder's error.
        source: std::io::Error,
    },
}
