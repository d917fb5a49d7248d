//! `health_monitor` on a real master: topics from `rostopic pub` and from our nodes, on
//! sim time driven by the test (never started → alive → stale, exactly at the timeout), a
//! rule violation, a conditional rule reading another topic, a type that exists only in
//! its publisher, a malformed configuration, and its output read by `rostopic echo` and
//! by Debian's `diagnostic_aggregator`.

use gem_msgs::diagnostic_msgs::{DiagnosticArray, DiagnosticStatus};
use gem_msgs::rosgraph_msgs::Clock;
use gem_testbed::{cli_background, cli_ok, fresh_ns, ros, Collector, NodeProc, RosGuard};
use std::time::Duration;

const T: Duration = Duration::from_secs(30);

/// Starts a monitor in `ns` with the YAML `config` (topic names are absolute), written to
/// a file for `~config_file`.
fn monitor(r: &RosGuard, ns: &str, config: &str) -> NodeProc {
    monitor_at(r, ns, config, 1.0)
}

/// [`monitor`] with a heartbeat of `rate_hz`.
fn monitor_at(r: &RosGuard, ns: &str, config: &str, rate_hz: f64) -> NodeProc {
    let file = std::env::temp_dir().join(format!(
        "gem_health_{}{}.yaml",
        std::process::id(),
        ns.replace('/', "_")
    ));
    std::fs::write(&file, config).unwrap();
    r.node("health_monitor")
        .arg(&format!("__ns:={ns}"))
        .param("config_file", file.display())
        .param("rate", rate_hz)
        .spawn()
}

/// The latest status of `topic` in a `/diagnostics` message satisfying `pred`.
fn wait_status(
    diag: &Collector<DiagnosticArray>,
    topic: &str,
    pred: impl Fn(&DiagnosticStatus) -> bool,
) -> Option<(DiagnosticArray, DiagnosticStatus)> {
    let find = |m: &DiagnosticArray| m.status.iter().find(|s| s.name == topic).cloned();
    diag.wait_latest(T, |m| find(m).is_some_and(|s| pred(&s)))
        .map(|m| (m.clone(), find(&m).unwrap()))
}

const OK: i8 = 0;
const ERROR: i8 = 2;
const STALE: i8 = 3;

/// The test owns `/clock`.
struct SimClock(ros1_protocols::runtime::Publisher<Clock>);

impl SimClock {
    fn new(r: &RosGuard) -> SimClock {
        r.set_sim_time(true);
        SimClock(ros1_protocols::this_node::publish("/clock", 10).unwrap())
    }

    fn set(&self, secs: f64) {
        let clock = rosrust::Time::from_nanos((secs * 1e9) as i64);
        self.0.send(Clock { clock }).unwrap();
    }
}

#[test]
fn never_started_alive_then_stale_at_the_timeout_in_sim_time() {
    let r = ros();
    let clock = SimClock::new(&r);
    let ns = fresh_ns("hm");
    let topic = format!("{ns}/level");
    let diag = Collector::<DiagnosticArray>::new("/diagnostics");
    // A heartbeat every 100 s of ROS time: only level changes and timeouts publish here,
    // so a missed deadline cannot hide behind a heartbeat.
    let node = monitor_at(
        &r,
        &ns,
        &format!("topics:\n  - topic: {topic}\n    timeout_s: 1.0\n"),
        0.01,
    );
    // The node waits for the first /clock, then reports at once: move the clock on in
    // 0.25 s steps until a report about our topic arrives.
    let mut now = 100.0;
    assert!(
        gem_testbed::wait_until(T, || {
            now += 0.25;
            clock.set(now);
            diag.last()
                .is_some_and(|m| m.status.iter().any(|s| s.name == topic))
        }),
        "no /diagnostics\n{}",
        node.output()
    );
    let (_, s) =
        wait_status(&diag, &topic, |s| s.level == STALE).expect("STALE before any message");
    assert!(s.message.contains("never received"), "{}", s.message);
    // A publisher that appears after the monitor (rostopic pub latches its message).
    let _publisher = cli_background(
        "rostopic",
        &["pub", &topic, "std_msgs/Float64", "data: 0.5"],
    );
    let (_, s) = wait_status(&diag, &topic, |s| s.level == OK)
        .unwrap_or_else(|| panic!("never OK\n{}", node.output()));
    assert!(s
        .values
        .iter()
        .any(|kv| kv.key == "type" && kv.value == "std_msgs/Float64"));
    // Silence: STALE once past the 1 s timeout of ROS time, reported at the deadline.
    clock.set(now + 0.9);
    clock.set(now + 1.2);
    let (m, s) = wait_status(&diag, &topic, |s| s.level == STALE).expect("STALE after the timeout");
    assert!(s.message.contains("timeout 1.00 s"), "{}", s.message);
    let at = m.header.stamp.seconds();
    assert!(
        (now + 1.0..=now + 1.25).contains(&at),
        "reported at {at}, heard at {now}"
    );
}

#[test]
fn rule_violation_is_error_naming_the_rule_and_a_conditional_rule_reads_another_topic() {
    let r = ros();
    r.set_sim_time(false);
    let ns = fresh_ns("hm");
    // (`stop`, not `estop`: mock_signals publishes its own `estop` in this namespace.)
    let (battery, cmd, estop) = (
        format!("{ns}/battery_level"),
        format!("{ns}/cmd"),
        format!("{ns}/stop"),
    );
    let config = format!(
        "topics:
  - topic: {battery}
    rules: [battery_level in 0..1]
  - topic: {cmd}
    timeout_s: 0
    rules: ['data != 0 || {estop}:data']
  - topic: {estop}
    timeout_s: 0
"
    );
    let diag = Collector::<DiagnosticArray>::new("/diagnostics");
    let node = monitor(&r, &ns, &config);
    // Our own node as a source: mock_signals publishes a good battery level.
    let signals = r.node("mock_signals").arg(&format!("__ns:={ns}")).spawn();
    wait_status(&diag, &battery, |s| s.level == OK)
        .unwrap_or_else(|| panic!("battery never OK\n{}\n{}", node.output(), signals.output()));
    drop(signals);
    // A bad value from rostopic: ERROR, the rule named.
    let _bad = cli_background(
        "rostopic",
        &[
            "pub",
            "-r",
            "50",
            &battery,
            "gem_state_msgs/BatteryLevelStamped",
            "{battery_level: 1.5}",
        ],
    );
    let (_, s) = wait_status(&diag, &battery, |s| s.level == ERROR).expect("ERROR");
    assert_eq!(s.message, "rule `battery_level in 0..1` failed");

    // Zero command while the e-stop is unknown: wrong.
    let zero = cli_background("rostopic", &["pub", &cmd, "std_msgs/Float64", "data: 0.0"]);
    let (_, s) = wait_status(&diag, &cmd, |s| s.level == ERROR).expect("zero without e-stop");
    assert!(
        s.message.contains(&format!("{estop}:data")),
        "{}",
        s.message
    );
    drop(zero);
    // E-stop pressed: a zero command is fine.
    let _pressed = cli_background("rostopic", &["pub", &estop, "std_msgs/Bool", "data: true"]);
    wait_status(&diag, &estop, |s| s.level == OK).expect("e-stop heard");
    let _zero = cli_background("rostopic", &["pub", &cmd, "std_msgs/Float64", "data: 0.0"]);
    wait_status(&diag, &cmd, |s| s.level == OK).unwrap_or_else(|| {
        panic!(
            "zero under e-stop is not OK: {:?}\n{}",
            diag.last(),
            node.output()
        )
    });
}

#[test]
fn a_type_defined_only_by_its_publisher_is_monitored() {
    let r = ros();
    r.set_sim_time(false);
    let ns = fresh_ns("hm");
    let topic = format!("{ns}/secret");
    let diag = Collector::<DiagnosticArray>::new("/diagnostics");
    let node = monitor(
        &r,
        &ns,
        &format!(
            "topics:\n  - topic: {topic}\n    type: gem_test/Secret\n    rules: ['level > 1 && name == \"gem\" && nonempty(items)']\n"
        ),
    );
    // No package defines gem_test/Secret: the definition travels in the connection header.
    let description = ros1_protocols::runtime::TypeInfo {
        definition: "float64 level\nstring name\nint32[] items\n".into(),
        md5sum: "*".into(),
        msg_type: "gem_test/Secret".into(),
    };
    let mut bytes = 2.5f64.to_le_bytes().to_vec();
    bytes.extend(3u32.to_le_bytes());
    bytes.extend(b"gem");
    bytes.extend(1u32.to_le_bytes());
    bytes.extend(7i32.to_le_bytes());
    let publisher = ros1_protocols::this_node::advertise_as::<rosrust::RawMessage>(
        &topic,
        10,
        false,
        description,
    )
    .unwrap();
    let ok = gem_testbed::wait_until(T, || {
        publisher.send(rosrust::RawMessage(bytes.clone())).unwrap();
        diag.last()
            .is_some_and(|m| m.status.iter().any(|s| s.name == topic && s.level == OK))
    });
    assert!(ok, "never OK: {:?}\n{}", diag.last(), node.output());
}

#[test]
fn malformed_config_stops_the_node_naming_the_line() {
    let r = ros();
    let ns = fresh_ns("hm");
    let mut node = monitor(
        &r,
        &ns,
        "topics:\n  - topic: /a\n    rules:\n      - data in 1..0\n",
    );
    let status = node.wait(T).expect("the node exits");
    assert!(!status.success());
    let out = node.output();
    assert!(
        out.contains("line 4") && out.contains("empty range"),
        "{out}"
    );
}

#[test]
fn output_is_read_by_rostopic_echo_and_the_diagnostic_aggregator() {
    let r = ros();
    r.set_sim_time(false);
    let ns = fresh_ns("hm");
    let topic = format!("{ns}/level");
    let _node = monitor(&r, &ns, &format!("topics:\n  - topic: {topic}\n"));
    let echoed = cli_ok("rostopic", &["echo", "-n", "1", "/diagnostics"], T);
    assert!(echoed.contains(&format!("name: \"{topic}\"")), "{echoed}");
    assert!(echoed.contains("never received"), "{echoed}");
    let agg = Collector::<DiagnosticArray>::new("/diagnostics_agg");
    let aggregator = r
        .node("/usr/lib/diagnostic_aggregator/aggregator_node")
        .arg(&format!("__ns:={ns}"))
        .remap("/diagnostics_agg", "/diagnostics_agg")
        .spawn();
    let found = agg.wait_latest(T, |m| {
        m.status
            .iter()
            // The aggregator files unmatched statuses under /Other, slashes as spaces.
            .any(|s| s.name == format!("/Other/{}", topic.replace('/', " ")) && s.level == STALE)
    });
    assert!(
        found.is_some(),
        "the aggregator did not republish our status: {:?}\n{}",
        agg.last(),
        aggregator.output()
    );
}
