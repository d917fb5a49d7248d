//! Node start-up and shutdown.
//!
//! `rosrust::init` panics when no master answers; a robot's launch order is not that
//! tidy, so [`start`] waits (with a log line every few seconds) until the master is up.
//! Until rosrust is initialised SIGINT keeps its default action, so Ctrl-C still ends a
//! node that is waiting.

use ros1_protocols::xmlrpc::master_uri;
use ros1_protocols::RosError;
use std::time::{Duration, Instant};

/// Ends the node: every way out of a node's `main` calls this (it withdraws the node's
/// registrations from the master; see [`ros1_protocols::registration::shutdown`]).
pub use ros1_protocols::registration::shutdown;

/// Initialises rosrust as `name`, waiting for the master, and installs the `/rosout`
/// logging bridge.
pub fn start(name: &str) {
    crate::log::install();
    // Before rosrust starts its threads, so they inherit the policy.
    let scheduling = crate::realtime::from_env();
    let started = Instant::now();
    let mut next_report = Duration::ZERO;
    while let Err(e) = rosrust::try_init(name) {
        if e.to_string().contains("YAML") {
            // A `_param:=value` that rosrust cannot parse: no master will fix that.
            eprintln!("[{name}] a command-line parameter is not valid YAML: {e}");
            std::process::exit(2);
        }
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
    nodelay();
    ros1_protocols::master::watch();
    match scheduling {
        Ok(crate::realtime::Outcome::Normal) => {}
        Ok(crate::realtime::Outcome::Fifo(p)) => tracing::info!("running at SCHED_FIFO {p}"),
        Err(e) => tracing::warn!("{e}; running at normal priority"),
    }
}

/// Keeps this process's TCPROS links tuned (see [`ros1_protocols::net::LinkOptions::NODES`]);
/// `GEM_TCP_NODELAY=0` in the environment leaves Nagle's algorithm on (for A/B
/// measurements).
fn nodelay() {
    let mut options = ros1_protocols::net::LinkOptions::NODES;
    if std::env::var("GEM_TCP_NODELAY").is_ok_and(|v| v == "0") {
        tracing::info!("GEM_TCP_NODELAY=0: Nagle's algorithm stays on");
        options.nodelay = false;
    }
    ros1_protocols::net::keep_tuned(options, LINK_SWEEP);
}

/// How often new links are swept (peers connect while a node runs).
const LINK_SWEEP: Duration = Duration::from_millis(500);

/// For command-line tools: initialises rosrust as `name` (no `/rosout` bridge, so log
/// lines do not interleave with the tool's output) or gives up after `timeout` with an
/// error naming the master it tried.
pub fn start_within(name: &str, timeout: Duration) -> Result<(), RosError> {
    let started = Instant::now();
    loop {
        match rosrust::try_init(name) {
            Ok(()) => {
                nodelay();
                return Ok(());
            }
            Err(e) if started.elapsed() >= timeout => {
                return Err(RosError::new(format!(
                    "no ROS master at {} after {:.0} s ({e}); is the suite running?",
                    master_uri(),
                    timeout.as_secs_f64()
                )))
            }
            Err(_) => std::thread::sleep(Duration::from_millis(200)),
        }
    }
}
