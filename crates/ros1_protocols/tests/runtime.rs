//! The node runtime against a real rosmaster, rospy and ROS's command-line tools: linking,
//! latching, peers that stall or flood the TCPROS port or the slave API, `publisherUpdate`,
//! and what an idle node costs.

mod support;

use ros1_protocols::msgs::std_msgs::String as Text;
use ros1_protocols::runtime::{Config, Node, Publisher};
use ros1_protocols::xmlrpc::{xmlrpc_call, SLAVE_CALL_WITHIN};
use std::io::Write;
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::{serial, wait_until, warned, Master};
use xml_rpc::Value;

fn node(master: &Master, name: &str) -> Node {
    Node::start(name, Config::new(master.uri.clone(), "127.0.0.1")).expect("start the node")
}

fn text(data: &str) -> Text {
    Text { data: data.into() }
}

/// Sends on `publisher` every 50 ms (a topic's regular traffic) until dropped.
struct Ticker {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Ticker {
    fn start(publisher: Publisher<Text>) -> Ticker {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut n = 0u64;
            while !s.load(Ordering::SeqCst) {
                publisher.send(text(&format!("tick {n}"))).expect("send");
                n += 1;
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        Ticker {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A test's master and node, publishing `topic` every 50 ms; dropped in this order.
struct Bed {
    _ticker: Ticker,
    node: Node,
    master: Master,
    addr: (String, u16),
    _one: std::sync::MutexGuard<'static, ()>,
}

/// This test's turn, a master of its own and node `name` on it (dropped in the reverse
/// order when bound as `let (_one, master, node) = begin(..)`).
fn begin(name: &str) -> (std::sync::MutexGuard<'static, ()>, Master, Node) {
    let one = serial();
    let master = Master::start();
    let node = node(&master, name);
    (one, master, node)
}

/// [`begin`], with the node ticking on `topic`, and the topic's TCPROS endpoint as
/// `requestTopic` gives it.
fn ticking(name: &str, topic: &str) -> Bed {
    let (one, master, node) = begin(name);
    let ticker = Ticker::start(node.advertise::<Text>(topic, 10, false).unwrap());
    let addr = tcpros_endpoint(&node, topic);
    Bed {
        _ticker: ticker,
        node,
        master,
        addr,
        _one: one,
    }
}

/// A slave API call as another node makes it; its `[code, message, value]`.
fn slave(node: &Node, method: &str, args: &[Value]) -> Vec<Value> {
    let mut params = vec![Value::String("/tester".into())];
    params.extend_from_slice(args);
    xmlrpc_call(node.uri(), method, params, SLAVE_CALL_WITHIN)
        .unwrap_or_else(|e| panic!("{method}: {e}"))
}

/// The TCPROS endpoint `requestTopic` gives for `topic`.
fn tcpros_endpoint(node: &Node, topic: &str) -> (String, u16) {
    let protocols = Value::Array(vec![Value::Array(vec![Value::String("TCPROS".into())])]);
    let answer = slave(
        node,
        "requestTopic",
        &[Value::String(topic.into()), protocols],
    );
    match answer.as_slice() {
        [Value::Int(1), _, Value::Array(p)] => match p.as_slice() {
            [Value::String(proto), Value::String(host), Value::Int(port)] if proto == "TCPROS" => {
                (host.clone(), *port as u16)
            }
            other => panic!("requestTopic: {other:?}"),
        },
        other => panic!("requestTopic: {other:?}"),
    }
}

/// `rostopic pub -r 20 topic std_msgs/String data` (rospy), until [`interrupt`]ed.
fn rostopic_pub(master: &Master, topic: &str, data: &str) -> std::process::Child {
    master
        .tool(
            "/usr/bin/rostopic",
            &["pub", "-r", "20", topic, "std_msgs/String", data],
        )
        .spawn()
        .expect("rostopic pub")
}

/// Interrupts a tool started by [`Master::tool`] and waits for it.
fn interrupt(tool: std::process::Child) {
    // SAFETY: interrupting the process group we started.
    unsafe { libc::kill(-(tool.id() as i32), libc::SIGINT) };
    support::finish(tool, Duration::from_secs(10));
}

#[test]
fn rospy_and_rostopic_receive_and_latching_holds() {
    let (_one, master, node) = begin("/rt_latch");
    let latched = node
        .advertise::<Text>("latched", 1, true)
        .expect("advertise");
    latched.send(text("first")).unwrap();
    latched.send(text("hello latched")).unwrap();
    let echo = master.run(
        "/usr/bin/rostopic",
        &["echo", "-n", "1", "/latched"],
        Duration::from_secs(20),
    );
    let out = String::from_utf8_lossy(&echo.stdout);
    assert!(
        out.contains("data: \"hello latched\""),
        "{}",
        support::describe(&echo)
    );
    let (link, _, data, _) = master
        .first_message("/latched", Duration::from_secs(5))
        .expect("rospy gets the latched message");
    assert_eq!(data, "hello latched");
    println!("latched: rospy had the message {link:.3} s after subscribing");
    // A topic that is not latched: a subscriber gets the traffic from its link on.
    let _ticker = Ticker::start(node.advertise::<Text>("/chatter", 10, false).unwrap());
    let (link, _, data, _) = master
        .first_message("/chatter", Duration::from_secs(5))
        .expect("rospy gets the traffic");
    assert!(data.starts_with("tick "), "{data}");
    println!("chatter: rospy had a message {link:.3} s after subscribing");
    let publications = slave(&node, "getPublications", &[]);
    assert!(
        format!("{publications:?}").contains("/latched"),
        "{publications:?}"
    );
}

/// A peer that connected and misbehaves; closed (or stopped) when dropped.
enum Stall {
    Silent(#[allow(dead_code)] TcpStream),
    Slow(Arc<AtomicBool>),
}

impl Drop for Stall {
    fn drop(&mut self) {
        if let Stall::Slow(stop) = self {
            stop.store(true, Ordering::SeqCst);
        }
    }
}

fn connect(addr: &(String, u16)) -> TcpStream {
    TcpStream::connect((addr.0.as_str(), addr.1)).expect("connect")
}

/// A valid subscriber header for `topic`.
fn header(topic: &str) -> Vec<u8> {
    header_with(topic, "*")
}

/// A subscriber header for `topic` with `md5sum`.
fn header_with(topic: &str, md5sum: &str) -> Vec<u8> {
    let fields = [
        "callerid=/raw_peer".to_owned(),
        format!("topic={topic}"),
        format!("md5sum={md5sum}"),
        "type=std_msgs/String".into(),
    ];
    let mut body = Vec::new();
    for f in fields {
        body.extend_from_slice(&(f.len() as u32).to_le_bytes());
        body.extend_from_slice(f.as_bytes());
    }
    let mut out = (body.len() as u32).to_le_bytes().to_vec();
    out.extend(body);
    out
}

/// Opens one case's misbehaving connections.
type MakeStalls<'a> = Box<dyn Fn() -> Vec<Stall> + 'a>;

/// Sends `bytes` one a second on a new connection to `addr`, until stopped.
fn slow(addr: &(String, u16), bytes: Vec<u8>) -> Stall {
    let mut s = connect(addr);
    let stop = Arc::new(AtomicBool::new(false));
    let stopped = stop.clone();
    std::thread::spawn(move || {
        for b in bytes {
            if stopped.load(Ordering::SeqCst) || s.write_all(&[b]).is_err() {
                return;
            }
            // The peer's pace, not a synchronisation.
            std::thread::sleep(Duration::from_secs(1));
        }
    });
    Stall::Slow(stop)
}

#[test]
fn stalled_peers_do_not_hold_up_a_fresh_subscriber() {
    let topic = "/system_state_like";
    let bed = ticking("/rt_stall", topic);
    let (master, addr) = (&bed.master, &bed.addr);
    let cases: [(&str, MakeStalls); 4] = [
        (
            "5 silent connections",
            Box::new(|| (0..5).map(|_| Stall::Silent(connect(addr))).collect()),
        ),
        (
            "5 connections with half a header",
            Box::new(|| {
                (0..5)
                    .map(|_| {
                        let mut s = connect(addr);
                        let h = header(topic);
                        s.write_all(&h[..h.len() / 2]).unwrap();
                        Stall::Silent(s)
                    })
                    .collect()
            }),
        ),
        (
            "a header at 1 byte a second",
            Box::new(|| vec![slow(addr, header(topic))]),
        ),
        (
            "a 4 GiB length prefix",
            Box::new(|| {
                let mut s = connect(addr);
                s.write_all(&u32::MAX.to_le_bytes()).unwrap();
                vec![Stall::Silent(s)]
            }),
        ),
    ];
    // Every stalled peer stays connected until its deadline has passed.
    let mut stalled = Vec::new();
    for (case, stall) in &cases {
        stalled.push(stall());
        let (link, from_start, _, times) = master
            .first_message(topic, Duration::from_secs(5))
            .unwrap_or_else(|e| panic!("{case}: {e}"));
        println!("{case}: a fresh rospy subscriber had a message {link:.3} s after subscribing ({from_start:.3} s after its process started)");
        assert!(
            link < 1.0,
            "{case}: {link} s\nsubscriber: {times}\nnode: {}",
            support::logs()
        );
    }
    // Each stalled peer was closed at its deadline and logged once, naming its address.
    assert!(
        wait_until(Duration::from_secs(5), || warned(
            "no complete handshake within"
        ) >= 11),
        "{}",
        support::logs()
    );
    assert_eq!(
        warned("no complete handshake within"),
        11,
        "{}",
        support::logs()
    );
    assert_eq!(warned("TCPROS peer 127.0.0.1:"), 12, "{}", support::logs());
    assert_eq!(
        warned("a connection header of 4294967295 bytes"),
        1,
        "{}",
        support::logs()
    );
    drop(stalled);
}

#[test]
fn a_flood_of_connections_is_capped_and_a_fresh_subscriber_links_after_it() {
    let topic = "/flooded";
    let bed = ticking("/rt_flood", topic);
    let (master, node, addr) = (&bed.master, &bed.node, &bed.addr);
    let rss = || {
        std::fs::read_to_string("/proc/self/status")
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:").map(|v| v.trim().to_owned()))
            .unwrap_or_default()
    };
    let before = rss();
    // 2,000 connections at once, from 8 threads.
    let flood: Vec<TcpStream> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..8)
            .map(|_| {
                s.spawn(|| {
                    (0..250)
                        .filter_map(|_| {
                            let a = std::net::SocketAddr::from(([127, 0, 0, 1], addr.1));
                            TcpStream::connect_timeout(&a, Duration::from_secs(5)).ok()
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    println!(
        "flood: {} connections open (RSS {before} before)",
        flood.len()
    );
    assert!(flood.len() >= 1900, "{}", flood.len());
    assert!(
        wait_until(Duration::from_secs(5), || warned("the most allowed") >= 1),
        "{}",
        support::logs()
    );
    println!("flood: RSS {} during", rss());
    // A subscriber whose node is up, subscribing the moment the flood ends.
    let subscriber = master.ready_subscriber(topic);
    drop(flood);
    let took = subscriber.go().expect("a fresh subscriber after the flood");
    println!(
        "after the flood: a fresh rospy subscriber had a message {took:.3?} after the flood ended"
    );
    assert!(took < Duration::from_secs(2), "{took:?}");
    // Still answering.
    let pid = slave(node, "getPid", &[]);
    assert_eq!(pid[0], Value::Int(1));
    assert_eq!(
        warned("the most allowed"),
        warned("TCPROS: 256 connections open")
    );
}

#[test]
fn a_stalled_xmlrpc_caller_holds_up_no_other() {
    let (_one, master, node) = begin("/rt_slave");
    let _latched = {
        let p = node.advertise::<Text>("/slave_topic", 1, true).unwrap();
        p.send(text("x")).unwrap();
        p
    };
    let port: u16 = node
        .uri()
        .trim_end_matches('/')
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("port in the URI");
    let addr = ("127.0.0.1".to_owned(), port);
    let mut silent = connect(&addr);
    let _slow_head = slow(
        &addr,
        b"POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\n".to_vec(),
    );
    let mut huge = connect(&addr);
    huge.write_all(b"POST / HTTP/1.1\r\nContent-Length: 4294967296\r\n\r\n")
        .unwrap();
    let mut slow_body = connect(&addr);
    slow_body
        .write_all(b"POST / HTTP/1.1\r\nContent-Length: 1000000\r\n\r\n<?xml")
        .unwrap();
    for _ in 0..3 {
        let started = Instant::now();
        let pid = slave(&node, "getPid", &[]);
        assert_eq!(pid[2], Value::Int(std::process::id() as i32));
        let endpoint = tcpros_endpoint(&node, "/slave_topic");
        assert_eq!(endpoint.1, node.tcpros_port());
        let took = started.elapsed();
        println!("getPid and requestTopic beside 4 stalled callers: {took:?}");
        assert!(took < Duration::from_millis(500), "{took:?}");
    }
    // The huge one is refused at once.
    let mut answer = String::new();
    huge.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let _ = std::io::Read::read_to_string(&mut huge, &mut answer);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer:?}");
    let info = master.run(
        "/usr/bin/rosnode",
        &["info", "/rt_slave"],
        Duration::from_secs(20),
    );
    let out = String::from_utf8_lossy(&info.stdout);
    assert!(info.status.success(), "{}", support::describe(&info));
    assert!(
        out.contains(&format!("Pid: {}", std::process::id())),
        "{out}"
    );
    assert!(out.contains("/slave_topic"), "{out}");
    let ping = master.run(
        "/usr/bin/rosnode",
        &["ping", "-c", "1", "/rt_slave"],
        Duration::from_secs(20),
    );
    assert!(
        ping.status.success() && String::from_utf8_lossy(&ping.stdout).contains("reply from"),
        "{}",
        support::describe(&ping)
    );
    // The silent caller is closed at its deadline.
    silent
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut buf = [0u8; 16];
    let started = Instant::now();
    let n = std::io::Read::read(&mut silent, &mut buf).unwrap_or(0);
    assert_eq!(n, 0, "closed without an answer");
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[test]
fn publisher_update_reaches_a_watch() {
    let (_one, master, node) = begin("/rt_watch");
    let (tx, rx) = std::sync::mpsc::channel::<Vec<String>>();
    let tx = std::sync::Mutex::new(tx);
    let _watch = node
        .watch_publishers("/watched", "std_msgs/String", move |p| {
            let _ = tx.lock().unwrap().send(p.to_vec());
        })
        .expect("watch");
    assert_eq!(
        rx.recv_timeout(Duration::from_secs(1)).unwrap(),
        Vec::<String>::new()
    );
    let subscriptions = slave(&node, "getSubscriptions", &[]);
    assert!(format!("{subscriptions:?}").contains("/watched"));
    let publisher = master
        .tool(
            "/usr/bin/rostopic",
            &["pub", "/watched", "std_msgs/String", "data: x"],
        )
        .spawn()
        .expect("rostopic pub");
    let listed = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("publisherUpdate");
    assert_eq!(listed.len(), 1, "{listed:?}");
    // SAFETY: interrupting the process group we started; rostopic unregisters on SIGINT.
    unsafe { libc::kill(-(publisher.id() as i32), libc::SIGINT) };
    let listed = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("publisherUpdate");
    assert!(listed.is_empty(), "{listed:?}");
    support::finish(publisher, Duration::from_secs(5));
}

/// Per thread of this process: CPU time run (ns, from `schedstat`) and context switches
/// (wake-ups), by thread id.
fn usage() -> std::collections::HashMap<String, (u64, u64)> {
    let mut threads = std::collections::HashMap::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let read = |f: &str| std::fs::read_to_string(task.path().join(f)).unwrap_or_default();
        let ran = read("schedstat")
            .split_whitespace()
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        let switches = read("status")
            .lines()
            .filter(|l| l.contains("ctxt_switches"))
            .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
            .sum();
        threads.insert(
            task.file_name().to_string_lossy().into_owned(),
            (ran, switches),
        );
    }
    threads
}

/// What the threads alive at the end of a window used during it (a thread started in it
/// counts whole).
fn used(
    before: &std::collections::HashMap<String, (u64, u64)>,
    after: &std::collections::HashMap<String, (u64, u64)>,
) -> (u64, u64) {
    after.iter().fold((0, 0), |(ran, switches), (tid, (r, s))| {
        let (r0, s0) = before.get(tid).copied().unwrap_or((0, 0));
        (ran + r.saturating_sub(r0), switches + s.saturating_sub(s0))
    })
}

#[test]
fn an_idle_node_sleeps() {
    let (_one, master, node) = begin("/rt_idle");
    let publisher = node.advertise::<Text>("/idle", 1, true).unwrap();
    publisher.send(text("once")).unwrap();
    let subscriber = master.lingering_subscriber("/idle", Duration::from_secs(15));
    // And a subscriber on the runtime, in another node of this process.
    let listener = Node::start(
        "/rt_idle_listener",
        Config::new(master.uri.clone(), "127.0.0.1"),
    )
    .unwrap();
    let _direct =
        ros1_protocols::direct::subscribe_on::<Text>(&listener, "/idle", |_| {}, |_, _, _| {})
            .unwrap();
    assert!(publisher.wait_for_subscribers(2, Duration::from_secs(10)));
    let window = Duration::from_secs(10);
    let before = usage();
    // The measurement window itself.
    std::thread::sleep(window);
    let (ran, switches) = used(&before, &usage());
    let cpu = ran as f64 / 1e9 / window.as_secs_f64() * 100.0;
    let wakeups = switches as f64 / window.as_secs_f64();
    let threads = std::fs::read_dir("/proc/self/task").unwrap().count();
    println!("idle node with a rospy subscriber and a runtime subscriber linked, over {window:?}: CPU {cpu:.4} % of a core, {wakeups:.1} wake-ups/s ({threads} threads in the test process)");
    assert_eq!(publisher.subscriber_count(), 2);
    assert!(cpu <= 0.3, "{cpu} %");
    assert!(wakeups <= 50.0, "{wakeups}/s");
    drop(support::finish(subscriber, Duration::from_secs(20)));
}

/// A subscriber that speaks TCPROS by hand: sends `header`, returns the publisher's header
/// as text (`key=value` fields joined by newlines) and the open connection.
fn raw_subscriber(addr: &(String, u16), header: &[u8]) -> (String, TcpStream) {
    let mut s = connect(addr);
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(header).unwrap();
    let mut len = [0u8; 4];
    std::io::Read::read_exact(&mut s, &mut len).unwrap();
    let mut body = vec![0u8; u32::from_le_bytes(len) as usize];
    std::io::Read::read_exact(&mut s, &mut body).unwrap();
    let mut fields = Vec::new();
    let mut rest = body.as_slice();
    while rest.len() >= 4 {
        let n = u32::from_le_bytes(rest[..4].try_into().unwrap()) as usize;
        fields.push(String::from_utf8_lossy(&rest[4..4 + n]).into_owned());
        rest = &rest[4 + n..];
    }
    (fields.join("\n"), s)
}

#[test]
fn a_wrong_type_an_unknown_topic_and_a_full_topic_are_refused() {
    let _one = serial();
    let master = Master::start();
    let mut config = Config::new(master.uri.clone(), "127.0.0.1");
    config.max_links_per_publisher = 2;
    let node = Node::start("/rt_refuse", config).unwrap();
    let publisher = node.advertise::<Text>("/capped", 1, true).unwrap();
    publisher.send(text("kept")).unwrap();
    let addr = tcpros_endpoint(&node, "/capped");
    let md5 = <Text as rosrust::Message>::md5sum();
    let (first, a) = raw_subscriber(&addr, &header_with("/capped", &md5));
    for field in [
        "callerid=/rt_refuse",
        "topic=/capped",
        "type=std_msgs/String",
        "latching=1",
        &format!("md5sum={md5}"),
        "message_definition=string data",
    ] {
        assert!(first.contains(field), "{field} in {first}");
    }
    let (_, _b) = raw_subscriber(&addr, &header("/capped"));
    assert!(publisher.wait_for_subscribers(2, Duration::from_secs(2)));
    let (third, _c) = raw_subscriber(&addr, &header("/capped"));
    assert!(
        third.starts_with("error=") && third.contains("the most allowed"),
        "{third}"
    );
    assert_eq!(
        warned("/rt_refuse: /capped: 2 connections open"),
        1,
        "{}",
        support::logs()
    );
    let (wrong, _) = raw_subscriber(
        &addr,
        &header_with("/capped", "0123456789abcdef0123456789abcdef"),
    );
    assert!(wrong.starts_with("error="), "{wrong}");
    let (unknown, _) = raw_subscriber(&addr, &header("/nobody"));
    assert!(unknown.starts_with("error="), "{unknown}");
    assert_eq!(publisher.subscriber_count(), 2);
    // A subscriber that leaves frees its place at once, with no message sent meanwhile.
    drop(a);
    assert!(wait_until(Duration::from_secs(2), || publisher
        .subscriber_count()
        == 1));
    let (again, _d) = raw_subscriber(&addr, &header("/capped"));
    assert!(again.contains("latching=1"), "{again}");
}

#[test]
fn a_roscpp_subscriber_records_from_the_runtime() {
    let bed = ticking("/rt_bag", "/recorded");
    let master = &bed.master;
    let bag = std::env::temp_dir().join(format!("rt_bag_{}.bag", std::process::id()));
    let bag = bag.to_string_lossy().into_owned();
    let record = master.run(
        "/usr/bin/rosbag",
        &["record", "-l", "3", "-O", &bag, "/recorded"],
        Duration::from_secs(20),
    );
    assert!(record.status.success(), "{}", support::describe(&record));
    let info = master.run("/usr/bin/rosbag", &["info", &bag], Duration::from_secs(20));
    let out = String::from_utf8_lossy(&info.stdout).into_owned();
    let _ = std::fs::remove_file(&bag);
    assert!(
        out.contains("messages:    3"),
        "{}",
        support::describe(&info)
    );
    assert!(out.contains("std_msgs/String"), "{out}");
}

#[test]
fn a_second_node_of_the_same_name_shuts_the_first_down() {
    let (_one, master, first) = begin("/rt_twice");
    let _p = first.advertise::<Text>("/twice_a", 1, false).unwrap();
    assert_eq!(first.shutdown_requested(), None);
    let second = node(&master, "/rt_twice");
    let _q = second.advertise::<Text>("/twice_b", 1, false).unwrap();
    let why = first
        .wait_shutdown_request(Duration::from_secs(10))
        .expect("the master shuts the first down");
    println!("the first node was asked to shut down: {why}");
    assert_eq!(second.shutdown_requested(), None);
}

#[test]
fn a_direct_subscriber_on_the_runtime_links_when_the_master_says() {
    let (_one, master, node) = begin("/rt_direct");
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let tx = std::sync::Mutex::new(tx);
    let subscriber = ros1_protocols::direct::subscribe_on::<Text>(
        &node,
        "/fed",
        |_| {},
        move |m, _, _| {
            let _ = tx.lock().unwrap().send(m.data);
        },
    )
    .expect("subscribe");
    // A publisher of our own on another node: linked on the master's publisherUpdate.
    let other = Node::start("/rt_feeder", Config::new(master.uri.clone(), "127.0.0.1")).unwrap();
    let started = Instant::now();
    let feeder = other.advertise::<Text>("/fed", 10, true).unwrap();
    feeder.send(text("from the runtime")).unwrap();
    assert_eq!(
        rx.recv_timeout(Duration::from_secs(5)).as_deref(),
        Ok("from the runtime")
    );
    println!(
        "runtime to runtime: first message {:?} after advertising",
        started.elapsed()
    );
    let info = slave(&node, "getBusInfo", &[]);
    let text_info = format!("{info:?}");
    assert!(
        text_info.contains("String(\"i\")") && text_info.contains("/rt_feeder"),
        "{text_info}"
    );
    let rosnode = master.run(
        "/usr/bin/rosnode",
        &["info", "/rt_direct"],
        Duration::from_secs(20),
    );
    let out = String::from_utf8_lossy(&rosnode.stdout).into_owned();
    assert!(
        out.contains("direction: inbound"),
        "{}",
        support::describe(&rosnode)
    );
    // The publisher goes (unregistered), then a rospy one comes: linked again.
    drop(feeder);
    assert!(wait_until(Duration::from_secs(5), || subscriber
        .publisher_count()
        == 0));
    let rostopic = rostopic_pub(&master, "/fed", "data: from rostopic");
    let got = rx.recv_timeout(Duration::from_secs(15));
    interrupt(rostopic);
    assert_eq!(
        got.as_deref(),
        Ok("from rostopic"),
        "{}",
        subscriber.link_report()
    );
}

#[test]
fn a_polled_group_reads_bursts_on_two_topics_with_one_thread_and_links_again() {
    let (_one, master, node) = begin("/rt_polled");
    let group = Arc::new(ros1_protocols::polled::PolledGroup::new().expect("group"));
    let (tx, rx) = std::sync::mpsc::channel::<(String, String, std::thread::ThreadId)>();
    let subscribe = |topic: &'static str| {
        let tx = tx.clone();
        group
            .subscribe_on::<Text>(&node, topic, move |m, _, _| {
                let _ = tx.send((topic.to_owned(), m.data, std::thread::current().id()));
            })
            .expect("subscribe")
    };
    let (a, b) = (subscribe("/burst_a"), subscribe("/burst_b"));
    // The group's thread, with a turn that only looks for the end of the test.
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let (group, stop) = (group.clone(), stop.clone());
        std::thread::spawn(move || {
            group.run(|| {
                (!stop.load(Ordering::SeqCst)).then(|| ros1_protocols::clock::Sleep {
                    within: Duration::from_millis(100),
                    watch: Vec::new(),
                })
            })
        })
    };
    let feeder = Node::start("/rt_burster", Config::new(master.uri.clone(), "127.0.0.1")).unwrap();
    let pub_a = feeder.advertise::<Text>("/burst_a", 10, false).unwrap();
    let pub_b = feeder.advertise::<Text>("/burst_b", 10, false).unwrap();
    assert!(wait_until(Duration::from_secs(10), || a.publisher_count()
        == 1
        && b.publisher_count() == 1));
    // 50 bursts of one message on each topic, as a node publishing its inputs together.
    for i in 0..50 {
        pub_a.send(text(&format!("{i}"))).unwrap();
        pub_b.send(text(&format!("{i}"))).unwrap();
    }
    let mut got: std::collections::HashMap<String, Vec<String>> = Default::default();
    let mut threads = std::collections::HashSet::new();
    while got.values().map(Vec::len).sum::<usize>() < 100 {
        let (topic, data, thread) = rx
            .recv_timeout(Duration::from_secs(5))
            .unwrap_or_else(|_| panic!("only {got:?}"));
        got.entry(topic).or_default().push(data);
        threads.insert(thread);
    }
    let expected: Vec<String> = (0..50).map(|i| i.to_string()).collect();
    assert_eq!(got["/burst_a"], expected, "in order, none lost");
    assert_eq!(got["/burst_b"], expected, "in order, none lost");
    assert_eq!(threads.len(), 1, "one thread reads the group");
    // The publisher of one topic goes; a rospy one comes: linked again, read by the group.
    drop(pub_a);
    assert!(wait_until(Duration::from_secs(5), || a.publisher_count() == 0));
    let rostopic = rostopic_pub(&master, "/burst_a", "data: again");
    let again = loop {
        match rx.recv_timeout(Duration::from_secs(15)) {
            Ok((topic, data, thread)) if topic == "/burst_a" => break Some((data, thread)),
            Ok(_) => continue,
            Err(_) => break None,
        }
    };
    interrupt(rostopic);
    let (data, thread) = again.expect("the new publisher's messages");
    assert_eq!(data, "again");
    assert!(threads.contains(&thread), "still the group's thread");
    drop((a, b));
    stop.store(true, Ordering::SeqCst);
    reader
        .join()
        .expect("the group's thread ends with its turn");
}
