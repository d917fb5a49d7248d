//! ROS 1 services over TCPROS: a server ([`advertise`]) and a client ([`Client`]) of our own.
//!
//! Why not rosrust's: its server reads each caller's connection header on its one accept
//! thread with no timeout, so a caller that stalls (a process starved of CPU) holds up every
//! other caller; it answers one request per connection, so a persistent caller (rospy's
//! `ServiceProxy(name, T, persistent=True)`, roscpp's `serviceClient(name, true)`) loses its
//! connection after the first call; and it answers with Nagle's algorithm on, in several
//! small writes. Its client opens a connection per call, retries a refused connection 15
//! times over half a minute, and reads without a timeout, so a controller polling the
//! simulator's pose at its control rate pays a connection set-up per tick and can wait
//! without bound.
//!
//! The protocol, as roscpp and rospy speak it: the server registers `rosrpc://host:port`
//! with the master (`registerService`); a caller looks the URI up (`lookupService`),
//! connects and sends a connection header (`callerid`, `service`, `md5sum`, and
//! `persistent=1` to keep the connection, or `probe=1` only to see the server's header).
//! The server answers with its header (`callerid`, `md5sum`, `type`, `request_type`,
//! `response_type`) or with `error=…`. Each request is then a length-prefixed message; each
//! answer is one byte (1 = success) and a length-prefixed body: the response, or the error
//! text.
//!
//! Here the server runs on the runtime's listener (`crate::runtime`): every connection has
//! its own thread from the moment it is accepted, at most [`MAX_CALLERS`] are open at once,
//! the whole connection header (and, without `persistent=1`, the request) must arrive
//! within the node's handshake deadline (a byte a second does not reset it; a header
//! longer than 1 MiB is refused unread), answers go out in one write with
//! `TCP_NODELAY`, a handler that panics answers the caller with an error (the node keeps
//! serving), and dropping the [`Service`] unregisters it and closes its connections.

use crate::wire::{decode_header, encode_header, read_frame};
use crate::Lock;
use crate::RosError;
use rosrust::{RosMsg, ServicePair};
use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use thiserror::Error;

/// Callers connected to one service at once (the suite's busiest service has a handful);
/// past it new connections are closed unread, and the first refusal is logged.
pub const MAX_CALLERS: usize = 64;

/// A live service; dropping it unregisters it from the master and closes its connections.
pub struct Service {
    inner: Arc<Served>,
    listener: Option<crate::runtime::serve::Listener>,
}

struct Served {
    name: String,
    api: std::sync::OnceLock<String>,
    stop: AtomicBool,
    /// Open connections (to shut them down when the service goes).
    connections: Mutex<HashMap<u64, TcpStream>>,
    next_id: AtomicU64,
}

/// What a handler returns: the response, or an error text for the caller.
pub type Answer<T> = Result<<T as ServicePair>::Response, String>;

/// Advertises `service` (resolved like a topic name: relative, `~private`, remappable),
/// calling `handler` for each request on the caller's connection thread. Requests on
/// different connections are handled concurrently.
pub fn advertise<T, F>(service: &str, handler: F) -> Result<Service, RosError>
where
    T: ServicePair,
    F: Fn(T::Request) -> Answer<T> + Send + Sync + 'static,
{
    let node = crate::this_node::get()?;
    let name = node
        .resolve(service)
        .map_err(|e| RosError::new(e.to_string()))?;
    let host = node.host().to_owned();
    let within = node.config().handshake_within;
    let inner = Arc::new(Served {
        api: std::sync::OnceLock::new(),
        name: name.clone(),
        stop: AtomicBool::new(false),
        connections: Mutex::default(),
        next_id: AtomicU64::new(0),
    });
    let handler: Arc<Handler<T>> = Arc::new(handler);
    let served = Arc::downgrade(&inner);
    let listener = crate::runtime::serve::Listener::start(
        &format!("srv{name}"),
        crate::runtime::serve::bind_address(&host),
        crate::runtime::serve::Gate::new(format!("service {name}"), MAX_CALLERS),
        STACK,
        Arc::new(move |stream, _peer, _pass| {
            if let Some(s) = served.upgrade() {
                connection::<T>(&s, stream, &handler, within);
            }
        }),
    )
    .map_err(|e| RosError::new(format!("service {name}: cannot listen: {e}")))?;
    let _ = inner
        .api
        .set(format!("rosrpc://{host}:{}", listener.port()));
    let service = Service {
        inner,
        listener: Some(listener),
    };
    crate::this_node::master()?.register_service(&service.inner.name, service.inner.api())?;
    SERVED.locked().push(Arc::downgrade(&service.inner));
    Ok(service)
}

/// A connection thread's stack.
const STACK: usize = 256 << 10;

impl Served {
    fn api(&self) -> &str {
        self.api.get().map_or("", String::as_str)
    }
}

/// Every service this process serves (dropped ones are pruned on the next registration).
static SERVED: Mutex<Vec<std::sync::Weak<Served>>> = Mutex::new(Vec::new());

/// Whether a service of this process answers at `api` (a `rosrpc://` URI).
pub(crate) fn serves(api: &str) -> bool {
    SERVED
        .locked()
        .iter()
        .filter_map(std::sync::Weak::upgrade)
        .any(|s| s.api() == api)
}

/// Registers every live service of this process that `master` does not list (`listed`)
/// again (a restarted master, which the master watch finds); returns how many.
pub(crate) fn register_missing(
    master: &crate::master_api::Master,
    listed: &[String],
) -> Result<usize, RosError> {
    let live: Vec<Arc<Served>> = {
        let mut served = SERVED.locked();
        served.retain(|s| s.strong_count() > 0);
        served.iter().filter_map(std::sync::Weak::upgrade).collect()
    };
    let mut registered = 0;
    for s in &live {
        if !s.stop.load(Ordering::SeqCst) && !listed.contains(&s.name) {
            master.register_service(&s.name, s.api())?;
            registered += 1;
        }
    }
    Ok(registered)
}

impl Service {
    /// The resolved service name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The `rosrpc://` URI callers connect to.
    pub fn uri(&self) -> &str {
        self.inner.api()
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let s = &self.inner;
        s.stop.store(true, Ordering::SeqCst);
        // A node that is leaving (or interrupted, and so about to) withdraws its services
        // in one bounded pass: asking here would only wait on a master that may not answer.
        if !crate::this_node::leaving() && !crate::xmlrpc::interrupted() {
            if let Err(e) =
                crate::this_node::master().and_then(|m| m.unregister_service(&s.name, s.api()))
            {
                tracing::debug!("unregisterService {}: {e}", s.name);
            }
        }
        // Stops accepting; connections already open are shut down below.
        self.listener.take();
        for (_, c) in s.connections.locked().drain() {
            let _ = c.shutdown(Shutdown::Both);
        }
    }
}

type Handler<T> = dyn Fn(<T as ServicePair>::Request) -> Answer<T> + Send + Sync;

/// One accepted connection, listed while it lasts (so that dropping the service ends it).
fn connection<T: ServicePair>(
    inner: &Arc<Served>,
    stream: TcpStream,
    handler: &Arc<Handler<T>>,
    within: Duration,
) {
    if inner.stop.load(Ordering::SeqCst) {
        return;
    }
    let id = inner.next_id.fetch_add(1, Ordering::Relaxed);
    if let Ok(handle) = stream.try_clone() {
        inner.connections.locked().insert(id, handle);
    }
    let deadline = Instant::now() + within;
    if let Err(e) = serve::<T>(&inner.name, stream, &**handler, deadline) {
        if !inner.stop.load(Ordering::SeqCst) {
            tracing::warn!("service {}: {e}", inner.name);
        }
    }
    inner.connections.locked().remove(&id);
}

/// One caller's connection: the header exchange, then requests until the caller closes
/// (or, without `persistent=1`, one request).
fn serve<T: ServicePair>(
    name: &str,
    mut stream: TcpStream,
    handler: &Handler<T>,
    deadline: Instant,
) -> Result<(), String> {
    let peer = stream
        .peer_addr()
        .map_or_else(|_| "?".to_owned(), |a| a.to_string());
    stream.set_nodelay(true).map_err(|e| e.to_string())?;
    let header = match crate::runtime::serve::read_frame_by(&mut stream, deadline) {
        Ok(h) => decode_header(&h)?,
        // A caller that connected and left (a port scan, an aborted lookup): nothing to say.
        Err(e) if e.kind() == ErrorKind::UnexpectedEof => return Ok(()),
        Err(e) if e.kind() == ErrorKind::TimedOut => {
            return Err(format!(
                "{peer}: no connection header by the deadline; closed"
            ))
        }
        Err(e) => return Err(format!("{peer}: no connection header: {e}; closed")),
    };
    let caller = header
        .get("callerid")
        .map_or("(no callerid)", String::as_str);
    let refuse = |mut stream: TcpStream, why: String| {
        let _ = stream.write_all(&encode_header(&[("error", &why)]));
        Err(format!("refused {caller}: {why}"))
    };
    if header.get("service").is_some_and(|s| s != name) {
        return refuse(stream, format!("this is {name}, not {}", header["service"]));
    }
    let md5 = T::md5sum();
    let ours = encode_header(&[
        ("callerid", &crate::this_node::name()),
        ("md5sum", &md5),
        ("type", &T::msg_type()),
        ("request_type", &format!("{}Request", T::msg_type())),
        ("response_type", &format!("{}Response", T::msg_type())),
    ]);
    if header.get("probe").is_some_and(|p| p == "1") {
        // The caller may already have gone (rospy's wait_for_service does not read this).
        let _ = stream.write_all(&ours);
        return Ok(());
    }
    match header.get("md5sum") {
        Some(theirs) if theirs == "*" || *theirs == md5 => {}
        theirs => {
            let why = format!(
                "{caller} calls {name} with MD5 {}, the service's is {md5} ({})",
                theirs.map_or("(none)", String::as_str),
                T::msg_type()
            );
            return refuse(stream, why);
        }
    }
    stream.write_all(&ours).map_err(|e| e.to_string())?;
    let persistent = header.get("persistent").is_some_and(|p| p == "1");
    loop {
        // A persistent connection may idle between calls for as long as the caller likes;
        // a one-call connection sends its request by the handshake's deadline.
        let body = if persistent {
            stream
                .set_read_timeout(None)
                .and_then(|()| read_frame(&mut stream))
        } else {
            crate::runtime::serve::read_frame_by(&mut stream, deadline)
        };
        let body = match body {
            Ok(b) => b,
            Err(e) if e.kind() == ErrorKind::UnexpectedEof => return Ok(()),
            Err(e) => return Err(format!("{caller}: {e}")),
        };
        let answer = match T::Request::decode(std::io::Cursor::new(&body)) {
            Ok(req) => std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handler(req)))
                .unwrap_or_else(|_| Err(format!("{name}: the handler panicked"))),
            Err(e) => Err(format!("{name}: cannot decode the request: {e}")),
        };
        stream
            .write_all(&encode_answer::<T>(answer))
            .map_err(|e| format!("{caller}: {e}"))?;
        if !persistent {
            return Ok(());
        }
    }
}

/// One answer as it goes on the wire: the success byte and a length-prefixed body.
fn encode_answer<T: ServicePair>(answer: Answer<T>) -> Vec<u8> {
    let mut out = vec![1u8, 0, 0, 0, 0];
    let failure = match answer {
        Ok(res) => res
            .encode(&mut out)
            .err()
            .map(|e| format!("cannot encode the response: {e}")),
        Err(why) => Some(why),
    };
    if let Some(why) = failure {
        out.truncate(5);
        out[0] = 0;
        out.extend_from_slice(why.as_bytes());
    }
    let len = (out.len() - 5) as u32;
    out[1..5].copy_from_slice(&len.to_le_bytes());
    out
}

/// Why a call produced no response.
#[derive(Debug, Error, PartialEq)]
pub enum CallError {
    /// No answer within the timeout.
    #[error("{service}: no answer within {timeout:?}")]
    Timeout {
        /// Service name.
        service: String,
        /// The timeout.
        timeout: Duration,
    },
    /// The service answered with an error, or could not be reached.
    #[error("{service}: {reason}")]
    Failed {
        /// Service name.
        service: String,
        /// The error.
        reason: String,
    },
}

/// A caller of service `T` that keeps one connection open (`persistent=1`) and bounds
/// every call by a timeout.
///
/// A call that times out keeps the connection: the server answers a persistent connection
/// in order, so the late answer is read and dropped at the start of the next call, and a
/// slow server costs the caller the calls it was slow for, not a new connection (a
/// connection set-up is what a starved server is slowest at). Bytes that arrive in part
/// before a deadline are kept for the next call. The connection is closed on an error, or
/// when more than [`MAX_OWED`] answers are overdue; the next call connects again, asking
/// the master for the service's URI only when the last one failed (a restarted server is
/// found). Calls from several threads take turns.
pub struct Client<T: ServicePair> {
    service: String,
    link: Mutex<Link>,
    _type: std::marker::PhantomData<fn() -> T>,
}

/// How many answers to calls that timed out may be outstanding before the connection is
/// given up.
pub const MAX_OWED: usize = 8;

/// The caller's side of one connection.
#[derive(Default)]
struct Link {
    /// Where the service was last found.
    uri: Option<std::net::SocketAddr>,
    /// The connection, once its header exchange has begun.
    stream: Option<TcpStream>,
    /// The server's connection header has been read.
    open: bool,
    /// Bytes read but not yet used.
    inbuf: Vec<u8>,
    /// Answers still to come for calls whose caller stopped waiting.
    owed: usize,
}

impl Link {
    fn close(&mut self) {
        if let Some(s) = self.stream.take() {
            let _ = s.shutdown(Shutdown::Both);
        }
        self.open = false;
        self.inbuf.clear();
        self.owed = 0;
    }

    /// The next complete frame in the input (a header, or an answer when `answer`: one
    /// status byte before the length), reading until `deadline`.
    fn next(&mut self, answer: bool, deadline: Instant) -> Result<(u8, Vec<u8>), Fault> {
        let skip = usize::from(answer);
        loop {
            if self.inbuf.len() >= skip + 4 {
                let len =
                    u32::from_le_bytes(self.inbuf[skip..skip + 4].try_into().expect("four bytes"))
                        as usize;
                if len > crate::wire::MAX_MESSAGE {
                    return Err(Fault::Other(format!("a frame of {len} bytes")));
                }
                if self.inbuf.len() >= skip + 4 + len {
                    let status = if answer { self.inbuf[0] } else { 1 };
                    let body = self.inbuf[skip + 4..skip + 4 + len].to_vec();
                    self.inbuf.drain(..skip + 4 + len);
                    return Ok((status, body));
                }
            }
            let stream = self
                .stream
                .as_mut()
                .ok_or(Fault::Other("not connected".into()))?;
            stream
                .set_read_timeout(Some(left(deadline)?))
                .map_err(Fault::io)?;
            let mut chunk = [0u8; 8192];
            match stream.read(&mut chunk) {
                Ok(0) => return Err(Fault::Other("the service closed the connection".into())),
                Ok(n) => self.inbuf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(Fault::io(e)),
            }
        }
    }
}

impl<T: ServicePair> Client<T> {
    /// A caller of `service` (resolved like a topic name). It connects on the first call.
    pub fn new(service: &str) -> Result<Self, RosError> {
        Ok(Client {
            service: crate::this_node::resolve(service)?,
            link: Mutex::new(Link::default()),
            _type: std::marker::PhantomData,
        })
    }

    /// The resolved service name.
    pub fn name(&self) -> &str {
        &self.service
    }

    /// Calls the service; gives up after `timeout` (a master lookup excepted: the master is
    /// asked only when there is no known URI, and answers or fails at once).
    pub fn call(&self, req: &T::Request, timeout: Duration) -> Result<T::Response, CallError> {
        let deadline = Instant::now() + timeout;
        let mut link = self.link.locked();
        let result = self.exchange(&mut link, req, deadline);
        match &result {
            Err(Fault::Late) if link.owed <= MAX_OWED => {}
            Err(Fault::Late) => link.close(),
            Err(Fault::Other(_)) => {
                link.close();
                // The service may have moved (restarted): look it up again next time.
                link.uri = None;
            }
            Ok(_) => {}
        }
        match result {
            Ok(Ok(res)) => Ok(res),
            Ok(Err(reason)) => Err(CallError::Failed {
                service: self.service.clone(),
                reason: format!("the service failed: {reason}"),
            }),
            Err(Fault::Late) => Err(CallError::Timeout {
                service: self.service.clone(),
                timeout,
            }),
            Err(Fault::Other(reason)) => Err(CallError::Failed {
                service: self.service.clone(),
                reason,
            }),
        }
    }

    fn exchange(
        &self,
        link: &mut Link,
        req: &T::Request,
        deadline: Instant,
    ) -> Result<Answer<T>, Fault> {
        if link.stream.is_none() {
            self.connect(link, deadline)?;
        }
        if !link.open {
            let (_, header) = link.next(false, deadline)?;
            let header = decode_header(&header).map_err(Fault::Other)?;
            if let Some(error) = header.get("error") {
                return Err(Fault::Other(format!("refused: {error}")));
            }
            link.open = true;
        }
        // Answers to calls that gave up come first: a connection is answered in order.
        while link.owed > 0 {
            link.next(true, deadline)?;
            link.owed -= 1;
        }
        let mut frame = vec![0u8; 4];
        req.encode(&mut frame)
            .map_err(|e| Fault::Other(e.to_string()))?;
        let len = (frame.len() - 4) as u32;
        frame[..4].copy_from_slice(&len.to_le_bytes());
        let stream = link.stream.as_mut().expect("connected above");
        stream
            .set_write_timeout(Some(left(deadline)?))
            // A request written in part would break the framing: any failure closes.
            .and_then(|()| stream.write_all(&frame))
            .map_err(|e| Fault::Other(format!("cannot send the request: {e}")))?;
        link.owed += 1;
        let (status, body) = link.next(true, deadline)?;
        link.owed -= 1;
        Ok(if status == 1 {
            Ok(T::Response::decode(std::io::Cursor::new(&body))
                .map_err(|e| Fault::Other(format!("cannot decode the response: {e}")))?)
        } else {
            Err(String::from_utf8_lossy(&body).into_owned())
        })
    }

    /// Finds the service (the master, unless a URI is known), connects and sends our
    /// connection header; the server's is read by the call.
    fn connect(&self, link: &mut Link, deadline: Instant) -> Result<(), Fault> {
        let addr = match link.uri {
            Some(a) => a,
            None => {
                let uri = crate::this_node::master()
                    .and_then(|m| m.lookup_service(&self.service))
                    .map_err(|e| Fault::Other(format!("not advertised ({e})")))?;
                let addr = uri
                    .trim_start_matches("rosrpc://")
                    .to_socket_addrs()
                    .ok()
                    .and_then(|mut a| a.next())
                    .ok_or_else(|| Fault::Other(format!("bad service URI {uri:?}")))?;
                link.uri = Some(addr);
                addr
            }
        };
        let mut stream =
            TcpStream::connect_timeout(&addr, left(deadline)?).map_err(|e| match Fault::io(e) {
                Fault::Late => Fault::Late,
                Fault::Other(e) => Fault::Other(format!("{addr}: {e}")),
            })?;
        stream.set_nodelay(true).map_err(Fault::io)?;
        stream
            .set_write_timeout(Some(left(deadline)?))
            .and_then(|()| {
                stream.write_all(&encode_header(&[
                    ("callerid", &crate::this_node::name()),
                    ("service", &self.service),
                    ("md5sum", &T::md5sum()),
                    ("type", &T::msg_type()),
                    ("persistent", "1"),
                ]))
            })
            .map_err(|e| Fault::Other(format!("cannot send the connection header: {e}")))?;
        link.stream = Some(stream);
        link.open = false;
        link.inbuf.clear();
        link.owed = 0;
        Ok(())
    }
}

/// Why an exchange failed.
enum Fault {
    Late,
    Other(String),
}

impl Fault {
    fn io(e: std::io::Error) -> Fault {
        match e.kind() {
            ErrorKind::WouldBlock | ErrorKind::TimedOut => Fault::Late,
            _ => Fault::Other(e.to_string()),
        }
    }
}

/// The time left before `deadline`, or [`Fault::Late`].
fn left(deadline: Instant) -> Result<Duration, Fault> {
    deadline
        .checked_duration_since(Instant::now())
        .filter(|d| !d.is_zero())
        .ok_or(Fault::Late)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::msgs::std_srvs::{SetBool, SetBoolRes};

    #[test]
    fn a_success_is_one_byte_and_a_framed_response() {
        let res = SetBoolRes {
            success: true,
            message: "ok".into(),
        };
        let wire = encode_answer::<SetBool>(Ok(res.clone()));
        assert_eq!(wire[0], 1);
        let len = u32::from_le_bytes(wire[1..5].try_into().unwrap()) as usize;
        assert_eq!(len, wire.len() - 5);
        assert_eq!(
            SetBoolRes::decode(std::io::Cursor::new(&wire[5..])).unwrap(),
            res
        );
    }

    #[test]
    fn a_failure_is_a_zero_byte_and_the_framed_text() {
        let wire = encode_answer::<SetBool>(Err("no such model".into()));
        assert_eq!(wire[0], 0);
        assert_eq!(&wire[1..5], &13u32.to_le_bytes());
        assert_eq!(&wire[5..], b"no such model");
    }
}
