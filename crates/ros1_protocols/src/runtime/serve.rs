//! What the runtime's two servers (the XML-RPC slave API and the TCPROS publisher port)
//! share: a listening socket whose accept thread hands each connection to a thread of its
//! own at once, a [`Gate`] that caps how many connections are open, and reads bounded by
//! one deadline for a whole exchange (a per-read timeout would let a peer sending a byte a
//! second hold a thread for ever).
//!
//! The accept thread never reads: a connection that stalls holds its own thread, never the
//! next connection. Every thread blocks (in `accept`, a read with a deadline, or a condition
//! variable), so an idle node is asleep.

use crate::Lock;
use std::io::{ErrorKind, Read};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A cap on connections open at once; the first refusal after it fills is logged, and
/// the log re-arms once half the cap is free again (one line per flood, not per peer).
pub(crate) struct Gate {
    what: String,
    cap: usize,
    open: Mutex<usize>,
    warned: AtomicBool,
}

/// One connection let through a [`Gate`]; dropping it frees the place.
pub(crate) struct Pass(Arc<Gate>);

impl Gate {
    pub(crate) fn new(what: String, cap: usize) -> Arc<Gate> {
        Arc::new(Gate {
            what,
            cap,
            open: Mutex::new(0),
            warned: AtomicBool::new(false),
        })
    }

    /// A place, or `None` when `cap` connections are open (logged once per episode).
    pub(crate) fn enter(self: &Arc<Self>) -> Option<Pass> {
        let mut open = self.open.locked();
        if *open >= self.cap {
            if !self.warned.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    "{}: {} connections open, the most allowed; refusing new ones until some close",
                    self.what,
                    self.cap
                );
            }
            return None;
        }
        *open += 1;
        Some(Pass(self.clone()))
    }
}

impl Drop for Pass {
    fn drop(&mut self) {
        let mut open = self.0.open.locked();
        *open -= 1;
        if *open <= self.0.cap / 2 {
            self.0.warned.store(false, Ordering::Relaxed);
        }
    }
}

/// A listening socket and its accept thread; dropping it stops accepting (connections
/// already handed over live on).
pub(crate) struct Listener {
    listener: Arc<TcpListener>,
    port: u16,
    stop: Arc<AtomicBool>,
    accept: Option<std::thread::JoinHandle<()>>,
}

/// What runs each accepted connection, on its own thread, with its place in the gate.
pub(crate) type Handler = dyn Fn(TcpStream, SocketAddr, Pass) + Send + Sync;

/// Connections the kernel queues for the accept thread (capped by `net.core.somaxconn`).
const ACCEPT_BACKLOG: libc::c_int = 1024;

/// How long the accept thread pauses after `accept` itself fails (out of descriptors):
/// the failure repeats at once otherwise, and a pause lets connections close.
const ACCEPT_RETRY: Duration = Duration::from_millis(50);

impl Listener {
    /// Listens on `bind` (port chosen by the system) and hands each connection the gate
    /// lets through to `handler` on a new thread named `name` with a `stack` of bytes;
    /// a connection the gate refuses is closed at once.
    pub(crate) fn start(
        name: &str,
        bind: &str,
        gate: Arc<Gate>,
        stack: usize,
        handler: Arc<Handler>,
    ) -> std::io::Result<Listener> {
        let listener = Arc::new(TcpListener::bind((bind, 0))?);
        // A longer queue of connections waiting to be accepted than the standard library
        // asks for: during a flood the accept thread refuses the excess one by one, and a
        // full queue would drop the SYNs of every peer, legitimate ones included, for a
        // second's retransmission. Listening again on a listening socket only resizes it.
        // SAFETY: listen(2) on a socket we own; no memory is involved.
        unsafe {
            libc::listen(std::os::fd::AsRawFd::as_raw_fd(&*listener), ACCEPT_BACKLOG);
        }
        let port = listener.local_addr()?.port();
        let stop = Arc::new(AtomicBool::new(false));
        let accept = {
            let (listener, stop, name) = (listener.clone(), stop.clone(), name.to_owned());
            std::thread::Builder::new()
                .name(name.clone())
                .spawn(move || accept_loop(&name, &listener, &stop, &gate, stack, &handler))?
        };
        Ok(Listener {
            listener,
            port,
            stop,
            accept: Some(accept),
        })
    }

    pub(crate) fn port(&self) -> u16 {
        self.port
    }
}

fn accept_loop(
    name: &str,
    listener: &TcpListener,
    stop: &AtomicBool,
    gate: &Arc<Gate>,
    stack: usize,
    handler: &Arc<Handler>,
) {
    let mut failing = false;
    loop {
        let accepted = listener.accept();
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let (stream, peer) = match accepted {
            Ok(c) => {
                failing = false;
                c
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => {
                if !std::mem::replace(&mut failing, true) {
                    tracing::warn!("{name}: accept failed ({e}); retrying");
                }
                std::thread::park_timeout(ACCEPT_RETRY);
                continue;
            }
        };
        // Refused: the stream closes here, before anything is read.
        let Some(pass) = gate.enter() else { continue };
        let handler = handler.clone();
        let spawned = std::thread::Builder::new()
            .name(name.to_owned())
            .stack_size(stack)
            .spawn(move || handler(stream, peer, pass));
        if let Err(e) = spawned {
            tracing::warn!("{name}: cannot start a thread for {peer}: {e}");
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // A listening socket shut down fails its pending accept, which wakes the thread.
        // SAFETY: shutdown(2) on a socket we own; no memory is involved.
        unsafe {
            libc::shutdown(
                std::os::fd::AsRawFd::as_raw_fd(&*self.listener),
                libc::SHUT_RDWR,
            );
        }
        if let Some(a) = self.accept.take() {
            let _ = a.join();
        }
    }
}

/// The address to listen on for a node that advertises `host`: a loopback name serves
/// loopback only, as every ROS 1 client does; any other name serves every interface.
pub(crate) fn bind_address(host: &str) -> &'static str {
    if host == "localhost" || host.starts_with("127.") || host == "::1" {
        "127.0.0.1"
    } else {
        "0.0.0.0"
    }
}

/// Reads what is there (at least one byte) into `buf`, waiting until `deadline` at most:
/// `TimedOut` after it, `UnexpectedEof` when the peer closed.
pub(crate) fn read_some_by(
    stream: &mut TcpStream,
    buf: &mut [u8],
    deadline: Instant,
) -> std::io::Result<usize> {
    loop {
        let left = deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
            .ok_or(ErrorKind::TimedOut)?;
        stream.set_read_timeout(Some(left))?;
        match stream.read(buf) {
            Ok(0) => return Err(ErrorKind::UnexpectedEof.into()),
            Ok(n) => return Ok(n),
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err(e),
        }
    }
}

/// Fills `buf`, by `deadline` at most (see [`read_some_by`]).
pub(crate) fn read_exact_by(
    stream: &mut TcpStream,
    mut buf: &mut [u8],
    deadline: Instant,
) -> std::io::Result<()> {
    while !buf.is_empty() {
        let n = read_some_by(stream, buf, deadline)?;
        buf = &mut buf[n..];
    }
    Ok(())
}

/// The largest frame taken before a link is made: a connection header carries the full
/// message definition, a few kilobytes for the suite's largest types.
pub const MAX_HEADER: usize = 1 << 20;

/// A length-prefixed frame (a connection header, a service request), whole by `deadline`;
/// one longer than [`MAX_HEADER`] (a 4 GiB length prefix) is refused
/// unread.
pub(crate) fn read_frame_by(stream: &mut TcpStream, deadline: Instant) -> std::io::Result<Vec<u8>> {
    let mut len = [0u8; 4];
    read_exact_by(stream, &mut len, deadline)?;
    let len = u32::from_le_bytes(len) as usize;
    let most = MAX_HEADER;
    if len > most {
        return Err(std::io::Error::new(
            ErrorKind::InvalidData,
            format!("a connection header of {len} bytes (at most {most})"),
        ));
    }
    let mut body = vec![0u8; len];
    read_exact_by(stream, &mut body, deadline)?;
    Ok(body)
}

/// Writes all of `bytes`, by `deadline` at most.
pub(crate) fn write_all_by(
    stream: &mut TcpStream,
    bytes: &[u8],
    deadline: Instant,
) -> std::io::Result<()> {
    use std::io::Write;
    let left = deadline
        .checked_duration_since(Instant::now())
        .filter(|d| !d.is_zero())
        .ok_or(ErrorKind::TimedOut)?;
    stream.set_write_timeout(Some(left))?;
    stream.write_all(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gate_lets_cap_through_and_frees_on_drop() {
        let gate = Gate::new("test".into(), 2);
        let a = gate.enter().unwrap();
        let _b = gate.enter().unwrap();
        assert!(gate.enter().is_none());
        drop(a);
        assert!(gate.enter().is_some());
    }

    #[test]
    fn a_deadline_bounds_a_whole_read_not_each_byte() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut server, _) = l.accept().unwrap();
        let writer = std::thread::spawn(move || {
            use std::io::Write;
            for _ in 0..6 {
                if client.write_all(b"x").is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        let start = Instant::now();
        let mut buf = [0u8; 10];
        let e = read_exact_by(&mut server, &mut buf, start + Duration::from_millis(300));
        assert_eq!(e.unwrap_err().kind(), ErrorKind::TimedOut);
        assert!(start.elapsed() < Duration::from_millis(450));
        drop(server);
        writer.join().unwrap();
    }
}
