//! Node start-up and shutdown.
//!
//! `rosrust::init` panics when no master answers; a robot's launch order is not that
//! tidy, so [`start`] waits (with a log line every few seconds) until the master is up.
//! Until rosrust is initialised SIGINT keeps its default action, so Ctrl-C still ends a
//! node that is waiting.

use std::time::{Duration, Instant};

/// Initialises rosrust as `name`, waiting for the master, and installs the `/rosout`
/// logging bridge.
pub fn start(name: &str) {
    crate::log::install();
    let started = Instant::now();
    let mut next_report = Duration::ZERO;
    while let Err(e) = rosrust::try_init(name) {
        let waited = started.elapsed();
        if waited >= next_report {
            eprintln!(
                "[{name}] waiting for the ROS master at {} ({e}); waited {:.0} s",
                master_uri(),
                waited.as_secs_f64()
            );
            next_report = waited + Duration::from_secs(5);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// For command-line tools: initialises rosrust as `name` (no `/rosout` bridge, so log
/// lines do not interleave with the tool's output) or gives up after `timeout` with an
/// error naming the master it tried.
pub fn start_within(name: &str, timeout: Duration) -> Result<(), RosError> {
    let started = Instant::now();
    loop {
        match rosrust::try_init(name) {
            Ok(()) => return Ok(()),
            Err(e) if started.elapsed() >= timeout => {
                return Err(RosError(format!(
                    "no ROS master at {} after {:.0} s ({e}); is the suite running?",
                    master_uri(),
                    timeout.as_secs_f64()
                )))
            }
            Err(_) => std::thread::sleep(Duration::from_millis(200)),
        }
    }
}

/// Unregisters the node's publishers, subscribers and services from the master.
/// Call before `main` returns: rosrust's singleton is never dropped.
pub fn shutdown() {
    if rosrust::is_initialized() {
        rosrust::shutdown();
    }
}

fn master_uri() -> String {
    std::env::var("ROS_MASTER_URI").unwrap_or_else(|_| "http://localhost:11311/".into())
}

/// A rosrust error as a plain, thread-safe error (rosrust's own is not `Sync`, so it cannot
/// travel through `anyhow`).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct RosError(String);

impl From<rosrust::error::Error> for RosError {
    fn from(e: rosrust::error::Error) -> Self {
        RosError(e.to_string())
    }
}
