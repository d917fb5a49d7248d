//! CPU and wake-ups per node of the launched suite at 1×: `roslaunch gem_bringup
//! integration_run.launch speedup:=1` on a master of the launch's own (with `rosout`, as a
//! user starts it), measured idle (the suite up, no goal) and during a lap of the GEM
//! track.
//!
//! From `/proc`, two readings per window: CPU as user + system time over the window, in
//! percent of one core; wake-ups as the voluntary context switches of the node's threads
//! per second (`gem_ros::procfs::voluntary_switches` says why those). This process holds
//! no subscription while a window runs, so the figures are the suite's own.

use anyhow::{anyhow, bail, Context};
use gem_msgs::gem_controller_action::{ServeWaypoints, ServeWaypointsReq};
use gem_msgs::gem_state_msgs::TaskPlannerStatus;
use gem_ros::procfs;
use gem_testbed::{wait_until, Collector};
use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Child;
use std::time::{Duration, Instant};

/// The lap: the demo's track, served from gem_bringup/waypoints.
const TRACK: &str = "gem_track.csv";
/// The nodes of `integration_run.launch` (the controller runs as `/controller`).
const SUITE: [&str; 7] = [
    "/gem_sim",
    "/controller",
    "/mock_signals",
    "/state_manager",
    "/task_planner",
    "/status_overlay",
    "/health_monitor",
];
/// How long the suite is given to come up, and a served lap to start.
const UP_WITHIN: Duration = Duration::from_secs(60);
/// A pause before each window: the start-up's (or the goal's) burst of connections and
/// log lines is over by then, and the window measures the steady state.
const SETTLE: Duration = Duration::from_secs(5);

/// The launched suite; stopped (SIGINT, then the group) when dropped.
pub(crate) struct Launch {
    child: Child,
    /// roslaunch's output.
    pub(crate) log: PathBuf,
}

impl Drop for Launch {
    fn drop(&mut self) {
        gem_ros::launch::stop_group(&mut self.child, gem_ros::launch::SIGINT_GRACE);
    }
}

/// Starts the suite with the launch arguments `args` (`name:=value`) and a master of its
/// own on a free port, and points this process's ROS environment at it.
fn launch(args: &[&str]) -> anyhow::Result<Launch> {
    let home = std::env::temp_dir().join(format!("gem_bench_resources_{}", std::process::id()));
    std::fs::create_dir_all(home.join("log"))?;
    // Read when this process's node starts; no other thread exists yet.
    std::env::set_var("ROS_IP", "127.0.0.1");
    let log = home.join("roslaunch.log");
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let (uri, child) = gem_ros::launch::suite_on_own_master(&args, &log, |cmd| {
        cmd.envs(gem_testbed::user_env().iter().map(|(k, v)| (k, v)))
            .env("ROS_IP", "127.0.0.1")
            .env("ROS_HOME", &home)
            .env("ROS_LOG_DIR", home.join("log"))
            .env_remove("ROS_HOSTNAME");
    })
    .context("cannot run roslaunch (source runners/env.sh)")?;
    println!("suite launched on {uri} (log: {})", log.display());
    Ok(Launch { child, log })
}

/// The suite launched with `args` ([`launch`]), this process joined to it as
/// `gem_bench_<bench>`, every node of [`SUITE`] listed and the planner idle; the launch and
/// every node the master lists with its process id.
pub(crate) fn launch_up(
    bench: &str,
    args: &[&str],
) -> anyhow::Result<(Launch, Vec<(String, u32)>)> {
    let launch = launch(args)?;
    gem_ros::node::start_within(
        &format!("gem_bench_{bench}_{}", std::process::id()),
        Duration::from_secs(30),
    )?;
    if !wait_until(UP_WITHIN, || {
        let listed = listed_nodes();
        SUITE.iter().all(|n| listed.iter().any(|l| l == n))
    }) {
        bail!(
            "the suite did not come up; the master lists {:?} (see {})",
            listed_nodes(),
            launch.log.display()
        );
    }
    wait_planner(UP_WITHIN, "no task", |s| {
        s == TaskPlannerStatus::STATUS_NO_TASK
    })?;
    let mut nodes = Vec::new();
    for n in listed_nodes() {
        let pid = ros1_protocols::this_node::pid_of(&n).map_err(|e| anyhow!("{e}"))?;
        nodes.push((n, pid));
    }
    Ok((launch, nodes))
}

/// Every node the master lists (publishing, subscribing or serving), but this one.
fn listed_nodes() -> Vec<String> {
    ros1_protocols::this_node::other_nodes().unwrap_or_default()
}

/// One reading of a process: CPU ticks so far (every thread, ended ones too) and each
/// thread's voluntary context switches.
struct Reading {
    cpu_ticks: u64,
    switches: HashMap<u32, u64>,
}

fn read(pid: u32) -> Option<Reading> {
    Some(Reading {
        cpu_ticks: procfs::cpu_ticks(pid)?,
        switches: procfs::voluntary_switches(pid)?,
    })
}

/// The machine's CPU ticks so far, all CPUs: (total, busy, steal).
fn machine_ticks() -> Option<(u64, u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let f: Vec<u64> = stat
        .lines()
        .find(|l| l.starts_with("cpu "))?
        .split_whitespace()
        .skip(1)
        .filter_map(|v| v.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal: guest time is part of user time.
    let total: u64 = f.iter().take(8).sum();
    let idle = f.get(3)? + f.get(4)?;
    Some((total, total - idle - f.get(7)?, *f.get(7)?))
}

/// What one window measured: per node (CPU % of one core, wake-ups/s), and the
/// machine's busy and steal shares of all its CPUs.
struct Window {
    nodes: Vec<Option<(f64, f64)>>,
    machine_busy_percent: f64,
    steal_percent: f64,
    load_average: String,
}

/// Reads `nodes` now and after `length`.
fn window(nodes: &[(String, u32)], length: Duration) -> anyhow::Result<Window> {
    let machine0 = machine_ticks().ok_or_else(|| anyhow!("/proc/stat"))?;
    let first: Vec<Option<Reading>> = nodes.iter().map(|(_, pid)| read(*pid)).collect();
    let started = Instant::now();
    // The window itself: the nodes run undisturbed meanwhile.
    std::thread::sleep(length);
    let last: Vec<Option<Reading>> = nodes.iter().map(|(_, pid)| read(*pid)).collect();
    let seconds = started.elapsed().as_secs_f64();
    let machine1 = machine_ticks().ok_or_else(|| anyhow!("/proc/stat"))?;
    let hz = procfs::ticks_per_second();
    let figures = first
        .iter()
        .zip(&last)
        .map(|(a, b)| {
            let (a, b) = (a.as_ref()?, b.as_ref()?);
            Some((
                100.0 * b.cpu_ticks.saturating_sub(a.cpu_ticks) as f64 / hz / seconds,
                procfs::wakeups_between(&a.switches, &b.switches) as f64 / seconds,
            ))
        })
        .collect();
    let total = machine1.0.saturating_sub(machine0.0).max(1) as f64;
    Ok(Window {
        nodes: figures,
        machine_busy_percent: 100.0 * machine1.1.saturating_sub(machine0.1) as f64 / total,
        steal_percent: 100.0 * machine1.2.saturating_sub(machine0.2) as f64 / total,
        load_average: std::fs::read_to_string("/proc/loadavg")
            .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
            .unwrap_or_default(),
    })
}

/// Waits, at most `within`, until the planner's latest status satisfies `pred`,
/// subscribed only meanwhile.
fn wait_planner(within: Duration, what: &str, pred: impl Fn(u8) -> bool) -> anyhow::Result<()> {
    let status = Collector::<TaskPlannerStatus>::new("/task_planner_status");
    status
        .wait_latest(within, |s| pred(s.status))
        .map(|_| ())
        .ok_or_else(|| {
            anyhow!(
                "{what}: planner status {:?}",
                status.last().map(|s| s.status)
            )
        })
}

/// The nodes measured alone: each can start without the others and then has nothing to do
/// but its own periodic work (the state manager's heartbeat, mock_signals' signals, the
/// planner's status, the overlay's redraw, the controller's wait for a goal).
const ALONE: [&str; 5] = [
    "state_manager",
    "mock_signals",
    "task_planner",
    "status_overlay",
    "pure_pursuit",
];

/// Each node of [`ALONE`] started by itself beside a `rosmaster` under wall time (as
/// `rosrun` starts it), measured for `idle_s` after it registered and settled.
pub fn alone(idle_s: f64) -> anyhow::Result<()> {
    anyhow::ensure!(idle_s > 0.0 && idle_s.is_finite(), "--idle-s must be > 0");
    let ros = gem_testbed::ros();
    ros.set_sim_time(false);
    println!("| node, alone with rosmaster (wall time) | CPU % of one core | wake-ups/s |");
    println!("|---|---|---|");
    for binary in ALONE {
        let ns = gem_testbed::fresh_ns("alone");
        let node = ros.node(binary).arg(&format!("__ns:={ns}")).spawn();
        let name = format!("{ns}/{binary}");
        if !wait_until(UP_WITHIN, || listed_nodes().contains(&name)) {
            bail!("{name} did not register\n{}", node.output());
        }
        let pid = node.pid().ok_or_else(|| anyhow!("{name}: no pid"))?;
        std::thread::sleep(SETTLE);
        let w = window(&[(name.clone(), pid)], Duration::from_secs_f64(idle_s))?;
        let (cpu, wakeups) = w.nodes[0].ok_or_else(|| anyhow!("{name}: gone"))?;
        println!("| {binary} | {cpu:.3} | {wakeups:.1} |");
        drop(node);
    }
    Ok(())
}

pub fn run(idle_s: f64, lap_s: f64) -> anyhow::Result<()> {
    anyhow::ensure!(
        idle_s > 0.0 && lap_s > 0.0 && idle_s.is_finite() && lap_s.is_finite(),
        "--idle-s and --lap-s must be > 0"
    );
    let (launch, nodes) = launch_up("resources", &["speedup:=1"])?;
    std::thread::sleep(SETTLE);
    println!("idle (the suite up, no goal): {idle_s:.0} s");
    let idle = window(&nodes, Duration::from_secs_f64(idle_s))?;

    let serve = ros1_protocols::service::Client::<ServeWaypoints>::new("/serve_waypoints")
        .map_err(|e| anyhow!("{e}"))?;
    let served = serve
        .call(
            &ServeWaypointsReq {
                waypoints_file: TRACK.into(),
            },
            Duration::from_secs(10),
        )
        .map_err(|e| anyhow!("serve_waypoints {TRACK}: {e}"))?;
    anyhow::ensure!(served.success, "serve_waypoints {TRACK} refused");
    drop(serve);
    wait_planner(UP_WITHIN, "the lap did not start", |s| {
        s == TaskPlannerStatus::STATUS_RUNNING_TASK
    })?;
    std::thread::sleep(SETTLE);
    println!("during the lap of {TRACK}: {lap_s:.0} s");
    let lap = window(&nodes, Duration::from_secs_f64(lap_s))?;
    // The whole window was in the lap (about 320 s at 1x) if the task still runs.
    wait_planner(
        Duration::from_secs(5),
        "the lap ended within the window (shorten --lap-s)",
        |s| s == TaskPlannerStatus::STATUS_RUNNING_TASK,
    )?;

    print_table(&nodes, &idle, &lap);
    for (name, w) in [("idle", &idle), ("lap", &lap)] {
        println!(
            "machine during the {name} window: {:.0} % of all CPUs busy (suite included), steal {:.1} %, load average at its end {}",
            w.machine_busy_percent, w.steal_percent, w.load_average
        );
    }
    drop(launch);
    Ok(())
}

fn print_table(nodes: &[(String, u32)], idle: &Window, lap: &Window) {
    let cell = |f: Option<(f64, f64)>, i: usize| {
        f.map_or("—".to_owned(), |f| match i {
            0 => format!("{:.2}", f.0),
            _ => format!("{:.1}", f.1),
        })
    };
    println!();
    println!("| node | idle: CPU % of one core | idle: wake-ups/s | lap: CPU % of one core | lap: wake-ups/s |");
    println!("|---|---|---|---|---|");
    let mut total = [0.0; 4];
    for (i, (name, _)) in nodes.iter().enumerate() {
        let (a, b) = (idle.nodes[i], lap.nodes[i]);
        let ours = SUITE.contains(&name.as_str());
        let label = if ours {
            name.clone()
        } else {
            format!("{name} (not ours)")
        };
        println!(
            "| {label} | {} | {} | {} | {} |",
            cell(a, 0),
            cell(a, 1),
            cell(b, 0),
            cell(b, 1)
        );
        if ours {
            for (t, v) in total.iter_mut().zip([
                a.map_or(0.0, |a| a.0),
                a.map_or(0.0, |a| a.1),
                b.map_or(0.0, |b| b.0),
                b.map_or(0.0, |b| b.1),
            ]) {
                *t += v;
            }
        }
    }
    println!(
        "| the suite's {} nodes | {:.2} | {:.1} | {:.2} | {:.1} |",
        SUITE.len(),
        total[0],
        total[1],
        total[2],
        total[3]
    );
    println!();
}
