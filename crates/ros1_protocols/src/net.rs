//! Socket options on every TCPROS link of this process: `TCP_NODELAY`, a bounded send
//! wait and keepalive probes ([`LinkOptions::NODES`] says why for each), set on each link
//! as it is made.
//!
//! Nagle's algorithm is off: our topics carry small messages, and a small segment written
//! while the previous one on the same link is still unacknowledged waits for that
//! acknowledgement, which the receiving kernel may delay (up to tens of ms on Linux): a
//! fault published right after a heartbeat would sit in the sender's kernel.

use std::os::fd::RawFd;
use std::time::Duration;

/// An event file descriptor (`eventfd`) a thread waiting on sockets watches too: ringing
/// it ends that wait (a new link to watch, shutdown, an event).
pub(crate) struct Bell(Option<RawFd>);

impl Bell {
    pub(crate) fn new() -> Bell {
        // SAFETY: creates a descriptor this value owns and closes on drop.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        Bell((fd >= 0).then_some(fd))
    }

    /// The descriptor to watch (readable once rung), or -1 where the kernel gave none.
    pub(crate) fn fd(&self) -> RawFd {
        self.0.unwrap_or(-1)
    }

    /// Rings the bell with descriptor `fd` (nothing for -1).
    pub(crate) fn ring(fd: RawFd) {
        if fd >= 0 {
            let one: u64 = 1;
            // SAFETY: an eventfd takes an 8-byte write; a full counter only fails.
            unsafe { libc::write(fd, (&one as *const u64).cast(), 8) };
        }
    }

    /// Silences the bell with descriptor `fd` after its wait.
    pub(crate) fn clear(fd: RawFd) {
        if fd >= 0 {
            let mut n: u64 = 0;
            // SAFETY: an 8-byte read from a non-blocking eventfd.
            unsafe { libc::read(fd, (&mut n as *mut u64).cast(), 8) };
        }
    }
}

impl Drop for Bell {
    fn drop(&mut self) {
        if let Some(fd) = self.0 {
            // SAFETY: the descriptor is ours and closed once.
            unsafe { libc::close(fd) };
        }
    }
}

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

/// What every link of the process is set to.
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
    /// A subscriber whose computer went out of reach stops acknowledging, and its link's
    /// send buffer fills (Linux starts it at 16 KiB: 3 s of `/clock` at 5×). The buffer is
    /// made large enough to ride out a cut of tens of seconds (the link then resumes where
    /// it stopped, as TCP does), and a write that still finds it full waits at most
    /// `send_timeout` and fails: the link is dropped rather than left to hold its writer,
    /// as roscpp drops messages for a subscriber that cannot keep up.
    pub const NODES: LinkOptions = LinkOptions {
        nodelay: true,
        send_buffer: 4 << 20,
        send_timeout: Duration::from_millis(100),
    };
}

/// Sets `TCP_NODELAY` on every TCP socket the process holds; returns how many accepted it.
/// For a benchmark that compares rosrust's links with ours on equal terms (rosrust never
/// sets it and keeps its sockets private).
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

/// TCP keepalive on every link: the first probe after this much silence, then one every
/// [`LINK_PROBE`]; [`LINK_PROBES`] unanswered probes (or data unacknowledged for
/// `LINK_PROBE × (LINK_PROBES + 1)`) end the link.
pub const LINK_PROBE: Duration = Duration::from_secs(1);
/// Unanswered keepalive probes that end a link.
pub const LINK_PROBES: u32 = 2;

/// A publisher's side of a link probes far more patiently than a subscriber's
/// ([`LINK_PROBE`]): the subscriber decides when to link again, and a rospy or roscpp
/// subscriber keeps its socket through a cut cable and never links again once the
/// publisher has given the link up. Aborting the link 3 s into a cut would leave such a
/// subscriber deaf after the cable returns; 20 s (a probe every 5 s, 3 unanswered) rides
/// out a cut that long, as TCP itself would, and still frees a link whose peer is gone.
pub const PUBLISHER_LINK_PROBE: Duration = Duration::from_secs(5);
/// Unanswered keepalive probes that end a publisher's link.
pub const PUBLISHER_LINK_PROBES: u32 = 3;

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
