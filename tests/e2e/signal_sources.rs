//! `signal_sources` against a real master, real publishers and the real state manager:
//! a rospy BMS whose charge falls (BATTERY_LOW) and which then dies (STALE_DATA); a
//! thermal folder whose reading rises (TEMPERATURE_HIGH); a hardware e-stop button on
//! `rostopic pub` pressed (ESTOP) and released, a press published from its own message
//! rather than at the next tick; an operator station pinned by address, the only one
//! heard; bad files, a field the type does
//! not have and a field of the wrong type, each with a clear error; and, across network
//! namespaces, the operator's heartbeat link cut mid-lap on `platform:=gem_e2_sim`
//! (SIGNAL_LOST, the car at rest) and restored (RUNNING, moving).
//!
//! The state manager's other inputs come from `mock_signals` with the fed topics moved
//! aside, so each test changes one input only.

use gem_core::state_manager::ErrorBits;
use gem_e2e::hosts::{available, HostProc, Hosts, Role};
use gem_e2e::lap::{num, wall_now, Observer, SPEEDUP, TIMEOUT_S};
use gem_msgs::gem_state_msgs::{
    BatteryLevelStamped, EstopStamped, SignalStrengthStamped, SystemStateStamped,
    TemperatureStamped,
};
use gem_msgs::std_msgs::Bool;
use gem_testbed::{
    cli_background, fresh_ns, repo_root, ros, wait_until, Collector, NodeProc, RosGuard,
};
use std::path::PathBuf;
use std::time::Duration;

const T: Duration = Duration::from_secs(30);

/// A scratch folder for `name`, emptied.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("gem_sources_{name}_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `yaml` as a sources file in `dir`.
fn sources_file(dir: &std::path::Path, yaml: &str) -> PathBuf {
    let file = dir.join("sources.yaml");
    std::fs::write(&file, yaml).unwrap();
    file
}

/// The test master on wall time, a fresh namespace, and a sources file in a scratch folder
/// `name` made by `yaml` for that namespace.
fn fresh(name: &str, yaml: impl Fn(&str) -> String) -> (RosGuard, String, PathBuf, PathBuf) {
    let r = ros();
    r.set_sim_time(false);
    let ns = fresh_ns("src");
    let dir = scratch(name);
    let file = sources_file(&dir, &yaml(&ns));
    (r, ns, dir, file)
}

/// The rospy BMS (`tests/py/bms_publisher.py`) publishing on `topic`: 0.9 until the file
/// `go` exists, then a falling charge.
fn bms(topic: &str, go: &std::path::Path) -> NodeProc {
    let script = repo_root().join("tests/py/bms_publisher.py");
    cli_background(
        "/usr/bin/python3",
        &[&script.to_string_lossy(), topic, &go.to_string_lossy()],
    )
}

/// A hardware e-stop button on `{ns}/button`: `rostopic pub` of a `std_msgs/Bool` at
/// 20 Hz, pressed or not.
fn estop_button(ns: &str, pressed: bool) -> NodeProc {
    cli_background(
        "rostopic",
        &[
            "pub",
            "-r",
            "20",
            &format!("{ns}/button"),
            "std_msgs/Bool",
            &format!("data: {pressed}"),
        ],
    )
}

/// The state manager in `ns` (staleness after 1 s), the task planner for its status,
/// `mock_signals` for every input but those `signal_sources` feeds (`fed`, moved aside),
/// and `signal_sources` reading `file` with `params`.
struct Bench {
    _nodes: Vec<NodeProc>,
    sources: NodeProc,
    state: Collector<SystemStateStamped>,
}

impl Bench {
    fn start(
        r: &RosGuard,
        ns: &str,
        file: &std::path::Path,
        fed: &[&str],
        params: &[(&str, String)],
    ) -> Bench {
        let at = format!("__ns:={ns}");
        let mut mock = r.node("mock_signals").arg(&at);
        for topic in fed {
            mock = mock.remap(topic, &format!("mock_{topic}"));
        }
        let mut sources = r
            .node("signal_sources")
            .arg(&at)
            .param("sources_file", file.display());
        for (name, value) in params {
            sources = sources.param(name, value);
        }
        let nodes = vec![
            mock.spawn(),
            r.node("task_planner").arg(&at).spawn(),
            r.node("state_manager")
                .arg(&at)
                .param("state_timeout_ms", 1000)
                .spawn(),
        ];
        Bench {
            _nodes: nodes,
            sources: sources.spawn(),
            state: Collector::new(&format!("{ns}/system_state")),
        }
    }

    /// Waits until the latest `system_state`'s error bits satisfy `pred`; that message.
    fn errors(&self, what: &str, pred: impl Fn(ErrorBits) -> bool) -> SystemStateStamped {
        self.state
            .wait_latest(T, |m| pred(ErrorBits::from_bits(m.error_code)))
            .unwrap_or_else(|| {
                panic!(
                    "no system_state with {what} within {T:?}; last {:?}\n{}",
                    self.state
                        .last()
                        .map(|m| ErrorBits::from_bits(m.error_code).to_string()),
                    self.sources.output()
                )
            })
    }
}

#[test]
fn a_bms_whose_charge_falls_is_battery_low_and_once_it_stops_stale_data() {
    let (r, ns, dir, file) = fresh("bms", |ns| {
        format!("battery:\n  topic: {ns}/bms\n  field: percentage\n  stale_after_s: 0.5\n")
    });
    let battery = Collector::<BatteryLevelStamped>::new(&format!("{ns}/battery_level"));
    let bench = Bench::start(&r, &ns, &file, &["battery_level"], &[]);
    let go = dir.join("go");
    let bms = bms(&format!("{ns}/bms"), &go);
    assert!(bms.wait_output(T, "linked"), "{}", bms.output());
    assert!(battery
        .wait_for(T, |m| (m.battery_level - 0.9).abs() < 1e-6)
        .is_some());
    let healthy = bench.errors("no error while the charge is 0.9", |e| e.is_empty());
    // The charge falls once the healthy verdict is in.
    std::fs::write(&go, "").unwrap();
    let low = bench.errors("BATTERY_LOW", |e| e.contains(ErrorBits::BATTERY_LOW));
    assert!(!ErrorBits::from_bits(low.error_code).contains(ErrorBits::STALE_DATA));
    // Every value the node published lies on the BMS's ramp (0.9 down to 0.3).
    let levels: Vec<f32> = battery.all().iter().map(|m| m.battery_level).collect();
    assert!(
        levels.iter().all(|l| (0.3 - 1e-6..=0.9 + 1e-6).contains(l)),
        "{levels:?}"
    );
    assert!(bms.wait_output(T, "stopped"), "{}", bms.output());
    let stale = bench.errors("STALE_DATA", |e| e.contains(ErrorBits::STALE_DATA));
    let n = battery.len();
    // Nothing made up once the BMS is gone: no battery_level after the stale verdict.
    let after = bench.state.wait_for(T, |m| {
        m.header.stamp > stale.header.stamp + rosrust::Duration::from_seconds(1)
    });
    assert!(after.is_some());
    assert_eq!(
        battery.len(),
        n,
        "battery_level published with its source gone"
    );
    eprintln!(
        "BMS: healthy at {}, BATTERY_LOW at {}, STALE_DATA at {} (stamps); {} battery_level messages",
        healthy.header.stamp.seconds(),
        low.header.stamp.seconds(),
        stale.header.stamp.seconds(),
        n
    );
}

/// `rostopic pub` of a `std_msgs/Float64` on `{ns}/{topic}` at 20 Hz.
fn float_pub(ns: &str, topic: &str, value: &str) -> NodeProc {
    cli_background(
        "rostopic",
        &[
            "pub",
            "-r",
            "20",
            &format!("{ns}/{topic}"),
            "std_msgs/Float64",
            &format!("data: {value}"),
        ],
    )
}

#[test]
fn a_nan_or_infinite_reading_is_its_inputs_fault_from_its_message() {
    // Long staleness limits: a fault seen here comes from the value, not from a gap.
    let (r, ns, _dir, file) = fresh("nan", |ns| {
        format!(
            "battery:\n  topic: {ns}/bms_f\n  field: data\n  stale_after_s: 10\n\
             temperature:\n  topic: {ns}/temp_f\n  field: data\n  stale_after_s: 10\n\
             estop:\n  topic: {ns}/estop_f\n  field: data\n  stale_after_s: 10\n"
        )
    });
    let bench = Bench::start(
        &r,
        &ns,
        &file,
        &["battery_level", "temperature", "estop"],
        &[],
    );
    let mut publishers = [
        float_pub(&ns, "bms_f", "0.9"),
        float_pub(&ns, "temp_f", "30.0"),
        float_pub(&ns, "estop_f", "0.0"),
    ];
    bench.errors("no error with healthy readings", |e| e.is_empty());
    let mut faults = Vec::new();
    for (i, (topic, value, bit, name)) in [
        ("bms_f", ".nan", ErrorBits::BATTERY_LOW, "BATTERY_LOW"),
        (
            "temp_f",
            ".inf",
            ErrorBits::TEMPERATURE_HIGH,
            "TEMPERATURE_HIGH",
        ),
        ("estop_f", ".nan", ErrorBits::ESTOP, "ESTOP"),
    ]
    .into_iter()
    .enumerate()
    {
        // The bad publisher takes the healthy one's place: the gap while it starts is far
        // within the 10 s of staleness, and no healthy reading follows a bad one (two
        // publishers at the same rate can keep their phase, and the healthy reading be the
        // latest at every output).
        drop(std::mem::replace(
            &mut publishers[i],
            float_pub(&ns, topic, value),
        ));
        let seen = bench.errors(name, |e| e.contains(bit));
        let errors = ErrorBits::from_bits(seen.error_code);
        assert!(
            !errors.contains(ErrorBits::STALE_DATA),
            "{topic} {value}: {errors} (from staleness, not from the value)"
        );
        faults.push(format!("{topic} = {value} -> {name}"));
    }
    eprintln!("non-finite readings: {}", faults.join("; "));
}

#[test]
fn a_thermal_zone_that_rises_above_the_limit_is_temperature_high() {
    let r = ros();
    r.set_sim_time(false);
    let ns = fresh_ns("src");
    let dir = scratch("thermal");
    let sys = dir.join("sys");
    let zone = sys.join("class/thermal/thermal_zone0");
    let hwmon = sys.join("class/hwmon/hwmon1");
    std::fs::create_dir_all(&zone).unwrap();
    std::fs::create_dir_all(&hwmon).unwrap();
    std::fs::write(zone.join("temp"), "41000\n").unwrap();
    std::fs::write(hwmon.join("temp1_input"), "38500\n").unwrap();
    let file = sources_file(
        &dir,
        "temperature:\n  thermal: [thermal_zone0, hwmon1/temp1]\n  period_s: 0.1\n",
    );
    let temperature = Collector::<TemperatureStamped>::new(&format!("{ns}/temperature"));
    let bench = Bench::start(
        &r,
        &ns,
        &file,
        &["temperature"],
        &[("sysfs_root", sys.display().to_string())],
    );
    assert!(
        temperature.wait_for(T, |m| m.temperature == 41.0).is_some(),
        "the hottest sensor, 41 °C\n{}",
        bench.sources.output()
    );
    bench.errors("no error at 41 °C", |e| e.is_empty());
    // The hwmon sensor rises past the limit (55 °C): it is the hottest now.
    for milli in ["50000", "54000", "58250"] {
        std::fs::write(hwmon.join("temp1_input.partial"), format!("{milli}\n")).unwrap();
        std::fs::rename(hwmon.join("temp1_input.partial"), hwmon.join("temp1_input")).unwrap();
        let c = milli.parse::<f32>().unwrap() / 1000.0;
        assert!(
            temperature.wait_for(T, |m| m.temperature == c).is_some(),
            "{c} °C not published\n{}",
            bench.sources.output()
        );
    }
    bench.errors("TEMPERATURE_HIGH", |e| {
        e.contains(ErrorBits::TEMPERATURE_HIGH)
    });
    // Both sensors unreadable: the input goes stale, with the reason in the log.
    std::fs::remove_file(zone.join("temp")).unwrap();
    std::fs::remove_file(hwmon.join("temp1_input")).unwrap();
    bench.errors("STALE_DATA", |e| e.contains(ErrorBits::STALE_DATA));
    assert!(
        bench.sources.wait_output(T, "no sensor gives a reading"),
        "{}",
        bench.sources.output()
    );
}

#[test]
fn a_hardware_estop_pressed_is_estop_and_released_clears() {
    let (r, ns, _dir, file) = fresh("estop", |ns| {
        format!("estop:\n  topic: {ns}/button\n  field: data\n  debounce_s: 0.1\n")
    });
    let bench = Bench::start(&r, &ns, &file, &["estop"], &[]);
    let button = |pressed: bool| estop_button(&ns, pressed);
    let estop = Collector::<EstopStamped>::new(&format!("{ns}/estop"));
    let published = |pressed: bool| {
        assert!(
            estop.wait_latest(T, |m| m.enabled == pressed).is_some(),
            "estop {pressed} not published\n{}",
            bench.sources.output()
        );
    };
    let mut released = button(false);
    published(false);
    bench.errors("no error with the button released", |e| e.is_empty());
    released.kill();
    let mut pressed = button(true);
    published(true);
    bench.errors("ESTOP", |e| e.contains(ErrorBits::ESTOP));
    pressed.kill();
    let _released = button(false);
    published(false);
    bench.errors("no error once released", |e| e.is_empty());
}

#[test]
fn a_press_is_published_from_its_message_not_at_the_next_tick() {
    // At 0.5 Hz a tick comes every 2 s: a press published within 0.3 s of the button's
    // message came from that message. The test is the button (a publisher linked before
    // it presses, so the time it sends is the time to measure from). Three presses: a
    // press that waited for a tick would pass all three by chance about once in 300 runs.
    const AT_ONCE: Duration = Duration::from_millis(300);
    let (r, ns, _dir, file) = fresh("press", |ns| {
        format!("estop:\n  topic: {ns}/button\n  field: data\n  stale_after_s: 10\n")
    });
    let button = ros1_protocols::this_node::publish::<Bool>(&format!("{ns}/button"), 10)
        .expect("the button's publisher");
    let estop = Collector::<EstopStamped>::new(&format!("{ns}/estop"));
    let node = r
        .node("signal_sources")
        .arg(&format!("__ns:={ns}"))
        .param("sources_file", file.display())
        .param("rate", 0.5)
        .spawn();
    assert!(
        wait_until(T, || button.subscriber_count() > 0),
        "signal_sources did not subscribe to the button\n{}",
        node.output()
    );
    let press = |data: bool| button.send(Bool { data }).expect("publish");
    let mut delays = Vec::new();
    for _ in 0..3 {
        press(false);
        assert!(
            estop.wait_latest(T, |m| !m.enabled).is_some(),
            "the release was not published\n{}",
            node.output()
        );
        estop.clear();
        let sent = std::time::Instant::now();
        press(true);
        assert!(
            estop.wait_for(T, |m| m.enabled).is_some(),
            "the press was not published\n{}",
            node.output()
        );
        let (published, _) = estop
            .timed()
            .into_iter()
            .find(|(_, m)| m.enabled)
            .expect("the press, just seen");
        delays.push(published.saturating_duration_since(sent));
    }
    eprintln!("press published after {delays:?} (ticks every 2 s)");
    assert!(
        delays.iter().all(|d| *d < AT_ONCE),
        "a press waited for a tick: {delays:?}\n{}",
        node.output()
    );
}

#[test]
fn a_pinned_operator_station_is_the_only_one_heard() {
    let port = gem_testbed::free_udp_port();
    // The machine held for the whole test, both nodes' runs included.
    let r = ros();
    r.set_sim_time(false);
    let dir = scratch("pinned");
    let signal_with = |station: &str| {
        let ns = fresh_ns("src");
        let file = sources_file(
            &dir,
            &format!("signal:\n  operator: {{station: {station}}}\n"),
        );
        let signal = Collector::<SignalStrengthStamped>::new(&format!("{ns}/signal_strength"));
        let node = r
            .node("signal_sources")
            .arg(&format!("__ns:={ns}"))
            .param("sources_file", file.display())
            .param("operator_port", port)
            .spawn();
        assert!(
            node.wait_output(T, "listening on UDP port"),
            "{}",
            node.output()
        );
        let station = cli_background(
            &gem_testbed::node_binary("gemctl").to_string_lossy(),
            &["operator", "--car", &format!("127.0.0.1:{port}")],
        );
        (node, station, signal)
    };
    // Pinned elsewhere: the local station's hellos are refused, and the link is never up.
    let (node, station, signal) = signal_with("127.0.0.2");
    assert!(
        node.wait_output(T, "dropped unpinned datagram from 127.0.0.1"),
        "{}\n{}",
        node.output(),
        station.output()
    );
    assert!(
        wait_until(T, || signal.len() >= 40),
        "2 s of signal_strength\n{}",
        node.output()
    );
    assert!(
        signal
            .all()
            .iter()
            .all(|m| m.strength == SignalStrengthStamped::NOT_CONNECTED),
        "a refused station connected: {:?}",
        signal.all().iter().map(|m| m.strength).collect::<Vec<_>>()
    );
    drop((station, node));
    // Pinned to it: heard, CONNECTED.
    let (node, station, signal) = signal_with("127.0.0.1");
    assert!(
        signal
            .wait_latest(T, |m| m.strength == SignalStrengthStamped::CONNECTED)
            .is_some(),
        "the pinned station never connected\n{}\n{}",
        node.output(),
        station.output()
    );
}

#[test]
fn bad_files_fields_and_types_get_clear_errors() {
    let r = ros();
    r.set_sim_time(false);
    // A bad file: the node does not start, and says which file, which input and why.
    let dir = scratch("bad");
    // A key that others may read, beside the file.
    let exposed = dir.join("exposed.key");
    std::fs::write(&exposed, "ab".repeat(32)).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&exposed, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    for (yaml, says, require_key) in [
        ("battery: [1, 2\n", "sources.yaml", false),
        (
            "battery:\n  topic: /bms\n",
            "`battery`: a topic source needs `field`",
            false,
        ),
        (
            "temperature:\n  thermal: [../../etc/passwd]\n",
            "`temperature`",
            false,
        ),
        ("signal:\n  operator: {period_s: -1}\n", "period_s", false),
        // The car: no key, a key that is not there, a key others may read.
        ("signal:\n  operator: {}\n", "gemctl operator keygen", true),
        (
            "signal:\n  operator: {key_file: missing.key}\n",
            "missing.key",
            false,
        ),
        (
            "signal:\n  operator: {key_file: exposed.key}\n",
            "chmod 600",
            false,
        ),
    ] {
        let file = sources_file(&dir, yaml);
        let mut node = r
            .node("signal_sources")
            .arg(&format!("__ns:={}", fresh_ns("src")))
            .param("sources_file", file.display())
            .param("require_operator_key", require_key)
            .spawn();
        let status = node.wait(T).expect("the node exits on a bad file");
        let out = node.output();
        assert!(!status.success(), "{yaml:?}: exited 0\n{out}");
        assert!(
            out.contains(says) && out.contains(&file.display().to_string()),
            "{yaml:?}: want {says:?} and the file's name in\n{out}"
        );
    }
    // A field the type does not have, and a field that is text: each refused at the first
    // message, naming the topic, the type and the fields it has; the input stays silent.
    // The e-stop, read from a good field of the same messages, shows the node reading them.
    for (field, says) in [("soc", "no field `soc`"), ("location", "not a number")] {
        let ns = fresh_ns("src");
        let file = sources_file(
            &dir,
            &format!(
                "battery:\n  topic: {ns}/bms\n  field: {field}\nestop:\n  topic: {ns}/bms\n  field: present\n"
            ),
        );
        let battery = Collector::<BatteryLevelStamped>::new(&format!("{ns}/battery_level"));
        let estop = Collector::<EstopStamped>::new(&format!("{ns}/estop"));
        let node = r
            .node("signal_sources")
            .arg(&format!("__ns:={ns}"))
            .param("sources_file", file.display())
            .spawn();
        let bms = bms(&format!("{ns}/bms"), &dir.join("never"));
        assert!(
            node.wait_output(T, says),
            "{field}: want {says:?}\n{}\n{}",
            node.output(),
            bms.output()
        );
        let out = node.output();
        if field == "soc" {
            assert!(
                out.contains("sensor_msgs/BatteryState") && out.contains("percentage"),
                "the error names the type and its fields:\n{out}"
            );
        }
        // 20 e-stops (1 s at 20 Hz) from the same BMS messages after the error.
        let from = estop.len();
        assert!(
            wait_until(T, || estop.len() >= from + 20),
            "{field}: the e-stop from the same messages was not published\n{}",
            node.output()
        );
        assert_eq!(battery.len(), 0, "{field}: battery_level published\n{out}");
    }
}

// The operator link across two computers (network namespaces): the car, the whole suite on
// `platform:=gem_e2_sim` with no local operator station, and the operator's laptop running
// `gemctl operator`. Without root or iproute2 the scenario writes `skipped: <reason>`;
// under `CI=true` it fails naming what is missing.
scenario_tests! { on_the_car_and_a_laptop:
    an_operator_link_cut_mid_lap_is_signal_lost_then_restored_drives_on => link_cut_and_restored,
}

/// Sim seconds into the lap of the cut.
const CUT_AT_S: f64 = 30.0;

/// The car (the `vehicle` host: the master and the suite) and the operator's laptop (the
/// `supervisor` host).
struct Car {
    hosts: Hosts,
    procs: Vec<HostProc>,
    view: Observer,
}

impl crate::Deployment for Car {
    fn dump(&self) {
        for p in self.procs.iter().chain([&self.view.proc]) {
            eprintln!("--- {} ({}) ---\n{}", p.label, p.log.display(), p.output());
        }
    }

    fn no_panics(&self) -> Result<(), String> {
        let logs: String = self.procs.iter().map(HostProc::output).collect();
        gem_e2e::lap::no_panics(&logs)
    }
}

fn on_the_car_and_a_laptop(check: fn(&Car) -> Result<(), String>) {
    crate::scenario(available, || {
        crate::on_lap(
            || {
                let hosts = Hosts::build()?;
                let master = hosts.start_master(T)?;
                let (first, _) = gem_e2e::platform::waypoint_rows("gem_track.csv");
                let timeout = TIMEOUT_S.to_string();
                let mut args: Vec<String> = vec![
                    "--wait".into(),
                    "gem_bringup".into(),
                    "integration_run.launch".into(),
                    "platform:=gem_e2_sim".into(),
                    "operator_station:=false".into(),
                    format!("speedup:={SPEEDUP}"),
                    "waypoints:=gem_track.csv".into(),
                    format!("state_timeout_ms:={}", TIMEOUT_S * 1000.0),
                    format!("system_state_timeout_s:={timeout}"),
                    format!("pose_timeout_s:={timeout}"),
                    format!("clock_stall_s:={timeout}"),
                ];
                args.extend(gem_e2e::platform::spawn_at(&first));
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                let suite = hosts.spawn(Role::Vehicle, "roslaunch", &args);
                let operator = hosts.spawn(
                    Role::Supervisor,
                    "gemctl",
                    &["operator", "--car", Role::Vehicle.ip()],
                );
                let view = Observer::on(&hosts, Role::Vehicle);
                let car = Car {
                    hosts,
                    procs: vec![master, suite, operator],
                    view,
                };
                car.view.lap_started(&car.view)?;
                Ok(car)
            },
            check,
        )
    });
}

fn link_cut_and_restored(car: &Car) -> Result<(), String> {
    let (ok, nodes) = car.hosts.run(Role::Master, "rosnode", &["list"], T);
    if !ok || nodes.contains("mock_signals") || !nodes.contains("/signal_sources") {
        return Err(format!("rosnode list on gem_e2_sim:\n{nodes}"));
    }
    println!(
        "[signal_sources] rosnode list on platform:=gem_e2_sim:\n{}",
        nodes.trim()
    );
    car.view.mid_lap(CUT_AT_S)?;
    let cut_w = wall_now();
    car.hosts.cut(Role::Supervisor, Role::Vehicle)?;
    let (lost, lost_after, bound) = car.view.signal_lost_after(cut_w, "the cut")?;
    let at_rest = car
        .view
        .after(num(&lost, "w"), "odom", T, |e| num(e, "speed") < 0.05)
        .ok_or("the car did not come to rest after SIGNAL_LOST")?;
    let to_rest = num(&at_rest, "w") - num(&lost, "w");
    let mend_w = wall_now();
    car.hosts.mend(Role::Supervisor, Role::Vehicle)?;
    let running = car
        .view
        .after(mend_w, "state", T, |e| {
            num(e, "state") as u8 == SystemStateStamped::STATE_RUNNING && num(e, "errors") == 0.0
        })
        .ok_or("not RUNNING again after the link came back")?;
    let moving = car.view.moving_again_after(mend_w, "the link's return")?;
    car.view
        .after(mend_w, "odom", T, |e| num(e, "speed") > 1.0)
        .ok_or("the car did not drive on")?;
    println!(
        "[signal_sources] operator link cut at {CUT_AT_S} s into the lap: SIGNAL_LOST after {lost_after:.2} s wall (bound {bound:.2}), at rest {to_rest:.2} s wall later; link back: RUNNING after {:.2} s, moving after {moving:.2} s",
        num(&running, "w") - mend_w
    );
    Ok(())
}
