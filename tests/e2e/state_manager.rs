//! The `state_manager` node against a real master on sim time driven by the test: the
//! original suite's scenarios plus staleness, planner status and bad input (scenario
//! bodies in `tests/harness/sm_scenarios.rs`, shared with the rostest runner), and the
//! behaviours only a process test can show: event-driven publishing, log lines, a clock
//! reset, bad parameters.

use gem_core::state_manager::{Input, StateManagerConfig};
use gem_e2e::sm_scenarios::{self as sc, secs, Driver, Scenario};
use gem_msgs::gem_state_msgs::SystemStateStamped as S;
use gem_ros::procfs;
use gem_testbed::{fresh_ns, ros, wait_until, NodeProc, RosGuard};
use std::time::{Duration, Instant};

/// Sim time at which every test starts (non-zero: zero means "no clock yet").
const T0: u64 = 1_000_000_000_000;

/// How long a test waits for a log line that trails the message it describes.
const LOG_WAIT: Duration = Duration::from_secs(10);

/// Starts a state manager on sim time in its own namespace and connects a driver to it.
fn start(ros: &RosGuard, extra: &[(&str, &str)]) -> (NodeProc, Driver) {
    start_with(ros, extra, sc::Inputs::nominal())
}

fn start_with(ros: &RosGuard, extra: &[(&str, &str)], inputs: sc::Inputs) -> (NodeProc, Driver) {
    ros.set_sim_time(true);
    let ns = fresh_ns("sm");
    let mut b = ros
        .node("state_manager")
        .param("publish_processed", true)
        .arg(&format!("__ns:={ns}"))
        .param("state_timeout_ms", 1000);
    for (k, v) in extra {
        b = b.param(k, v);
    }
    let node = b.spawn();
    let driver =
        Driver::connect_with(&ns, T0, inputs).unwrap_or_else(|e| panic!("{e}\n{}", node.output()));
    (node, driver)
}

fn play((name, body): Scenario) {
    let ros = ros();
    let (node, mut d) = start(&ros, &[]);
    let wall = Instant::now();
    if let Err(e) = body(&mut d) {
        panic!(
            "scenario {name}: {e}\n--- node output ---\n{}",
            node.output()
        );
    }
    let sim = (d.now_ns() - T0) as f64 * 1e-9;
    eprintln!(
        "{name}: {sim:.1} s of sim time in {:.2} s wall",
        wall.elapsed().as_secs_f64()
    );
}

/// Plays the scenario of `sc::ALL` called `name`.
fn play_named(name: &str) {
    play(
        *sc::ALL
            .iter()
            .find(|(n, _)| *n == name)
            .expect("scenario exists"),
    );
}

scenario_tests! { play_named:
    battery_ramp,
    temperature,
    gps_hold_off,
    network_low_connected_not_connected,
    estop,
    staleness,
    planner_status,
    bad_values,
}

#[test]
fn zero_stamps_are_used_and_warned_once_per_input() {
    let ros = ros();
    let (node, mut d) = start(&ros, &[]);
    sc::zero_stamps(&mut d).unwrap_or_else(|e| panic!("{e}\n{}", node.output()));
    let warning = |topic: &str| format!("{topic}: header.stamp is zero");
    let topics: Vec<&str> = StateManagerConfig::DEFAULT
        .watched()
        .map(Input::topic)
        .collect();
    assert!(
        topics
            .iter()
            .all(|t| node.wait_output(LOG_WAIT, &warning(t))),
        "a zero-stamp warning is missing\n{}",
        node.output()
    );
    let out = node.output();
    for topic in topics {
        let n = out.lines().filter(|l| l.contains(&warning(topic))).count();
        assert_eq!(n, 1, "{topic}: zero-stamp warning printed {n} times\n{out}");
    }
}

#[test]
fn never_received_input_is_stale_and_named() {
    let ros = ros();
    let no_gps = sc::Inputs {
        gps: None,
        ..sc::Inputs::nominal()
    };
    let (node, mut d) = start_with(&ros, &[], no_gps);
    expect(
        &d.step_to(T0 + secs(1.0)),
        0,
        "GPS never sent, 1.0 s after start",
        &node,
    );
    expect(
        &d.step_to(T0 + secs(1.1)),
        S::ERROR_STALE_DATA,
        "GPS never sent, 1.1 s after start",
        &node,
    );
    assert!(
        node.wait_output(LOG_WAIT, "gps_accuracy never received"),
        "{}",
        node.output()
    );
}

#[test]
fn fault_is_published_at_once_without_waiting_for_a_tick() {
    let ros = ros();
    // A 1 Hz heartbeat: only the event path can deliver the e-stop within the test.
    let (node, mut d) = start(&ros, &[("rate", "1")]);
    d.inputs.estop = Some(false);
    d.publish_now().unwrap();
    let seen = d.received();
    d.inputs.estop = Some(true);
    d.publish_now().unwrap(); // the clock does not move
    let m = d
        .wait_state(seen, Duration::from_secs(10), |m| {
            m.error_code & S::ERROR_ESTOP != 0
        })
        .unwrap_or_else(|| panic!("no immediate ESTOP publication\n{}", node.output()));
    assert_eq!(
        m.header.stamp.nanos() as u64,
        d.now_ns(),
        "published at the current ROS time"
    );
}

/// A state manager watching the drive-by-wire's fault (`~watch_vehicle_fault`, and the
/// parameters `extra`), its inputs and a vehicle bridge reporting no fault fed in lockstep,
/// nominal.
fn start_watching_vehicle_fault(ros: &RosGuard, extra: &[(&str, &str)]) -> (NodeProc, Driver) {
    let params: Vec<(&str, &str)> = [("watch_vehicle_fault", "true")]
        .into_iter()
        .chain(extra.iter().copied())
        .collect();
    let (node, mut d) = start_with(ros, &params, sc::Inputs::with_vehicle_fault());
    d.nominal()
        .unwrap_or_else(|e| panic!("{e}\n{}", node.output()));
    assert!(
        node.wait_output(LOG_WAIT, "watching the drive-by-wire's fault"),
        "{}",
        node.output()
    );
    (node, d)
}

/// The drive-by-wire's fault on `vehicle/fault`: ERROR with the ESTOP bit in the very step
/// it arrives, logged as the drive-by-wire's; with the e-stop pressed as well, either one
/// clearing keeps the bit (and the log says which holds it); cleared, the state goes back
/// to IDLE, or to RUNNING with a task; a silent bridge is STALE_DATA after exactly the
/// staleness timeout.
#[test]
fn vehicle_fault_is_an_estop_that_clears_and_goes_stale() {
    let ros = ros();
    let (node, mut d) = start_watching_vehicle_fault(&ros, &[]);
    let fail = |e: String| -> ! { panic!("{e}\n{}", node.output()) };
    let estop = S::ERROR_ESTOP;
    d.inputs.vehicle_fault = Some(true);
    expect(&d.step(), estop, "drive-by-wire fault", &node);
    assert!(
        node.wait_output(LOG_WAIT, "ESTOP: drive-by-wire fault on vehicle/fault"),
        "{}",
        node.output()
    );
    d.inputs.vehicle_fault = Some(false);
    expect(&d.step(), 0, "drive-by-wire fault cleared", &node);
    // Both at once; the drive-by-wire clears first, then the switch.
    d.inputs.vehicle_fault = Some(true);
    d.inputs.estop = Some(true);
    expect(&d.step(), estop, "e-stop and drive-by-wire fault", &node);
    d.inputs.vehicle_fault = Some(false);
    expect(&d.step(), estop, "e-stop still pressed", &node);
    assert!(
        node.wait_output(
            LOG_WAIT,
            "error code still ESTOP, now ESTOP: e-stop switch pressed"
        ),
        "{}",
        node.output()
    );
    d.inputs.estop = Some(false);
    expect(&d.step(), 0, "e-stop released", &node);
    // With a task: back to RUNNING, as after an e-stop.
    d.inputs.planner = Some(gem_msgs::gem_state_msgs::TaskPlannerStatus::STATUS_RUNNING_TASK);
    let m = d.step().unwrap_or_else(|e| fail(e));
    assert_eq!((m.state, m.error_code), (S::STATE_RUNNING, 0), "{m:?}");
    d.inputs.vehicle_fault = Some(true);
    expect(&d.step(), estop, "drive-by-wire fault during a task", &node);
    d.inputs.vehicle_fault = Some(false);
    let m = d.step().unwrap_or_else(|e| fail(e));
    assert_eq!((m.state, m.error_code), (S::STATE_RUNNING, 0), "{m:?}");
    d.nominal().unwrap_or_else(|e| fail(e));
    // The bridge falls silent.
    let last = d.now_ns();
    d.inputs.vehicle_fault = None;
    expect(
        &d.step_to(last + secs(1.0)),
        0,
        "vehicle/fault silent for 1.0 s",
        &node,
    );
    expect(
        &d.step_to(last + secs(1.1)),
        S::ERROR_STALE_DATA,
        "vehicle/fault silent for 1.1 s",
        &node,
    );
    assert!(
        node.wait_output(LOG_WAIT, "STALE_DATA: vehicle/fault 1.10 s old"),
        "{}",
        node.output()
    );
    d.inputs.vehicle_fault = Some(false);
    expect(&d.step(), 0, "the bridge speaks again", &node);
}

/// The drive-by-wire's fault from Debian's `rostopic pub` (rospy, as a Python bridge
/// would send it; unstamped, so taken at its receive time): `enabled: true` → ERROR with
/// ESTOP, published at once without the clock moving; `enabled: false` → recovered; the
/// publisher gone → STALE_DATA alone once the staleness timeout has passed since its
/// message.
#[test]
fn vehicle_fault_from_rostopic_pub_stops_recovers_and_goes_stale() {
    const T: Duration = Duration::from_secs(30);
    let ros = ros();
    // The clock stands still while rostopic starts: no "ROS time stopped" meanwhile.
    let (node, mut d) = start_watching_vehicle_fault(&ros, &[("clock_stall_s", "600")]);
    let fail = |e: String| -> ! { panic!("{e}\n{}", node.output()) };
    // rostopic takes the test's place as the bridge.
    d.inputs.vehicle_fault = None;
    let topic = format!("{}/{}", d.ns(), Input::VehicleFault.topic());
    // One latched message: the clock stands still, so the node answers it at once (its
    // event path) and nothing grows stale meanwhile.
    let send = |enabled: bool, pred: fn(&S) -> bool| {
        let (seen, acks) = (d.received(), d.acks());
        let fields = format!("{{enabled: {enabled}}}");
        let publisher = gem_testbed::cli_background(
            "rostopic",
            &["pub", "-1", &topic, "gem_state_msgs/EstopStamped", &fields],
        );
        let m = d.wait_state(seen, T, pred).unwrap_or_else(|| {
            panic!(
                "enabled: {enabled}: no such system_state within {T:?}\n{}\n{}",
                publisher.output(),
                node.output()
            )
        });
        // Its acknowledgement, so the lockstep that follows counts only its own.
        assert!(d.wait_acks_for(acks + 1, T), "{}", node.output());
        drop(publisher);
        m
    };
    let m = send(true, |m| m.error_code & S::ERROR_ESTOP != 0);
    assert_eq!(
        (m.state, m.error_code),
        (S::STATE_ERROR, S::ERROR_ESTOP),
        "{m:?}"
    );
    let m = send(false, |m| m.error_code == 0);
    assert_eq!(m.state, S::STATE_IDLE, "{m:?}");
    let last = d.now_ns();
    expect(
        &d.step_to(last + secs(1.0)),
        0,
        "rostopic gone for 1.0 s",
        &node,
    );
    let m = d.step().unwrap_or_else(|e| fail(e));
    expect(
        &Ok(m),
        S::ERROR_STALE_DATA,
        "rostopic gone for 1.1 s",
        &node,
    );
}

#[test]
fn clock_jumping_back_is_survived_and_restarts_windows() {
    let ros = ros();
    let (node, mut d) = start(&ros, &[]);
    d.nominal().unwrap();
    // The simulator restarts at 5 s; inputs stamped with the new clock keep coming.
    let restart = secs(5.0);
    let m = d
        .jump_clock(restart)
        .unwrap_or_else(|e| panic!("{e}\n{}", node.output()));
    assert_eq!(m.header.stamp.nanos() as u64, restart);
    for _ in 0..20 {
        let m = d.step().unwrap();
        assert_eq!(m.error_code, 0, "after the reset: {m:?}\n{}", node.output());
    }
    assert!(
        node.wait_output(LOG_WAIT, "jumped back"),
        "{}",
        node.output()
    );
}

#[test]
fn invalid_parameter_is_a_clear_startup_error() {
    let ros = ros();
    ros.set_sim_time(false);
    let mut node = ros
        .node("state_manager")
        .arg(&format!("__ns:={}", fresh_ns("sm")))
        .param("battery_low_below_frac", 50)
        .spawn();
    let status = node_exit(&mut node);
    assert!(!status.success());
    let out = node.output();
    assert!(
        out.contains("~battery_low_below_frac") && out.contains("must be within 0..1"),
        "{out}"
    );
}

#[test]
fn rt_priority_from_the_environment_and_a_bad_value_named() {
    const T: Duration = Duration::from_secs(20);
    let ros = ros();
    ros.set_sim_time(false);
    let spawn = |value: &str| {
        ros.node("state_manager")
            .arg(&format!("__ns:={}", fresh_ns("sm")))
            .env("GEM_RT_PRIORITY", value)
            .spawn()
    };
    let policy = |node: &NodeProc| gem_ros::realtime::policy_of(node.pid().unwrap()).unwrap();
    // Real-time needs root or CAP_SYS_NICE: either the node gets it, or it says why not
    // and runs normally.
    let node = spawn("20");
    assert!(
        wait_until(T, || {
            policy(&node) == ("SCHED_FIFO", 20) || node.output().contains("SCHED_FIFO 20 refused")
        }),
        "{}",
        node.output()
    );
    if policy(&node).0 == "SCHED_FIFO" {
        assert!(
            wait_until(T, || node.output().contains("running at SCHED_FIFO 20")),
            "{}",
            node.output()
        );
        // Every thread: the policy is set before rosrust starts its threads, which must
        // inherit it (they carry the inputs and the output).
        let pid = node.pid().unwrap();
        assert!(
            wait_until(T, || gem_ros::realtime::thread_policies(pid).len() > 3
                && gem_ros::realtime::describe(pid) == "SCHED_FIFO 20"),
            "{:?}",
            gem_ros::realtime::thread_policies(pid)
        );
    }
    let node = spawn("high");
    assert!(
        wait_until(T, || node
            .output()
            .contains("GEM_RT_PRIORITY=\"high\" is not")),
        "{}",
        node.output()
    );
    assert_eq!(policy(&node), ("SCHED_OTHER", 0));
}

/// Regression: with the clock paused exactly at the end of a GPS hold-off window (the
/// rule fires 1 ns later, so only the next `/clock` can fire it), the node must wait for
/// that message. Its timer loop used to take the 1 ns of simulated time left as a wall
/// timeout and spin, a whole core (at real-time priority, in the profile) until the clock
/// moved. Over a one-second window of wall time the node now uses almost no CPU.
#[test]
fn waits_for_the_clock_at_a_hold_off_deadline_without_spinning() {
    let ros = ros();
    let (node, mut d) = start(&ros, &[]);
    let fail = |e: String| -> ! { panic!("{e}\n{}", node.output()) };
    d.nominal().unwrap_or_else(|e| fail(e));
    d.inputs.gps = Some(200.0);
    d.step().unwrap_or_else(|e| fail(e));
    let last_good = d.now_ns();
    d.inputs.gps = Some(200.1);
    expect(
        &d.step_to(last_good + secs(15.0)),
        0,
        "GPS bad for exactly 15.0 s",
        &node,
    );
    let pid = node.pid().expect("node running");
    let (before, wall) = (activity(pid), Instant::now());
    // A measuring window, not a synchronisation: nothing is expected to happen in it.
    std::thread::sleep(Duration::from_secs(1));
    let after = activity(pid);
    let window = wall.elapsed().as_secs_f64();
    let (cpu, wakeups) = (after.0 - before.0, after.1 - before.1);
    // Waiting: a few wake-ups per second (shutdown checks, discovery). The old loop either
    // polled (~10^4 wake-ups/s at normal scheduling, where a 1 ns timeout still sleeps for
    // the timer slack) or spun outright (real-time priority: no slack, a whole core).
    assert!(
        cpu < 0.25 * window && wakeups < 1000,
        "with the clock paused the state manager used {cpu:.2} s of CPU and woke {wakeups} \
         times in {window:.2} s\n{}",
        node.output()
    );
    // The next clock message fires the rule.
    expect(&d.step(), S::ERROR_GPS_LOST, "GPS bad for 15.1 s", &node);
}

/// CPU time (user + system, seconds) and context switches (voluntary + involuntary, all
/// threads) of process `pid` so far, from `/proc`.
fn activity(pid: u32) -> (f64, u64) {
    let cpu = procfs::cpu_ticks(pid).expect("/proc/<pid>/stat") as f64 / procfs::ticks_per_second();
    let mut switches = 0;
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).expect("/proc/<pid>/task") {
        // A thread may end between the listing and the read.
        let status =
            std::fs::read_to_string(task.unwrap().path().join("status")).unwrap_or_default();
        switches += ["voluntary_ctxt_switches:", "nonvoluntary_ctxt_switches:"]
            .iter()
            .filter_map(|name| procfs::status_field(&status, name))
            .sum::<u64>();
    }
    (cpu, switches)
}

#[test]
fn sigint_shuts_down_cleanly_even_with_the_clock_paused() {
    let ros = ros();
    let (mut node, _d) = start(&ros, &[]);
    let status = node
        .interrupt(Duration::from_secs(10))
        .expect("node did not exit on SIGINT");
    assert!(status.success(), "{status}\n{}", node.output());
}

fn node_exit(node: &mut NodeProc) -> std::process::ExitStatus {
    node.wait(Duration::from_secs(20))
        .unwrap_or_else(|| panic!("node did not exit\n{}", node.output()))
}

fn expect(m: &Result<S, String>, bits: u8, what: &str, node: &NodeProc) {
    let m = m
        .as_ref()
        .unwrap_or_else(|e| panic!("{e}\n{}", node.output()));
    sc::expect_bits(m, bits, what).unwrap_or_else(|e| panic!("{e}\n{}", node.output()));
}
