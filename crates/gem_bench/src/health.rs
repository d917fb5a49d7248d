//! `health_monitor` figures: how many `nav_msgs/Odometry` messages per second the monitor's
//! work (decode with the publisher's definition, flatten, three rules) takes in-process, and
//! the node's CPU share at 1 kHz input on loopback, and the rate it keeps up with.

use gem_core::health::rule::Rule;
use gem_core::health::{Monitor, TopicSpec};
use gem_core::names;
use gem_core::stats::Summary;
use gem_core::time::Time;
use gem_msgs::diagnostic_msgs::DiagnosticArray;
use gem_msgs::nav_msgs::Odometry;
use gem_nodes::health_monitor::MessageDecoder;
use gem_testbed::{ros, wait_until};
use rosrust::{Message, RosMsg};
use std::time::{Duration, Instant};

const RULES: [&str; 3] = [
    "finite(pose.pose.position.x) && finite(pose.pose.position.y)",
    "twist.twist.linear.x in -10..10",
    "header.frame_id in {\"world\", \"odom\"}",
];

fn odometry(i: u32) -> Odometry {
    let mut m = Odometry::default();
    m.header.frame_id = "world".into();
    m.header.seq = i;
    m.child_frame_id = "base_footprint".into();
    m.pose.pose.position.x = f64::from(i) * 0.01;
    m.twist.twist.linear.x = 2.8;
    m
}

fn spec(topic: &str) -> TopicSpec {
    TopicSpec {
        topic: topic.into(),
        type_name: Some("nav_msgs/Odometry".into()),
        timeout: Some(Duration::from_secs(1)),
        rate_hz: None,
        rules: RULES.iter().map(|r| Rule::parse(r).unwrap()).collect(),
    }
}

pub fn run(messages: usize, seconds: f64) -> anyhow::Result<()> {
    core_throughput(messages)?;
    node_cpu(seconds)
}

/// Decode + flatten + rules on one thread, no ROS transport.
fn core_throughput(messages: usize) -> anyhow::Result<()> {
    let mut bytes = Vec::new();
    odometry(1).encode(&mut bytes)?;
    let mut decoder = MessageDecoder::new("nav_msgs/Odometry", &Odometry::msg_definition())?;
    let field_count = decoder.fields(&bytes)?.len();
    let mut monitor = Monitor::new(vec![spec("/odom")], Time::ZERO);
    let mut rates = Vec::new();
    for _run in 0..5 {
        let start = Instant::now();
        for i in 0..messages {
            let fields = decoder.fields(std::hint::black_box(&bytes))?;
            let now = Time::from_nanos(i as u64 * 1_000_000);
            let level = monitor.on_message(0, now, "nav_msgs/Odometry", fields);
            assert_eq!(level, gem_core::health::Level::Ok);
        }
        rates.push(messages as f64 / start.elapsed().as_secs_f64());
    }
    let s = Summary::new(rates);
    println!(
        "core: decode + flatten ({} fields) + 3 rules on nav_msgs/Odometry: median {:.0} msg/s (min {:.0}, max {:.0}), {:.2} µs/msg",
        field_count,
        s.percentile(50.0),
        s.percentile(0.0),
        s.percentile(100.0),
        1e6 / s.percentile(50.0)
    );
    Ok(())
}

/// utime + stime of `pid`, in clock ticks.
fn cpu_ticks(pid: u32) -> anyhow::Result<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = after.split_whitespace().collect();
    // After the command: state is field 3, utime 14 and stime 15 (1-based in proc(5)).
    Ok(fields[11].parse::<u64>()? + fields[12].parse::<u64>()?)
}

/// The real node: CPU idle and at 1 kHz, then the highest publish rate it counts
/// completely.
fn node_cpu(seconds: f64) -> anyhow::Result<()> {
    let r = ros();
    r.set_sim_time(false);
    let config = std::env::temp_dir().join(format!("gem_bench_health_{}.yaml", std::process::id()));
    let rules: String = RULES.iter().map(|r| format!("      - '{r}'\n")).collect();
    std::fs::write(
        &config,
        format!(
            "topics:\n  - topic: /bench/odom\n    type: nav_msgs/Odometry\n    rules:\n{rules}"
        ),
    )?;
    let node = r
        .node("health_monitor")
        .param("config_file", config.display())
        .spawn();
    let pid = node.pid().ok_or_else(|| anyhow::anyhow!("no pid"))?;
    let last = std::sync::Arc::new(std::sync::Mutex::new(None::<DiagnosticArray>));
    let sink = last.clone();
    let _sub =
        ros1_protocols::direct::subscribe(names::DIAGNOSTICS, move |m: DiagnosticArray, _| {
            *sink.lock().unwrap() = Some(m);
        })
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let publisher = ros1_protocols::this_node::publish::<Odometry>("/bench/odom", 10_000)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    if !wait_until(Duration::from_secs(20), || publisher.subscriber_count() > 0) {
        anyhow::bail!("health_monitor did not subscribe\n{}", node.output());
    }
    let count = || -> Option<u64> {
        let m = last.lock().unwrap().clone()?;
        let s = m.status.iter().find(|s| s.name == "/bench/odom")?;
        s.values
            .iter()
            .find(|kv| kv.key == "messages")?
            .value
            .parse()
            .ok()
    };
    let ticks_per_s = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let mut sent = 0u64;
    // Idle first: the node's CPU with nothing to do.
    let t0 = cpu_ticks(pid)?;
    let idle_start = Instant::now();
    std::thread::sleep(Duration::from_secs_f64(seconds / 2.0));
    let idle = (cpu_ticks(pid)? - t0) as f64 / ticks_per_s / idle_start.elapsed().as_secs_f64();
    // 1 kHz.
    let t0 = cpu_ticks(pid)?;
    let start = Instant::now();
    let period = Duration::from_millis(1);
    while start.elapsed().as_secs_f64() < seconds {
        let due = start + period * sent as u32;
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        publisher
            .send(odometry(sent as u32))
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        sent += 1;
    }
    let busy = (cpu_ticks(pid)? - t0) as f64 / ticks_per_s / start.elapsed().as_secs_f64();
    wait_until(Duration::from_secs(5), || count() == Some(sent));
    println!(
        "node: idle CPU {:.2} %; at 1 kHz Odometry (3 rules) CPU {:.1} % of one core, {} of {} messages counted",
        100.0 * idle,
        100.0 * busy,
        count().unwrap_or(0),
        sent
    );
    // Stepped rates, each for a quarter of `seconds`: the highest the node counts
    // completely. The sender paces itself (a batch every millisecond) rather than calling
    // `send` in a tight loop: a sender spinning on its own publisher's queue starves the
    // thread that writes the queue out, and then measures itself, not the node.
    let step = Duration::from_secs_f64(seconds / 4.0);
    let mut complete = None;
    for rate in [2_000u64, 5_000, 10_000, 20_000, 50_000, 100_000] {
        let before = count().unwrap_or(0);
        let per_ms = rate / 1000;
        let start = Instant::now();
        let (mut n, mut ms) = (0u64, 0u64);
        while start.elapsed() < step {
            let due = start + Duration::from_millis(ms);
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
            for _ in 0..per_ms {
                publisher
                    .send(odometry(n as u32))
                    .map_err(|e| anyhow::anyhow!("{e}"))?;
                n += 1;
            }
            ms += 1;
        }
        let elapsed = start.elapsed().as_secs_f64();
        wait_until(Duration::from_secs(5), || count() == Some(before + n));
        let counted = count().unwrap_or(0) - before;
        println!(
            "node: {rate} msg/s offered (sent {:.0} msg/s), counted {:.0} msg/s ({:.2} % of them)",
            n as f64 / elapsed,
            counted as f64 / elapsed,
            100.0 * counted as f64 / n as f64
        );
        if counted < n {
            break;
        }
        complete = Some(rate);
    }
    match complete {
        Some(rate) => println!("node: counts every message up to {rate} msg/s"),
        None => println!("node: did not count every message even at 2000 msg/s"),
    }
    drop(node);
    Ok(())
}
