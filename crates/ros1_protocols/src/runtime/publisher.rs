//! TCPROS publishers: one port per node, a handshake no peer can stall, a bounded queue and
//! bounded writes per subscriber.
//!
//! rosrust reads each connection header on its one accept thread without a timeout, so the
//! first silent peer holds every later subscriber of the topic. Here the accept thread only
//! accepts; each connection gets a thread of its own at once, which must receive the whole
//! header and send ours within [`super::Config::handshake_within`], or closes it and logs the
//! peer (and the topic, when the header got that far). [`super::Config::max_connections`]
//! caps the connections of the node (a flood costs that many threads, for at most the
//! deadline each) and [`super::Config::max_links_per_publisher`] the subscribers of a topic.
//!
//! One port per node rather than one per publisher, as roscpp does: the subscriber's header
//! names the topic, so one accept thread and one node-wide cap serve every publisher, and a
//! node with twenty topics holds one listening socket, not twenty.
//!
//! A link is two threads: a writer that sleeps on its queue (at most the publisher's
//! `queue_size` messages, the oldest dropped first, as roscpp's queue does; a message
//! goes straight into the socket from the publishing thread when nothing is queued and the
//! socket takes it at once, so the writer wakes only for a subscriber that lags) and writes with
//! [`super::Config::write_within`] as the longest wait for room in a 4 MiB send buffer; and a
//! reader that sleeps on the socket to see the subscriber leave (a subscriber sends nothing
//! after its header), so a gone subscriber frees its place at once, not at the next message.
//! TCP keepalive probes end a link whose peer went out of reach, patiently
//! ([`crate::net::PUBLISHER_LINK_PROBE`] says why).

use super::config::RuntimeError;
use super::serve::{self, read_frame_by, write_all_by, Gate, Pass};
use super::state::{Frame, Link, Shared, Topic};
use crate::wire::{decode_header, encode_header};
use crate::Lock;
use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// A handshake or link thread's stack.
const STACK: usize = 128 << 10;

/// Starts the node's TCPROS port on `bind`.
pub(crate) fn listen(shared: &Arc<Shared>, bind: &str) -> std::io::Result<serve::Listener> {
    let gate = Gate::new(
        format!("{}: TCPROS", shared.name),
        shared.config.max_connections,
    );
    let node = Arc::downgrade(shared);
    serve::Listener::start(
        "tcpros",
        bind,
        gate,
        STACK,
        Arc::new(move |stream, peer, pass| {
            if let Some(node) = node.upgrade() {
                handshake(&node, stream, peer, pass);
            }
        }),
    )
}

/// Why a handshake ended without a link.
enum Failed {
    /// The peer did not keep to the protocol or its deadline (logged as a warning).
    Peer(String),
    /// The peer left, or asked for something this node does not have (logged for debug).
    Quiet(String),
}

/// One connection: the header exchange by the deadline, then the link.
fn handshake(node: &Arc<Shared>, stream: TcpStream, peer: SocketAddr, pass: Pass) {
    let within = node.config.handshake_within;
    let deadline = Instant::now() + within;
    let mut topic_name = None;
    let result = exchange(node, stream, deadline, &mut topic_name, pass);
    let about = match &topic_name {
        Some(t) => format!("{}: TCPROS peer {peer} for {t}", node.name),
        None => format!("{}: TCPROS peer {peer}", node.name),
    };
    match result {
        Ok((topic, link)) => run_link(&topic, link),
        Err(Failed::Peer(why)) => tracing::warn!("{about}: {why}; closed"),
        Err(Failed::Quiet(why)) => tracing::debug!("{about}: {why}; closed"),
    }
}

fn exchange(
    node: &Arc<Shared>,
    mut stream: TcpStream,
    deadline: Instant,
    topic_name: &mut Option<String>,
    node_pass: Pass,
) -> Result<(Arc<Topic>, Arc<Link>), Failed> {
    let within = node.config.handshake_within;
    let io = |e: std::io::Error| match e.kind() {
        ErrorKind::UnexpectedEof | ErrorKind::ConnectionReset => {
            Failed::Quiet(format!("left during the handshake ({e})"))
        }
        ErrorKind::TimedOut => Failed::Peer(format!("no complete handshake within {within:?}")),
        _ => Failed::Peer(e.to_string()),
    };
    let _ = stream.set_nodelay(true);
    let body = read_frame_by(&mut stream, deadline).map_err(io)?;
    let header = decode_header(&body).map_err(Failed::Peer)?;
    let field = |k: &str| header.get(k).map_or("", String::as_str);
    let name = field("topic").to_owned();
    *topic_name = Some(name.clone());
    let refuse = |stream: &mut TcpStream, why: String| {
        let _ = write_all_by(stream, &encode_header(&[("error", &why)]), deadline);
        why
    };
    let topic = node.publications.locked().get(&name).cloned();
    let Some(topic) = topic else {
        return Err(Failed::Quiet(refuse(
            &mut stream,
            format!("{} does not publish {name:?}", node.name),
        )));
    };
    let (md5, kind) = (field("md5sum"), field("type"));
    if md5 != "*"
        && (md5 != topic.md5sum || (!kind.is_empty() && kind != "*" && kind != topic.msg_type))
    {
        return Err(Failed::Peer(refuse(
            &mut stream,
            format!(
                "{} subscribes to {name} as {kind} ({md5}), it is {} ({})",
                field("callerid"),
                topic.msg_type,
                topic.md5sum
            ),
        )));
    }
    let Some(topic_pass) = topic.gate.enter() else {
        return Err(Failed::Quiet(refuse(
            &mut stream,
            format!(
                "{name} has {} subscribers, the most allowed",
                node.config.max_links_per_publisher
            ),
        )));
    };
    let ours = encode_header(&[
        ("callerid", &node.name),
        ("topic", &name),
        ("type", &topic.msg_type),
        ("md5sum", &topic.md5sum),
        ("message_definition", &topic.definition),
        ("latching", if topic.latching { "1" } else { "0" }),
    ]);
    write_all_by(&mut stream, &ours, deadline).map_err(io)?;
    let options = crate::net::LinkOptions {
        send_timeout: node.config.write_within,
        ..crate::net::LinkOptions::NODES
    };
    crate::net::tune_link(&stream, options)
        .and_then(|()| {
            crate::net::probe_peer(
                &stream,
                crate::net::PUBLISHER_LINK_PROBE,
                crate::net::PUBLISHER_LINK_PROBES,
            )
        })
        .and_then(|()| stream.set_read_timeout(None))
        .map_err(|e| Failed::Peer(e.to_string()))?;
    let link = Arc::new(Link {
        id: node.next_id(),
        peer: stream
            .peer_addr()
            .unwrap_or_else(|_| ([0, 0, 0, 0], 0).into()),
        caller: field("callerid").to_owned(),
        stream,
        queue: Mutex::default(),
        ready: Condvar::new(),
        bytes: AtomicU64::new(0),
        messages: AtomicU64::new(0),
        dropped: AtomicU64::new(0),
        _passes: (node_pass, topic_pass),
    });
    {
        let mut s = topic.state.locked();
        if s.closed {
            return Err(Failed::Quiet(format!("{name} is no longer published")));
        }
        if let Some(latched) = &s.latched {
            link.push(latched, topic.queue_size);
        }
        s.links.push(link.clone());
    }
    topic.links_changed.notify_all();
    tracing::debug!(
        "{}: {name} linked to {} at {}",
        node.name,
        link.caller,
        link.peer
    );
    Ok((topic, link))
}

/// The link's life: this thread writes; a second one reads to see the subscriber leave
/// (both on the link's one socket).
fn run_link(topic: &Arc<Topic>, link: Arc<Link>) {
    let watcher = {
        let link = link.clone();
        std::thread::Builder::new()
            .name("tcpros_rx".into())
            .stack_size(32 << 10)
            .spawn(move || {
                let mut sink = [0u8; 256];
                while matches!((&link.stream).read(&mut sink), Ok(n) if n > 0) {}
                link.close();
            })
    };
    if let Err(e) = watcher {
        tracing::warn!("{}: cannot start a link thread: {e}", topic.name);
        link.close();
    }
    let ended = loop {
        let next = {
            let mut q = link.queue.locked();
            loop {
                if q.closed {
                    break None;
                }
                if let Some(f) = q.frames.pop_front() {
                    q.writing = true;
                    break Some(f);
                }
                q = link.ready.wait(q).unwrap_or_else(|e| e.into_inner());
            }
        };
        let Some((frame, at)) = next else {
            break None;
        };
        let written = (&link.stream).write_all(&frame[at..]);
        link.queue.locked().writing = false;
        if let Err(e) = written {
            break Some(e);
        }
        link.bytes.fetch_add(frame.len() as u64, Ordering::Relaxed);
        link.messages.fetch_add(1, Ordering::Relaxed);
    };
    match ended {
        Some(e) => tracing::info!(
            "{}: link to {} at {} dropped: {e}",
            topic.name,
            link.caller,
            link.peer
        ),
        None => tracing::debug!("{}: {} at {} left", topic.name, link.caller, link.peer),
    }
    link.close();
    topic.remove(link.id);
}

/// A publisher of `T` on a [`super::Node`]; clones publish on the same topic, and dropping
/// the last one unregisters the topic and closes its links.
pub struct Publisher<T> {
    inner: Arc<Advertised>,
    _type: std::marker::PhantomData<fn(T)>,
}

// Not derived: a publisher is clonable whatever `T` is.
impl<T> Clone for Publisher<T> {
    fn clone(&self) -> Self {
        Publisher {
            inner: self.inner.clone(),
            _type: std::marker::PhantomData,
        }
    }
}

/// The topic a publisher and its clones share.
struct Advertised {
    node: Arc<Shared>,
    topic: Arc<Topic>,
}

/// What a topic carries, as its connection headers and the master name it: the type's name,
/// MD5 sum and full definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeInfo {
    /// `package/Type`.
    pub msg_type: String,
    /// The MD5 sum of the definition.
    pub md5sum: String,
    /// The full definition, dependencies included.
    pub definition: String,
}

impl TypeInfo {
    /// A generated message type's.
    pub fn of<T: rosrust::Message>() -> TypeInfo {
        TypeInfo {
            msg_type: T::msg_type(),
            md5sum: T::md5sum(),
            definition: T::msg_definition(),
        }
    }
}

impl<T: rosrust::Message> Publisher<T> {
    pub(crate) fn advertise(
        node: &Arc<Shared>,
        topic: &str,
        queue_size: usize,
        latching: bool,
        info: TypeInfo,
    ) -> Result<Publisher<T>, RuntimeError> {
        let name = node.resolve(topic)?;
        let topic = Arc::new(Topic {
            gate: Gate::new(
                format!("{}: {name}", node.name),
                node.config.max_links_per_publisher,
            ),
            name: name.clone(),
            msg_type: info.msg_type,
            md5sum: info.md5sum,
            definition: info.definition,
            latching,
            queue_size: queue_size.max(1),
            state: Mutex::default(),
            links_changed: Condvar::new(),
        });
        {
            let mut publications = node.publications.locked();
            if publications.contains_key(&name) {
                return Err(RuntimeError::Advertised(name));
            }
            // Listed before registering: a subscriber the master tells at once finds it.
            publications.insert(name.clone(), topic.clone());
        }
        let registered =
            node.master_call("registerPublisher", &[&name, &topic.msg_type, &node.uri]);
        if let Err(e) = registered {
            node.publications.locked().remove(&name);
            return Err(RuntimeError::Master(e));
        }
        Ok(Publisher {
            inner: Arc::new(Advertised {
                node: node.clone(),
                topic,
            }),
            _type: std::marker::PhantomData,
        })
    }

    /// Queues `msg` for every linked subscriber (and keeps it for later ones when
    /// latching). Never blocks on a subscriber. Takes the message or a reference to it.
    pub fn send(&self, msg: impl std::borrow::Borrow<T>) -> Result<(), RuntimeError> {
        let msg = msg.borrow();
        let t = &self.inner.topic;
        let mut s = t.state.locked();
        if s.links.is_empty() && !t.latching {
            return Ok(());
        }
        let mut bytes = vec![0u8; 4];
        let len = msg.encode(&mut bytes).and_then(|()| {
            u32::try_from(bytes.len() - 4).map_err(|_| {
                std::io::Error::new(ErrorKind::InvalidData, "a message of 4 GiB or more")
            })
        });
        let len = len.map_err(|source| RuntimeError::Encode {
            topic: t.name.clone(),
            source,
        })?;
        bytes[..4].copy_from_slice(&len.to_le_bytes());
        let frame: Frame = bytes.into();
        for l in &s.links {
            l.push(&frame, t.queue_size);
        }
        if t.latching {
            s.latched = Some(frame);
        }
        Ok(())
    }

    /// The resolved topic.
    pub fn topic(&self) -> &str {
        &self.inner.topic.name
    }

    /// Subscribers linked now.
    pub fn subscriber_count(&self) -> usize {
        self.inner.topic.state.locked().links.len()
    }

    /// Waits until at least `n` subscribers are linked, or `timeout` passes; whether they are.
    pub fn wait_for_subscribers(&self, n: usize, timeout: Duration) -> bool {
        let s = self.inner.topic.state.locked();
        let (s, _) = self
            .inner
            .topic
            .links_changed
            .wait_timeout_while(s, timeout, |s| s.links.len() < n)
            .unwrap_or_else(|e| e.into_inner());
        s.links.len() >= n
    }

    /// Messages dropped so far because a subscriber's queue was full, per subscriber
    /// (`callerid` → count).
    pub fn dropped(&self) -> HashMap<String, u64> {
        self.inner
            .topic
            .state
            .locked()
            .links
            .iter()
            .map(|l| (l.caller.clone(), l.dropped.load(Ordering::Relaxed)))
            .collect()
    }
}

impl Drop for Advertised {
    fn drop(&mut self) {
        let name = &self.topic.name;
        let ours = {
            let mut publications = self.node.publications.locked();
            let ours = publications
                .get(name)
                .is_some_and(|t| Arc::ptr_eq(t, &self.topic));
            if ours {
                publications.remove(name);
            }
            ours
        };
        self.topic.close();
        if ours {
            self.node.withdraw("unregisterPublisher", name);
        }
    }
}
