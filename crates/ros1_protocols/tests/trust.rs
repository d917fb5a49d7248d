//! The trust file ([`ros1_protocols::trust`]) enforced against a real rosmaster and real
//! peers: `rostopic pub` publishing to a direct subscription, a node's slave API called by
//! Python's XML-RPC client and `rosnode kill`, the master's own `publisherUpdate`, and
//! `rosservice call` / `rosservice info` on our services. Every peer here is on
//! 127.0.0.1, so a policy that does not name `self` (or 127.0.0.1) refuses them.
//!
//! The policy in force is process-wide: this file is a test binary of its own, its tests
//! run one at a time ([`serial`]) and each installs the policy it needs (or none,
//! [`trust::uninstall`]).

mod support;

use ros1_protocols::direct::{self, DirectSubscriber, RETRY_AFTER};
use ros1_protocols::msgs::std_msgs::String as Text;
use ros1_protocols::msgs::std_srvs::{SetBool, SetBoolReq, SetBoolRes};
use ros1_protocols::runtime::{Config, Node};
use ros1_protocols::trust::{self, Act, Policy, Refusal};
use std::net::IpAddr;
use std::process::{Child, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::{describe, serial, wait_until, warned, Master};

/// How long a real peer (a rospy tool starting, the master telling our node) may take.
const PEER_WITHIN: Duration = Duration::from_secs(20);

fn node(master: &Master, name: &str) -> Node {
    Node::start(name, Config::new(master.uri.clone(), "127.0.0.1")).expect("start the node")
}

fn install(yaml: &str) {
    trust::install(Policy::parse(yaml).expect("a valid trust file"));
}

fn loopback() -> IpAddr {
    "127.0.0.1".parse().unwrap()
}

/// The refusals recorded so far of `act` from 127.0.0.1 by `caller_id`.
fn refused(act: &Act, caller_id: &str) -> Vec<Refusal> {
    trust::refusals()
        .into_iter()
        .filter(|r| r.act == *act && r.address == loopback() && r.caller_id == caller_id)
        .collect()
}

/// How many times `act` from 127.0.0.1 by `caller_id` was refused (0: never).
fn refusal_count(act: &Act, caller_id: &str) -> u64 {
    refused(act, caller_id).iter().map(|r| r.count).sum()
}

/// A tool started by [`Master::tool`] (a `rostopic pub`), interrupted and waited for when
/// dropped, a failing test's included.
struct Running(Option<Child>);

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(child) = self.0.take() {
            // SAFETY: interrupting the process group we started (rospy unregisters on it).
            unsafe { libc::kill(-(child.id() as i32), libc::SIGINT) };
            support::finish(child, Duration::from_secs(10));
        }
    }
}

/// `rostopic pub -r 10 topic std_msgs/String "data: <data>"` (rospy, a process of its
/// own reaching us over 127.0.0.1), and its node's name once the master lists it as the
/// topic's publisher.
fn rostopic_pub(master: &Master, topic: &str, data: &str) -> (Running, String) {
    let child = master
        .tool(
            "/usr/bin/rostopic",
            &[
                "pub",
                "-r",
                "10",
                topic,
                "std_msgs/String",
                &format!("data: {data}"),
            ],
        )
        .spawn()
        .expect("rostopic pub");
    let running = Running(Some(child));
    let state = ros1_protocols::master_api::Master::new(&master.uri, "/trust_test", "");
    let mut name = None;
    let listed = wait_until(PEER_WITHIN, || {
        name = state.system_state().ok().and_then(|s| {
            s.publishers
                .into_iter()
                .find(|l| l.name == topic)
                .and_then(|l| l.connections.into_iter().next())
        });
        name.is_some()
    });
    assert!(listed, "the master lists no publisher of {topic}");
    (running, name.unwrap())
}

/// A direct subscription to `topic` on `node`: each message's text, and each link's
/// publisher, to the receivers.
fn subscribe(node: &Node, topic: &str) -> (DirectSubscriber, Receiver<String>, Receiver<String>) {
    let (messages, received) = std::sync::mpsc::channel::<String>();
    let (links, linked) = std::sync::mpsc::channel::<String>();
    let messages = Mutex::new(messages);
    let links = Mutex::new(links);
    let subscriber = direct::subscribe_on::<Text>(
        node,
        topic,
        move |link| {
            let _ = links.lock().unwrap().send(link.caller_id().to_owned());
        },
        move |m, _, _| {
            let _ = messages.lock().unwrap().send(m.data);
        },
    )
    .expect("subscribe");
    (subscriber, received, linked)
}

#[test]
fn a_publisher_the_trust_file_refuses_delivers_nothing_and_is_not_tried_again() {
    let _one = serial();
    let master = Master::start();
    let topic = "/trust_refused_chatter";
    // 127.0.0.1 may publish another topic only; the master (on 127.0.0.1) may tell our
    // nodes of publishers.
    install("rules: [{hosts: [self], publish: [/trust_other], node_api: true}]");
    let node = node(&master, "/trust_listener");
    let (subscriber, received, linked) = subscribe(&node, topic);
    let (_publisher, caller) = rostopic_pub(&master, topic, "from an untrusted host");
    let act = Act::Publish(topic.into());
    assert!(
        wait_until(PEER_WITHIN, || refusal_count(&act, &caller) >= 1),
        "no refusal of {caller}: {}\n{:?}",
        subscriber.link_report(),
        trust::refusals()
    );
    let refused_at = Instant::now();
    let mine = refused(&act, &caller);
    assert_eq!(mine.len(), 1, "{mine:?}");
    assert_eq!(mine[0].count, 1, "{mine:?}");
    assert_eq!(mine[0].address, loopback());
    assert_eq!(
        warned(&format!("refused 127.0.0.1 ({caller}): publish {topic}")),
        1,
        "logged once: {}",
        support::logs()
    );
    let report = subscriber.link_report();
    assert!(
        report.contains("refused by the trust file")
            && report.contains(&format!(
                "127.0.0.1 ({caller}) may not publish {topic} (trust file)"
            )),
        "{report}"
    );
    // The publisher does publish: a rospy subscriber (which checks no trust file) gets it.
    let (_, _, data, _) = master
        .first_message(topic, Duration::from_secs(10))
        .expect("rospy gets the publisher's messages");
    assert_eq!(data, "from an untrusted host");
    // Not linked, not tried again: a few retry periods on, still one refusal, no message.
    let window = RETRY_AFTER * 3;
    if let Some(rest) = window.checked_sub(refused_at.elapsed()) {
        // An observation window: nothing is to happen in it, so there is no event to wait on.
        std::thread::sleep(rest);
    }
    assert_eq!(refusal_count(&act, &caller), 1, "tried again");
    assert_eq!(received.try_recv().ok(), None, "a message was delivered");
    assert_eq!(linked.try_recv().ok(), None, "a link was made");
    assert_eq!(
        subscriber.publisher_count(),
        0,
        "{}",
        subscriber.link_report()
    );
    assert!(trust::refusal_summary()
        .unwrap_or_default()
        .contains(&format!("127.0.0.1 ({caller}): publish {topic} ×1")));
}

#[test]
fn a_publisher_the_trust_file_allows_delivers() {
    let _one = serial();
    let master = Master::start();
    let topic = "/trust_allowed_chatter";
    install(&format!(
        "rules: [{{hosts: [self], publish: [{topic}], node_api: true}}]"
    ));
    let node = node(&master, "/trust_listener");
    let (subscriber, received, linked) = subscribe(&node, topic);
    let (_publisher, caller) = rostopic_pub(&master, topic, "from a trusted host");
    let got = received.recv_timeout(PEER_WITHIN);
    assert_eq!(
        got.as_deref(),
        Ok("from a trusted host"),
        "{}",
        subscriber.link_report()
    );
    assert_eq!(linked.try_recv().as_deref(), Ok(caller.as_str()));
    assert_eq!(subscriber.publisher_count(), 1);
    let report = subscriber.link_report();
    assert!(!report.contains("refused"), "{report}");
    assert_eq!(refusal_count(&Act::Publish(topic.into()), &caller), 0);
}

#[test]
fn a_refused_publisher_is_tried_again_when_listed_again_and_under_a_new_policy() {
    let _one = serial();
    let master = Master::start();
    let topic = "/trust_relisted";
    install("rules: [{hosts: [self], publish: [/trust_other], node_api: true}]");
    let listener = node(&master, "/trust_relisted_listener");
    let (subscriber, received, linked) = subscribe(&listener, topic);
    let feeder = node(&master, "/trust_feeder");
    let act = Act::Publish(topic.into());
    let attempts = || refusal_count(&act, "/trust_feeder");
    let advertise = || {
        let p = feeder.advertise::<Text>(topic, 1, true).expect("advertise");
        p.send(Text {
            data: "latched".into(),
        })
        .expect("send");
        p
    };
    let first = advertise();
    assert!(
        wait_until(PEER_WITHIN, || attempts() == 1),
        "{}",
        subscriber.link_report()
    );
    // Forgotten once the master no longer lists the publisher ...
    drop(first);
    assert!(
        wait_until(PEER_WITHIN, || !subscriber
            .link_report()
            .contains("refused")),
        "{}",
        subscriber.link_report()
    );
    // ... and tried (and refused) again when it is listed again.
    let _again = advertise();
    assert!(
        wait_until(PEER_WITHIN, || attempts() == 2),
        "{}",
        subscriber.link_report()
    );
    assert!(subscriber
        .link_report()
        .contains("refused by the trust file"));
    // A policy that trusts it, installed since: the refusal does not hold under it, and
    // the publisher is linked the next time the subscription links (a publisherUpdate:
    // another publisher of the topic comes).
    install(&format!(
        "rules: [{{hosts: [self], publish: [{topic}], node_api: true}}]"
    ));
    let other = node(&master, "/trust_other_feeder");
    let _other = other.advertise::<Text>(topic, 1, false).expect("advertise");
    assert!(
        wait_until(PEER_WITHIN, || subscriber.publisher_count() == 2),
        "{}",
        subscriber.link_report()
    );
    assert_eq!(
        received.recv_timeout(PEER_WITHIN).as_deref(),
        Ok("latched"),
        "the latched message of the publisher refused before"
    );
    let mut links: Vec<String> = linked.try_iter().collect();
    links.sort();
    assert_eq!(links, ["/trust_feeder", "/trust_other_feeder"]);
    assert!(!subscriber.link_report().contains("refused"));
    assert_eq!(attempts(), 2);
}

/// `method(args...)` on the XML-RPC server at `uri`, called by Python's `xmlrpc.client`
/// (another process, over 127.0.0.1); its answer as JSON, e.g. `[1, "", 1234]`.
fn python_xmlrpc(master: &Master, uri: &str, method: &str, args: &[&str]) -> String {
    const CALL: &str = "import json, sys, xmlrpc.client\n\
        uri, method, *args = sys.argv[1:]\n\
        print(json.dumps(getattr(xmlrpc.client.ServerProxy(uri), method)(*args)))";
    let mut argv = vec!["-c", CALL, uri, method];
    argv.extend_from_slice(args);
    let out = master.run("/usr/bin/python3", &argv, PEER_WITHIN);
    assert!(out.status.success(), "{method}: {}", describe(&out));
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

#[test]
fn the_slave_api_refuses_changes_to_a_host_without_node_api() {
    let _one = serial();
    let master = Master::start();
    // 127.0.0.1 may publish and call, not change a node: neither we nor the master.
    install("rules: [{hosts: [self], publish: ['*'], call: ['*']}]");
    let node = node(&master, "/trust_slave");
    // Registered with the master: what `rosnode` finds it by.
    let _publisher = node
        .advertise::<Text>("/trust_slave_topic", 1, false)
        .expect("advertise");
    let callerid = format!("/intruder_{}", std::process::id());
    let answer = python_xmlrpc(&master, node.uri(), "shutdown", &[&callerid, "bye"]);
    assert_eq!(
        answer,
        "[-1, \"refused: 127.0.0.1 may not call shutdown on this node (trust file)\", 0]"
    );
    assert_eq!(node.shutdown_requested(), None, "no effect");
    let shutdown = Act::NodeApi("shutdown".into());
    assert_eq!(refusal_count(&shutdown, &callerid), 1);
    // `rosnode kill` (which reports every node it tried as killed) has no effect either.
    let kill = master.run("/usr/bin/rosnode", &["kill", "/trust_slave"], PEER_WITHIN);
    assert!(kill.status.success(), "{}", describe(&kill));
    assert_eq!(
        refusal_count(&shutdown, "/rosnode"),
        1,
        "{}",
        describe(&kill)
    );
    assert_eq!(node.shutdown_requested(), None, "no effect");
    // The read-only methods stay open.
    let pid = python_xmlrpc(&master, node.uri(), "getPid", &[&callerid]);
    assert!(
        pid.starts_with("[1, ") && pid.ends_with(&format!(", {}]", std::process::id())),
        "{pid}"
    );
    let info = master.run("/usr/bin/rosnode", &["info", "/trust_slave"], PEER_WITHIN);
    assert!(
        info.status.success()
            && String::from_utf8_lossy(&info.stdout)
                .contains(&format!("Pid: {}", std::process::id())),
        "{}",
        describe(&info)
    );
    // The master's publisherUpdate is refused too (its host has no `node_api`): a
    // subscription learns of a publisher only when it registers.
    let (tx, updates) = std::sync::mpsc::channel::<Vec<String>>();
    let tx = Mutex::new(tx);
    let _watch = node
        .watch_publishers("/trust_watched", "std_msgs/String", move |p| {
            let _ = tx.lock().unwrap().send(p.to_vec());
        })
        .expect("watch");
    assert_eq!(
        updates.try_recv(),
        Ok(Vec::new()),
        "registered: no publisher"
    );
    let (_publisher, _) = rostopic_pub(&master, "/trust_watched", "x");
    let update = Act::NodeApi("publisherUpdate".into());
    assert!(
        wait_until(PEER_WITHIN, || refusal_count(&update, "/master") >= 1),
        "{:?}",
        trust::refusals()
    );
    assert_eq!(
        updates.try_recv().ok(),
        None,
        "the update reached the watch"
    );
    assert_eq!(node.shutdown_requested(), None);
}

/// `rosservice <args>` to its end.
fn rosservice(master: &Master, args: &[&str]) -> Output {
    master.run("/usr/bin/rosservice", args, PEER_WITHIN)
}

fn output(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A handler answering `success: true, message: <message>`, counting its calls.
fn enabling(
    message: &'static str,
    calls: &Arc<AtomicUsize>,
) -> impl Fn(SetBoolReq) -> Result<SetBoolRes, String> + Send + Sync + 'static {
    let calls = calls.clone();
    move |_| {
        calls.fetch_add(1, Ordering::SeqCst);
        Ok(SetBoolRes {
            success: true,
            message: message.into(),
        })
    }
}

/// This process's node ([`ros1_protocols::this_node`], which services are advertised on)
/// against `master`; ended (withdrawn from the master) when dropped. One per process: the
/// one test that needs it starts it.
struct ThisNode;

impl ThisNode {
    fn start(master: &Master) -> ThisNode {
        assert!(
            !ros1_protocols::this_node::is_initialized(),
            "this process's node is started once"
        );
        // The node reads these when it starts. Every test of this binary runs under
        // `serial()` and reads no environment meanwhile.
        std::env::set_var("ROS_MASTER_URI", &master.uri);
        std::env::set_var("ROS_IP", "127.0.0.1");
        // Ctrl-C ends the test run as usual: the test process catches no signal.
        ros1_protocols::this_node::leave_sigint_alone();
        ros1_protocols::this_node::init("trust_services").expect("this process's node");
        ThisNode
    }
}

impl Drop for ThisNode {
    fn drop(&mut self) {
        ros1_protocols::registration::shutdown();
    }
}

#[test]
fn services_refuse_untrusted_callers_and_serve_this_computer() {
    let _one = serial();
    let master = Master::start();
    let _this = ThisNode::start(&master);
    // 127.0.0.1 may publish and change a node, not call a service.
    install("rules: [{hosts: [self], publish: ['*'], node_api: true}]");
    let calls = Arc::new(AtomicUsize::new(0));
    let service = "/trust_test/enable";
    let enable =
        ros1_protocols::service::advertise::<SetBool, _>(service, enabling("enabled", &calls))
            .expect("advertise");
    assert_eq!(enable.name(), service);
    let call = rosservice(&master, &["call", service, "data: true"]);
    let said = output(&call);
    assert!(!call.status.success(), "{}", describe(&call));
    assert!(
        said.contains("refused") && said.contains("127.0.0.1"),
        "{}",
        describe(&call)
    );
    assert!(
        said.contains(&format!(
            "refused: 127.0.0.1 may not call {service} (trust file)"
        )),
        "{}",
        describe(&call)
    );
    assert_eq!(calls.load(Ordering::SeqCst), 0, "the handler ran");
    let act = Act::Call(service.into());
    let mine: Vec<Refusal> = trust::refusals()
        .into_iter()
        .filter(|r| r.act == act)
        .collect();
    assert_eq!(mine.len(), 1, "{mine:?}");
    assert_eq!(mine[0].address, loopback());
    assert_eq!(mine[0].count, 1, "{mine:?}");
    assert!(mine[0].caller_id.starts_with("/rosservice"), "{mine:?}");
    // Discovery (a `probe`) is answered all the same.
    let info = rosservice(&master, &["info", service]);
    let said = output(&info);
    assert!(
        info.status.success()
            && said.contains("Node: /trust_services")
            && said.contains("Type: std_srvs/SetBool"),
        "{}",
        describe(&info)
    );
    assert_eq!(trust::refusals().iter().filter(|r| r.act == act).count(), 1);
    // With no policy in force: served, and a service for this computer serves a caller
    // on it.
    trust::uninstall();
    assert!(trust::installed().is_none());
    let call = rosservice(&master, &["call", service, "data: true"]);
    assert!(
        call.status.success() && output(&call).contains("message: \"enabled\""),
        "{}",
        describe(&call)
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    let local_calls = Arc::new(AtomicUsize::new(0));
    let local = ros1_protocols::service::advertise_from_this_computer::<SetBool, _>(
        "/trust_test/local",
        enabling("served locally", &local_calls),
    )
    .expect("advertise");
    let call = rosservice(&master, &["call", "/trust_test/local", "data: true"]);
    let said = output(&call);
    assert!(
        call.status.success() && said.contains("success: True"),
        "{}",
        describe(&call)
    );
    assert!(said.contains("message: \"served locally\""), "{said}");
    assert_eq!(local_calls.load(Ordering::SeqCst), 1);
    assert_eq!(
        trust::refusals()
            .iter()
            .filter(|r| r.act == Act::Call("/trust_test/local".into()))
            .count(),
        0
    );
    drop((enable, local));
}
