//! `gemctl record-route OUT.csv`: records the route a person drives as a waypoint file
//! for the task planner. This module only wires ROS to `gem_core::route_recorder`, where
//! every rule lives (spacing, stops, smoothing and yaw, gaps on a bad solution, loop
//! closing): it checks that OUT can be written before anything else, feeds the recorder
//! the rear axle's poses and the solution's health on ROS time (sim-time aware), shows
//! the recorder's live line on stderr, and on Ctrl-C (or the node being shut down) writes
//! the route atomically (a temporary file in OUT's directory, renamed over OUT) once the
//! planner's loader has read it back.
//!
//! Two pose sources:
//! - `model-state` (the default): `gazebo/get_model_state`, as `gnss_pose` serves it on
//!   the car and `gem_sim` in simulation, asked [`POLL_HZ`] times a second of ROS time
//!   (the same pose answered twice is dropped by its stamp); the health is the
//!   `gps_accuracy` topic (`gnss_pose` on the car, `mock_signals` in simulation);
//! - `ins`: `novatel/inspva` straight from the INS, projected with the origin and the
//!   antenna offset of the `gnss_pose` node named by `--frame-from` (its parameters), and
//!   judged by `gem_core::gnss` as `gnss_pose` judges it: the health is that verdict.

use anyhow::{anyhow, bail, Context};
use gem_core::geometry::Point;
use gem_core::gnss::health::InsHealthConfig;
use gem_core::gnss::pose::{InsPose, InsPoseConfig};
use gem_core::gnss::source::{PoseSource, Served};
use gem_core::names;
use gem_core::route_recorder::{self, Health, PoseSample, Recorder, RecorderConfig, Status};
use gem_core::time::Time;
use gem_msgs::gazebo_msgs::{GetModelState, GetModelStateReq};
use gem_msgs::gem_state_msgs::GpsAccuracyStamped;
use gem_msgs::novatel_gps_msgs::Inspva;
use gem_ros::convert::inspva_solution;
use gem_ros::time::{self, to_core};
use ros1_protocols::clock::{wait_for_clock_or, Timing};
use ros1_protocols::direct::{Arrival, DirectSubscriber};
use ros1_protocols::service::Client;
use ros1_protocols::this_node;
use ros1_protocols::Lock;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How often the model-state source is asked, per second of ROS time: twice a 20 Hz
/// INS's rate, so no solution is missed.
pub const POLL_HZ: f64 = 40.0;
/// Wall time between two polls at most, so a paused simulation is still asked.
const POLL_WALL: Duration = Duration::from_millis(100);
/// Wall time a pose call gets.
const CALL_TIMEOUT: Duration = Duration::from_millis(500);
/// The live line is redrawn this often on a terminal.
const REDRAW: Duration = Duration::from_millis(250);
/// Off a terminal, a line this often (and on every change of state).
const LOG_EVERY: Duration = Duration::from_secs(5);

#[derive(clap::Args)]
pub struct Args {
    /// The waypoint file to write (the task planner's `x,y,yaw` CSV); its directory must
    /// exist and be writable. An existing file is replaced once the new route is valid.
    out: PathBuf,
    /// Distance between waypoints along the driven path, m.
    #[arg(long, default_value_t = RecorderConfig::DEFAULT.spacing_m, value_parser = spacing)]
    spacing_m: f64,
    /// Join the end to the start when the drive comes back within two spacings of where
    /// it started (the overshoot is dropped; the last row repeats the first).
    #[arg(long)]
    close_loop: bool,
    /// Where the rear axle's pose comes from.
    #[arg(long, value_enum, default_value_t = Source::ModelState)]
    source: Source,
    /// The model asked for with `--source model-state`.
    #[arg(long, default_value = "gem")]
    model: String,
    /// With `--source ins`: the `gnss_pose` node whose origin and antenna offset
    /// (its parameters) project the solutions.
    #[arg(long, default_value = "/gnss_pose")]
    frame_from: String,
    /// Seconds (wall time) to wait for the master, the first pose and the first health
    /// reading before giving up.
    #[arg(long, default_value_t = 10.0, value_parser = positive)]
    wait_s: f64,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Source {
    /// `gazebo/get_model_state` and `gps_accuracy`.
    ModelState,
    /// `novatel/inspva`, projected with `--frame-from`'s frame.
    Ins,
}

fn positive(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("{s:?} is not a positive number")),
    }
}

fn spacing(s: &str) -> Result<f64, String> {
    let v = positive(s)?;
    if v > RecorderConfig::MAX_SPACING_M {
        return Err(format!(
            "{s} m is more than {} m",
            RecorderConfig::MAX_SPACING_M
        ));
    }
    Ok(v)
}

/// What the subscriptions and the polls share.
struct Shared {
    recorder: Recorder,
    pose_heard: bool,
    health_heard: bool,
    /// Why the latest pose could not be had.
    pose_error: Option<String>,
}

type SharedRef = Arc<Mutex<Shared>>;

pub fn run(args: &Args) -> anyhow::Result<()> {
    let cfg = RecorderConfig {
        spacing_m: args.spacing_m,
        ..RecorderConfig::DEFAULT
    };
    let recorder = Recorder::new(cfg).map_err(|e| anyhow!("--spacing-m: {e}"))?;
    let target = Target::check(&args.out)?;
    let wait = Duration::from_secs_f64(args.wait_s);
    gem_ros::node::start_within(&format!("gemctl_record_route_{}", std::process::id()), wait)?;
    let shared: SharedRef = Arc::new(Mutex::new(Shared {
        recorder,
        pose_heard: false,
        health_heard: false,
        pose_error: None,
    }));
    let source = PoseInput::start(args, &shared)?;
    eprintln!(
        "[record-route] recording {} every {} m{} from {}; Ctrl-C ends the recording and writes the file",
        target.path.display(),
        args.spacing_m,
        if args.close_loop { ", closing the loop" } else { "" },
        source.describe()
    );
    record(&shared, &source, wait)?;
    let recorder = shared.locked().recorder.clone();
    let route = recorder
        .finish(args.close_loop)
        .map_err(|e| anyhow!("nothing written to {}: {e}", target.path.display()))?;
    let bytes = route_recorder::to_csv(&route.waypoints, &target.path.display().to_string())?;
    target.write(&bytes)?;
    println!(
        "[record-route] wrote {}: {}",
        target.path.display(),
        route.summary()
    );
    Ok(())
}

/// Polls the source and shows the live line until Ctrl-C; fails when the first pose or
/// health reading has not come within `wait` (wall time).
fn record(shared: &SharedRef, source: &PoseInput, wait: Duration) -> anyhow::Result<()> {
    let period = Duration::from_secs_f64(1.0 / POLL_HZ);
    let started = Instant::now();
    let mut ready = false;
    let mut live = Live::new();
    let mut polled: Option<(Time, Instant)> = None;
    while this_node::is_ok() {
        let now = time::now();
        let due = polled.is_none_or(|(ros, wall)| {
            now.saturating_since(ros) >= period || now < ros || wall.elapsed() >= POLL_WALL
        });
        if due {
            source.poll(shared, now);
            polled = Some((now, Instant::now()));
        }
        if !ready {
            ready = source.ready(&shared.locked(), started.elapsed() >= wait, wait)?;
        }
        live.show(shared.locked().recorder.status(now));
        wait_for_clock_or(period, time::to_ros(now), Timing::Exact, || {
            !this_node::is_ok()
        });
    }
    live.end();
    Ok(())
}

/// The pose source in use, with its subscriptions.
enum PoseInput {
    ModelState {
        client: Client<GetModelState>,
        model: String,
        _health: DirectSubscriber,
    },
    Ins {
        _solutions: DirectSubscriber,
    },
}

impl PoseInput {
    fn start(args: &Args, shared: &SharedRef) -> anyhow::Result<PoseInput> {
        Ok(match args.source {
            Source::ModelState => PoseInput::ModelState {
                client: Client::new(names::GET_MODEL_STATE)?,
                model: args.model.clone(),
                _health: subscribe_health(shared)?,
            },
            Source::Ins => PoseInput::Ins {
                _solutions: subscribe_ins(&args.frame_from, args.wait_s, shared)?,
            },
        })
    }

    fn describe(&self) -> String {
        match self {
            PoseInput::ModelState { client, model, .. } => format!(
                "{} (model {model}), health from {}",
                client.name(),
                resolved(names::GPS_ACCURACY)
            ),
            PoseInput::Ins { .. } => format!("{}, health from its status", resolved(names::INSPVA)),
        }
    }

    /// Asks the model-state source for a pose (the INS source pushes its own).
    fn poll(&self, shared: &SharedRef, now: Time) {
        let PoseInput::ModelState { client, model, .. } = self else {
            return;
        };
        let req = GetModelStateReq {
            model_name: model.clone(),
            relative_entity_name: String::new(),
        };
        let answer = client.call(&req, CALL_TIMEOUT);
        let mut s = shared.locked();
        match answer {
            Ok(res) if res.success => {
                let stamp = to_core(res.header.stamp);
                let p = res.pose.position;
                let sample = PoseSample {
                    stamp: if stamp.is_zero() { now } else { stamp },
                    position: Point::new(p.x, p.y),
                };
                s.recorder.pose(sample, now);
                s.pose_heard = true;
                s.pose_error = None;
            }
            Ok(res) => s.pose_error = Some(format!("{}: {}", client.name(), res.status_message)),
            Err(e) => s.pose_error = Some(e.to_string()),
        }
    }

    /// Whether the source has been heard from; an error once `late` and it has not.
    fn ready(&self, s: &Shared, late: bool, wait: Duration) -> anyhow::Result<bool> {
        let secs = wait.as_secs_f64();
        let health_needed = matches!(self, PoseInput::ModelState { .. });
        match (s.pose_heard, s.health_heard || !health_needed, late) {
            (true, true, _) => Ok(true),
            (_, _, false) => Ok(false),
            (false, _, true) => {
                let why = s.pose_error.as_deref().unwrap_or("nothing arrived");
                let hint = match self {
                    PoseInput::ModelState { .. } => {
                        "is gnss_pose (on the car) or gem_sim (in simulation) running?"
                    }
                    PoseInput::Ins { .. } => "is the INS driver running?",
                };
                bail!("no pose within {secs:.0} s ({why}): {hint} Nothing recorded.")
            }
            (true, false, true) => bail!(
                "no {} within {secs:.0} s: a pose is never recorded without its health; gnss_pose publishes it on the car, mock_signals in simulation. Nothing recorded.",
                resolved(names::GPS_ACCURACY)
            ),
        }
    }
}

/// `name` as this node resolves it.
fn resolved(name: &str) -> String {
    this_node::resolve(name).unwrap_or_else(|_| name.to_string())
}

/// `gps_accuracy` into the recorder, at its arrival's ROS time.
fn subscribe_health(shared: &SharedRef) -> anyhow::Result<DirectSubscriber> {
    let s = shared.clone();
    ros1_protocols::direct::subscribe(
        names::GPS_ACCURACY,
        move |m: GpsAccuracyStamped, at: Arrival| {
            let mut s = s.locked();
            s.recorder.health(f64::from(m.accuracy), time::at(at.read));
            s.health_heard = true;
        },
    )
    .map_err(|e| anyhow!("subscribe {}: {e}", names::GPS_ACCURACY))
}

/// `novatel/inspva` into the recorder: each solution judged and projected as
/// `gnss_pose` does it, the verdict as the health, a fresh good pose as a pose.
fn subscribe_ins(
    frame_from: &str,
    wait_s: f64,
    shared: &SharedRef,
) -> anyhow::Result<DirectSubscriber> {
    let projection = ins_frame_within(frame_from, Duration::from_secs_f64(wait_s))?;
    let antenna = projection.antenna_ahead_m();
    let source = Mutex::new(PoseSource::new(
        projection,
        antenna,
        InsHealthConfig::DEFAULT,
    ));
    let s = shared.clone();
    ros1_protocols::direct::subscribe(names::INSPVA, move |m: Inspva, at: Arrival| {
        let now = time::at(at.read);
        let mut src = source.locked();
        let _refused = src.offer(inspva_solution(&m), now);
        let verdict = src.verdict(now);
        let mut s = s.locked();
        s.recorder.health(f64::from(verdict.accuracy_mm()), now);
        s.health_heard = true;
        match src.served(now) {
            Ok(Served::Fresh(r)) => {
                let sample = PoseSample {
                    stamp: r.stamp,
                    position: r.pose.point(),
                };
                s.recorder.pose(sample, now);
                s.pose_heard = true;
                s.pose_error = None;
            }
            Ok(Served::Held(_, fault)) | Err(fault) => {
                s.pose_error = Some(format!("{}: no good solution: {fault}", names::INSPVA))
            }
        }
    })
    .map_err(|e| anyhow!("subscribe {}: {e}", names::INSPVA))
}

/// [`ins_frame`], asked again until `wait` (wall time) has passed: a `gnss_pose` that is
/// starting sets its parameters a moment after it registers.
fn ins_frame_within(node: &str, wait: Duration) -> anyhow::Result<InsPose> {
    let started = Instant::now();
    loop {
        match ins_frame(node) {
            Ok(frame) => return Ok(frame),
            Err(e) if started.elapsed() >= wait || !this_node::is_ok() => return Err(e),
            Err(_) => std::thread::sleep(POLL_WALL),
        }
    }
}

/// The local frame of the `gnss_pose` node `node`, from its parameters.
fn ins_frame(node: &str) -> anyhow::Result<InsPose> {
    let get = |name: &str| -> anyhow::Result<f64> {
        let key = format!("{}/{name}", node.trim_end_matches('/'));
        let value = this_node::param(&key)
            .ok_or_else(|| anyhow!("{key} is not a parameter name"))?
            .get_raw()
            .map_err(|e| anyhow!("{e}"))
            .and_then(|v| v.ok_or_else(|| anyhow!("not set")));
        match value {
            Ok(xml_rpc::Value::Double(v)) => Ok(v),
            Ok(xml_rpc::Value::Int(v)) => Ok(f64::from(v)),
            Ok(other) => bail!("{key} is {other:?}, not a number"),
            Err(e) => bail!(
                "cannot read {key} ({e}): --frame-from names the gnss_pose node whose frame the route is recorded in"
            ),
        }
    };
    let cfg = InsPoseConfig {
        origin_lat_deg: Some(get("origin_lat_deg")?),
        origin_lon_deg: Some(get("origin_lon_deg")?),
        origin_alt_m: get("origin_alt_m")?,
        antenna_ahead_m: get("antenna_ahead_m")?,
    };
    InsPose::new(&cfg).map_err(|e| anyhow!("{node}'s frame: {e}"))
}

/// The live line on stderr: redrawn in place on a terminal, otherwise a line on every
/// change of state and every [`LOG_EVERY`].
struct Live {
    tty: bool,
    drawn: Option<Instant>,
    /// What the last line off a terminal said, without its figures.
    said: Option<String>,
}

impl Live {
    fn new() -> Live {
        Live {
            tty: std::io::stderr().is_terminal(),
            drawn: None,
            said: None,
        }
    }

    fn show(&mut self, status: Status) {
        let every = if self.tty { REDRAW } else { LOG_EVERY };
        let state = state_of(&status);
        let changed = !self.tty && self.said.as_deref() != Some(state.as_str());
        if !changed && self.drawn.is_some_and(|t| t.elapsed() < every) {
            return;
        }
        let mut err = std::io::stderr().lock();
        let _ = if self.tty {
            write!(err, "\r\x1b[K[record-route] {status}")
        } else {
            writeln!(err, "[record-route] {status}")
        };
        let _ = err.flush();
        self.drawn = Some(Instant::now());
        self.said = Some(state);
    }

    fn end(&self) {
        if self.tty && self.drawn.is_some() {
            eprintln!();
        }
    }
}

/// The status without its figures: what changes when the recording's state does.
fn state_of(status: &Status) -> String {
    let health = match status.health {
        Health::Silent { .. } => "silent".to_string(),
        Health::Settling { .. } => "settling".to_string(),
        h => h.to_string(),
    };
    format!(
        "{health} {:?} {} {}",
        status.moving,
        status.pose_silent_for.is_some(),
        status.gaps
    )
}

/// The file to write, checked before anything is recorded.
struct Target {
    path: PathBuf,
    dir: PathBuf,
}

impl Target {
    /// OUT's directory must exist and take a new file; OUT must not be a directory.
    fn check(path: &Path) -> anyhow::Result<Target> {
        let shown = path.display();
        if path.file_name().is_none() || path.is_dir() {
            bail!("cannot write {shown}: it is a directory, not a file name");
        }
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if !dir.is_dir() {
            let what = if dir.exists() {
                "is not a directory"
            } else {
                "does not exist"
            };
            bail!(
                "cannot write {shown}: the directory {} {what}",
                dir.display()
            );
        }
        let target = Target {
            path: path.to_path_buf(),
            dir,
        };
        let probe = target.temp();
        std::fs::File::create_new(&probe).map_err(|e| {
            anyhow!(
                "cannot write {shown}: cannot create a file in {}: {e}",
                target.dir.display()
            )
        })?;
        let _ = std::fs::remove_file(&probe);
        Ok(target)
    }

    /// The temporary file beside OUT.
    fn temp(&self) -> PathBuf {
        let name = self.path.file_name().unwrap_or_default().to_string_lossy();
        self.dir.join(format!(".{name}.{}.tmp", std::process::id()))
    }

    /// Writes `bytes` to the temporary file, flushes it to disk and renames it over OUT.
    fn write(&self, bytes: &[u8]) -> anyhow::Result<()> {
        let tmp = self.temp();
        let written = (|| -> std::io::Result<()> {
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(bytes)?;
            f.sync_all()?;
            std::fs::rename(&tmp, &self.path)?;
            // The rename itself reaches the disk with the directory.
            std::fs::File::open(&self.dir)?.sync_all()
        })();
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written.with_context(|| format!("cannot write {}", self.path.display()))
    }
}
