//! `gemctl demo`: drives the demo of a running headless suite (`runners/demo.sh` starts
//! it): waits for the served lap, injects an e-stop and then a battery fault mid-lap with
//! Debian's `dynparam` (exactly what an operator types), clears each after a hold, follows
//! the lap to completion with a live progress line, then prints a summary (lap time,
//! cross-track error, each fault's detection and stop latency) and writes it with a
//! trajectory plot. Exit status 0 only if the lap succeeded and every fault stopped the car.
//!
//! Latencies are measured from this tool's own subscriptions, connected before the first
//! injection: signal = the first faulty input message received, detection = the first
//! `/system_state` ERROR with the fault's bit after it, zero command = the first
//! `/gem/ackermann_cmd` with speed 0 after it (all wall time, loopback), standstill = the
//! simulated time until the car's speed is below 0.01 m/s.

use crate::plot;
use anyhow::{anyhow, bail, ensure, Context};
use gem_core::control::closed_loop::{stats, CrossTrackMeter};
use gem_core::control::path::Path as TrackPath;
use gem_core::geometry::Point;
use gem_msgs::ackermann_msgs::AckermannDrive;
use gem_msgs::actionlib_msgs::GoalStatus;
use gem_msgs::gazebo_msgs::ModelStates;
use gem_msgs::gem_controller_action::{
    NavigateWaypointsActionFeedback, NavigateWaypointsActionResult,
};
use gem_msgs::gem_state_msgs::{self as msg, SystemStateStamped as Sys};
use gem_msgs::rosgraph_msgs::Clock;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct Args {
    /// The waypoint file the suite serves (for the cross-track error and the plot).
    #[arg(long)]
    track: PathBuf,
    /// Directory for `summary.md` and `trajectory.svg`.
    #[arg(long, default_value = "build/demo")]
    out: PathBuf,
    /// Lap progress (0..1) at which the e-stop is pressed.
    #[arg(long, default_value_t = 0.3)]
    estop_at: f64,
    /// Lap progress (0..1) at which the battery drops to 30 %.
    #[arg(long, default_value_t = 0.6)]
    battery_at: f64,
    /// Simulated seconds each fault is held after the car stopped.
    #[arg(long, default_value_t = 3.0)]
    hold_s: f64,
    /// Wall-time limit of the whole demo, seconds.
    #[arg(long, default_value_t = 600.0)]
    timeout: f64,
}

/// What the subscriptions saw, each with its wall receive time.
#[derive(Default)]
struct Seen {
    sim_now: f64,
    progress: f64,
    planner: u8,
    state: Vec<(Instant, (u8, u8))>,
    cmds: Vec<(Instant, f32)>,
    /// (pressed, header stamp in s).
    estop: Vec<(Instant, (bool, f64))>,
    /// (fraction, header stamp in s).
    battery: Vec<(Instant, (f32, f64))>,
    /// (sim time, x, y, speed).
    poses: Vec<(f64, f64, f64, f64)>,
    result: Option<(bool, u8, String)>,
}

type Shared = Arc<Mutex<Seen>>;

fn lock(s: &Shared) -> std::sync::MutexGuard<'_, Seen> {
    s.lock().unwrap_or_else(|e| e.into_inner())
}

fn watch<T: rosrust::Message>(
    s: &Shared,
    topic: &str,
    apply: fn(&mut Seen, T),
) -> anyhow::Result<rosrust::Subscriber> {
    let s = s.clone();
    rosrust::subscribe(topic, 1000, move |m: T| apply(&mut lock(&s), m))
        .map_err(|e| anyhow!("subscribe {topic}: {e}"))
}

fn subscribe(s: &Shared) -> anyhow::Result<Vec<rosrust::Subscriber>> {
    Ok(vec![
        watch(s, "/clock", |n, m: Clock| n.sim_now = m.clock.seconds())?,
        watch(s, "/system_state", |n, m: Sys| {
            n.state.push((Instant::now(), (m.state, m.error_code)))
        })?,
        watch(s, "/task_planner_status", |n, m: msg::TaskPlannerStatus| {
            n.planner = m.status
        })?,
        watch(s, "/gem/ackermann_cmd", |n, m: AckermannDrive| {
            n.cmds.push((Instant::now(), m.speed))
        })?,
        watch(s, "/estop", |n, m: msg::EstopStamped| {
            n.estop
                .push((Instant::now(), (m.enabled, m.header.stamp.seconds())))
        })?,
        watch(s, "/battery_level", |n, m: msg::BatteryLevelStamped| {
            n.battery
                .push((Instant::now(), (m.battery_level, m.header.stamp.seconds())))
        })?,
        watch(s, "/gazebo/model_states", |n, m: ModelStates| {
            if let (Some(p), Some(t)) = (m.pose.first(), m.twist.first()) {
                n.poses
                    .push((n.sim_now, p.position.x, p.position.y, t.linear.x));
            }
        })?,
        watch(
            s,
            "/navigate_waypoints/feedback",
            |n, m: NavigateWaypointsActionFeedback| n.progress = m.feedback.progress.into(),
        )?,
        watch(
            s,
            "/navigate_waypoints/result",
            |n, m: NavigateWaypointsActionResult| {
                n.result = Some((m.result.success, m.status.status, m.status.text))
            },
        )?,
    ])
}

/// A fault the demo injects: the mock_signals parameter, its faulty and nominal values,
/// the error bit it must raise, and how to spot the (faulty or nominal) input message.
#[derive(Clone, Copy)]
struct Fault {
    name: &'static str,
    param: &'static str,
    bad: &'static str,
    good: &'static str,
    bit: u8,
    input: fn(&Seen, Instant, bool) -> Option<(Instant, f64)>,
}

const ESTOP: Fault = Fault {
    name: "e-stop",
    param: "estop_enabled",
    bad: "true",
    good: "false",
    bit: Sys::ERROR_ESTOP,
    input: |s, t0, bad| find(&s.estop, t0, |e| *e == bad),
};

const BATTERY: Fault = Fault {
    name: "battery 30 %",
    param: "battery_level",
    bad: "30",
    good: "80",
    bit: Sys::ERROR_BATTERY_LOW,
    input: |s, t0, bad| find(&s.battery, t0, |b| (*b < 0.5) == bad),
};

/// One injected fault and what it caused.
struct FaultRun {
    name: &'static str,
    at_progress: f64,
    position: (f64, f64),
    detection_ms: f64,
    zero_cmd_ms: f64,
    standstill_s: f64,
    resume_ms: f64,
}

struct Demo {
    seen: Shared,
    deadline: Instant,
    tty: bool,
    started: Instant,
}

impl Demo {
    fn wait(&self, what: &str, mut cond: impl FnMut(&Seen) -> bool) -> anyhow::Result<()> {
        loop {
            if cond(&lock(&self.seen)) {
                return Ok(());
            }
            if Instant::now() >= self.deadline || !rosrust::is_ok() {
                bail!("timed out waiting for {what}");
            }
            self.show_progress();
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn show_progress(&self) {
        if !self.tty {
            return;
        }
        let s = lock(&self.seen);
        let (state, code) = s.state.last().map_or((9, 0), |l| l.1);
        let state = match state {
            0 => "IDLE",
            1 => "RUNNING",
            2 => "ERROR",
            _ => "—",
        };
        let speed = s.poses.last().map_or(0.0, |p| p.3);
        print!(
            "\r[demo] lap {:5.1} %  {state:<7} (errors {code:>2})  {speed:4.2} m/s  sim {:6.1} s  wall {:5.1} s ",
            100.0 * s.progress,
            s.sim_now,
            self.started.elapsed().as_secs_f64()
        );
        let _ = std::io::stdout().flush();
    }

    fn say(&self, text: &str) {
        if self.tty {
            println!();
        }
        println!("[demo] {text}");
    }

    /// `dynparam set /mock_signals <param> <value>`, as an operator would.
    fn dynparam(&self, param: &str, value: &str) -> anyhow::Result<()> {
        self.say(&format!(
            "rosrun dynamic_reconfigure dynparam set /mock_signals {param} {value}"
        ));
        let out = std::process::Command::new("rosrun")
            .args(["dynamic_reconfigure", "dynparam", "set", "/mock_signals"])
            .args([param, value])
            .stdin(std::process::Stdio::null())
            .output()
            .context("cannot run rosrun (source runners/env.sh)")?;
        ensure!(
            out.status.success(),
            "dynparam failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(())
    }

    fn inject(&self, f: &Fault, at_progress: f64, hold_s: f64) -> anyhow::Result<FaultRun> {
        let Fault {
            name,
            param,
            bad,
            good,
            bit,
            input,
        } = *f;
        self.wait(&format!("{:.0} % of the lap", 100.0 * at_progress), |s| {
            s.progress >= at_progress
        })?;
        let position = lock(&self.seen)
            .poses
            .last()
            .map_or((0.0, 0.0), |p| (p.1, p.2));
        let t0 = Instant::now();
        self.dynparam(param, bad)?;
        let (mut at, mut sim_signal) = (t0, 0.0);
        self.wait(&format!("{name}: the faulty signal"), |s| {
            input(s, t0, true).map(|t| (at, sim_signal) = t).is_some()
        })?;
        let signal = at;
        let mut detected = signal;
        self.wait(&format!("{name}: ERROR in /system_state"), |s| {
            first(&s.state, signal, |&(_, (st, code))| {
                st == Sys::STATE_ERROR && code & bit != 0
            })
            .map(|t| detected = t)
            .is_some()
        })?;
        let mut zero = signal;
        self.wait(&format!("{name}: a zero speed command"), |s| {
            first(&s.cmds, signal, |c| c.1 == 0.0)
                .map(|t| zero = t)
                .is_some()
        })?;
        let mut stood = sim_signal;
        self.wait(&format!("{name}: the car at rest"), |s| {
            s.poses
                .iter()
                .find(|p| p.0 >= sim_signal && p.3.abs() < 0.01)
                .map(|p| stood = p.0)
                .is_some()
        })?;
        self.wait("the hold", |s| s.sim_now >= stood + hold_s)?;
        let t1 = Instant::now();
        self.dynparam(param, good)?;
        let mut cleared = t1;
        self.wait(&format!("{name}: the cleared signal"), |s| {
            input(s, t1, false).map(|t| cleared = t.0).is_some()
        })?;
        let mut resumed = cleared;
        self.wait(&format!("{name}: moving again"), |s| {
            first(&s.cmds, cleared, |c| c.1 > 0.0)
                .map(|t| resumed = t)
                .is_some()
        })?;
        let run = FaultRun {
            name,
            at_progress,
            position,
            detection_ms: ms(detected - signal),
            zero_cmd_ms: ms(zero - signal),
            standstill_s: (stood - sim_signal).max(0.0),
            resume_ms: ms(resumed - cleared),
        };
        self.say(&format!(
            "{name}: detected after {:.2} ms, zero command after {:.2} ms, at rest {:.1} s (sim) later; moving {:.0} ms after the clear",
            run.detection_ms, run.zero_cmd_ms, run.standstill_s, run.resume_ms
        ));
        Ok(run)
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Receive time and header stamp of the first input message at or after `from` whose
/// (value, stamp) satisfies `pred`.
fn find<T>(
    v: &[(Instant, (T, f64))],
    from: Instant,
    pred: impl Fn(&T) -> bool,
) -> Option<(Instant, f64)> {
    v.iter()
        .find(|e| e.0 >= from && pred(&e.1 .0))
        .map(|e| (e.0, e.1 .1))
}

/// Receive time of the first entry at or after `from` satisfying `pred`.
fn first<T>(
    v: &[(Instant, T)],
    from: Instant,
    pred: impl Fn(&(Instant, T)) -> bool,
) -> Option<Instant> {
    v.iter().find(|e| e.0 >= from && pred(e)).map(|e| e.0)
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    const SUCCEEDED: u8 = GoalStatus::SUCCEEDED;
    const ABORTED: u8 = GoalStatus::ABORTED;
    let waypoints = gem_core::waypoints::load(&args.track)
        .with_context(|| format!("cannot read the track {}", args.track.display()))?;
    gem_ros::node::start_within(
        &format!("gemctl_demo_{}", std::process::id()),
        Duration::from_secs(30),
    )?;
    let seen = Shared::default();
    let _subs = subscribe(&seen)?;
    let demo = Demo {
        seen: seen.clone(),
        deadline: Instant::now() + Duration::from_secs_f64(args.timeout),
        tty: std::io::stdout().is_terminal(),
        started: Instant::now(),
    };
    demo.wait("the served lap to start (task planner RUNNING)", |s| {
        s.planner == msg::TaskPlannerStatus::STATUS_RUNNING_TASK && !s.poses.is_empty()
    })?;
    let sim_start = lock(&seen).sim_now;
    let wall_start = Instant::now();
    demo.say("lap started");
    let faults = [
        demo.inject(&ESTOP, args.estop_at, args.hold_s)?,
        demo.inject(&BATTERY, args.battery_at, args.hold_s)?,
    ];
    demo.wait("the end of the lap", |s| {
        s.result
            .as_ref()
            .is_some_and(|r| r.1 == SUCCEEDED || r.1 == ABORTED)
    })?;
    let (lap_sim, lap_wall) = (lock(&seen).sim_now - sim_start, wall_start.elapsed());
    let (success, status, text) = lock(&seen).result.clone().unwrap_or_default();
    demo.say(&format!(
        "lap finished: success {success}, status {status} {text}"
    ));
    let poses = lock(&seen).poses.clone();
    let report = Report::new(&waypoints, &poses, &faults, lap_sim, lap_wall)?;
    report.write(&args.out, &args.track)?;
    println!("{}", report.summary);
    ensure!(success, "the lap did not succeed (status {status}: {text})");
    Ok(())
}

struct Report {
    summary: String,
    path: Vec<(f64, f64)>,
    driven: Vec<(f64, f64)>,
    cross_track: Vec<(f64, f64)>,
    marks: Vec<(String, (f64, f64))>,
}

impl Report {
    fn new(
        waypoints: &[gem_core::geometry::Pose],
        poses: &[(f64, f64, f64, f64)],
        faults: &[FaultRun],
        lap_sim: f64,
        lap_wall: Duration,
    ) -> anyhow::Result<Report> {
        let points: Vec<Point> = waypoints.iter().map(|w| Point::new(w.x, w.y)).collect();
        let mut meter = CrossTrackMeter::new(
            TrackPath::new(&points, 0.05).map_err(|e| anyhow!("the track: {e}"))?,
        );
        let mut driven_m = 0.0;
        let mut cross_track = Vec::with_capacity(poses.len());
        for (i, p) in poses.iter().enumerate() {
            if i > 0 {
                driven_m += (p.1 - poses[i - 1].1).hypot(p.2 - poses[i - 1].2);
            }
            cross_track.push((driven_m, meter.measure(Point::new(p.1, p.2))));
        }
        let st = stats(&cross_track, 0.1);
        let mut summary = format!(
            "## GEM e2 demo lap\n\n\
             | lap time (sim) | lap time (wall) | distance | converged after | RMS cross-track after convergence | max after | RMS whole lap |\n\
             |---|---|---|---|---|---|---|\n\
             | {lap_sim:.1} s | {:.1} s | {driven_m:.0} m | {} | {:.3} m | {:.3} m | {:.3} m |\n\n\
             | fault | injected at | signal → /system_state ERROR | signal → zero command | signal → car at rest (sim) | cleared signal → moving command |\n\
             |---|---|---|---|---|---|\n",
            lap_wall.as_secs_f64(),
            st.converge_m.map_or("never".into(), |d| format!("{d:.1} m")),
            st.rms_after_m,
            st.max_after_m,
            st.rms_all_m,
        );
        for f in faults {
            summary += &format!(
                "| {} | {:.0} % of the lap | {:.2} ms | {:.2} ms | {:.1} s | {:.0} ms |\n",
                f.name,
                100.0 * f.at_progress,
                f.detection_ms,
                f.zero_cmd_ms,
                f.standstill_s,
                f.resume_ms
            );
        }
        summary += "\nLatencies are wall time on loopback, measured by gemctl's own subscriptions (signal = first faulty input message received).\n";
        Ok(Report {
            summary,
            path: waypoints.iter().map(|w| (w.x, w.y)).collect(),
            driven: poses.iter().map(|p| (p.1, p.2)).collect(),
            cross_track,
            marks: faults
                .iter()
                .map(|f| (f.name.to_string(), f.position))
                .collect(),
        })
    }

    fn write(&self, out: &std::path::Path, track: &std::path::Path) -> anyhow::Result<()> {
        std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
        let md = out.join("summary.md");
        std::fs::write(&md, &self.summary)
            .with_context(|| format!("cannot write {}", md.display()))?;
        let svg = out.join("trajectory.svg");
        let figure = plot::TrackPlot {
            caption: format!("demo lap of {}", track.display()),
            path: &self.path,
            driven: &self.driven,
            cross_track: &self.cross_track,
            marks: &self.marks,
        };
        plot::write_svg(&svg, &figure).map_err(|e| anyhow!("{}: {e}", svg.display()))?;
        println!("[demo] wrote {} and {}", md.display(), svg.display());
        Ok(())
    }
}
