//! The machine, shared by the test processes on it.
//!
//! Within one process one test runs at a time: the process has one master and one
//! in-process node. Across processes most tests can run side by side, each process on its
//! own master ([`shared`], which [`crate::ros`] takes): `runners/test.sh` runs the
//! end-to-end tests as two processes, one lane each, because a test mostly waits on a
//! simulator paced in wall time and one lane leaves the CPUs idle. A test that needs the
//! machine to itself ([`exclusive`]: masters on fixed ports, network namespaces,
//! containers, every CPU busy, bounds that only hold on a quiet machine) runs alone.
//!
//! Across processes the lock is a file in the temporary directory held with `flock(2)`:
//! shared by the tests that may run side by side, exclusively by the others. A test that
//! waits for the machine to itself first takes a second file, the turnstile, which a
//! shared test passes through before it takes its share: once an exclusive test waits, no
//! new shared test starts, so the exclusive one cannot be starved. The kernel drops a lock
//! with its holder, however the process ended.

use ros1_protocols::Lock;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

static SERIAL: Mutex<()> = Mutex::new(());

/// How a test holds the machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Use {
    /// Beside a test of another process.
    Shared,
    /// Alone.
    Exclusive,
}

impl Use {
    /// As `build/test-times.tsv` writes it.
    fn label(self) -> &'static str {
        match self {
            Use::Shared => "shared",
            Use::Exclusive => "alone",
        }
    }
}

/// The machine for the calling test alone: no other test of this process, and no test of
/// another process that takes [`shared`] or [`exclusive`], runs until the guard is
/// dropped. For a scenario that starts masters on fixed ports, network namespaces or
/// containers, loads every CPU, or whose bounds hold only on a machine running nothing
/// else.
pub fn exclusive() -> Machine {
    Machine::take(Use::Exclusive)
}

/// The machine shared with at most one test of each other test process (one of this
/// process at a time), none of which holds it [`exclusive`]ly.
pub fn shared() -> Machine {
    Machine::take(Use::Shared)
}

/// The machine held by one test ([`exclusive`], [`shared`]). When dropped it appends the
/// test's name, how long it held the machine (seconds) and how (`alone` or `shared`) as a
/// tab-separated line to the file `GEM_TEST_TIMES` names, if set: `runners/test.sh`
/// prints the slowest from it.
pub struct Machine {
    _serial: MutexGuard<'static, ()>,
    /// The lock file, held shared or exclusively (released when closed).
    _file: File,
    how: Use,
    test: String,
    since: Instant,
}

impl Machine {
    fn take(how: Use) -> Machine {
        let serial = SERIAL.locked();
        let turnstile = open_lock("gem_testbed_machine.turnstile");
        flock(&turnstile, libc::LOCK_EX);
        let file = open_lock("gem_testbed_machine.lock");
        if how == Use::Exclusive {
            // Holding the turnstile: no new shared test starts while this one waits.
            flock(&file, libc::LOCK_EX);
            drop(turnstile);
        } else {
            drop(turnstile);
            flock(&file, libc::LOCK_SH);
        }
        Machine {
            _serial: serial,
            _file: file,
            how,
            test: std::thread::current().name().unwrap_or("?").to_owned(),
            since: Instant::now(),
        }
    }
}

impl Drop for Machine {
    fn drop(&mut self) {
        let Some(path) = std::env::var_os("GEM_TEST_TIMES") else {
            return;
        };
        let line = format!(
            "{}\t{:.1}\t{}\n",
            self.test,
            self.since.elapsed().as_secs_f64(),
            self.how.label()
        );
        // One short append per test; a failure to record loses a timing, not a result.
        let _ = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, line.as_bytes()));
    }
}

/// A lock file of the machine's, in the temporary directory (every test process on the
/// machine opens the same one).
fn open_lock(name: &str) -> File {
    let path: PathBuf = std::env::temp_dir().join(name);
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .or_else(|_| File::open(&path))
        .unwrap_or_else(|e| panic!("the machine's lock file {}: {e}", path.display()))
}

/// `flock(2)` `op` on `file`, waiting as long as it takes.
fn flock(file: &File, op: libc::c_int) {
    loop {
        // SAFETY: flock on a descriptor `file` owns for the whole call.
        if unsafe { libc::flock(file.as_raw_fd(), op) } == 0 {
            return;
        }
        let e = std::io::Error::last_os_error();
        assert!(
            e.kind() == std::io::ErrorKind::Interrupted,
            "flock on the machine's lock file: {e}"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;
    use std::time::Duration;

    /// `flock(1)` from util-linux, as another process would take the lock file.
    fn other_process(args: &[&str]) -> std::process::Child {
        let path = std::env::temp_dir().join("gem_testbed_machine.lock");
        Command::new("flock")
            .args(args)
            .arg(&path)
            .args(["sleep", "1"])
            .spawn()
            .expect("flock(1)")
    }

    #[test]
    fn an_exclusive_test_waits_for_a_shared_one_of_another_process_and_two_shared_do_not() {
        let _shared = shared();
        // Another process shares the machine at once...
        let mut sharing = other_process(&["--shared", "--nonblock"]);
        assert!(sharing.wait().expect("flock").success());
        // ...and cannot have it to itself while this test shares it.
        let mut alone = other_process(&["--exclusive", "--wait", "0.2"]);
        assert!(!alone.wait().expect("flock").success());
        drop(_shared);
        let since = Instant::now();
        let _alone = exclusive();
        assert!(since.elapsed() < Duration::from_secs(5));
    }
}
