//! The whole suite on one computer as its users launch it (`integration_run.launch` on a
//! platform, at the demo's speed-up and timeouts), the waypoint files it serves, and the
//! cross-track error of the poses the simulator reports against a route: shared by the
//! tests of the car's platform (`tests/e2e/car.rs`) and of `gemctl record-route`
//! (`tests/e2e/route.rs`).

use crate::lap::{SPEEDUP, TIMEOUT_S};
use gem_core::control::closed_loop::CrossTrackMeter;
use gem_core::control::path::Path as TrackPath;
use gem_core::geometry::Point;
use gem_msgs::gazebo_msgs::ModelStates;
use gem_testbed::{cli_background, repo_root, NodeProc};
use std::path::PathBuf;
use std::time::Duration;

/// The suite through `integration_run.launch` on `platform`, serving `waypoints` (see
/// [`waypoint_file`]), at the demo's speed-up and timeouts, the car spawned on the
/// path's first waypoint, pointing along it.
pub fn launch(platform: &str, waypoints: &str) -> NodeProc {
    launch_with(platform, waypoints, &spawn_at(&waypoint_rows(waypoints).0))
}

/// The launch arguments that spawn the car at `row` (x, y, yaw).
pub fn spawn_at(row: &[f64]) -> Vec<String> {
    vec![
        format!("spawn_x:={}", row[0]),
        format!("spawn_y:={}", row[1]),
        format!("spawn_yaw:={}", row[2]),
    ]
}

/// [`launch`] with `extra` arguments instead of the spawn on the path (an empty
/// `waypoints`: nothing served at start-up).
pub fn launch_with(platform: &str, waypoints: &str, extra: &[String]) -> NodeProc {
    launch_within(platform, waypoints, TIMEOUT_S, extra)
}

/// [`launch_with`] with the staleness, `system_state`, pose and clock timeouts all
/// `timeout_s` (ROS time) instead of [`TIMEOUT_S`]. The operator link (on the car's
/// platform) gets a free port of its own: another test process may launch beside it.
pub fn launch_within(
    platform: &str,
    waypoints: &str,
    timeout_s: f64,
    extra: &[String],
) -> NodeProc {
    let timeout = timeout_s.to_string();
    let mut args = vec![
        "gem_bringup".to_string(),
        "integration_run.launch".into(),
        format!("platform:={platform}"),
        format!("speedup:={SPEEDUP}"),
        format!("waypoints:={waypoints}"),
        format!("state_timeout_ms:={}", timeout_s * 1000.0),
        format!("system_state_timeout_s:={timeout}"),
        format!("pose_timeout_s:={timeout}"),
        format!("clock_stall_s:={timeout}"),
        format!("operator_port:={}", gem_testbed::free_udp_port()),
    ];
    args.extend(extra.iter().cloned());
    cli_background(
        "roslaunch",
        &args.iter().map(String::as_str).collect::<Vec<_>>(),
    )
}

/// Stops a launch as a user's Ctrl-C does, so the next one starts on a clean master.
pub fn stop(mut launch: NodeProc) {
    launch.interrupt(Duration::from_secs(15));
}

/// A waypoint file as the planner finds it: an absolute path as it is, a relative one in
/// launch/waypoints.
pub fn waypoint_file(waypoints: &str) -> PathBuf {
    repo_root().join("launch/waypoints").join(waypoints)
}

/// The first and the last row of a waypoint file ([`waypoint_file`]), read by the
/// planner's own loader: x, y, yaw.
pub fn waypoint_rows(waypoints: &str) -> (Vec<f64>, Vec<f64>) {
    let rows = gem_core::waypoints::load(&waypoint_file(waypoints)).expect("the waypoint file");
    let row = |p: &gem_core::geometry::Pose| vec![p.x, p.y, p.yaw];
    (
        row(rows.first().expect("a waypoint")),
        row(rows.last().expect("a waypoint")),
    )
}

/// A waypoint file ([`waypoint_file`]) as a path.
pub fn route_path(waypoints: &str) -> TrackPath {
    let rows = gem_core::waypoints::load(&waypoint_file(waypoints)).expect("the waypoint file");
    let points: Vec<Point> = rows.iter().map(|p| p.point()).collect();
    TrackPath::new(&points, 0.05).expect("the waypoints make a path")
}

/// The car's positions in the simulator's model states, in order.
pub fn positions(poses: &[ModelStates]) -> Vec<Point> {
    poses
        .iter()
        .filter_map(|m| {
            m.pose
                .first()
                .map(|p| Point::new(p.position.x, p.position.y))
        })
        .collect()
}

/// Cross-track samples `(driven, error)` of the model's poses against `path`.
pub fn cross_track_of(path: TrackPath, poses: &[ModelStates]) -> Vec<(f64, f64)> {
    let mut meter = CrossTrackMeter::new(path);
    let (mut d, mut last) = (0.0, None::<Point>);
    let mut samples = Vec::new();
    for p in positions(poses) {
        if let Some(q) = last {
            d += q.distance(p);
        }
        last = Some(p);
        samples.push((d, meter.measure(p)));
    }
    samples
}
