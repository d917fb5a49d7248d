//! Processes against the master: nodes ([`NodeBuilder`], [`NodeProc`]) and ROS
//! command-line tools ([`cli`], [`cli_ok`], [`cli_background`], [`dynparam_set`]), each in
//! a process group of its own with the environment `runners/env.sh` gives a user.

use crate::command::succeeded;
use crate::group::{kill_group, spawn_in_own_group};
use crate::master::{apply_env, master, node_binary, RosGuard};
use crate::wait::wait_until;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

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

/// How long a node (not a launch) gets to end after SIGINT when its test is done.
const NODE_SIGINT_GRACE: Duration = Duration::from_secs(1);

impl Drop for NodeProc {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // As a user's Ctrl-C, bounded: SIGINT, then SIGTERM and SIGKILL to the group. A
            // node that ends so withdraws its registrations; one killed outright stays on
            // the process's shared master, which then keeps calling its slave URI, a port
            // a later node may have been given.
            let grace = if self.launch {
                gem_ros::launch::SIGINT_GRACE
            } else {
                NODE_SIGINT_GRACE
            };
            gem_ros::launch::stop_group(&mut child, grace);
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

/// The command of a ROS tool (or a Python script under `/usr/bin/python3`) against the
/// test master, with the environment of [`cli`] and a process group of its own, for a
/// caller that talks to it on its standard streams and ends it itself.
pub fn tool_command(program: &str, args: &[&str]) -> Command {
    let m = master();
    let mut cmd = Command::new(program);
    cmd.args(args);
    apply_env(&mut cmd, &m.uri, &m.home);
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    cmd
}

/// Like [`cli`] but asserts success and returns stdout.
pub fn cli_ok(program: &str, args: &[&str], timeout: Duration) -> String {
    succeeded(&cli(program, args, timeout), &format!("{program} {args:?}"))
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

impl RosGuard {
    /// Starts building a node process from one of our binaries.
    pub fn node(&self, binary: &str) -> NodeBuilder {
        NodeBuilder::new(node_binary(binary))
    }
}

/// A namespace no other caller of this process got: `prefix` and a number (`/sm3`), so
/// the tests that share one master never see each other's nodes.
pub fn fresh_ns(prefix: &str) -> String {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    format!(
        "/{prefix}{}",
        N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    )
}

/// A [`tool_command`] talked to on its standard streams: started with its stdin and stdout
/// piped (stderr dropped); the child, and the lines of its stdout as they come.
pub fn tool_piped(program: &str, args: &[&str]) -> (Child, std::sync::mpsc::Receiver<String>) {
    let mut child = tool_command(program, args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {program}: {e}"));
    let lines = lines_of(child.stdout.take().expect("stdout"));
    (child, lines)
}

/// The lines a child writes on `stdout` (its standard output, or any pipe), as they come:
/// a thread reads them until the pipe closes.
pub fn lines_of(stdout: impl std::io::Read + Send + 'static) -> std::sync::mpsc::Receiver<String> {
    use std::io::BufRead;
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    lines
}
