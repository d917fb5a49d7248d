//! A simulator and one controller in a fresh namespace, and helpers to drive goals through
//! the action server: shared by the controller and stop tests.

use gem_core::control::closed_loop::{self, CrossTrackMeter, LoopSettings};
use gem_core::control::path::Path;
use gem_core::control::tracker::{Tracker, TrackerConfig};
use gem_core::geometry::{Point, Pose};
use gem_core::vehicle::localization::LocalizationParams;
use gem_core::vehicle::VehicleParams;
use gem_msgs::gazebo_msgs::ModelStates;
use gem_msgs::gem_controller_action::{
    NavigateWaypointsFeedback, NavigateWaypointsGoal, NavigateWaypointsResult,
};
use gem_msgs::geometry_msgs::Pose2D;
use gem_ros::action::NavigateWaypoints;
use gem_testbed::{fresh_ns, repo_root, NodeProc, RosGuard};
use ros1_protocols::actionlib::{ActionClient, ClientEvent};
use std::time::{Duration, Instant};

/// How long a stack is given to come up.
const T: Duration = Duration::from_secs(30);

/// gem_sim (owning /clock at `speedup`, or on wall time when `speedup` is None) and a
/// controller, in a fresh namespace.
pub struct Stack {
    /// The namespace.
    pub ns: String,
    /// gem_sim.
    pub sim: NodeProc,
    /// The controller.
    pub controller: NodeProc,
}

impl Stack {
    /// gem_sim and `controller` with private parameters `extra`.
    pub fn start(
        ros: &RosGuard,
        controller: &str,
        speedup: Option<f64>,
        extra: &[(&str, &str)],
    ) -> Stack {
        Stack::start_with_sim(ros, controller, speedup, &[], extra)
    }

    /// As [`Stack::start`], with private parameters for gem_sim too.
    pub fn start_with_sim(
        ros: &RosGuard,
        controller: &str,
        speedup: Option<f64>,
        sim_params: &[(&str, &str)],
        extra: &[(&str, &str)],
    ) -> Stack {
        let ns = fresh_ns("ctl");
        ros.set_sim_time(speedup.is_some());
        let mut sim = ros.node("gem_sim").arg(&format!("__ns:={ns}"));
        for (k, v) in sim_params {
            sim = sim.param(k, v);
        }
        if let Some(x) = speedup {
            sim = sim.param("publish_clock", true).param("speedup", x);
        }
        let sim = sim.spawn();
        // Its /diagnostics in the namespace too: a subscriber of the shared master's
        // /diagnostics would be offered every earlier test's publishers as well.
        let mut c = ros
            .node(controller)
            .arg(&format!("__ns:={ns}"))
            .remap(gem_core::names::DIAGNOSTICS, &format!("{ns}/diagnostics"));
        for (k, v) in extra {
            c = c.param(k, v);
        }
        Stack {
            ns,
            sim,
            controller: c.spawn(),
        }
    }

    /// `name` in the stack's namespace.
    pub fn topic(&self, name: &str) -> String {
        format!("{}/{name}", self.ns)
    }

    /// An action client connected to the controller.
    pub fn client(&self) -> ActionClient<NavigateWaypoints> {
        let client =
            ActionClient::<NavigateWaypoints>::new(&self.topic("navigate_waypoints")).unwrap();
        assert!(
            client.wait_for_server(T),
            "no action server: {}\n{}",
            client.missing_links(),
            self.output()
        );
        client
    }

    /// Both nodes' output.
    pub fn output(&self) -> String {
        format!(
            "--- sim ---\n{}\n--- controller ---\n{}",
            self.sim.output(),
            self.controller.output()
        )
    }
}

/// `n` waypoints along +x, `spacing` apart.
pub fn line(n: usize, spacing: f64) -> Vec<Pose2D> {
    (0..n)
        .map(|i| Pose2D {
            x: i as f64 * spacing,
            y: 0.0,
            theta: 0.0,
        })
        .collect()
}

/// A goal of `waypoints` from `start_index`.
pub fn goal(waypoints: Vec<Pose2D>, start_index: u64) -> NavigateWaypointsGoal {
    NavigateWaypointsGoal {
        waypoints,
        start_index,
    }
}

/// Waits for goal `id` to end; returns (status, text, feedback seen, result).
pub fn wait_done(
    client: &ActionClient<NavigateWaypoints>,
    id: &str,
    timeout: Duration,
) -> (
    u8,
    String,
    Vec<NavigateWaypointsFeedback>,
    Option<NavigateWaypointsResult>,
) {
    let deadline = Instant::now() + timeout;
    let mut feedback = Vec::new();
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match client.next_event(left) {
            Some(ClientEvent::Feedback {
                id: fid,
                feedback: f,
            }) if fid == id => feedback.push(f),
            Some(ClientEvent::Done {
                id: did,
                status,
                text,
                result,
            }) if did == id => return (status, text, feedback, result),
            Some(_) => {}
            None => break,
        }
    }
    panic!("goal {id} did not end within {timeout:?}");
}

/// The GEM track's waypoints.
pub fn gem_track() -> Vec<Pose2D> {
    let text = std::fs::read_to_string(repo_root().join("launch/waypoints/gem_track.csv")).unwrap();
    text.lines()
        .map(|l| {
            let f: Vec<f64> = l
                .split(',')
                .take(3)
                .map(|v| v.trim().parse().unwrap())
                .collect();
            Pose2D {
                x: f[0],
                y: f[1],
                theta: f[2],
            }
        })
        .collect()
}

/// The rear axle's cross-track error against `points` along the true states the simulator
/// published: `(distance driven, error)` per message.
pub fn cross_track_of(states: &[ModelStates], points: &[Point]) -> Vec<(f64, f64)> {
    let mut meter = CrossTrackMeter::new(Path::new(points, 0.05).unwrap());
    let (mut driven, mut last) = (0.0, None::<Point>);
    let mut cte = Vec::new();
    for m in states {
        let Some(p) = m.pose.first() else { continue };
        let here = Point::new(p.position.x, p.position.y);
        driven += last.map_or(0.0, |l| l.distance(here));
        last = Some(here);
        cte.push((driven, meter.measure(here)));
    }
    cte
}

/// The core closed loop of `cfg` along `points` from the origin on gem_sim's default vehicle
/// with `localization`, as the nodes run it (20 Hz on 100 Hz physics): its RMS
/// cross-track error after convergence, the figure a run through ROS is compared with.
pub fn core_rms(cfg: TrackerConfig, points: &[Point], localization: LocalizationParams) -> f64 {
    let mut tracker = Tracker::new(points, 0, cfg).unwrap();
    let settings = LoopSettings {
        physics_dt: Duration::from_millis(10),
        control_every: 5,
        time_limit_s: 900.0,
        localization,
    };
    let path = Path::new(points, 0.05).unwrap();
    let trace = closed_loop::run(
        path,
        Pose::new(0.0, 0.0, 0.0),
        VehicleParams::default(),
        &mut tracker,
        &settings,
    );
    closed_loop::stats(&trace.cross_track(), closed_loop::CONVERGED_M).rms_after_m
}

/// The bound on an RMS through ROS for a core figure `core_m`: 20 % or 5 mm over it,
/// whichever is larger (at 10× a loaded 2-core machine delays some control ticks in sim
/// time).
pub fn ros_rms_bound(core_m: f64) -> f64 {
    (core_m * 1.2).max(core_m + 0.005)
}

/// Starts `node` with its private parameter `name` set to `value` through the parameter
/// server (as a launch file sets it; rosrust cannot read a NaN from its command line), and
/// checks that it exits at start-up with an error naming `~name` and saying `says`.
pub fn refused_at_start_up(ros: &RosGuard, node: &str, name: &str, value: &str, says: &str) {
    let ns = fresh_ns("ctl");
    let set = gem_testbed::cli(
        "rosparam",
        &["set", &format!("{ns}/{node}/{name}"), "--", value],
        T,
    );
    assert!(set.status.success(), "{set:?}");
    let mut proc = ros.node(node).arg(&format!("__ns:={ns}")).spawn();
    let Some(status) = proc.wait(T) else {
        panic!(
            "{node} with ~{name} = {value} still runs\n{}",
            proc.output()
        );
    };
    assert!(!status.success(), "{node}: ~{name} = {value}");
    let out = proc.output();
    assert!(
        out.contains(&format!("~{name}")) && out.contains(says),
        "{node}: ~{name} = {value}: {out}"
    );
}
