//! XML-RPC calls to the master and to other nodes' slave APIs, each bounded in time.
//!
//! rosrust's master client and the `xml_rpc` crate have no timeouts: a peer that accepts the
//! connection and never answers would hold the caller forever. Every call here runs with a
//! deadline ([`SLAVE_CALL_WITHIN`]).

use crate::RosError;
use std::time::Duration;

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
    let url = xml_rpc::Url::parse(uri).map_err(|e| RosError::new(format!("{uri}: {e}")))?;
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
        .map_err(|e| RosError::new(format!("{method} at {uri}: cannot start a thread: {e}")))?;
    let answer = match rx.recv_timeout(SLAVE_CALL_WITHIN) {
        Ok(answer) => answer.map_err(|e| RosError::new(format!("{method} at {uri}: {e}")))?,
        Err(_) => {
            return Err(RosError::new(format!(
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

/// Calls `method` as `caller` (no arguments beyond the caller id) on the slave API at
/// `uri` and returns the value of a successful answer (`[1, message, value]`).
pub fn call_slave(uri: &str, method: &str, caller: &str) -> Result<xml_rpc::Value, RosError> {
    let answer = xmlrpc_call(uri, method, vec![xml_rpc::Value::String(caller.to_owned())])?;
    value_of(method, answer)
}

/// The value of a successful ROS answer to `method` (`[1, message, value]`); an error
/// with the message otherwise.
pub fn value_of(method: &str, answer: Vec<xml_rpc::Value>) -> Result<xml_rpc::Value, RosError> {
    match <[xml_rpc::Value; 3]>::try_from(answer) {
        Ok([xml_rpc::Value::Int(1), _, value]) => Ok(value),
        Ok([_, xml_rpc::Value::String(message), _]) => {
            Err(RosError::new(format!("{method}: {message}")))
        }
        other => Err(RosError::new(format!(
            "{method}: unexpected answer {other:?}"
        ))),
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

/// A client of the master at `master_uri`, calling as node `name` at slave URI `uri`.
pub fn master_as(
    name: &str,
    uri: &str,
    master_uri: &str,
) -> Result<rosrust::api::Master, RosError> {
    rosrust::api::Master::new(master_uri, name, uri)
        .map_err(|e| RosError::new(format!("master: {e}")))
}
