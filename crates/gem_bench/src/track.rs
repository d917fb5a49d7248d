//! `track`: each controller closed-loop on the vehicle model, over the GEM track and four
//! synthetic paths, at two speeds, with ideal actuators and with a 0.1 s command delay plus
//! a 0.2 s steering lag. Prints one table and writes one SVG per run.

use crate::baseline::{Baseline, BaselineController};
use gem_core::control::closed_loop::{self, LoopSettings, Steerer, TrackingStats};
use gem_core::control::path::Path;
use gem_core::control::pure_pursuit::PurePursuitConfig;
use gem_core::control::speed::SpeedConfig;
use gem_core::control::stanley::StanleyConfig;
use gem_core::control::tracker::{Law, Tracker, TrackerConfig};
use gem_core::geometry::{Point, Pose};
use gem_core::vehicle::kinematic::VehicleParams;
use std::f64::consts::TAU;
use std::path::PathBuf;
use std::time::Duration;

/// Physics step of the vehicle model.
const PHYSICS_DT: Duration = Duration::from_millis(5);
/// Controller period (20 Hz, as the nodes).
const CONTROL_EVERY: usize = 10;
/// Cross-track error below which a run counts as converged, m.
const CONVERGED_M: f64 = 0.1;

/// A path and where the car starts.
pub struct Scenario {
    pub name: &'static str,
    pub waypoints: Vec<Pose>,
    pub start: Pose,
}

/// Actuator condition.
#[derive(Clone, Copy, PartialEq)]
pub enum Actuators {
    Ideal,
    DelayLag,
}

impl Actuators {
    fn params(self) -> VehicleParams {
        match self {
            Actuators::Ideal => VehicleParams::default(),
            Actuators::DelayLag => VehicleParams {
                command_delay_s: 0.1,
                steer_time_constant_s: 0.2,
                speed_time_constant_s: 0.3,
                ..Default::default()
            },
        }
    }

    fn label(self) -> &'static str {
        match self {
            Actuators::Ideal => "ideal",
            Actuators::DelayLag => "delay+lag",
        }
    }
}

/// Which controller drives.
#[derive(Clone, Copy, PartialEq)]
pub enum Controller {
    PurePursuit,
    Stanley,
    Original(Baseline),
}

impl Controller {
    pub const ALL: [Controller; 4] = [
        Controller::PurePursuit,
        Controller::Stanley,
        Controller::Original(Baseline::HeadingPursuit),
        Controller::Original(Baseline::OriginalStanley),
    ];

    fn label(self) -> &'static str {
        match self {
            Controller::PurePursuit => "pure_pursuit",
            Controller::Stanley => "stanley",
            Controller::Original(Baseline::HeadingPursuit) => "orig_pursuit",
            Controller::Original(Baseline::OriginalStanley) => "orig_stanley",
        }
    }
}

/// The tracker settings the nodes use for `law` at `speed`; `latency_s` compensates the
/// actuator delay and lag when the vehicle has them.
pub fn tracker_config(
    controller: Controller,
    speed_mps: f64,
    actuators: Actuators,
) -> TrackerConfig {
    let law = match controller {
        Controller::Stanley => Law::Stanley(StanleyConfig::default()),
        _ => Law::PurePursuit(PurePursuitConfig::default()),
    };
    let latency_s = match actuators {
        Actuators::Ideal => 0.0,
        // The nodes' default: 0.1 s delay plus part of the 0.2 s lag (predicting the whole
        // 0.3 s with the *commanded* steering over-anticipates, the wheels lag it, and
        // destabilises Stanley at 5.5 m/s).
        Actuators::DelayLag => TrackerConfig::DEFAULT.latency_s,
    };
    TrackerConfig {
        law,
        speed: SpeedConfig {
            nominal_mps: speed_mps,
            ..Default::default()
        },
        latency_s,
        ..Default::default()
    }
}

/// Figures of one run.
pub struct RunResult {
    pub scenario: &'static str,
    pub controller: &'static str,
    pub speed_mps: f64,
    pub actuators: &'static str,
    pub stats: TrackingStats,
    pub time_s: f64,
    pub done_index: Option<usize>,
    pub last_index: usize,
    /// Path length, m (a "done" after driving much less is a false completion).
    pub path_m: f64,
    pub max_steer: f64,
    /// (distance driven, cross-track) samples.
    pub cte: Vec<(f64, f64)>,
    /// Driven rear-axle positions.
    pub trajectory: Vec<Point>,
}

/// Drives one run to completion or timeout.
pub fn run(
    sc: &Scenario,
    controller: Controller,
    speed_mps: f64,
    actuators: Actuators,
) -> RunResult {
    let points: Vec<Point> = sc.waypoints.iter().map(|w| w.point()).collect();
    let path = Path::new(&points, 0.05).expect("valid path");
    let settings = LoopSettings {
        physics_dt: PHYSICS_DT,
        control_every: CONTROL_EVERY,
        time_limit_s: 3.0 * path.length() / speed_mps + 60.0,
    };
    let mut steerer: Box<dyn Steerer> = match controller {
        Controller::Original(b) => {
            Box::new(BaselineController::new(b, sc.waypoints.clone(), speed_mps))
        }
        _ => Box::new(
            Tracker::new(&points, 0, tracker_config(controller, speed_mps, actuators))
                .expect("valid path"),
        ),
    };
    let path_m = path.length();
    let trace = closed_loop::run(
        path,
        sc.start,
        actuators.params(),
        steerer.as_mut(),
        &settings,
    );
    let cte = trace.cross_track();
    RunResult {
        scenario: sc.name,
        controller: controller.label(),
        speed_mps,
        actuators: actuators.label(),
        stats: closed_loop::stats(&cte, CONVERGED_M),
        time_s: trace.time_s,
        done_index: trace.done_index,
        last_index: sc.waypoints.len() - 1,
        path_m,
        max_steer: trace.max_steer_rad,
        trajectory: trace.samples.iter().map(|s| s.position).collect(),
        cte,
    }
}

/// Waypoints with headings from consecutive points (the last repeats the previous).
fn with_headings(points: &[Point]) -> Vec<Pose> {
    let mut out: Vec<Pose> = points
        .windows(2)
        .map(|w| Pose::new(w[0].x, w[0].y, (w[1].y - w[0].y).atan2(w[1].x - w[0].x)))
        .collect();
    if let (Some(last), Some(prev)) = (points.last(), out.last().copied()) {
        out.push(Pose::new(last.x, last.y, prev.yaw));
    }
    out
}

/// Reads `x,y,yaw[,...]` rows (the GEM track file).
fn read_track(file: &std::path::Path) -> anyhow::Result<Vec<Pose>> {
    let text =
        std::fs::read_to_string(file).map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(n, l)| {
            let f: Vec<f64> = l
                .split(',')
                .take(3)
                .map(|v| v.trim().parse())
                .collect::<Result<_, _>>()
                .map_err(|e| anyhow::anyhow!("{}:{}: {e}", file.display(), n + 1))?;
            anyhow::ensure!(
                f.len() == 3,
                "{}:{}: expected x,y,yaw",
                file.display(),
                n + 1
            );
            Ok(Pose::new(f[0], f[1], f[2]))
        })
        .collect()
}

/// The five path scenarios every controller runs.
pub fn scenarios(track_file: &std::path::Path) -> anyhow::Result<Vec<Scenario>> {
    let track = read_track(track_file)?;
    let first = track[0];
    let sine: Vec<Point> = (0..=225)
        .map(|i| i as f64 * 0.2)
        .map(|x| Point::new(x, 2.0 * (TAU * x / 30.0).sin()))
        .collect();
    let line: Vec<Point> = (0..=300).map(|i| Point::new(i as f64 * 0.2, 0.0)).collect();
    // Radius 3 m needs 0.53 rad of the 0.61 rad limit; one and a quarter turns.
    let r = 3.0;
    let lp: Vec<Point> = (0..=300)
        .map(|i| i as f64 / 240.0 * TAU)
        .map(|a| Point::new(r * a.sin(), r * (1.0 - a.cos())))
        .collect();
    Ok(vec![
        Scenario {
            name: "track_spawn_2m_off",
            waypoints: track.clone(),
            start: Pose::new(0.0, 0.0, 0.0),
        },
        Scenario {
            name: "track_on_path",
            start: Pose::new(first.x, first.y, 0.0),
            waypoints: track,
        },
        Scenario {
            name: "sine_2m_30m",
            start: Pose::new(0.0, 0.0, (2.0 * TAU / 30.0).atan()),
            waypoints: with_headings(&sine),
        },
        Scenario {
            name: "line_2m_off",
            start: Pose::new(0.0, 2.0, 0.0),
            waypoints: with_headings(&line),
        },
        Scenario {
            name: "loop_r3m",
            start: Pose::new(0.0, 0.0, 0.0),
            waypoints: with_headings(&lp),
        },
    ])
}

/// Writes the path vs the driven trajectory and the cross-track error over distance.
pub fn plot(sc: &Scenario, r: &RunResult, dir: &std::path::Path) -> anyhow::Result<PathBuf> {
    let file = dir.join(format!(
        "{}_{}_{:.1}mps_{}.svg",
        r.scenario,
        r.controller,
        r.speed_mps,
        r.actuators.replace('+', "_")
    ));
    let path: Vec<(f64, f64)> = sc.waypoints.iter().map(|w| (w.x, w.y)).collect();
    let driven: Vec<(f64, f64)> = r.trajectory.iter().map(|p| (p.x, p.y)).collect();
    let figure = gem_cli::plot::TrackPlot {
        caption: format!(
            "{} — {} {:.1} m/s {}",
            r.scenario, r.controller, r.speed_mps, r.actuators
        ),
        path: &path,
        driven: &driven,
        cross_track: &r.cte,
        marks: &[],
    };
    gem_cli::plot::write_svg(&file, &figure)
        .map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
    Ok(file)
}

/// Runs everything, prints the table, writes the plots to `out_dir`.
pub fn run_all(
    track_file: &std::path::Path,
    out_dir: &std::path::Path,
) -> anyhow::Result<Vec<RunResult>> {
    std::fs::create_dir_all(out_dir)?;
    let scenarios = scenarios(track_file)?;
    println!(
        "{:<20} {:<13} {:>4} {:<9} | {:>8} {:>8} {:>8} | {:>8} {:>8} | {:>7} {:>16} {:>7}",
        "scenario",
        "controller",
        "v",
        "actuators",
        "conv m",
        "rms ≥c",
        "max ≥c",
        "rms all",
        "max all",
        "time s",
        "completed@index",
        "max|δ|"
    );
    let mut results = Vec::new();
    for sc in &scenarios {
        for speed in [2.8, 5.5] {
            for act in [Actuators::Ideal, Actuators::DelayLag] {
                for c in Controller::ALL {
                    let r = run(sc, c, speed, act);
                    print_row(&r);
                    plot(sc, &r, out_dir)?;
                    results.push(r);
                }
            }
        }
    }
    println!("plots: {}", out_dir.display());
    Ok(results)
}

fn print_row(r: &RunResult) {
    let f = |v: f64| {
        if v.is_nan() {
            "-".to_string()
        } else {
            format!("{v:.3}")
        }
    };
    let driven = r.cte.last().map_or(0.0, |c| c.0);
    let done = match r.done_index {
        Some(i) if driven < 0.9 * r.path_m => format!("FALSE@{i} {driven:.0}m"),
        Some(i) if i == r.last_index => format!("yes@{i}"),
        Some(i) => format!("FALSE@{i}/{}", r.last_index),
        None => "no (timeout)".to_string(),
    };
    let steer = if r.max_steer.is_finite() {
        format!("{:.3}", r.max_steer)
    } else {
        "inf/NaN".into()
    };
    println!(
        "{:<20} {:<13} {:>4.1} {:<9} | {:>8} {:>8} {:>8} | {:>8} {:>8} | {:>7.1} {:>16} {:>7}",
        r.scenario,
        r.controller,
        r.speed_mps,
        r.actuators,
        r.stats
            .converge_m
            .map_or("never".into(), |d| format!("{d:.1}")),
        f(r.stats.rms_after_m),
        f(r.stats.max_after_m),
        f(r.stats.rms_all_m),
        f(r.stats.max_all_m),
        r.time_s,
        done,
        steer
    );
}
