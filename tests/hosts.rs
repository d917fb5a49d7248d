//! The suite across three computers (network namespaces, `gem_e2e::hosts`): a master, a
//! supervisor and a vehicle, each started with its own launch file; cables cut, a host
//! killed, the master killed and restarted. Sim time comes from the vehicle (gem_sim at
//! 5×). Each scenario prints its figures.
//!
//! A test binary of its own (`harness = false`): without root or iproute2 every scenario
//! is reported as *skipped*, with the reason, never as passed.
//! `cargo test --release --test hosts -- [NAME...]` runs the named scenarios only.

use gem_core::control::stop::{StopLimits, StopProfile, STOPPED_BELOW_MPS};
use gem_e2e::hosts::{available, HostProc, Hosts, Role};
use serde_json::Value;
use std::time::{Duration, Instant};

/// Simulated seconds per wall second.
const SPEEDUP: f64 = 5.0;
/// The suite's ROS-time timeouts (staleness, system_state, pose), as the demo sets them
/// for 5×.
const TIMEOUT_S: f64 = 3.0;
/// Speed of the car mid-lap on the GEM track's straights, m/s (the controller's cruise).
const CRUISE_MPS: f64 = gem_core::control::speed::SpeedConfig::DEFAULT.nominal_mps;
/// Wall time for a whole lap at 5× with room to spare.
const LAP: Duration = Duration::from_secs(150);
/// Planner status codes (gem_state_msgs/TaskPlannerStatus).
const RUNNING_TASK: u64 = 2;
/// actionlib SUCCEEDED.
const SUCCEEDED: u64 = 3;
/// The STALE_DATA bit of /system_state.
const STALE_DATA: u64 = gem_core::state_manager::ErrorBits::STALE_DATA.bits() as u64;

type Scenario = fn(&Suite) -> Result<(), String>;

const SCENARIOS: [(&str, Scenario); 3] = [
    // (a) and (e) ride on (b)'s lap: the tools are tried before the cut, and the lap that
    // completes after it is a lap across the three hosts (one suite start and one lap less).
    (
        "abe_lap_across_three_hosts_with_a_cable_cut",
        supervisor_vehicle_link_cut,
    ),
    ("c_supervisor_host_dies", supervisor_host_dies),
    ("d_master_dies_mid_lap", master_dies_mid_lap),
];

fn main() {
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let chosen: Vec<_> = SCENARIOS
        .iter()
        .filter(|(name, _)| filters.is_empty() || filters.iter().any(|f| name.contains(f.as_str())))
        .collect();
    println!("\nrunning {} multi-host scenarios", chosen.len());
    let (mut passed, mut failed, mut skipped) = (0, 0, 0);
    for (name, scenario) in chosen {
        if let Err(why) = available() {
            println!("test {name} ... skipped: {why}");
            skipped += 1;
            continue;
        }
        let started = Instant::now();
        let outcome = Hosts::build().and_then(|hosts| {
            let suite = Suite::start(hosts)?;
            let outcome = scenario(&suite);
            if outcome.is_err() {
                suite.dump();
            }
            outcome.and_then(|()| suite.no_panics())
        });
        let secs = started.elapsed().as_secs_f64();
        match outcome {
            Ok(()) => {
                println!("test {name} ... ok ({secs:.1} s)");
                passed += 1;
            }
            Err(e) => {
                println!("test {name} ... FAILED ({secs:.1} s): {e}");
                failed += 1;
            }
        }
    }
    println!("\ntest result: {passed} passed; {failed} failed; {skipped} skipped\n");
    if failed > 0 {
        std::process::exit(1);
    }
}

/// The suite on three hosts, and an observer on the supervisor and on the vehicle.
struct Suite {
    hosts: Hosts,
    master: std::sync::Mutex<HostProc>,
    procs: Vec<HostProc>,
    supervisor_view: Observer,
    vehicle_view: Observer,
}

impl Suite {
    fn start(hosts: Hosts) -> Result<Suite, String> {
        let master = hosts.spawn(Role::Master, "roscore", &["-p", "11311"]);
        if !hosts.wait_port(
            Role::Master,
            Role::Master,
            gem_e2e::hosts::MASTER_PORT,
            Duration::from_secs(20),
        ) {
            return Err(format!("no master on its host:\n{}", master.output()));
        }
        let timeout = format!("{TIMEOUT_S}");
        let vehicle = hosts.spawn(
            Role::Vehicle,
            "roslaunch",
            &[
                "--wait",
                "gem_bringup",
                "vehicle.launch",
                &format!("speedup:={SPEEDUP}"),
                &format!("system_state_timeout_s:={timeout}"),
                &format!("pose_timeout_s:={timeout}"),
            ],
        );
        let supervisor = hosts.spawn(
            Role::Supervisor,
            "roslaunch",
            &[
                "--wait",
                "gem_bringup",
                "supervisor.launch",
                "waypoints:=gem_track.csv",
                &format!("state_timeout_ms:={}", (TIMEOUT_S * 1000.0) as u64),
                &format!("system_state_timeout_s:={timeout}"),
            ],
        );
        let supervisor_view = Observer::start(&hosts, Role::Supervisor);
        let vehicle_view = Observer::start(&hosts, Role::Vehicle);
        let suite = Suite {
            master: std::sync::Mutex::new(master),
            procs: vec![vehicle, supervisor],
            supervisor_view,
            vehicle_view,
            hosts,
        };
        // Moving along the lap, seen from both sides.
        suite
            .vehicle_view
            .wait(Duration::from_secs(60), |e| {
                ev(e) == "odom" && num(e, "speed") > 1.0
            })
            .ok_or("the car never moved")?;
        suite
            .supervisor_view
            .wait(Duration::from_secs(10), |e| {
                ev(e) == "planner" && num(e, "status") == RUNNING_TASK as f64
            })
            .ok_or("the supervisor never saw the task running")?;
        Ok(suite)
    }

    /// Every log of the suite's processes so far.
    fn logs(&self) -> String {
        let master = self.master.lock().unwrap_or_else(|e| e.into_inner());
        std::iter::once(&*master)
            .chain(&self.procs)
            .chain([&self.supervisor_view.proc, &self.vehicle_view.proc])
            .map(|p| format!("--- {} ({}) ---\n{}", p.label, p.log.display(), p.output()))
            .collect()
    }

    fn dump(&self) {
        eprintln!("{}", self.logs());
    }

    /// No process panicked.
    fn no_panics(&self) -> Result<(), String> {
        let logs = self.logs();
        match logs.lines().find(|l| l.contains("panicked")) {
            Some(line) => Err(format!("a process panicked: {line}")),
            None => Ok(()),
        }
    }

    /// The output of the process whose label ends with `suffix`.
    fn output_of(&self, suffix: &str) -> String {
        self.procs
            .iter()
            .filter(|p| p.label.ends_with(suffix))
            .map(HostProc::output)
            .collect()
    }

    /// Waits for the lap to end successfully, seen by `view`.
    fn lap_completes(&self, view: &Observer, timeout: Duration) -> Result<f64, String> {
        let started = Instant::now();
        view.wait(timeout, |e| {
            ev(e) == "result" && num(e, "status") == SUCCEEDED as f64
        })
        .ok_or_else(|| format!("no successful result within {timeout:?}"))?;
        Ok(started.elapsed().as_secs_f64())
    }

    /// Waits until the lap has gone on for `sim_s` of sim time.
    fn mid_lap(&self, sim_s: f64) -> Result<(), String> {
        let first = self
            .vehicle_view
            .wait(Duration::from_secs(5), |e| ev(e) == "odom")
            .ok_or("no odometry")?;
        self.vehicle_view
            .wait(Duration::from_secs_f64(sim_s / SPEEDUP + 20.0), |e| {
                ev(e) == "odom" && num(e, "sim") > num(&first, "sim") + sim_s
            })
            .map(|_| ())
            .ok_or_else(|| format!("the lap did not go on for {sim_s} s"))
    }

    /// The car comes to rest after `what` happened at wall time `w`, within the
    /// controller's watchdog timeout plus a comfortable stop from its speed then (plus
    /// 1 s). Returns that speed, the sim time to rest, the bound, and the event at rest.
    fn at_rest_after(&self, w: f64, what: &str) -> Result<(f64, f64, f64, Value), String> {
        let then = self
            .odom_after(w, Duration::from_secs(5))
            .ok_or_else(|| format!("no odometry after {what}"))?;
        let speed = num(&then, "speed");
        let bound = TIMEOUT_S + stop_time(speed.max(CRUISE_MPS)) + 1.0;
        let rest = self
            .vehicle_view
            .wait(Duration::from_secs_f64(bound / SPEEDUP + 20.0), |e| {
                ev(e) == "odom" && num(e, "w") > w && num(e, "speed") < STOPPED_BELOW_MPS
            })
            .ok_or_else(|| {
                format!("the car was not at rest within {bound:.1} s (sim) of {what}")
            })?;
        let to_rest = num(&rest, "sim") - num(&then, "sim");
        if to_rest > bound {
            return Err(format!(
                "at rest {to_rest:.2} s (sim) after {what} at {speed:.2} m/s: more than the bound {bound:.2} s"
            ));
        }
        Ok((speed, to_rest, bound, rest))
    }

    /// The car's simulated time and speed, from the vehicle's observer, at or after wall
    /// time `w`, waiting at most `timeout`.
    fn odom_after(&self, w: f64, timeout: Duration) -> Option<Value> {
        self.vehicle_view
            .wait(timeout, |e| ev(e) == "odom" && num(e, "w") >= w)
    }
}

/// A `tests/py/host_observer.py` on one host, read from its log.
struct Observer {
    proc: HostProc,
}

impl Observer {
    fn start(hosts: &Hosts, role: Role) -> Observer {
        let proc = hosts.spawn(role, "/usr/bin/python3", &["tests/py/host_observer.py"]);
        Observer { proc }
    }

    fn events(&self) -> Vec<Value> {
        self.proc
            .output()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// Waits for the first event (from the start) that satisfies `pred`.
    fn wait(&self, timeout: Duration, pred: impl Fn(&Value) -> bool) -> Option<Value> {
        let mut found = None;
        gem_e2e::wait_until(timeout, || {
            found = self.events().into_iter().find(|e| pred(e));
            found.is_some()
        });
        found
    }
}

fn ev(e: &Value) -> &str {
    e["ev"].as_str().unwrap_or_default()
}

fn num(e: &Value, key: &str) -> f64 {
    e[key].as_f64().unwrap_or(f64::NAN)
}

fn wall_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The start index of every goal the controller accepted, from its log lines
/// (`goal <id>: <n> waypoints from index <i>`).
fn goal_starts(log: &str) -> Vec<u64> {
    log.lines()
        .filter_map(|l| l.split(" waypoints from index ").nth(1))
        .filter_map(|i| i.trim().parse().ok())
        .collect()
}

/// The longest a comfortable stop from `speed` takes, s (sim).
fn stop_time(speed: f64) -> f64 {
    StopProfile::new(speed, StopLimits::COMFORTABLE).time_to_rest()
}

/// (e): `rostopic echo` and `dynparam` run on the master's host reach the nodes on the
/// other two.
fn tools_from_the_master_host(s: &Suite) -> Result<(), String> {
    let t = Duration::from_secs(30);
    for topic in ["/system_state", "/gem/base_footprint/odom"] {
        let (ok, out) = s
            .hosts
            .run(Role::Master, "rostopic", &["echo", "-n", "1", topic], t);
        if !ok || !out.contains("header") {
            return Err(format!(
                "rostopic echo {topic} from the master's host:\n{out}"
            ));
        }
    }
    let dynparam = |args: &[&str]| {
        let mut all = vec!["dynamic_reconfigure", "dynparam"];
        all.extend(args);
        s.hosts.run(Role::Master, "rosrun", &all, t)
    };
    let (ok, out) = dynparam(&["set", "/mock_signals", "temperature", "31.5"]);
    if !ok {
        return Err(format!("dynparam set from the master's host:\n{out}"));
    }
    let (ok, out) = dynparam(&["get", "/mock_signals"]);
    if !ok || !out.contains("'temperature': 31.5") {
        return Err(format!("dynparam get from the master's host:\n{out}"));
    }
    println!("[hosts] (e) rostopic echo and dynparam from the master's host reached both others");
    Ok(())
}

/// (e), then (b): the supervisor–vehicle cable is cut mid-lap: the controller's watchdog
/// stops the car, the supervisor reports STALE_DATA; the cable comes back: the task
/// resumes from its cached index and completes, (a) a lap across the three hosts.
fn supervisor_vehicle_link_cut(s: &Suite) -> Result<(), String> {
    tools_from_the_master_host(s)?;
    s.mid_lap(60.0)?;
    let cut_w = wall_now();
    s.hosts.cut(Role::Supervisor, Role::Vehicle)?;
    let (speed, to_rest, bound, _) = s.at_rest_after(cut_w, "the cut")?;
    let stale = s
        .supervisor_view
        .wait(Duration::from_secs(15), |e| {
            ev(e) == "state" && num(e, "w") > cut_w && (num(e, "errors") as u64) & STALE_DATA != 0
        })
        .ok_or("the supervisor never reported STALE_DATA")?;
    let stale_after = num(&stale, "w") - cut_w;
    if !s
        .output_of("vehicle:roslaunch")
        .contains("no system_state for")
    {
        return Err("the controller did not log the lost heartbeat".into());
    }
    // Stay cut a little longer, then restore.
    std::thread::sleep(Duration::from_secs(1));
    let goals_before = goal_starts(&s.output_of("vehicle:roslaunch")).len();
    let up_w = wall_now();
    s.hosts.mend(Role::Supervisor, Role::Vehicle)?;
    let moving = s
        .vehicle_view
        .wait(Duration::from_secs(20), |e| {
            ev(e) == "odom" && num(e, "w") > up_w && num(e, "speed") > 0.5
        })
        .ok_or("the car did not move again within 20 s of the cable's return")?;
    let resumed_after = num(&moving, "w") - up_w;
    // The planner's resume: a new goal from the index it had reached (the controller logs
    // each goal it accepts).
    let start_index = gem_e2e::wait_until(Duration::from_secs(20), || {
        goal_starts(&s.output_of("vehicle:roslaunch")).len() > goals_before
    })
    .then(|| {
        goal_starts(&s.output_of("vehicle:roslaunch"))
            .last()
            .copied()
    })
    .flatten()
    .ok_or("no new goal reached the controller after the cable's return")?;
    if start_index == 0 {
        return Err("the task restarted from index 0, not from its cached index".into());
    }
    let wall = s.lap_completes(&s.supervisor_view, LAP)?;
    println!(
        "[hosts] (b) cable cut at {speed:.2} m/s: at rest {to_rest:.2} s (sim) later (bound {bound:.2} s: \
         watchdog {TIMEOUT_S} s + comfortable stop); supervisor STALE_DATA after {stale_after:.2} s wall; \
         cable back: moving again after {resumed_after:.2} s wall, resumed from index {start_index} \
         ({goals_before} goals before); (a) the lap across the three hosts completed {wall:.1} s wall later"
    );
    if resumed_after > 5.0 {
        return Err(format!(
            "the task resumed {resumed_after:.2} s (wall) after the cable's return: more than 5 s"
        ));
    }
    Ok(())
}

/// (c) Every process of the supervisor's host is killed mid-lap: the car stops.
fn supervisor_host_dies(s: &Suite) -> Result<(), String> {
    s.mid_lap(40.0)?;
    let kill_w = wall_now();
    let killed = s.hosts.kill_host(Role::Supervisor);
    let (speed, to_rest, bound, rest) = s.at_rest_after(kill_w, "the supervisor's death")?;
    // It stays at rest.
    let later = s
        .odom_after(num(&rest, "w") + 2.0, Duration::from_secs(10))
        .ok_or("no odometry later")?;
    if num(&later, "speed") >= STOPPED_BELOW_MPS {
        return Err(format!("the car moved again: {later}"));
    }
    println!(
        "[hosts] (c) supervisor host died ({killed} processes killed) at {speed:.2} m/s: at rest {to_rest:.2} s (sim) later (bound {bound:.2} s)"
    );
    Ok(())
}

/// (d) The master dies mid-lap: established links keep the lap going, every node logs
/// that the master is unreachable and the health monitor reports it; a master started
/// again on the same address: every node registers with it again, and new links form.
fn master_dies_mid_lap(s: &Suite) -> Result<(), String> {
    s.mid_lap(40.0)?;
    let kill_w = wall_now();
    s.master.lock().unwrap_or_else(|e| e.into_inner()).stop();
    s.hosts.kill_host(Role::Master);
    // Every node says so (a warning reaches the launch's screen from every node).
    const LOST: &str = "is unreachable";
    const NODES: usize = 7;
    let logged = gem_e2e::wait_until(Duration::from_secs(10), || {
        s.output_of("roslaunch").matches(LOST).count() >= NODES
    });
    if !logged {
        return Err(format!(
            "{} of {NODES} nodes logged the lost master",
            s.output_of("roslaunch").matches(LOST).count()
        ));
    }
    let reported = s
        .supervisor_view
        .wait(Duration::from_secs(10), |e| {
            ev(e) == "master" && num(e, "w") > kill_w && num(e, "level") == 2.0
        })
        .ok_or("the health monitor did not report the master unreachable")?;
    let reported_after = num(&reported, "w") - kill_w;
    // The car drives on.
    let later = s
        .odom_after(wall_now() + 1.0, Duration::from_secs(5))
        .ok_or("no odometry after the master died")?;
    if num(&later, "speed") < 1.0 {
        return Err(format!("the car slowed down without a master: {later}"));
    }
    // A new master on the same address: every node registers again.
    let restart_w = wall_now();
    let master = s.hosts.spawn(Role::Master, "roscore", &["-p", "11311"]);
    *s.master.lock().unwrap_or_else(|e| e.into_inner()) = master;
    let t = Duration::from_secs(20);
    let mut listed = String::new();
    let all_back = gem_e2e::wait_until(Duration::from_secs(30), || {
        let (_, out) = s.hosts.run(Role::Master, "rosnode", &["list"], t);
        listed = out;
        [
            "/controller",
            "/gem_sim",
            "/mock_signals",
            "/state_manager",
            "/task_planner",
            "/health_monitor",
            "/status_overlay",
        ]
        .iter()
        .all(|n| listed.lines().any(|l| l.trim() == *n))
    });
    if !all_back {
        return Err(format!(
            "the new master does not list every node:\n{listed}"
        ));
    }
    let registered_after = wall_now() - restart_w;
    // New links form: a subscriber started now finds the publishers.
    let (ok, out) = s.hosts.run(
        Role::Master,
        "rostopic",
        &["echo", "-n", "1", "/system_state"],
        t,
    );
    if !ok || !out.contains("header") {
        return Err(format!(
            "rostopic echo /system_state on the new master:\n{out}"
        ));
    }
    let (ok, out) = s.hosts.run(Role::Master, "rosservice", &["list"], t);
    if !ok || !out.contains("/gazebo/get_model_state") {
        return Err(format!("rosservice list on the new master:\n{out}"));
    }
    s.supervisor_view
        .wait(Duration::from_secs(10), |e| {
            ev(e) == "master" && num(e, "w") > restart_w && num(e, "level") == 0.0
        })
        .ok_or("the health monitor did not report the master back")?;
    let wall = s.lap_completes(&s.vehicle_view, LAP)?;
    println!(
        "[hosts] (d) master killed mid-lap: every node logged it, the health monitor reported it after {reported_after:.2} s wall; \
         a new master: every node listed again {registered_after:.1} s wall after its start, rostopic echo and rosservice reach them; \
         the lap completed {wall:.1} s wall later"
    );
    Ok(())
}
