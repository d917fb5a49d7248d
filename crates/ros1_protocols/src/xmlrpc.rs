//! XML-RPC calls to the master and to other nodes' slave APIs, each bounded in time.
//!
//! The `xml_rpc` crate has no timeouts: a peer that accepts the connection and never
//! answers would hold the caller forever. Every call here runs with a deadline (the
//! master's in [`crate::master_api`], [`SLAVE_CALL_WITHIN`] for a node's slave API) and
//! ends early when the process is interrupted ([`interrupt_calls`]).

use crate::{Lock, RosError};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// How long a call to another node's slave API may take. The XML-RPC client has no
/// timeouts of its own, and a peer that accepted the connection but never answers (one
/// starved or stopped in a debugger) would hold the caller forever.
pub const SLAVE_CALL_WITHIN: Duration = Duration::from_secs(5);

/// The code of a successful ROS answer (`[1, message, value]`).
pub const ROS_SUCCESS: i32 = 1;

/// Calls that are waiting for an answer wait on this: a generation count, moved on by
/// every answer and by [`interrupt_calls`], and the condition they sleep on.
static WAITING: (Mutex<u64>, Condvar) = (Mutex::new(0), Condvar::new());
/// The generation at the last [`interrupt_calls`].
static INTERRUPTED_AT: AtomicU64 = AtomicU64::new(0);

/// Ends every call in progress with an "interrupted" error (SIGINT: the process is
/// leaving, and a master that does not answer must not hold it up). Calls made afterwards
/// (the node's unregistrations) run as usual.
pub fn interrupt_calls() {
    let mut generation = WAITING.0.locked();
    *generation += 1;
    INTERRUPTED_AT.store(*generation, Ordering::SeqCst);
    WAITING.1.notify_all();
}

/// Whether [`interrupt_calls`] has been called: the process is on its way out, and its
/// withdrawal from the master is `registration::shutdown`'s, one pass bounded in time, not
/// that of each publisher, subscription or service as it is dropped.
pub fn interrupted() -> bool {
    INTERRUPTED_AT.load(Ordering::SeqCst) > 0
}

/// Calls `method` with `params` at `uri` (an XML-RPC server: the master, a node's slave
/// API) and returns its answer (the elements of ROS's `[code, message, value]`), or an
/// error after `within` or when [`interrupt_calls`] is called meanwhile. The call runs on
/// a thread of its own; one that never returns is left behind, blocked on its socket, and
/// costs a thread, not the caller.
pub fn xmlrpc_call(
    uri: &str,
    method: &str,
    params: Vec<xml_rpc::Value>,
    within: Duration,
) -> Result<Vec<xml_rpc::Value>, RosError> {
    let url = xml_rpc::Url::parse(uri).map_err(|e| RosError::new(format!("{uri}: {e}")))?;
    let slot: Arc<Mutex<Option<Result<_, String>>>> = Arc::new(Mutex::new(None));
    let started_at = *WAITING.0.locked();
    let filled = Arc::clone(&slot);
    let method_owned = method.to_owned();
    std::thread::Builder::new()
        .name("xmlrpc".into())
        .spawn(move || {
            let answer = xml_rpc::call_value(&url, method_owned, params)
                .map_err(|e| e.to_string())
                .and_then(|r| r.map_err(|fault| format!("{fault:?}")));
            *filled.locked() = Some(answer);
            let mut generation = WAITING.0.locked();
            *generation += 1;
            WAITING.1.notify_all();
        })
        .map_err(|e| RosError::new(format!("{method} at {uri}: cannot start a thread: {e}")))?;
    let deadline = Instant::now() + within;
    let mut generation = WAITING.0.locked();
    let answer = loop {
        if let Some(answer) = slot.locked().take() {
            break answer.map_err(|e| RosError::new(format!("{method} at {uri}: {e}")))?;
        }
        if INTERRUPTED_AT.load(Ordering::SeqCst) > started_at {
            return Err(RosError::new(format!("{method} at {uri}: interrupted")));
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(RosError::new(format!(
                "{method} at {uri}: no answer within {within:?}"
            )));
        }
        generation = WAITING
            .1
            .wait_timeout(generation, left)
            .unwrap_or_else(|e| e.into_inner())
            .0;
    };
    drop(generation);
    // ROS answers `[code, message, value]`, which arrives as one array parameter.
    Ok(match <[xml_rpc::Value; 1]>::try_from(answer) {
        Ok([xml_rpc::Value::Array(a)]) => a,
        Ok([other]) => vec![other],
        Err(a) => a,
    })
}

/// Calls `method` as `caller` (no arguments beyond the caller id) on the slave API at
/// `uri` and returns the value of a successful answer (`[1, message, value]`).
pub fn call_slave(uri: &str, method: &str, caller: &str) -> Result<xml_rpc::Value, RosError> {
    let answer = xmlrpc_call(
        uri,
        method,
        vec![xml_rpc::Value::String(caller.to_owned())],
        SLAVE_CALL_WITHIN,
    )?;
    value_of(method, answer)
}

/// The value of a successful ROS answer to `method` (`[1, message, value]`); an error
/// with the message otherwise.
pub fn value_of(method: &str, answer: Vec<xml_rpc::Value>) -> Result<xml_rpc::Value, RosError> {
    match <[xml_rpc::Value; 3]>::try_from(answer) {
        Ok([xml_rpc::Value::Int(ROS_SUCCESS), _, value]) => Ok(value),
        Ok([_, xml_rpc::Value::String(message), _]) => {
            Err(RosError::new(format!("{method}: {message}")))
        }
        other => Err(RosError::new(format!(
            "{method}: unexpected answer {other:?}"
        ))),
    }
}

/// The strings of an XML-RPC list (others left out).
pub(crate) fn strings(v: &xml_rpc::Value) -> Vec<String> {
    match v {
        xml_rpc::Value::Array(items) => items
            .iter()
            .filter_map(|i| match i {
                xml_rpc::Value::String(s) => Some(s.clone()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// A connected flag as rospy (bool) or roscpp (bool or int) sends it; absent counts as
/// connected (older implementations list established connections only).
pub(crate) fn is_true(v: Option<&xml_rpc::Value>) -> bool {
    match v {
        None => true,
        Some(xml_rpc::Value::Bool(b)) => *b,
        Some(xml_rpc::Value::Int(i)) => *i != 0,
        Some(_) => false,
    }
}

/// The master's URI: `ROS_MASTER_URI`, or a local master's default.
pub fn master_uri() -> String {
    std::env::var("ROS_MASTER_URI").unwrap_or_else(|_| "http://localhost:11311/".into())
}

/// Asks the slave API at `uri`, as `caller`, for a TCPROS link to `topic`
/// (`requestTopic`, within [`SLAVE_CALL_WITHIN`]); the host and port to connect to.
pub fn request_topic(uri: &str, caller: &str, topic: &str) -> Result<(String, u16), RosError> {
    use xml_rpc::Value;
    let protocols = Value::Array(vec![Value::Array(vec![Value::String("TCPROS".into())])]);
    let params = vec![
        Value::String(caller.to_owned()),
        Value::String(topic.to_owned()),
        protocols,
    ];
    let answer = xmlrpc_call(uri, "requestTopic", params, SLAVE_CALL_WITHIN)?;
    let what = format!("requestTopic {topic} at {uri}");
    match value_of(&what, answer)? {
        Value::Array(p) => match p.as_slice() {
            [Value::String(proto), Value::String(host), Value::Int(port)] if proto == "TCPROS" => {
                let port = u16::try_from(*port)
                    .map_err(|_| RosError::new(format!("{what}: port {port}")))?;
                Ok((host.clone(), port))
            }
            other => Err(RosError::new(format!(
                "{what}: unexpected protocol {other:?}"
            ))),
        },
        other => Err(RosError::new(format!("{what}: {other:?}"))),
    }
}
