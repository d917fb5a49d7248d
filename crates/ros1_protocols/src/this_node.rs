//! The process's own node, one per process as rospy's and roscpp's: started once with
//! [`init`], reached from anywhere, ended with `registration::shutdown`.
//!
//! It is a [`crate::runtime::Node`], so every publisher, subscriber and the slave API of a
//! process of this suite runs on our runtime, which no stalled peer can hold up and which
//! sleeps when idle, and every master call goes through [`crate::master_api`]; rosrust
//! contributes its message types only.
//! What a ROS 1 client library does beside the node lives here too: the command line
//! (`__name:=`, `__ns:=`, `__master:=`, `__ip:=`, `__hostname:=`, `_param:=value`,
//! `from:=to`), parameters ([`param`]), SIGINT, `/rosout`, and waiting for a service.

use crate::master_api::{Master, SystemState, Topic};
use crate::runtime::{Config, Node, Publisher, RuntimeError, TypeInfo};
use crate::{Lock, RosError};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The process's node, from [`init`] until [`take`].
static NODE: Mutex<Option<Arc<Node>>> = Mutex::new(None);
/// Its name, kept after it ends (for the last log lines).
static NAME: OnceLock<String> = OnceLock::new();
/// Set by SIGINT.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// Set when the node starts leaving (`registration::shutdown`).
static LEAVING: AtomicBool = AtomicBool::new(false);
/// Whether [`init`] catches SIGINT (see [`leave_sigint_alone`]).
static CATCH_SIGINT: AtomicBool = AtomicBool::new(true);
/// `/rosout`, once the node runs.
static ROSOUT: Mutex<Option<Publisher<Log>>> = Mutex::new(None);

use crate::msgs::rosgraph_msgs::Log;

/// Why [`init`] did not start the node.
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    /// No master answered (a launch may start it a moment later: try again).
    #[error("no ROS master at {uri} ({why})")]
    NoMaster {
        /// The master's URI.
        uri: String,
        /// What the call said.
        why: String,
    },
    /// A `_param:=value` on the command line that is not YAML, or a name ROS refuses: no
    /// master will fix it.
    #[error("{0}")]
    BadArgument(String),
    /// The runtime could not start (a socket or a thread).
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
}

impl InitError {
    /// Whether trying again (a master starting later) can help.
    pub fn is_transient(&self) -> bool {
        matches!(self, InitError::NoMaster { .. })
    }
}

/// The command line as ROS 1 reads it.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct CommandLine {
    /// `__name:=`.
    pub name: Option<String>,
    /// `__ns:=`.
    pub namespace: Option<String>,
    /// `__master:=`.
    pub master: Option<String>,
    /// `__hostname:=` or `__ip:=`.
    pub host: Option<String>,
    /// `_param:=value` (the name without its `_`, the value's text).
    pub params: Vec<(String, String)>,
    /// `from:=to`.
    pub remappings: Vec<String>,
}

impl CommandLine {
    /// Reads the ROS arguments among `args` (others are the program's own).
    pub fn parse(args: impl IntoIterator<Item = String>) -> CommandLine {
        let mut line = CommandLine::default();
        for arg in args {
            let Some((from, to)) = arg.split_once(":=") else {
                continue;
            };
            let to = to.to_owned();
            match from {
                "__name" => line.name = Some(to),
                "__ns" => line.namespace = Some(to),
                "__master" => line.master = Some(to),
                "__ip" | "__hostname" => line.host = Some(to),
                special if special.starts_with("__") => {} // __log and the like
                private if private.starts_with('_') => {
                    line.params.push((private[1..].to_owned(), to));
                }
                _ => line.remappings.push(arg),
            }
        }
        line
    }

    /// The node's full name: `name` (or `__name:=`) in `__ns:=` or `ROS_NAMESPACE`.
    pub fn full_name(&self, name: &str, env_namespace: Option<&str>) -> String {
        let name = self.name.as_deref().unwrap_or(name);
        if name.starts_with('/') {
            return name.to_owned();
        }
        let ns = self
            .namespace
            .as_deref()
            .or(env_namespace)
            .unwrap_or("/")
            .trim_end_matches('/');
        let ns = if ns.starts_with('/') || ns.is_empty() {
            ns.to_owned()
        } else {
            format!("/{ns}")
        };
        format!("{ns}/{name}")
    }
}

/// Starts this process's node as `name`: reads the command line, checks that the master
/// answers, starts the runtime, sets the command line's private parameters, catches
/// SIGINT and advertises `/rosout`. A second call while the node runs changes nothing.
pub fn init(name: &str) -> Result<(), InitError> {
    if NODE.locked().is_some() {
        return Ok(());
    }
    let line = CommandLine::parse(std::env::args().skip(1));
    let full = line.full_name(name, std::env::var("ROS_NAMESPACE").ok().as_deref());
    let mut config = Config::from_env();
    if let Some(m) = &line.master {
        config.master_uri = m.clone();
    }
    if let Some(h) = &line.host {
        config.host = h.clone();
    }
    config.remappings = line.remappings.clone();
    // The master first: without it nothing can register, and a launch may be a moment late.
    let reached = Master::new(&config.master_uri, &full, "").call("getUri", vec![]);
    if let Err(e) = reached {
        return Err(InitError::NoMaster {
            uri: config.master_uri,
            why: e.to_string(),
        });
    }
    let mut values = Vec::new();
    for (key, text) in &line.params {
        let value = yaml_value(text)
            .map_err(|e| InitError::BadArgument(format!("_{key}:={text} is not YAML: {e}")))?;
        values.push((key, value));
    }
    let node = Arc::new(Node::start(&full, config)?);
    for (key, value) in values {
        let key = node
            .resolve(&format!("~{key}"))
            .map_err(|e| InitError::BadArgument(e.to_string()))?;
        Master::new(node.master_uri(), node.name(), node.uri())
            .set_param(&key, value)
            .map_err(|e| InitError::NoMaster {
                uri: node.master_uri().to_owned(),
                why: e.to_string(),
            })?;
    }
    let _ = NAME.set(node.name().to_owned());
    if CATCH_SIGINT.load(Ordering::SeqCst) {
        // A second handler cannot be set: the first stays. The node's loops see the flag
        // at their next wake-up (`crate::clock` waits at most `MAX_NAP`).
        // Calls to the master in progress end at once: a master that does not answer
        // must not hold up the exit.
        let _ = ctrlc::set_handler(|| {
            INTERRUPTED.store(true, Ordering::SeqCst);
            crate::xmlrpc::interrupt_calls();
        });
    }
    let rosout = node.advertise::<Log>("/rosout", 100, false).ok();
    *NODE.locked() = Some(node);
    *ROSOUT.locked() = rosout;
    Ok(())
}

/// Makes [`init`] leave SIGINT's default action in place (a test process, which Ctrl-C
/// must end as usual). Call before [`init`].
pub fn leave_sigint_alone() {
    CATCH_SIGINT.store(false, Ordering::SeqCst);
}

/// [`init`], trying again every 200 ms while no master answers, for at most `within`
/// (`None`: until one does), with `on_wait` told how long it has waited at each try.
pub fn init_waiting(
    name: &str,
    within: Option<Duration>,
    mut on_wait: impl FnMut(&InitError, Duration),
) -> Result<(), InitError> {
    let started = Instant::now();
    loop {
        match init(name) {
            Err(e) if e.is_transient() && !matches!(within, Some(w) if started.elapsed() >= w) => {
                on_wait(&e, started.elapsed());
                std::thread::sleep(Duration::from_millis(200));
            }
            done => return done,
        }
    }
}

/// The node, while it runs.
pub fn get() -> Result<Arc<Node>, RosError> {
    NODE.locked()
        .clone()
        .ok_or_else(|| RosError::new("this process has no ROS node (not started, or ended)"))
}

/// Takes the node out (it ends when the last handle on it goes): the start of
/// `registration::shutdown`.
pub(crate) fn take() -> Option<Arc<Node>> {
    // Out of the lock before it goes: its withdrawal may log, and logging publishes here.
    let rosout = ROSOUT.locked().take();
    drop(rosout);
    NODE.locked().take()
}

/// Whether [`init`] has started the node (it may have ended since).
pub fn is_initialized() -> bool {
    NAME.get().is_some()
}

/// True while the node runs: started, no SIGINT, not asked to shut down through its slave
/// API, not leaving.
pub fn is_ok() -> bool {
    let Some(node) = NODE.locked().clone() else {
        return false;
    };
    !INTERRUPTED.load(Ordering::SeqCst) && node.shutdown_requested().is_none() && !leaving()
}

/// True once the node has begun to leave (nothing of ours registers with the master
/// after that).
pub fn leaving() -> bool {
    LEAVING.load(Ordering::SeqCst)
}

/// Marks the node as leaving; whether it already was.
pub(crate) fn begin_leaving() -> bool {
    LEAVING.swap(true, Ordering::SeqCst)
}

/// The node's full name (empty before [`init`]; kept after the node ends).
pub fn name() -> String {
    NAME.get().cloned().unwrap_or_default()
}

/// The node's slave URI (empty when it does not run).
pub fn uri() -> String {
    NODE.locked()
        .as_ref()
        .map(|n| n.uri().to_owned())
        .unwrap_or_default()
}

/// `name` resolved as this node resolves it (namespace, `~private`, remappings).
pub fn resolve(name: &str) -> Result<String, RosError> {
    let node = get()?;
    node.resolve(name).map_err(|e| RosError::new(e.to_string()))
}

/// Advertises `topic` for `T`, `queue` messages deep per subscriber.
pub fn publish<T: rosrust::Message>(topic: &str, queue: usize) -> Result<Publisher<T>, RosError> {
    advertise(topic, queue, false)
}

/// [`publish`], latched when `latched`.
pub fn advertise<T: rosrust::Message>(
    topic: &str,
    queue: usize,
    latched: bool,
) -> Result<Publisher<T>, RosError> {
    get()?
        .advertise(topic, queue, latched)
        .map_err(|e| RosError::new(e.to_string()))
}

/// Advertises `topic` for a type named at run time (a bag's): `T` is the raw message.
pub fn advertise_as<T: rosrust::Message>(
    topic: &str,
    queue: usize,
    latched: bool,
    info: TypeInfo,
) -> Result<Publisher<T>, RosError> {
    get()?
        .advertise_as(topic, queue, latched, info)
        .map_err(|e| RosError::new(e.to_string()))
}

/// Publishes a log line on `/rosout` (as `rqt_console` and `rosout.log` read it).
pub fn rosout(level: i8, msg: &str, file: &str, line: u32) {
    let Some(node) = NODE.locked().clone() else {
        return;
    };
    let stamp = wall_now();
    let log = Log {
        header: crate::msgs::std_msgs::Header {
            seq: 0,
            stamp,
            frame_id: String::new(),
        },
        level,
        name: node.name().to_owned(),
        msg: msg.to_owned(),
        file: file.to_owned(),
        function: String::new(),
        line,
        topics: node.published_topics(),
    };
    let publisher = ROSOUT.locked().clone();
    if let Some(p) = publisher {
        let _ = p.send(log);
    }
}

/// The wall clock as a ROS time.
pub fn wall_now() -> rosrust::Time {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    rosrust::Time {
        sec: since.as_secs() as u32,
        nsec: since.subsec_nanos(),
    }
}

/// A client of the master, calling as this node (every call bounded in time).
pub fn master() -> Result<Master, RosError> {
    let node = get()?;
    Ok(Master::new(node.master_uri(), node.name(), node.uri()))
}

/// The master's system state: who publishes, subscribes to and serves what.
pub fn state() -> Result<SystemState, RosError> {
    master()?.system_state()
}

/// Every node the master lists as publishing, subscribing to or serving anything, but
/// this one, sorted.
pub fn other_nodes() -> Result<Vec<String>, RosError> {
    let state = state()?;
    let me = name();
    let mut names: Vec<String> = state
        .publishers
        .iter()
        .chain(&state.subscribers)
        .chain(&state.services)
        .flat_map(|t| t.connections.iter().cloned())
        .filter(|n| *n != me)
        .collect();
    names.sort();
    names.dedup();
    Ok(names)
}

/// Every topic the master knows of, with its type.
pub fn topics() -> Result<Vec<Topic>, RosError> {
    master()?.topic_types()
}

/// Waits until the master lists `service` (resolved as this node resolves it), for at
/// most `timeout`; an error naming it otherwise. The master tells nobody of a new
/// service (its API has no such notice, unlike `publisherUpdate` for topics), so this
/// asks it: at once, then after 20 ms, doubling up to 500 ms, and at the deadline.
pub fn wait_for_service(service: &str, timeout: Duration) -> Result<(), RosError> {
    let name = resolve(service)?;
    let deadline = Instant::now() + timeout;
    let mut gap = Duration::from_millis(20);
    loop {
        if master()?.lookup_service(&name).is_ok() {
            return Ok(());
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || !is_ok() {
            return Err(RosError::new(format!(
                "service {name} not advertised within {timeout:?}"
            )));
        }
        std::thread::sleep(gap.min(left));
        gap = (gap * 2).min(Duration::from_millis(500));
    }
}

/// Calls `method` (no arguments beyond the caller id) on the slave API of node `name`
/// and returns the value of a successful answer (`[1, message, value]`).
pub fn slave_call(name: &str, method: &str) -> Result<xml_rpc::Value, RosError> {
    let fail = |what: String| RosError::new(format!("{method} of {name}: {what}"));
    let uri = master()
        .and_then(|m| m.lookup_node(name))
        .map_err(|e| fail(e.to_string()))?;
    crate::xmlrpc::call_slave(&uri, method, &self::name()).map_err(|e| fail(e.to_string()))
}

/// The process id of the node called `name` (what it answers to the slave API's
/// `getPid`, as `rosnode info` shows it).
pub fn pid_of(name: &str) -> Result<u32, RosError> {
    match slave_call(name, "getPid")? {
        xml_rpc::Value::Int(pid) if pid > 0 => Ok(pid as u32),
        other => Err(RosError::new(format!("getPid of {name}: {other:?}"))),
    }
}

/// The topics node `name` has at least one established inbound (subscriber) connection
/// on, from the slave API's `getBusInfo`: a subscription is only useful once it is in this
/// set. roscpp lists a publisher link as soon as it knows of it and flags whether it is
/// connected yet, so the flag is checked too (a recorder counted "subscribed" by the entry
/// alone missed the first message now and then).
pub fn inbound_topics(name: &str) -> Result<std::collections::BTreeSet<String>, RosError> {
    Ok(connected_links(name, "i")?
        .into_iter()
        .map(|(topic, _)| topic)
        .collect())
}

/// The connected links node `name` lists in its slave API's `getBusInfo` in `direction`
/// (`"i"` inbound, `"o"` outbound): each as (topic, the node or URI at the other end). A
/// publisher of ours lists a subscriber once messages go to it.
pub fn connected_links(
    name: &str,
    direction: &str,
) -> Result<std::collections::BTreeSet<(String, String)>, RosError> {
    let xml_rpc::Value::Array(connections) = slave_call(name, "getBusInfo")? else {
        return Err(RosError::new(format!("getBusInfo of {name}: not a list")));
    };
    // Each connection: [id, destination, direction, transport, topic, connected, ...].
    Ok(connections
        .into_iter()
        .filter_map(|c| match c {
            xml_rpc::Value::Array(f) => match (f.get(1), f.get(2), f.get(4), f.get(5)) {
                (
                    Some(xml_rpc::Value::String(other)),
                    Some(xml_rpc::Value::String(d)),
                    Some(xml_rpc::Value::String(t)),
                    connected,
                ) if d == direction && crate::xmlrpc::is_true(connected) => {
                    Some((t.clone(), other.clone()))
                }
                _ => None,
            },
            _ => None,
        })
        .collect())
}

/// A parameter on the master, named as this node resolves it.
pub struct Param {
    key: String,
}

/// The parameter `name` (`~private`, relative or absolute); `None` when the name does not
/// resolve or the node does not run.
pub fn param(name: &str) -> Option<Param> {
    Some(Param {
        key: resolve(name).ok()?,
    })
}

impl Param {
    /// The resolved key.
    pub fn key(&self) -> &str {
        &self.key
    }

    fn fail(&self, what: &str, e: impl std::fmt::Display) -> RosError {
        RosError::new(format!("{what} {}: {e}", self.key))
    }

    /// The value, as `T`; an error when it is not set or not a `T`.
    pub fn get<T: serde::de::DeserializeOwned>(&self) -> Result<T, RosError> {
        let value = self
            .get_raw()?
            .ok_or_else(|| self.fail("getParam", "not set"))?;
        T::deserialize(value).map_err(|e| self.fail("getParam", e))
    }

    /// The value as the master holds it; `None` when it is not set (one `getParam`).
    pub fn get_raw(&self) -> Result<Option<xml_rpc::Value>, RosError> {
        master()?.get_param(&self.key)
    }

    /// Sets it.
    pub fn set<T: serde::Serialize>(&self, value: &T) -> Result<(), RosError> {
        // A one-element tuple is a one-element parameter list: the value itself.
        let value = xml_rpc::into_params(&(value,))
            .ok()
            .and_then(|mut p| p.pop())
            .ok_or_else(|| self.fail("setParam", "not an XML-RPC value"))?;
        self.set_raw(value)
    }

    /// Sets it from an XML-RPC value.
    pub fn set_raw(&self, value: xml_rpc::Value) -> Result<(), RosError> {
        master()?.set_param(&self.key, value)
    }

    /// Whether the master has it.
    pub fn exists(&self) -> Result<bool, RosError> {
        master()?.has_param(&self.key)
    }

    /// Deletes it.
    pub fn delete(&self) -> Result<(), RosError> {
        master()?.delete_param(&self.key)
    }
}

/// Every parameter name the master holds.
pub fn parameters() -> Result<Vec<String>, RosError> {
    master()?.param_names()
}

/// A command-line value (`_rate:=20`, `_name:=[1, 2]`) as XML-RPC, read as YAML the way
/// ROS 1 reads it.
pub fn yaml_value(text: &str) -> Result<xml_rpc::Value, String> {
    let yaml: serde_yaml::Value = serde_yaml::from_str(text).map_err(|e| e.to_string())?;
    xmlrpc_of(yaml)
}

fn xmlrpc_of(yaml: serde_yaml::Value) -> Result<xml_rpc::Value, String> {
    use serde_yaml::Value as Y;
    use xml_rpc::Value as X;
    Ok(match yaml {
        Y::Null => X::String(String::new()),
        Y::Bool(b) => X::Bool(b),
        Y::Number(n) => match n.as_i64().map(i32::try_from) {
            Some(Ok(i)) => X::Int(i),
            _ => X::Double(n.as_f64().ok_or("a number out of range")?),
        },
        Y::String(s) => X::String(s),
        Y::Sequence(items) => X::Array(items.into_iter().map(xmlrpc_of).collect::<Result<_, _>>()?),
        Y::Mapping(map) => X::Struct(
            map.into_iter()
                .map(|(k, v)| match k {
                    Y::String(k) => Ok((k, xmlrpc_of(v)?)),
                    other => Err(format!("a mapping key that is not a string: {other:?}")),
                })
                .collect::<Result<_, _>>()?,
        ),
        Y::Tagged(t) => xmlrpc_of(t.value)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_command_line_reads_as_ros_reads_it() {
        let line = CommandLine::parse(args(&[
            "--flag",
            "__name:=sm",
            "__ns:=/car",
            "__log:=/tmp/x.log",
            "__master:=http://m:11311/",
            "__ip:=10.0.0.2",
            "_rate:=20",
            "estop:=/hw/estop",
        ]));
        assert_eq!(line.name.as_deref(), Some("sm"));
        assert_eq!(line.namespace.as_deref(), Some("/car"));
        assert_eq!(line.master.as_deref(), Some("http://m:11311/"));
        assert_eq!(line.host.as_deref(), Some("10.0.0.2"));
        assert_eq!(line.params, [("rate".to_owned(), "20".to_owned())]);
        assert_eq!(line.remappings, ["estop:=/hw/estop"]);
        assert_eq!(line.full_name("state_manager", Some("/other")), "/car/sm");
    }

    #[test]
    fn the_namespace_comes_from_the_command_line_or_the_environment() {
        let plain = CommandLine::default();
        assert_eq!(plain.full_name("sm", None), "/sm");
        assert_eq!(plain.full_name("sm", Some("car")), "/car/sm");
        assert_eq!(plain.full_name("sm", Some("/car/")), "/car/sm");
        assert_eq!(plain.full_name("/abs", Some("/car")), "/abs");
    }

    #[test]
    fn command_line_values_are_yaml() {
        use xml_rpc::Value as X;
        assert_eq!(yaml_value("20").unwrap(), X::Int(20));
        assert_eq!(yaml_value("2.5").unwrap(), X::Double(2.5));
        assert_eq!(yaml_value("true").unwrap(), X::Bool(true));
        assert_eq!(yaml_value("abc").unwrap(), X::String("abc".into()));
        assert_eq!(yaml_value("1e10").unwrap(), X::Double(1e10));
        assert_eq!(
            yaml_value("[1, a]").unwrap(),
            X::Array(vec![X::Int(1), X::String("a".into())])
        );
        assert!(yaml_value("[1, 2").is_err());
    }
}
