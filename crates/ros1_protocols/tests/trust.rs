//! The trust file ([`ros1_protocols::trust`]) enforced against a real rosmaster and real
//! peers: `rostopic pub` publishing to a direct subscription, a node's slave API called by
//! Python's XML-RPC client and `rosnode kill`, the master's own `publisherUpdate` and
//! `shutdown` (a rospy node registering our node's name), `rosservice call` /
//! `rosservice info` on our services, and our service client sent by the master to a
//! server registered by another caller. Every peer here is on 127.0.0.1, so a policy that
//! does not name `self` (or 127.0.0.1) refuses them.
//!
//! The policy in force is process-wide: this file is a test binary of its own, its tests
//! run one at a time ([`serial`]) and each installs the policy it needs (or none,
//! [`trust::uninstall`]).

mod support;

use ros1_protocols::direct::{self, DirectSubscriber, RETRY_AFTER};
use ros1_protocols::msgs::std_msgs::String as Text;
use ros1_protocols::msgs::std_srvs::{SetBool, SetBoolReq, SetBoolRes};
use ros1_protocols::runtime::{Config, Node};
use ros1_protocols::service::{CallError, Client};
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

/// A rospy node named `name` (no `/`: in the root namespace), spinning until it is shut
/// down: prints `UP` once registered, then what it was told, then `ENDED`.
fn rospy_node(master: &Master, name: &str) -> Child {
    const NODE: &str = "import sys, rospy\n\
        rospy.init_node(sys.argv[1], disable_signals=True)\n\
        print('UP', flush=True)\n\
        rospy.spin()\n\
        print('ENDED', flush=True)";
    master
        .tool("/usr/bin/python3", &["-c", NODE, name])
        .spawn()
        .expect("python3")
}

/// A [`rospy_node`] registering `name`, a name of ours: waits until the master's `shutdown`
/// (asking our node to make way) is refused and the other process has ended; its output.
fn impostor_refused(master: &Master, name: &str) -> Output {
    let impostor = rospy_node(master, name);
    let shutdown = Act::NodeApi("shutdown".into());
    assert!(
        wait_until(PEER_WITHIN, || refusal_count(&shutdown, "/master") >= 1),
        "{:?}\n{}",
        trust::refusals(),
        support::logs()
    );
    support::finish(impostor, PEER_WITHIN)
}

#[test]
fn a_node_whose_name_another_process_registers_refuses_the_masters_shutdown_and_takes_it_back() {
    let _one = serial();
    let master = Master::start();
    // 127.0.0.1 (the master's host, and the other process's) may do anything but shut a
    // node down: the other process is an impostor, and the master's `shutdown` is refused.
    install("rules: [{hosts: [self], publish: ['*'], call: ['*'], serve: ['*'], node_api: true}]");
    let name = "/trust_named";
    let node = node(&master, name);
    let _publisher = node
        .advertise::<Text>("/trust_named_topic", 1, false)
        .expect("advertise");
    let _watch = node
        .watch_publishers("/trust_named_watched", "std_msgs/String", |_| {})
        .expect("watch");
    let asking = ros1_protocols::master_api::Master::new(&master.uri, "/trust_test", "");
    assert_eq!(asking.lookup_node(name).ok().as_deref(), Some(node.uri()));
    // A rospy node registers the name: the master drops our registrations and asks our
    // node to shut down; it refuses, registers again, and the master shuts the other down.
    let ended = impostor_refused(&master, "trust_named");
    let said = String::from_utf8_lossy(&ended.stdout);
    assert!(
        said.contains("UP")
            && said.contains(
                "shutdown request: [/trust_named] Reason: new node registered with same name"
            )
            && said.contains("ENDED"),
        "the other process was not shut down: {}",
        describe(&ended)
    );
    assert_eq!(node.shutdown_requested(), None, "our node goes on");
    // The name and the node's registrations are ours again.
    let ours = || {
        asking.lookup_node(name).ok().as_deref() == Some(node.uri())
            && asking.system_state().is_ok_and(|s| {
                s.publishers.iter().any(|t| {
                    t.name == "/trust_named_topic" && t.connections.iter().any(|n| n == name)
                }) && s.subscribers.iter().any(|t| {
                    t.name == "/trust_named_watched" && t.connections.iter().any(|n| n == name)
                })
            })
    };
    assert!(wait_until(PEER_WITHIN, ours), "{}", support::logs());
    assert_eq!(
        warned(&format!(
            "refused 127.0.0.1 (/master): node API shutdown; the master asks {name} to shut \
             down ([{name}] Reason: new node registered with same name): another process \
             registered this node's name at the master"
        )),
        1,
        "{}",
        support::logs()
    );
    assert!(
        warned(&format!(
            "{name}: another process registered this node's name at the master; took it back"
        )) >= 1,
        "{}",
        support::logs()
    );
    // A host the file lets shut nodes down: a newcomer there (a restart) takes over.
    install(
        "rules: [{hosts: [self], publish: ['*'], call: ['*'], serve: ['*'], node_api: true, \
         shutdown: true}]",
    );
    let successor = rospy_node(&master, "trust_named");
    assert!(
        wait_until(PEER_WITHIN, || node
            .shutdown_requested()
            .is_some_and(|why| why.contains("lets shut nodes down"))),
        "{:?}\n{}",
        node.shutdown_requested(),
        support::logs()
    );
    let _ = support::finish(successor, Duration::ZERO);
}

#[test]
fn rosnode_kill_from_a_host_with_shutdown_ends_a_node() {
    let _one = serial();
    let master = Master::start();
    install("rules: [{hosts: [self], node_api: true, shutdown: true}]");
    let name = "/trust_killed";
    let node = node(&master, name);
    // Registered with the master, so `rosnode` knows it.
    let _publisher = node
        .advertise::<Text>("/trust_killed_topic", 1, false)
        .expect("advertise");
    let kill = master.run("/usr/bin/rosnode", &["kill", name], PEER_WITHIN);
    assert!(kill.status.success(), "{}", describe(&kill));
    assert!(
        node.shutdown_requested()
            .is_some_and(|why| why.starts_with("/rosnode")),
        "{:?}",
        node.shutdown_requested()
    );
}

#[test]
fn this_processs_node_and_services_under_a_trust_file() {
    let _one = serial();
    let master = Master::start();
    let _this = ThisNode::start(&master);
    services_refuse_untrusted_callers_and_serve_this_computer(&master);
    clients_use_only_servers_the_trust_file_lets_serve(&master);
    the_node_takes_its_name_and_services_back(&master);
}

fn services_refuse_untrusted_callers_and_serve_this_computer(master: &Master) {
    // 127.0.0.1 may publish and change a node, not call a service.
    install("rules: [{hosts: [self], publish: ['*'], node_api: true}]");
    let calls = Arc::new(AtomicUsize::new(0));
    let service = "/trust_test/enable";
    let enable =
        ros1_protocols::service::advertise::<SetBool, _>(service, enabling("enabled", &calls))
            .expect("advertise");
    assert_eq!(enable.name(), service);
    let call = rosservice(master, &["call", service, "data: true"]);
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
    let info = rosservice(master, &["info", service]);
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
    let call = rosservice(master, &["call", service, "data: true"]);
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
    let call = rosservice(master, &["call", "/trust_test/local", "data: true"]);
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

/// A server that takes connections and is sent nothing: for each connection, the bytes it
/// was sent before the caller closed it.
fn silent_server() -> (u16, Receiver<usize>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("port").port();
    let (tx, sent) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let _ = stream.set_read_timeout(Some(PEER_WITHIN));
            let mut got = Vec::new();
            let _ = std::io::Read::read_to_end(&mut stream, &mut got);
            if tx.send(got.len()).is_err() {
                return;
            }
        }
    });
    (port, sent)
}

fn clients_use_only_servers_the_trust_file_lets_serve(master: &Master) {
    // 127.0.0.1 may serve /trust_test/enable only.
    install(
        "rules: [{hosts: [self], publish: ['*'], call: ['*'], serve: [/trust_test/enable], \
         node_api: true}]",
    );
    let calls = Arc::new(AtomicUsize::new(0));
    let enable = ros1_protocols::service::advertise::<SetBool, _>(
        "/trust_test/enable",
        enabling("enabled", &calls),
    )
    .expect("advertise");
    let req = SetBoolReq { data: true };
    let within = Duration::from_secs(5);
    let client = Client::<SetBool>::new("/trust_test/enable").expect("client");
    let res = client
        .call(&req, within)
        .expect("a server the file lets serve");
    assert_eq!(res.message, "enabled");
    // Another caller registers a server of a service our node calls (any host can, at
    // the master): the client connects, sends nothing, and fails.
    let (port, sent) = silent_server();
    let impostor =
        ros1_protocols::master_api::Master::new(&master.uri, "/impostor", "http://127.0.0.1:9/");
    let uri = format!("rosrpc://127.0.0.1:{port}");
    impostor
        .register_service("/trust_test/hijacked", &uri)
        .expect("registerService");
    let hijacked = Client::<SetBool>::new("/trust_test/hijacked").expect("client");
    let refused = || CallError::Failed {
        service: "/trust_test/hijacked".into(),
        reason: "refused: 127.0.0.1 may not serve /trust_test/hijacked (trust file)".into(),
    };
    assert_eq!(hijacked.call(&req, within), Err(refused()));
    assert_eq!(sent.recv_timeout(PEER_WITHIN), Ok(0), "sent to the server");
    let serve = Act::Serve("/trust_test/hijacked".into());
    assert_eq!(refusal_count(&serve, &uri), 1, "{:?}", trust::refusals());
    assert_eq!(
        warned(&format!(
            "refused 127.0.0.1 ({uri}): serve /trust_test/hijacked; not allowed by the trust \
             file (a rule naming 127.0.0.1 with `serve: [/trust_test/hijacked]` would allow it)"
        )),
        1,
        "{}",
        support::logs()
    );
    // Each call asks the master again (it may have a new server by then), once.
    assert_eq!(hijacked.call(&req, within), Err(refused()));
    assert_eq!(sent.recv_timeout(PEER_WITHIN), Ok(0));
    assert_eq!(refusal_count(&serve, &uri), 2);
    assert!(sent.try_recv().is_err(), "connected more than once a call");
    // A file without `serve:` (one written before it existed) lets no server serve: a
    // client connecting anew is refused our own service too.
    install("rules: [{hosts: [self], publish: ['*'], call: ['*'], node_api: true}]");
    let fresh = Client::<SetBool>::new("/trust_test/enable").expect("client");
    let e = fresh.call(&req, within).unwrap_err();
    assert_eq!(
        e.to_string(),
        "/trust_test/enable: refused: 127.0.0.1 may not serve /trust_test/enable (trust file)"
    );
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "only the first call was served"
    );
    // With no trust file, any server.
    trust::uninstall();
    assert_eq!(
        fresh.call(&req, within).map(|r| r.message).as_deref(),
        Ok("enabled")
    );
    drop(enable);
}

fn the_node_takes_its_name_and_services_back(master: &Master) {
    install("rules: [{hosts: [self], publish: ['*'], call: ['*'], serve: ['*'], node_api: true}]");
    let calls = Arc::new(AtomicUsize::new(0));
    let kept = ros1_protocols::service::advertise::<SetBool, _>(
        "/trust_test/kept",
        enabling("kept", &calls),
    )
    .expect("advertise");
    // The watch takes the name back (it also registers the services).
    ros1_protocols::master::watch();
    let name = ros1_protocols::this_node::name();
    assert_eq!(name, "/trust_services");
    let ended = impostor_refused(master, "trust_services");
    assert!(
        String::from_utf8_lossy(&ended.stdout).contains("ENDED"),
        "the other process was not shut down: {}",
        describe(&ended)
    );
    assert!(ros1_protocols::this_node::is_ok(), "our node goes on");
    let asking = ros1_protocols::master_api::Master::new(&master.uri, "/trust_test", "");
    let ours = || {
        asking.lookup_node(&name).ok() == Some(ros1_protocols::this_node::uri())
            && asking.lookup_service("/trust_test/kept").ok().as_deref() == Some(kept.uri())
            && asking.system_state().is_ok_and(|s| {
                s.publishers
                    .iter()
                    .any(|t| t.name == "/rosout" && t.connections.contains(&name))
            })
    };
    assert!(wait_until(PEER_WITHIN, ours), "{}", support::logs());
    assert!(
        warned("another process registered this node's name at the ROS master") >= 1,
        "{}",
        support::logs()
    );
    let call = rosservice(master, &["call", "/trust_test/kept", "data: true"]);
    assert!(
        call.status.success() && output(&call).contains("message: \"kept\""),
        "{}",
        describe(&call)
    );
    // Another process under the name serving the same service (a second copy of the
    // node): what the master lists under the name before the node registers again is
    // the other's, and the node's own service is registered again all the same.
    let shutdown = Act::NodeApi("shutdown".into());
    let before = refusal_count(&shutdown, "/master");
    let copy = ros1_protocols::master_api::Master::new(&master.uri, &name, "http://127.0.0.1:9/");
    copy.register_service("/trust_test/kept", "rosrpc://127.0.0.1:9")
        .expect("registerService");
    assert!(
        wait_until(PEER_WITHIN, || refusal_count(&shutdown, "/master") > before),
        "{}",
        support::logs()
    );
    assert!(wait_until(PEER_WITHIN, ours), "{}", support::logs());
    let call = rosservice(master, &["call", "/trust_test/kept", "data: true"]);
    assert!(
        call.status.success() && output(&call).contains("message: \"kept\""),
        "{}",
        describe(&call)
    );
    drop(kept);
}
