//! The slave API's handling of callers, on a real node's shared state, under trust files.
use super::*;
use crate::runtime::{Config, Node};
use std::time::Duration;

/// The slave server's handling of one caller, for `node` under `policy`, on a socket
/// of its own on 127.0.0.1 (the node's own server reads the policy in force); its URI.
fn serving_once(node: &Node, policy: Option<Policy>) -> (String, std::thread::JoinHandle<()>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let uri = format!(
        "http://127.0.0.1:{}/",
        listener.local_addr().unwrap().port()
    );
    let shared = node.shared().clone();
    let name = node.name().to_owned();
    let thread = std::thread::spawn(move || {
        let (stream, peer) = listener.accept().unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        serve_caller(
            &name,
            Some(&shared),
            stream,
            peer,
            deadline,
            1 << 20,
            policy.as_ref(),
        );
    });
    (uri, thread)
}

fn call_once(node: &Node, policy: Option<Policy>, method: &str, params: Vec<Value>) -> Vec<Value> {
    let (uri, thread) = serving_once(node, policy);
    let answer = crate::xmlrpc::xmlrpc_call(&uri, method, params, Duration::from_secs(5))
        .unwrap_or_else(|e| panic!("{method}: {e}"));
    thread.join().unwrap();
    answer
}

fn s(text: &str) -> Value {
    Value::String(text.into())
}

/// No master: the node registers nothing, so none is asked.
fn node(name: &str) -> Node {
    Node::start(name, Config::new("http://127.0.0.1:9/", "127.0.0.1")).expect("start")
}

#[test]
fn an_untrusted_host_cannot_change_the_node_and_may_still_look() {
    let node = node("/trust_slave_refused");
    let callerid = format!("/intruder_{}", std::process::id());
    // 127.0.0.1 may publish and call, not change a node.
    let no_node_api = "rules: [{hosts: [self], publish: ['*'], call: ['*']}]";
    let policy = || Some(Policy::parse(no_node_api).unwrap());
    let changing = [
        ("shutdown", vec![s(&callerid), s("bye")]),
        ("paramUpdate", vec![s(&callerid), s("/x"), Value::Int(1)]),
        (
            "publisherUpdate",
            vec![
                s(&callerid),
                s("/x"),
                Value::Array(vec![s("http://192.0.2.1:1/")]),
            ],
        ),
    ];
    for (method, params) in changing {
        let answer = call_once(&node, policy(), method, params);
        assert_eq!(
            answer,
            [
                Value::Int(-1),
                s(&format!(
                    "refused: 127.0.0.1 may not call {method} on this node (trust file)"
                )),
                Value::Int(0)
            ],
            "{method}"
        );
    }
    assert_eq!(node.shutdown_requested(), None, "no effect");
    // Read-only methods are open to everyone.
    let pid = call_once(&node, policy(), "getPid", vec![s(&callerid)]);
    assert_eq!(pid[0], Value::Int(1));
    assert_eq!(pid[2], Value::Int(std::process::id() as i32));
    let bus = call_once(&node, policy(), "getBusInfo", vec![s(&callerid)]);
    assert_eq!(bus[0], Value::Int(1));
    // Each refusal recorded once, under the caller id the call gave.
    let mut mine: Vec<String> = crate::trust::refusals()
        .into_iter()
        .filter(|r| r.caller_id == callerid)
        .map(|r| format!("{} {} {}", r.address, r.act, r.count))
        .collect();
    mine.sort();
    assert_eq!(
        mine,
        [
            "127.0.0.1 node API paramUpdate 1",
            "127.0.0.1 node API publisherUpdate 1",
            "127.0.0.1 node API shutdown 1"
        ]
    );
}

#[test]
fn a_host_with_shutdown_or_no_policy_shuts_the_node_down() {
    let with = Policy::parse("rules: [{hosts: ['127.0.0.0/8'], shutdown: true}]").unwrap();
    for (name, policy) in [
        ("/trust_slave_allowed", Some(with)),
        ("/trust_slave_open", None),
    ] {
        let node = node(name);
        let answer = call_once(&node, policy, "shutdown", vec![s("/operator"), s("done")]);
        assert_eq!(answer[0], Value::Int(1), "{name}: {answer:?}");
        assert_eq!(
            node.shutdown_requested().as_deref(),
            Some("/operator: done"),
            "{name}"
        );
    }
    // With no trust file the master's shutdown ends the node, as in ROS.
    let node = node("/trust_slave_open_master");
    let said = "[/trust_slave_open_master] Reason: new node registered with same name";
    let answer = call_once(&node, None, "shutdown", vec![s("/master"), s(said)]);
    assert_eq!(answer[0], Value::Int(1), "{answer:?}");
    assert_eq!(node.shutdown_requested(), Some(format!("/master: {said}")));
}

#[test]
fn node_api_is_not_shutdown() {
    let node = node("/trust_slave_node_api");
    let callerid = format!("/rosnode_{}", std::process::id());
    // The master's host: publisherUpdate and paramUpdate, not shutdown.
    let policy = || Some(Policy::parse("rules: [{hosts: [self], node_api: true}]").unwrap());
    let answer = call_once(&node, policy(), "shutdown", vec![s(&callerid), s("bye")]);
    assert_eq!(
        answer,
        [
            Value::Int(-1),
            s("refused: 127.0.0.1 may not call shutdown on this node (trust file)"),
            Value::Int(0)
        ]
    );
    assert_eq!(node.shutdown_requested(), None);
    let update = vec![s("/master"), s("/x"), Value::Array(Vec::new())];
    let answer = call_once(&node, policy(), "publisherUpdate", update);
    assert_eq!(
        answer[0],
        Value::Int(0),
        "not subscribed, not refused: {answer:?}"
    );
    let answer = call_once(
        &node,
        policy(),
        "paramUpdate",
        vec![s("/master"), s("/x"), Value::Int(1)],
    );
    assert_eq!(answer[0], Value::Int(1), "{answer:?}");
    let mine: Vec<String> = crate::trust::refusals()
        .into_iter()
        .filter(|r| r.caller_id == callerid)
        .map(|r| format!("{} {}", r.act, r.count))
        .collect();
    assert_eq!(mine, ["node API shutdown 1"]);
}

#[test]
fn the_masters_shutdown_is_refused_and_the_node_takes_its_name_back() {
    let node = node("/trust_slave_taken");
    let (tx, reclaimed) = std::sync::mpsc::channel::<Instant>();
    let tx = std::sync::Mutex::new(tx);
    node.on_name_taken(move || {
        let _ = tx.locked().send(Instant::now());
    });
    // 127.0.0.1 may do anything, shutdown included: the master's is refused all the same.
    let all = "rules: [{hosts: [self], publish: ['*'], call: ['*'], serve: ['*'], \
               node_api: true, shutdown: true}]";
    let policy = || Some(Policy::parse(all).unwrap());
    let said = "[/trust_slave_taken] Reason: new node registered with same name";
    let master_shutdown = || vec![s(MASTER_CALLER_ID), s(said)];
    let answer = call_once(&node, policy(), "shutdown", master_shutdown());
    assert_eq!(
        answer,
        [
            Value::Int(-1),
            s(&format!(
                "refused: /trust_slave_taken does not shut down for another process \
                 registering its name at the master ({said}); it registers again (trust file)"
            )),
            Value::Int(0)
        ]
    );
    assert_eq!(node.shutdown_requested(), None, "the node goes on");
    let first = reclaimed
        .recv_timeout(Duration::from_secs(5))
        .expect("the node takes its name back");
    // Two more takeovers at once: one more attempt, no sooner than RECLAIM_EVERY after
    // the first.
    for _ in 0..2 {
        let answer = call_once(&node, policy(), "shutdown", master_shutdown());
        assert_eq!(answer[0], Value::Int(-1));
    }
    let second = reclaimed
        .recv_timeout(Duration::from_secs(5))
        .expect("taken back again");
    assert!(
        second.duration_since(first) >= crate::runtime::RECLAIM_EVERY,
        "{:?} after the first",
        second.duration_since(first)
    );
    assert_eq!(
        reclaimed
            .recv_timeout(crate::runtime::RECLAIM_EVERY * 2)
            .ok(),
        None,
        "the two takeovers made one attempt"
    );
    // Recorded under the master's caller id, from its address.
    let mine: Vec<crate::trust::Refusal> = crate::trust::refusals()
        .into_iter()
        .filter(|r| r.caller_id == MASTER_CALLER_ID && r.act == Act::NodeApi("shutdown".into()))
        .collect();
    assert_eq!(mine.len(), 1, "{mine:?}");
    assert!(mine[0].count >= 3, "{mine:?}");
    // Its words alone do not make another process's `shutdown` the master's.
    let answer = call_once(&node, policy(), "shutdown", vec![s("/rosnode"), s("kill")]);
    assert_eq!(answer[0], Value::Int(1), "{answer:?}");
    assert_eq!(node.shutdown_requested().as_deref(), Some("/rosnode: kill"));
}

#[test]
fn without_a_hook_the_node_registers_its_topics_again() {
    // Nothing registered: the attempt asks no master, and counts.
    let node = node("/trust_slave_taken_bare");
    let policy = Some(Policy::parse("rules: [{hosts: [self], node_api: true}]").unwrap());
    let answer = call_once(
        &node,
        policy,
        "shutdown",
        vec![
            s(MASTER_CALLER_ID),
            s("[/trust_slave_taken_bare] Reason: x"),
        ],
    );
    assert_eq!(answer[0], Value::Int(-1));
    let shared = node.shared().clone();
    let deadline = Instant::now() + Duration::from_secs(5);
    while shared.reclaim.locked().count == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let r = shared.reclaim.locked();
    assert_eq!((r.count, r.pending), (1, false));
}
