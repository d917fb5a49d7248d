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
    crate::master::watch();
    match scheduling {
        Ok(crate::realtime::Outcome::Normal) => {}
        Ok(crate::realtime::Outcome::Fifo(p)) => tracing::info!("running at SCHED_FIFO {p}"),
        Err(e) => tracing::warn!("{e}; running at normal priority"),
    }
}

/// Keeps this process's TCPROS links tuned (see [`crate::net::LinkOptions::NODES`]);
/// `GEM_TCP_NODELAY=0` in the environment leaves Nagle's algorithm on (for A/B
/// measurements).
fn nodelay() {
    let mut options = crate::net::LinkOptions::NODES;
    if std::env::var("GEM_TCP_NODELAY").is_ok_and(|v| v == "0") {
        tracing::info!("GEM_TCP_NODELAY=0: Nagle's algorithm stays on");
        options.nodelay = false;
    }
    crate::net::keep_tuned(options, LINK_SWEEP);
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

/// Calls `method` (no arguments beyond the caller id) on the slave API of node `name`
/// and returns the value of a successful answer (`[1, message, value]`).
pub fn slave_call(name: &str, method: &str) -> Result<xml_rpc::Value, RosError> {
    let fail = |what: String| RosError(format!("{method} of {name}: {what}"));
    let master = rosrust::api::Master::new(&master_uri(), &rosrust::name(), &rosrust::uri())
        .map_err(|e| fail(e.to_string()))?;
    let uri = master
        .lookup_node(name)
        .map_err(|e| fail(format!("lookupNode: {e}")))?;
    call_slave(&uri, method).map_err(|e| fail(e.0))
}

/// Calls `method` (no arguments beyond the caller id) on the slave API at `uri` and
/// returns the value of a successful answer (`[1, message, value]`).
pub fn call_slave(uri: &str, method: &str) -> Result<xml_rpc::Value, RosError> {
    let url = xml_rpc::Url::parse(uri).map_err(|e| RosError(format!("{uri}: {e}")))?;
    let answer = xml_rpc::call_value(&url, method, vec![xml_rpc::Value::String(rosrust::name())])
        .map_err(|e| RosError(format!("{uri}: {e}")))?
        .map_err(|e| RosError(format!("{uri}: {e:?}")))?;
    // The three-element answer arrives as one array parameter.
    let answer = match <[xml_rpc::Value; 1]>::try_from(answer) {
        Ok([xml_rpc::Value::Array(a)]) => a,
        Ok([other]) => vec![other],
        Err(a) => a,
    };
    match <[xml_rpc::Value; 3]>::try_from(answer) {
        Ok([xml_rpc::Value::Int(1), _, value]) => Ok(value),
        other => Err(RosError(format!("{method}: unexpected answer {other:?}"))),
    }
}

/// The process id of the node called `name` (what it answers to the slave API's
/// `getPid`, as `rosnode info` shows it).
pub fn pid_of(name: &str) -> Result<u32, RosError> {
    match slave_call(name, "getPid")? {
        xml_rpc::Value::Int(pid) if pid > 0 => Ok(pid as u32),
        other => Err(RosError(format!("getPid of {name}: {other:?}"))),
    }
}

/// The topics node `name` has at least one established inbound (subscriber) connection
/// on, from the slave API's `getBusInfo`: a subscription is only useful once it is in this
/// set. roscpp lists a publisher link as soon as it knows of it and flags whether it is
/// connected yet, so the flag is checked too (a recorder counted "subscribed" by the entry
/// alone missed the first message now and then).
pub fn inbound_topics(name: &str) -> Result<std::collections::BTreeSet<String>, RosError> {
    let xml_rpc::Value::Array(connections) = slave_call(name, "getBusInfo")? else {
        return Err(RosError(format!("getBusInfo of {name}: not a list")));
    };
    // Each connection: [id, destination, direction, transport, topic, connected, ...].
    Ok(connections
        .into_iter()
        .filter_map(|c| match c {
            xml_rpc::Value::Array(f) => match (f.get(2), f.get(4), f.get(5)) {
                (Some(xml_rpc::Value::String(d)), Some(xml_rpc::Value::String(t)), connected)
                    if d == "i" && is_true(connected) =>
                {
                    Some(t.clone())
                }
                _ => None,
            },
            _ => None,
        })
        .collect())
}

/// A connected flag as rospy (bool) or roscpp (bool or int) sends it; absent counts as
/// connected (older implementations list established connections only).
fn is_true(v: Option<&xml_rpc::Value>) -> bool {
    match v {
        None => true,
        Some(xml_rpc::Value::Bool(b)) => *b,
        Some(xml_rpc::Value::Int(i)) => *i != 0,
        Some(_) => false,
    }
}

/// Unregisters the node's publishers, subscribers and services from the master.
/// Call before `main` returns: rosrust's singleton is never dropped.
pub fn shutdown() {
    if rosrust::is_initialized() {
        rosrust::shutdown();
    }
}

/// The master's URI: `ROS_MASTER_URI`, or a local master's default.
pub fn master_uri() -> String {
    std::env::var("ROS_MASTER_URI").unwrap_or_else(|_| "http://localhost:11311/".into())
}

/// A rosrust error as a plain, thread-safe error (rosrust's own is not `Sync`, so it cannot
/// travel through `anyhow`).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct RosError(String);

impl RosError {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        RosError(message.into())
    }
}

impl From<rosrust::error::Error> for RosError {
    fn from(e: rosrust::error::Error) -> Self {
        RosError(e.to_string())
    }
}
