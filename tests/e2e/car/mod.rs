//! The car's platform on the simulator, as its users launch it:
//! `integration_run.launch platform:=gem_e2_sim` brings the whole suite up with `gem_sim`
//! driven through the PACMod 2 topics by `pacmod_bridge`, and the pose from the simulated
//! GNSS/INS solution (`novatel/inspva`, with noise and latency) through `gnss_pose`.
//!
//! - the demo lap (`gemctl demo`: an e-stop, then a battery fault) on this platform and on
//!   the simulator's `gem/ackermann_cmd` with the same pose source: the lap's cross-track
//!   RMS after convergence within 1.5× of the Ackermann lap's, each stop as hard as through
//!   `ackermann_cmd` (the e-stop's an emergency stop on the brake with the accelerator
//!   released, the battery's a comfortable one), never both pedals at once;
//! - a lap of the GEM track with a driver override mid-lap: ERROR with the e-stop bit
//!   (docs/spec.md: the drive-by-wire fault shares it), the task PAUSED, no pedal command
//!   until the bridge is re-enabled; then an INS outage of 2 s: GPS_LOST, the task
//!   PAUSED and the car slowing, then resuming; the lap completes;
//! - the controller killed mid-route: the bridge's watchdog brakes the car to rest within
//!   its timeout plus the stop.

mod laps;
mod learning;
mod platforms;

use gem_core::names;
use gem_core::pacmod::bridge::BridgeConfig;
use gem_core::state_manager::ErrorBits;
use gem_core::vehicle::localization::LocalizationParams;
use gem_e2e::lap::LAP;
use gem_e2e::platform::{cross_track_of, launch, launch_with, route_path, stop, waypoint_rows};
use gem_e2e::suite::{car_speed, pid_of_node};
use gem_msgs::ackermann_msgs::AckermannDrive;
use gem_msgs::gazebo_msgs::ModelStates;
use gem_msgs::gem_state_msgs::{SystemStateStamped, TaskPlannerStatus};
use gem_msgs::pacmod_msgs::PacmodCmd;
use gem_msgs::rosgraph_msgs::Clock;
use gem_msgs::std_msgs::Float64;
use gem_testbed::{cli, cli_ok, repo_root, ros, wait_until, Collector, NodeProc};
use std::time::Duration;

/// Bound of each wait for a state (wall time, at 5×).
const T: Duration = Duration::from_secs(60);

/// The pedal commands the bridge sends.
struct Pedals {
    accel: Collector<PacmodCmd>,
    brake: Collector<PacmodCmd>,
}

impl Pedals {
    fn new() -> Pedals {
        Pedals {
            accel: Collector::new(names::global::PACMOD_ACCEL_CMD),
            brake: Collector::new(names::global::PACMOD_BRAKE_CMD),
        }
    }
}

fn secs(t: rosrust::Time) -> f64 {
    f64::from(t.sec) + f64::from(t.nsec) * 1e-9
}

/// The intervals (ROS time) during which `/system_state` said ERROR.
fn error_windows(states: &[SystemStateStamped]) -> Vec<(f64, f64, u8)> {
    let mut out = Vec::new();
    let mut open: Option<(f64, u8)> = None;
    for s in states {
        let t = secs(s.header.stamp);
        match (open, s.state == SystemStateStamped::STATE_ERROR) {
            (None, true) => open = Some((t, s.error_code)),
            (Some((from, bits)), false) => {
                out.push((from, t, bits));
                open = None;
            }
            (Some((from, bits)), true) => open = Some((from, bits | s.error_code)),
            (None, false) => {}
        }
    }
    out.extend(open.map(|(from, bits)| (from, f64::INFINITY, bits)));
    out
}

/// The largest pedal fraction commanded within `[from, to]` (ROS time).
fn peak(cmds: &[PacmodCmd], from: f64, to: f64) -> f64 {
    cmds.iter()
        .filter(|c| (from..=to).contains(&secs(c.header.stamp)))
        .map(|c| c.f64_cmd)
        .fold(0.0, f64::max)
}

/// A figure of a table of the demo summary: the table whose header starts with `table`,
/// its row whose first cell starts with `row` (`None`: its first row), the column titled
/// `column`, without its unit.
fn summary_figure(summary: &str, table: &str, row: Option<&str>, column: &str) -> f64 {
    let mut lines = summary.lines().skip_while(|l| !l.starts_with(table));
    let header: Vec<&str> = lines.next().expect("the table").split('|').collect();
    let cells: Vec<&str> = lines
        .skip(1)
        .take_while(|l| l.starts_with('|'))
        .map(|l| l.split('|').collect::<Vec<_>>())
        .find(|cells| row.is_none_or(|r| cells[1].trim().starts_with(r)))
        .unwrap_or_else(|| panic!("no row {row:?} under {table} in {summary}"));
    let i = header
        .iter()
        .position(|h| h.trim() == column)
        .unwrap_or_else(|| panic!("no column {column} in {summary}"));
    let value = cells[i].trim();
    value
        .split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{column}: {value:?} in {summary}"))
}

/// RMS of the reported speed against the latest speed command before each report, m/s.
fn speed_tracking_rms(commands: &Collector<AckermannDrive>, reports: &Collector<Float64>) -> f64 {
    let commands = commands.timed();
    let errors: Vec<f64> = reports
        .timed()
        .into_iter()
        .filter_map(|(at, v)| {
            let i = commands.partition_point(|(t, _)| *t <= at);
            let (_, c) = commands.get(i.checked_sub(1)?)?;
            Some(v.data - f64::from(c.speed))
        })
        .collect();
    assert!(!errors.is_empty(), "no speed report after a command");
    (errors.iter().map(|e| e * e).sum::<f64>() / errors.len() as f64).sqrt()
}

/// `gemctl demo` against the launched suite; its summary and `/system_state`.
fn demo(platform: &str) -> (String, Vec<SystemStateStamped>) {
    let dir = gem_e2e::bags::scratch_dir(&format!("car_demo_{platform}"));
    if platform == "sim" {
        // The pose the Ackermann lap's controller gets is the one the simulated INS gives
        // on the car's platform (20 Hz, 50 ms late, its noise): only the command path
        // differs between the two laps.
        let ins = LocalizationParams::INSPVA;
        for (name, value) in [
            ("localization_position_sigma_m", ins.position_sigma_m),
            ("localization_yaw_sigma_rad", ins.yaw_sigma_rad),
            ("localization_rate_hz", ins.rate_hz),
            ("localization_latency_s", ins.latency_s),
        ] {
            cli_ok(
                "rosparam",
                &["set", &format!("/gem_sim/{name}"), &value.to_string()],
                T,
            );
        }
    }
    let states = Collector::<SystemStateStamped>::new(names::global::SYSTEM_STATE);
    // The demo injects its faults through mock_signals, on the car's platform too.
    let mut args =
        gem_e2e::platform::spawn_at(&gem_e2e::platform::waypoint_rows("gem_track.csv").0);
    args.push("signals:=mock".into());
    let launch = launch_with(platform, "gem_track.csv", &args);
    let track = repo_root().join("launch/waypoints/gem_track.csv");
    let out = cli(
        "gemctl",
        &[
            "demo",
            "--track",
            &track.to_string_lossy(),
            "--out",
            &dir.to_string_lossy(),
        ],
        LAP * 2,
    );
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "the demo on {platform} failed:\n{said}\n{}",
        launch.output()
    );
    stop(launch);
    let summary = std::fs::read_to_string(dir.join("summary.md")).expect("summary.md");
    (summary, states.all())
}

/// The whole GEM track as a path.
fn track_path() -> gem_core::control::path::Path {
    route_path("gem_track.csv")
}

/// The suite on the car's platform serving a waypoint file, watched.
struct Route {
    launch: NodeProc,
    /// The route's last waypoint.
    end: (f64, f64),
    states: Collector<SystemStateStamped>,
    status: Collector<TaskPlannerStatus>,
    poses: Collector<ModelStates>,
    clock: Collector<Clock>,
    pedals: Pedals,
}

impl Route {
    /// The suite serving `waypoints` (in launch/waypoints), the car driving.
    fn start(waypoints: &str) -> Route {
        let (first, last) = waypoint_rows(waypoints);
        let (start, end) = ((first[0], first[1]), (last[0], last[1]));
        let route = Route {
            end,
            states: Collector::new(names::global::SYSTEM_STATE),
            status: Collector::new(names::global::TASK_PLANNER_STATUS),
            poses: Collector::new(names::global::MODEL_STATES),
            clock: Collector::new(names::CLOCK),
            pedals: Pedals::new(),
            launch: launch("gem_e2_sim", waypoints),
        };
        route.wait_status("the route running", TaskPlannerStatus::STATUS_RUNNING_TASK);
        assert!(
            wait_until(T, || route.moved_from(start) > 15.0),
            "the car did not drive\n{}",
            route.launch.output()
        );
        route
    }

    /// Where the car is (NaN before the first pose).
    fn position(&self) -> (f64, f64) {
        self.poses
            .last()
            .and_then(|m| m.pose.first().map(|p| (p.position.x, p.position.y)))
            .unwrap_or((f64::NAN, f64::NAN))
    }

    /// How far the car is from `from`, m.
    fn moved_from(&self, from: (f64, f64)) -> f64 {
        let (x, y) = self.position();
        (x - from.0).hypot(y - from.1)
    }

    fn speed(&self) -> f64 {
        car_speed(&self.poses)
    }

    /// ROS time now, s.
    fn now(&self) -> f64 {
        self.clock.last().map_or(0.0, |c| secs(c.clock))
    }

    fn wait_status(&self, what: &str, status: u8) {
        assert!(
            self.status.wait_latest(T, |m| m.status == status).is_some(),
            "{what}: the planner's status is {:?}\n{}",
            self.status.last().map(|m| m.status),
            self.launch.output()
        );
    }

    fn wait_error(&self, what: &str, bit: u8) -> SystemStateStamped {
        self.states
            .wait_latest(T, |m| {
                m.state == SystemStateStamped::STATE_ERROR && m.error_code & bit != 0
            })
            .unwrap_or_else(|| {
                panic!(
                    "{what}: no ERROR with bit {bit}: {:?}\n{}",
                    self.states.last(),
                    self.launch.output()
                )
            })
    }

    fn wait_at_rest(&self, what: &str) {
        assert!(
            wait_until(T, || self.speed() < 0.05),
            "{what}: the car did not stop ({} m/s)",
            self.speed()
        );
    }

    /// Whether no pedal command is sent for `d` (wall time).
    fn pedals_silent_for(&self, d: Duration) -> bool {
        let (a, b) = (self.pedals.accel.len(), self.pedals.brake.len());
        !wait_until(d, || {
            self.pedals.accel.len() > a || self.pedals.brake.len() > b
        })
    }

    fn completes(&self) {
        let wait = Duration::from_secs_f64(LAP.as_secs_f64() * 1.5);
        assert!(
            self.status
                .wait_latest(wait, |m| m.status == TaskPlannerStatus::STATUS_NO_TASK)
                .is_some(),
            "the route did not end\n{}",
            self.launch.output()
        );
        let off = self.moved_from(self.end);
        assert!(
            off < 1.0,
            "the route ended {off:.2} m from its last waypoint"
        );
    }
}
