//! What the runtime's tests share: a private `rosmaster` on a free loopback port, ROS's
//! command-line tools and rospy run against it, the runtime's log, bounded waits.
//!
//! (Not `gem_testbed`: it sits above this crate and pulls in the node crates; these tests
//! start each runtime node themselves, against a master of their own.)
#![allow(dead_code)]

use std::io::Write;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// One test at a time: the link-time bounds hold on a machine not running another test.
pub fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    let guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    logs_since_now();
    guard
}

/// A private master; killed (with its process group) when dropped.
pub struct Master {
    pub uri: String,
    home: PathBuf,
    child: Child,
}

impl Master {
    pub fn start() -> Master {
        let home = std::env::temp_dir().join(format!(
            "ros1_runtime_test_{}_{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_nanos()
        ));
        std::fs::create_dir_all(home.join("log")).expect("ROS_HOME");
        for _ in 0..5 {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("a free port")
                .port();
            let uri = format!("http://127.0.0.1:{port}/");
            let mut cmd = Command::new("/usr/bin/rosmaster");
            cmd.args(["--core", "-p", &port.to_string(), "-w", "3"])
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            ros_env(&mut cmd, &uri, &home);
            std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
            let mut child = cmd.spawn().expect("start /usr/bin/rosmaster");
            let up = wait_until(Duration::from_secs(10), || {
                ros1_protocols::master_api::Master::new(&uri, "/test", "")
                    .call("getPid", vec![])
                    .is_ok()
            });
            if up {
                return Master { uri, home, child };
            }
            // SAFETY: signalling the process group we started.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
        }
        panic!("rosmaster did not come up on a free port in 5 attempts");
    }

    /// A ROS tool (or `/usr/bin/python3`) set up to talk to this master.
    pub fn tool(&self, program: &str, args: &[&str]) -> Command {
        let mut cmd = Command::new(program);
        cmd.args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        ros_env(&mut cmd, &self.uri, &self.home);
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        cmd
    }

    /// Runs a tool to its end, killing it after `timeout`.
    pub fn run(&self, program: &str, args: &[&str], timeout: Duration) -> Output {
        let child = self.tool(program, args).spawn().expect(program);
        finish(child, timeout)
    }

    /// A fresh rospy subscriber of `topic`: (seconds from subscribing to the first
    /// message, seconds from its process start, the message's text, its standard error
    /// with the wall-clock times of both).
    pub fn first_message(
        &self,
        topic: &str,
        wait: Duration,
    ) -> Result<(f64, f64, String, String), String> {
        let out = self.run(
            "/usr/bin/python3",
            &[&script(), topic, &wait.as_secs_f64().to_string()],
            wait + Duration::from_secs(20),
        );
        parse_first(&String::from_utf8_lossy(&out.stdout))
            .map(|(link, start, data)| {
                (
                    link,
                    start,
                    data,
                    String::from_utf8_lossy(&out.stderr).into_owned(),
                )
            })
            .ok_or_else(|| format!("no message: {}", describe(&out)))
    }

    /// The same subscriber, staying linked for `linger` once it has its first message.
    pub fn lingering_subscriber(&self, topic: &str, linger: Duration) -> Child {
        self.tool(
            "/usr/bin/python3",
            &[&script(), topic, "20", &linger.as_secs_f64().to_string()],
        )
        .spawn()
        .expect("python3")
    }

    /// A rospy subscriber of `topic` whose node is up, subscribing only on [`Ready::go`].
    pub fn ready_subscriber(&self, topic: &str) -> Ready {
        let mut child = self
            .tool("/usr/bin/python3", &[&script(), topic, "10", "0", "wait"])
            .stdin(Stdio::piped())
            .spawn()
            .expect("python3");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
            {
                let _ = tx.send(line);
            }
        });
        let ready = Ready { child, lines };
        let up = ready.lines.recv_timeout(Duration::from_secs(30));
        assert_eq!(
            up.as_deref(),
            Ok("READY"),
            "the subscriber's node did not come up"
        );
        ready
    }
}

/// A rospy subscriber waiting to subscribe (see [`Master::ready_subscriber`]).
pub struct Ready {
    child: Child,
    lines: std::sync::mpsc::Receiver<String>,
}

impl Ready {
    /// Subscribes; how long until the first message, measured here from this call.
    pub fn go(mut self) -> Result<Duration, String> {
        let asked = Instant::now();
        self.child
            .stdin
            .take()
            .expect("stdin")
            .write_all(b"go\n")
            .map_err(|e| e.to_string())?;
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(15))
            .map_err(|e| format!("no line from the subscriber: {e}"))?;
        let took = asked.elapsed();
        let _ = finish(self.child, Duration::from_secs(10));
        parse_first(&line).map(|_| took).ok_or(line)
    }
}

fn script() -> String {
    format!(
        "{}/tests/support/first_message.py",
        env!("CARGO_MANIFEST_DIR")
    )
}

pub fn parse_first(stdout: &str) -> Option<(f64, f64, String)> {
    let line = stdout.lines().find_map(|l| l.strip_prefix("FIRST "))?;
    let mut parts = line.splitn(3, ' ');
    let link = parts.next()?.parse().ok()?;
    let start = parts.next()?.parse().ok()?;
    Some((link, start, parts.next().unwrap_or_default().to_owned()))
}

pub fn describe(out: &Output) -> String {
    format!(
        "{}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Waits for `child` at most `timeout`, then kills its process group.
pub fn finish(child: Child, timeout: Duration) -> Output {
    let pgid = child.id() as i32;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(timeout) {
        Ok(out) => out.expect("wait"),
        Err(_) => {
            // SAFETY: signalling a process group we started.
            unsafe { libc::kill(-pgid, libc::SIGKILL) };
            rx.recv().expect("output after kill").expect("wait")
        }
    }
}

fn ros_env(cmd: &mut Command, uri: &str, home: &std::path::Path) {
    cmd.env_clear();
    // runners/test.sh's mark, by which it ends what it started however it ends.
    if let Some(mark) = std::env::var_os("GEM_TEST_RUN") {
        cmd.env("GEM_TEST_RUN", mark);
    }
    cmd.env("PATH", "/usr/bin:/bin")
        .env("HOME", home)
        .env("ROS_MASTER_URI", uri)
        .env("ROS_IP", "127.0.0.1")
        .env("ROS_HOME", home)
        .env("ROS_LOG_DIR", home.join("log"));
}

impl Drop for Master {
    fn drop(&mut self) {
        // SAFETY: signalling the process group we started.
        unsafe { libc::kill(-(self.child.id() as i32), libc::SIGKILL) };
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.home);
    }
}

/// Polls `cond` until it holds or `timeout` passes (a test's observation of another
/// process, which has no notification to wait on).
pub fn wait_until(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + timeout;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Everything the runtime logged (tracing), from the start of the current test.
static LOG: Mutex<Vec<u8>> = Mutex::new(Vec::new());

struct LogWriter;

impl Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        LOG.lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn logs_since_now() {
    static INIT: OnceLock<()> = OnceLock::new();
    INIT.get_or_init(|| {
        tracing_subscriber::fmt()
            .with_writer(|| LogWriter)
            .with_ansi(false)
            .with_env_filter("ros1_protocols=debug")
            .init();
    });
    LOG.lock().unwrap_or_else(|e| e.into_inner()).clear();
}

/// The runtime's log lines so far in this test.
pub fn logs() -> String {
    String::from_utf8_lossy(&LOG.lock().unwrap_or_else(|e| e.into_inner())).into_owned()
}

/// How many warnings logged contain `needle`.
pub fn warned(needle: &str) -> usize {
    logs()
        .lines()
        .filter(|l| l.contains(" WARN ") && l.contains(needle))
        .count()
}
