//! `gemctl replay`: plays a ROS 1 bag into a live system either in lockstep (bursts of
//! `--burst` messages, each followed by a wait until every registered consumer has
//! processed what it was sent) or in real time (`--rate`).
//!
//! Consumers register themselves on the latched topic `/replay/ready`
//! (`std_msgs/Header`: `frame_id` = the node's name, `seq` = how many input messages it has
//! handled so far; `gem_ros::processed::Acks` does this for our nodes). The replayer
//! learns from the master which replayed topics each consumer subscribes to, so it knows
//! how many acknowledgements to expect from whom; a consumer that does not catch up within
//! `--ack-timeout` gets a warning, never a hang. Before the first message it waits until
//! every subscriber the master lists is connected (no start-up loss), and every `/clock`
//! subscriber too, holding `/clock` at the bag's first instant until each has received it
//! (a sim-time consumer would otherwise see ROS time 0 in its first callback). Each topic is
//! published with its recorded type, definition, MD5 and latching, and `/clock` follows
//! the bag's time, so the consumers' ROS time is the recording's.

use anyhow::{anyhow, Context};
use gem_core::names;
use gem_msgs::rosgraph_msgs::Clock;
use gem_msgs::std_msgs::Header;
use ros1_protocols::Lock;
use rosbag::{ChunkRecord, MessageRecord, RosBag};
use rosrust::{RawMessage, RawMessageDescription};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct Args {
    /// The bag.
    bag: PathBuf,
    /// Lockstep: messages per burst before waiting for the consumers.
    #[arg(long, default_value_t = 1)]
    burst: usize,
    /// Real time instead of lockstep: play at this multiple of the recorded rate.
    #[arg(long)]
    rate: Option<f64>,
    /// Seconds a consumer may lag behind a burst before a warning and moving on.
    #[arg(long, default_value_t = 5.0)]
    ack_timeout: f64,
    /// Consumers (node names) that must register before the first message.
    #[arg(long = "consumer")]
    consumers: Vec<String>,
    /// Seconds to wait for the consumers and the subscribers before starting.
    #[arg(long, default_value_t = 20.0)]
    wait: f64,
    /// Topics to play (default: all).
    #[arg(long = "topic")]
    topics: Vec<String>,
    /// Do not publish /clock.
    #[arg(long)]
    no_clock: bool,
}

struct Recorded {
    topic: String,
    time_ns: u64,
    data: Vec<u8>,
}

struct Topic {
    description: RawMessageDescription,
    latching: bool,
}

/// Every message of the wanted topics in time order, and each topic's description.
fn read(args: &Args) -> anyhow::Result<(Vec<Recorded>, BTreeMap<String, Topic>)> {
    let bag =
        RosBag::new(&args.bag).with_context(|| format!("cannot open {}", args.bag.display()))?;
    let mut conns: HashMap<u32, String> = HashMap::new();
    let mut topics = BTreeMap::new();
    let mut messages = Vec::new();
    // A recorded /clock is not replayed when the replayer owns /clock.
    let wanted = |t: &str| {
        (args.no_clock || t != names::CLOCK)
            && (args.topics.is_empty() || args.topics.iter().any(|w| w == t))
    };
    for rec in bag.chunk_records() {
        let ChunkRecord::Chunk(chunk) = rec? else {
            continue;
        };
        for m in chunk.messages() {
            match m? {
                MessageRecord::Connection(c) => {
                    if wanted(c.topic) {
                        conns.insert(c.id, c.topic.to_owned());
                        topics.entry(c.topic.to_owned()).or_insert_with(|| Topic {
                            description: RawMessageDescription {
                                msg_definition: c.message_definition.to_owned(),
                                md5sum: c.md5sum.iter().map(|b| format!("{b:02x}")).collect(),
                                msg_type: c.tp.to_owned(),
                            },
                            latching: c.latching,
                        });
                    }
                }
                MessageRecord::MessageData(d) => {
                    if let Some(topic) = conns.get(&d.conn_id) {
                        messages.push(Recorded {
                            topic: topic.clone(),
                            time_ns: d.time,
                            data: d.data.to_vec(),
                        });
                    }
                }
            }
        }
    }
    for t in &args.topics {
        anyhow::ensure!(
            topics.contains_key(t),
            "topic {t} is not in {}",
            args.bag.display()
        );
    }
    // Chunks are in record order; play in time order (stable for equal stamps).
    messages.sort_by_key(|m| m.time_ns);
    Ok((messages, topics))
}

/// Consumer name → messages handled, from `/replay/ready`.
type Ready = Arc<Mutex<BTreeMap<String, u32>>>;

fn ready_counts(r: &Ready) -> BTreeMap<String, u32> {
    r.locked().clone()
}

/// Which of `topics` each live node subscribes to, from the master.
fn subscriptions(topics: &BTreeMap<String, Topic>) -> anyhow::Result<HashMap<String, Vec<String>>> {
    let state =
        ros1_protocols::this_node::state().map_err(|e| anyhow!("cannot ask the master: {e}"))?;
    let mut by_node: HashMap<String, Vec<String>> = HashMap::new();
    for t in state
        .subscribers
        .iter()
        .filter(|t| topics.contains_key(&t.name))
    {
        for node in t.connections.iter().filter(|n| alive(n)) {
            by_node
                .entry(node.clone())
                .or_default()
                .push(t.name.clone());
        }
    }
    Ok(by_node)
}

/// The live nodes the master lists as `/clock` subscribers (ourselves excepted).
fn clock_subscribers() -> anyhow::Result<Vec<String>> {
    let state =
        ros1_protocols::this_node::state().map_err(|e| anyhow!("cannot ask the master: {e}"))?;
    Ok(state
        .subscribers
        .iter()
        .filter(|t| t.name == names::CLOCK)
        .flat_map(|t| t.connections.iter().cloned())
        .filter(|n| *n != ros1_protocols::this_node::name() && alive(n))
        .collect())
}

/// Whether `node` answers its slave API: a node that was killed stays listed by the
/// master as a subscriber, and would never connect.
fn alive(node: &str) -> bool {
    ros1_protocols::this_node::pid_of(node).is_ok()
}

/// Whether `node` has its first `/clock` message, from its slave API's `getBusStats`
/// (per subscribed topic, `[topic, [connection, ...]]`); `None` when it does not say (our
/// nodes wait for a first clock before they subscribe anything). A rospy connection is
/// `[id, bytes, messages, -1, connected]`, and two messages are asked for: rospy counts a
/// message before its callback sets the node's time and reads the next only after that
/// callback, so the second one counted means the first one's time is set (its byte count
/// includes the connection header, so it cannot tell). A roscpp one is `[id, bytes,
/// drop estimate, connected]`: bytes received will do, as roscpp runs callbacks in the
/// order their messages arrived.
fn clock_received(node: &str) -> Option<bool> {
    use xml_rpc::Value;
    let Ok(Value::Array(stats)) = ros1_protocols::this_node::slave_call(node, "getBusStats") else {
        return None;
    };
    let Some(Value::Array(subscribed)) = stats.get(1) else {
        return None;
    };
    subscribed.iter().find_map(|topic| match topic {
        Value::Array(t) if matches!(t.first(), Some(Value::String(n)) if n == names::CLOCK) => {
            let Some(Value::Array(connections)) = t.get(1) else {
                return Some(false);
            };
            Some(connections.iter().any(|c| match c {
                Value::Array(f) if f.len() == 5 => matches!(f[2], Value::Int(n) if n >= 2),
                Value::Array(f) => matches!(f.get(1), Some(Value::Int(b)) if *b > 0),
                _ => false,
            }))
        }
        _ => None,
    })
}

fn wait_until(deadline: Instant, mut cond: impl FnMut() -> bool) -> bool {
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline || !ros1_protocols::this_node::is_ok() {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    anyhow::ensure!(args.burst > 0, "--burst must be at least 1");
    if args.burst > 8 {
        eprintln!(
            "warning: --burst {}: a rosrust consumer drops messages when more than 8 arrive at once \
             on one topic (a roscpp/rospy one when more than its queue_size do)",
            args.burst
        );
    }
    if let Some(rate) = args.rate {
        anyhow::ensure!(rate.is_finite() && rate > 0.0, "--rate must be > 0");
    }
    let (messages, topics) = read(args)?;
    anyhow::ensure!(
        !messages.is_empty(),
        "no messages to play in {}",
        args.bag.display()
    );
    gem_ros::node::start_within(
        &format!("gemctl_replay_{}", std::process::id()),
        Duration::from_secs(10),
    )?;
    let mut publishers = BTreeMap::new();
    for (name, t) in &topics {
        let d = &t.description;
        let info = ros1_protocols::runtime::TypeInfo {
            msg_type: d.msg_type.clone(),
            md5sum: d.md5sum.clone(),
            definition: d.msg_definition.clone(),
        };
        let p = ros1_protocols::this_node::advertise_as::<RawMessage>(name, 1000, t.latching, info)
            .map_err(|e| anyhow!("cannot advertise {name}: {e}"))?;
        publishers.insert(name.clone(), p);
    }
    let clock = if args.no_clock {
        None
    } else {
        Some(
            ros1_protocols::this_node::publish::<Clock>(names::CLOCK, 1000)
                .map_err(|e| anyhow!("{}: {e}", names::CLOCK))?,
        )
    };
    let ready: Ready = Arc::default();
    let sink = ready.clone();
    let _ready_sub =
        ros1_protocols::direct::subscribe(gem_ros::processed::READY_TOPIC, move |h: Header, _| {
            let mut r = sink.locked();
            let n = r.entry(h.frame_id).or_default();
            *n = (*n).max(h.seq);
        })
        .map_err(|e| anyhow!("/replay/ready: {e}"))?;

    // Start-up: the named consumers, then every listed subscriber connected. Meanwhile
    // /clock holds the bag's first instant: sim-time nodes wait for a first clock before
    // they subscribe and register.
    let t0 = messages[0].time_ns;
    let hold_clock = || {
        if let Some(c) = &clock {
            let _ = c.send(Clock {
                clock: rosrust::Time::from_nanos(t0 as i64),
            });
        }
    };
    let deadline = Instant::now() + Duration::from_secs_f64(args.wait);
    let mut last_hold = Instant::now() - Duration::from_secs(1);
    let mut waiting = |cond: &mut dyn FnMut() -> bool| {
        wait_until(deadline, || {
            if last_hold.elapsed() >= Duration::from_millis(50) {
                hold_clock();
                last_hold = Instant::now();
            }
            cond()
        })
    };
    let missing = |r: &BTreeMap<String, u32>| {
        args.consumers
            .iter()
            .filter(|c| !r.contains_key(*c))
            .cloned()
            .collect::<Vec<_>>()
    };
    if !waiting(&mut || missing(&ready_counts(&ready)).is_empty()) {
        anyhow::bail!(
            "consumers {:?} did not register on /replay/ready within {} s",
            missing(&ready_counts(&ready)),
            args.wait
        );
    }
    let subs = subscriptions(&topics)?;
    for (name, p) in &publishers {
        let listed = subs.values().filter(|ts| ts.contains(name)).count();
        if !waiting(&mut || p.subscriber_count() >= listed) {
            eprintln!(
                "warning: {name}: {} of {listed} subscribers connected after {} s",
                p.subscriber_count(),
                args.wait
            );
        }
    }
    if let Some(c) = &clock {
        let clocked = clock_subscribers()?;
        if !waiting(&mut || c.subscriber_count() >= clocked.len()) {
            eprintln!(
                "warning: /clock: {} of {} subscribers connected after {} s",
                c.subscriber_count(),
                clocked.len(),
                args.wait
            );
        }
        for node in &clocked {
            if !waiting(&mut || clock_received(node) != Some(false)) {
                eprintln!(
                    "warning: {node} had not received /clock after {} s",
                    args.wait
                );
            }
        }
    }
    let base = ready_counts(&ready);
    let consumers: Vec<(String, Vec<String>)> = base
        .keys()
        .map(|c| (c.clone(), subs.get(c).cloned().unwrap_or_default()))
        .collect();
    println!(
        "replaying {} messages on {} topics from {} ({}); consumers: {}",
        messages.len(),
        topics.len(),
        args.bag.display(),
        args.rate
            .map_or(format!("lockstep, bursts of {}", args.burst), |r| format!(
                "real time ×{r}"
            )),
        if consumers.is_empty() {
            "none".to_string()
        } else {
            consumers
                .iter()
                .map(|c| c.0.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        }
    );

    let started = Instant::now();
    let mut expected: BTreeMap<String, u32> = base.clone();
    let mut lagged = 0usize;
    for burst in messages.chunks(if args.rate.is_some() { 1 } else { args.burst }) {
        for m in burst {
            if let Some(rate) = args.rate {
                let due = started + Duration::from_nanos(((m.time_ns - t0) as f64 / rate) as u64);
                if let Some(wait) = due.checked_duration_since(Instant::now()) {
                    std::thread::sleep(wait);
                }
            }
            if let Some(c) = &clock {
                let t = rosrust::Time::from_nanos(m.time_ns as i64);
                c.send(Clock { clock: t })
                    .map_err(|e| anyhow!("{}: {e}", names::CLOCK))?;
            }
            publishers[&m.topic]
                .send(RawMessage(m.data.clone()))
                .map_err(|e| anyhow!("{}: {e}", m.topic))?;
            for (c, ts) in &consumers {
                if ts.contains(&m.topic) {
                    *expected.entry(c.clone()).or_default() += 1;
                }
            }
        }
        if args.rate.is_none() {
            lagged += wait_for_consumers(&ready, &expected, args.ack_timeout);
        }
        if !ros1_protocols::this_node::is_ok() {
            anyhow::bail!("interrupted");
        }
    }
    let wall = started.elapsed().as_secs_f64();
    let got = ready_counts(&ready);
    println!(
        "done: {} messages in {wall:.2} s wall ({:.0} msg/s), bag span {:.2} s",
        messages.len(),
        messages.len() as f64 / wall,
        (messages.last().map_or(t0, |m| m.time_ns) - t0) as f64 * 1e-9
    );
    for (c, _) in &consumers {
        println!(
            "  {c}: handled {} of {} messages sent to it",
            got.get(c).copied().unwrap_or(0) - base.get(c).copied().unwrap_or(0),
            expected.get(c).copied().unwrap_or(0) - base.get(c).copied().unwrap_or(0)
        );
    }
    if lagged > 0 {
        println!("  {lagged} waits timed out (see the warnings)");
    }
    Ok(())
}

/// Waits until every consumer has handled what it was sent; returns how many timed out.
fn wait_for_consumers(ready: &Ready, expected: &BTreeMap<String, u32>, timeout_s: f64) -> usize {
    let deadline = Instant::now() + Duration::from_secs_f64(timeout_s);
    let behind = || -> Vec<(String, u32, u32)> {
        let got = ready_counts(ready);
        expected
            .iter()
            .filter_map(|(c, want)| {
                let have = got.get(c).copied().unwrap_or(0);
                (have < *want).then(|| (c.clone(), have, *want))
            })
            .collect()
    };
    if wait_until(deadline, || behind().is_empty()) {
        return 0;
    }
    let late = behind();
    for (c, have, want) in &late {
        eprintln!("warning: {c} handled {have} of {want} messages after {timeout_s} s; going on");
    }
    late.len()
}
