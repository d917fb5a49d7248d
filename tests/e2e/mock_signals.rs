//! `mock_signals` reconfigured with Debian's `dynparam`, alone and driving the real
//! `state_manager` (the e-stop round trip of docs/spec.md §6).

use gem_msgs::gem_state_msgs::{
    BatteryLevelStamped, EstopStamped, SignalStrengthStamped, SystemStateStamped,
    TemperatureStamped,
};
use gem_msgs::jsk_rviz_plugins::OverlayText;
use gem_testbed::{cli, cli_ok, fresh_ns, ros, Collector, NodeProc, RosGuard};
use std::time::Duration;

const T: Duration = Duration::from_secs(30);

fn dynparam(args: &[&str]) -> String {
    let mut all = vec!["dynamic_reconfigure", "dynparam"];
    all.extend_from_slice(args);
    cli_ok("rosrun", &all, T)
}

fn start(r: &RosGuard, ns: &str) -> NodeProc {
    r.node("mock_signals").arg(&format!("__ns:={ns}")).spawn()
}

#[test]
fn dynparam_lists_gets_sets_and_clamps() {
    let r = ros();
    r.set_sim_time(false);
    let ns = fresh_ns("ms");
    let node = start(&r, &ns);
    let battery = Collector::<BatteryLevelStamped>::new(&format!("{ns}/battery_level"));
    let temperature = Collector::<TemperatureStamped>::new(&format!("{ns}/temperature"));
    let signal = Collector::<SignalStrengthStamped>::new(&format!("{ns}/signal_strength"));
    assert!(
        battery
            .wait_for(T, |m| (m.battery_level - 0.8).abs() < 1e-6)
            .is_some(),
        "default 80 %\n{}",
        node.output()
    );
    let server = format!("{ns}/mock_signals");
    assert!(
        dynparam(&["list"]).lines().any(|l| l == server),
        "not listed"
    );
    dynparam(&["set", &server, "battery_level", "30"]);
    assert!(
        battery
            .wait_latest(T, |m| (m.battery_level - 0.3).abs() < 1e-6)
            .is_some(),
        "battery 30 % not published"
    );
    dynparam(&["set", &server, "temperature", "500"]);
    assert!(
        temperature
            .wait_latest(T, |m| m.temperature == 100.0)
            .is_some(),
        "500 °C must clamp to 100"
    );
    dynparam(&["set", &server, "signal_strength", "2"]);
    assert!(signal.wait_latest(T, |m| m.strength == 2).is_some());
    let got = dynparam(&["get", &server]);
    assert!(
        got.contains("'battery_level': 30")
            && got.contains("'temperature': 100.0")
            && got.contains("'signal_strength': 2"),
        "{got}"
    );
    // The values are mirrored on the parameter server, as the Python server does.
    let p = cli("rosparam", &["get", &format!("{server}/battery_level")], T);
    assert_eq!(String::from_utf8_lossy(&p.stdout).trim(), "30");
}

#[test]
fn estop_through_dynparam_reaches_system_state_and_clears() {
    let r = ros();
    r.set_sim_time(false);
    let ns = fresh_ns("ms");
    let _signals = start(&r, &ns);
    let manager = r
        .node("state_manager")
        .arg(&format!("__ns:={ns}"))
        .param("state_timeout_ms", 0)
        .spawn();
    let state = Collector::<SystemStateStamped>::new(&format!("{ns}/system_state"));
    let estop = Collector::<EstopStamped>::new(&format!("{ns}/estop"));
    let _overlay = r.node("status_overlay").arg(&format!("__ns:={ns}")).spawn();
    let text = Collector::<OverlayText>::new(&format!("{ns}/gem/status_overlay"));
    let shows =
        |m: &OverlayText| m.text.contains("state     IDLE") && m.text.contains("battery   80 %");
    assert!(
        text.wait_latest(T, shows).is_some(),
        "overlay: {:?}",
        text.last().map(|m| m.text)
    );
    assert!(
        state
            .wait_latest(T, |m| m.state == SystemStateStamped::STATE_IDLE)
            .is_some(),
        "{}",
        manager.output()
    );
    let server = format!("{ns}/mock_signals");
    dynparam(&["set", &server, "estop_enabled", "true"]);
    assert!(estop.wait_latest(T, |m| m.enabled).is_some());
    let m = state
        .wait_latest(T, |m| m.state == SystemStateStamped::STATE_ERROR)
        .expect("ERROR after the e-stop");
    assert_eq!(m.error_code, SystemStateStamped::ERROR_ESTOP);
    let shows_error =
        |m: &OverlayText| m.text.contains("ERROR [ESTOP]") && m.text.contains("PRESSED");
    assert!(
        text.wait_latest(T, shows_error).is_some(),
        "overlay: {:?}",
        text.last().map(|m| m.text)
    );
    // The terminal view shows what the overlay shows. A planner status (latched) lets
    // `--once` stop waiting for the state and the planner at once, so what follows is its
    // wait for the inputs, which mock_signals all publishes at 20 Hz.
    let planner_topic = format!("{ns}/task_planner_status");
    let _planner = gem_testbed::cli_background(
        "rostopic",
        &[
            "pub",
            "-s",
            &planner_topic,
            "gem_state_msgs/TaskPlannerStatus",
            "{header: {stamp: now}, status: 0}",
        ],
    );
    let planner = Collector::<gem_msgs::gem_state_msgs::TaskPlannerStatus>::new(&planner_topic);
    assert!(planner.wait_for(T, |_| true).is_some(), "no planner status");
    let view = cli_ok(
        "bash",
        &[
            "-c",
            &format!("ROS_NAMESPACE={ns} gemctl status --once --timeout 20"),
        ],
        T,
    );
    let publisher = format!("{ns}/mock_signals");
    for part in [
        "ERROR [ESTOP]",
        "NO_TASK",
        "PRESSED",
        "battery   80 %",
        "temp      30.0 °C",
        "\nsources\n",
        &format!("\nbattery   {publisher}\n"),
        &format!("\ne-stop    {publisher}\n"),
    ] {
        assert!(
            view.contains(part),
            "{part} missing in gemctl status:\n{view}"
        );
    }
    assert!(
        !view.contains("silent for"),
        "every input is published at 20 Hz:\n{view}"
    );
    dynparam(&["set", &server, "estop_enabled", "false"]);
    assert!(
        state
            .wait_latest(T, |m| m.state == SystemStateStamped::STATE_IDLE
                && m.error_code == 0)
            .is_some(),
        "{}",
        manager.output()
    );
}

#[test]
fn scenario_file_plays_in_ros_time_through_the_reconfigure_server() {
    let r = ros();
    r.set_sim_time(false);
    let ns = fresh_ns("ms");
    let dir = std::env::temp_dir().join(format!("gem_scenario_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("press.yaml");
    std::fs::write(
        &file,
        "- {at: 0.5, set: {estop_enabled: true}}\n- {at: 1.0, set: {battery_level: 30, estop_enabled: false}}\n",
    )
    .unwrap();
    let estop = Collector::<EstopStamped>::new(&format!("{ns}/estop"));
    let battery = Collector::<BatteryLevelStamped>::new(&format!("{ns}/battery_level"));
    let node = r
        .node("mock_signals")
        .arg(&format!("__ns:={ns}"))
        .param("scenario", file.display())
        .spawn();
    let pressed = estop
        .wait_for(T, |m| m.enabled)
        .unwrap_or_else(|| panic!("the e-stop was never pressed\n{}", node.output()));
    let drained = battery
        .wait_for(T, |m| (m.battery_level - 0.3).abs() < 1e-6)
        .expect("battery never 30 %");
    assert!(estop.wait_latest(T, |m| !m.enabled).is_some());
    // The steps are 0.5 s apart in ROS time: ±one 50 ms publication period, plus the
    // ticker's wake-up jitter on wall time (a CI run measured 0.4499 s).
    let apart = (drained.header.stamp - pressed.header.stamp).seconds();
    assert!((0.43..=0.57).contains(&apart), "steps {apart} s apart");
    // The change went through the server: dynparam sees it.
    let values = dynparam(&["get", &format!("{ns}/mock_signals")]);
    assert!(values.contains("'battery_level': 30"), "{values}");
}

#[test]
fn bad_scenario_stops_the_node_naming_the_step() {
    let r = ros();
    let ns = fresh_ns("ms");
    let file = std::env::temp_dir().join(format!("gem_bad_scenario_{}.yaml", std::process::id()));
    std::fs::write(
        &file,
        "- {at: 1, set: {estop_enabled: true}}\n- {at: 2, set: {temprature: 70}}\n",
    )
    .unwrap();
    let mut node = r
        .node("mock_signals")
        .arg(&format!("__ns:={ns}"))
        .param("scenario", file.display())
        .spawn();
    let status = node.wait(T).expect("the node exits");
    assert!(!status.success());
    let out = node.output();
    assert!(
        out.contains("step 2") && out.contains("unknown parameter temprature"),
        "{out}"
    );
}
