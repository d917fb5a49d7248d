//! A ROS 1 node runtime of our own for what rosrust does badly: the node's XML-RPC slave
//! API and its TCPROS publishers. Messages stay rosrust's (its `Message` trait encodes
//! them).
//!
//! Why: rosrust's publisher accepts on one thread and reads each connection header with a
//! blocking read that has no timeout, so one silent peer (a frozen computer, a cut cable,
//! a port scanner) stops every later subscriber of the topic from linking; its slave
//! server wakes every 5 ms; and it does not pass `publisherUpdate` on, so our direct
//! subscriptions had to ask the master again and again. rosrust is maintenance-only and
//! its code is not ours to copy, so this is written from the ROS 1 specifications.
//!
//! The master knows one slave URI per node name, and re-registering the name at another
//! URI makes it shut the old one down. So a [`Node`] owns its slave API, and everything
//! the node registers (publishers here, subscribers through [`Node::watch_publishers`])
//! goes through that URI.
//!
//! - [`slave`]: the XML-RPC slave server; every caller on its own thread, a deadline for
//!   its whole request, a size bound, a cap on callers at once.
//! - [`publisher`]: one TCPROS port per node; every connection's header exchange on its own
//!   thread with a deadline, caps per publisher and per node, a bounded queue and bounded
//!   writes per link, latching.
//! - [`serve`]: the accept thread, the caps and the deadline reads the two share.
//! - [`xml`]: the XML-RPC reading and writing the slave server needs.
//!
//! [`Config`] holds the deadlines and caps, with the defaults [`Config::new`] gives.

pub mod publisher;
mod serve;
pub mod slave;
mod xml;

pub use publisher::Publisher;
pub use xml::BadCall;

use crate::names::resolve;
use crate::Lock;
use crate::RosError;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;
use xml_rpc::Value;

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

/// A callback for a topic's publishers: the slave URIs the master lists.
type OnPublishers = dyn Fn(&[String]) + Send + Sync;

/// A callback for `paramUpdate`: the parameter's key and its new value.
type OnParam = dyn Fn(&str, &Value) + Send + Sync;

/// A watch's state (see [`Node::watch_publishers`]).
struct Watcher {
    msg_type: String,
    on_update: Arc<OnPublishers>,
    /// A `publisherUpdate` has been delivered (the list `registerSubscriber` answered is
    /// older, then, and is not delivered after it).
    updated: Mutex<bool>,
}

/// What the node's threads share.
pub(crate) struct Shared {
    pub(crate) name: String,
    pub(crate) config: Config,
    /// The slave API's URI (`http://host:port/`).
    pub(crate) uri: String,
    /// The TCPROS port.
    pub(crate) tcpros_port: Mutex<u16>,
    pub(crate) publications: Mutex<HashMap<String, Arc<publisher::Topic>>>,
    /// Topic → watch id → watcher.
    watches: Mutex<HashMap<String, HashMap<u64, Arc<Watcher>>>>,
    next_id: AtomicU64,
    /// Why the node was asked to shut down (the slave API's `shutdown`), once it was.
    shutdown: (Mutex<Option<String>>, Condvar),
    on_param: Mutex<Option<Arc<OnParam>>>,
}

impl Shared {
    /// A call to the master as this node; the value of a successful answer.
    pub(crate) fn master_call(&self, method: &str, args: &[&str]) -> Result<Value, RosError> {
        let params = std::iter::once(self.name.as_str())
            .chain(args.iter().copied())
            .map(|s| Value::String(s.to_owned()))
            .collect();
        let answer = crate::xmlrpc::xmlrpc_call(&self.config.master_uri, method, params)?;
        crate::xmlrpc::value_of(method, answer)
    }

    pub(crate) fn resolve(&self, name: &str) -> Result<String, RuntimeError> {
        resolve(&self.name, name, &self.config.remappings).map_err(RuntimeError::Name)
    }

    pub(crate) fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// The topics watched, with their types (`getSubscriptions`).
    pub(crate) fn subscriptions(&self) -> Vec<(String, String)> {
        self.watches
            .locked()
            .iter()
            .filter_map(|(t, w)| w.values().next().map(|w| (t.clone(), w.msg_type.clone())))
            .collect()
    }

    /// Delivers a `publisherUpdate` to the topic's watchers; false when none watches it.
    pub(crate) fn publisher_update(&self, topic: &str, publishers: &[String]) -> bool {
        let watchers: Vec<Arc<Watcher>> = match self.watches.locked().get(topic) {
            Some(w) => w.values().cloned().collect(),
            None => return false,
        };
        for w in watchers {
            let mut updated = w.updated.locked();
            *updated = true;
            (w.on_update)(publishers);
        }
        true
    }

    pub(crate) fn request_shutdown(&self, why: String) {
        let mut reason = self.shutdown.0.locked();
        if reason.is_none() {
            tracing::warn!("{}: asked to shut down: {why}", self.name);
            *reason = Some(why);
        }
        self.shutdown.1.notify_all();
    }

    pub(crate) fn param_update(&self, key: &str, value: &Value) {
        let callback = self.on_param.locked().clone();
        if let Some(cb) = callback {
            cb(key, value);
        }
    }
}

/// A running node: its slave API and its TCPROS port. Dropping it withdraws its
/// registrations from the master and closes every link.
pub struct Node {
    shared: Arc<Shared>,
    // Dropped (stopped) before the withdrawal, so nothing new links meanwhile.
    slave: Option<serve::Listener>,
    tcpros: Option<serve::Listener>,
}

impl Node {
    /// Starts node `name` (made absolute when it is not): its slave API and TCPROS port
    /// listen at once. Nothing is registered with the master until something is
    /// advertised or watched.
    pub fn start(name: &str, config: Config) -> Result<Node, RuntimeError> {
        let name = resolve("/", name, &[]).map_err(RuntimeError::Name)?;
        let bind = serve::bind_address(&config.host);
        let io = |what: &str| {
            let what = format!("{name}: {what}");
            move |source| RuntimeError::Io { what, source }
        };
        // The slave's port must be known for the URI before `Shared` exists; its handler
        // finds the shared state through this cell, filled right after.
        let cell: Arc<std::sync::OnceLock<std::sync::Weak<Shared>>> = Arc::default();
        let slave = slave::listen(&name, bind, &config, cell.clone())
            .map_err(io("cannot start the slave API"))?;
        let shared = Arc::new(Shared {
            uri: format!("http://{}:{}/", config.host, slave.port()),
            name: name.clone(),
            config,
            tcpros_port: Mutex::new(0),
            publications: Mutex::default(),
            watches: Mutex::default(),
            next_id: AtomicU64::new(0),
            shutdown: (Mutex::new(None), Condvar::new()),
            on_param: Mutex::new(None),
        });
        let _ = cell.set(Arc::downgrade(&shared));
        let tcpros = publisher::listen(&shared, bind).map_err(io("cannot start TCPROS"))?;
        *shared.tcpros_port.locked() = tcpros.port();
        Ok(Node {
            shared,
            slave: Some(slave),
            tcpros: Some(tcpros),
        })
    }

    /// The node's name.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// The slave API's URI, which the master knows this node by.
    pub fn uri(&self) -> &str {
        &self.shared.uri
    }

    /// The TCPROS port subscribers connect to.
    pub fn tcpros_port(&self) -> u16 {
        *self.shared.tcpros_port.locked()
    }

    /// Advertises `topic` (resolved against the node's name and remappings) with type `T`
    /// and registers it with the master. Each subscriber gets a queue of `queue_size`
    /// messages (the oldest dropped when full); a `latching` publisher gives each new
    /// subscriber its last message.
    pub fn advertise<T: rosrust::Message>(
        &self,
        topic: &str,
        queue_size: usize,
        latching: bool,
    ) -> Result<Publisher<T>, RuntimeError> {
        Publisher::advertise(&self.shared, topic, queue_size, latching)
    }

    /// Subscribes to `topic`'s publisher list: registers this node as a subscriber of type
    /// `msg_type` with the master, calls `on_update` at once with the publishers the master
    /// lists, then with each `publisherUpdate` the master sends (on the slave server's
    /// thread for that call: keep it short). Dropping the watch unregisters it.
    pub fn watch_publishers(
        &self,
        topic: &str,
        msg_type: &str,
        on_update: impl Fn(&[String]) + Send + Sync + 'static,
    ) -> Result<PublisherWatch, RuntimeError> {
        let topic = self.shared.resolve(topic)?;
        let id = self.shared.next_id();
        let watcher = Arc::new(Watcher {
            msg_type: msg_type.to_owned(),
            on_update: Arc::new(on_update),
            updated: Mutex::new(false),
        });
        // Listed first: an update the master sends while registering reaches it.
        self.shared
            .watches
            .locked()
            .entry(topic.clone())
            .or_default()
            .insert(id, watcher.clone());
        let watch = PublisherWatch {
            shared: self.shared.clone(),
            topic: topic.clone(),
            id,
        };
        let listed = self
            .shared
            .master_call("registerSubscriber", &[&topic, msg_type, &self.shared.uri])
            .map_err(RuntimeError::Master)?;
        let publishers = strings(&listed);
        let updated = watcher.updated.locked();
        if !*updated {
            (watcher.on_update)(&publishers);
        }
        drop(updated);
        Ok(watch)
    }

    /// Calls `on_update(key, value)` for each `paramUpdate` the master sends (for
    /// parameters subscribed to with `subscribeParam` at this node's URI).
    pub fn on_param_update(&self, on_update: impl Fn(&str, &Value) + Send + Sync + 'static) {
        *self.shared.on_param.locked() = Some(Arc::new(on_update));
    }

    /// Why the node was asked to shut down through its slave API, if it was.
    pub fn shutdown_requested(&self) -> Option<String> {
        self.shared.shutdown.0.locked().clone()
    }

    /// Waits until the node is asked to shut down (its reason), or `timeout` passes.
    pub fn wait_shutdown_request(&self, timeout: Duration) -> Option<String> {
        let reason = self.shared.shutdown.0.locked();
        let (reason, _) = self
            .shared
            .shutdown
            .1
            .wait_timeout_while(reason, timeout, |r| r.is_none())
            .unwrap_or_else(|e| e.into_inner());
        reason.clone()
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.tcpros.take();
        let topics: Vec<Arc<publisher::Topic>> = self
            .shared
            .publications
            .locked()
            .drain()
            .map(|(_, t)| t)
            .collect();
        for t in topics {
            t.close();
            if let Err(e) = self
                .shared
                .master_call("unregisterPublisher", &[&t.name, &self.shared.uri])
            {
                tracing::debug!("unregisterPublisher {}: {e}", t.name);
            }
        }
        let watched: Vec<String> = self
            .shared
            .watches
            .locked()
            .drain()
            .map(|(t, _)| t)
            .collect();
        for topic in watched {
            if let Err(e) = self
                .shared
                .master_call("unregisterSubscriber", &[&topic, &self.shared.uri])
            {
                tracing::debug!("unregisterSubscriber {topic}: {e}");
            }
        }
        self.slave.take();
    }
}

/// A watch on a topic's publishers (see [`Node::watch_publishers`]); dropping it ends it.
pub struct PublisherWatch {
    shared: Arc<Shared>,
    topic: String,
    id: u64,
}

impl PublisherWatch {
    /// The resolved topic.
    pub fn topic(&self) -> &str {
        &self.topic
    }
}

impl Drop for PublisherWatch {
    fn drop(&mut self) {
        let last = {
            let mut watches = self.shared.watches.locked();
            match watches.get_mut(&self.topic) {
                Some(w) => {
                    w.remove(&self.id);
                    let last = w.is_empty();
                    if last {
                        watches.remove(&self.topic);
                    }
                    last
                }
                None => false,
            }
        };
        if last {
            if let Err(e) = self
                .shared
                .master_call("unregisterSubscriber", &[&self.topic, &self.shared.uri])
            {
                tracing::debug!("unregisterSubscriber {}: {e}", self.topic);
            }
        }
    }
}

/// The strings of an XML-RPC list (others left out).
pub(crate) fn strings(v: &Value) -> Vec<String> {
    match v {
        Value::Array(items) => items
            .iter()
            .filter_map(|i| match i {
                Value::String(s) => Some(s.clone()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}
