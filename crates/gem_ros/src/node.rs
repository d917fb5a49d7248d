//! Node start-up and shutdown.
//!
//! A node of this suite runs on our own runtime ([`ros1_protocols::this_node`]). Without a
//! master it cannot register anything; a robot's launch order is not that tidy, so
//! [`start`] waits (with a log line every few seconds) until the master is up. Until the
//! node runs SIGINT keeps its default action, so Ctrl-C still ends a node that is waiting.

use ros1_protocols::this_node::{self, InitError};
use ros1_protocols::xmlrpc::master_uri;
use ros1_protocols::RosError;
use std::time::Duration;

/// Ends the node: every way out of a node's `main` calls this (it withdraws the node's
/// registrations from the master; see [`ros1_protocols::registration::shutdown`]).
pub use ros1_protocols::registration::shutdown;

/// Starts this process's node as `name`, waiting for the master, and installs the
/// `/rosout` logging bridge.
pub fn start(name: &str) {
    map_large_buffers();
    crate::log::install();
    // Before the runtime serves anyone: no peer is heard before the trust file is.
    if let Err(e) = install_trust() {
        eprintln!("[{name}] cannot start: {e}");
        std::process::exit(2);
    }
    // Before the runtime starts its threads, so they inherit the policy.
    let scheduling = crate::realtime::from_env();
    let mut next_report = Duration::ZERO;
    let started = this_node::init_waiting(name, None, |e, waited| {
        if waited >= next_report {
            eprintln!(
                "[{name}] waiting for the ROS master at {} ({e}); waited {:.0} s",
                master_uri(),
                waited.as_secs_f64()
            );
            next_report = waited + Duration::from_secs(5);
        }
    });
    if let Err(e) = started {
        // A `_param:=value` that is not YAML, or no socket: no master will fix that.
        eprintln!("[{name}] cannot start: {e}");
        std::process::exit(2);
    }
    ros1_protocols::master::watch();
    match scheduling {
        Ok(crate::realtime::Outcome::Normal) => {}
        Ok(crate::realtime::Outcome::Fifo(p)) => tracing::info!("running at SCHED_FIFO {p}"),
        Err(e) => tracing::warn!("{e}; running at normal priority"),
    }
}

/// The environment variable naming the trust file every node of the suite reads at
/// start-up (docs/security.md); unset or empty: no trust file, every host trusted.
pub const TRUST_FILE_ENV: &str = "GEM_TRUST_FILE";

/// Reads the trust file [`TRUST_FILE_ENV`] names, if any, and makes the runtime enforce it.
/// From the environment, not a parameter: any host that reaches the master can change a
/// parameter, and the launch on the car computer alone sets the environment.
fn install_trust() -> Result<(), String> {
    let Some(path) = std::env::var_os(TRUST_FILE_ENV).filter(|p| !p.is_empty()) else {
        return Ok(());
    };
    let policy = ros1_protocols::trust::Policy::load(std::path::Path::new(&path))
        .map_err(|e| format!("{TRUST_FILE_ENV}: {e}"))?;
    // `install` logs the file and its rules.
    ros1_protocols::trust::install(policy);
    Ok(())
}

/// How the node reports the trust file's refusals on `/diagnostics`, when a trust file is
/// in force. A node with a status of its own (`own_status`) names them in it
/// (`gem_nodes::interface::publish_status`). Any other node publishes a latched status
/// `<node>: trust file` (WARN, naming the address, the caller id and what it tried, with
/// every refusal so far) the first time the file refuses a kind of act; its publisher is
/// made then, so a node the file never had to refuse for publishes nothing more.
pub fn report_refusals(own_status: bool) {
    if ros1_protocols::trust::installed().is_none() || own_status {
        return;
    }
    // The refusing thread (a link's, a caller's) only hands the refusal over: advertising
    // asks the master, which must not hold it up.
    let (tx, rx) = std::sync::mpsc::channel::<ros1_protocols::trust::Refusal>();
    let spawned = std::thread::Builder::new()
        .name("trust_report".into())
        .spawn(move || {
            let mut out = None;
            for first in rx {
                report_refusal(&mut out, &first);
            }
        });
    if let Err(e) = spawned {
        tracing::error!("cannot start the trust file's reporter: {e}");
        return;
    }
    let tx = std::sync::Mutex::new(tx);
    ros1_protocols::trust::on_first_refusal(move |first| {
        let _ = tx.lock().map(|tx| tx.send(first.clone()));
    });
}

/// Publishes the status for the refusal `first`, advertising its publisher the first
/// time (and again after a failure).
fn report_refusal(
    out: &mut Option<
        ros1_protocols::runtime::Publisher<gem_msgs::diagnostic_msgs::DiagnosticArray>,
    >,
    first: &ros1_protocols::trust::Refusal,
) {
    use gem_msgs::diagnostic_msgs::{DiagnosticArray, DiagnosticStatus, KeyValue};
    if out.is_none() {
        match this_node::advertise::<DiagnosticArray>(gem_core::names::DIAGNOSTICS, 10, true) {
            Ok(p) => *out = Some(p),
            Err(e) => {
                tracing::error!("cannot advertise /diagnostics for the trust file's refusals: {e}");
                return;
            }
        }
    }
    let Some(out) = out else { return };
    let status = DiagnosticStatus {
        level: DiagnosticStatus::WARN,
        name: format!("{}: trust file", this_node::name()),
        message: format!("refused {first}"),
        hardware_id: String::new(),
        values: vec![KeyValue {
            key: "refused (trust file)".into(),
            value: ros1_protocols::trust::refusal_summary().unwrap_or_default(),
        }],
    };
    let msg = DiagnosticArray {
        header: gem_msgs::std_msgs::Header {
            seq: 0,
            stamp: crate::time::to_ros(crate::time::now()),
            frame_id: String::new(),
        },
        status: vec![status],
    };
    if let Err(e) = out.send(msg) {
        tracing::error!("cannot publish the trust file's refusal on /diagnostics: {e}");
    }
}

/// For command-line tools: starts this process's node as `name` (no `/rosout` bridge, so
/// log lines do not interleave with the tool's output) or gives up after `timeout` with an
/// error naming the master it tried.
pub fn start_within(name: &str, timeout: Duration) -> Result<(), RosError> {
    this_node::init_waiting(name, Some(timeout), |_, _| {}).map_err(|e| match e {
        InitError::NoMaster { .. } => RosError::new(format!(
            "{e} after {:.0} s; is the suite running?",
            timeout.as_secs_f64()
        )),
        other => RosError::new(other.to_string()),
    })?;
    Ok(())
}

/// Buffers of this size or more are mapped from the system on their own and unmapped when
/// freed. A route (about 100 KB of waypoints for the GEM track) is built, encoded, sent and
/// dropped again with every goal, on whichever thread handled it; below glibc's default
/// threshold those buffers came from the threads' arenas, which keep what is freed
/// resident, and a node serving goals all day crept up by a few hundred KB a lap.
pub const MAP_BUFFERS_FROM: usize = 64 << 10;

/// Makes buffers of [`MAP_BUFFERS_FROM`] or more come straight from the system (glibc's
/// `M_MMAP_THRESHOLD`; fixed, not raised by glibc as large buffers are freed). Every node
/// calls it at start-up (in [`start`]).
fn map_large_buffers() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes the allocator's policy for later allocations.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MAP_BUFFERS_FROM as libc::c_int);
    }
}
