//! Private computers for multi-host tests: Linux network namespaces joined by veth pairs.
//!
//! Three hosts, each a network namespace with one address, `10.231.0.<n>/32`, on each of
//! its veths and a route to each other host through the veth that joins them (a direct
//! cable per pair, no forwarding, so cutting one cable cuts exactly one pair). A cut
//! ([`Hosts::cut`]) loses every packet silently, as a broken cable behind a switch does:
//! each end's route to the other goes through the third host, which does not forward,
//! and strict reverse-path filtering drops what still arrives on the direct cable. No end
//! sees an error, so TCP retransmits and orphaned links keep trying, as on a real
//! network (taking a veth down instead would remove its routes and fail every send
//! locally at once).
//!
//! | host | address | runs |
//! |---|---|---|
//! | `master` | 10.231.0.1 | `roscore` (rosmaster and rosout), the tools of a laptop |
//! | `supervisor` | 10.231.0.2 | `supervisor.launch` |
//! | `vehicle` | 10.231.0.3 | `vehicle.launch` (gem_sim owns `/clock`) |
//!
//! Every process gets `ROS_MASTER_URI=http://10.231.0.1:11311/`, its host's `ROS_IP` and a
//! `ROS_HOME` of its host's own. Needs iproute2 and the right to create namespaces (root or
//! CAP_NET_ADMIN): [`Hosts::build`] says why not when it cannot. Dropping the [`Hosts`]
//! kills every process in the namespaces and deletes them, however a test ends; namespaces
//! left by a test process that was killed are deleted by the next one.

use gem_ros::launch::{spawn_group, stop_group, SIGINT_GRACE};
use gem_testbed::{repo_root, user_env, wait_until};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The master's port on its host.
pub const MASTER_PORT: u16 = 11311;
/// Prefix of every namespace this harness creates (`gemhost-<pid>-<n>-<host>`).
const PREFIX: &str = "gemhost-";

/// One of the three computers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// rosmaster, rosout and the tools.
    Master,
    /// mock_signals, state_manager, task_planner, overlay, health monitor.
    Supervisor,
    /// gem_sim and the controller.
    Vehicle,
}

impl Role {
    /// All three, in address order.
    pub const ALL: [Role; 3] = [Role::Master, Role::Supervisor, Role::Vehicle];

    /// The host's name.
    pub fn name(self) -> &'static str {
        match self {
            Role::Master => "master",
            Role::Supervisor => "supervisor",
            Role::Vehicle => "vehicle",
        }
    }

    /// The host's address.
    pub fn ip(self) -> &'static str {
        match self {
            Role::Master => "10.231.0.1",
            Role::Supervisor => "10.231.0.2",
            Role::Vehicle => "10.231.0.3",
        }
    }

    /// Short name of the veth on another host that leads here.
    fn dev(self) -> &'static str {
        match self {
            Role::Master => "to-master",
            Role::Supervisor => "to-super",
            Role::Vehicle => "to-vehicle",
        }
    }
}

/// A process started on a host.
pub struct HostProc {
    /// What it is, for messages.
    pub label: String,
    /// Where its stdout and stderr go.
    pub log: PathBuf,
    child: Option<Child>,
}

impl HostProc {
    /// Its output so far.
    pub fn output(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Whether it still runs.
    pub fn running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// Waits for it to end (at most `timeout`, then stops it); returns its exit success
    /// and output.
    pub fn finish(mut self, timeout: Duration) -> (bool, String) {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Some(child) = self.child.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    self.child = None;
                    return (status.success(), self.output());
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.stop();
        (
            false,
            format!("timed out after {timeout:?}\n{}", self.output()),
        )
    }

    /// Stops it (SIGINT, then SIGTERM and SIGKILL to its process group).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            stop_group(&mut child, SIGINT_GRACE);
        }
    }
}

/// Where a process of the suite finds ROS: its master, its own address and its `ROS_HOME`.
pub struct RosEnv<'a> {
    /// `ROS_MASTER_URI`.
    pub master_uri: &'a str,
    /// `ROS_IP`: the address the process gives its peers.
    pub ip: &'a str,
    /// `ROS_HOME` (logs under `log/`).
    pub home: &'a Path,
}

/// Starts `cmd` from the repository root with the suite's environment (that of
/// `runners/env.sh`) set to `env`, in its own process group, its stdout and stderr to
/// `log`.
pub fn spawn_ros(mut cmd: Command, label: String, log: PathBuf, env: &RosEnv) -> HostProc {
    let file = std::fs::File::create(&log).expect("a log file");
    cmd.current_dir(repo_root())
        .stdin(Stdio::null())
        .stdout(file.try_clone().expect("a log file"))
        .stderr(file);
    for (k, v) in user_env() {
        cmd.env(k, v);
    }
    cmd.env("ROS_MASTER_URI", env.master_uri)
        .env("ROS_IP", env.ip)
        .env("ROS_HOME", env.home)
        .env("ROS_LOG_DIR", env.home.join("log"))
        .env("PYTHONUNBUFFERED", "1")
        .env_remove("ROS_HOSTNAME");
    let child = spawn_group(&mut cmd).unwrap_or_else(|e| panic!("start {label}: {e}"));
    HostProc {
        label,
        log,
        child: Some(child),
    }
}

impl Drop for HostProc {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The three hosts of one test.
pub struct Hosts {
    /// Namespace per role, in [`Role::ALL`] order.
    ns: [String; 3],
    /// Logs, `ROS_HOME`s and scratch files.
    pub dir: PathBuf,
    counter: Mutex<u32>,
}

/// Whether this process may build hosts: `Err` says why not (the caller reports the test
/// as skipped).
pub fn available() -> Result<(), String> {
    match Command::new("ip").arg("-V").output() {
        Ok(o) if o.status.success() => {}
        _ => return Err("iproute2's `ip` is not installed".into()),
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err("network namespaces need root (or CAP_NET_ADMIN)".into());
    }
    Ok(())
}

impl Hosts {
    /// Builds the three hosts and their cables; `Err` if the system refused (the reason).
    pub fn build() -> Result<Hosts, String> {
        available()?;
        sweep_stale();
        static SEQ: Mutex<u32> = Mutex::new(0);
        let n = {
            let mut s = SEQ.lock().unwrap_or_else(|e| e.into_inner());
            *s += 1;
            *s
        };
        let ns = Role::ALL.map(|r| format!("{PREFIX}{}-{n}-{}", std::process::id(), r.name()));
        let dir = std::env::temp_dir().join(format!("gem_hosts_{}_{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let hosts = Hosts {
            ns,
            dir,
            counter: Mutex::new(0),
        };
        for ns in &hosts.ns {
            ip(&["netns", "add", ns])?;
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
            // No forwarding: a new namespace inherits the machine's setting, which a
            // Docker engine turns on, and a host that forwarded would carry a cut pair's
            // packets around the cut. Strict reverse-path filtering: a packet that
            // arrives on a cable its sender is not routed over (a cut one) is dropped.
            // /proc/sys/net is per namespace.
            in_ns(
                ns,
                "echo 0 > /proc/sys/net/ipv4/ip_forward && \
                 for f in /proc/sys/net/ipv4/conf/*/rp_filter; do echo 1 > $f; done",
            )?;
        }
        for (a, b) in [
            (Role::Master, Role::Supervisor),
            (Role::Master, Role::Vehicle),
            (Role::Supervisor, Role::Vehicle),
        ] {
            ip(&[
                "link",
                "add",
                b.dev(),
                "netns",
                hosts.ns(a),
                "type",
                "veth",
                "peer",
                "name",
                a.dev(),
                "netns",
                hosts.ns(b),
            ])?;
            for (here, there) in [(a, b), (b, a)] {
                ip(&[
                    "-n",
                    hosts.ns(here),
                    "addr",
                    "add",
                    &format!("{}/32", here.ip()),
                    "dev",
                    there.dev(),
                ])?;
            }
            for (here, there) in [(a, b), (b, a)] {
                ip(&["-n", hosts.ns(here), "link", "set", there.dev(), "up"])?;
            }
            hosts.mend(a, b)?;
        }
        Ok(hosts)
    }

    /// The namespace of `role`.
    pub fn ns(&self, role: Role) -> &str {
        &self.ns[Role::ALL.iter().position(|r| *r == role).expect("a role")]
    }

    /// The master's URI, as every host sees it.
    pub fn master_uri(&self) -> String {
        format!("http://{}:{MASTER_PORT}/", Role::Master.ip())
    }

    /// Mends the cable between `a` and `b` (or sets it up): each end routes to the other
    /// over it.
    pub fn mend(&self, a: Role, b: Role) -> Result<(), String> {
        self.route(a, b, |here, there| {
            vec!["dev", there.dev(), "src", here.ip()]
        })
    }

    /// Cuts the cable between `a` and `b`: from now on every packet between them is lost,
    /// silently (see the module's documentation).
    pub fn cut(&self, a: Role, b: Role) -> Result<(), String> {
        let third = Role::ALL
            .into_iter()
            .find(|r| *r != a && *r != b)
            .expect("three roles");
        self.route(a, b, |_, _| vec!["via", third.ip(), "dev", third.dev()])
    }

    /// Replaces, on each of `a` and `b`, the route to the other with `how(here, there)`.
    fn route(
        &self,
        a: Role,
        b: Role,
        how: impl Fn(Role, Role) -> Vec<&'static str>,
    ) -> Result<(), String> {
        for (here, there) in [(a, b), (b, a)] {
            let to = format!("{}/32", there.ip());
            let mut args = vec!["-n", self.ns(here), "route", "replace", &to];
            args.extend(how(here, there));
            ip(&args)?;
        }
        Ok(())
    }

    /// Starts `program args` on `role`'s host with the suite's environment (that of
    /// `runners/env.sh`) pointed at the master, its own process group and a log file.
    pub fn spawn(&self, role: Role, program: &str, args: &[&str]) -> HostProc {
        let n = {
            let mut c = self.counter.lock().unwrap_or_else(|e| e.into_inner());
            *c += 1;
            *c
        };
        let base = Path::new(program)
            .file_name()
            .map_or(program.into(), |f| f.to_string_lossy());
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", self.ns(role), program])
            .args(args);
        spawn_ros(
            cmd,
            format!("{}:{base}", role.name()),
            self.dir.join(format!("{n:02}_{}_{base}.log", role.name())),
            &RosEnv {
                master_uri: &self.master_uri(),
                ip: role.ip(),
                home: &self.dir.join(format!("ros_home_{}", role.name())),
            },
        )
    }

    /// Starts `roscore` on the master's host and waits (at most `timeout`) until it
    /// answers; `Err` with its output if it does not.
    pub fn start_master(&self, timeout: Duration) -> Result<HostProc, String> {
        let master = self.spawn(Role::Master, "roscore", &["-p", &MASTER_PORT.to_string()]);
        if self.wait_port(Role::Master, Role::Master, MASTER_PORT, timeout) {
            Ok(master)
        } else {
            Err(format!("no master on its host:\n{}", master.output()))
        }
    }

    /// Runs `program args` on `role`'s host to completion (at most `timeout`), like
    /// [`Hosts::spawn`]; returns its exit success and output.
    pub fn run(
        &self,
        role: Role,
        program: &str,
        args: &[&str],
        timeout: Duration,
    ) -> (bool, String) {
        self.spawn(role, program, args).finish(timeout)
    }

    /// Kills every process on `role`'s host at once (SIGKILL), as a power loss would.
    /// Returns how many there were.
    pub fn kill_host(&self, role: Role) -> usize {
        kill_all_in(self.ns(role))
    }

    /// Waits until TCP `port` on `role`'s address accepts connections, seen from `from`.
    pub fn wait_port(&self, from: Role, role: Role, port: u16, timeout: Duration) -> bool {
        wait_until(timeout, || {
            Command::new("ip")
                .args(["netns", "exec", self.ns(from), "bash", "-c"])
                .arg(format!("exec 3<>/dev/tcp/{}/{port}", role.ip()))
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        })
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        for ns in &self.ns {
            kill_all_in(ns);
            let _ = ip(&["netns", "del", ns]);
        }
    }
}

/// SIGKILL to every process in namespace `ns`; waits (bounded) until they are gone.
fn kill_all_in(ns: &str) -> usize {
    let pids = || -> Vec<i32> {
        Command::new("ip")
            .args(["netns", "pids", ns])
            .output()
            .map(|o| {
                String::from_utf8_lossy(&o.stdout)
                    .split_whitespace()
                    .filter_map(|p| p.parse().ok())
                    .collect()
            })
            .unwrap_or_default()
    };
    let found = pids();
    for &pid in &found {
        // SAFETY: kill only sends a signal.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    // Zombies (of our children) leave the list once reaped by their HostProc; the rest
    // go at once.
    wait_until(Duration::from_secs(3), || {
        pids().iter().all(|&p| {
            std::fs::read_to_string(format!("/proc/{p}/stat")).map_or(true, |s| {
                s.rsplit(')')
                    .next()
                    .is_some_and(|r| r.trim_start().starts_with('Z'))
            })
        })
    });
    found.len()
}

/// Deletes namespaces left by test processes that no longer run.
fn sweep_stale() {
    let Ok(out) = Command::new("ip").args(["netns", "list"]).output() else {
        return;
    };
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some(name) = line.split_whitespace().next() else {
            continue;
        };
        let Some(pid) = name
            .strip_prefix(PREFIX)
            .and_then(|rest| rest.split('-').next())
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        // SAFETY: signal 0 only checks that the process exists.
        if pid != std::process::id() as i32 && unsafe { libc::kill(pid, 0) } != 0 {
            kill_all_in(name);
            let _ = ip(&["netns", "del", name]);
        }
    }
}

/// Runs a shell `script` in namespace `ns`.
fn in_ns(ns: &str, script: &str) -> Result<(), String> {
    ip(&["netns", "exec", ns, "sh", "-c", script])
}

/// Runs `ip args`; `Err` carries what it printed.
fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("ip {}: {e}", args.join(" ")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}
