//! Node start-up and shutdown.
//!
//! `rosrust::init` panics when no master answers; a robot's launch order is not that
//! tidy, so [`start`] waits (with a log line every few seconds) until the master is up.
//! Until rosrust is initialised SIGINT keeps its default action, so Ctrl-C still ends a
//! node that is waiting.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
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

/// How long a call to another node's slave API may take. The XML-RPC client has no
/// timeouts of its own, and a peer that accepted the connection but never answers (one
/// starved or stopped in a debugger) would hold the caller forever.
pub const SLAVE_CALL_WITHIN: Duration = Duration::from_secs(5);

/// Calls `method` with `params` at `uri` (an XML-RPC server: a node's slave API) and
/// returns its answer (the elements of ROS's `[code, message, value]`), or an error after [`SLAVE_CALL_WITHIN`]. The call runs on a thread
/// of its own; one that never returns is left behind, blocked on its socket, and costs a
/// thread, not the caller.
pub fn xmlrpc_call(
    uri: &str,
    method: &str,
    params: Vec<xml_rpc::Value>,
) -> Result<Vec<xml_rpc::Value>, RosError> {
    let url = xml_rpc::Url::parse(uri).map_err(|e| RosError(format!("{uri}: {e}")))?;
    let (tx, rx) = std::sync::mpsc::channel();
    let method_owned = method.to_owned();
    std::thread::Builder::new()
        .name("xmlrpc".into())
        .spawn(move || {
            let answer = xml_rpc::call_value(&url, method_owned, params)
                .map_err(|e| e.to_string())
                .and_then(|r| r.map_err(|fault| format!("{fault:?}")));
            let _ = tx.send(answer);
        })
        .map_err(|e| RosError(format!("{method} at {uri}: cannot start a thread: {e}")))?;
    let answer = match rx.recv_timeout(SLAVE_CALL_WITHIN) {
        Ok(answer) => answer.map_err(|e| RosError(format!("{method} at {uri}: {e}")))?,
        Err(_) => {
            return Err(RosError(format!(
                "{method} at {uri}: no answer within {SLAVE_CALL_WITHIN:?}"
            )))
        }
    };
    // ROS answers `[code, message, value]`, which arrives as one array parameter.
    Ok(match <[xml_rpc::Value; 1]>::try_from(answer) {
        Ok([xml_rpc::Value::Array(a)]) => a,
        Ok([other]) => vec![other],
        Err(a) => a,
    })
}

/// Calls `method` (no arguments beyond the caller id) on the slave API at `uri` and
/// returns the value of a successful answer (`[1, message, value]`).
pub fn call_slave(uri: &str, method: &str) -> Result<xml_rpc::Value, RosError> {
    let answer = xmlrpc_call(uri, method, vec![xml_rpc::Value::String(rosrust::name())])?;
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

/// Set when the node starts leaving: from then on nothing of ours registers with the
/// master again (the master watch, direct subscriptions' discovery rounds).
static LEAVING: AtomicBool = AtomicBool::new(false);

/// True once [`shutdown`] has begun.
pub fn leaving() -> bool {
    LEAVING.load(Ordering::SeqCst)
}

/// True while the node runs: initialised, not shut down by a signal or `rosnode kill`, and
/// not leaving.
pub fn running() -> bool {
    rosrust::is_initialized() && rosrust::is_ok() && !leaving()
}

/// Registration calls to the master in progress (see [`registering`]).
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);

/// A registration call to the master in progress; dropping it ends it.
pub struct Registering(());

impl Drop for Registering {
    fn drop(&mut self) {
        IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Announces a registration call about to be made by a thread of ours that runs beside the
/// node (a discovery round, the master watch); `None` when the node is ending and the call
/// must not be made. [`shutdown`] waits for the calls announced before it began, so no
/// registration lands after the node's withdrawal. (Counted before the check: a call
/// either sees the node leaving or is seen by it.)
pub fn registering() -> Option<Registering> {
    IN_FLIGHT.fetch_add(1, Ordering::SeqCst);
    let call = Registering(());
    running().then_some(call)
}

/// How long [`shutdown`] waits for the master to take the node's unregistrations: a
/// master out of reach must not hold up the exit (roscpp gives up the same way).
pub const UNREGISTER_WITHIN: Duration = Duration::from_millis(500);

/// Ends the node: stops rosrust, then unregisters from the master every publication,
/// subscription and service the master still lists for this node. Call before `main`
/// returns, on every way out (a signal, `rosnode kill`, a start-up error).
///
/// Unregistering relies on nothing being dropped: rosrust's singleton never is, and a
/// publisher or a subscription held by a thread that is still running when `main` returns
/// would otherwise stay listed, misleading `rosnode list` and every subscriber that tries
/// to connect to it. So the master is asked what it holds under this node's name, and
/// each of those entries is withdrawn, within [`UNREGISTER_WITHIN`].
pub fn shutdown() {
    if !rosrust::is_initialized() {
        return;
    }
    LEAVING.store(true, Ordering::SeqCst);
    rosrust::shutdown();
    let (tx, rx) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("unregister".into())
        .spawn(move || {
            // The registrations already on their way finish first (bounded by the wait
            // below, like everything here).
            while IN_FLIGHT.load(Ordering::SeqCst) > 0 {
                std::thread::sleep(Duration::from_millis(2));
            }
            let _ = tx.send(unregister_all());
        });
    if spawned.is_err() {
        return;
    }
    match rx.recv_timeout(UNREGISTER_WITHIN) {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => eprintln!("[{}] leaving: {e}", rosrust::name()),
        Err(_) => eprintln!(
            "[{}] leaving: the master at {} did not take the unregistrations within {:?}",
            rosrust::name(),
            master_uri(),
            UNREGISTER_WITHIN
        ),
    }
}

/// What the master lists under one node: the topics it publishes and subscribes to and
/// the services it provides.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Registrations {
    /// Topics published.
    pub publications: Vec<String>,
    /// Topics subscribed to.
    pub subscriptions: Vec<String>,
    /// Services provided.
    pub services: Vec<String>,
}

impl Registrations {
    /// The entries of `node` in a master's system state (`getSystemState`: for
    /// publishers, subscribers and services, each name with the nodes listed for it).
    pub fn of(
        node: &str,
        publishers: &[(String, Vec<String>)],
        subscribers: &[(String, Vec<String>)],
        services: &[(String, Vec<String>)],
    ) -> Registrations {
        let mine = |list: &[(String, Vec<String>)]| {
            list.iter()
                .filter(|(_, nodes)| nodes.iter().any(|n| n == node))
                .map(|(name, _)| name.clone())
                .collect()
        };
        Registrations {
            publications: mine(publishers),
            subscriptions: mine(subscribers),
            services: mine(services),
        }
    }

    /// Nothing listed.
    pub fn is_empty(&self) -> bool {
        self.publications.is_empty() && self.subscriptions.is_empty() && self.services.is_empty()
    }
}

/// This node's entries as the master lists them now.
pub fn registrations() -> Result<Registrations, RosError> {
    let master = crate::protocols::direct::master()?;
    let state: rosrust::api::SystemState = master
        .get_system_state()
        .map_err(|e| RosError(format!("getSystemState: {e}")))?
        .into();
    let [publishers, subscribers, services] = [state.publishers, state.subscribers, state.services]
        .map(|list| {
            list.into_iter()
                .map(|t| (t.name, t.connections))
                .collect::<Vec<_>>()
        });
    Ok(Registrations::of(
        &rosrust::name(),
        &publishers,
        &subscribers,
        &services,
    ))
}

/// Withdraws every entry the master lists for this node; returns how many.
fn unregister_all() -> Result<usize, RosError> {
    let master = crate::protocols::direct::master()?;
    // rosrust subscribes every node to the whole parameter tree ("/") the first time it
    // reads a parameter, and never withdraws it: the master would go on sending every
    // later parameter change to this node's dead slave, one refused connection (and a
    // logged traceback) each, on the same few threads that carry `publisherUpdate`. A
    // suite restarting its nodes would slow every other node's linking more each time.
    // `getSystemState` does not list parameter subscriptions, so this one is named; its
    // failure is reported after the rest is withdrawn, which it must not hold up.
    let parameters = master.unsubscribe_param("/");
    let mine = registrations()?;
    // Services are withdrawn by name and URI, and the master gives the URI of whichever
    // node holds the name now: when another node has taken this node's name (the master
    // lists it at another slave URI), only the services this process serves are its own.
    let named_here = master
        .lookup_node(&rosrust::name())
        .is_ok_and(|uri| uri == rosrust::uri());
    fn fail(what: &str, name: &str, e: impl std::fmt::Display) -> RosError {
        RosError(format!("{what} {name}: {e}"))
    }
    for topic in &mine.publications {
        master
            .unregister_publisher(topic)
            .map_err(|e| fail("unregisterPublisher", topic, e))?;
    }
    for topic in &mine.subscriptions {
        master
            .unregister_subscriber(topic)
            .map_err(|e| fail("unregisterSubscriber", topic, e))?;
    }
    for service in &mine.services {
        // The master withdraws a service only for the URI it was registered with.
        let api = master
            .lookup_service(service)
            .map_err(|e| fail("lookupService", service, e))?;
        if !named_here && !crate::protocols::service::serves(&api) {
            continue;
        }
        master
            .unregister_service(service, &api)
            .map_err(|e| fail("unregisterService", service, e))?;
    }
    parameters.map_err(|e| RosError(format!("unsubscribeParam /: {e}")))?;
    Ok(mine.publications.len() + mine.subscriptions.len() + mine.services.len())
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

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, nodes: &[&str]) -> (String, Vec<String>) {
        (name.into(), nodes.iter().map(|n| n.to_string()).collect())
    }

    #[test]
    fn a_nodes_registrations_are_the_entries_that_name_it() {
        let publishers = [
            entry("/task_planner_status", &["/task_planner"]),
            entry("/rosout", &["/task_planner", "/state_manager"]),
            entry("/system_state", &["/state_manager"]),
        ];
        let subscribers = [
            entry("/system_state", &["/task_planner", "/controller"]),
            // A node whose name starts like ours is another node.
            entry("/clock", &["/task_planner_2"]),
        ];
        let services = [entry("/serve_waypoints", &["/task_planner"])];
        let mine = Registrations::of("/task_planner", &publishers, &subscribers, &services);
        assert_eq!(mine.publications, ["/task_planner_status", "/rosout"]);
        assert_eq!(mine.subscriptions, ["/system_state"]);
        assert_eq!(mine.services, ["/serve_waypoints"]);
        assert!(!mine.is_empty());
        assert!(Registrations::of("/nobody", &publishers, &subscribers, &services).is_empty());
    }
}
