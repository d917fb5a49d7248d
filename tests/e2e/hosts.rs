//! The suite across three computers (network namespaces, `gem_e2e::hosts`): a master, a
//! supervisor and a vehicle, each started with its own launch file; cables cut, a host
//! killed, the master killed and restarted. Sim time comes from the vehicle (gem_sim at
//! 5×). Each scenario prints its figures.
//!
//! Without root or iproute2 every scenario writes `skipped: <reason>` and passes; under
//! `CI=true` it fails naming what is missing.
//! `cargo test --release --test e2e hosts::` runs them.

use gem_e2e::hosts::{available, HostProc, Hosts, Role};
use gem_e2e::lap::{
    ev, goal_starts, graph_back, new_goal_start, no_panics, num, wall_now, Observer, LAP, NODES,
    SPEEDUP, STALE_DATA, TIMEOUT_S,
};
use std::time::Duration;

// (a), (d) and (e) ride on (b)'s lap: the tools are tried before the cut, the master dies
// once the car drives again, and the lap that completes after both is a lap across the
// three hosts (two suite starts and two laps less).
scenario_tests! { on_three_hosts:
    abde_lap_across_three_hosts_through_a_cable_cut_and_a_master_death => cut_then_master_death,
    c_supervisor_host_dies => supervisor_host_dies,
}

/// Sim seconds into the lap of the cable cut (b), and of the master's death (d), once the
/// car drives on after the cut.
const CUT_AT_S: f64 = 60.0;
const MASTER_DIES_AT_S: f64 = 130.0;

/// Runs `check` on the suite started on three fresh hosts.
fn on_three_hosts(check: fn(&Suite) -> Result<(), String>) {
    crate::scenario(available, || {
        crate::on_lap(|| Suite::start(Hosts::build()?), check)
    });
}

impl crate::Deployment for Suite {
    fn dump(&self) {
        eprintln!("{}", self.logs());
    }

    fn no_panics(&self) -> Result<(), String> {
        no_panics(&self.logs())
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
        let master = hosts.start_master(Duration::from_secs(20))?;
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
        let supervisor_view = Observer::on(&hosts, Role::Supervisor);
        let vehicle_view = Observer::on(&hosts, Role::Vehicle);
        let suite = Suite {
            master: std::sync::Mutex::new(master),
            procs: vec![vehicle, supervisor],
            supervisor_view,
            vehicle_view,
            hosts,
        };
        // Moving along the lap, seen from both sides.
        suite.vehicle_view.lap_started(&suite.supervisor_view)?;
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

    /// The output of the process whose label ends with `suffix`.
    fn output_of(&self, suffix: &str) -> String {
        self.procs
            .iter()
            .filter(|p| p.label.ends_with(suffix))
            .map(HostProc::output)
            .collect()
    }
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

/// (e), then (b), then (d), and (a): the lap completes across the three hosts.
fn cut_then_master_death(s: &Suite) -> Result<(), String> {
    tools_from_the_master_host(s)?;
    supervisor_vehicle_link_cut(s)?;
    master_dies_mid_lap(s)?;
    let wall = s.supervisor_view.lap_completes(LAP)?;
    println!("[hosts] (a) the lap across the three hosts completed {wall:.1} s wall later");
    Ok(())
}

/// (b) The supervisor–vehicle cable is cut mid-lap: the controller's watchdog stops the
/// car, the supervisor reports STALE_DATA; the cable comes back: the task resumes from its
/// cached index.
fn supervisor_vehicle_link_cut(s: &Suite) -> Result<(), String> {
    let (cut_w, (), rest) = s.vehicle_view.stop_mid_lap(CUT_AT_S, "the cut", || {
        s.hosts.cut(Role::Supervisor, Role::Vehicle)
    })?;
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
    let resumed_after = s
        .vehicle_view
        .moving_again_after(up_w, "the cable's return")?;
    // The planner's resume: a new goal from the index it had reached (the controller logs
    // each goal it accepts).
    let start_index = new_goal_start(|| s.output_of("vehicle:roslaunch"), goals_before)?;
    if start_index == 0 {
        return Err("the task restarted from index 0, not from its cached index".into());
    }
    println!(
        "[hosts] (b) cable cut {rest}; supervisor STALE_DATA after {stale_after:.2} s wall; \
         cable back: moving again after {resumed_after:.2} s wall, resumed from index {start_index} \
         ({goals_before} goals before)"
    );
    Ok(())
}

/// (c) Every process of the supervisor's host is killed mid-lap: the car stops.
fn supervisor_host_dies(s: &Suite) -> Result<(), String> {
    let (_, killed, rest) = s
        .vehicle_view
        .stop_mid_lap(40.0, "the supervisor's death", || {
            Ok(s.hosts.kill_host(Role::Supervisor))
        })?;
    s.vehicle_view.stays_at_rest(&rest)?;
    println!("[hosts] (c) supervisor host died ({killed} processes killed) {rest}");
    Ok(())
}

/// (d) The master dies mid-lap: established links keep the lap going, every node logs
/// that the master is unreachable and the health monitor reports it; a master started
/// again on the same address: every node registers with it again, and new links form.
fn master_dies_mid_lap(s: &Suite) -> Result<(), String> {
    s.vehicle_view.mid_lap(MASTER_DIES_AT_S)?;
    // Every node says so (a warning reaches the launch's screen from every node): counted
    // from here, past what the lap logged before.
    const LOST: &str = "is unreachable";
    let lost = || s.output_of("roslaunch").matches(LOST).count();
    let lost_before = lost();
    let kill_w = wall_now();
    s.master.lock().unwrap_or_else(|e| e.into_inner()).stop();
    s.hosts.kill_host(Role::Master);
    let logged = gem_testbed::wait_until(Duration::from_secs(10), || {
        lost() >= lost_before + NODES.len()
    });
    if !logged {
        return Err(format!(
            "{} of {} nodes logged the lost master",
            lost() - lost_before,
            NODES.len(),
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
        .vehicle_view
        .odom_after(wall_now() + 1.0, Duration::from_secs(5))
        .ok_or("no odometry after the master died")?;
    if num(&later, "speed") < 1.0 {
        return Err(format!("the car slowed down without a master: {later}"));
    }
    // A new master on the same address: every node registers again.
    let restart_w = wall_now();
    let master = s.hosts.spawn(Role::Master, "roscore", &["-p", "11311"]);
    *s.master.lock().unwrap_or_else(|e| e.into_inner()) = master;
    let registered_after = graph_back(
        &|program: &str, args: &[&str], t| s.hosts.run(Role::Master, program, args, t),
        restart_w,
    )?;
    s.supervisor_view
        .wait(Duration::from_secs(10), |e| {
            ev(e) == "master" && num(e, "w") > restart_w && num(e, "level") == 0.0
        })
        .ok_or("the health monitor did not report the master back")?;
    println!(
        "[hosts] (d) master killed mid-lap: every node logged it, the health monitor reported it after {reported_after:.2} s wall; \
         a new master: every node listed again {registered_after:.1} s wall after its start, rostopic echo and rosservice reach them"
    );
    Ok(())
}
