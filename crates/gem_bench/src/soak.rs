//! Memory over a long run: the launched suite (`integration_run.launch` on a master of its
//! own) drives laps of the GEM track at a speed-up for a given wall time while random
//! faults of the catalogue are set and cleared on `mock_signals`; each node's resident
//! memory (`VmRSS`) is read after the first lap and at the end.
//!
//! A car serves routes all day: a node whose memory grows with its goals, pauses or laps
//! runs out of it one day. The figure that counts is the change from the first lap (every
//! allocation the node makes once, its buffers and caches, is made by then) to the end.
//!
//! Each lap starts from the first lap's start pose (`/gazebo/set_model_state`), so a lap
//! is the same route whatever the last one did. A fault is set on `mock_signals` through
//! its reconfigure service, held until the planner pauses (its hold-off window, if it has
//! one), then cleared; the next comes after a random gap of sim time.

use crate::resources::launch_up;
use anyhow::anyhow;
use gem_core::faults::CATALOGUE;
use gem_msgs::gazebo_msgs::{
    GetModelState, GetModelStateReq, ModelState, SetModelState, SetModelStateReq,
};
use gem_msgs::gem_controller_action::{ServeWaypoints, ServeWaypointsReq};
use gem_msgs::gem_state_msgs::TaskPlannerStatus as Planner;
use gem_nodes::mock_signals::injection::Injection;
use gem_ros::procfs;
use gem_testbed::Collector;
use rand::{Rng, SeedableRng};
use ros1_protocols::dynamic_reconfigure::Client as Reconfigure;
use ros1_protocols::service::Client;
use std::time::{Duration, Instant};

/// The lap: the demo's track.
const TRACK: &str = "gem_track.csv";
/// How long a call, or the planner's answer to a fault or its clearing, may take.
const WITHIN: Duration = Duration::from_secs(60);

/// The soak's settings.
pub struct Soak {
    /// Wall time to run.
    pub minutes: f64,
    /// Simulated seconds per wall second.
    pub speedup: f64,
    /// Mean gap between faults, simulated seconds (each gap uniform in ½..1½ of it).
    pub fault_every_s: f64,
    /// Seed of the faults' order and gaps.
    pub seed: u64,
}

/// Each node's resident memory now, KiB (`None`: gone).
fn rss_kib(nodes: &[(String, u32)]) -> Vec<Option<u64>> {
    nodes
        .iter()
        .map(|(_, pid)| {
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
            procfs::status_field(&status, "VmRSS")
        })
        .collect()
}

fn mib(kib: Option<u64>) -> String {
    kib.map_or("—".into(), |k| format!("{:.1}", k as f64 / 1024.0))
}

pub fn run(s: &Soak) -> anyhow::Result<()> {
    anyhow::ensure!(
        s.minutes > 0.0 && s.speedup > 0.0 && s.fault_every_s > 0.0,
        "--minutes, --speedup and --fault-every-s must be > 0"
    );
    let speedup = format!("speedup:={}", s.speedup);
    // ROS-time timeouts wide enough for a loaded 2-core machine at the speed-up, as the
    // suite scenarios launch it.
    let (launch, nodes) = launch_up(
        "soak",
        &[
            &speedup,
            "state_timeout_ms:=3000",
            "system_state_timeout_s:=3",
            "pose_timeout_s:=3",
        ],
    )?;
    let ros = |e: ros1_protocols::RosError| anyhow!("{e}");
    let mock = Reconfigure::new("/mock_signals", WITHIN).map_err(ros)?;
    let serve = Client::<ServeWaypoints>::new("/serve_waypoints").map_err(ros)?;
    let teleport = Client::<SetModelState>::new("/gazebo/set_model_state").map_err(ros)?;
    let start = Client::<GetModelState>::new("/gazebo/get_model_state")
        .map_err(ros)?
        .call(
            &GetModelStateReq {
                model_name: "gem".into(),
                relative_entity_name: String::new(),
            },
            WITHIN,
        )
        .map_err(|e| anyhow!("get_model_state: {e}"))?;
    let status = Collector::<Planner>::new("/task_planner_status");
    let mut rng = rand::rngs::StdRng::seed_from_u64(s.seed);
    let began = Instant::now();
    let deadline = began + Duration::from_secs_f64(s.minutes * 60.0);
    let (mut laps, mut faults) = (0usize, 0usize);
    let mut after_first_lap = None;
    println!(
        "soak: {:.0} min at {}x, a fault every {:.0} s of sim time on average (seed {}), laps of {TRACK}",
        s.minutes, s.speedup, s.fault_every_s, s.seed
    );
    while Instant::now() < deadline {
        let reset = SetModelStateReq {
            model_state: ModelState {
                model_name: "gem".into(),
                pose: start.pose.clone(),
                twist: Default::default(),
                reference_frame: String::new(),
            },
        };
        let teleported = teleport.call(&reset, WITHIN).map_err(|e| anyhow!("{e}"))?;
        anyhow::ensure!(
            teleported.success,
            "set_model_state: {}",
            teleported.status_message
        );
        status.clear();
        let served = serve
            .call(
                &ServeWaypointsReq {
                    waypoints_file: TRACK.into(),
                },
                WITHIN,
            )
            .map_err(|e| anyhow!("serve_waypoints: {e}"))?;
        anyhow::ensure!(served.success, "the planner refused {TRACK}");
        planner(&status, "the lap to start", |st| {
            st == Planner::STATUS_RUNNING_TASK
        })?;
        loop {
            let gap_s = s.fault_every_s * rng.gen_range(0.5..1.5) / s.speedup;
            let done = |st: u8| st == Planner::STATUS_NO_TASK;
            if status
                .wait_latest(Duration::from_secs_f64(gap_s), |m| done(m.status))
                .is_some()
            {
                break;
            }
            let fault = &CATALOGUE[rng.gen_range(0..CATALOGUE.len())];
            let injection = Injection::of(fault.kind);
            injection
                .set_on(&mock, injection.faulty)
                .map_err(|e| anyhow!("{e}"))?;
            faults += 1;
            planner(&status, fault.name, |st| {
                st == Planner::STATUS_PAUSED_TASK || done(st)
            })?;
            injection
                .set_on(&mock, injection.healthy())
                .map_err(|e| anyhow!("{e}"))?;
            planner(&status, "the clearing", |st| {
                st == Planner::STATUS_RUNNING_TASK || done(st)
            })?;
        }
        laps += 1;
        let now = rss_kib(&nodes);
        let first = after_first_lap.get_or_insert_with(|| now.clone());
        let grown = nodes
            .iter()
            .zip(first.iter().zip(&now))
            .filter_map(|((name, _), (a, b))| Some((name, (*b)?.checked_sub((*a)?)?)))
            .max_by_key(|(_, d)| *d);
        println!(
            "lap {laps} done at {:.1} min, {faults} faults; most grown since lap 1: {}",
            began.elapsed().as_secs_f64() / 60.0,
            grown.map_or("—".into(), |(n, d)| format!("{n} +{d} KiB"))
        );
    }
    let end = rss_kib(&nodes);
    let first = after_first_lap.ok_or_else(|| anyhow!("no lap was completed"))?;
    println!();
    println!(
        "{laps} laps, {faults} faults in {:.1} min at {}x (seed {})",
        began.elapsed().as_secs_f64() / 60.0,
        s.speedup,
        s.seed
    );
    println!("| node | RSS after lap 1, MiB | RSS at the end, MiB | change, MiB |");
    println!("|---|---|---|---|");
    for (i, (name, _)) in nodes.iter().enumerate() {
        let change = match (first[i], end[i]) {
            (Some(a), Some(b)) => format!("{:+.2}", (b as f64 - a as f64) / 1024.0),
            _ => "gone".into(),
        };
        println!(
            "| {name} | {} | {} | {change} |",
            mib(first[i]),
            mib(end[i])
        );
    }
    drop(launch);
    Ok(())
}

/// Waits until the planner's latest status satisfies `pred`, naming `what` otherwise.
fn planner(
    status: &Collector<Planner>,
    what: &str,
    pred: impl Fn(u8) -> bool,
) -> anyhow::Result<()> {
    status
        .wait_latest(WITHIN, |m| pred(m.status))
        .map(drop)
        .ok_or_else(|| {
            anyhow!(
                "{what}: planner status {:?}",
                status.last().map(|m| m.status)
            )
        })
}
