//! Starting and stopping a `roslaunch` process tree with a bounded shutdown.
//!
//! `roslaunch` stops its nodes one after the other on SIGINT, giving each 15 s to exit
//! before SIGTERM: a node stuck in its shutdown can hold a script's clean-up for minutes.
//! A tool or test that starts a launch therefore puts it in a process group of its own and
//! stops it with [`stop_group`]: SIGINT to `roslaunch` (nodes unregister, bags close), then
//! SIGTERM and finally SIGKILL to the whole group, each after a bounded wait.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// How long `roslaunch` gets to shut its nodes down after SIGINT.
pub const SIGINT_GRACE: Duration = Duration::from_secs(4);
/// How long the group gets after SIGTERM before SIGKILL.
pub const SIGTERM_GRACE: Duration = Duration::from_secs(2);

/// Spawns `cmd` as the leader of a new process group (its children join it), with
/// SIGINT at its default action: a shell starts background jobs with SIGINT ignored, and
/// an ignored signal stays ignored across `exec`, so a launch started from a script run in
/// the background would not stop on SIGINT.
pub fn spawn_group(cmd: &mut Command) -> std::io::Result<Child> {
    // SAFETY: `signal` is async-signal-safe, as code between fork and exec must be.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        });
    }
    cmd.process_group(0).spawn()
}

/// How a [`stop_group`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// Every process of the group exited after SIGINT.
    Interrupted,
    /// SIGTERM was needed.
    Terminated,
    /// SIGKILL was needed.
    Killed,
}

/// Starts the whole suite as a user does, `roslaunch -p PORT gem_bringup
/// integration_run.launch ARGS...`, with a master of the launch's own on a free loopback
/// port, its output to `log`, in a process group of its own ([`spawn_group`]); `adjust`
/// sets anything else of the command (its environment) first. Points this process's
/// `ROS_MASTER_URI` at that master: call it before this process's node starts (no other
/// thread reads the environment yet). Returns the master's URI and the launch.
pub fn suite_on_own_master(
    args: &[String],
    log: &std::path::Path,
    adjust: impl FnOnce(&mut Command),
) -> std::io::Result<(String, Child)> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let uri = format!("http://127.0.0.1:{port}/");
    std::env::set_var("ROS_MASTER_URI", &uri);
    let file = std::fs::File::create(log)?;
    let mut cmd = Command::new("roslaunch");
    cmd.args([
        "-p",
        &port.to_string(),
        "gem_bringup",
        "integration_run.launch",
    ])
    .args(args)
    .env("ROS_MASTER_URI", &uri)
    .stdin(std::process::Stdio::null())
    .stdout(file.try_clone()?)
    .stderr(file);
    adjust(&mut cmd);
    Ok((uri, spawn_group(&mut cmd)?))
}

/// Stops `child` (a group leader from [`spawn_group`]) and every process in its group:
/// SIGINT to the leader, [`SIGINT_GRACE`] for the group to exit; SIGTERM to the group,
/// [`SIGTERM_GRACE`]; SIGKILL. Reaps the leader. Returns the first signal that sufficed.
pub fn stop_group(child: &mut Child, sigint_grace: Duration) -> Stopped {
    let pgid = child.id() as i32;
    // SAFETY: kill only sends signals to our own child and its process group.
    unsafe { libc::kill(pgid, libc::SIGINT) };
    if group_exits(child, pgid, sigint_grace) {
        return Stopped::Interrupted;
    }
    unsafe { libc::kill(-pgid, libc::SIGTERM) };
    if group_exits(child, pgid, SIGTERM_GRACE) {
        return Stopped::Terminated;
    }
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
    let _ = child.wait();
    // The rest of the group has no handler for SIGKILL; give the kernel a moment.
    group_exits(child, pgid, SIGTERM_GRACE);
    Stopped::Killed
}

/// Waits at most `limit` for the leader to be reaped and no live process of the group to
/// remain.
fn group_exits(child: &mut Child, pgid: i32, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        let _ = child.try_wait();
        if !group_alive(pgid) {
            // Only a zombie leader can be left: reap it.
            let _ = child.wait();
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether a process of group `pgid` is still running. Zombies do not count: an orphan
/// that was killed stays a zombie until PID 1 reaps it, and in a container PID 1 may never
/// do so, yet `kill(-pgid, 0)` keeps succeeding for it. Reads `/proc`; where it cannot,
/// falls back to `kill(-pgid, 0)`.
pub fn group_alive(pgid: i32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        // SAFETY: signal 0 only checks that the group exists.
        return unsafe { libc::kill(-pgid, 0) } == 0;
    };
    entries.flatten().any(|entry| {
        let name = entry.file_name();
        if !name.to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
            return false;
        }
        std::fs::read_to_string(entry.path().join("stat"))
            .ok()
            .and_then(|stat| live_group_of(&stat))
            == Some(pgid)
    })
}

/// The process group named by a `/proc/<pid>/stat` line, if the process is not a zombie.
/// The command name (field 2) is in parentheses and may contain spaces or parentheses, so
/// the fields are counted from the last `)`: state, ppid, pgrp.
fn live_group_of(stat: &str) -> Option<i32> {
    let mut fields = stat[stat.rfind(')')? + 1..].split_whitespace();
    let state = fields.next()?;
    let pgrp = fields.nth(1)?.parse().ok()?;
    (state != "Z" && state != "X").then_some(pgrp)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Starts `script` under `sh` in a group of its own, once it has printed "ready".
    fn spawn_ready(script: &str) -> Child {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", script])
            .stdout(std::process::Stdio::piped());
        let mut child = spawn_group(&mut cmd).unwrap();
        let mut line = String::new();
        use std::io::BufRead;
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line, "ready\n");
        child
    }

    #[test]
    fn a_group_that_ignores_sigint_and_sigterm_is_killed() {
        // A shell that ignores both signals, with a child of its own in the group; the
        // signals are ignored once the shell has said so.
        let mut child = spawn_ready("trap '' INT TERM; sleep 30 & echo ready; wait");
        let pgid = child.id() as i32;
        let t0 = Instant::now();
        assert_eq!(
            stop_group(&mut child, Duration::from_millis(200)),
            Stopped::Killed
        );
        assert!(t0.elapsed() < Duration::from_millis(200) + SIGTERM_GRACE * 2);
        assert!(!group_alive(pgid), "the group is gone");
    }

    #[test]
    fn a_stat_line_names_its_group_unless_a_zombie() {
        assert_eq!(live_group_of("42 (sleep) S 1 40 40 0 -1"), Some(40));
        assert_eq!(live_group_of("42 (a) b (c)) R 1 7 7 0"), Some(7));
        assert_eq!(live_group_of("42 (sleep) Z 1 40 40 0 -1"), None);
        assert_eq!(live_group_of("garbage"), None);
    }

    #[test]
    fn a_process_that_exits_on_sigint_stops_there() {
        // Signalled once it runs (and whether or not this test was started with SIGINT
        // ignored, as a background job is).
        let mut child = spawn_ready("echo ready; exec sleep 30");
        assert_eq!(stop_group(&mut child, SIGINT_GRACE), Stopped::Interrupted);
    }
}
