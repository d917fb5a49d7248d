//! What a node's threads share: its name and configuration, the topics it publishes with
//! their links, the topics it watches, a shutdown request, and taking its name back from
//! another process. The slave server reads it, the TCPROS handshakes add links to it, the
//! node owns it.

use super::config::{Config, RuntimeError};
use super::serve::{Gate, Pass};
use crate::names::resolve;
use crate::xmlrpc::strings;
use crate::Lock;
use crate::RosError;
use std::collections::{HashMap, VecDeque};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};
use xml_rpc::Value;

/// A callback for a topic's publishers: the slave URIs the master lists.
pub(crate) type OnPublishers = dyn Fn(&[String]) + Send + Sync;

/// A callback for `paramUpdate`: the parameter's key and its new value.
pub(crate) type OnParam = dyn Fn(&str, &Value) + Send + Sync;

/// What takes the node's name back when another process registered it (see
/// `Node::on_name_taken`).
pub(crate) type OnNameTaken = dyn Fn() + Send + Sync;

/// The least time between two attempts to take the node's name back: two processes of
/// ours under one name, both refusing the master's `shutdown`, take it from each other at
/// this pace, not as fast as the master answers.
pub const RECLAIM_EVERY: Duration = Duration::from_secs(1);

/// Taking the node's name back: whether an attempt is due, and when the last one began.
#[derive(Default)]
pub(crate) struct Reclaim {
    pub(crate) pending: bool,
    pub(crate) last: Option<Instant>,
    /// Attempts so far (logged the first time, then at the 10th, 100th, ...).
    pub(crate) count: u64,
}

/// A watch's state (see `Node::watch_publishers`).
pub(crate) struct Watcher {
    pub(crate) msg_type: String,
    pub(crate) on_update: Arc<OnPublishers>,
    /// A `publisherUpdate` has been delivered (the list `registerSubscriber` answered is
    /// older, then, and is not delivered after it).
    pub(crate) updated: Mutex<bool>,
}

/// What the node's threads share.
pub(crate) struct Shared {
    pub(crate) name: String,
    pub(crate) config: Config,
    /// The slave API's URI (`http://host:port/`).
    pub(crate) uri: String,
    /// The TCPROS port.
    pub(crate) tcpros_port: Mutex<u16>,
    pub(crate) publications: Mutex<HashMap<String, Arc<Topic>>>,
    /// Topic → watch id → watcher.
    pub(crate) watches: Mutex<HashMap<String, HashMap<u64, Arc<Watcher>>>>,
    pub(crate) next_id: AtomicU64,
    /// Why the node was asked to shut down (the slave API's `shutdown`), once it was.
    pub(crate) shutdown: (Mutex<Option<String>>, Condvar),
    pub(crate) on_param: Mutex<Option<Arc<OnParam>>>,
    /// Links subscribers on this node have made to publishers: id → (topic, publisher).
    pub(crate) inbound: Mutex<HashMap<u64, (String, String)>>,
    /// What takes the name back (`None`: [`Shared::register_again`]).
    pub(crate) on_name_taken: Mutex<Option<Arc<OnNameTaken>>>,
    pub(crate) reclaim: Mutex<Reclaim>,
}

impl Shared {
    /// A call to the master as this node; the value of a successful answer.
    pub(crate) fn master_call(&self, method: &str, args: &[&str]) -> Result<Value, RosError> {
        let topic = args.first().map(|t| (*t).to_owned());
        let args = args
            .iter()
            .map(|s| Value::String((*s).to_owned()))
            .collect();
        let answer = crate::master_api::Master::new(&self.config.master_uri, &self.name, &self.uri)
            .call(method, args);
        if answer.is_err()
            && crate::xmlrpc::interrupted()
            && matches!(method, "registerPublisher" | "registerSubscriber")
        {
            if let Some(topic) = &topic {
                crate::master_api::remember_interrupted(method, topic);
            }
        }
        answer
    }

    /// Withdraws this node's registration of `topic` (`method`: `unregisterPublisher` or
    /// `unregisterSubscriber`); a failure (the master gone) is only worth a debug line, the
    /// node being on its way out.
    ///
    /// Nothing is asked once the process is interrupted: its shutdown withdraws what is
    /// left in one bounded pass, and a master that does not answer must not hold up each
    /// drop on the way out.
    pub(crate) fn withdraw(&self, method: &str, topic: &str) {
        if crate::xmlrpc::interrupted() {
            return;
        }
        if let Err(e) = self.master_call(method, &[topic, &self.uri]) {
            tracing::debug!("{method} {topic}: {e}");
        }
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

    /// Registers every publication and watch of this node with the master again, handing
    /// each watch the publishers the master lists now; how many topics. The first failure
    /// ends the round.
    pub(crate) fn register_again(&self) -> Result<usize, RuntimeError> {
        let published: Vec<(String, String)> = self
            .publications
            .locked()
            .values()
            .map(|t| (t.name.clone(), t.msg_type.clone()))
            .collect();
        for (topic, kind) in &published {
            self.master_call("registerPublisher", &[topic, kind, &self.uri])
                .map_err(RuntimeError::Master)?;
        }
        let watched = self.subscriptions();
        for (topic, kind) in &watched {
            let listed = self
                .master_call("registerSubscriber", &[topic, kind, &self.uri])
                .map_err(RuntimeError::Master)?;
            self.publisher_update(topic, &strings(&listed));
        }
        Ok(published.len() + watched.len())
    }

    /// Another process registered this node's name at the master (whose `shutdown` the
    /// slave API refused under a trust file): takes it back, on a thread of its own, at
    /// most once per [`RECLAIM_EVERY`] (an attempt asked for sooner waits; several asked
    /// for meanwhile make one). The node's `on_name_taken` hook does it if one is set;
    /// otherwise the node registers its topics again ([`Shared::register_again`]).
    pub(crate) fn name_taken(self: &Arc<Self>) {
        let wait = {
            let mut r = self.reclaim.locked();
            if r.pending {
                return;
            }
            r.pending = true;
            r.last.map_or(Duration::ZERO, |last| {
                (last + RECLAIM_EVERY).saturating_duration_since(Instant::now())
            })
        };
        let node = Arc::downgrade(self);
        let spawned = std::thread::Builder::new()
            .name("reclaim_name".into())
            .spawn(move || {
                std::thread::sleep(wait);
                let Some(node) = node.upgrade() else { return };
                node.reclaim_now();
            });
        if let Err(e) = spawned {
            self.reclaim.locked().pending = false;
            tracing::warn!(
                "{}: cannot start a thread to take the node's name back: {e}",
                self.name
            );
        }
    }

    /// The address of the process the master now lists under this node's name, when a
    /// trust file lets that address shut nodes down; `None` otherwise (or when the master
    /// cannot say).
    fn trusted_successor(&self) -> Option<std::net::IpAddr> {
        let policy = crate::trust::installed()?;
        let uri = match self.master_call("lookupNode", &[&self.name]).ok()? {
            Value::String(uri) => uri,
            _ => return None,
        };
        if uri == self.uri {
            return None;
        }
        let authority = uri.strip_prefix("http://")?.split('/').next()?;
        let addresses = std::net::ToSocketAddrs::to_socket_addrs(authority).ok()?;
        let mut trusted = None;
        for a in addresses {
            let ip = crate::trust::canonical(a.ip());
            if !policy.allows(ip, &crate::trust::Act::NodeApi("shutdown".into())) {
                return None;
            }
            trusted = Some(ip);
        }
        trusted
    }

    /// One attempt at taking the name back (see [`Shared::name_taken`]).
    fn reclaim_now(&self) {
        let count = {
            let mut r = self.reclaim.locked();
            // Cleared before the attempt: a takeover from now on asks for another one.
            r.pending = false;
            r.last = Some(Instant::now());
            r.count += 1;
            r.count
        };
        if crate::xmlrpc::interrupted() {
            return;
        }
        // A newcomer on a host the trust file lets shut nodes down (a restart on the car
        // computer) takes over, as ROS's nodes let it; an impostor elsewhere does not.
        if let Some(host) = self.trusted_successor() {
            self.request_shutdown(format!(
                "the master: a process on {host}, which the trust file lets shut nodes down, \
                 registered this node's name"
            ));
            return;
        }
        let hook = self.on_name_taken.locked().clone();
        if let Some(hook) = hook {
            hook();
            return;
        }
        match self.register_again() {
            Ok(topics) if crate::trust::logged_at(count) => tracing::warn!(
                "{}: another process registered this node's name at the master; took it \
                 back, registering {topics} topic(s) again{}",
                self.name,
                if count > 1 {
                    format!(" ({count} times now)")
                } else {
                    String::new()
                }
            ),
            Ok(_) => {}
            Err(e) => tracing::error!(
                "{}: another process registered this node's name at the master, and \
                 registering again failed: {e}",
                self.name
            ),
        }
    }

    pub(crate) fn request_shutdown(&self, why: String) {
        let mut reason = self.shutdown.0.locked();
        if reason.is_none() {
            tracing::warn!("{}: asked to shut down: {why}", self.name);
            *reason = Some(why);
        }
        self.shutdown.1.notify_all();
    }

    /// `getBusInfo` entries of the inbound links: `[id, publisher, "i", "TCPROS", topic,
    /// connected]`.
    pub(crate) fn inbound_info(&self) -> Vec<Value> {
        self.inbound
            .locked()
            .iter()
            .map(|(id, (topic, publisher))| {
                Value::Array(vec![
                    Value::Int(*id as i32),
                    Value::String(publisher.clone()),
                    Value::String("i".into()),
                    Value::String("TCPROS".into()),
                    Value::String(topic.clone()),
                    Value::Bool(true),
                ])
            })
            .collect()
    }

    pub(crate) fn param_update(&self, key: &str, value: &Value) {
        let callback = self.on_param.locked().clone();
        if let Some(cb) = callback {
            cb(key, value);
        }
    }
}

/// One encoded message, length prefix included, shared by every link's queue.
pub(crate) type Frame = Arc<[u8]>;

/// One advertised topic.
pub(crate) struct Topic {
    pub(crate) name: String,
    pub(crate) msg_type: String,
    pub(crate) md5sum: String,
    pub(crate) definition: String,
    pub(crate) latching: bool,
    pub(crate) queue_size: usize,
    pub(crate) gate: Arc<Gate>,
    pub(crate) state: Mutex<TopicState>,
    /// Signalled when a link is added or removed.
    pub(crate) links_changed: Condvar,
}

#[derive(Default)]
pub(crate) struct TopicState {
    pub(crate) links: Vec<Arc<Link>>,
    pub(crate) latched: Option<Frame>,
    pub(crate) closed: bool,
}

/// One subscriber's link.
pub(crate) struct Link {
    pub(crate) id: u64,
    pub(crate) peer: SocketAddr,
    pub(crate) caller: String,
    pub(crate) stream: TcpStream,
    pub(crate) queue: Mutex<Queue>,
    pub(crate) ready: Condvar,
    pub(crate) bytes: AtomicU64,
    pub(crate) messages: AtomicU64,
    pub(crate) dropped: AtomicU64,
    /// The link's places in the node's and the topic's caps, freed with the link.
    pub(crate) _passes: (Pass, Pass),
}

/// A link's outgoing messages: each frame with how much of it has been written already
/// (only the first can be under way).
#[derive(Default)]
pub(crate) struct Queue {
    pub(crate) frames: VecDeque<(Frame, usize)>,
    /// The writer thread is writing a frame it took off the queue.
    pub(crate) writing: bool,
    pub(crate) closed: bool,
}

impl Link {
    pub(crate) fn close(&self) {
        self.queue.locked().closed = true;
        self.ready.notify_all();
        let _ = self.stream.shutdown(Shutdown::Both);
    }

    /// Sends `frame` to the subscriber. When nothing is queued or being written, the
    /// frame goes straight into the socket from the caller's thread, without blocking
    /// (the common case: the writer thread is not woken at all); what the socket does not
    /// take at once is queued for the writer thread, at most `limit` frames, the oldest
    /// not yet started dropped first.
    pub(crate) fn push(&self, frame: &Frame, limit: usize) {
        let mut q = self.queue.locked();
        if q.closed {
            return;
        }
        let mut sent = 0;
        if q.frames.is_empty() && !q.writing {
            sent = send_now(&self.stream, frame);
            if sent == frame.len() {
                self.bytes.fetch_add(sent as u64, Ordering::Relaxed);
                self.messages.fetch_add(1, Ordering::Relaxed);
                return;
            }
        }
        while q.frames.len() >= limit.max(1) {
            // A frame partly written stays: dropping it would break the stream.
            let oldest = usize::from(q.frames.front().is_some_and(|(_, at)| *at > 0));
            if q.frames.remove(oldest).is_none() {
                break;
            }
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
        q.frames.push_back((frame.clone(), sent));
        drop(q);
        self.ready.notify_one();
    }
}

/// Writes what the socket takes of `frame` now, without waiting; how many bytes (0 when
/// it takes nothing or fails: the writer thread then meets the error).
fn send_now(stream: &TcpStream, frame: &[u8]) -> usize {
    use std::os::fd::AsRawFd;
    // SAFETY: send(2) reads at most `frame.len()` bytes from `frame`, alive across the call.
    let n = unsafe {
        libc::send(
            stream.as_raw_fd(),
            frame.as_ptr().cast(),
            frame.len(),
            libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
        )
    };
    usize::try_from(n).unwrap_or(0)
}

impl Topic {
    /// Closes every link and refuses new ones.
    pub(crate) fn close(&self) {
        let links = {
            let mut s = self.state.locked();
            s.closed = true;
            std::mem::take(&mut s.links)
        };
        for l in links {
            l.close();
        }
        self.links_changed.notify_all();
    }

    pub(crate) fn remove(&self, id: u64) {
        self.state.locked().links.retain(|l| l.id != id);
        self.links_changed.notify_all();
    }

    /// `getBusInfo` entries: `[id, subscriber, "o", "TCPROS", topic, connected, peer]`.
    pub(crate) fn bus_info(&self) -> Vec<Value> {
        self.state
            .locked()
            .links
            .iter()
            .map(|l| {
                Value::Array(vec![
                    Value::Int(l.id as i32),
                    Value::String(l.caller.clone()),
                    Value::String("o".into()),
                    Value::String("TCPROS".into()),
                    Value::String(self.name.clone()),
                    Value::Bool(true),
                    Value::String(format!("TCPROS connection on {}", l.peer)),
                ])
            })
            .collect()
    }

    /// The `getBusStats` entry: `[topic, bytes, [[id, bytes, messages, connected]...]]`.
    pub(crate) fn bus_stats(&self) -> Value {
        let links = self.state.locked().links.clone();
        let total: u64 = links.iter().map(|l| l.bytes.load(Ordering::Relaxed)).sum();
        let clamp = |n: u64| Value::Int(i32::try_from(n).unwrap_or(i32::MAX));
        Value::Array(vec![
            Value::String(self.name.clone()),
            clamp(total),
            Value::Array(
                links
                    .iter()
                    .map(|l| {
                        Value::Array(vec![
                            Value::Int(l.id as i32),
                            clamp(l.bytes.load(Ordering::Relaxed)),
                            clamp(l.messages.load(Ordering::Relaxed)),
                            Value::Bool(true),
                        ])
                    })
                    .collect(),
            ),
        ])
    }
}
