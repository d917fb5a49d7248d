//! The ROS 1 Master API, as one client: parameters, services, look-ups, registration and
//! the graph's state.
//!
//! Every call to the master in this crate goes through [`Master`], so each has the same
//! time limit ([`MASTER_CALL_WITHIN`]) and the same errors, naming the call and the key. A
//! master that stops answering (stopped in a debugger, starved, behind a cut link) costs a
//! caller at most that limit, and a call in progress ends at once when the process is
//! interrupted (`crate::xmlrpc::interrupt_calls`). rosrust's master client waits forever.
//!
//! A parameter is read with one `getParam`: the master's "not set" answer is `None`, not an
//! error, so no `hasParam` has to come first.

use crate::xmlrpc::{strings, xmlrpc_call, ROS_SUCCESS};
use crate::RosError;
use std::time::Duration;
use xml_rpc::Value;

/// How long a call to the master may take. The master answers a call in milliseconds;
/// one that has not answered in this time is stopped or cut off, and the caller is told.
pub const MASTER_CALL_WITHIN: Duration = Duration::from_secs(5);

/// A client of the master at `uri`, calling as the node `caller` whose slave API is at
/// `caller_api`. Cheap to make: it holds three strings and no connection.
#[derive(Debug, Clone)]
pub struct Master {
    uri: String,
    caller: String,
    caller_api: String,
}

/// One name the master lists with the nodes it lists for it (a topic's publishers or
/// subscribers, a service's provider).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing {
    /// The topic or service.
    pub name: String,
    /// The nodes.
    pub connections: Vec<String>,
}

/// The graph as the master lists it (`getSystemState`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SystemState {
    /// Each topic with its publishers.
    pub publishers: Vec<Listing>,
    /// Each topic with its subscribers.
    pub subscribers: Vec<Listing>,
    /// Each service with its provider.
    pub services: Vec<Listing>,
}

/// A topic the master knows, with its type (`getTopicTypes`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topic {
    /// The topic.
    pub name: String,
    /// Its message type (`pkg/Type`).
    pub datatype: String,
}

fn text(s: &str) -> Value {
    Value::String(s.to_owned())
}

impl Master {
    /// A client of the master at `uri`, calling as `caller` (a node name) whose slave API
    /// is `caller_api`.
    pub fn new(uri: &str, caller: &str, caller_api: &str) -> Master {
        Master {
            uri: uri.to_owned(),
            caller: caller.to_owned(),
            caller_api: caller_api.to_owned(),
        }
    }

    /// Calls `method` with the caller id and `args`; the master's answer as
    /// `(code, message, value)` (1 is success), or an error when it did not answer in time.
    pub fn answer(&self, method: &str, args: Vec<Value>) -> Result<(i32, String, Value), RosError> {
        let params = std::iter::once(text(&self.caller)).chain(args).collect();
        let answer = xmlrpc_call(&self.uri, method, params, MASTER_CALL_WITHIN)?;
        match <[Value; 3]>::try_from(answer) {
            Ok([Value::Int(code), Value::String(message), value]) => Ok((code, message, value)),
            other => Err(RosError::new(format!(
                "{method} at {}: unexpected answer {other:?}",
                self.uri
            ))),
        }
    }

    /// Calls `method`; the value of a successful answer, the master's message otherwise.
    pub fn call(&self, method: &str, args: Vec<Value>) -> Result<Value, RosError> {
        match self.answer(method, args)? {
            (ROS_SUCCESS, _, value) => Ok(value),
            (_, message, _) => Err(RosError::new(format!("{method}: {message}"))),
        }
    }

    /// [`Master::call`] with `key` (a parameter, topic or service name) in the error.
    fn call_on(&self, method: &str, key: &str, mut more: Vec<Value>) -> Result<Value, RosError> {
        more.insert(0, text(key));
        self.call(method, more)
            .map_err(|e| RosError::new(format!("{key}: {e}")))
    }

    /// The parameter `key`, or `None` when the master does not hold it.
    pub fn get_param(&self, key: &str) -> Result<Option<Value>, RosError> {
        let (code, message, value) = self
            .answer("getParam", vec![text(key)])
            .map_err(|e| RosError::new(format!("{key}: {e}")))?;
        match code {
            ROS_SUCCESS => Ok(Some(value)),
            // ERROR (-1) is the master's "Parameter [key] is not set".
            -1 => Ok(None),
            _ => Err(RosError::new(format!("getParam {key}: {message}"))),
        }
    }

    /// Sets the parameter `key`.
    pub fn set_param(&self, key: &str, value: Value) -> Result<(), RosError> {
        self.call_on("setParam", key, vec![value]).map(drop)
    }

    /// Whether the master holds the parameter `key`.
    pub fn has_param(&self, key: &str) -> Result<bool, RosError> {
        match self.call_on("hasParam", key, vec![])? {
            Value::Bool(b) => Ok(b),
            other => Err(RosError::new(format!("hasParam {key}: {other:?}"))),
        }
    }

    /// Deletes the parameter `key`.
    pub fn delete_param(&self, key: &str) -> Result<(), RosError> {
        self.call_on("deleteParam", key, vec![]).map(drop)
    }

    /// Every parameter name the master holds.
    pub fn param_names(&self) -> Result<Vec<String>, RosError> {
        Ok(strings(&self.call("getParamNames", vec![])?))
    }

    /// The slave API of the node `name`.
    pub fn lookup_node(&self, name: &str) -> Result<String, RosError> {
        string("lookupNode", self.call_on("lookupNode", name, vec![])?)
    }

    /// The `rosrpc://` URI of the service `name`.
    pub fn lookup_service(&self, name: &str) -> Result<String, RosError> {
        string(
            "lookupService",
            self.call_on("lookupService", name, vec![])?,
        )
    }

    /// Registers this caller as the provider of `service` at `service_api`.
    pub fn register_service(&self, service: &str, service_api: &str) -> Result<(), RosError> {
        let args = vec![text(service_api), text(&self.caller_api)];
        self.call_on("registerService", service, args).map(drop)
    }

    /// Withdraws this caller's `service` at `service_api`.
    pub fn unregister_service(&self, service: &str, service_api: &str) -> Result<(), RosError> {
        self.call_on("unregisterService", service, vec![text(service_api)])
            .map(drop)
    }

    /// Withdraws this caller's publication of `topic`.
    pub fn unregister_publisher(&self, topic: &str) -> Result<(), RosError> {
        let args = vec![text(&self.caller_api)];
        self.call_on("unregisterPublisher", topic, args).map(drop)
    }

    /// Withdraws this caller's subscription to `topic`.
    pub fn unregister_subscriber(&self, topic: &str) -> Result<(), RosError> {
        let args = vec![text(&self.caller_api)];
        self.call_on("unregisterSubscriber", topic, args).map(drop)
    }

    /// Who publishes, subscribes to and serves what.
    pub fn system_state(&self) -> Result<SystemState, RosError> {
        let value = self.call("getSystemState", vec![])?;
        let lists = match value {
            Value::Array(lists) if lists.len() == 3 => lists,
            other => return Err(RosError::new(format!("getSystemState: {other:?}"))),
        };
        let [publishers, subscribers, services] = [0, 1, 2].map(|i| listings(&lists[i]));
        Ok(SystemState {
            publishers,
            subscribers,
            services,
        })
    }

    /// Every topic the master knows, with its type.
    pub fn topic_types(&self) -> Result<Vec<Topic>, RosError> {
        let Value::Array(pairs) = self.call("getTopicTypes", vec![])? else {
            return Err(RosError::new("getTopicTypes: not a list"));
        };
        Ok(pairs
            .iter()
            .filter_map(|pair| match pair {
                Value::Array(p) => match (p.first(), p.get(1)) {
                    (Some(Value::String(name)), Some(Value::String(datatype))) => Some(Topic {
                        name: name.clone(),
                        datatype: datatype.clone(),
                    }),
                    _ => None,
                },
                _ => None,
            })
            .collect())
    }
}

fn string(method: &str, value: Value) -> Result<String, RosError> {
    match value {
        Value::String(s) => Ok(s),
        other => Err(RosError::new(format!("{method}: not a string: {other:?}"))),
    }
}

/// `[[name, [node, ...]], ...]`, one of `getSystemState`'s three lists.
fn listings(v: &Value) -> Vec<Listing> {
    let Value::Array(entries) = v else {
        return vec![];
    };
    entries
        .iter()
        .filter_map(|e| match e {
            Value::Array(pair) => match (pair.first(), pair.get(1)) {
                (Some(Value::String(name)), Some(nodes)) => Some(Listing {
                    name: name.clone(),
                    connections: strings(nodes),
                }),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// Registrations (`registerPublisher` / `registerSubscriber`, with the topic) whose call
/// was interrupted on the way out: the master may have taken them after the node's
/// withdrawal read what it lists, so the withdrawal asks for each by name as well.
static INTERRUPTED_REGISTRATIONS: std::sync::Mutex<Vec<(String, String)>> =
    std::sync::Mutex::new(Vec::new());

/// Remembers that the registration `method` of `topic` was interrupted.
pub(crate) fn remember_interrupted(method: &str, topic: &str) {
    use crate::Lock;
    INTERRUPTED_REGISTRATIONS
        .locked()
        .push((method.to_owned(), topic.to_owned()));
}

/// The interrupted registrations remembered so far, taken.
pub(crate) fn take_interrupted() -> Vec<(String, String)> {
    use crate::Lock;
    std::mem::take(&mut *INTERRUPTED_REGISTRATIONS.locked())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(items: &[&str]) -> Value {
        Value::Array(items.iter().map(|s| text(s)).collect())
    }

    #[test]
    fn the_system_state_reads_the_masters_three_lists() {
        let entry = |name: &str, nodes: &[&str]| Value::Array(vec![text(name), list(nodes)]);
        let lists = [
            Value::Array(vec![entry("/a", &["/n1", "/n2"])]),
            Value::Array(vec![entry("/b", &["/n2"]), Value::Int(3)]),
            Value::Array(vec![]),
        ];
        let [publishers, subscribers, services] = [0, 1, 2].map(|i| listings(&lists[i]));
        assert_eq!(
            publishers,
            vec![Listing {
                name: "/a".into(),
                connections: vec!["/n1".into(), "/n2".into()]
            }]
        );
        assert_eq!(subscribers.len(), 1, "a malformed entry is skipped");
        assert!(services.is_empty());
    }

    #[test]
    fn a_master_that_is_not_there_is_an_error_naming_the_call_and_the_key() {
        // A port nothing listens on (bound, then released).
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap();
        let m = Master::new(&format!("http://127.0.0.1:{port}/"), "/n", "http://x:1/");
        let e = m.get_param("/rate").unwrap_err().to_string();
        assert!(e.contains("/rate") && e.contains("getParam"), "{e}");
    }
}
