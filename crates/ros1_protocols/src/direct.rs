//! A TCPROS subscriber that hands each message to its callback from the thread that read
//! it off the socket, with two instants: when the read completed and when the message's
//! first bytes reached the socket (the kernel's receive timestamp, `SO_TIMESTAMPNS`).
//!
//! rosrust passes every message through three threads (the connection's reader, the
//! topic's fan-out, the subscription's callback thread) before a callback sees it; on a
//! busy two-core machine each hand-over is a scheduling delay. A measuring instrument
//! (`gemctl profile`) wants the arrival time, not the time the third thread got to run.
//!
//! The protocol, as any ROS 1 client implements it: register as a subscriber with the
//! master (which answers with the publishers' slave URIs), ask each publisher's slave
//! `requestTopic` for a TCPROS endpoint, connect, exchange connection headers (the
//! publisher checks our type and MD5 and may refuse), then read length-prefixed messages.
//! The subscription lives on a [`crate::runtime::Node`] ([`subscribe_on`]; [`subscribe`]
//! uses this process's node, [`crate::this_node`]): the master's `publisherUpdate` calls
//! say when publishers come and go, and the master is never asked again. Each step of
//! linking (`requestTopic`, the TCP connect, the header exchange) gives up after
//! [`crate::xmlrpc::SLAVE_CALL_WITHIN`], so a publisher that accepts and never answers cannot
//! hold up linking; a publisher that failed is tried again after [`RETRY_AFTER`]. Names
//! resolve as the node's do (namespace, `~private`, `from:=to` remappings on the command
//! line).
//!
//! A link that ends (the publisher closed it, or its computer went out of reach) is made
//! again from the master's list of publishers, which rosrust's own subscriber never does:
//! its reader thread ends and the publisher stays "connected" in its books. A cut cable
//! gives no end of file, so the socket probes its peer ([`LINK_PROBE`]): a link silent
//! that long with no answer to a probe ends, and the publisher is asked again.
//!
//! Under a trust file ([`crate::trust`]), a publisher whose address may not publish the
//! topic is dropped after the header exchange and recorded as a refusal; it is not tried
//! again while the master lists it and the same policy is in force ([`DirectSubscriber::link_report`]
//! lists it).

use crate::trust::{Act, Policy};
use crate::wire::{decode_header, encode_header, read_body, read_frame};
use crate::Lock;
use crate::RosError;
use std::collections::HashMap;
use std::io::Write;
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How long a publisher whose connection failed is left alone.
pub const RETRY_AFTER: Duration = Duration::from_secs(2);

pub use crate::net::{LINK_PROBE, LINK_PROBES};

/// A publisher linked to a subscription: its slave URI and the connection header it sent
/// (`callerid`, `type`, `message_definition`, `latching`, ...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// The publisher's slave API URI.
    pub uri: String,
    /// The publisher's connection header.
    pub header: HashMap<String, String>,
}

impl Link {
    /// The publishing node's name (`callerid`), empty if it sent none.
    pub fn caller_id(&self) -> &str {
        self.header.get("callerid").map_or("", String::as_str)
    }
}

/// A live direct subscription; dropping it closes every link and unregisters.
pub struct DirectSubscriber {
    inner: Arc<Inner>,
    linking: Option<std::thread::JoinHandle<()>>,
    /// The node's watch on the topic's publishers.
    watch: Option<crate::runtime::PublisherWatch>,
}

struct Inner {
    topic: String,
    msg_type: String,
    md5sum: String,
    definition: String,
    /// The name publishers are asked as (`callerid`): the node's.
    caller_id: String,
    /// The runtime node the subscription lives on: each link is listed in its `getBusInfo`.
    node: crate::runtime::NodeHandle,
    stop: AtomicBool,
    /// Wakes the linking thread when `stop` is set, when the publishers change or a link
    /// ends (the count of such events).
    stop_signal: (Mutex<u64>, std::sync::Condvar),
    /// Publisher slave URI → a handle on its connected stream (to shut it down).
    links: Mutex<HashMap<String, TcpStream>>,
    /// Publishers whose connection failed (reported once each), when it was tried and why.
    failed: Mutex<HashMap<String, (Instant, String)>>,
    /// Publishers the trust file refused (see [`crate::trust`]), under which policy and
    /// why: not tried again while the master lists them and that policy is in force.
    refused: Mutex<HashMap<String, Refused>>,
    /// The publishers the master listed last, and when; or why it could not be asked.
    listed: Mutex<(Instant, Result<Vec<String>, String>)>,
}

/// A publisher the trust file refused.
struct Refused {
    /// The policy that refused it.
    under: Option<Arc<Policy>>,
    /// The refusal, in words.
    why: String,
}

/// When a message came in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arrival {
    /// When the kernel queued its first bytes on the socket (`SO_TIMESTAMPNS`). On
    /// loopback that is within the sender's write, so it leaves out how long the reading
    /// thread took to be scheduled. Equal to `read` where the kernel gave no timestamp.
    pub wire: Instant,
    /// When the reading thread had the whole message.
    pub read: Instant,
}

impl Arrival {
    /// How long the message waited in the socket for the reading thread.
    pub fn queued(&self) -> Duration {
        self.read.saturating_duration_since(self.wire)
    }
}

type OnLink = dyn Fn(&Link) + Send + Sync;
/// Reads an established link until it ends, and says why it ended.
type ReadLink = dyn Fn(&Link, TcpStream, Stopping<'_>) -> std::io::Error + Send + Sync;

/// Whether the subscription is being dropped: a link reader of [`subscribe_reading`] looks
/// at it whenever it wakes, and ends (its stream is shut down too).
#[derive(Clone, Copy)]
pub struct Stopping<'a>(&'a AtomicBool);

impl Stopping<'_> {
    /// The subscription is being dropped.
    pub fn requested(self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// Subscribes to `topic` (resolved as this process's node resolves its names);
/// `on_message` gets each message and its [`Arrival`], on the link's own thread (one per
/// publisher).
pub fn subscribe<T: rosrust::Message>(
    topic: &str,
    on_message: impl Fn(T, Arrival) + Send + Sync + 'static,
) -> Result<DirectSubscriber, RosError> {
    subscribe_linked(topic, |_| {}, move |m, at, _| on_message(m, at))
}

/// [`subscribe`], telling which publisher each message came from: `on_link` runs once per
/// link made (before its first message), `on_message` gets the link with each message.
pub fn subscribe_linked<T: rosrust::Message>(
    topic: &str,
    on_link: impl Fn(&Link) + Send + Sync + 'static,
    on_message: impl Fn(T, Arrival, &Link) + Send + Sync + 'static,
) -> Result<DirectSubscriber, RosError> {
    let node = crate::this_node::get()?;
    subscribe_on(&node, topic, on_link, on_message)
}

impl Inner {
    fn new<T: rosrust::Message>(
        topic: &str,
        caller_id: String,
        node: crate::runtime::NodeHandle,
    ) -> Arc<Inner> {
        Arc::new(Inner {
            topic: topic.to_owned(),
            msg_type: T::msg_type(),
            md5sum: T::md5sum(),
            definition: T::msg_definition(),
            caller_id,
            node,
            stop: AtomicBool::new(false),
            stop_signal: (Mutex::default(), std::sync::Condvar::new()),
            links: Mutex::default(),
            failed: Mutex::default(),
            refused: Mutex::default(),
            listed: Mutex::new((Instant::now(), Ok(Vec::new()))),
        })
    }

    /// Wakes the linking thread of a subscription on a runtime node.
    fn wake(&self) {
        *self.stop_signal.0.locked() += 1;
        self.stop_signal.1.notify_all();
    }
}

/// [`subscribe_linked`] on a runtime node ([`crate::runtime::Node`]), which registers the
/// subscription at its slave URI: the master's `publisherUpdate` calls say when publishers
/// come and go, so the master is never asked again. A thread links to each publisher the
/// master lists; it sleeps until the list changes or a link ends, waking every
/// [`RETRY_AFTER`] only while a listed publisher cannot be linked.
pub fn subscribe_on<T: rosrust::Message>(
    node: &crate::runtime::Node,
    topic: &str,
    on_link: impl Fn(&Link) + Send + Sync + 'static,
    on_message: impl Fn(T, Arrival, &Link) + Send + Sync + 'static,
) -> Result<DirectSubscriber, RosError> {
    subscribe_reading::<T>(node, topic, on_link, move |link, stream, _| {
        read_messages(link, stream, &on_message)
    })
}

/// [`subscribe_on`] for a reader that reads each link's stream its own way (the one that
/// reads `/clock` only when its time is asked for, [`crate::lazy`]): `read` runs on the link's own thread
/// with the linked stream (blocking, the header exchange done) until the link ends, and
/// returns why it ended; it looks at [`Stopping`] whenever it wakes.
pub fn subscribe_reading<T: rosrust::Message>(
    node: &crate::runtime::Node,
    topic: &str,
    on_link: impl Fn(&Link) + Send + Sync + 'static,
    read: impl Fn(&Link, TcpStream, Stopping<'_>) -> std::io::Error + Send + Sync + 'static,
) -> Result<DirectSubscriber, RosError> {
    let fail = |e: crate::runtime::RuntimeError| RosError::new(e.to_string());
    let topic = node.resolve(topic).map_err(fail)?;
    let inner = Inner::new::<T>(&topic, node.name().to_owned(), node.handle());
    let weak = Arc::downgrade(&inner);
    let watch = node
        .watch_publishers(&topic, &inner.msg_type, move |publishers| {
            if let Some(inner) = weak.upgrade() {
                *inner.listed.locked() = (Instant::now(), Ok(publishers.to_vec()));
                inner.wake();
            }
        })
        .map_err(fail)?;
    let callbacks = (
        Arc::new(read) as Arc<ReadLink>,
        Arc::new(on_link) as Arc<OnLink>,
    );
    let linking = {
        let inner = inner.clone();
        std::thread::Builder::new()
            .name(format!("direct{topic}"))
            .spawn(move || link_on_updates(&inner, &callbacks))
            .map_err(|e| RosError::new(format!("cannot start a thread: {e}")))?
    };
    Ok(DirectSubscriber {
        inner,
        linking: Some(linking),
        watch: Some(watch),
    })
}

/// A runtime subscription's linking thread: links to what the master listed, then sleeps
/// until the list changes, a link ends, or (only while a listed publisher is not linked)
/// [`RETRY_AFTER`] passes.
fn link_on_updates(inner: &Arc<Inner>, callbacks: &(Arc<ReadLink>, Arc<OnLink>)) {
    while !inner.stop.load(Ordering::SeqCst) {
        // Read before the list: a change after this is seen below.
        let seen = *inner.stop_signal.0.locked();
        let listed = inner.listed.locked().1.clone().unwrap_or_default();
        let policy = crate::trust::installed();
        connect_new(inner, &listed, callbacks, policy.as_ref());
        // A publisher the trust file refused is not waited for.
        let waiting = {
            let (links, refused) = (inner.links.locked(), inner.refused.locked());
            listed
                .iter()
                .any(|uri| !links.contains_key(uri) && !refused.contains_key(uri))
        };
        let events = inner.stop_signal.0.locked();
        let unchanged = |n: &mut u64| *n == seen && !inner.stop.load(Ordering::SeqCst);
        let cv = &inner.stop_signal.1;
        if waiting {
            drop(
                cv.wait_timeout_while(events, RETRY_AFTER, unchanged)
                    .unwrap_or_else(|e| e.into_inner()),
            );
        } else {
            drop(
                cv.wait_while(events, unchanged)
                    .unwrap_or_else(|e| e.into_inner()),
            );
        }
    }
}

impl DirectSubscriber {
    /// Publishers with an established link (headers exchanged).
    pub fn publisher_count(&self) -> usize {
        self.inner.links.locked().len()
    }

    /// How linking stands, in words: the publishers the master listed last, those linked,
    /// the last failure of each that failed, and those the trust file refused (for a
    /// failure message or a log).
    pub fn link_report(&self) -> String {
        self.inner.report()
    }
}

impl Inner {
    fn report(&self) -> String {
        let (at, listed) = self.listed.locked().clone();
        let listed = match listed {
            Ok(uris) => format!("{uris:?}"),
            Err(e) => format!("not asked ({e})"),
        };
        let linked: Vec<String> = self.links.locked().keys().cloned().collect();
        let failed: Vec<String> = self
            .failed
            .locked()
            .iter()
            .map(|(uri, (when, why))| {
                format!("{uri} {:.1} s ago: {why}", when.elapsed().as_secs_f64())
            })
            .collect();
        let refused: Vec<String> = self
            .refused
            .locked()
            .iter()
            .map(|(uri, r)| format!("{uri}: {}", r.why))
            .collect();
        let refused = if refused.is_empty() {
            String::new()
        } else {
            format!("; refused by the trust file {refused:?}")
        };
        format!(
            "{}: master listed {listed} {:.1} s ago; linked {linked:?}; failed {failed:?}{refused}",
            self.topic,
            at.elapsed().as_secs_f64()
        )
    }
}

impl Drop for DirectSubscriber {
    fn drop(&mut self) {
        {
            let _guard = self.inner.stop_signal.0.locked();
            self.inner.stop.store(true, Ordering::SeqCst);
            self.inner.stop_signal.1.notify_all();
        }
        for (_, stream) in self.inner.links.locked().drain() {
            let _ = stream.shutdown(Shutdown::Both);
        }
        if let Some(d) = self.linking.take() {
            let _ = d.join();
        }
        // Unregisters from the master, through the runtime node.
        self.watch.take();
    }
}

/// Connects to every publisher in `publishers` not linked yet, unless `policy` (the trust
/// file in force) refused it before: a refusal holds while the master lists the publisher
/// and the same policy is in force.
fn connect_new(
    inner: &Arc<Inner>,
    publishers: &[String],
    (read, on_link): &(Arc<ReadLink>, Arc<OnLink>),
    policy: Option<&Arc<Policy>>,
) {
    let same = |a: Option<&Arc<Policy>>, b: Option<&Arc<Policy>>| match (a, b) {
        (Some(a), Some(b)) => Arc::ptr_eq(a, b),
        _ => false,
    };
    inner
        .refused
        .locked()
        .retain(|uri, r| publishers.contains(uri) && same(r.under.as_ref(), policy));
    for uri in publishers {
        let resting = inner
            .failed
            .locked()
            .get(uri)
            .is_some_and(|(t, _)| t.elapsed() < RETRY_AFTER);
        if inner.stop.load(Ordering::SeqCst)
            || resting
            || inner.links.locked().contains_key(uri)
            || inner.refused.locked().contains_key(uri)
        {
            continue;
        }
        match connect(inner, uri, policy.map(|p| &**p)) {
            Ok((stream, reader, header)) => {
                inner.failed.locked().remove(uri);
                inner.links.locked().insert(uri.clone(), stream);
                let link = Link {
                    uri: uri.clone(),
                    header,
                };
                on_link(&link);
                let listed = {
                    let publisher = Some(link.caller_id()).filter(|c| !c.is_empty());
                    inner
                        .node
                        .inbound_link(&inner.topic, publisher.unwrap_or(uri))
                };
                let (inner, read) = (inner.clone(), read.clone());
                let spawned = std::thread::Builder::new()
                    .name(format!("direct{}", inner.topic))
                    .spawn(move || {
                        let why = read(&link, reader, Stopping(&inner.stop));
                        if !inner.stop.load(Ordering::SeqCst) {
                            tracing::info!(
                                "{}: link to {} ({}) ended ({why}); linking again while the master lists it",
                                inner.topic,
                                link.caller_id(),
                                link.uri
                            );
                        }
                        inner.links.locked().remove(&link.uri);
                        inner.wake();
                        drop(listed);
                    });
                if let Err(e) = spawned {
                    tracing::warn!("cannot start a reader thread: {e}");
                }
            }
            Err(LinkFailure::Untrusted(why)) => {
                // Logged by the refusal's record (once per publisher, not per try).
                inner.failed.locked().remove(uri);
                inner.refused.locked().insert(
                    uri.clone(),
                    Refused {
                        under: policy.cloned(),
                        why,
                    },
                );
            }
            Err(LinkFailure::Other(e)) => {
                if inner
                    .failed
                    .locked()
                    .insert(uri.clone(), (Instant::now(), e.clone()))
                    .is_none()
                {
                    tracing::warn!(
                        "{}: cannot connect to the publisher at {uri}: {e}",
                        inner.topic
                    );
                }
            }
        }
    }
}

/// Why a link was not made.
#[derive(Debug)]
enum LinkFailure {
    /// The trust file does not allow the publisher's address to publish the topic.
    Untrusted(String),
    /// Anything else: tried again after [`RETRY_AFTER`].
    Other(String),
}

impl From<String> for LinkFailure {
    fn from(e: String) -> Self {
        LinkFailure::Other(e)
    }
}

/// `requestTopic`, TCP connect and the header exchange, and the check of the publisher's
/// address against `policy`; returns a handle for shutdown, the stream to read and the
/// publisher's header.
fn connect(
    inner: &Inner,
    uri: &str,
    policy: Option<&Policy>,
) -> Result<(TcpStream, TcpStream, HashMap<String, String>), LinkFailure> {
    // Bounded: a publisher that never answers is tried again later, not waited for.
    let (host, port) = crate::xmlrpc::request_topic(uri, &inner.caller_id, &inner.topic)
        .map_err(|e| e.to_string())?;
    let within = crate::xmlrpc::SLAVE_CALL_WITHIN;
    let address = std::net::ToSocketAddrs::to_socket_addrs(&(host.as_str(), port))
        .map_err(|e| format!("{host}:{port}: {e}"))?
        .next()
        .ok_or_else(|| format!("{host}:{port}: no address"))?;
    let mut stream =
        TcpStream::connect_timeout(&address, within).map_err(|e| format!("{host}:{port}: {e}"))?;
    stream
        .set_nodelay(true)
        .and_then(|()| stream.set_read_timeout(Some(within)))
        .and_then(|()| stream.set_write_timeout(Some(within)))
        .map_err(|e| e.to_string())?;
    let request = encode_header(&[
        ("callerid", &inner.caller_id),
        ("topic", &inner.topic),
        ("type", &inner.msg_type),
        ("md5sum", &inner.md5sum),
        ("message_definition", &inner.definition),
        ("tcp_nodelay", "1"),
    ]);
    stream.write_all(&request).map_err(|e| e.to_string())?;
    let answer = decode_header(&read_frame(&mut stream).map_err(|e| e.to_string())?)?;
    if let Some(error) = answer.get("error") {
        return Err(format!("the publisher refused: {error}").into());
    }
    if let Some(policy) = policy {
        trusted_publisher(policy, &stream, &inner.topic, &answer)?;
    }
    // "*" on either side: a subscriber that takes any type (raw bytes), or a publisher that
    // sends any.
    if inner.md5sum != "*"
        && answer
            .get("md5sum")
            .is_some_and(|m| m != "*" && *m != inner.md5sum)
    {
        return Err(format!(
            "MD5 {} from the publisher, {} here",
            answer["md5sum"], inner.md5sum
        )
        .into());
    }
    stream
        .set_read_timeout(None)
        .and_then(|()| stream.set_write_timeout(None))
        .map_err(|e| e.to_string())?;
    timestamp_arrivals(&stream)?;
    crate::net::probe_peer(&stream, LINK_PROBE, LINK_PROBES).map_err(|e| e.to_string())?;
    let handle = stream.try_clone().map_err(|e| e.to_string())?;
    Ok((handle, stream, answer))
}

/// Whether `policy` allows the peer of `stream` (a publisher whose connection header is
/// `header`) to publish `topic`; if not, the stream is shut down and the refusal recorded.
fn trusted_publisher(
    policy: &Policy,
    stream: &TcpStream,
    topic: &str,
    header: &HashMap<String, String>,
) -> Result<(), LinkFailure> {
    let ip = crate::trust::canonical(
        stream
            .peer_addr()
            .map_err(|e| format!("the publisher's address: {e}"))?
            .ip(),
    );
    let act = Act::Publish(topic.to_owned());
    if policy.allows(ip, &act) {
        return Ok(());
    }
    let _ = stream.shutdown(Shutdown::Both);
    let caller = header.get("callerid").map_or("", String::as_str);
    crate::trust::refuse(&act, ip, caller, &policy.refusal_reason(ip, &act));
    let caller = crate::trust::clean_caller(caller);
    Err(LinkFailure::Untrusted(format!(
        "{ip} ({caller}) may not publish {topic} (trust file)"
    )))
}

/// The usual reader: each message, decoded, to `callback` with its [`Arrival`], until the
/// link ends.
fn read_messages<T: rosrust::Message>(
    link: &Link,
    mut stream: TcpStream,
    callback: &impl Fn(T, Arrival, &Link),
) -> std::io::Error {
    loop {
        let (body, wire) = match read_timed_frame(&mut stream) {
            Ok(frame) => frame,
            Err(e) => return e,
        };
        let read = Instant::now();
        let arrival = Arrival {
            wire: wire.map_or(read, |w| to_instant(w, read)),
            read,
        };
        match T::decode(std::io::Cursor::new(&body)) {
            Ok(msg) => callback(msg, arrival, link),
            Err(e) => tracing::warn!(
                "{}: cannot decode a message from {}: {e}",
                link.header.get("topic").map_or("a topic", String::as_str),
                link.uri
            ),
        }
    }
}

/// Asks the kernel to timestamp what arrives on `stream` (`SO_TIMESTAMPNS`).
pub(crate) fn timestamp_arrivals(stream: &TcpStream) -> Result<(), String> {
    use std::os::fd::AsRawFd;
    let on: libc::c_int = 1;
    // SAFETY: a valid socket, an int option of the right size.
    let rc = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(format!(
            "SO_TIMESTAMPNS: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// [`read_frame`], with the kernel's receive timestamp of the frame's first bytes: the
/// length prefix is read with `recvmsg` alone, so the timestamp is the one of the segment
/// that carried it.
fn read_timed_frame(stream: &mut TcpStream) -> std::io::Result<(Vec<u8>, Option<SystemTime>)> {
    let mut len = [0u8; 4];
    let mut got = 0;
    let mut stamp = None;
    while got < len.len() {
        let (n, t) = recv_timed(stream, &mut len[got..])?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        stamp = stamp.or(t);
        got += n;
    }
    Ok((read_body(stream, len)?, stamp))
}

/// One `recvmsg` into `buf`: the bytes read and the `SCM_TIMESTAMPNS` that came with them.
pub(crate) fn recv_timed(
    stream: &TcpStream,
    buf: &mut [u8],
) -> std::io::Result<(usize, Option<SystemTime>)> {
    use std::os::fd::AsRawFd;
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // Room for a few control messages, aligned for `cmsghdr`.
    let mut control = [0u64; 16];
    // SAFETY: msghdr is plain data; all-zero is its empty value.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control) as _;
    let n = loop {
        // SAFETY: `msg` points at `iov` (→ `buf`) and `control`, all alive for the call.
        let n = unsafe { libc::recvmsg(stream.as_raw_fd(), &mut msg, 0) };
        if n >= 0 {
            break n as usize;
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    };
    let mut stamp = None;
    // SAFETY: the CMSG_* walk stays within `control`, bounded by the kernel's
    // `msg_controllen`; the timestamp is read unaligned.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                stamp = u64::try_from(ts.tv_sec)
                    .ok()
                    .map(|s| UNIX_EPOCH + Duration::new(s, ts.tv_nsec as u32));
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    Ok((n, stamp))
}

/// The monotonic instant of a wall-clock time `at` in the recent past, with `now` the
/// monotonic instant read just before (the two clocks are read back to back).
pub(crate) fn to_instant(at: SystemTime, now: Instant) -> Instant {
    let wall_now = SystemTime::now();
    match wall_now.duration_since(at) {
        Ok(ago) => now.checked_sub(ago).unwrap_or(now),
        // A timestamp "in the future" (clock stepped): no better guess than now.
        Err(_) => now,
    }
}
