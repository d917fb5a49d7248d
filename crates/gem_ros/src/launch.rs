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

/// Waits at most `limit` for the leader to be reaped and no process of the group to remain.
fn group_exits(child: &mut Child, pgid: i32, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        let _ = child.try_wait();
        // kill(-pgid, 0) fails with ESRCH once no process is left in the group (an
        // unreaped zombie leader still counts, hence try_wait above).
        if unsafe { libc::kill(-pgid, 0) } != 0 {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_that_ignores_sigint_and_sigterm_is_killed() {
        // A shell that ignores both signals, with a child of its own in the group.
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "trap '' INT TERM; sleep 30 & echo ready; wait"])
            .stdout(std::process::Stdio::piped());
        let mut child = spawn_group(&mut cmd).unwrap();
        // The signals are ignored once the shell has said so.
        let mut line = String::new();
        use std::io::BufRead;
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line, "ready\n");
        let pgid = child.id() as i32;
        let t0 = Instant::now();
        assert_eq!(
            stop_group(&mut child, Duration::from_millis(200)),
            Stopped::Killed
        );
        assert!(t0.elapsed() < Duration::from_millis(200) + SIGTERM_GRACE * 2);
        assert_ne!(unsafe { libc::kill(-pgid, 0) }, 0, "the group is gone");
    }

    #[test]
    fn a_process_that_exits_on_sigint_stops_there() {
        // Signalled once it runs (and whether or not this test was started with SIGINT
        // ignored, as a background job is).
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo ready; exec sleep 30"])
            .stdout(std::process::Stdio::piped());
        let mut child = spawn_group(&mut cmd).unwrap();
        let mut line = String::new();
        use std::io::BufRead;
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line, "ready\n");
        assert_eq!(stop_group(&mut child, SIGINT_GRACE), Stopped::Interrupted);
    }
}
