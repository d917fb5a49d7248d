//! The node's XML-RPC slave API, served so that no caller can hold up another.
//!
//! rosrust's slave server (rouille, polled every 5 ms) wakes the node 200 times a second
//! when nothing happens, and does not pass `publisherUpdate` on to our own subscriptions.
//! Here one thread blocks in `accept`; each caller gets a thread of its own (at most
//! [`Config::max_callers`] at once), which must receive its whole request within
//! [`Config::request_within`] and no larger than [`Config::max_request_bytes`]; the answer
//! closes the connection (`Connection: close`, which every XML-RPC client of ROS handles),
//! so no idle caller keeps a thread.
//!
//! The methods, as the ROS slave API specifies them (each answers `[code, message,
//! value]`): `getBusStats`, `getBusInfo`, `getMasterUri`, `shutdown`, `getPid`,
//! `getSubscriptions`, `getPublications`, `paramUpdate`, `publisherUpdate` (handed to the
//! topic's [`super::PublisherWatch`]es) and `requestTopic` (TCPROS only: this node's host
//! and TCPROS port).
//!
//! Under a trust file ([`crate::trust`]) the methods that change the node
//! ([`CHANGING_METHODS`]) are answered with code -1 and no effect unless the caller's
//! address has the grant: `node_api` for `publisherUpdate` and `paramUpdate`, `shutdown`
//! for `shutdown`; the others stay open to every host (anyone may subscribe).
//!
//! The master calls `shutdown` (caller id `/master`, [`MASTER_CALLER_ID`]) on a node when
//! another process registers the node's name, which any host may do. Under a trust file
//! that call is refused whatever its address (code -1, recorded as a refusal), and the
//! node registers again with the master to take its name back, on a thread of its own
//! and at most once per [`super::RECLAIM_EVERY`] ([`super::Node::on_name_taken`]) —
//! unless the master now lists the name at an address the trust file lets shut nodes
//! down (a restart on the car computer): that newcomer takes over, and the node shuts
//! down. With no trust file the node shuts down, as ROS's nodes do.

use super::config::Config;
use super::serve::{self, read_exact_by, read_some_by, write_all_by, Gate, Pass};
use super::state::{Shared, Topic};
use super::xml;
use crate::trust::{Act, Policy};
use crate::xmlrpc::strings;
use crate::Lock;
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, OnceLock, Weak};
use std::time::Instant;
use xml_rpc::Value;

/// The longest request line and headers taken (ROS's clients send a few hundred bytes).
const MAX_HEAD: usize = 16 << 10;

/// A caller thread's stack: the XML is parsed iteratively and its nesting is bounded.
const STACK: usize = 256 << 10;

/// Starts the slave server on `bind`; its handler finds the node's state in `shared`
/// (filled once the node exists; a call before answers that the node is starting).
pub(crate) fn listen(
    name: &str,
    bind: &str,
    config: &Config,
    shared: Arc<OnceLock<Weak<Shared>>>,
) -> std::io::Result<serve::Listener> {
    let gate = Gate::new(format!("{name}: XML-RPC slave API"), config.max_callers);
    let (within, max_body) = (config.request_within, config.max_request_bytes);
    let name_owned = name.to_owned();
    serve::Listener::start(
        "xmlrpc",
        bind,
        gate,
        STACK,
        Arc::new(move |stream, peer, pass: Pass| {
            let deadline = Instant::now() + within;
            let node = shared.get().and_then(Weak::upgrade);
            let policy = crate::trust::installed();
            serve_caller(
                &name_owned,
                node.as_ref(),
                stream,
                peer,
                deadline,
                max_body,
                policy.as_deref(),
            );
            drop(pass);
        }),
    )
}

/// Why a request was not answered with a method's result.
#[derive(Debug, thiserror::Error)]
enum Refused {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// An HTTP status and why.
    #[error("HTTP {0}: {1}")]
    Http(u16, String),
}

/// One caller: its request, answered under `policy` (the trust file in force).
fn serve_caller(
    node_name: &str,
    node: Option<&Arc<Shared>>,
    mut stream: TcpStream,
    peer: SocketAddr,
    deadline: Instant,
    max_body: usize,
    policy: Option<&Policy>,
) {
    let _ = stream.set_nodelay(true);
    let (status, body) = match read_request(&mut stream, deadline, max_body) {
        Ok(body) => match xml::parse_call(&body) {
            Ok((method, params)) => {
                tracing::debug!("{node_name}: {method} from {peer}");
                let denial = refusal(policy, peer, node_name, &method, &params);
                let answer = match (denial, node) {
                    (Some(Denial::NameTaken(refused)), Some(node)) => {
                        node.name_taken();
                        Some(refused)
                    }
                    (Some(Denial::NameTaken(refused) | Denial::Refused(refused)), _) => {
                        Some(refused)
                    }
                    (None, Some(node)) => call(node, &method, &params),
                    (None, None) => Some(answer(0, "the node is starting", Value::Int(0))),
                };
                match answer {
                    Some(v) => (200, xml::response(&v)),
                    None => (200, xml::fault(-1, &format!("no method {method}"))),
                }
            }
            Err(e) => (200, xml::fault(-1, &e.to_string())),
        },
        Err(Refused::Io(e)) => {
            match e.kind() {
                std::io::ErrorKind::UnexpectedEof => {
                    tracing::debug!("{node_name}: XML-RPC caller {peer} left: {e}")
                }
                _ => tracing::warn!(
                    "{node_name}: XML-RPC caller {peer} sent no complete request in time ({e}); closed"
                ),
            }
            return;
        }
        Err(Refused::Http(status, why)) => {
            tracing::warn!("{node_name}: XML-RPC caller {peer}: {why}; refused");
            (status, String::new())
        }
    };
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        405 => "Method Not Allowed",
        411 => "Length Required",
        413 => "Payload Too Large",
        _ => "Error",
    };
    let head = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/xml\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    // The answer gets the same deadline again: a caller that does not read it holds only
    // its own thread, and only that long.
    let write_deadline = Instant::now()
        + (deadline.saturating_duration_since(Instant::now()))
            .max(std::time::Duration::from_millis(500));
    let mut out = head.into_bytes();
    out.extend_from_slice(body.as_bytes());
    if let Err(e) = write_all_by(&mut stream, &out, write_deadline) {
        tracing::debug!("{node_name}: XML-RPC caller {peer} did not take the answer: {e}");
    }
    let _ = stream.shutdown(std::net::Shutdown::Write);
}

/// Reads one HTTP POST request by `deadline`; its body.
fn read_request(
    stream: &mut TcpStream,
    deadline: Instant,
    max_body: usize,
) -> Result<Vec<u8>, Refused> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    let head_end = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        if buf.len() > MAX_HEAD {
            return Err(Refused::Http(400, format!("headers over {MAX_HEAD} bytes")));
        }
        let n = read_some_by(stream, &mut chunk, deadline)?;
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    if !request_line.starts_with("POST ") {
        return Err(Refused::Http(405, format!("{request_line:?}")));
    }
    let mut length = None;
    for line in lines {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let (key, value) = (key.trim(), value.trim());
        if key.eq_ignore_ascii_case("content-length") {
            length = value.parse::<usize>().ok();
        } else if key.eq_ignore_ascii_case("transfer-encoding") {
            return Err(Refused::Http(411, format!("Transfer-Encoding {value}")));
        }
    }
    let length = length.ok_or_else(|| Refused::Http(411, "no Content-Length".into()))?;
    if length > max_body {
        return Err(Refused::Http(
            413,
            format!("a body of {length} bytes, over {max_body}"),
        ));
    }
    let mut body = buf.split_off(head_end + 4);
    body.truncate(length);
    let have = body.len();
    body.resize(length, 0);
    read_exact_by(stream, &mut body[have..], deadline)?;
    Ok(body)
}

/// The slave-API methods that change a node, which a trust file grants: `shutdown` with
/// `shutdown`, the others with `node_api`.
pub const CHANGING_METHODS: [&str; 3] = ["publisherUpdate", "paramUpdate", "shutdown"];

/// The caller id the master calls a node's `shutdown` with when another process registered
/// the node's name (rosmaster: `shutdown('/master', '[<name>] Reason: new node registered
/// with same name')`).
pub const MASTER_CALLER_ID: &str = "/master";

/// A call the slave API does not carry out under a trust file.
#[derive(Debug, PartialEq)]
enum Denial {
    /// Refused: the answer.
    Refused(Value),
    /// The master's `shutdown`: another process registered the node's name. Refused (the
    /// answer), and the node is to take its name back.
    NameTaken(Value),
}

/// Why node `node_name` does not carry out `method` for `peer` under `policy` (code -1,
/// recorded as a refusal); `None` if it does.
fn refusal(
    policy: Option<&Policy>,
    peer: SocketAddr,
    node_name: &str,
    method: &str,
    params: &[Value],
) -> Option<Denial> {
    let policy = policy?;
    if !CHANGING_METHODS.contains(&method) {
        return None;
    }
    let ip = crate::trust::canonical(peer.ip());
    let act = Act::NodeApi(method.to_owned());
    let caller = text(params.first());
    if method == "shutdown" && caller == MASTER_CALLER_ID {
        // Whatever the address: any host can register any name at the master, which then
        // asks the name's holder to go.
        let said = crate::trust::clean_caller(text(params.get(1)));
        let why = format!(
            "the master asks {node_name} to shut down ({said}): another process registered \
             this node's name at the master; under the trust file the node keeps running and \
             registers again to take its name back"
        );
        crate::trust::refuse(&act, ip, caller, &why);
        return Some(Denial::NameTaken(answer(
            -1,
            &format!(
                "refused: {node_name} does not shut down for another process registering its \
                 name at the master ({said}); it registers again (trust file)"
            ),
            Value::Int(0),
        )));
    }
    if policy.allows(ip, &act) {
        return None;
    }
    crate::trust::refuse(&act, ip, caller, &policy.refusal_reason(ip, &act));
    Some(Denial::Refused(answer(
        -1,
        &format!("refused: {ip} may not call {method} on this node (trust file)"),
        Value::Int(0),
    )))
}

fn answer(code: i32, message: &str, value: Value) -> Value {
    Value::Array(vec![
        Value::Int(code),
        Value::String(message.to_owned()),
        value,
    ])
}

fn text(v: Option<&Value>) -> &str {
    match v {
        Some(Value::String(s)) => s,
        _ => "",
    }
}

fn pairs(list: Vec<(String, String)>) -> Value {
    Value::Array(
        list.into_iter()
            .map(|(a, b)| Value::Array(vec![Value::String(a), Value::String(b)]))
            .collect(),
    )
}

/// One slave API method; `None` for a method the API does not have.
fn call(node: &Shared, method: &str, params: &[Value]) -> Option<Value> {
    let ok = |message: &str, value| Some(answer(1, message, value));
    match method {
        "getPid" => ok("", Value::Int(std::process::id() as i32)),
        "getMasterUri" => ok("", Value::String(node.config.master_uri.clone())),
        "getPublications" => ok(
            "publications",
            pairs(
                node.publications
                    .locked()
                    .values()
                    .map(|t| (t.name.clone(), t.msg_type.clone()))
                    .collect(),
            ),
        ),
        "getSubscriptions" => ok("subscriptions", pairs(node.subscriptions())),
        "getBusInfo" => {
            let mut info: Vec<Value> = topics(node).iter().flat_map(|t| t.bus_info()).collect();
            info.extend(node.inbound_info());
            ok("bus info", Value::Array(info))
        }
        "getBusStats" => {
            let publish = topics(node).iter().map(|t| t.bus_stats()).collect();
            ok(
                "bus stats",
                Value::Array(vec![
                    Value::Array(publish),
                    Value::Array(Vec::new()),
                    Value::Array(Vec::new()),
                ]),
            )
        }
        "shutdown" => {
            let caller = text(params.first());
            let why = text(params.get(1));
            node.request_shutdown(format!("{caller}: {why}"));
            ok("shutdown", Value::Int(0))
        }
        "paramUpdate" => {
            if let (Some(Value::String(key)), Some(value)) = (params.get(1), params.get(2)) {
                node.param_update(key, value);
            }
            ok("", Value::Int(0))
        }
        "publisherUpdate" => {
            let topic = text(params.get(1));
            let publishers = params.get(2).map(strings).unwrap_or_default();
            if node.publisher_update(topic, &publishers) {
                ok("", Value::Int(0))
            } else {
                Some(answer(
                    0,
                    &format!("not subscribed to {topic}"),
                    Value::Int(0),
                ))
            }
        }
        "requestTopic" => Some(request_topic(node, text(params.get(1)), params.get(2))),
        _ => None,
    }
}

fn topics(node: &Shared) -> Vec<Arc<Topic>> {
    node.publications.locked().values().cloned().collect()
}

/// `requestTopic`: TCPROS at this node's host and port, for a topic it publishes.
fn request_topic(node: &Shared, topic: &str, protocols: Option<&Value>) -> Value {
    if !node.publications.locked().contains_key(topic) {
        return answer(
            0,
            &format!("not a publisher of {topic}"),
            Value::Array(Vec::new()),
        );
    }
    let tcpros = match protocols {
        Some(Value::Array(list)) => list.iter().any(|p| match p {
            Value::Array(p) => matches!(p.first(), Some(Value::String(s)) if s == "TCPROS"),
            _ => false,
        }),
        _ => false,
    };
    if !tcpros {
        return answer(0, "only TCPROS is served", Value::Array(Vec::new()));
    }
    let port = *node.tcpros_port.locked();
    answer(
        1,
        &format!("ready on {}:{port}", node.config.host),
        Value::Array(vec![
            Value::String("TCPROS".into()),
            Value::String(node.config.host.clone()),
            Value::Int(i32::from(port)),
        ]),
    )
}

#[cfg(test)]
mod tests;
