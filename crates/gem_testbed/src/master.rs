//! The master of this process.
//!
//! One private `rosmaster` per process on a free loopback port, started on first use and
//! killed (its whole process group) when the process exits. The process itself joins it as
//! a node of its own (`ros1_protocols::this_node`). [`ros`] serialises its callers, because
//! `/clock` and `/use_sim_time` are global to a master, and gives each the parameters of a
//! fresh master; how the machine is shared with other test processes is
//! [`crate::machine`]'s.

use crate::command::{sourced, succeeded};
use crate::group::{kill_group, spawn_in_own_group};
use crate::machine::Machine;
use crate::wait::wait_until;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// Directory holding the build's binaries (`target/release` or `target/debug`), found
/// from the running executable: a test (`target/<profile>/deps/<test>-<hash>`) or a
/// binary such as the benchmark (`target/<profile>/gem_bench`).
pub fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let dir = exe.parent().expect("executable directory");
    if dir.file_name().is_some_and(|n| n == "deps") {
        dir.parent().expect("profile dir").to_path_buf()
    } else {
        dir.to_path_buf()
    }
}

/// Path of one of our node binaries; panics with a hint when it has not been built.
pub fn node_binary(name: &str) -> PathBuf {
    let path = bin_dir().join(name);
    assert!(
        path.exists(),
        "{} is missing: build the nodes first (`cargo build --release --workspace --bins`, \
         which runners/test.sh does)",
        path.display()
    );
    path
}

/// The master of this process.
pub(crate) struct Master {
    pub(crate) uri: String,
    pgid: i32,
    pub(crate) home: PathBuf,
    /// Kept so the process is owned (and reaped by `kill_group` at exit).
    _child: Mutex<Child>,
}

static MASTER: OnceLock<Master> = OnceLock::new();
/// Use of this process's master and of the in-process node, one test at a time (and of
/// the machine, as [`ros`] or [`ros_alone`] took it).
pub struct RosGuard {
    _lock: Machine,
}

impl RosGuard {
    /// The master's URI.
    pub fn master_uri(&self) -> &str {
        &master().uri
    }

    /// Sets `/use_sim_time` for nodes started after this call (the test process itself
    /// always runs on wall time; it drives `/clock` explicitly).
    pub fn set_sim_time(&self, on: bool) {
        let p = ros1_protocols::this_node::param("/use_sim_time").expect("param name");
        p.set(&on).expect("set /use_sim_time");
    }
}

impl Drop for RosGuard {
    fn drop(&mut self) {
        // Leave the master as a fresh test expects it.
        if let Some(p) = ros1_protocols::this_node::param("/use_sim_time") {
            let _ = p.delete();
        }
    }
}

/// Starts (once) the master and the in-process node, and serialises the calling test
/// against the others in this process; a test of another test process, on its own
/// master, may run beside it ([`crate::machine::shared`]).
pub fn ros() -> RosGuard {
    with_master(crate::machine::shared())
}

/// [`ros`] with the machine to the calling test alone ([`crate::machine::exclusive`]):
/// for a test that loads every CPU or whose bounds hold only on a machine running
/// nothing else.
pub fn ros_alone() -> RosGuard {
    with_master(crate::machine::exclusive())
}

fn with_master(lock: Machine) -> RosGuard {
    let m = master();
    if !ros1_protocols::this_node::is_initialized() {
        // The node reads these when it starts; set them before any node thread exists.
        std::env::set_var("ROS_MASTER_URI", &m.uri);
        std::env::set_var("ROS_IP", "127.0.0.1");
        std::env::set_var("ROS_HOME", &m.home);
        // Ctrl-C ends the test run as usual: the test process catches no signal.
        ros1_protocols::this_node::leave_sigint_alone();
        ros1_protocols::this_node::init("gem_e2e").expect("a node against the test master");
    }
    reset_parameters();
    RosGuard { _lock: lock }
}

/// Leaves on the master only the parameters it had when it started, so each test starts
/// as on a fresh master whatever earlier tests (or their nodes) set.
fn reset_parameters() {
    static FRESH: OnceLock<Vec<String>> = OnceLock::new();
    let fresh = FRESH
        .get_or_init(|| ros1_protocols::this_node::parameters().expect("the master's parameters"));
    for name in ros1_protocols::this_node::parameters().expect("the master's parameters") {
        if !fresh.contains(&name) {
            if let Some(p) = ros1_protocols::this_node::param(&name) {
                let _ = p.delete();
            }
        }
    }
}

/// What this process's master has logged so far (`$ROS_HOME/log/master.log`).
pub fn master_log() -> String {
    std::fs::read_to_string(master().home.join("log/master.log")).unwrap_or_default()
}

pub(crate) fn master() -> &'static Master {
    MASTER.get_or_init(start_master)
}

fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    l.local_addr().expect("local addr").port()
}

/// A UDP port no socket holds now, chosen by the kernel among its ephemeral ones: the
/// operator link's port for one launch, so that two test processes' links never meet.
pub fn free_udp_port() -> u16 {
    std::net::UdpSocket::bind("0.0.0.0:0")
        .and_then(|s| s.local_addr())
        .expect("bind a free UDP port")
        .port()
}

fn start_master() -> Master {
    let home = std::env::temp_dir().join(format!("gem_e2e_ros_home_{}", std::process::id()));
    let (uri, child) = spawn_master(&home);
    // Kill the master when this process exits, however its tests ended.
    extern "C" fn kill_master() {
        if let Some(m) = MASTER.get() {
            kill_group(m.pgid);
        }
    }
    unsafe { libc::atexit(kill_master) };
    Master {
        uri,
        pgid: child.id() as i32,
        home,
        _child: Mutex::new(child),
    }
}

/// Starts a `rosmaster` on a free loopback port with its home in `home`, in a process
/// group of its own; its URI and process once it accepts connections.
fn spawn_master(home: &Path) -> (String, Child) {
    std::fs::create_dir_all(home).expect("ROS_HOME");
    for _attempt in 0..5 {
        let port = free_port();
        let uri = format!("http://127.0.0.1:{port}/");
        let mut cmd = Command::new("/usr/bin/rosmaster");
        cmd.args(["--core", "-p", &port.to_string(), "-w", "3"]);
        apply_env(&mut cmd, &uri, home);
        cmd.stdout(Stdio::null()).stderr(Stdio::null());
        let mut child =
            spawn_in_own_group(&mut cmd).expect("start /usr/bin/rosmaster (run runners/setup.sh)");
        if wait_until(Duration::from_secs(10), || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        }) {
            return (uri, child);
        }
        kill_group(child.id() as i32);
        let _ = child.wait();
    }
    panic!("rosmaster did not come up on a free port in 5 attempts");
}

/// A master of a test's own, beside this process's: one the test may stop (`SIGSTOP`,
/// as a debugger or a starved machine would) and resume. Killed when dropped. Nodes join
/// it with `__master:=` + [`OwnMaster::uri`].
pub struct OwnMaster {
    uri: String,
    child: Child,
}

impl OwnMaster {
    /// Starts one on a free port.
    pub fn start() -> OwnMaster {
        let home = std::env::temp_dir().join(format!(
            "gem_e2e_own_master_{}_{}",
            std::process::id(),
            free_port()
        ));
        let (uri, child) = spawn_master(&home);
        OwnMaster { uri, child }
    }

    /// Its URI.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// Stops it (`SIGSTOP`): it keeps its sockets and answers nothing.
    pub fn stop(&self) {
        // SAFETY: signalling the process group this value owns.
        unsafe { libc::kill(-(self.child.id() as i32), libc::SIGSTOP) };
    }

    /// Lets it run again (`SIGCONT`).
    pub fn resume(&self) {
        // SAFETY: as in `stop`.
        unsafe { libc::kill(-(self.child.id() as i32), libc::SIGCONT) };
    }
}

impl Drop for OwnMaster {
    fn drop(&mut self) {
        kill_group(self.child.id() as i32);
        let _ = self.child.wait();
    }
}

/// The variables `runners/env.sh` sets, captured once by sourcing it in bash.
pub fn user_env() -> &'static Vec<(String, String)> {
    static ENV: OnceLock<Vec<(String, String)>> = OnceLock::new();
    ENV.get_or_init(|| {
        let out = sourced("runners/env.sh", ">/dev/null && env -0")
            .output()
            .expect("source runners/env.sh");
        succeeded(&out, "runners/env.sh")
            .split('\0')
            .filter_map(|kv| kv.split_once('='))
            .filter(|(k, _)| matches!(*k, "ROS_PACKAGE_PATH" | "PYTHONPATH" | "PATH" | "GEM_ROOT"))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    })
}

/// The environment a user gets from `runners/env.sh`, pointed at the master `uri`.
pub(crate) fn apply_env(cmd: &mut Command, uri: &str, home: &Path) {
    for (k, v) in user_env() {
        cmd.env(k, v);
    }
    cmd.env("ROS_MASTER_URI", uri)
        .env("ROS_IP", "127.0.0.1")
        .env("ROS_HOME", home)
        .env("ROS_LOG_DIR", home.join("log"))
        .env_remove("ROS_HOSTNAME");
}
