//! A simulator and one controller in a fresh namespace, and helpers to drive goals through
//! the action server: shared by the controller and stop tests.

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
        let mut c = ros.node(controller).arg(&format!("__ns:={ns}"));
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
