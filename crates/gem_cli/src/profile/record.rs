//! `--record`: one `rosbag record` per injection, started and verified connected to every
//! topic before the injection (the original lost messages because its recorder was still
//! connecting), stopped with SIGINT after the recovery so the bag is closed properly.

use anyhow::{anyhow, bail, Context};
use gem_core::names;
use gem_core::state_manager::{Input, StateManagerConfig};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The chain topics every bag holds besides the clock and the state manager's inputs.
const CHAIN_TOPICS: [&str; 6] = [
    names::global::SYSTEM_STATE,
    names::global::ACKERMANN_CMD,
    names::global::navigate_waypoints::GOAL,
    names::global::navigate_waypoints::CANCEL,
    names::global::navigate_waypoints::STATUS,
    names::global::navigate_waypoints::RESULT,
];

/// What every bag holds: the clock, the state manager's inputs as the suite's launch files
/// run it (the planner's status among them; no vehicle bridge, so not its fault), the
/// chain topics.
fn topics() -> Vec<&'static str> {
    std::iter::once(names::CLOCK)
        .chain(
            StateManagerConfig::DEFAULT
                .watched()
                .map(Input::global_topic),
        )
        .chain(CHAIN_TOPICS)
        .collect()
}

/// Starts recorders in one directory.
pub struct Recorder {
    dir: PathBuf,
}

/// One running recorder.
pub struct Bag {
    child: Child,
    file: PathBuf,
}

impl Recorder {
    /// Bags go to `dir` (created on the first one).
    pub fn new(dir: &Path) -> Recorder {
        Recorder {
            dir: dir.to_path_buf(),
        }
    }

    /// Starts `rosbag record` into `DIR/<name>.bag` and waits until it has an inbound
    /// connection on every topic.
    pub fn start(&self, name: &str) -> anyhow::Result<Bag> {
        std::fs::create_dir_all(&self.dir)
            .with_context(|| format!("cannot create {}", self.dir.display()))?;
        let file = self.dir.join(format!("{name}.bag"));
        let topics = topics();
        let node = format!("/gemctl_record_{}_{name}", std::process::id());
        let child = gem_ros::realtime::run_normally(&mut Command::new("rosbag"))
            .args(["record", "-O"])
            .arg(&file)
            .args(&topics)
            .arg(format!("__name:={}", node.trim_start_matches('/')))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .context("cannot run rosbag (source runners/env.sh)")?;
        let mut bag = Bag { child, file };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let connected = ros1_protocols::this_node::inbound_topics(&node).unwrap_or_default();
            // The recorder's side is connected, and every publisher sends to it: a
            // publisher adds a new subscriber to its send list a moment after the
            // subscriber's side is up (without this wait about one bag in twenty missed
            // the goal's result).
            if topics.iter().all(|t| connected.contains(*t)) && publishers_send_to(&node, &topics) {
                return Ok(bag);
            }
            if let Ok(Some(status)) = bag.child.try_wait() {
                bail!("rosbag record for {} exited: {status}", bag.file.display());
            }
            if Instant::now() > deadline {
                let missing: Vec<&str> = topics
                    .iter()
                    .filter(|t| !connected.contains(**t))
                    .copied()
                    .collect();
                bag.stop();
                return Err(anyhow!(
                    "rosbag record not connected to {} after 30 s",
                    missing.join(", ")
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Whether every publisher the master lists for each of `topics` lists a connected
/// outbound link to `node` in its `getBusInfo`.
fn publishers_send_to(node: &str, topics: &[&str]) -> bool {
    let Ok(state) = ros1_protocols::this_node::state() else {
        return false;
    };
    topics.iter().all(|topic| {
        let publishers = state
            .publishers
            .iter()
            .find(|l| l.name == *topic)
            .map_or(&[][..], |l| &l.connections[..]);
        publishers.iter().all(|p| {
            ros1_protocols::this_node::connected_links(p, "o")
                .is_ok_and(|links| links.contains(&(topic.to_string(), node.to_owned())))
        })
    })
}

impl Bag {
    /// Stops the recorder (it closes the bag on SIGINT) once it has read everything sent to
    /// it: a message still in its sockets at SIGINT would be lost, and the chain's last
    /// messages arrived at the profiler only moments ago.
    pub fn stop(mut self) {
        if !wait_drained(self.child.id(), DRAIN_TIMEOUT) {
            eprintln!(
                "[profile] rosbag record for {} still had unread messages after {} s",
                self.file.display(),
                DRAIN_TIMEOUT.as_secs()
            );
        }
        gem_ros::launch::stop_group(&mut self.child, Duration::from_secs(15));
    }
}

/// How long [`Bag::stop`] waits for the recorder to read its sockets empty.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(2);

/// Waits until no TCP socket of process `pid` or of its children (`rosbag record` runs the
/// recorder as a child) holds unread bytes; false if `timeout` passes first.
fn wait_drained(pid: u32, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        let mut inodes = socket_inodes(pid);
        for child in children(pid) {
            inodes.extend(socket_inodes(child));
        }
        if unread_bytes(&inodes) == 0 {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn children(pid: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|c| c.parse().ok())
        .collect()
}

/// The inodes of the sockets process `pid` has open.
fn socket_inodes(pid: u32) -> std::collections::HashSet<u64> {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return Default::default();
    };
    fds.flatten()
        .filter_map(|fd| ros1_protocols::net::socket_inode(&fd.path()))
        .collect()
}

/// Bytes waiting in the receive queues of the TCP sockets among `inodes`
/// (`/proc/net/tcp` and `tcp6`: `tx_queue:rx_queue` in hex, the inode in column ten).
fn unread_bytes(inodes: &std::collections::HashSet<u64>) -> u64 {
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .map(|table| {
            table
                .lines()
                .skip(1)
                .filter_map(|line| {
                    let cols: Vec<&str> = line.split_whitespace().collect();
                    if !inodes.contains(&cols.get(9)?.parse().ok()?) {
                        return None;
                    }
                    u64::from_str_radix(cols.get(4)?.split_once(':')?.1, 16).ok()
                })
                .sum::<u64>()
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn unread_bytes_are_seen_until_read() {
        use std::io::Read;
        use std::os::fd::AsRawFd;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut tx = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut rx, _) = listener.accept().unwrap();
        let inode = |s: &std::net::TcpStream| {
            let fd = format!("/proc/self/fd/{}", s.as_raw_fd());
            ros1_protocols::net::socket_inode(std::path::Path::new(&fd)).unwrap()
        };
        let mine: std::collections::HashSet<u64> = [inode(&rx)].into();
        assert!(socket_inodes(std::process::id()).contains(&inode(&rx)));
        assert_eq!(unread_bytes(&mine), 0);
        tx.write_all(&[7; 100]).unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while unread_bytes(&mine) != 100 && Instant::now() < deadline {
            std::thread::yield_now();
        }
        assert_eq!(unread_bytes(&mine), 100);
        let mut buf = [0u8; 100];
        rx.read_exact(&mut buf).unwrap();
        assert_eq!(unread_bytes(&mine), 0);
    }
}
