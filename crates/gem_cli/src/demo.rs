//! `gemctl demo`: drives the demo of a running headless suite (`runners/demo.sh` starts
//! it): waits for the served lap, injects an e-stop and then a battery fault mid-lap with
//! Debian's `dynparam` (exactly what an operator types), clears each after a hold, follows
//! the lap to completion with a live progress line, then prints a summary (lap time,
//! cross-track error, each fault's detection and stop latency) and writes it with a
//! trajectory plot. Exit status 0 only if the lap succeeded and every fault stopped the car.
//! `--rounds N` repeats the pair N times along the lap (the load test's mode).
//!
//! Every observation comes through [`ros1_protocols::direct`]: no message is dropped, and each is
//! stamped with its arrival on the socket. Latencies are measured from those stamps:
//! signal = the first faulty input message after the injection began, detection = the
//! first `/system_state` ERROR with the fault's bit after the injection began, zero command
//! = the first `/gem/ackermann_cmd` with speed 0 after the injection began (the car is
//! driving faster than 1 m/s when a fault is injected, so nothing else zeroes it),
//! standstill = the simulated time until the car's speed is below 0.01 m/s. The three
//! arrive on different sockets, so below about 0.1 ms their order is not causal; a
//! reversed pair reads as 0.
//!
//! A demo that cannot go on says so at once: every step has a wall-time limit; a suite
//! topic silent for [`SILENCE`] ends the demo when its publisher's process has gone (its
//! slave API does not answer), naming the topic and the node, or after [`HUNG`] when the
//! node answers but publishes nothing; an aborted goal and a `dynparam` that does not
//! return end it too.

use anyhow::{anyhow, bail, ensure, Context};
use gem_core::control::closed_loop::{stats, CrossTrackMeter, CONVERGED_M};
use gem_core::control::path::Path as TrackPath;
use gem_core::control::stop::{StopFigures, StopSample};
use gem_core::faults::FaultKind;
use gem_core::geometry::Point;
use gem_core::names;
use gem_core::state_manager::{Input, StateManagerConfig};
use gem_msgs::ackermann_msgs::AckermannDrive;
use gem_msgs::actionlib_msgs::GoalStatus;
use gem_msgs::gazebo_msgs::ModelStates;
use gem_msgs::gem_controller_action::{
    NavigateWaypointsActionFeedback, NavigateWaypointsActionResult,
};
use gem_msgs::gem_state_msgs::{self as msg, SystemStateStamped as Sys};
use gem_msgs::rosgraph_msgs::Clock;
use gem_nodes::mock_signals::injection::Injection;
use gem_profile::{MOVING_ABOVE_MPS, STOPPED_BELOW_MPS};
use ros1_protocols::direct::{Arrival, DirectSubscriber};
use ros1_protocols::dynamic_reconfigure::Value;
use ros1_protocols::Lock;
use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A suite topic silent for this long (wall time) has its publishers asked whether they
/// are alive; one that does not answer ends the demo.
pub const SILENCE: Duration = Duration::from_millis(2500);
/// A topic silent this long ends the demo even though its publishers answer.
const HUNG: Duration = Duration::from_secs(15);
/// How often the publishers of a silent topic are asked again.
const PING_EVERY: Duration = Duration::from_millis(500);
/// ... provided simulated time moved on by this much (s) meanwhile: every topic but
/// `/clock` is published on ROS time, and a simulation slowed down by a busy machine
/// publishes less often in wall time without anything being wrong.
const SIM_SILENCE_S: f64 = 1.0;
/// Wall time the suite gets to come up and start the served lap.
const START_LIMIT: Duration = Duration::from_secs(60);
/// Wall time a `dynparam set` gets to return.
const DYNPARAM_LIMIT: Duration = Duration::from_secs(20);
/// The step that waits for the lap's goal to succeed.
const LAP_END: &str = "the end of the lap";
/// The topics whose silence means a node of the suite has stopped, with that node.
const LIVENESS: [(&str, &str); 5] = [
    (names::CLOCK, "gem_sim"),
    (names::global::SYSTEM_STATE, "state_manager"),
    (Input::PlannerStatus.global_topic(), "task_planner"),
    (Input::Estop.global_topic(), "mock_signals"),
    (
        names::global::ACKERMANN_CMD,
        "the controller (pure_pursuit or stanley)",
    ),
];

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
    /// Inject the e-stop and battery pair this many times, spread evenly from
    /// `--estop-at` to `--battery-at` (1: the e-stop at the first, the battery at the second).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    rounds: u32,
}

/// What the subscriptions saw; every instant is the message's arrival on the socket.
#[derive(Default)]
struct Seen {
    sim_now: f64,
    progress: f64,
    planner: u8,
    state: Vec<(Instant, (u8, u8))>,
    /// (speed, acceleration limit, sim time) of each speed command.
    cmds: Vec<(Instant, (f32, f32, f64))>,
    /// (1 pressed / 0 released, header stamp in s).
    estop: Vec<Sample>,
    /// (fraction, header stamp in s).
    battery: Vec<Sample>,
    /// (sim time, x, y, speed).
    poses: Vec<(f64, f64, f64, f64)>,
    result: Option<(bool, u8, String)>,
    /// When each topic was last heard from (the reading thread's time, and sim time).
    heard: BTreeMap<&'static str, (Instant, f64)>,
}

type Shared = Arc<Mutex<Seen>>;

/// An input message: arrival, (value as a number, header stamp in s).
type Sample = (Instant, (f64, f64));

fn watch<T: rosrust::Message>(
    s: &Shared,
    topic: &'static str,
    apply: fn(&mut Seen, T, Instant),
) -> anyhow::Result<DirectSubscriber> {
    let s = s.clone();
    ros1_protocols::direct::subscribe(topic, move |m: T, at: Arrival| {
        let mut seen = s.locked();
        let sim = seen.sim_now;
        seen.heard.insert(topic, (at.read, sim));
        apply(&mut seen, m, at.wire)
    })
    .map_err(|e| anyhow!("subscribe {topic}: {e}"))
}

fn subscribe(s: &Shared) -> anyhow::Result<Vec<DirectSubscriber>> {
    Ok(vec![
        watch(s, names::CLOCK, |n, m: Clock, _| {
            n.sim_now = m.clock.seconds()
        })?,
        watch(s, names::global::SYSTEM_STATE, |n, m: Sys, at| {
            n.state.push((at, (m.state, m.error_code)))
        })?,
        watch(
            s,
            Input::PlannerStatus.global_topic(),
            |n, m: msg::TaskPlannerStatus, _| n.planner = m.status,
        )?,
        watch(
            s,
            names::global::ACKERMANN_CMD,
            |n, m: AckermannDrive, at| {
                let sim = n.sim_now;
                n.cmds.push((at, (m.speed, m.acceleration, sim)));
            },
        )?,
        watch(
            s,
            Input::Estop.global_topic(),
            |n, m: msg::EstopStamped, at| {
                let pressed = f64::from(u8::from(m.enabled));
                n.estop.push((at, (pressed, m.header.stamp.seconds())))
            },
        )?,
        watch(
            s,
            Input::Battery.global_topic(),
            |n, m: msg::BatteryLevelStamped, at| {
                let level = f64::from(m.battery_level);
                n.battery.push((at, (level, m.header.stamp.seconds())))
            },
        )?,
        watch(s, names::global::MODEL_STATES, |n, m: ModelStates, _| {
            if let (Some(p), Some(t)) = (m.pose.first(), m.twist.first()) {
                let speed = t.linear.x.hypot(t.linear.y);
                n.poses.push((n.sim_now, p.position.x, p.position.y, speed));
            }
        })?,
        watch(
            s,
            names::global::navigate_waypoints::FEEDBACK,
            |n, m: NavigateWaypointsActionFeedback, _| n.progress = m.feedback.progress.into(),
        )?,
        watch(
            s,
            names::global::navigate_waypoints::RESULT,
            |n, m: NavigateWaypointsActionResult, _| {
                n.result = Some((m.result.success, m.status.status, m.status.text))
            },
        )?,
    ])
}

impl Seen {
    /// The first suite topic silent for longer than [`SILENCE`] (and, but for `/clock`,
    /// [`SIM_SILENCE_S`] of sim time), with its publisher. A topic not heard yet counts as
    /// heard at `expected_from` (wall and sim time; None: not expected yet).
    fn silent(&self, now: Instant, expected_from: Option<(Instant, f64)>) -> Option<Silence> {
        LIVENESS.iter().find_map(|&(topic, node)| {
            let heard = self.heard.get(topic).copied();
            let (wall, sim) = heard.or(expected_from)?;
            let quiet = now.saturating_duration_since(wall);
            let sim_moved = topic == names::CLOCK || self.sim_now - sim > SIM_SILENCE_S;
            (quiet > SILENCE && sim_moved).then_some(Silence {
                topic,
                node,
                quiet,
                ever_heard: heard.is_some(),
            })
        })
    }
}

/// A suite topic that has been quiet for longer than [`SILENCE`].
struct Silence {
    topic: &'static str,
    /// The node expected to publish it.
    node: &'static str,
    /// Wall time since its last message (or since the lap started).
    quiet: Duration,
    /// Whether it was heard at all.
    ever_heard: bool,
}

/// A fault the demo injects: a failure type of `gem_core::faults` (its mock_signals
/// parameter, the healthy value that clears it, its error bit; whether a reading is faulty
/// is the core's rule), the faulty value the demo sets, and how to read the input.
#[derive(Clone, Copy)]
struct Fault {
    name: &'static str,
    kind: FaultKind,
    /// The value of the failure type's mock_signals parameter the demo injects.
    faulty: Value,
    /// The fault's input messages.
    input: fn(&Seen) -> &[Sample],
}

impl Fault {
    /// The e-stop pressed.
    fn estop() -> Fault {
        Fault {
            name: "e-stop",
            kind: FaultKind::Estop,
            faulty: Injection::of(FaultKind::Estop).faulty,
            input: |s| &s.estop,
        }
    }

    /// The battery at 30 %: the demo's own faulty value (the catalogue's is the one the
    /// profile and the tests inject).
    fn battery() -> Fault {
        Fault {
            name: "battery 30 %",
            kind: FaultKind::Battery,
            faulty: Value::Int(30),
            input: |s| &s.battery,
        }
    }

    /// The failure type's mock_signals parameter.
    fn param(&self) -> &'static str {
        Injection::of(self.kind).param
    }

    /// The value that clears it.
    fn healthy(&self) -> Value {
        Injection::of(self.kind).healthy()
    }

    /// Arrival and header stamp of the first input message at or after `from` that is
    /// faulty (`faulty`) or healthy (`!faulty`) by the state manager's default thresholds.
    fn input_after(&self, s: &Seen, from: Instant, faulty: bool) -> Option<(Instant, f64)> {
        let cfg = StateManagerConfig::default();
        (self.input)(s)
            .iter()
            .find(|e| e.0 >= from && self.kind.is_faulty(e.1 .0, &cfg) == faulty)
            .map(|e| (e.0, e.1 .1))
    }
}

/// One injected fault and what it caused.
struct FaultRun {
    name: &'static str,
    at_progress: f64,
    position: (f64, f64),
    detection_ms: f64,
    /// Signal → the first braking command (zero speed, or a comfortable stop's ramp).
    brake_cmd_ms: f64,
    /// Sim times of the signal and of the car at rest: the stop's samples lie between.
    stop_sim: (f64, f64),
    resume_ms: f64,
}

struct Demo {
    seen: Shared,
    /// When the lap started (wall, sim): from then on every suite topic must be heard.
    lap_started: Option<(Instant, f64)>,
    /// When the publishers of a silent topic were last asked whether they are alive.
    pinged: std::cell::Cell<Option<Instant>>,
    /// A fault has been cleared: the lap may end before the clearing steps are through
    /// (on a slow computer `dynparam` can take seconds to return after its change).
    clearing: std::cell::Cell<bool>,
    deadline: Instant,
    tty: bool,
    started: Instant,
}

impl Demo {
    /// Waits until `cond` holds; fails on the demo's deadline, on `limit` (wall time for
    /// this step) or as soon as a suite topic falls silent, naming the step.
    fn wait_within(
        &self,
        what: &str,
        limit: Duration,
        mut cond: impl FnMut(&Seen) -> bool,
    ) -> anyhow::Result<()> {
        let until = Instant::now()
            .checked_add(limit)
            .map_or(self.deadline, |t| t.min(self.deadline));
        loop {
            let silent = {
                let seen = self.seen.locked();
                if cond(&seen) {
                    return Ok(());
                }
                self.goal_ok(&seen, what)?;
                seen.silent(Instant::now(), self.lap_started)
            };
            // Outside the lock: asking the nodes takes a round trip, and the
            // subscriptions' callbacks must not wait for it.
            if let Some(silent) = silent {
                self.judge_silence(silent, what)?;
            }
            if Instant::now() >= until || !ros1_protocols::this_node::is_ok() {
                bail!("timed out waiting for {what}");
            }
            self.show_progress();
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn wait(&self, what: &str, cond: impl FnMut(&Seen) -> bool) -> anyhow::Result<()> {
        self.wait_within(what, Duration::MAX, cond)
    }

    /// Fails when the lap's goal was aborted (the planner drops the task then), or when
    /// the lap ended while the demo was still waiting for something else.
    fn goal_ok(&self, seen: &Seen, what: &str) -> anyhow::Result<()> {
        match &seen.result {
            Some((_, GoalStatus::ABORTED, text)) => {
                bail!("while waiting for {what}: the controller aborted the goal: {text}")
            }
            Some((_, GoalStatus::SUCCEEDED, _)) if what != LAP_END && !self.clearing.get() => {
                bail!("while waiting for {what}: the lap ended first")
            }
            _ => Ok(()),
        }
    }

    /// A suite topic has been silent for longer than [`SILENCE`]: fails at once when a
    /// node the master lists as its publisher does not answer on its slave API (its
    /// process has gone), and after [`HUNG`] when they all answer (alive but not
    /// publishing); a node that is only slow (a busy computer) is given that long.
    fn judge_silence(&self, silence: Silence, what: &str) -> anyhow::Result<()> {
        let Silence {
            topic,
            node,
            quiet,
            ever_heard,
        } = silence;
        if self.pinged.get().is_some_and(|t| t.elapsed() < PING_EVERY) && quiet < HUNG {
            return Ok(());
        }
        self.pinged.set(Some(Instant::now()));
        let listed = publishers(topic);
        let gone: Vec<&str> = listed
            .iter()
            .map(String::as_str)
            .filter(|n| ros1_protocols::this_node::pid_of(n).is_err())
            .collect();
        let quiet_s = quiet.as_secs_f64();
        if listed.is_empty() && ever_heard {
            bail!("while waiting for {what}: no {topic} for {quiet_s:.1} s (wall) and no publisher: {node} has stopped");
        }
        // Never heard and not registered: a node still starting on a busy computer is
        // given as long as a hung one.
        if listed.is_empty() {
            if quiet >= HUNG {
                bail!("while waiting for {what}: no {topic} for {quiet_s:.1} s (wall): {node} never registered it (it did not start)");
            }
            return Ok(());
        }
        if !gone.is_empty() {
            bail!(
                "while waiting for {what}: no {topic} for {quiet_s:.1} s (wall): {} does not answer (its process has gone)",
                gone.join(", ")
            );
        }
        if quiet >= HUNG {
            bail!(
                "while waiting for {what}: no {topic} for {quiet_s:.1} s (wall) although {} answers: it hangs",
                listed.join(", ")
            );
        }
        Ok(())
    }

    fn show_progress(&self) {
        if !self.tty {
            return;
        }
        let s = self.seen.locked();
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

    /// `dynparam set /mock_signals <param> <value>`, as an operator would; bounded, and
    /// the suite is watched while it runs.
    fn dynparam(&self, param: &str, value: &str) -> anyhow::Result<()> {
        let line = format!("rosrun dynamic_reconfigure dynparam set /mock_signals {param} {value}");
        self.say(&line);
        let mut child = Command::new("rosrun")
            .args(["dynamic_reconfigure", "dynparam", "set", "/mock_signals"])
            .args([param, value])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .context("cannot run rosrun (source runners/env.sh)")?;
        let mut status = None;
        let waited = self.wait_within(&format!("`{line}` to return"), DYNPARAM_LIMIT, |_| {
            status = child.try_wait().ok().flatten();
            status.is_some()
        });
        if let Err(e) = waited {
            let _ = child.kill();
            let _ = child.wait();
            return Err(e);
        }
        if !status.is_some_and(|s| s.success()) {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                use std::io::Read;
                let _ = e.read_to_string(&mut err);
            }
            bail!("`{line}` failed: {}", err.trim());
        }
        Ok(())
    }

    fn inject(&self, f: &Fault, at_progress: f64, hold_s: f64) -> anyhow::Result<FaultRun> {
        let Fault { name, kind, .. } = *f;
        let bit = kind.bit().bits();
        // Injected into a moving car (after the previous fault the car accelerates again).
        let when = format!(
            "{:.1} % of the lap, the car faster than {MOVING_ABOVE_MPS} m/s",
            100.0 * at_progress
        );
        self.wait(&when, |s| {
            s.progress >= at_progress && s.poses.last().is_some_and(|p| p.3 > MOVING_ABOVE_MPS)
        })?;
        let position = self
            .seen
            .locked()
            .poses
            .last()
            .map_or((0.0, 0.0), |p| (p.1, p.2));
        // Everything the fault causes arrives after this instant; the car is driving, so
        // the first zero command and the first ERROR with the bit after it are the fault's.
        let t0 = Instant::now();
        self.dynparam(f.param(), &f.faulty.to_string())?;
        let (mut signal, mut sim_signal) = (t0, 0.0);
        self.wait(&format!("{name}: the faulty signal"), |s| {
            f.input_after(s, t0, true)
                .map(|t| (signal, sim_signal) = t)
                .is_some()
        })?;
        let mut detected = signal;
        self.wait(&format!("{name}: ERROR in /system_state"), |s| {
            first(&s.state, t0, |&(_, (st, code))| {
                st == Sys::STATE_ERROR && code & bit != 0
            })
            .map(|t| detected = t)
            .is_some()
        })?;
        // An emergency stop's command is zero speed; a comfortable stop's carries its
        // deceleration limit (AckermannDrive.acceleration > 0) while the speed ramps down.
        let mut brake = signal;
        self.wait(&format!("{name}: the first braking command"), |s| {
            first(&s.cmds, t0, |c| c.1 .0 == 0.0 || c.1 .1 > 0.0)
                .map(|t| brake = t)
                .is_some()
        })?;
        self.wait(&format!("{name}: a zero speed command"), |s| {
            first(&s.cmds, t0, |c| c.1 .0 == 0.0).is_some()
        })?;
        let mut stood = sim_signal;
        self.wait(&format!("{name}: the car at rest"), |s| {
            s.poses
                .iter()
                .find(|p| p.0 >= sim_signal && p.3 < STOPPED_BELOW_MPS)
                .map(|p| stood = p.0)
                .is_some()
        })?;
        self.wait(&format!("{name}: the {hold_s} s hold"), |s| {
            s.sim_now >= stood + hold_s
        })?;
        let t1 = Instant::now();
        self.clearing.set(true);
        self.dynparam(f.param(), &f.healthy().to_string())?;
        let mut cleared = t1;
        self.wait(&format!("{name}: the cleared signal"), |s| {
            f.input_after(s, t1, false).map(|t| cleared = t.0).is_some()
        })?;
        let mut resumed = cleared;
        self.wait(&format!("{name}: moving again"), |s| {
            first(&s.cmds, t1, |c| c.1 .0 > 0.0)
                .map(|t| resumed = t)
                .is_some()
        })?;
        self.clearing.set(false);
        let run = FaultRun {
            name,
            at_progress,
            position,
            detection_ms: ms(detected.saturating_duration_since(signal)),
            brake_cmd_ms: ms(brake.saturating_duration_since(signal)),
            stop_sim: (sim_signal, stood),
            resume_ms: ms(resumed.saturating_duration_since(cleared)),
        };
        self.say(&format!(
            "{name}: detected after {:.2} ms, braking command after {:.2} ms, at rest {:.1} s (sim) later; moving {:.0} ms after the clear",
            run.detection_ms,
            run.brake_cmd_ms,
            (stood - sim_signal).max(0.0),
            run.resume_ms
        ));
        Ok(run)
    }
}

/// The nodes the master lists as publishing `topic` (a dead node stays listed until it
/// is replaced); none if the master does not answer.
fn publishers(topic: &str) -> Vec<String> {
    ros1_protocols::this_node::state()
        .ok()
        .and_then(|s| s.publishers.into_iter().find(|t| t.name == topic))
        .map_or_else(Vec::new, |t| t.connections)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Arrival of the first entry at or after `from` satisfying `pred`.
fn first<T>(
    v: &[(Instant, T)],
    from: Instant,
    pred: impl Fn(&(Instant, T)) -> bool,
) -> Option<Instant> {
    v.iter().find(|e| e.0 >= from && pred(e)).map(|e| e.0)
}

/// Lap progress of each injection: `rounds` pairs (e-stop, battery) spread evenly from
/// `first` to `last` (one round: exactly `first` and `last`).
fn schedule(first: f64, last: f64, rounds: u32) -> Vec<(Fault, f64)> {
    let n = 2 * rounds as usize;
    (0..n)
        .map(|k| {
            let fault = if k % 2 == 0 {
                Fault::estop()
            } else {
                Fault::battery()
            };
            (fault, first + (last - first) * k as f64 / (n - 1) as f64)
        })
        .collect()
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    const SUCCEEDED: u8 = GoalStatus::SUCCEEDED;
    ensure!(
        (0.0..1.0).contains(&args.estop_at)
            && (0.0..1.0).contains(&args.battery_at)
            && args.estop_at < args.battery_at,
        "--estop-at ({}) and --battery-at ({}) must be lap fractions in [0, 1) with the e-stop first",
        args.estop_at,
        args.battery_at
    );
    ensure!(
        args.hold_s.is_finite() && args.hold_s >= 0.0,
        "--hold-s must be a finite number of seconds >= 0, not {}",
        args.hold_s
    );
    let waypoints = gem_core::waypoints::load(&args.track)
        .with_context(|| format!("cannot read the track {}", args.track.display()))?;
    gem_ros::node::start_within(
        &format!("gemctl_demo_{}", std::process::id()),
        Duration::from_secs(30),
    )?;
    let seen = Shared::default();
    let _subs = subscribe(&seen)?;
    let mut demo = Demo {
        seen: seen.clone(),
        lap_started: None,
        pinged: Default::default(),
        clearing: Default::default(),
        deadline: Instant::now() + Duration::from_secs_f64(args.timeout),
        tty: std::io::stdout().is_terminal(),
        started: Instant::now(),
    };
    demo.wait_within(
        "the served lap to start (task planner RUNNING, the car reported)",
        START_LIMIT,
        |s| s.planner == msg::TaskPlannerStatus::STATUS_RUNNING_TASK && !s.poses.is_empty(),
    )
    .map_err(|e| {
        let missing: Vec<&str> = LIVENESS
            .iter()
            .filter(|(t, _)| !seen.locked().heard.contains_key(t))
            .map(|(t, node)| if t.contains("ackermann") { *t } else { *node })
            .collect();
        e.context(format!("not heard from yet: {}", missing.join(", ")))
    })?;
    let sim_start = seen.locked().sim_now;
    let wall_start = Instant::now();
    demo.lap_started = Some((wall_start, sim_start));
    demo.say("lap started");
    let mut faults = Vec::new();
    for (fault, at) in schedule(args.estop_at, args.battery_at, args.rounds) {
        faults.push(demo.inject(&fault, at, args.hold_s)?);
    }
    demo.wait(LAP_END, |s| {
        s.result.as_ref().is_some_and(|r| r.1 == SUCCEEDED)
    })?;
    let (lap_sim, lap_wall) = (seen.locked().sim_now - sim_start, wall_start.elapsed());
    let (success, status, text) = seen.locked().result.clone().unwrap_or_default();
    demo.say(&format!(
        "lap finished: success {success}, status {status} {text}"
    ));
    let (poses, cmd_speeds) = {
        let s = seen.locked();
        let speeds = s.cmds.iter().map(|c| (c.1 .2, f64::from(c.1 .0)));
        (s.poses.clone(), speeds.collect::<Vec<_>>())
    };
    let report = Report::new(&waypoints, &poses, &cmd_speeds, &faults, lap_sim, lap_wall)?;
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
    /// (distance, speed) commanded and driven; (fault, distance from, distance to) stops.
    commanded: Vec<(f64, f64)>,
    actual: Vec<(f64, f64)>,
    stops: Vec<(String, f64, f64)>,
}

/// The distance driven at sim time `t`, from the poses' sim times and distances.
fn distance_at(poses: &[(f64, f64, f64, f64)], cross_track: &[(f64, f64)], t: f64) -> f64 {
    let i = poses
        .partition_point(|p| p.0 < t)
        .min(poses.len().saturating_sub(1));
    cross_track.get(i).map_or(0.0, |c| c.0)
}

impl Report {
    fn new(
        waypoints: &[gem_core::geometry::Pose],
        poses: &[(f64, f64, f64, f64)],
        cmd_speeds: &[(f64, f64)],
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
        let st = stats(&cross_track, CONVERGED_M);
        let mut summary = format!(
            "## GEM e2 demo lap\n\n\
             | lap time (sim) | lap time (wall) | distance | converged after | RMS cross-track after convergence | max after | RMS whole lap |\n\
             |---|---|---|---|---|---|---|\n\
             | {lap_sim:.1} s | {:.1} s | {driven_m:.0} m | {} | {:.3} m | {:.3} m | {:.3} m |\n\n\
             | fault | injected at | signal → /system_state ERROR | signal → first braking command | signal → car at rest (sim) | stopping distance | peak deceleration | peak jerk | largest distance from the path while stopping | cleared signal → moving command |\n\
             |---|---|---|---|---|---|---|---|---|---|\n",
            lap_wall.as_secs_f64(),
            st.converge_m.map_or("never".into(), |d| format!("{d:.1} m")),
            st.rms_after_m,
            st.max_after_m,
            st.rms_all_m,
        );
        for f in faults {
            let (from, to) = f.stop_sim;
            let samples: Vec<StopSample> = poses
                .iter()
                .zip(&cross_track)
                .filter(|(p, _)| p.0 >= from && p.0 <= to)
                .map(|(p, c)| StopSample {
                    t: p.0,
                    position: Point::new(p.1, p.2),
                    cross_track_m: c.1,
                    speed_mps: p.3,
                })
                .collect();
            let stop = StopFigures::measure(&samples);
            summary += &format!(
                "| {} | {:.0} % of the lap | {:.2} ms | {:.2} ms | {:.1} s | {:.2} m | {:.2} m/s² | {:.1} m/s³ | {:.3} m | {:.0} ms |\n",
                f.name,
                100.0 * f.at_progress,
                f.detection_ms,
                f.brake_cmd_ms,
                (to - from).max(0.0),
                stop.distance_m,
                stop.peak_decel_mps2,
                stop.peak_jerk_mps3,
                stop.max_deviation_m,
                f.resume_ms
            );
        }
        summary += "\nLatencies are wall time on loopback between socket arrivals at gemctl's own subscriptions (signal = the first faulty input message; ERROR and braking command = the first after the injection; below about 0.1 ms their order is not causal). The stop's figures come from `gazebo/model_states` (sim time, deceleration and jerk over 0.1 s windows).\n";
        Ok(Report {
            summary,
            path: waypoints.iter().map(|w| (w.x, w.y)).collect(),
            driven: poses.iter().map(|p| (p.1, p.2)).collect(),
            marks: faults
                .iter()
                .map(|f| (f.name.to_string(), f.position))
                .collect(),
            commanded: cmd_speeds
                .iter()
                .map(|&(t, v)| (distance_at(poses, &cross_track, t), v))
                .collect(),
            actual: poses
                .iter()
                .zip(&cross_track)
                .map(|(p, c)| (c.0, p.3))
                .collect(),
            stops: faults
                .iter()
                .map(|f| {
                    let (from, to) = f.stop_sim;
                    (
                        f.name.to_string(),
                        distance_at(poses, &cross_track, from),
                        distance_at(poses, &cross_track, to),
                    )
                })
                .collect(),
            cross_track,
        })
    }

    fn write(&self, out: &std::path::Path, track: &std::path::Path) -> anyhow::Result<()> {
        std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
        let md = out.join("summary.md");
        std::fs::write(&md, &self.summary)
            .with_context(|| format!("cannot write {}", md.display()))?;
        let svg = out.join("trajectory.svg");
        let figure = gem_plot::TrackPlot {
            caption: format!("demo lap of {}", track.display()),
            path: &self.path,
            driven: &self.driven,
            cross_track: &self.cross_track,
            marks: &self.marks,
            speed: Some(gem_plot::SpeedProfile {
                commanded: &self.commanded,
                actual: &self.actual,
                stops: &self.stops,
            }),
        };
        gem_plot::write_svg(&svg, &figure).map_err(|e| anyhow!("{}: {e}", svg.display()))?;
        println!("[demo] wrote {} and {}", md.display(), svg.display());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_round_injects_at_the_two_given_fractions() {
        let s = schedule(0.3, 0.6, 1);
        assert_eq!(s.len(), 2);
        assert_eq!((s[0].0.name, s[0].1), ("e-stop", 0.3));
        assert_eq!((s[1].0.name, s[1].1), ("battery 30 %", 0.6));
    }

    #[test]
    fn rounds_alternate_and_spread_evenly() {
        let s = schedule(0.1, 0.9, 3);
        let names: Vec<&str> = s.iter().map(|f| f.0.name).collect();
        assert_eq!(names, ["e-stop", "battery 30 %"].repeat(3));
        for w in s.windows(2) {
            assert!((w[1].1 - w[0].1 - 0.16).abs() < 1e-12);
        }
        assert!((s[5].1 - 0.9).abs() < 1e-12);
    }

    #[test]
    fn a_silent_topic_names_its_node_and_a_never_heard_one_does_not_count() {
        let t = Instant::now();
        let mut seen = Seen::default();
        assert!(seen.silent(t + SILENCE * 10, None).is_none());
        seen.heard.insert("/clock", (t, 0.0));
        seen.heard.insert("/system_state", (t + SILENCE * 2, 0.0));
        assert!(seen.silent(t + SILENCE, None).is_none());
        let quiet = seen.silent(t + SILENCE * 2, None).unwrap();
        assert_eq!((quiet.topic, quiet.node), ("/clock", "gem_sim"));
        assert!(quiet.ever_heard);
        // Once expected, a topic never heard is silent from then on, if sim time moved.
        seen.heard.insert("/clock", (t + SILENCE * 3, 5.0));
        seen.sim_now = 5.0;
        let expected = Some((t + SILENCE, 0.0));
        assert!(seen.silent(t + SILENCE * 2, expected).is_none());
        let quiet = seen.silent(t + SILENCE * 3, expected).unwrap();
        assert_eq!(quiet.topic, "/task_planner_status");
        // Never heard: its node may still be starting, not gone.
        assert!(!quiet.ever_heard);
    }

    #[test]
    fn a_slowed_simulation_is_not_a_silent_node() {
        let t = Instant::now();
        let mut seen = Seen {
            sim_now: 10.5,
            ..Seen::default()
        };
        for (topic, _) in LIVENESS {
            seen.heard.insert(topic, (t, 10.0));
        }
        seen.heard.insert("/clock", (t + SILENCE * 4, 10.5));
        // Four SILENCEs of wall time, but only 0.5 s of sim time since the others spoke.
        assert!(seen.silent(t + SILENCE * 4, None).is_none());
        seen.sim_now = 11.5;
        let topic = seen.silent(t + SILENCE * 4, None).unwrap().topic;
        assert_eq!(topic, "/system_state");
    }

    #[test]
    fn faulty_and_healthy_inputs_use_the_core_thresholds() {
        let t = Instant::now();
        let mut seen = Seen::default();
        seen.battery.push((t, (0.8, 1.0)));
        seen.battery.push((t, (0.3, 2.0)));
        let (battery, estop) = (Fault::battery(), Fault::estop());
        assert_eq!(battery.input_after(&seen, t, true), Some((t, 2.0)));
        assert_eq!(battery.input_after(&seen, t, false), Some((t, 1.0)));
        seen.estop.push((t, (1.0, 3.0)));
        assert_eq!(estop.input_after(&seen, t, true), Some((t, 3.0)));
        assert_eq!(estop.input_after(&seen, t, false), None);
    }

    #[test]
    fn the_injected_values_are_faults_by_the_core_thresholds() {
        let cfg = StateManagerConfig::default();
        let Value::Int(percent) = Fault::battery().faulty else {
            panic!("battery_level is an int parameter");
        };
        let level = gem_nodes::mock_signals::battery_fraction(percent);
        assert!(FaultKind::Battery.is_faulty(f64::from(level), &cfg));
        assert_eq!(Fault::battery().param(), "battery_level");
    }
}
