//! Test harness for end-to-end tests against a real ROS master.
//!
//! Each test binary gets one private `rosmaster` on a free loopback port, started on first
//! use and killed (its whole process group) when the binary exits. The test process itself
//! joins that master as a rosrust node, so tests publish, subscribe and call services
//! in-process. Tests in one binary share the master and are serialised by [`ros`]'s guard,
//! because `/clock` and `/use_sim_time` are global to a master.
//!
//! Node processes ([`NodeBuilder`]) and CLI tools ([`cli`]) get the same environment that
//! `runners/env.sh` gives a user, pointed at the private master. Every wait is bounded
//! ([`wait_until`]); nothing sleeps to synchronise.

use ros1_protocols::Lock;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

pub mod bags;
pub mod containers;
pub mod control;
pub mod hosts;
pub mod junit;
pub mod lap;
pub mod sm_scenarios;
pub mod suite;

/// The workspace root (this package lives there).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

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

/// The master of this test binary.
struct Master {
    uri: String,
    pgid: i32,
    home: PathBuf,
    /// Kept so the process is owned (and reaped by `kill_group` at exit).
    _child: Mutex<Child>,
}

static MASTER: OnceLock<Master> = OnceLock::new();
static SERIAL: Mutex<()> = Mutex::new(());

/// Exclusive use of this binary's master and of the in-process rosrust node.
pub struct RosGuard {
    _lock: MutexGuard<'static, ()>,
}

impl RosGuard {
    /// The master's URI.
    pub fn master_uri(&self) -> &str {
        &master().uri
    }

    /// Sets `/use_sim_time` for nodes started after this call (the test process itself
    /// always runs on wall time; it drives `/clock` explicitly).
    pub fn set_sim_time(&self, on: bool) {
        let p = rosrust::param("/use_sim_time").expect("param name");
        p.set(&on).expect("set /use_sim_time");
    }

    /// Starts building a node process from one of our binaries.
    pub fn node(&self, binary: &str) -> NodeBuilder {
        NodeBuilder::new(node_binary(binary))
    }
}

impl Drop for RosGuard {
    fn drop(&mut self) {
        // Leave the master as a fresh test expects it.
        if let Some(p) = rosrust::param("/use_sim_time") {
            let _ = p.delete();
        }
    }
}

/// Starts (once) the master and the in-process node, and serialises the calling test
/// against the others in this binary.
pub fn ros() -> RosGuard {
    let lock = SERIAL.locked();
    let m = master();
    if !rosrust::is_initialized() {
        // rosrust reads these when it initialises; set them before any node thread exists.
        std::env::set_var("ROS_MASTER_URI", &m.uri);
        std::env::set_var("ROS_IP", "127.0.0.1");
        std::env::set_var("ROS_HOME", &m.home);
        rosrust::try_init_with_options("gem_e2e", false)
            .expect("rosrust init against the test master");
    }
    RosGuard { _lock: lock }
}

/// What this binary's master has logged so far (`$ROS_HOME/log/master.log`).
pub fn master_log() -> String {
    std::fs::read_to_string(master().home.join("log/master.log")).unwrap_or_default()
}

fn master() -> &'static Master {
    MASTER.get_or_init(start_master)
}

fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    l.local_addr().expect("local addr").port()
}

fn start_master() -> Master {
    let home = std::env::temp_dir().join(format!("gem_e2e_ros_home_{}", std::process::id()));
    std::fs::create_dir_all(&home).expect("ROS_HOME");
    for _attempt in 0..5 {
        let port = free_port();
        let uri = format!("http://127.0.0.1:{port}/");
        let mut cmd = Command::new("/usr/bin/rosmaster");
        cmd.args(["--core", "-p", &port.to_string(), "-w", "3"]);
        apply_env(&mut cmd, &uri, &home);
        cmd.stdout(Stdio::null()).stderr(Stdio::null());
        let mut child =
            spawn_in_own_group(&mut cmd).expect("start /usr/bin/rosmaster (run runners/setup.sh)");
        let pgid = child.id() as i32;
        if wait_until(Duration::from_secs(10), || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        }) {
            // Kill the master when this test binary exits, however its tests ended.
            extern "C" fn kill_master() {
                if let Some(m) = MASTER.get() {
                    kill_group(m.pgid);
                }
            }
            unsafe { libc::atexit(kill_master) };
            return Master {
                uri,
                pgid,
                home,
                _child: Mutex::new(child),
            };
        }
        kill_group(pgid);
        let _ = child.wait();
    }
    panic!("rosmaster did not come up on a free port in 5 attempts");
}

/// Puts `cmd` in a new process group so the whole tree can be killed at once.
fn spawn_in_own_group(cmd: &mut Command) -> std::io::Result<Child> {
    use std::os::unix::process::CommandExt;
    cmd.process_group(0).spawn()
}

fn kill_group(pgid: i32) {
    unsafe {
        libc::kill(-pgid, libc::SIGTERM);
    }
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline {
        let mut status = 0;
        unsafe { libc::waitpid(-pgid, &mut status, libc::WNOHANG) };
        if !gem_ros::launch::group_alive(pgid) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
        let mut status = 0;
        libc::waitpid(-pgid, &mut status, 0);
    }
}

/// The variables `runners/env.sh` sets, captured once by sourcing it in bash.
pub(crate) fn user_env() -> &'static Vec<(String, String)> {
    static ENV: OnceLock<Vec<(String, String)>> = OnceLock::new();
    ENV.get_or_init(|| {
        let script = repo_root().join("runners/env.sh");
        let out = Command::new("bash")
            .arg("-c")
            .arg(format!(
                "source '{}' >/dev/null && env -0",
                script.display()
            ))
            .output()
            .expect("source runners/env.sh");
        assert!(
            out.status.success(),
            "runners/env.sh failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .split('\0')
            .filter_map(|kv| kv.split_once('='))
            .filter(|(k, _)| matches!(*k, "ROS_PACKAGE_PATH" | "PYTHONPATH" | "PATH" | "GEM_ROOT"))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    })
}

/// The environment a user gets from `runners/env.sh`, pointed at the master `uri`.
fn apply_env(cmd: &mut Command, uri: &str, home: &Path) {
    for (k, v) in user_env() {
        cmd.env(k, v);
    }
    cmd.env("ROS_MASTER_URI", uri)
        .env("ROS_IP", "127.0.0.1")
        .env("ROS_HOME", home)
        .env("ROS_LOG_DIR", home.join("log"))
        .env_remove("ROS_HOSTNAME");
}

/// A scenario step: `Ok` when `cond` holds, else the error `what` describes.
pub fn check(cond: bool, what: impl FnOnce() -> String) -> Result<(), String> {
    if cond {
        Ok(())
    } else {
        Err(what())
    }
}

/// Waits until `cond` holds, checking every few milliseconds, for at most `timeout`.
/// Returns whether it held. This is a bounded wait on a condition, not a sleep.
pub fn wait_until(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Waits until the master lists `topic` with at least one publisher.
pub fn wait_for_publisher(topic: &str, timeout: Duration) -> bool {
    wait_until(timeout, || {
        rosrust::state()
            .map(|s| {
                s.publishers
                    .iter()
                    .any(|t| t.name == topic && !t.connections.is_empty())
            })
            .unwrap_or(false)
    })
}

/// Waits until the master lists `topic` with at least one subscriber.
pub fn wait_for_subscriber(topic: &str, timeout: Duration) -> bool {
    wait_until(timeout, || {
        rosrust::state()
            .map(|s| {
                s.subscribers
                    .iter()
                    .any(|t| t.name == topic && !t.connections.is_empty())
            })
            .unwrap_or(false)
    })
}

/// Waits until `service` is registered with the master.
pub fn wait_for_service(service: &str, timeout: Duration) -> bool {
    rosrust::wait_for_service(service, Some(timeout)).is_ok()
}

/// A running node process; its process group is killed when dropped.
pub struct NodeProc {
    name: String,
    /// A `roslaunch`: stopped with SIGINT first, so its nodes unregister.
    launch: bool,
    child: Option<Child>,
    log: PathBuf,
}

impl NodeProc {
    /// The node's combined stdout/stderr so far (for assertion messages).
    pub fn output(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits, for at most `timeout`, until the node's output contains `needle`, and
    /// returns whether it did. Nodes publish before they log (a fault must not wait for its
    /// log line), so a log line can trail the message a test has just received.
    pub fn wait_output(&self, timeout: Duration, needle: &str) -> bool {
        wait_until(timeout, || self.output().contains(needle))
    }

    /// The process id while the node runs (for resource figures).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    /// Kills the node (SIGKILL to its group), as a crash would.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
        }
    }

    /// Stops the node with SIGINT, as Ctrl-C or roslaunch does, and returns its exit
    /// status if it ended within `timeout`.
    pub fn interrupt(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        self.signal(libc::SIGINT, timeout)
    }

    /// Sends `signal` to the node process and returns its exit status if it ended within
    /// `timeout` (otherwise its group is killed and `None` returned).
    pub fn signal(&mut self, signal: i32, timeout: Duration) -> Option<std::process::ExitStatus> {
        let mut child = self.child.take()?;
        unsafe { libc::kill(child.id() as i32, signal) };
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        kill_group(child.id() as i32);
        None
    }

    /// Waits for the node to exit on its own, up to `timeout`.
    pub fn wait(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        let child = self.child.as_mut()?;
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = child.try_wait() {
                self.child = None;
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        None
    }

    /// The node's name as given at start.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Drop for NodeProc {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            if self.launch {
                // As a user's Ctrl-C, bounded: SIGINT, then SIGTERM and SIGKILL to the group.
                gem_ros::launch::stop_group(&mut child, gem_ros::launch::SIGINT_GRACE);
            } else {
                kill_group(child.id() as i32);
            }
        }
    }
}

/// Builder for a node process: `_param:=value`, remaps and extra arguments.
pub struct NodeBuilder {
    program: PathBuf,
    name: Option<String>,
    args: Vec<String>,
    env: Vec<(String, String)>,
}

impl NodeBuilder {
    /// A builder for any executable (our binaries or ROS tools).
    pub fn new(program: impl Into<PathBuf>) -> Self {
        NodeBuilder {
            program: program.into(),
            name: None,
            args: Vec::new(),
            env: Vec::new(),
        }
    }

    /// Sets an environment variable of the process.
    pub fn env(mut self, name: &str, value: &str) -> Self {
        self.env.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Sets the node name (`__name:=`).
    pub fn name(mut self, name: &str) -> Self {
        self.name = Some(name.to_owned());
        self
    }

    /// Sets a private parameter (`_name:=value`, YAML-typed as rosrun does).
    pub fn param(mut self, name: &str, value: impl std::fmt::Display) -> Self {
        self.args.push(format!("_{name}:={value}"));
        self
    }

    /// Remaps a topic or service name (`from:=to`).
    pub fn remap(mut self, from: &str, to: &str) -> Self {
        self.args.push(format!("{from}:={to}"));
        self
    }

    /// Adds a plain argument.
    pub fn arg(mut self, arg: &str) -> Self {
        self.args.push(arg.to_owned());
        self
    }

    /// Starts the process against the test master.
    pub fn spawn(self) -> NodeProc {
        let m = master();
        let name = self.name.clone().unwrap_or_else(|| {
            self.program
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned()
        });
        let log = m.home.join(format!("{name}-{}.log", unique()));
        let file = std::fs::File::create(&log).expect("node log file");
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.args).arg(format!("__name:={name}"));
        apply_env(&mut cmd, &m.uri, &m.home);
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
        cmd.stdin(Stdio::null())
            .stdout(file.try_clone().expect("log fd"))
            .stderr(file);
        let child = spawn_in_own_group(&mut cmd)
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", self.program.display()));
        NodeProc {
            name,
            launch: self.program.file_name().is_some_and(|f| f == "roslaunch"),
            child: Some(child),
            log,
        }
    }
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

/// Runs a ROS command-line tool (`rostopic`, `rosservice`, a Python script...) against the
/// test master, killing it after `timeout`. Python tools run with Debian's `/usr/bin/python3`
/// (first on PATH), never a pyenv interpreter.
pub fn cli(program: &str, args: &[&str], timeout: Duration) -> Output {
    let m = master();
    let mut cmd = Command::new(program);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    apply_env(&mut cmd, &m.uri, &m.home);
    let child =
        spawn_in_own_group(&mut cmd).unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    let pgid = child.id() as i32;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(timeout) {
        Ok(out) => out.expect("wait for the tool"),
        Err(_) => {
            kill_group(pgid);
            let out = rx.recv().expect("tool output after kill").expect("wait");
            panic!(
                "{program} {args:?} did not finish within {timeout:?}\nstdout: {}\nstderr: {}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

/// Like [`cli`] but asserts success and returns stdout.
pub fn cli_ok(program: &str, args: &[&str], timeout: Duration) -> String {
    let out = cli(program, args, timeout);
    assert!(
        out.status.success(),
        "{program} {args:?} failed ({})\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `rosrun dynamic_reconfigure dynparam set <node> <param> <value>`, as an operator types
/// it; asserts success and returns its stdout.
pub fn dynparam_set(node: &str, param: &str, value: &str, timeout: Duration) -> String {
    cli_ok(
        "rosrun",
        &["dynamic_reconfigure", "dynparam", "set", node, param, value],
        timeout,
    )
}

/// Starts a long-running CLI tool (e.g. `rostopic pub -r 10 ...`) as a managed process.
pub fn cli_background(program: &str, args: &[&str]) -> NodeProc {
    let mut b = NodeBuilder::new(if program.contains('/') {
        PathBuf::from(program)
    } else {
        PathBuf::from("/usr/bin").join(program)
    });
    for a in args {
        b = b.arg(a);
    }
    b.name(&format!(
        "{}_{}",
        program.rsplit('/').next().unwrap_or(program),
        unique()
    ))
    .spawn()
}

/// Collects messages from a subscription for later assertions.
pub struct Collector<T> {
    items: std::sync::Arc<Mutex<Vec<(Instant, T)>>>,
    _sub: rosrust::Subscriber,
}

impl<T: rosrust::Message> Collector<T> {
    /// Subscribes to `topic` and records each message with its wall receive time.
    pub fn new(topic: &str) -> Self {
        let items: std::sync::Arc<Mutex<Vec<(Instant, T)>>> = Default::default();
        let sink = items.clone();
        let sub = rosrust::subscribe(topic, 1000, move |m: T| {
            sink.locked().push((Instant::now(), m));
        })
        .expect("subscribe");
        Collector { items, _sub: sub }
    }

    /// A copy of every message so far.
    pub fn all(&self) -> Vec<T> {
        self.items
            .lock()
            .unwrap()
            .iter()
            .map(|(_, m)| m.clone())
            .collect()
    }

    /// The latest message, if any.
    pub fn last(&self) -> Option<T> {
        self.items.lock().unwrap().last().map(|(_, m)| m.clone())
    }

    /// Number of messages so far.
    pub fn len(&self) -> usize {
        self.items.lock().unwrap().len()
    }

    /// True before the first message.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Forgets the messages received so far.
    pub fn clear(&self) {
        self.items.lock().unwrap().clear();
    }

    /// Waits until some message received so far satisfies `pred`; returns it.
    pub fn wait_for(&self, timeout: Duration, mut pred: impl FnMut(&T) -> bool) -> Option<T> {
        let mut found = None;
        wait_until(timeout, || {
            found = self
                .items
                .lock()
                .unwrap()
                .iter()
                .find(|(_, m)| pred(m))
                .map(|(_, m)| m.clone());
            found.is_some()
        });
        found
    }

    /// Waits until the *latest* message satisfies `pred`; returns it.
    pub fn wait_latest(&self, timeout: Duration, mut pred: impl FnMut(&T) -> bool) -> Option<T> {
        let mut found = None;
        wait_until(timeout, || {
            found = self.last().filter(|m| pred(m));
            found.is_some()
        });
        found
    }
}

/// The `main` of a test binary without the standard harness (`harness = false`), whose
/// scenarios may be *skipped*, which the standard harness cannot report: runs the
/// scenarios whose names contain one of the command line's words (all without one), each
/// skipped with the reason while `available` says no, prints `test <name> ... ok`,
/// `FAILED` or `skipped` and a summary, and exits 1 when one failed.
pub fn scenario_main<S>(
    what: &str,
    scenarios: &[(&str, S)],
    available: impl Fn() -> Result<(), String>,
    run: impl Fn(&S) -> Result<(), String>,
) {
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let chosen: Vec<_> = scenarios
        .iter()
        .filter(|(name, _)| filters.is_empty() || filters.iter().any(|f| name.contains(f.as_str())))
        .collect();
    println!("\nrunning {} {what}", chosen.len());
    let (mut passed, mut failed, mut skipped) = (0, 0, 0);
    for (name, scenario) in chosen {
        if let Err(why) = available() {
            println!("test {name} ... skipped: {why}");
            skipped += 1;
            continue;
        }
        let started = Instant::now();
        let outcome = run(scenario);
        let secs = started.elapsed().as_secs_f64();
        match outcome {
            Ok(()) => {
                println!("test {name} ... ok ({secs:.1} s)");
                passed += 1;
            }
            Err(e) => {
                println!("test {name} ... FAILED ({secs:.1} s): {e}");
                failed += 1;
            }
        }
    }
    println!("\ntest result: {passed} passed; {failed} failed; {skipped} skipped\n");
    if failed > 0 {
        std::process::exit(1);
    }
}
