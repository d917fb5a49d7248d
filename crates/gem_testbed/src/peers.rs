//! Peers that misbehave on a node's ports, as a computer that froze after its TCP
//! handshake, a cable cut mid-header or a port scanner do: connections that send nothing,
//! half a connection header, a header a byte a second, a 4 GiB length prefix, or come by
//! the thousand. And where they connect: a node's slave API, the TCPROS port `requestTopic`
//! gives for a topic, a service's port, as a ROS client finds them.

use crate::master::master;
use ros1_protocols::master_api::Master;
use std::io::Write;
use std::net::{Shutdown, SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The caller id the peers give in their XML-RPC calls and connection headers.
const CALLER: &str = "/hostile_peer";

/// The master, asked as [`CALLER`] (which serves no slave API).
fn master_as_peer() -> Master {
    Master::new(&master().uri, CALLER, "http://127.0.0.1:1/")
}

/// The slave API URI of `node`, as the master gives it (`lookupNode`).
pub fn slave_uri(node: &str) -> Result<String, String> {
    master_as_peer()
        .lookup_node(node)
        .map_err(|e| e.to_string())
}

/// The TCPROS endpoint that `node`'s slave API gives for `topic` (`requestTopic`), as
/// every subscriber asks for it.
pub fn tcpros_endpoint(node: &str, topic: &str) -> Result<SocketAddr, String> {
    let uri = slave_uri(node)?;
    let (host, port) =
        ros1_protocols::xmlrpc::request_topic(&uri, CALLER, topic).map_err(|e| e.to_string())?;
    resolve(&host, port)
}

/// The endpoint of `service` (`lookupService`: its `rosrpc://host:port`).
pub fn service_endpoint(service: &str) -> Result<SocketAddr, String> {
    let what = format!("lookupService {service}");
    let uri = master_as_peer()
        .lookup_service(service)
        .map_err(|e| e.to_string())?;
    let (host, port) = uri
        .trim_start_matches("rosrpc://")
        .trim_end_matches('/')
        .rsplit_once(':')
        .ok_or_else(|| format!("{what}: {uri}"))?;
    resolve(host, port.parse().map_err(|_| format!("{what}: {uri}"))?)
}

/// The host and port of an `http://host:port/` URI (a slave API).
pub fn http_endpoint(uri: &str) -> Result<SocketAddr, String> {
    let (host, port) = uri
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .rsplit_once(':')
        .ok_or_else(|| format!("no port in {uri}"))?;
    resolve(host, port.parse().map_err(|_| format!("no port in {uri}"))?)
}

fn resolve(host: &str, port: u16) -> Result<SocketAddr, String> {
    (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("{host}:{port}: {e}"))?
        .next()
        .ok_or_else(|| format!("{host}:{port}: no address"))
}

/// A TCPROS connection header: each `key=value` field length-prefixed, the whole too.
pub fn connection_header(fields: &[(&str, &str)]) -> Vec<u8> {
    let mut body = Vec::new();
    for (k, v) in fields {
        let f = format!("{k}={v}");
        body.extend_from_slice(&(f.len() as u32).to_le_bytes());
        body.extend_from_slice(f.as_bytes());
    }
    let mut out = (body.len() as u32).to_le_bytes().to_vec();
    out.extend(body);
    out
}

/// A subscriber's header for `topic` of any type (`md5sum=*`, as `rostopic echo` sends).
pub fn subscriber_header(topic: &str) -> Vec<u8> {
    connection_header(&[
        ("callerid", CALLER),
        ("topic", topic),
        ("md5sum", "*"),
        ("type", "*"),
        ("tcp_nodelay", "1"),
    ])
}

/// A caller's header for `service` of any type (`md5sum=*`), keeping its connection.
pub fn service_header(service: &str) -> Vec<u8> {
    connection_header(&[
        ("callerid", CALLER),
        ("service", service),
        ("md5sum", "*"),
        ("persistent", "1"),
    ])
}

/// Connections that misbehave; each stays open, and a trickling one keeps trickling,
/// until this is dropped (then all are closed at once).
pub struct Stalled {
    streams: Vec<TcpStream>,
    stop: Arc<AtomicBool>,
}

impl Stalled {
    /// How many connections are open.
    pub fn len(&self) -> usize {
        self.streams.len()
    }

    /// True when no connection could be opened.
    pub fn is_empty(&self) -> bool {
        self.streams.is_empty()
    }
}

impl Drop for Stalled {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        for s in &self.streams {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}

/// How long a peer's TCP handshake may take (the node's listen queue answers at once
/// unless it is full).
const CONNECT_WITHIN: Duration = Duration::from_secs(2);

fn connect(addr: SocketAddr) -> Result<TcpStream, String> {
    TcpStream::connect_timeout(&addr, CONNECT_WITHIN).map_err(|e| format!("connect {addr}: {e}"))
}

/// `n` connections to `addr` that each send `bytes` (nothing, half a header, a length
/// prefix) and then nothing more.
pub fn sending(addr: SocketAddr, n: usize, bytes: &[u8]) -> Result<Stalled, String> {
    let mut streams = Vec::with_capacity(n);
    for _ in 0..n {
        let mut s = connect(addr)?;
        s.write_all(bytes)
            .map_err(|e| format!("write to {addr}: {e}"))?;
        streams.push(s);
    }
    Ok(Stalled {
        streams,
        stop: Arc::default(),
    })
}

/// `n` connections to `addr` that send nothing.
pub fn silent(addr: SocketAddr, n: usize) -> Result<Stalled, String> {
    sending(addr, n, &[])
}

/// One connection to `addr` that sends `bytes` one at a time, one every `every`, until
/// dropped (or the peer closes it).
pub fn trickling(addr: SocketAddr, bytes: Vec<u8>, every: Duration) -> Result<Stalled, String> {
    let s = connect(addr)?;
    let mut writer = s.try_clone().map_err(|e| e.to_string())?;
    let stop = Arc::new(AtomicBool::new(false));
    let stopped = stop.clone();
    std::thread::spawn(move || {
        for b in bytes {
            if stopped.load(Ordering::SeqCst) || writer.write_all(&[b]).is_err() {
                return;
            }
            // The peer's pace, not a synchronisation.
            std::thread::sleep(every);
        }
    });
    Ok(Stalled {
        streams: vec![s],
        stop,
    })
}

/// A flood: up to `n` connections to `addr` opened at once from `threads` threads, each
/// connection given [`CONNECT_WITHIN`] and the whole flood `within`; the connections that
/// were opened (a node that does not accept fast enough gets fewer). They send nothing
/// and stay open until the result is dropped.
pub fn flood(addr: SocketAddr, n: usize, threads: usize, within: Duration) -> Stalled {
    room_for_descriptors(n as u64 + 256);
    let end = Instant::now() + within;
    let per_thread = n.div_ceil(threads);
    let streams = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|i| {
                let count = per_thread.min(n.saturating_sub(i * per_thread));
                s.spawn(move || {
                    let mut open = Vec::with_capacity(count);
                    for _ in 0..count {
                        let left = end.saturating_duration_since(Instant::now());
                        if left.is_zero() {
                            break;
                        }
                        if let Ok(c) = TcpStream::connect_timeout(&addr, left.min(CONNECT_WITHIN)) {
                            open.push(c);
                        }
                    }
                    open
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap_or_default())
            .collect()
    });
    Stalled {
        streams,
        stop: Arc::default(),
    }
}

/// Raises this process's soft limit on open descriptors to `wanted` (within the hard
/// limit): a flood holds one per connection, and 1,024 is a common soft default.
fn room_for_descriptors(wanted: u64) {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit read and write the struct we own.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < wanted {
            limit.rlim_cur = wanted.min(limit.rlim_max);
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

/// The resident set of process `pid`, KiB (`VmRSS` of `/proc/<pid>/status`).
pub fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    gem_ros::procfs::status_field(&status, "VmRSS:")
}
