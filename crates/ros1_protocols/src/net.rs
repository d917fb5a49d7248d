//! Socket options on every TCPROS link of this process: `TCP_NODELAY`, a bounded send
//! wait and keepalive probes ([`LinkOptions::NODES`] says why for each).
//!
//! rosrust never disables Nagle's algorithm. Our topics carry small messages, and a small
//! segment written while the previous one on the same link is still unacknowledged waits
//! for that acknowledgement, which the receiving kernel may delay (up to tens of ms on
//! Linux): a fault published right after a heartbeat can sit in the sender's kernel. roscpp
//! and rospy set the option when a subscriber asks for it; rosrust keeps its sockets
//! private, so this module finds them among the process's descriptors instead.

use std::time::Duration;

/// The inode of the socket a `/proc/<pid>/fd/<n>` entry points at (`socket:[inode]`);
/// `None` for other descriptors or a closed one.
pub fn socket_inode(fd_entry: &std::path::Path) -> Option<u64> {
    let target = std::fs::read_link(fd_entry).ok()?;
    target
        .to_str()?
        .strip_prefix("socket:[")?
        .strip_suffix(']')?
        .parse()
        .ok()
}

/// What [`tune_all_sockets`] sets on every TCP socket of the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkOptions {
    /// `TCP_NODELAY`.
    pub nodelay: bool,
    /// `SO_SNDBUF` asked for, bytes (the kernel caps it at twice `net.core.wmem_max`).
    pub send_buffer: usize,
    /// `SO_SNDTIMEO`: the longest a blocking write may wait for room in the send buffer.
    pub send_timeout: Duration,
}

impl LinkOptions {
    /// What the nodes run with.
    ///
    /// rosrust's publisher writes a message to its subscribers one after the other, with
    /// blocking writes, on one thread per topic. A subscriber whose computer went out of
    /// reach stops acknowledging, and its link's send buffer fills (Linux starts it at
    /// 16 KiB: 3 s of `/clock` at 5×); the write then blocks, and every other subscriber
    /// of the topic, the ones on the same computer included, waits with it: a cut cable
    /// to the supervisor's computer would stop `/clock` for the vehicle's own controller.
    /// So the buffer is made large enough to ride out a cut of tens of seconds (the link
    /// then resumes where it stopped, as TCP does), and a write that still finds it full
    /// waits at most `send_timeout` and fails: rosrust drops that subscriber rather than
    /// stall the others, as roscpp drops messages for a subscriber that cannot keep up.
    pub const NODES: LinkOptions = LinkOptions {
        nodelay: true,
        send_buffer: 4 << 20,
        send_timeout: Duration::from_millis(100),
    };
}

/// Sets `options` on every TCP socket the process holds (listening sockets pass them on to
/// the links they accept) that is not in `done`, and records them there; returns how many
/// it set. Other descriptors are left as they are.
pub fn tune_all_sockets(options: LinkOptions, done: &mut std::collections::HashSet<u64>) -> usize {
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else {
        return 0;
    };
    let mut open = std::collections::HashSet::new();
    let mut set = 0;
    for entry in dir.flatten() {
        let Some(inode) = socket_inode(&entry.path()) else {
            continue;
        };
        let Some(fd) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        open.insert(inode);
        if done.contains(&inode) || !is_tcp(fd) {
            continue;
        }
        if tune(fd, options).is_ok() {
            done.insert(inode);
            set += 1;
        }
    }
    // Forget closed sockets (an inode number can come back).
    done.retain(|i| open.contains(i));
    set
}

/// Sets `TCP_NODELAY` on every TCP socket the process holds; returns how many accepted it.
pub fn set_nodelay_on_all_sockets() -> usize {
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else {
        return 0;
    };
    dir.flatten()
        .filter(|e| socket_inode(&e.path()).is_some())
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()))
        .filter(|&fd| is_tcp(fd) && set_int(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, 1).is_ok())
        .count()
}

/// An IPv4 or IPv6 stream socket.
fn is_tcp(fd: i32) -> bool {
    let get = |option| {
        let mut value: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: `getsockopt` writes at most `len` bytes into `value`, alive across the call.
        let rc = unsafe {
            libc::getsockopt(
                fd,
                libc::SOL_SOCKET,
                option,
                (&mut value as *mut libc::c_int).cast(),
                &mut len,
            )
        };
        (rc == 0).then_some(value)
    };
    get(libc::SO_TYPE) == Some(libc::SOCK_STREAM)
        && matches!(get(libc::SO_DOMAIN), Some(libc::AF_INET | libc::AF_INET6))
}

/// Sets `options` on one link.
pub(crate) fn tune_link(stream: &std::net::TcpStream, options: LinkOptions) -> std::io::Result<()> {
    tune(std::os::fd::AsRawFd::as_raw_fd(stream), options)
}

fn tune(fd: i32, o: LinkOptions) -> std::io::Result<()> {
    if o.nodelay {
        // A listening socket refuses it on some kernels; its links get it on the next sweep.
        let _ = set_int(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, 1);
    }
    let buffer = libc::c_int::try_from(o.send_buffer).unwrap_or(libc::c_int::MAX);
    set_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUF, buffer)?;
    let timeout = libc::timeval {
        tv_sec: o.send_timeout.as_secs() as libc::time_t,
        tv_usec: o.send_timeout.subsec_micros() as libc::suseconds_t,
    };
    // SAFETY: `setsockopt` reads `size_of::<timeval>()` bytes from `&timeout`.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_SNDTIMEO,
            (&timeout as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Keeps every TCP link of the process tuned to `options`: sweeps now and then every
/// `period` on a background thread (new links appear whenever a peer connects).
pub fn keep_tuned(options: LinkOptions, period: Duration) {
    let mut done = std::collections::HashSet::new();
    tune_all_sockets(options, &mut done);
    let spawned = std::thread::Builder::new()
        .name("tcp_options".into())
        .spawn(move || loop {
            std::thread::sleep(period);
            tune_all_sockets(options, &mut done);
        });
    if let Err(e) = spawned {
        tracing::warn!("cannot start the TCP options sweeper: {e}");
    }
}

/// TCP keepalive on every link: the first probe after this much silence, then one every
/// [`LINK_PROBE`]; [`LINK_PROBES`] unanswered probes (or data unacknowledged for
/// `LINK_PROBE × (LINK_PROBES + 1)`) end the link.
pub const LINK_PROBE: Duration = Duration::from_secs(1);
/// Unanswered keepalive probes that end a link.
pub const LINK_PROBES: u32 = 2;

/// Makes `stream` notice a peer that went out of reach: keepalive probes after `probe` of
/// silence and every `probe` after, the link ending after `probes` unanswered ones; data
/// left unacknowledged for `probe × (probes + 1)` ends it too (`TCP_USER_TIMEOUT`). A cut
/// cable sends no FIN: without this a reader waits on the socket for ever.
pub fn probe_peer(
    stream: &std::net::TcpStream,
    probe: Duration,
    probes: u32,
) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let fd = stream.as_raw_fd();
    let secs = probe.as_secs().max(1) as libc::c_int;
    let user_timeout_ms = (probe.as_millis() as u64 * (u64::from(probes) + 1)) as libc::c_int;
    for (level, option, value) in [
        (libc::SOL_SOCKET, libc::SO_KEEPALIVE, 1),
        (libc::IPPROTO_TCP, libc::TCP_KEEPIDLE, secs),
        (libc::IPPROTO_TCP, libc::TCP_KEEPINTVL, secs),
        (libc::IPPROTO_TCP, libc::TCP_KEEPCNT, probes as libc::c_int),
        (libc::IPPROTO_TCP, libc::TCP_USER_TIMEOUT, user_timeout_ms),
    ] {
        set_int(fd, level, option, value)?;
    }
    Ok(())
}

fn set_int(
    fd: i32,
    level: libc::c_int,
    option: libc::c_int,
    value: libc::c_int,
) -> std::io::Result<()> {
    // SAFETY: `setsockopt` reads `size_of::<c_int>()` bytes from `&value`, alive across
    // the call; a bad `fd` is an error, not undefined behaviour.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            option,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};

    /// Each test sweeps every socket of the process: one at a time.
    static SWEEPS: std::sync::Mutex<()> = std::sync::Mutex::new(());

    #[test]
    fn sets_nodelay_on_tcp_sockets_only() {
        let _one = SWEEPS.lock().unwrap_or_else(|e| e.into_inner());
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        assert!(!client.nodelay().unwrap() && !server.nodelay().unwrap());
        let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        assert!(set_nodelay_on_all_sockets() >= 2);
        assert!(client.nodelay().unwrap() && server.nodelay().unwrap());
        drop(udp);
    }

    fn get_int(fd: i32, level: libc::c_int, option: libc::c_int) -> libc::c_int {
        let mut value: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        let rc = unsafe {
            libc::getsockopt(
                fd,
                level,
                option,
                (&mut value as *mut libc::c_int).cast(),
                &mut len,
            )
        };
        assert_eq!(rc, 0);
        value
    }

    #[test]
    fn a_tuned_listener_passes_its_options_to_the_links_it_accepts() {
        let _one = SWEEPS.lock().unwrap_or_else(|e| e.into_inner());
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut done = std::collections::HashSet::new();
        assert!(tune_all_sockets(LinkOptions::NODES, &mut done) >= 1);
        // A second sweep leaves what it did alone.
        let again = tune_all_sockets(LinkOptions::NODES, &mut done);
        assert_eq!(again, 0, "{done:?}");
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (accepted, _) = listener.accept().unwrap();
        {
            use std::os::fd::AsRawFd;
            // At least the kernel's cap (twice net.core.wmem_max, 416 KiB by default).
            let sndbuf = get_int(accepted.as_raw_fd(), libc::SOL_SOCKET, libc::SO_SNDBUF);
            assert!(sndbuf >= 200 << 10, "{sndbuf}");
        }
        assert_eq!(
            accepted.write_timeout().unwrap(),
            Some(LinkOptions::NODES.send_timeout)
        );
        // The client end was opened after the sweep: the next one tunes it.
        assert_eq!(client.write_timeout().unwrap(), None);
        assert!(tune_all_sockets(LinkOptions::NODES, &mut done) >= 1);
        assert_eq!(
            client.write_timeout().unwrap(),
            Some(LinkOptions::NODES.send_timeout)
        );
    }

    #[test]
    fn a_probed_link_has_keepalive_and_a_user_timeout() {
        use std::os::fd::AsRawFd;
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        probe_peer(&client, Duration::from_secs(1), 2).unwrap();
        let fd = client.as_raw_fd();
        assert_eq!(get_int(fd, libc::SOL_SOCKET, libc::SO_KEEPALIVE), 1);
        assert_eq!(get_int(fd, libc::IPPROTO_TCP, libc::TCP_KEEPIDLE), 1);
        assert_eq!(get_int(fd, libc::IPPROTO_TCP, libc::TCP_KEEPCNT), 2);
        assert_eq!(get_int(fd, libc::IPPROTO_TCP, libc::TCP_USER_TIMEOUT), 3000);
    }
}
