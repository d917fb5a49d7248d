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
//!
//! A caller whose address the trust file in force does not allow to call the service
//! ([`crate::trust`]), or one on another computer calling a service advertised with
//! [`advertise_from_this_computer`], gets an `error` header naming its address and the
//! service (`rosservice call` prints it) and is recorded as a refusal; a `probe=1`
//! (discovery) is answered all the same.
//!
//! Under a trust file a [`Client`] uses the server the master names only if the server's
//! address may serve the service (`serve:` in the file, [`crate::trust::Policy::may_serve`]):
//! any host can register a server of any service at the master. An untrusted server's
//! connection is closed before anything is sent on it, recorded as a refusal (its
//! `rosrpc://` URI as the caller id) and the call fails with
//! `refused: <address> may not serve <service> (trust file)`; the next call asks the
//! master again.

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
    /// Who may call it.
    callers: Callers,
}

/// What a handler returns: the response, or an error text for the caller.
pub type Answer<T> = Result<<T as ServicePair>::Response, String>;

/// Advertises `service` (resolved like a topic name: relative, `~private`, remappable),
/// calling `handler` for each request on the caller's connection thread. Requests on
/// different connections are handled concurrently. Callers the trust file in force
/// ([`crate::trust`]) does not allow to call it are refused.
pub fn advertise<T, F>(service: &str, handler: F) -> Result<Service, RosError>
where
    T: ServicePair,
    F: Fn(T::Request) -> Answer<T> + Send + Sync + 'static,
{
    advertise_for::<T, F>(service, handler, Callers::Trusted)
}

/// [`advertise`] for callers on this computer only (a peer whose address is one of this
/// computer's, [`crate::trust::is_this_computer`]), whether or not a trust file is in
/// force (one that is restricts them further). Everyone else is refused as an untrusted
/// caller is: an `error` header, and a [`crate::trust::refusals`] entry.
pub fn advertise_from_this_computer<T, F>(service: &str, handler: F) -> Result<Service, RosError>
where
    T: ServicePair,
    F: Fn(T::Request) -> Answer<T> + Send + Sync + 'static,
{
    advertise_for::<T, F>(service, handler, Callers::ThisComputer)
}

/// Who may call a service (beyond a `probe`, which anyone may send).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Callers {
    /// Every caller the trust file in force allows (everyone, with none).
    Trusted,
    /// Callers on this computer, and only those the trust file in force allows.
    ThisComputer,
}

impl Callers {
    /// Why a caller at `ip` (`None`: unknown) may not call `service` under `policy`: the
    /// text of its `error` header and the reason for the log; `None` if it may.
    fn refusal(
        self,
        policy: Option<&crate::trust::Policy>,
        ip: Option<std::net::IpAddr>,
        service: &str,
    ) -> Option<(String, String)> {
        let restricted = policy.is_some() || self == Callers::ThisComputer;
        let Some(ip) = ip.map(crate::trust::canonical) else {
            return restricted.then(|| {
                let why = "the caller's address is unknown".to_owned();
                (format!("refused: {why}"), why)
            });
        };
        if self == Callers::ThisComputer && !crate::trust::is_this_computer(ip) {
            return Some((
                format!("refused: {ip} may not call {service} (callers on this computer only)"),
                format!("{service} takes calls from this computer only"),
            ));
        }
        let act = crate::trust::Act::Call(service.to_owned());
        match policy {
            Some(p) if !p.allows(ip, &act) => Some((
                format!("refused: {ip} may not call {service} (trust file)"),
                p.refusal_reason(ip, &act),
            )),
            _ => None,
        }
    }
}

fn advertise_for<T, F>(service: &str, handler: F, callers: Callers) -> Result<Service, RosError>
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
        callers,
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
    let policy = crate::trust::installed();
    let who = (inner.callers, policy.as_deref());
    if let Err(e) = serve::<T>(&inner.name, stream, &**handler, deadline, who) {
        if !inner.stop.load(Ordering::SeqCst) {
            tracing::warn!("service {}: {e}", inner.name);
        }
    }
    inner.connections.locked().remove(&id);
}

/// One caller's connection: the header exchange, then requests until the caller closes
/// (or, without `persistent=1`, one request). `who` may call: the service's callers and
/// the trust file in force; anyone else's call (not a probe) is refused.
fn serve<T: ServicePair>(
    name: &str,
    mut stream: TcpStream,
    handler: &Handler<T>,
    deadline: Instant,
    (callers, policy): (Callers, Option<&crate::trust::Policy>),
) -> Result<(), String> {
    let peer_addr = stream.peer_addr().ok();
    let peer = peer_addr.map_or_else(|| "?".to_owned(), |a| a.to_string());
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
    if let Some((error, why)) = callers.refusal(policy, peer_addr.map(|a| a.ip()), name) {
        // Said once per kind by the refusal's log; the connection ends here.
        let _ = stream.write_all(&encode_header(&[("error", &error)]));
        let _ = stream.shutdown(Shutdown::Both);
        if let Some(a) = peer_addr {
            let caller = header.get("callerid").map_or("", String::as_str);
            crate::trust::refuse(
                &crate::trust::Act::Call(name.to_owned()),
                a.ip(),
                caller,
                &why,
            );
        }
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
///
/// Under a trust file ([`crate::trust`]) the server must be on a host the file lets serve
/// the service (`serve:`); a call that the master sends elsewhere fails with
/// `refused: <address> may not serve <service> (trust file)`, without a request sent.
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
    /// Where the service was last found: its `rosrpc://` URI and that URI's address.
    uri: Option<(String, std::net::SocketAddr)>,
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
    /// Under a trust file, only a server on a host it lets serve the service is used.
    pub fn call(&self, req: &T::Request, timeout: Duration) -> Result<T::Response, CallError> {
        let policy = crate::trust::installed();
        self.call_under(req, timeout, policy.as_deref())
    }

    /// [`Client::call`] under `policy` (`None`: any server).
    fn call_under(
        &self,
        req: &T::Request,
        timeout: Duration,
        policy: Option<&crate::trust::Policy>,
    ) -> Result<T::Response, CallError> {
        let deadline = Instant::now() + timeout;
        let mut link = self.link.locked();
        let result = self.exchange(&mut link, req, deadline, policy);
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
        policy: Option<&crate::trust::Policy>,
    ) -> Result<Answer<T>, Fault> {
        if link.stream.is_none() {
            self.connect(link, deadline, policy)?;
        }
        if !link.open {
            let (_, header) = link.next(false, deadline)?;
            let header = decode_header(&header).map_err(Fault::Other)?;
            if let Some(error) = header.get("error") {
                return Err(Fault::Other(if error.starts_with("refused") {
                    error.clone()
                } else {
                    format!("refused: {error}")
                }));
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

    /// Finds the service (the master, unless a URI is known), connects, checks the
    /// server's address against `policy` and sends our connection header; the server's
    /// is read by the call.
    fn connect(
        &self,
        link: &mut Link,
        deadline: Instant,
        policy: Option<&crate::trust::Policy>,
    ) -> Result<(), Fault> {
        let (uri, addr) = match &link.uri {
            Some(known) => known.clone(),
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
                link.uri = Some((uri.clone(), addr));
                (uri, addr)
            }
        };
        let mut stream =
            TcpStream::connect_timeout(&addr, left(deadline)?).map_err(|e| match Fault::io(e) {
                Fault::Late => Fault::Late,
                Fault::Other(e) => Fault::Other(format!("{addr}: {e}")),
            })?;
        // The server's address, before anything is sent to it: any host can register a
        // server of any service at the master.
        let peer = stream.peer_addr().map_or(addr.ip(), |a| a.ip());
        if let Some((error, why)) = server_refusal(policy, peer, &self.service) {
            let _ = stream.shutdown(Shutdown::Both);
            let act = crate::trust::Act::Serve(self.service.clone());
            crate::trust::refuse(&act, peer, &uri, &why);
            return Err(Fault::Other(error));
        }
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

/// Why a server at `ip` may not serve `service` to our caller under `policy`: the call's
/// error and the reason for the log; `None` if it may (always, with no policy).
fn server_refusal(
    policy: Option<&crate::trust::Policy>,
    ip: std::net::IpAddr,
    service: &str,
) -> Option<(String, String)> {
    let policy = policy?;
    let ip = crate::trust::canonical(ip);
    let act = crate::trust::Act::Serve(service.to_owned());
    (!policy.allows(ip, &act)).then(|| {
        (
            format!("refused: {ip} may not serve {service} (trust file)"),
            policy.refusal_reason(ip, &act),
        )
    })
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

    /// `caller` was refused `act` once, from 127.0.0.1.
    fn refused_once_from_here(caller: &str, act: crate::trust::Act) {
        let mine: Vec<_> = crate::trust::refusals()
            .into_iter()
            .filter(|r| r.caller_id == caller)
            .collect();
        assert_eq!(mine.len(), 1, "{mine:?}");
        assert_eq!(mine[0].act, act);
        assert_eq!(
            mine[0].address,
            "127.0.0.1".parse::<std::net::IpAddr>().unwrap()
        );
        assert_eq!(mine[0].count, 1);
    }
    use crate::msgs::std_srvs::{SetBool, SetBoolRes};
    use rosrust::Message;

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

    /// Serves `/trust_test/enable` on `stream` to `callers` under `policy`, answering
    /// `success: true`, for at most 5 s.
    fn serve_enable(
        stream: TcpStream,
        callers: Callers,
        policy: Option<&crate::trust::Policy>,
    ) -> Result<(), String> {
        let handler = |_req: crate::msgs::std_srvs::SetBoolReq| -> Answer<SetBool> {
            Ok(SetBoolRes {
                success: true,
                message: "enabled".into(),
            })
        };
        let deadline = Instant::now() + Duration::from_secs(5);
        serve::<SetBool>(
            "/trust_test/enable",
            stream,
            &handler,
            deadline,
            (callers, policy),
        )
    }

    /// A connection to a `serve` thread (on 127.0.0.1) of service `/trust_test/enable`
    /// under `policy`, answering `success: true`; the caller's end and the server's thread.
    fn serving(
        policy: Option<crate::trust::Policy>,
        callers: Callers,
    ) -> (TcpStream, std::thread::JoinHandle<Result<(), String>>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let caller = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (stream, _) = listener.accept().unwrap();
        let server = std::thread::spawn(move || serve_enable(stream, callers, policy.as_ref()));
        caller
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        (caller, server)
    }

    fn send_header(caller: &mut TcpStream, callerid: &str, extra: &[(&str, &str)]) {
        let md5 = SetBool::md5sum();
        let mut fields = vec![
            ("callerid", callerid),
            ("service", "/trust_test/enable"),
            ("md5sum", md5.as_str()),
        ];
        fields.extend_from_slice(extra);
        caller.write_all(&encode_header(&fields)).unwrap();
    }

    fn request(caller: &mut TcpStream) -> SetBoolRes {
        let mut frame = vec![0u8; 4];
        crate::msgs::std_srvs::SetBoolReq { data: true }
            .encode(&mut frame)
            .unwrap();
        let len = (frame.len() - 4) as u32;
        frame[..4].copy_from_slice(&len.to_le_bytes());
        caller.write_all(&frame).unwrap();
        let mut head = [0u8; 5];
        caller.read_exact(&mut head).unwrap();
        assert_eq!(head[0], 1, "a success");
        let mut body = vec![0u8; u32::from_le_bytes(head[1..].try_into().unwrap()) as usize];
        caller.read_exact(&mut body).unwrap();
        SetBoolRes::decode(std::io::Cursor::new(&body)).unwrap()
    }

    /// Trusts 127.0.0.1 with nothing (a host no rule names may only subscribe).
    fn trusting_nobody() -> crate::trust::Policy {
        crate::trust::Policy::parse("rules: [{hosts: [192.0.2.0/24], call: ['*']}]").unwrap()
    }

    #[test]
    fn an_untrusted_caller_gets_an_error_header_and_is_recorded() {
        let callerid = format!("/untrusted_caller_{}", std::process::id());
        let (mut caller, server) = serving(Some(trusting_nobody()), Callers::Trusted);
        send_header(&mut caller, &callerid, &[("persistent", "1")]);
        let header = decode_header(&read_frame(&mut caller).unwrap()).unwrap();
        assert_eq!(
            header.get("error").map(String::as_str),
            Some("refused: 127.0.0.1 may not call /trust_test/enable (trust file)"),
            "{header:?}"
        );
        assert!(
            !header.contains_key("md5sum"),
            "no service header: {header:?}"
        );
        // The connection is closed: a request gets no answer.
        let mut rest = Vec::new();
        assert_eq!(
            caller
                .read_to_end(&mut rest)
                .map(|_| rest.len())
                .unwrap_or(0),
            0
        );
        assert_eq!(server.join().unwrap(), Ok(()));
        refused_once_from_here(
            &callerid,
            crate::trust::Act::Call("/trust_test/enable".into()),
        );
    }

    #[test]
    fn an_untrusted_probe_is_answered() {
        let (mut caller, server) = serving(Some(trusting_nobody()), Callers::Trusted);
        send_header(&mut caller, "/prober", &[("probe", "1")]);
        let header = decode_header(&read_frame(&mut caller).unwrap()).unwrap();
        assert_eq!(header.get("md5sum"), Some(&SetBool::md5sum()), "{header:?}");
        assert!(!header.contains_key("error"));
        assert_eq!(server.join().unwrap(), Ok(()));
    }

    #[test]
    fn a_trusted_caller_and_a_caller_on_this_computer_are_served() {
        let trusted =
            crate::trust::Policy::parse("rules: [{hosts: [self], call: [/trust_test/*]}]").unwrap();
        for (policy, callers) in [
            (Some(trusted), Callers::Trusted),
            (None, Callers::Trusted),
            (None, Callers::ThisComputer),
        ] {
            let (mut caller, server) = serving(policy, callers);
            send_header(&mut caller, "/trusted", &[("persistent", "1")]);
            let header = decode_header(&read_frame(&mut caller).unwrap()).unwrap();
            assert!(!header.contains_key("error"), "{callers:?}: {header:?}");
            assert_eq!(request(&mut caller).message, "enabled");
            assert_eq!(request(&mut caller).message, "enabled", "persistent");
            drop(caller);
            assert_eq!(server.join().unwrap(), Ok(()));
        }
    }

    #[test]
    fn only_this_computer_calls_a_service_advertised_for_it() {
        let service = "/pacmod_bridge/enable";
        let here: std::net::IpAddr = "127.0.0.1".parse().unwrap();
        let there: std::net::IpAddr = "192.0.2.1".parse().unwrap();
        assert_eq!(
            Callers::ThisComputer.refusal(None, Some(here), service),
            None
        );
        let (error, why) = Callers::ThisComputer
            .refusal(None, Some(there), service)
            .expect("refused");
        assert_eq!(
            error,
            "refused: 192.0.2.1 may not call /pacmod_bridge/enable (callers on this computer only)"
        );
        assert!(why.contains("this computer only"), "{why}");
        assert!(Callers::ThisComputer.refusal(None, None, service).is_some());
        // Without the restriction and a policy, anyone may call; with a policy, its rules.
        assert_eq!(Callers::Trusted.refusal(None, Some(there), service), None);
        assert_eq!(Callers::Trusted.refusal(None, None, service), None);
        let policy = trusting_nobody();
        assert_eq!(
            Callers::Trusted.refusal(Some(&policy), Some(there), service),
            None
        );
        assert!(Callers::Trusted
            .refusal(Some(&policy), Some(here), service)
            .is_some());
        // Both hold for a service for this computer under a policy.
        assert!(Callers::ThisComputer
            .refusal(Some(&policy), Some(there), service)
            .is_some());
        assert!(Callers::ThisComputer
            .refusal(Some(&policy), Some(here), service)
            .is_some());
    }

    /// A client of `/trust_test/enable` that the master (as it were) sent to `addr`.
    fn client_of(addr: std::net::SocketAddr) -> Client<SetBool> {
        Client {
            service: "/trust_test/enable".into(),
            link: Mutex::new(Link {
                uri: Some((format!("rosrpc://{addr}"), addr)),
                ..Link::default()
            }),
            _type: std::marker::PhantomData,
        }
    }

    /// A server of `/trust_test/enable` on 127.0.0.1 for one connection (no policy of
    /// its own); its address and its thread.
    fn one_server() -> (
        std::net::SocketAddr,
        std::thread::JoinHandle<Result<(), String>>,
    ) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            serve_enable(stream, Callers::Trusted, None)
        });
        (addr, server)
    }

    const CALL_WITHIN: Duration = Duration::from_secs(5);

    #[test]
    fn a_client_refuses_a_server_the_trust_file_does_not_let_serve() {
        // A server that records what it is sent: nothing, the connection closed.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            stream
                .set_read_timeout(Some(Duration::from_secs(5)))
                .unwrap();
            let mut got = Vec::new();
            stream.read_to_end(&mut got).map(|_| got)
        });
        // 127.0.0.1 may call every service, not serve one: `call` is not `serve`.
        let policy =
            crate::trust::Policy::parse("rules: [{hosts: [self], call: ['*'], node_api: true}]")
                .unwrap();
        let client = client_of(addr);
        let req = crate::msgs::std_srvs::SetBoolReq { data: true };
        let e = client
            .call_under(&req, CALL_WITHIN, Some(&policy))
            .unwrap_err();
        assert_eq!(
            e,
            CallError::Failed {
                service: "/trust_test/enable".into(),
                reason: "refused: 127.0.0.1 may not serve /trust_test/enable (trust file)".into(),
            }
        );
        assert_eq!(
            e.to_string(),
            "/trust_test/enable: refused: 127.0.0.1 may not serve /trust_test/enable (trust file)"
        );
        let sent = server.join().unwrap().expect("the connection closed");
        assert!(sent.is_empty(), "sent to an untrusted server: {sent:?}");
        // Recorded, under the URI the master gave.
        let uri = format!("rosrpc://{addr}");
        refused_once_from_here(&uri, crate::trust::Act::Serve("/trust_test/enable".into()));
        // The URI is forgotten: the next call asks the master (none here) instead of
        // going back to the same server.
        {
            let link = client.link.locked();
            assert!(link.uri.is_none() && link.stream.is_none());
        }
        let again = client
            .call_under(&req, CALL_WITHIN, Some(&policy))
            .unwrap_err();
        assert!(
            matches!(&again, CallError::Failed { reason, .. } if reason.starts_with("not advertised")),
            "{again:?}"
        );
    }

    #[test]
    fn a_client_uses_a_server_the_trust_file_lets_serve_or_any_without_one() {
        let trusted =
            crate::trust::Policy::parse("rules: [{hosts: [self], serve: [/trust_test/*]}]")
                .unwrap();
        let everyone =
            crate::trust::Policy::parse("rules: [{hosts: ['0.0.0.0/0', '::/0'], serve: ['*']}]")
                .unwrap();
        for policy in [Some(&trusted), Some(&everyone), None] {
            let (addr, server) = one_server();
            let client = client_of(addr);
            let req = crate::msgs::std_srvs::SetBoolReq { data: true };
            for _ in 0..2 {
                let res = client.call_under(&req, CALL_WITHIN, policy);
                assert_eq!(res.map(|r| r.message).as_deref(), Ok("enabled"));
            }
            drop(client);
            assert_eq!(server.join().unwrap(), Ok(()));
        }
        // The check itself: a server elsewhere, and a service the rule does not name.
        let here: std::net::IpAddr = "::ffff:127.0.0.1".parse().unwrap();
        let there: std::net::IpAddr = "192.0.2.1".parse().unwrap();
        assert_eq!(server_refusal(Some(&trusted), here, "/trust_test/x"), None);
        let (error, why) = server_refusal(Some(&trusted), there, "/trust_test/x").unwrap();
        assert_eq!(
            error,
            "refused: 192.0.2.1 may not serve /trust_test/x (trust file)"
        );
        assert!(why.contains("`serve: [/trust_test/x]`"), "{why}");
        assert_eq!(
            server_refusal(Some(&trusted), here, "/other").map(|(e, _)| e),
            Some("refused: 127.0.0.1 may not serve /other (trust file)".into())
        );
        assert_eq!(server_refusal(None, there, "/other"), None);
    }

    #[test]
    fn a_failure_is_a_zero_byte_and_the_framed_text() {
        let wire = encode_answer::<SetBool>(Err("no such model".into()));
        assert_eq!(wire[0], 0);
        assert_eq!(&wire[1..5], &13u32.to_le_bytes());
        assert_eq!(&wire[5..], b"no such model");
    }
}
