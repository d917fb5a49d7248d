//! `gemctl replay` against a real master, with bags recorded in the test by Debian's
//! `rosbag record`: a slow consumer gets every message in lockstep while Debian's
//! `rosbag play` makes it miss messages; a recorded failure scenario replayed into the
//! state manager gives the same `/system_state` sequence on 5 consecutive runs; sim-time
//! rospy consumers never see ROS time 0 in their first callback (20 runs).

use gem_core::state_manager::{Input, StateManagerConfig};
use gem_e2e::bags::{gemctl, record_published, recording, start_recording};
use gem_msgs::gem_state_msgs::{SystemStateStamped, TaskPlannerStatus, TemperatureStamped};
use gem_msgs::std_msgs::Header;
use gem_testbed::{cli_background, cli_ok, wait_for_subscriber, wait_until, Collector, NodeProc};
use std::time::Duration;

const T: Duration = Duration::from_secs(120);

/// The latest count `consumer` reported on /replay/ready.
fn handled(ready: &Collector<Header>, consumer: &str) -> u32 {
    ready
        .all()
        .iter()
        .filter(|h| h.frame_id == consumer)
        .map(|h| h.seq)
        .max()
        .unwrap_or(0)
}

fn slow_consumer(ns: &str) -> NodeProc {
    let script = gem_testbed::repo_root().join("tests/py/slow_consumer.py");
    gem_testbed::NodeBuilder::new("/usr/bin/python3")
        .arg(script.to_str().unwrap())
        .arg(&format!("__ns:={ns}"))
        .name("slow_consumer")
        .spawn()
}

#[test]
fn lockstep_delivers_every_message_to_a_slow_consumer_and_rosbag_play_does_not() {
    let (_r, _d, bag) = recording("slow", "data.bag");
    let topic = "/rp1/data";
    // 2 s at 200 Hz: far more than the consumer's 50 ms per message and queue of 10 take.
    const MESSAGES: u32 = 400;
    record_published(
        &bag,
        topic,
        MESSAGES as usize,
        "200",
        "std_msgs/Float64",
        "data: 1.5",
    );
    let ready = Collector::<Header>::new("/replay/ready");

    // Debian's rosbag play at the recorded rate: the consumer cannot keep up.
    let consumer = slow_consumer("/rp1");
    assert!(
        gem_testbed::wait_until(T, || ready
            .all()
            .iter()
            .any(|h| h.frame_id == "/rp1/slow_consumer")),
        "the consumer did not register\n{}",
        consumer.output()
    );
    assert!(wait_for_subscriber(topic, T));
    cli_ok("rosbag", &["play", "-q", bag.to_str().unwrap()], T);
    // Drained: a marker sent after the bag comes out of the consumer's queue after
    // everything the bag left in it.
    const MARKER: f64 = 1000.0;
    cli_ok(
        "rostopic",
        &[
            "pub",
            "-1",
            topic,
            "std_msgs/Float64",
            &format!("data: {MARKER}"),
        ],
        T,
    );
    let marker_seen =
        |h: &Header| h.frame_id == "/rp1/slow_consumer" && h.stamp.sec == MARKER as u32;
    assert!(
        gem_testbed::wait_until(T, || ready.all().iter().any(marker_seen)),
        "the consumer did not handle the marker\n{}",
        consumer.output()
    );
    let with_play = handled(&ready, "/rp1/slow_consumer") - 1;
    assert!(
        with_play < MESSAGES,
        "rosbag play delivered all {with_play}"
    );
    drop(consumer);

    // gemctl replay in lockstep: every message, each after the previous was handled.
    ready.clear();
    let consumer = slow_consumer("/rp1");
    let out = gemctl(&[
        "replay",
        bag.to_str().unwrap(),
        "--consumer",
        "/rp1/slow_consumer",
        "--no-clock",
    ]);
    assert!(
        out.contains(&format!(
            "/rp1/slow_consumer: handled {MESSAGES} of {MESSAGES}"
        )),
        "{out}\n{}",
        consumer.output()
    );
    assert_eq!(handled(&ready, "/rp1/slow_consumer"), MESSAGES);
    eprintln!("rosbag play: {with_play} of {MESSAGES}; gemctl replay: {MESSAGES} of {MESSAGES}");
}

/// The replayer holds `/clock` at the bag's first instant until every sim-time consumer
/// has received it: no consumer reads ROS time 0 in a callback, over 20 replays into two
/// fresh rospy consumers each.
#[test]
fn a_sim_time_consumer_has_the_clock_before_the_first_replayed_message() {
    let (r, _d, bag) = recording("clock_first", "data.bag");
    let topic = "/rp3/data";
    record_published(&bag, topic, 20, "50", "std_msgs/Float64", "data: 2.5");
    r.set_sim_time(true);
    let script = gem_testbed::repo_root().join("tests/py/clock_consumer.py");
    let mut zeros = Vec::new();
    for run in 0..20 {
        let ready = Collector::<Header>::new("/replay/ready");
        let names = [format!("/rp3/c{run}a"), format!("/rp3/c{run}b")];
        let consumers: Vec<NodeProc> = names
            .iter()
            .map(|n| {
                let (ns, name) = n.rsplit_once('/').unwrap();
                gem_testbed::NodeBuilder::new("/usr/bin/python3")
                    .arg(script.to_str().unwrap())
                    .arg(&format!("__ns:={ns}"))
                    .name(name)
                    .spawn()
            })
            .collect();
        let out = gemctl(&[
            "replay",
            bag.to_str().unwrap(),
            "--consumer",
            &names[0],
            "--consumer",
            &names[1],
        ]);
        for n in &names {
            assert!(
                out.contains(&format!("{n}: handled 20 of 20")),
                "run {run}: {out}\n{}",
                consumers.iter().map(NodeProc::output).collect::<String>()
            );
            let reports: Vec<Header> = ready
                .all()
                .into_iter()
                .filter(|h| h.frame_id == *n && h.seq > 0)
                .collect();
            assert_eq!(reports.len(), 20, "run {run}: {n}");
            zeros.extend(
                reports
                    .iter()
                    .filter(|h| h.stamp.sec == 0 && h.stamp.nsec == 0)
                    .map(|h| format!("run {run}: {n} message {} at ROS time 0", h.seq)),
            );
        }
        drop(consumers);
    }
    assert!(zeros.is_empty(), "{zeros:#?}");
}

#[test]
fn replaying_a_failure_scenario_into_the_state_manager_is_deterministic() {
    let (r, d, bag) = recording("failure", "failure.bag");
    let ns = "/rp2";
    let scenario = d.join("faults.yaml");
    std::fs::write(
        &scenario,
        "- {at: 0.5, set: {estop_enabled: true}}\n- {at: 1.0, set: {estop_enabled: false}}\n\
         - {at: 1.5, set: {battery_level: 30}}\n- {at: 2.0, set: {battery_level: 80, temperature: 70}}\n\
         - {at: 2.5, set: {temperature: 30}}\n",
    )
    .unwrap();
    let inputs: Vec<String> = StateManagerConfig::DEFAULT
        .watched()
        .map(|i| format!("{ns}/{}", i.topic()))
        .collect();
    let topics: Vec<&str> = inputs.iter().map(String::as_str).collect();
    {
        // Recorded until the scenario has played out, not for a fixed time: on a busy
        // computer the tools' start-up can eat any fixed window.
        let recorder = start_recording(&bag, None, None, &topics);
        let topic_of = |i: Input| format!("{ns}/{}", i.topic());
        let planner_status = Collector::<TaskPlannerStatus>::new(&topic_of(Input::PlannerStatus));
        let planner = cli_background(
            "rostopic",
            &[
                "pub",
                "-s",
                "-r",
                "20",
                &topic_of(Input::PlannerStatus),
                "gem_state_msgs/TaskPlannerStatus",
                "{header: {stamp: now}, status: 2}",
            ],
        );
        assert!(
            planner_status.wait_for(T, |_| true).is_some(),
            "rostopic pub did not publish {}",
            topic_of(Input::PlannerStatus)
        );
        let temperature = Collector::<TemperatureStamped>::new(&topic_of(Input::Temperature));
        let signals = r
            .node("mock_signals")
            .arg(&format!("__ns:={ns}"))
            .param("scenario", scenario.display())
            .spawn();
        // The last step (30 °C after 70 °C), then half a second more of every input.
        let played_out = || {
            let t: Vec<f32> = temperature.all().iter().map(|m| m.temperature).collect();
            let hot = t.iter().position(|&c| c > 60.0);
            let cooled = hot.and_then(|h| t[h..].iter().position(|&c| c < 40.0).map(|c| h + c));
            cooled.is_some_and(|c| t.len() >= c + 10)
        };
        assert!(
            wait_until(T, played_out),
            "the scenario did not play out: {:?}",
            temperature.all()
        );
        // Ctrl-C: Debian's `rosbag record` wrapper passes SIGINT on to its recorder and then
        // exits on its own KeyboardInterrupt (status 1, at once), so the sign that the bag
        // is complete is the file: renamed from `.active` once closed.
        let mut recorder = recorder;
        let _ = recorder.signal(libc::SIGINT, T);
        let active = bag.with_extension("bag.active");
        assert!(
            wait_until(T, || bag.exists() && !active.exists()),
            "rosbag record did not close {} after SIGINT",
            bag.display()
        );
        drop((planner, signals));
    }
    r.set_sim_time(true);
    let mut sequences = Vec::new();
    for run in 0..5 {
        let state = Collector::<SystemStateStamped>::new(&format!("{ns}/system_state"));
        let node = r
            .node("state_manager")
            .arg(&format!("__ns:={ns}"))
            .param("publish_processed", true)
            .param("state_timeout_ms", 1000)
            .spawn();
        let consumer = format!("{ns}/state_manager");
        let replay = ["replay", bag.to_str().unwrap(), "--consumer", &consumer];
        let out = std::panic::catch_unwind(|| gemctl(&replay)).unwrap_or_else(|e| {
            let why = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            panic!(
                "run {run}: {why}\nthe state manager's log:\n{}",
                node.output()
            )
        });
        assert!(
            !out.contains("timed out"),
            "run {run}: {out}\n{}",
            node.output()
        );
        let mut seq: Vec<(u8, u8)> = Vec::new();
        for m in state.all() {
            if seq.last() != Some(&(m.state, m.error_code)) {
                seq.push((m.state, m.error_code));
            }
        }
        // The node's first IDLE, published as it starts before any input, reaches this
        // subscription only when its link was already up (rosrust adds a new link to a
        // publisher asynchronously); the transitions the bag causes are what must repeat.
        if seq.first() == Some(&(SystemStateStamped::STATE_IDLE, 0)) {
            seq.remove(0);
        }
        eprintln!("run {run}: {seq:?}");
        sequences.push(seq);
        drop(node);
    }
    type S = SystemStateStamped;
    let first = &sequences[0];
    for want in [
        (S::STATE_ERROR, S::ERROR_ESTOP),
        (S::STATE_ERROR, S::ERROR_BATTERY_LOW),
        (S::STATE_ERROR, S::ERROR_TEMPERATURE_HIGH),
        (S::STATE_RUNNING, 0),
    ] {
        assert!(first.contains(&want), "{want:?} missing in {first:?}");
    }
    assert!(sequences.iter().all(|s| s == first), "{sequences:#?}");
}
