//! Process groups: a process started in a group of its own, and the whole group stopped.

use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// Puts `cmd` in a new process group so the whole tree can be killed at once.
pub(crate) fn spawn_in_own_group(cmd: &mut Command) -> std::io::Result<Child> {
    use std::os::unix::process::CommandExt;
    cmd.process_group(0).spawn()
}

/// Stops a process group: SIGTERM, then SIGKILL after 3 s.
pub(crate) fn kill_group(pgid: i32) {
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
