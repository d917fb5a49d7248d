//! `track`: each controller closed-loop on the vehicle model. Two tables:
//!
//! - the kinematic bicycle, over the GEM track and four synthetic paths, at two speeds,
//!   with ideal actuators and with a 0.1 s command delay plus a 0.2 s steering lag, every
//!   controller including the original suite's two laws;
//! - the single-track model with tyre slip (the simulator's default), delay and lag, on the
//!   GEM track from the spawn pose: 2.8, 5.5 and an 8 m/s cap (2.5 m/s² lateral), a
//!   cornering-stiffness sweep (7, 12, 17 /rad) with the same gains, and GNSS/INS pose
//!   noise (σ 0.03 m, 0.005 rad at 20 Hz);
//! - the same model at 2.8 and 5.5 m/s with each pose source of [`sources`]: the twist of
//!   the centre of mass (the controllers told so, and not), no yaw rate, no twist, a 10 Hz
//!   fix 0.1 s late, each against its bound relative to the ideal source.
//!
//! One SVG per run.

use crate::baseline::{Baseline, BaselineController};
use gem_core::control::closed_loop::{
    self, Ackermann, CommandPath, LoopSettings, Steerer, TrackingStats, CONVERGED_M,
};
use gem_core::control::lqr::{LqrConfig, LqrGains};
use gem_core::control::mpc::MpcConfig;
use gem_core::control::path::Path;
use gem_core::control::pure_pursuit::PurePursuitConfig;
use gem_core::control::speed::SpeedConfig;
use gem_core::control::stanley::StanleyConfig;
use gem_core::control::tracker::{Law, Tracker, TrackerConfig};
use gem_core::control::twist::News;
use gem_core::geometry::{Point, Pose};
use gem_core::stats::Summary;
use gem_core::vehicle::actuator::SteeringActuator;
use gem_core::vehicle::dynamic::DynamicParams;
use gem_core::vehicle::localization::LocalizationParams;
use gem_core::vehicle::localization::TwistReport;
use gem_core::vehicle::{ChassisModel, VehicleParams};
use std::f64::consts::TAU;
use std::path::PathBuf;
use std::time::Duration;

/// Physics step of the vehicle model.
pub const PHYSICS_DT: Duration = Duration::from_millis(5);
/// Controller period (20 Hz, as the nodes).
pub const CONTROL_EVERY: usize = 10;
/// Where the GEM track file lives in the repository (the `--track` default).
pub const TRACK_FILE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../launch/waypoints/gem_track.csv"
);
/// Distance driven after which a run from 2 m off has long joined the path, m.
pub const STEADY_FROM_M: f64 = 40.0;

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
    /// The simulator's defaults (no delay or lag) with the controllers' defaults (their
    /// latency compensation on): the suite as launched on `gem_sim`.
    Launched,
}

impl Actuators {
    fn params(self, chassis: ChassisModel) -> VehicleParams {
        match self {
            Actuators::Ideal | Actuators::Launched => VehicleParams {
                chassis,
                ..Default::default()
            },
            Actuators::DelayLag => VehicleParams {
                command_delay_s: 0.1,
                steer_time_constant_s: 0.2,
                speed_time_constant_s: 0.3,
                chassis,
                ..Default::default()
            },
        }
    }

    fn label(self) -> &'static str {
        match self {
            Actuators::Ideal => "ideal",
            Actuators::DelayLag => "delay+lag",
            Actuators::Launched => "launched",
        }
    }
}

/// Which controller drives.
#[derive(Clone, Copy, PartialEq)]
pub enum Controller {
    PurePursuit,
    Stanley,
    Lqr,
    Mpc,
    Original(Baseline),
}

impl Controller {
    /// The suite's own controllers.
    pub const OURS: [Controller; 3] = [
        Controller::PurePursuit,
        Controller::Stanley,
        Controller::Lqr,
    ];

    pub const ALL: [Controller; 5] = [
        Controller::PurePursuit,
        Controller::Stanley,
        Controller::Lqr,
        Controller::Original(Baseline::HeadingPursuit),
        Controller::Original(Baseline::OriginalStanley),
    ];

    /// The name in the tables.
    pub fn label(self) -> &'static str {
        match self {
            Controller::PurePursuit => "pure_pursuit",
            Controller::Stanley => "stanley",
            Controller::Lqr => "lqr",
            Controller::Mpc => "mpc",
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
    lateral_accel_mps2: f64,
    actuators: Actuators,
) -> TrackerConfig {
    let law = match controller {
        Controller::Stanley => Law::Stanley(StanleyConfig::default()),
        Controller::Lqr => Law::Lqr(LqrConfig::default()),
        Controller::Mpc => Law::Mpc(MpcConfig::default()),
        _ => Law::PurePursuit(PurePursuitConfig::default()),
    };
    let latency_s = match actuators {
        Actuators::Ideal => 0.0,
        // The nodes' default: 0.1 s delay plus part of the 0.2 s lag (predicting the whole
        // 0.3 s with the *commanded* steering over-anticipates, the wheels lag it, and
        // destabilises Stanley at 5.5 m/s).
        Actuators::DelayLag | Actuators::Launched => TrackerConfig::DEFAULT.latency_s,
    };
    TrackerConfig {
        law,
        speed: SpeedConfig {
            nominal_mps: speed_mps,
            max_lateral_accel_mps2: lateral_accel_mps2,
            ..Default::default()
        },
        latency_s,
        ..Default::default()
    }
}

/// One closed-loop run to make.
#[derive(Clone)]
pub struct Case {
    pub controller: Controller,
    /// Cruise speed, m/s.
    pub speed_mps: f64,
    /// Lateral acceleration limit of the speed profile, m/s².
    pub lateral_accel_mps2: f64,
    pub actuators: Actuators,
    pub chassis: ChassisModel,
    pub localization: LocalizationParams,
    /// The controllers' `twist_reference_x_m`, m.
    pub twist_reference_x_m: f64,
    /// The steering actuator the controllers are told of (`TrackerConfig::with_actuator`).
    pub actuator: SteeringActuator,
}

impl Case {
    /// "kin", or "dyn c=12" with the cornering stiffness.
    fn model_label(&self) -> String {
        match &self.chassis {
            ChassisModel::Kinematic => "kin".into(),
            ChassisModel::Dynamic(d) => format!("dyn c={}", d.cornering_stiffness_front),
        }
    }

    fn noise_label(&self) -> &'static str {
        if self.localization.is_off() {
            "-"
        } else {
            "gnss"
        }
    }
}

/// Figures of one run.
pub struct RunResult {
    pub scenario: &'static str,
    pub controller: &'static str,
    pub speed_mps: f64,
    pub actuators: &'static str,
    pub model: String,
    pub noise: &'static str,
    pub stats: TrackingStats,
    /// Steering jitter after convergence, rad per control step (RMS).
    pub jitter_rad: f64,
    /// Largest |error| from [`STEADY_FROM_M`] driven on (the joining swing left behind), m.
    pub max_steady_m: f64,
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
    /// (simulated time, steering) of every control step.
    pub steering: Vec<(f64, f64)>,
    /// The doubts the tracker raised about the pose source's twist, with the simulated
    /// time, s.
    pub news: Vec<(f64, News)>,
    /// (speed commanded, speed) of every control step but the first, m/s
    /// ([`closed_loop::Trace::speeds`]).
    pub speeds: Vec<(f64, f64)>,
}

/// Drives one run to completion or timeout, the commands handed to the model as they are.
pub fn run(sc: &Scenario, case: &Case) -> RunResult {
    run_through(sc, case, &mut Ackermann)
}

/// [`run`] with the commands reaching the model through `command_path`.
pub fn run_through(sc: &Scenario, case: &Case, command_path: &mut dyn CommandPath) -> RunResult {
    let (controller, speed_mps, actuators) = (case.controller, case.speed_mps, case.actuators);
    let points: Vec<Point> = sc.waypoints.iter().map(|w| w.point()).collect();
    let path = Path::new(&points, 0.05).expect("valid path");
    let settings = LoopSettings {
        physics_dt: PHYSICS_DT,
        control_every: CONTROL_EVERY,
        time_limit_s: 3.0 * path.length() / speed_mps + 60.0,
        localization: case.localization.clone(),
    };
    let mut steerer: Box<dyn Steerer> = match controller {
        Controller::Original(b) => {
            Box::new(BaselineController::new(b, sc.waypoints.clone(), speed_mps))
        }
        _ => Box::new(
            Tracker::new(
                &points,
                0,
                TrackerConfig {
                    twist_reference_x_m: case.twist_reference_x_m,
                    ..tracker_config(controller, speed_mps, case.lateral_accel_mps2, actuators)
                }
                .with_actuator(case.actuator),
            )
            .expect("valid path"),
        ),
    };
    let path_m = path.length();
    let trace = closed_loop::run_through(
        path,
        sc.start,
        actuators.params(case.chassis.clone()),
        steerer.as_mut(),
        &settings,
        command_path,
    );
    let cte = trace.cross_track();
    let stats = closed_loop::stats(&cte, CONVERGED_M);
    RunResult {
        news: trace.news.clone(),
        scenario: sc.name,
        controller: controller.label(),
        speed_mps,
        actuators: actuators.label(),
        model: case.model_label(),
        noise: case.noise_label(),
        jitter_rad: trace.steering_jitter(stats.converge_m.unwrap_or(f64::INFINITY)),
        max_steady_m: max_abs_from(&cte, STEADY_FROM_M),
        stats,
        time_s: trace.time_s,
        done_index: trace.done_index,
        last_index: sc.waypoints.len() - 1,
        path_m,
        max_steer: trace.max_steer_rad,
        trajectory: trace.samples.iter().map(|s| s.position).collect(),
        steering: trace
            .samples
            .iter()
            .enumerate()
            .map(|(i, s)| {
                (
                    i as f64 * settings.physics_dt.as_secs_f64() * CONTROL_EVERY as f64,
                    s.steering_rad,
                )
            })
            .collect(),
        speeds: trace.speeds(),
        cte,
    }
}

/// Largest |error| of the `(driven, error)` samples from `from_m` driven on (NaN if none).
pub fn max_abs_from(cte: &[(f64, f64)], from_m: f64) -> f64 {
    cte.iter()
        .filter(|(d, _)| *d >= from_m)
        .map(|(_, e)| e.abs())
        .fold(f64::NAN, f64::max)
}

/// What a dynamic-model row must achieve after convergence, with the nodes' gains.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Target {
    /// Largest RMS cross-track error, m.
    pub rms_m: f64,
    /// Largest |cross-track error|, m, if bounded.
    pub max_m: Option<f64>,
    /// Longest lap, s, if bounded.
    pub lap_s: Option<f64>,
}

impl Target {
    /// The figures of a run that miss the target, in words (empty: met).
    pub fn misses(&self, stats: &TrackingStats, lap_s: f64) -> Vec<String> {
        let mut out = Vec::new();
        // A figure meets its bound only if it is a number within it: NaN (never
        // converged) misses.
        let within = |v: f64, bound: f64| v <= bound;
        if !within(stats.rms_after_m, self.rms_m) {
            out.push(format!("rms {:.3} > {}", stats.rms_after_m, self.rms_m));
        }
        if let Some(max) = self.max_m.filter(|m| !within(stats.max_after_m, *m)) {
            out.push(format!("max {:.3} > {max}", stats.max_after_m));
        }
        if let Some(lap) = self.lap_s.filter(|l| !within(lap_s, *l)) {
            out.push(format!("lap {lap_s:.1} s > {lap} s"));
        }
        out
    }
}

/// The targets on the tyre-slip model: (speed, stiffness, pose noise, target). Rows of
/// [`DYNAMIC_MATRIX`] not listed have none.
pub const TARGETS: [(f64, f64, bool, Target); 6] = [
    (
        2.8,
        12.0,
        false,
        Target {
            rms_m: 0.008,
            max_m: Some(0.06),
            lap_s: None,
        },
    ),
    (
        5.5,
        12.0,
        false,
        Target {
            rms_m: 0.015,
            max_m: Some(0.08),
            lap_s: None,
        },
    ),
    (
        5.5,
        12.0,
        true,
        Target {
            rms_m: 0.02,
            max_m: None,
            lap_s: None,
        },
    ),
    (
        5.5,
        7.0,
        false,
        Target {
            rms_m: 0.025,
            max_m: None,
            lap_s: None,
        },
    ),
    (
        5.5,
        17.0,
        false,
        Target {
            rms_m: 0.025,
            max_m: None,
            lap_s: None,
        },
    ),
    (
        8.0,
        12.0,
        false,
        Target {
            rms_m: 0.035,
            max_m: Some(0.15),
            lap_s: Some(120.0),
        },
    ),
];

/// The target of a dynamic-model row, if it has one.
pub fn target(speed_mps: f64, stiffness: f64, noise: bool) -> Option<Target> {
    TARGETS
        .iter()
        .find(|(v, c, n, _)| *v == speed_mps && *c == stiffness && *n == noise)
        .map(|(.., t)| *t)
}

/// "met", "-" (no target) or the misses, for a table's last column.
pub fn target_column(target: Option<Target>, stats: &TrackingStats, lap_s: f64) -> String {
    match target.map(|t| t.misses(stats, lap_s)) {
        None => "-".into(),
        Some(m) if m.is_empty() => "met".into(),
        Some(m) => format!("MISSED {}", m.join(", ")),
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
    let Some(&first) = track.first() else {
        anyhow::bail!("{}: no waypoints", track_file.display());
    };
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
        "{}_{}_{:.1}mps_{}_{}{}.svg",
        r.scenario,
        r.controller,
        r.speed_mps,
        r.actuators.replace('+', "_"),
        r.model.replace([' ', '='], ""),
        if r.noise == "-" { "" } else { "_noise" }
    ));
    let path: Vec<(f64, f64)> = sc.waypoints.iter().map(|w| (w.x, w.y)).collect();
    let driven: Vec<(f64, f64)> = r.trajectory.iter().map(|p| (p.x, p.y)).collect();
    let figure = gem_plot::TrackPlot {
        caption: format!(
            "{} — {} {:.1} m/s {} {} {}",
            r.scenario, r.controller, r.speed_mps, r.actuators, r.model, r.noise
        ),
        path: &path,
        driven: &driven,
        cross_track: &r.cte,
        marks: &[],
        speed: None,
    };
    gem_plot::write_svg(&file, &figure).map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
    Ok(file)
}

/// The dynamic-model matrix on the GEM track from the spawn pose: (speed, lateral
/// acceleration limit, cornering stiffness, pose noise).
pub const DYNAMIC_MATRIX: [(f64, f64, f64, bool); 10] = [
    (2.8, 1.5, 12.0, false),
    (2.8, 1.5, 12.0, true),
    (5.5, 2.5, 12.0, false),
    (5.5, 2.5, 12.0, true),
    (5.5, 2.5, 7.0, false),
    (5.5, 2.5, 17.0, false),
    (8.0, 2.5, 12.0, false),
    (8.0, 2.5, 12.0, true),
    (8.0, 2.5, 7.0, false),
    (8.0, 2.5, 17.0, false),
];

/// The dynamic chassis with both axles' normalised cornering stiffness set to `c`.
pub fn dynamic_chassis(c: f64) -> ChassisModel {
    ChassisModel::Dynamic(DynamicParams {
        cornering_stiffness_front: c,
        cornering_stiffness_rear: c,
        ..DynamicParams::DEFAULT
    })
}

/// Runs everything, prints the tables, writes the plots to `out_dir`.
pub fn run_all(
    track_file: &std::path::Path,
    out_dir: &std::path::Path,
    dynamic_only: bool,
) -> anyhow::Result<Vec<RunResult>> {
    std::fs::create_dir_all(out_dir)?;
    print_lqr_design_time();
    let scenarios = scenarios(track_file)?;
    let mut results = Vec::new();
    let kinematic: &[Scenario] = if dynamic_only { &[] } else { &scenarios };
    if !dynamic_only {
        println!("kinematic bicycle, every path:");
        print_header();
    }
    for sc in kinematic {
        for speed in [2.8, 5.5] {
            for actuators in [Actuators::Ideal, Actuators::DelayLag] {
                for controller in Controller::ALL {
                    let case = Case {
                        controller,
                        speed_mps: speed,
                        lateral_accel_mps2: SpeedConfig::DEFAULT.max_lateral_accel_mps2,
                        actuators,
                        chassis: ChassisModel::Kinematic,
                        localization: LocalizationParams::OFF,
                        twist_reference_x_m: 0.0,
                        actuator: SteeringActuator::FAST,
                    };
                    results.push(run_and_plot(sc, &case, None, out_dir)?);
                }
            }
        }
    }
    println!();
    println!("single-track model with tyre slip, 0.1 s delay + 0.2 s steering lag, GEM track from the spawn pose:");
    print_header();
    for (case, target) in dynamic_cases() {
        results.push(run_and_plot(&scenarios[0], &case, target, out_dir)?);
    }
    println!();
    results.extend(run_sources(&scenarios[0])?);
    println!("plots: {}", out_dir.display());
    Ok(results)
}

/// Where the GEM e2's centre of mass is, m ahead of the rear axle.
pub const COM_X_M: f64 = DynamicParams::DEFAULT.cg_to_rear_axle_m;

/// A pose source of the sources table, and the bound it must keep.
#[derive(Clone)]
pub struct Source {
    /// The name in the table.
    pub name: &'static str,
    /// What localization reports.
    pub localization: LocalizationParams,
    /// What the controllers are told of the twist's reference point, m.
    pub twist_reference_x_m: f64,
    /// Largest RMS after convergence, as a multiple of the ideal source's.
    pub within: f64,
}

/// The pose sources: the ideal one, the twist of the centre of mass (the controllers told
/// so, and not), no yaw rate, no twist at all, and a 10 Hz fix 0.1 s late.
pub fn sources() -> Vec<Source> {
    let with = |twist_point_x_m: f64, twist: TwistReport| LocalizationParams {
        twist_point_x_m,
        twist,
        ..LocalizationParams::OFF
    };
    vec![
        Source {
            name: "ideal",
            localization: LocalizationParams::OFF,
            twist_reference_x_m: 0.0,
            within: 1.0,
        },
        Source {
            name: "com, set",
            localization: with(COM_X_M, TwistReport::Full),
            twist_reference_x_m: COM_X_M,
            within: 1.3,
        },
        Source {
            name: "com, not set",
            localization: with(COM_X_M, TwistReport::Full),
            twist_reference_x_m: 0.0,
            within: 2.0,
        },
        Source {
            name: "no yaw rate",
            localization: with(0.0, TwistReport::NoYawRate),
            twist_reference_x_m: 0.0,
            within: 1.3,
        },
        Source {
            name: "no twist",
            localization: with(0.0, TwistReport::Off),
            twist_reference_x_m: 0.0,
            within: 2.0,
        },
        Source {
            name: "10Hz+0.1s",
            localization: LocalizationParams {
                rate_hz: 10.0,
                latency_s: 0.1,
                ..LocalizationParams::OFF
            },
            twist_reference_x_m: 0.0,
            within: 1.3,
        },
    ]
}

/// The speeds of the sources table: (cruise, lateral acceleration limit).
pub const SOURCE_SPEEDS: [(f64, f64); 2] = [(2.8, 1.5), (5.5, 2.5)];

/// The case of `controller` at `speed` with `source` on the tyre-slip model.
pub fn source_case(source: &Source, controller: Controller, speed: (f64, f64)) -> Case {
    Case {
        controller,
        speed_mps: speed.0,
        lateral_accel_mps2: speed.1,
        actuators: Actuators::DelayLag,
        chassis: dynamic_chassis(12.0),
        localization: source.localization.clone(),
        twist_reference_x_m: source.twist_reference_x_m,
        actuator: SteeringActuator::FAST,
    }
}

/// Steering beyond which the car counts as in a bend (radius below 60 m), rad.
const IN_BEND_RAD: f64 = 0.03;

/// Simulated seconds driven in bends (|steering| ≥ [`IN_BEND_RAD`]) before the first
/// doubt was raised, and the doubts' components in words; None without a doubt.
pub fn first_doubt(r: &RunResult) -> Option<(f64, String)> {
    let (at, _) = r.news.first()?;
    let period = PHYSICS_DT.as_secs_f64() * CONTROL_EVERY as f64;
    let in_bend = r
        .steering
        .iter()
        .take_while(|(t, _)| t <= at)
        .filter(|(_, s)| s.abs() >= IN_BEND_RAD)
        .count() as f64
        * period;
    Some((in_bend, doubt_list(&r.news)))
}

/// The doubts raised, in a table cell: `lateral@1s yaw@0s` ("-": none).
pub fn doubt_list(news: &[(f64, News)]) -> String {
    if news.is_empty() {
        return "-".into();
    }
    let what: Vec<String> = news
        .iter()
        .map(|(t, n)| format!("{}@{t:.0}s", n.component.short()))
        .collect();
    what.join(" ")
}

/// "met", or the ratio to the ideal source's RMS that misses `within`.
pub fn ratio_verdict(ratio: f64, within: f64) -> String {
    if ratio <= within {
        "met".into()
    } else {
        format!("MISSED {ratio:.2}× > {within}×")
    }
}

/// The header of a pose-source table: `base` heads the ratio column, `doubts` the doubts'.
pub fn print_source_header(base: &str, doubts: &str) {
    println!(
        "{:<13} {:>4} {:<13}| {:>6} {:>7} {:>7} {:>7} {:>7} | {:>6} | {:<24} | target",
        "controller",
        "v",
        "source",
        "conv m",
        "rms ≥c",
        "p95 ≥c",
        "max ≥c",
        "max≥40m",
        base,
        doubts
    );
}

/// What a pose-source table shows of a run.
pub trait SourceRun {
    /// Controller label.
    fn controller(&self) -> &str;
    /// Cruise speed, m/s.
    fn speed_mps(&self) -> f64;
    /// Tracking statistics.
    fn stats(&self) -> &TrackingStats;
    /// Largest |error| once steady, m.
    fn max_steady_m(&self) -> f64;
}

/// Implements [`SourceRun`] for a run type with the fields `controller`, `speed_mps`,
/// `stats` and `max_steady_m`.
macro_rules! impl_source_run {
    ($run:ty) => {
        impl $crate::track::SourceRun for $run {
            fn controller(&self) -> &str {
                self.controller
            }
            fn speed_mps(&self) -> f64 {
                self.speed_mps
            }
            fn stats(&self) -> &gem_core::control::closed_loop::TrackingStats {
                &self.stats
            }
            fn max_steady_m(&self) -> f64 {
                self.max_steady_m
            }
        }
    };
}
pub(crate) use impl_source_run;

impl_source_run!(RunResult);

/// One row of a pose-source table: the run and its RMS over the reference source's.
pub struct SourceRow<R> {
    pub source: &'static str,
    pub run: R,
    pub ratio: f64,
    pub within: f64,
}

impl<R: SourceRun> SourceRow<R> {
    /// Prints the row with its `doubts` column.
    pub fn print(&self, doubts: &str) {
        let r = &self.run;
        println!(
            "{:<13} {:>4.1} {:<13}| {} | {:>6.2} | {:<24} | {}",
            r.controller(),
            r.speed_mps(),
            self.source,
            convergence_columns(r.stats(), r.max_steady_m()),
            self.ratio,
            doubts,
            ratio_verdict(self.ratio, self.within)
        );
    }
}

/// Every source, law and speed of the sources table on `sc`; prints the table.
pub fn run_sources(sc: &Scenario) -> anyhow::Result<Vec<RunResult>> {
    println!("pose sources: single-track model with tyre slip (c=12), 0.1 s delay + 0.2 s steering lag, {} from the spawn pose; bound relative to the ideal source:", sc.name);
    print_source_header("×ideal", "doubts (bend s before)");
    let mut out = Vec::new();
    for row in source_rows(sc) {
        row.print(
            &first_doubt(&row.run).map_or("-".into(), |(bend, what)| format!("{what} ({bend:.1})")),
        );
        out.push(row.run);
    }
    Ok(out)
}

/// The runs of the sources table, each with its ratio to the ideal source's RMS.
pub fn source_rows(sc: &Scenario) -> Vec<SourceRow<RunResult>> {
    let mut rows = Vec::new();
    for speed in SOURCE_SPEEDS {
        for controller in Controller::OURS {
            let mut ideal = None;
            for source in sources() {
                let r = run(sc, &source_case(&source, controller, speed));
                let base = *ideal.get_or_insert(r.stats.rms_after_m);
                rows.push(SourceRow {
                    source: source.name,
                    ratio: r.stats.rms_after_m / base,
                    within: source.within,
                    run: r,
                });
            }
        }
    }
    rows
}

/// How long the LQR's gain design takes when a goal arrives (every design speed), µs.
fn print_lqr_design_time() {
    let times: Vec<f64> = (0..51)
        .map(|_| {
            let start = std::time::Instant::now();
            std::hint::black_box(LqrGains::new(
                std::hint::black_box(&LqrConfig::DEFAULT),
                VehicleParams::DEFAULT.wheelbase_m,
            ));
            start.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    let s = Summary::new(times);
    println!(
        "lqr gain design per goal: median {:.0} µs (p90 {:.0}, max {:.0}; 51 designs)",
        s.percentile(50.0),
        s.percentile(90.0),
        s.percentile(100.0)
    );
}

/// Every row of [`DYNAMIC_MATRIX`] for each of our three laws, with its target.
pub fn dynamic_cases() -> Vec<(Case, Option<Target>)> {
    let mut out = Vec::new();
    for (speed, lateral, stiffness, noise) in DYNAMIC_MATRIX {
        for controller in Controller::OURS {
            let case = Case {
                controller,
                speed_mps: speed,
                lateral_accel_mps2: lateral,
                actuators: Actuators::DelayLag,
                chassis: dynamic_chassis(stiffness),
                localization: if noise {
                    LocalizationParams::GNSS_INS
                } else {
                    LocalizationParams::OFF
                },
                twist_reference_x_m: 0.0,
                actuator: SteeringActuator::FAST,
            };
            out.push((case, target(speed, stiffness, noise)));
        }
    }
    out
}

fn run_and_plot(
    sc: &Scenario,
    case: &Case,
    target: Option<Target>,
    out_dir: &std::path::Path,
) -> anyhow::Result<RunResult> {
    let r = run(sc, case);
    print_row(&r, &target_column(target, &r.stats, r.time_s));
    plot(sc, &r, out_dir)?;
    Ok(r)
}

fn print_header() {
    println!(
        "{:<20} {:<13} {:>4} {:<9} {:<8} {:<5}| {:>6} {:>7} {:>7} {:>7} {:>7} | {:>7} {:>7} | {:>6} {:>16} {:>6} {:>6} | target",
        "scenario",
        "controller",
        "v",
        "actuators",
        "model",
        "pose",
        "conv m",
        "rms ≥c",
        "p95 ≥c",
        "max ≥c",
        "max≥40m",
        "rms all",
        "max all",
        "time s",
        "completed@index",
        "max|δ|",
        "jitter"
    );
}

/// A figure in metres to the millimetre, "-" where there is none (NaN).
pub fn metres(v: f64) -> String {
    if v.is_nan() {
        "-".to_string()
    } else {
        format!("{v:.3}")
    }
}

/// The columns "conv m", "rms ≥c", "p95 ≥c", "max ≥c" and "max≥40m" of a run.
pub fn convergence_columns(stats: &TrackingStats, max_steady_m: f64) -> String {
    format!(
        "{:>6} {:>7} {:>7} {:>7} {:>7}",
        stats
            .converge_m
            .map_or("never".into(), |d| format!("{d:.1}")),
        metres(stats.rms_after_m),
        metres(stats.p95_after_m),
        metres(stats.max_after_m),
        metres(max_steady_m),
    )
}

fn print_row(r: &RunResult, target: &str) {
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
        "{:<20} {:<13} {:>4.1} {:<9} {:<8} {:<5}| {} | {:>7} {:>7} | {:>6.1} {:>16} {:>6} {:>6} | {target}",
        r.scenario,
        r.controller,
        r.speed_mps,
        r.actuators,
        r.model,
        r.noise,
        convergence_columns(&r.stats, r.max_steady_m),
        metres(r.stats.rms_all_m),
        metres(r.stats.max_all_m),
        r.time_s,
        done,
        steer,
        if r.jitter_rad.is_nan() {
            "-".into()
        } else {
            format!("{:.4}", r.jitter_rad)
        }
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The targets hold on the simulator's tyre-slip model with the nodes' gains (a
    /// deterministic simulation: the same figures on every machine).
    #[test]
    fn every_dynamic_target_is_met() {
        let scenarios = scenarios(std::path::Path::new(TRACK_FILE)).unwrap();
        let mut missed = Vec::new();
        for (case, target) in dynamic_cases() {
            let r = run(&scenarios[0], &case);
            assert_eq!(
                r.done_index,
                Some(r.last_index),
                "{} completes",
                case.controller.label()
            );
            assert!(
                r.news.is_empty(),
                "{} {} m/s {} {}: a good source doubted: {:?}",
                r.controller,
                r.speed_mps,
                r.model,
                r.noise,
                r.news
            );
            let Some(t) = target else { continue };
            let m = t.misses(&r.stats, r.time_s);
            if !m.is_empty() {
                missed.push(format!(
                    "{} {} m/s {} {}: {}",
                    r.controller,
                    r.speed_mps,
                    r.model,
                    r.noise,
                    m.join(", ")
                ));
            }
        }
        assert!(missed.is_empty(), "{missed:#?}");
    }

    #[test]
    fn a_target_names_what_it_misses() {
        let t = target(8.0, 12.0, false).unwrap();
        let stats = TrackingStats {
            converge_m: Some(10.0),
            rms_after_m: 0.04,
            p95_after_m: 0.05,
            max_after_m: 0.1,
            rms_all_m: 0.2,
            max_all_m: 2.0,
        };
        assert_eq!(
            t.misses(&stats, 121.0),
            ["rms 0.040 > 0.035", "lap 121.0 s > 120 s"]
        );
        let never = TrackingStats {
            rms_after_m: f64::NAN,
            max_after_m: f64::NAN,
            ..stats
        };
        assert_eq!(
            t.misses(&never, 100.0).len(),
            2,
            "never converged misses rms and max"
        );
        assert_eq!(target(2.8, 12.0, true), None);
    }

    /// Each pose source keeps its bound relative to the ideal source, for every law at
    /// 2.8 and 5.5 m/s; a forgotten reference point is said within 10 s of bends.
    #[test]
    fn every_pose_source_keeps_its_bound() {
        let scenarios = scenarios(std::path::Path::new(TRACK_FILE)).unwrap();
        let mut missed = Vec::new();
        for row in source_rows(&scenarios[0]) {
            let r = &row.run;
            assert_eq!(
                r.done_index,
                Some(r.last_index),
                "{} {} completes",
                row.source,
                r.controller
            );
            if row.ratio > row.within {
                missed.push(format!(
                    "{} {} {} m/s: {}",
                    row.source,
                    r.controller,
                    r.speed_mps,
                    ratio_verdict(row.ratio, row.within)
                ));
            }
            if row.source == "com, not set" {
                let said = first_doubt(r);
                assert!(
                    said.as_ref().is_some_and(|(bend, _)| *bend <= 10.0),
                    "{} {}: {said:?}",
                    r.controller,
                    r.speed_mps
                );
            }
            if row.source == "ideal" || row.source == "com, set" {
                assert!(
                    r.news.is_empty(),
                    "{} {}: {:?}",
                    row.source,
                    r.controller,
                    r.news
                );
            }
        }
        assert!(missed.is_empty(), "{missed:#?}");
    }
}
