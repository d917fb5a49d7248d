//! `TCP_NODELAY` on every TCPROS link of this process.
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

/// Sets `TCP_NODELAY` on every TCP socket the process holds; returns how many accepted
/// it. Other descriptors refuse the option and are left as they are.
pub fn set_nodelay_on_all_sockets() -> usize {
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else {
        return 0;
    };
    let mut set = 0;
    for entry in dir.flatten() {
        let is_socket = socket_inode(&entry.path()).is_some();
        let Some(fd) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        if is_socket && set_nodelay(fd) {
            set += 1;
        }
    }
    set
}

fn set_nodelay(fd: i32) -> bool {
    let on: libc::c_int = 1;
    // SAFETY: `setsockopt` only reads `size_of::<c_int>()` bytes from `&on`, which lives
    // across the call. If `fd` was closed (or reused) since it was listed the call fails
    // or sets the option on another TCP socket of ours, which is what we want for it too.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_NODELAY,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    rc == 0
}

/// Keeps every TCP link of the process at `TCP_NODELAY`: sweeps now and then every
/// `period` on a background thread (new links appear whenever a peer connects).
pub fn keep_nodelay(period: Duration) {
    set_nodelay_on_all_sockets();
    let spawned = std::thread::Builder::new()
        .name("tcp_nodelay".into())
        .spawn(move || loop {
            std::thread::sleep(period);
            set_nodelay_on_all_sockets();
        });
    if let Err(e) = spawned {
        tracing::warn!("cannot start the TCP_NODELAY sweeper: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};

    #[test]
    fn sets_nodelay_on_tcp_sockets_only() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        assert!(!client.nodelay().unwrap() && !server.nodelay().unwrap());
        let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        assert!(set_nodelay_on_all_sockets() >= 2);
        assert!(client.nodelay().unwrap() && server.nodelay().unwrap());
        drop(udp);
    }
}
