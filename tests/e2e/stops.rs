//! Graded stops through ROS (docs/spec.md §4): `gem_sim` on its tyre-slip model and a
//! controller, `system_state` published by the test as the state manager would, the goal
//! cancelled as the planner would.

use gem_core::control::closed_loop::CrossTrackMeter;
use gem_core::control::path::Path;
use gem_core::control::stop::{StopLimits, StopProfile, STOPPED_BELOW_MPS};
use gem_core::geometry::Point;
use gem_e2e::control::{goal, wait_done, Stack};
use gem_msgs::ackermann_msgs::AckermannDrive;
use gem_msgs::gem_state_msgs::SystemStateStamped as Sys;
use gem_msgs::geometry_msgs::Pose2D;
use gem_msgs::nav_msgs::Odometry;
use gem_testbed::{fresh_ns, ros, wait_until, Collector};
use ros1_protocols::actionlib::status;
use std::f64::consts::PI;
use std::time::Duration;

const T: Duration = Duration::from_secs(30);

/// 40 m straight, then a left bend of the GEM track's tightest radius (27 m) for three
/// quarters of a turn.
fn straight_then_bend() -> Vec<Pose2D> {
    let mut p: Vec<(f64, f64)> = (0..200).map(|i| (i as f64 * 0.2, 0.0)).collect();
    let n = 800;
    p.extend((0..=n).map(|i| {
        let a = i as f64 / n as f64 * 1.5 * PI;
        (40.0 + 27.0 * a.sin(), 27.0 * (1.0 - a.cos()))
    }));
    p.iter()
        .map(|&(x, y)| Pose2D { x, y, theta: 0.0 })
        .collect()
}

fn error(bits: u8) -> Sys {
    Sys {
        state: Sys::STATE_ERROR,
        error_code: bits,
        ..Default::default()
    }
}

/// A stack at 5.5 m/s (lateral acceleration 2.5 m/s²) driving into the bend.
struct Drive {
    stack: Stack,
    cmds: Collector<AckermannDrive>,
    odom: Collector<Odometry>,
    state: ros1_protocols::runtime::Publisher<Sys>,
    client: ros1_protocols::actionlib::ActionClient<gem_ros::action::NavigateWaypoints>,
    id: String,
    path: Vec<Point>,
}

impl Drive {
    fn start(ros: &gem_testbed::RosGuard, extra: &[(&str, &str)]) -> Drive {
        let mut params = vec![
            ("nominal_speed_mps", "5.5"),
            ("max_lateral_accel_mps2", "2.5"),
        ];
        params.extend_from_slice(extra);
        let stack = Stack::start(ros, "pure_pursuit", Some(5.0), &params);
        let cmds = Collector::<AckermannDrive>::new(&stack.topic("gem/ackermann_cmd"));
        let odom = Collector::<Odometry>::new(&stack.topic("gem/base_footprint/odom"));
        let state =
            ros1_protocols::this_node::publish::<Sys>(&stack.topic("system_state"), 10).unwrap();
        assert!(wait_until(T, || state.subscriber_count() > 0));
        let waypoints = straight_then_bend();
        let path = waypoints.iter().map(|w| Point::new(w.x, w.y)).collect();
        let client = stack.client();
        let id = client.send_goal(goal(waypoints, 0)).unwrap();
        Drive {
            stack,
            cmds,
            odom,
            state,
            client,
            id,
            path,
        }
    }

    /// Waits until the car is `into_m` metres into the bend at cruise speed.
    fn reach_the_bend(&self, into_m: f64) {
        let angle = into_m / 27.0;
        let (bx, by) = (40.0 + 27.0 * angle.sin(), 27.0 * (1.0 - angle.cos()));
        assert!(
            self.odom
                .wait_for(Duration::from_secs(60), |o| {
                    let p = &o.pose.pose.position;
                    (p.x - bx).hypot(p.y - by) < 1.5 && o.twist.twist.linear.x > 5.0
                })
                .is_some(),
            "the car never reached the bend at speed\n{}",
            self.stack.output()
        );
    }

    /// Odometry from the message stamped `from_s` (sim) on: (stamp, position, speed).
    fn since(&self, from_s: f64) -> Vec<(f64, Point, f64)> {
        self.odom
            .all()
            .iter()
            .map(|o| {
                let p = &o.pose.pose.position;
                (
                    o.header.stamp.seconds(),
                    Point::new(p.x, p.y),
                    o.twist.twist.linear.x,
                )
            })
            .filter(|s| s.0 >= from_s)
            .collect()
    }

    fn now_s(&self) -> f64 {
        self.odom.last().expect("odometry").header.stamp.seconds()
    }

    /// Waits for the car at rest after `after_s` (sim); returns the sim time.
    fn at_rest(&self, after_s: f64) -> f64 {
        let rest = self.odom.wait_for(T, |o| {
            o.twist.twist.linear.x.abs() < STOPPED_BELOW_MPS && o.header.stamp.seconds() > after_s
        });
        rest.unwrap_or_else(|| panic!("the car never came to rest\n{}", self.stack.output()))
            .header
            .stamp
            .seconds()
    }

    /// The largest distance from the path from `from_s` (sim) on (the meter follows the
    /// whole drive, so its progress is where the car is).
    fn max_deviation(&self, from_s: f64) -> f64 {
        let mut meter = CrossTrackMeter::new(Path::new(&self.path, 0.05).unwrap());
        let mut worst: f64 = 0.0;
        for (t, p, _) in self.since(0.0) {
            let e = meter.measure(p).abs();
            if t >= from_s {
                worst = worst.max(e);
            }
        }
        worst
    }
}

#[test]
fn a_comfortable_stop_in_the_bend_stays_on_the_path_and_ends_at_rest_in_time() {
    let ros = ros();
    let d = Drive::start(&ros, &[]);
    d.reach_the_bend(15.0);
    let before = d.cmds.len();
    let began = d.now_s();
    d.state.send(error(Sys::ERROR_BATTERY_LOW)).unwrap();
    // The planner's cancel: the goal ends at once, the stop goes on.
    assert!(wait_until(T, || d.cmds.len() > before + 1));
    d.client.cancel(&d.id).unwrap();
    let (st, _, _, _) = wait_done(&d.client, &d.id, T);
    assert_eq!(status::name(st), "PREEMPTED");
    let rest = d.at_rest(began);
    let cmds: Vec<AckermannDrive> = d.cmds.all()[before..].to_vec();
    // The first command after ERROR brakes along the ramp, not to zero at once.
    let first = cmds
        .iter()
        .position(|c| c.acceleration > 0.0)
        .expect("a ramp command");
    assert!(first <= 1, "{:?}", &cmds[..4.min(cmds.len())]);
    assert!(cmds[first].speed > 4.5, "{:?}", cmds[first]);
    assert_eq!(cmds[first].acceleration, 1.0);
    assert!((cmds[first].jerk - 0.6).abs() < 1e-6);
    // The speed command only ever falls while stopping, and the steering keeps working:
    // the bend needs about L/R = 0.065 rad to the very end.
    let ramp: Vec<&AckermannDrive> = cmds[first..].iter().take_while(|c| c.speed > 0.0).collect();
    assert!(ramp.len() > 20, "{} ramp commands", ramp.len());
    assert!(ramp.windows(2).all(|w| w[1].speed <= w[0].speed + 1e-4));
    assert!(
        ramp.iter().all(|c| c.steering_angle > 0.03),
        "steering dropped"
    );
    let deviation = d.max_deviation(began);
    let took = rest - began;
    let bound = StopProfile::new(5.5, StopLimits::COMFORTABLE).time_to_rest() + 1.0;
    eprintln!("comfortable stop in the bend: at rest after {took:.2} s (sim), {deviation:.3} m off the path at most");
    assert!(deviation <= 0.10, "{deviation} m off the path");
    assert!(took <= bound, "at rest after {took} s, bound {bound} s");
    // Once the ramp has run out: zero commands, until the next goal.
    assert!(d.cmds.wait_for(T, |c| c.speed == 0.0).is_some());
    let n = d.cmds.len();
    assert!(wait_until(T, || d.cmds.len() > n + 5));
    let after = d.cmds.all();
    let zero = after
        .iter()
        .rposition(|c| c.speed != 0.0)
        .map_or(0, |i| i + 1);
    assert!(zero <= n, "a moving command after the stop ended");
}

#[test]
fn a_comfortable_stop_escalates_to_an_emergency_one_at_once() {
    let ros = ros();
    let d = Drive::start(&ros, &[]);
    d.reach_the_bend(5.0);
    d.state.send(error(Sys::ERROR_BATTERY_LOW)).unwrap();
    assert!(d
        .cmds
        .wait_for(T, |c| c.acceleration > 0.0 && c.speed > 3.0)
        .is_some());
    let mid = d.cmds.len();
    d.state
        .send(error(Sys::ERROR_BATTERY_LOW | Sys::ERROR_ESTOP))
        .unwrap();
    assert!(wait_until(T, || d.cmds.len() > mid + 3));
    let after: Vec<f32> = d.cmds.all()[mid..].iter().map(|c| c.speed).collect();
    let zero = after
        .iter()
        .position(|s| *s == 0.0)
        .expect("a zero command");
    assert!(zero <= 1, "speeds after the e-stop: {after:?}");
    assert!(after[zero..].iter().all(|s| *s == 0.0), "{after:?}");
    // Never back to the ramp: the ERROR repeated without the e-stop keeps it an emergency.
    d.state.send(error(Sys::ERROR_BATTERY_LOW)).unwrap();
    let n = d.cmds.len();
    assert!(wait_until(T, || d.cmds.len() > n + 3));
    assert!(d.cmds.all()[mid + zero..].iter().all(|c| c.speed == 0.0));
}

#[test]
fn a_fault_cleared_mid_stop_resumes_without_a_standstill() {
    let ros = ros();
    let d = Drive::start(&ros, &[]);
    d.reach_the_bend(5.0);
    let began = d.now_s();
    d.state.send(error(Sys::ERROR_BATTERY_LOW)).unwrap();
    d.client.cancel(&d.id).unwrap();
    let (st, _, feedback, _) = wait_done(&d.client, &d.id, T);
    assert_eq!(status::name(st), "PREEMPTED");
    let reached = feedback.last().map_or(0, |f| f.target_index);
    // Two sim seconds into the 7 s stop the fault clears and the planner resumes.
    assert!(wait_until(T, || d.now_s() >= began + 2.0));
    d.state
        .send(Sys {
            state: Sys::STATE_RUNNING,
            ..Default::default()
        })
        .unwrap();
    // As the planner resumes: from the last waypoint the feedback reported.
    let resumed = d
        .client
        .send_goal(goal(straight_then_bend(), reached))
        .unwrap();
    assert!(
        d.odom
            .wait_for(T, |o| o.header.stamp.seconds() > began + 4.0
                && o.twist.twist.linear.x > 5.0)
            .is_some(),
        "back to cruise speed\n{}",
        d.stack.output()
    );
    let slowest = d
        .since(began)
        .iter()
        .map(|s| s.2)
        .fold(f64::INFINITY, f64::min);
    eprintln!("fault cleared mid-stop: slowest {slowest:.2} m/s");
    assert!(slowest > 3.0, "the car slowed to {slowest} m/s");
    d.client.cancel(&resumed).unwrap();
}

#[test]
fn bad_stop_parameters_are_refused_at_start_up_by_name() {
    let ros = ros();
    ros.set_sim_time(false);
    for (name, value, says) in [
        ("stop_classes", "ESTOP=hard", "unknown stop class"),
        (
            "stop_classes",
            "ESTOP=emergency,ESTOP=comfortable",
            "mapped twice",
        ),
        ("stop_classes", "E_STOP=emergency", "unknown error bit"),
        ("comfortable_decel_mps2", "-1.0", "must be > 0"),
        ("comfortable_jerk_mps3", "0", "must be > 0"),
    ] {
        let mut node = ros
            .node("pure_pursuit")
            .arg(&format!("__ns:={}", fresh_ns("ctl")))
            .param(name, value)
            .spawn();
        let Some(status) = node.wait(T) else {
            panic!(
                "pure_pursuit with ~{name} = {value} still runs\n{}",
                node.output()
            );
        };
        assert!(!status.success());
        let out = node.output();
        assert!(
            out.contains(&format!("~{name}")) && out.contains(says),
            "{name} = {value}: {out}"
        );
    }
}
