//! `gemctl profile`: runs the fault-latency profiler.
//!
//! It launches the headless suite on a private master (or attaches to a running one),
//! serves a long straight route, and measures, from its own subscriptions, how fast the
//! system reacts to each failure type of `gem_core::faults` and how fast it recovers. This
//! module only drives the suite and measures; `gem_profile` holds the chains, their
//! matching rules, the stall analysis and the report, and `gem_plot` draws the figures.
//! The hold-off windows it times the held faults by are the running state manager's own
//! (see [`hold_offs`]). Everything is subscribed, and every subscription is checked to be
//! connected to its publisher and to have delivered a message, before the first
//! injection, so nothing is lost at start-up (the original's `rosbag record` was).
//!
//! Phases:
//! 1. nominal running at 1× for `--resources-s`: CPU and memory of every node from
//!    `/proc`, and the message periods of every watched topic;
//! 2. `--runs` rounds, each injecting every failure type in turn through mock_signals'
//!    reconfigure service and clearing it again. Every link is measured at 1×, at the
//!    nodes' nominal rates, as on the car. Only the 10–20 s hold-off windows are
//!    fast-forwarded: once the faulty input is out, the simulator runs at `--speedup`
//!    (its dynamic_reconfigure `speedup`) until half a simulated second before the fault is
//!    due, then back at 1× for the detection. At 10× on two cores the whole suite's clock
//!    traffic alone costs most of a core and stretches latencies tenfold, so fast-forwarding
//!    through the measurement would measure the overload, not the suite;
//! 3. the report: Markdown, JSON of the raw samples, SVG plots, written into `--out`.

mod probes;
mod record;
mod resources;
mod watch;

use anyhow::{anyhow, bail, Context};
use gem_core::control::stop::{StopFigures, STOPPED_BELOW_MPS};
use gem_core::faults::FaultKind;
use gem_core::names;
use gem_core::state_manager::StateManagerConfig;
use gem_msgs::gem_controller_action::{ServeWaypoints, ServeWaypointsReq};
use gem_msgs::gem_state_msgs::{SystemStateStamped as Sys, TaskPlannerStatus};
use gem_nodes::mock_signals::injection::Injection;
use gem_profile::hold_offs::{self, HoldOffs};
use gem_profile::report::{self, Report};
use gem_profile::{link_stats, Direction, Failure, Run, RunRecord};
use ros1_protocols::dynamic_reconfigure::{Client as Reconfigure, Value};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::Arc;
use std::time::{Duration, Instant};
use watch::Watch;

#[derive(clap::Args)]
pub struct Args {
    /// Injections per failure type (each one a fault chain and a recovery chain).
    #[arg(long, default_value_t = 100)]
    runs: usize,
    /// Failure types to inject, comma separated [default: all six].
    #[arg(long, value_delimiter = ',', value_parser = parse_fault)]
    faults: Vec<FaultKind>,
    /// Profile the suite already running at $ROS_MASTER_URI instead of launching one.
    #[arg(long)]
    attach: bool,
    /// Simulated seconds per wall second while a hold-off window runs (gem_sim's
    /// `speedup`); the links themselves are measured at 1×.
    #[arg(long, default_value_t = 10.0)]
    speedup: f64,
    /// Wall seconds of nominal running at 1× for the resource and message-period figures
    /// (0 skips them).
    #[arg(long, default_value_t = 60.0)]
    resources_s: f64,
    /// Output directory (profile.md, profile.json, SVG plots, bags/).
    #[arg(long, default_value = "build/profile")]
    out: PathBuf,
    /// Also record one bag per injection (its fault and recovery chains) under OUT/bags.
    #[arg(long)]
    record: bool,
    /// Extra arguments for integration_run.launch (repeatable), e.g.
    /// `--launch-arg controller=stanley`; passed to roslaunch as `NAME:=VALUE`. The
    /// `NAME:=VALUE` form is accepted too while VALUE is a plain ROS name (every `a:=b` on
    /// gemctl's own command line is also a remapping of its own node, as in any ROS 1
    /// program).
    #[arg(long = "launch-arg", value_name = "NAME=VALUE")]
    launch_args: Vec<String>,
    /// Simulated seconds each hold-off window runs at 1× before its deadline, after the
    /// fast-forward (the links are measured at 1×; the machine settles from the burst).
    #[arg(long, default_value_t = 0.5)]
    settle_s: f64,
    /// Wall seconds a chain may take beyond its hold-off window before the run fails.
    #[arg(long, default_value_t = 5.0)]
    chain_timeout_s: f64,
    /// SCHED_FIFO priority (1–99) of the fault chain's nodes in the suite it launches
    /// (integration_run.launch's `rt_priority`: signal source, state manager, controller,
    /// task planner, headless simulator)
    /// and of the profiler's own threads; 0: normal scheduling (the profiler at nice -5
    /// when permitted). Without the permission (root, CAP_SYS_NICE or an rtprio limit)
    /// every process runs normally and the report says so.
    #[arg(long, default_value_t = DEFAULT_RT_PRIORITY, value_parser = clap::value_parser!(i32).range(0..=99))]
    rt_priority: i32,
    /// Period (µs) of the stall probes that run during the rounds: one thread per CPU,
    /// pinned, at SCHED_FIFO 99; a wake-up more than 0.5 ms late is a stall of that CPU
    /// (hypervisor steal), and the report says which events a stall overlapped. 0: no
    /// probes.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    stall_probe_us: u64,
    /// The state manager's node name: the held faults are timed by its hold-off
    /// parameters (`NODE/gps_lost_after_s`, `signal_lost_after_s`, `signal_low_after_s`)
    /// [default: the node that publishes /system_state].
    #[arg(long, value_name = "NODE")]
    state_manager: Option<String>,
}

/// A `--launch-arg` as roslaunch takes it (`NAME:=VALUE`), from `NAME=VALUE` or from
/// `NAME:=VALUE` when VALUE is a ROS name: every `a:=b` on gemctl's command line is also
/// a remapping of its own node, and a remapping to something that is not a name is
/// refused.
fn launch_arg(arg: &str) -> Result<String, String> {
    let is_arg_name =
        |n: &str| !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if let Some((name, value)) = arg.split_once(":=") {
        let plain = value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_/~".contains(c));
        return match (is_arg_name(name), plain) {
            (true, true) => Ok(arg.to_owned()),
            (false, _) => Err(format!("{name:?} is not a launch argument name")),
            (true, false) => Err(format!(
                "write it {name}={value}: {arg:?} on gemctl's own command line is a \
                 remapping, and {value:?} is not a ROS name"
            )),
        };
    }
    match arg.split_once('=') {
        Some((name, value)) if is_arg_name(name) => Ok(format!("{name}:={value}")),
        _ => Err("expected NAME=VALUE, NAME an argument of integration_run.launch".into()),
    }
}

fn parse_fault(s: &str) -> Result<FaultKind, String> {
    FaultKind::parse(s).ok_or_else(|| {
        let names: Vec<&str> = FaultKind::ALL.iter().map(|k| k.name()).collect();
        format!("unknown failure type {s:?} (one of {})", names.join(", "))
    })
}

/// The fault chain's real-time priority when profiling (see `Args::rt_priority`): the
/// bounds of the fault chain are a property of the suite as it is meant to run on the car.
const DEFAULT_RT_PRIORITY: i32 = 20;

/// The suite launched by the profiler on a private master; stopped on drop.
struct Launch {
    child: Child,
}

impl Launch {
    fn start(out: &Path, rt_priority: i32, extra: &[String]) -> anyhow::Result<Launch> {
        // ROS-time timeouts sized for fast-forwarding at 10x on a loaded 2-core machine
        // (5 s of sim time is half a wall second there).
        let mut args: Vec<String> = [
            "speedup:=1",
            "state_timeout_ms:=5000",
            "system_state_timeout_s:=5",
            "pose_timeout_s:=5",
        ]
        .map(String::from)
        .to_vec();
        args.push(format!("rt_priority:={rt_priority}"));
        // Last: roslaunch takes the last value of an argument given twice.
        args.extend_from_slice(extra);
        let log = out.join("roslaunch.log");
        let (uri, child) = gem_ros::launch::suite_on_own_master(&args, &log, |_| {})
            .context("cannot run roslaunch (source runners/env.sh)")?;
        println!("[profile] suite launched on {uri} (log: {})", log.display());
        Ok(Launch { child })
    }
}

impl Drop for Launch {
    fn drop(&mut self) {
        gem_ros::launch::stop_group(&mut self.child, gem_ros::launch::SIGINT_GRACE);
    }
}

/// Writes a straight route along +x from the spawn point, long enough for `metres`.
fn write_route(file: &Path, metres: f64) -> anyhow::Result<()> {
    const SPACING_M: f64 = 5.0;
    let mut text = String::new();
    let n = (metres / SPACING_M).ceil() as usize + 1;
    for i in 0..n {
        text += &format!("{:.1},0.0,0.0\n", i as f64 * SPACING_M);
    }
    std::fs::write(file, text).with_context(|| format!("cannot write {}", file.display()))
}

struct Profiler<'a> {
    /// Each fault run's stop: its failure type and figures.
    stops: std::cell::RefCell<Vec<(FaultKind, StopFigures)>>,
    args: &'a Args,
    watch: Arc<Watch>,
    mock: Reconfigure,
    sim: Option<Reconfigure>,
    cfg: StateManagerConfig,
    route: PathBuf,
    tty: bool,
}

const NOMINAL_WAIT: Duration = Duration::from_secs(30);
/// How long the car may take to come to rest after a fault (wall, at `--speedup`).
const STOP_LIMIT: Duration = Duration::from_secs(30);

impl Profiler<'_> {
    fn say(&self, text: &str) {
        if self.tty {
            print!("\r\x1b[K");
        }
        println!("[profile] {text}");
    }

    /// Sets `kind`'s mock_signals parameter to `value`.
    fn set(&self, kind: FaultKind, value: Value) -> anyhow::Result<()> {
        Injection::of(kind)
            .set_on(&self.mock, value)
            .map_err(|e| anyhow!("{e}"))
    }

    fn set_speedup(&self, speedup: f64) -> anyhow::Result<()> {
        if let Some(sim) = &self.sim {
            sim.set(&[("speedup", Value::Double(speedup))])
                .map_err(|e| anyhow!("gem_sim: {e}"))?;
        }
        Ok(())
    }

    fn serve(&self) -> anyhow::Result<()> {
        ros1_protocols::this_node::wait_for_service(names::global::SERVE_WAYPOINTS, NOMINAL_WAIT)
            .map_err(|e| anyhow!("/serve_waypoints: {e}"))?;
        let client =
            ros1_protocols::service::Client::<ServeWaypoints>::new(names::global::SERVE_WAYPOINTS)?;
        let file = self.route.to_string_lossy().into_owned();
        let res = client.call(
            &ServeWaypointsReq {
                waypoints_file: file.clone(),
            },
            NOMINAL_WAIT,
        )?;
        anyhow::ensure!(res.success, "the planner refused {file}");
        Ok(())
    }

    /// Waits for the car to be driving the task: RUNNING, planner RUNNING, moving command.
    fn wait_nominal(&self, what: &str) -> anyhow::Result<()> {
        let ok = self.watch.wait(NOMINAL_WAIT, |l| {
            l.state.map(|s| s.0) == Some(Sys::STATE_RUNNING)
                && l.planner == Some(TaskPlannerStatus::STATUS_RUNNING_TASK)
                && l.speed
                    .is_some_and(|v| f64::from(v) > gem_profile::MOVING_ABOVE_MPS)
        });
        if !ok {
            let l = self.watch.lock();
            bail!(
                "{what}: the suite is not driving nominally after {} s (state {:?}, planner {:?}, speed {:?})",
                NOMINAL_WAIT.as_secs(),
                l.state,
                l.planner,
                l.speed
            );
        }
        Ok(())
    }

    /// One chain: arm, ask mock_signals for the change, wait for every link.
    fn chain(
        &self,
        kind: FaultKind,
        direction: Direction,
        index: usize,
    ) -> Result<RunRecord, Failure> {
        let fault = kind.fault();
        let fail = |reason: String| Failure {
            kind,
            direction,
            index,
            reason,
        };
        {
            let mut l = self.watch.lock();
            let last_good = l
                .last_input
                .get(fault.input.global_topic())
                .filter(|(v, _)| !kind.is_faulty(*v, &self.cfg))
                .map(|x| x.1);
            l.run = Some((kind, Run::new(kind, direction, &self.cfg, last_good)));
        }
        let (value, mut timeout) = match direction {
            Direction::Fault => (Injection::of(kind).faulty, self.args.chain_timeout_s),
            Direction::Recovery => (Injection::of(kind).healthy(), self.args.chain_timeout_s),
        };
        let hold_off = kind
            .hold_off(&self.cfg)
            .filter(|_| direction == Direction::Fault);
        if let Some(h) = hold_off {
            timeout += h.as_secs_f64() / self.args.speedup;
        }
        if direction == Direction::Fault {
            // A stop is measured from cruise: after the last recovery the car is still
            // accelerating when its first moving command is seen.
            self.cruise().map_err(|e| fail(e.to_string()))?;
            self.watch.lock().stop_samples = Some(Vec::new());
        }
        if let Err(e) = self.set(kind, value) {
            self.watch.lock().run = None;
            return Err(fail(e.to_string()));
        }
        if hold_off.is_some() {
            if let Err(e) = self.fast_forward() {
                self.watch.lock().run = None;
                return Err(fail(e.to_string()));
            }
        }
        let done = self.watch.wait(Duration::from_secs_f64(timeout), |l| {
            l.run.as_ref().is_some_and(|r| r.1.is_complete())
        });
        let run = self.watch.lock().run.take().map(|r| r.1);
        match run {
            Some(run) if done => {
                if direction == Direction::Fault {
                    let onset = run
                        .at(gem_profile::Link::Onset)
                        .map_or(0.0, |s| s.sim.as_secs_f64());
                    let figures = self.stop(onset).map_err(|e| fail(e.to_string()))?;
                    self.stops.borrow_mut().push((kind, figures));
                }
                run.record(index).ok_or_else(|| fail("incomplete".into()))
            }
            Some(run) => {
                let missing: Vec<&str> = run.missing().iter().map(|l| l.label()).collect();
                Err(fail(format!(
                    "timed out after {timeout:.1} s waiting for: {}",
                    missing.join(", ")
                )))
            }
            None => Err(fail("the run vanished".into())),
        }
    }

    /// Waits, at `--speedup`, until the car drives at its commanded speed (within
    /// 0.1 m/s).
    fn cruise(&self) -> anyhow::Result<()> {
        self.set_speedup(self.args.speedup)?;
        let cruising = self.watch.wait(STOP_LIMIT, |l| {
            l.speed.is_some_and(|v| {
                f64::from(v) > gem_profile::MOVING_ABOVE_MPS
                    && (f64::from(v) - l.car_speed).abs() < 0.1
            })
        });
        self.set_speedup(1.0)?;
        anyhow::ensure!(
            cruising,
            "the car did not reach its commanded speed within {} s (wall)",
            STOP_LIMIT.as_secs()
        );
        Ok(())
    }

    /// Waits for the car to come to rest after a fault whose onset was at `onset_s` (sim),
    /// at `--speedup` (the links are measured by then; a comfortable stop takes seconds),
    /// and returns the stop's figures.
    fn stop(&self, onset_s: f64) -> anyhow::Result<StopFigures> {
        self.set_speedup(self.args.speedup)?;
        let at_rest = self.watch.wait(STOP_LIMIT, |l| {
            l.stop_samples.as_ref().is_some_and(|v| {
                v.last()
                    .is_some_and(|s| s.t > onset_s && s.speed_mps < STOPPED_BELOW_MPS)
            })
        });
        self.set_speedup(1.0)?;
        let samples = self.watch.lock().stop_samples.take().unwrap_or_default();
        anyhow::ensure!(
            at_rest,
            "the car was not at rest {} s (wall) after the fault",
            STOP_LIMIT.as_secs()
        );
        let from = samples.partition_point(|s| s.t < onset_s);
        Ok(StopFigures::measure(&samples[from..]))
    }

    /// Runs the armed run's hold-off window at `--speedup` up to `--settle-s` ahead
    /// of its deadline, then returns to 1×.
    fn fast_forward(&self) -> anyhow::Result<()> {
        let mut deadline = None;
        let seen = self.watch.wait(Duration::from_secs(5), |l| {
            deadline = l.run.as_ref().and_then(|r| r.1.deadline());
            deadline.is_some()
        });
        let Some(due) = deadline.filter(|_| seen) else {
            bail!("no faulty input within 5 s");
        };
        let slow_at = gem_core::time::Time::from_nanos(
            due.as_nanos()
                .saturating_sub(Duration::from_secs_f64(self.args.settle_s).as_nanos() as u64),
        );
        self.set_speedup(self.args.speedup)?;
        let window = self.watch.lock().sim;
        let wall = due.saturating_since(window).as_secs_f64() / self.args.speedup + 5.0;
        let reached = self
            .watch
            .wait(Duration::from_secs_f64(wall), |l| l.sim >= slow_at);
        self.set_speedup(1.0)?;
        anyhow::ensure!(reached, "sim time did not reach the window's end");
        Ok(())
    }

    fn progress(&self, round: usize, kind: FaultKind, started: Instant, failures: usize) {
        let total = self.args.runs;
        let line = format!(
            "round {}/{} {:<20} failures {failures}  {:.0} s",
            round + 1,
            total,
            kind.name(),
            started.elapsed().as_secs_f64()
        );
        if self.tty {
            print!("\r\x1b[K[profile] {line}");
            let _ = std::io::stdout().flush();
        } else if kind == self.faults()[0] && round.is_multiple_of((total / 10).max(1)) {
            println!("[profile] {line}");
        }
    }

    fn faults(&self) -> Vec<FaultKind> {
        if self.args.faults.is_empty() {
            FaultKind::ALL.to_vec()
        } else {
            self.args.faults.clone()
        }
    }
}

/// Route length for the whole profile: the car drives on during every hold-off window.
fn route_metres(args: &Args, kinds: &[FaultKind], cfg: &StateManagerConfig) -> f64 {
    let per_round_s: f64 = kinds
        .iter()
        .map(|k| k.hold_off(cfg).map_or(0.0, |h| h.as_secs_f64()) + 3.0)
        .sum();
    let nominal = gem_core::control::speed::SpeedConfig::default().nominal_mps;
    500.0 + nominal * (per_round_s * args.runs as f64 + args.resources_s * 1.5)
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    anyhow::ensure!(args.runs > 0, "--runs must be at least 1");
    let launch_args = args
        .launch_args
        .iter()
        .map(|a| launch_arg(a).map_err(|e| anyhow!("--launch-arg {a:?}: {e}")))
        .collect::<anyhow::Result<Vec<_>>>()?;
    anyhow::ensure!(
        args.speedup.is_finite() && args.speedup > 0.0,
        "--speedup must be > 0"
    );
    anyhow::ensure!(
        args.settle_s.is_finite() && (0.0..=60.0).contains(&args.settle_s),
        "--settle-s must be within 0..60 s"
    );
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    let out = args.out.canonicalize()?;
    let kinds = if args.faults.is_empty() {
        FaultKind::ALL.to_vec()
    } else {
        args.faults.clone()
    };
    let started = Instant::now();
    let _launch = if args.attach {
        None
    } else {
        Some(Launch::start(&out, args.rt_priority, &launch_args)?)
    };
    let scheduling = raise_priority(args.rt_priority);
    println!("[profile] the profiler runs at {scheduling}");
    gem_ros::node::start_within(
        &format!("gemctl_profile_{}", std::process::id()),
        Duration::from_secs(30),
    )?;
    let watch = Watch::new();
    let subs = watch::subscribe(&watch)?;
    let mock = Reconfigure::new("/mock_signals", NOMINAL_WAIT)
        .map_err(|e| anyhow!("mock_signals' reconfigure service: {e}"))?;
    let sim = Reconfigure::new("/gem_sim", Duration::from_secs(5)).ok();
    if sim.is_none() {
        println!("[profile] no /gem_sim reconfigure service: the simulator's speed stays as it is");
    }
    let windows = read_hold_offs(args, &watch)?;
    for w in &windows.warnings {
        println!("[profile] warning: {w}");
    }
    println!(
        "[profile] hold-off windows: {}",
        hold_offs::describe(&windows.used)
    );
    let cfg = windows.cfg.clone();
    let route = out.join("profile_route.csv");
    write_route(&route, route_metres(args, &kinds, &cfg))?;
    let p = Profiler {
        stops: Default::default(),
        args,
        watch: watch.clone(),
        mock,
        sim,
        cfg,
        route,
        tty: std::io::stdout().is_terminal(),
    };
    // Nominal inputs (an attached suite may hold a fault), then the route.
    for k in FaultKind::ALL {
        p.set(k, Injection::of(k).healthy())?;
    }
    p.set_speedup(1.0)?;
    p.serve()?;
    p.wait_nominal("start-up")?;
    verify_connected(&watch, &subs)?;
    p.say(&format!(
        "{} subscriptions connected and delivering; the car is driving",
        subs.len()
    ));

    let nodes = list_nodes()?;
    let suite_scheduling = nodes
        .iter()
        .map(|(name, pid)| (name.clone(), gem_ros::realtime::describe(*pid)))
        .collect();

    // CPU ticks (total, steal) at the start and end of the nominal window and the rounds.
    let mut steal = (None, None, None, None);
    let usage = if args.resources_s > 0.0 {
        p.say(&format!(
            "nominal running at 1x for {:.0} s: CPU, memory, message periods",
            args.resources_s
        ));
        watch.lock().measuring = true;
        steal.0 = resources::cpu_ticks();
        let usage = resources::measure(&nodes, Duration::from_secs_f64(args.resources_s), |t| {
            if p.tty {
                print!(
                    "\r\x1b[K[profile] resources {:.0}/{:.0} s",
                    t.as_secs_f64(),
                    args.resources_s
                );
                let _ = std::io::stdout().flush();
            }
        });
        watch.lock().measuring = false;
        steal.1 = resources::cpu_ticks();
        usage
    } else {
        Vec::new()
    };

    p.say(&format!(
        "{} rounds of {} (hold-off windows at {}x)",
        args.runs,
        kinds
            .iter()
            .map(|k| k.name())
            .collect::<Vec<_>>()
            .join(", "),
        args.speedup
    ));
    let recorder = args
        .record
        .then(|| record::Recorder::new(&out.join("bags")));
    let probes = match args.stall_probe_us {
        0 => Err("off (--stall-probe-us 0)".to_string()),
        us => probes::Monitor::start(watch.epoch(), Duration::from_micros(us)),
    };
    if let Err(e) = &probes {
        p.say(&format!("stall probes: {e}"));
    }
    let injections_started = Instant::now();
    steal.2 = resources::cpu_ticks();
    let (mut runs, mut failures) = (Vec::new(), Vec::new());
    'rounds: for round in 0..args.runs {
        for &kind in &kinds {
            p.progress(round, kind, injections_started, failures.len());
            if watch.lock().planner == Some(TaskPlannerStatus::STATUS_NO_TASK) {
                p.say("the task ended; serving the route again");
                p.serve()?;
                p.wait_nominal("re-served route")?;
            }
            let bag = match &recorder {
                Some(r) => Some(r.start(&format!("{}_{round:03}", kind.name()))?),
                None => None,
            };
            for direction in [Direction::Fault, Direction::Recovery] {
                match p.chain(kind, direction, round) {
                    Ok(r) => runs.push(r),
                    Err(f) => {
                        let run = gem_profile::run_label(kind, direction, round);
                        p.say(&format!("{run}: {}", f.reason));
                        failures.push(f);
                        // Back to nominal before going on; give up if the suite cannot.
                        p.set(kind, Injection::of(kind).healthy())?;
                        if let Err(e) = p.wait_nominal("after a failed run") {
                            p.say(&format!("{e}; stopping early"));
                            break 'rounds;
                        }
                        break;
                    }
                }
            }
            if let Some(bag) = bag {
                bag.stop();
            }
        }
    }
    let injection_wall = injections_started.elapsed();
    steal.3 = resources::cpu_ticks();
    let stalls = report::Stalls::new(
        args.stall_probe_us,
        probes.map(probes::Monitor::stop),
        &runs,
    );
    if p.tty {
        println!();
    }
    p.set_speedup(1.0)?;
    let (periods, socket_wait_ms) = {
        let mut l = watch.lock();
        let periods = l
            .periods
            .iter()
            .filter_map(|(t, p)| p.stats().map(|s| (t.to_string(), s)))
            .collect();
        (periods, std::mem::take(&mut l.socket_wait_ms))
    };
    let report = Report {
        machine: resources::machine(),
        rounds: args.runs,
        speedup: args.speedup,
        resources_s: args.resources_s,
        kinds: &kinds,
        runs: &runs,
        failures: &failures,
        periods,
        usage,
        total_wall: started.elapsed(),
        injection_wall,
        attached: args.attach,
        scheduling,
        suite_scheduling,
        steal_percent: (
            resources::steal_percent(steal.0, steal.1),
            resources::steal_percent(steal.2, steal.3),
        ),
        socket_wait_ms,
        stalls,
        hold_offs: &windows.used,
        stops: &p.stops.borrow(),
    };
    write_report(&report, &out)?;
    drop(subs);
    anyhow::ensure!(
        failures.is_empty(),
        "{} runs failed (see the report)",
        failures.len()
    );
    Ok(())
}

/// The hold-off windows of the running state manager (`--state-manager`, else the node
/// that publishes `/system_state`, found once its first message has arrived, so its
/// parameters are set by then).
fn read_hold_offs(args: &Args, watch: &Watch) -> anyhow::Result<hold_offs::HoldOffs> {
    const STATE: &str = names::global::SYSTEM_STATE;
    let heard = watch.wait(NOMINAL_WAIT, |l| l.state.is_some());
    let node = match &args.state_manager {
        Some(node) => Ok(node.clone()),
        None if !heard => Err(format!("no {STATE} within {} s", NOMINAL_WAIT.as_secs())),
        None => match publishers(STATE)?.as_slice() {
            [node] => Ok(node.clone()),
            [] => Err(format!("no node publishes {STATE}")),
            many => Err(format!(
                "{} nodes publish {STATE} ({}; choose one with --state-manager)",
                many.len(),
                many.join(", ")
            )),
        },
    };
    HoldOffs::read(
        node.as_deref().map_err(String::as_str),
        gem_nodes::state_manager::params::hold_off_param,
        gem_ros::params::number_at,
    )
    .map_err(|e| anyhow!("the state manager's hold-off windows: {e}"))
}

/// Writes `profile.md`, `profile.json` and the figures into `out`; prints the summary.
fn write_report(report: &Report, out: &Path) -> anyhow::Result<()> {
    let stats = link_stats(report.runs);
    let md_file = out.join("profile.md");
    std::fs::write(&md_file, report.markdown(&stats))
        .with_context(|| format!("cannot write {}", md_file.display()))?;
    let json_file = out.join("profile.json");
    let f = std::fs::File::create(&json_file)
        .with_context(|| format!("cannot write {}", json_file.display()))?;
    serde_json::to_writer_pretty(std::io::BufWriter::new(f), &report.json(&stats))?;
    gem_plot::latency_boxplot(&out.join("latency_boxplot.svg"), report.runs, report.kinds)
        .map_err(|e| anyhow!("latency_boxplot.svg: {e}"))?;
    gem_plot::chain_breakdown(&out.join("chain_breakdown.svg"), &stats, report.kinds)
        .map_err(|e| anyhow!("chain_breakdown.svg: {e}"))?;
    print!("{}", report.console());
    println!(
        "[profile] wrote {}, {} and the figures",
        md_file.display(),
        json_file.display()
    );
    Ok(())
}

/// The nodes the master lists as publishing `topic`.
fn publishers(topic: &str) -> anyhow::Result<Vec<String>> {
    let state = ros1_protocols::this_node::state().map_err(|e| anyhow!("getSystemState: {e}"))?;
    Ok(state
        .publishers
        .into_iter()
        .find(|t| t.name == topic)
        .map_or_else(Vec::new, |t| t.connections))
}

/// The profiler is the measuring instrument: when allowed (root or CAP_SYS_NICE), it runs
/// at SCHED_FIFO `rt_priority` (or else nice -5) so its subscriber threads wake at once on
/// a busy CPU and its receive times stay close to the arrivals. Called before the node
/// starts its threads (they inherit it); the programs it starts later (rosbag) are started
/// through [`gem_ros::realtime::run_normally`]. Returns what it got, for the report.
fn raise_priority(rt_priority: i32) -> String {
    let fifo = match rt_priority {
        0 => None,
        p => match gem_ros::realtime::set_fifo(p) {
            Ok(_) => return format!("SCHED_FIFO {p}"),
            Err(e) => Some(e),
        },
    };
    // SAFETY: setpriority only changes this process's scheduling value.
    let niced = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, -5) } == 0;
    let got = if niced { "nice -5" } else { "normal priority" };
    match fifo {
        Some(e) => format!("{got} ({e})"),
        None => got.to_string(),
    }
}

/// Every subscription has a connected publisher and has delivered at least one message
/// (the action's goal, cancel and result topics only carry messages on events, so for them
/// the connection is enough).
fn verify_connected(
    watch: &Watch,
    subs: &[(&'static str, ros1_protocols::direct::DirectSubscriber)],
) -> anyhow::Result<()> {
    const EVENT_ONLY: [&str; 3] = [
        names::global::navigate_waypoints::GOAL,
        names::global::navigate_waypoints::CANCEL,
        names::global::navigate_waypoints::RESULT,
    ];
    let ok = watch.wait(NOMINAL_WAIT, |l| {
        subs.iter().all(|(topic, s)| {
            s.publisher_count() > 0
                && (EVENT_ONLY.contains(topic) || l.counts.get(topic).copied().unwrap_or(0) > 0)
        })
    });
    if !ok {
        let l = watch.lock();
        let bad: Vec<String> = subs
            .iter()
            .filter(|(t, s)| {
                s.publisher_count() == 0
                    || (!EVENT_ONLY.contains(t) && l.counts.get(t).copied().unwrap_or(0) == 0)
            })
            .map(|(t, s)| format!("{t} ({} publishers)", s.publisher_count()))
            .collect();
        bail!("subscriptions not delivering: {}", bad.join(", "));
    }
    Ok(())
}

/// Every node registered at the master (except this one) with its pid.
fn list_nodes() -> anyhow::Result<Vec<(String, u32)>> {
    let names =
        ros1_protocols::this_node::other_nodes().map_err(|e| anyhow!("getSystemState: {e}"))?;
    let mut nodes = Vec::new();
    for n in names {
        match ros1_protocols::this_node::pid_of(&n) {
            Ok(pid) => nodes.push((n, pid)),
            Err(e) => println!("[profile] skipping {n}: {e}"),
        }
    }
    Ok(nodes)
}

#[cfg(test)]
mod tests {
    use super::launch_arg;

    #[test]
    fn launch_args_become_name_colon_equals_value() {
        assert_eq!(
            launch_arg("controller=stanley").as_deref(),
            Ok("controller:=stanley")
        );
        // Anything after the first '=' is the value, spaces and dots included.
        assert_eq!(
            launch_arg("waypoints=my track.csv").as_deref(),
            Ok("waypoints:=my track.csv")
        );
        assert_eq!(
            launch_arg("controller:=stanley").as_deref(),
            Ok("controller:=stanley")
        );
    }

    #[test]
    fn launch_args_rosrust_would_choke_on_or_without_a_name_are_refused() {
        let e = launch_arg("waypoints:=gem_track.csv").unwrap_err();
        assert!(e.contains("write it waypoints=gem_track.csv"), "{e}");
        for bad in ["stanley", "=x", "a b=c", "bad-name:=x"] {
            assert!(launch_arg(bad).is_err(), "{bad}");
        }
    }
}
