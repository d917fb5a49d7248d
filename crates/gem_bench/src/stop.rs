//! `stop`: emergency and comfortable stops from 2.8, 5.5 and 8 m/s, on a straight and in a
//! bend of the GEM track's tightest radius (27 m), on the single-track model with tyre slip
//! and the 0.1 s delay + 0.2 s steering lag. Each stop is driven as the controllers drive
//! it: the tracker keeps steering along the path while the speed command follows the stop
//! (0 at once for an emergency, the comfortable profile of `gem_core::control::stop`). For comparison, the
//! original behaviour: zero speed with the steering frozen at its last angle.
//!
//! Figures per stop: time and distance to rest, peak deceleration and jerk (of the
//! simulated car), and the largest distance from the path while stopping. A second table
//! stops from 5.5 m/s in the bend with each pose source of `track`'s table (the twist of the
//! centre of mass, no yaw rate, no twist, a 10 Hz fix 0.1 s late), each within
//! [`SOURCE_BOUND_M`] of the path.

use gem_core::control::closed_loop::CrossTrackMeter;
use gem_core::control::path::Path;
use gem_core::control::speed::SpeedConfig;
use gem_core::control::stop::{
    Stop, StopClass, StopFigures, StopLimits, StopSample, STOPPED_BELOW_MPS,
};
use gem_core::control::tracker::{Observation, Tracker, TrackerConfig};
use gem_core::geometry::{Point, Pose};
use gem_core::time::Time;
use gem_core::vehicle::localization::{Localizer, Report};
use gem_core::vehicle::{DriveCommand, VehicleModel, VehicleParams};
use std::f64::consts::PI;
use std::time::Duration;

const PHYSICS: Duration = Duration::from_millis(5);
const CONTROL_EVERY: usize = 10;
/// The GEM track's tightest radius, m.
const BEND_RADIUS_M: f64 = 27.0;

/// How the car is stopped.
#[derive(Clone, Copy, PartialEq)]
pub enum Stopping {
    /// Today's graded stop of the given class, steering kept.
    Graded(StopClass),
    /// Zero speed, steering frozen at its last angle.
    Frozen,
}

impl Stopping {
    fn label(self) -> &'static str {
        match self {
            Stopping::Graded(StopClass::Emergency) => "emergency",
            Stopping::Graded(StopClass::Comfortable) => "comfortable",
            Stopping::Frozen => "frozen wheel",
        }
    }
}

/// The figures of one stop.
pub struct StopResult {
    pub place: &'static str,
    pub speed_mps: f64,
    pub stopping: &'static str,
    pub figures: StopFigures,
}

fn path(place: &str) -> Vec<Point> {
    match place {
        "straight" => (0..=1500)
            .map(|i| Point::new(i as f64 * 0.2, 0.0))
            .collect(),
        _ => {
            // 60 m straight, then a left bend of the tightest radius for three quarters of
            // a turn: the stop starts 40 m into the bend.
            let mut p: Vec<Point> = (0..300).map(|i| Point::new(i as f64 * 0.2, 0.0)).collect();
            let n = 1000;
            p.extend((0..=n).map(|i| {
                let a = i as f64 / n as f64 * 1.5 * PI;
                Point::new(
                    60.0 + BEND_RADIUS_M * a.sin(),
                    BEND_RADIUS_M * (1.0 - a.cos()),
                )
            }));
            p
        }
    }
}

/// Largest distance from the path while stopping with any pose source, m.
pub const SOURCE_BOUND_M: f64 = 0.10;

/// Drives onto `place` at `speed`, then stops at 100 m driven, with the ideal pose source.
pub fn run(place: &'static str, speed: f64, stopping: Stopping) -> StopResult {
    run_with(place, speed, stopping, &crate::track::sources()[0])
}

/// [`run`] with the pose `source`.
pub fn run_with(
    place: &'static str,
    speed: f64,
    stopping: Stopping,
    source: &crate::track::Source,
) -> StopResult {
    let points = path(place);
    let vehicle = VehicleParams {
        command_delay_s: 0.1,
        steer_time_constant_s: 0.2,
        speed_time_constant_s: 0.3,
        ..VehicleParams::DEFAULT
    };
    let cfg = TrackerConfig {
        speed: SpeedConfig {
            nominal_mps: speed,
            max_lateral_accel_mps2: 2.5,
            ..SpeedConfig::DEFAULT
        },
        twist_reference_x_m: source.twist_reference_x_m,
        ..TrackerConfig::DEFAULT
    };
    let period_s = PHYSICS.as_secs_f64() * CONTROL_EVERY as f64;
    let mut tracker = Tracker::new(&points, 0, cfg).expect("valid path");
    let mut meter = CrossTrackMeter::new(Path::new(&points, 0.05).expect("valid path"));
    let t0 = Time::from_secs_f64(1.0);
    let mut model = VehicleModel::new(vehicle, Pose::default(), t0);
    let mut localizer = Localizer::new(source.localization.clone());
    localizer.observe(t0, model.state());
    let mut driven = 0.0;
    let mut stop: Option<Stop> = None;
    let mut frozen = 0.0;
    let mut samples: Vec<StopSample> = Vec::new();
    let class = match stopping {
        Stopping::Graded(c) => c,
        Stopping::Frozen => StopClass::Emergency,
    };
    for step in 0..200_000usize {
        let s = model.state();
        let now = model.now();
        if stop.is_none() && driven >= 100.0 {
            stop = Some(Stop::begin(
                class,
                s.speed_mps,
                StopLimits::COMFORTABLE,
                now,
            ));
        }
        if step % CONTROL_EVERY == 0 {
            let Report { measured_at, state } = localizer.report().unwrap_or(Report {
                measured_at: now,
                state: s,
            });
            let obs = Observation {
                pose: state.pose,
                speed_mps: state.speed_mps,
                lateral_speed_mps: state.lateral_speed_mps,
                yaw_rate_rad_s: state.yaw_rate_rad_s,
                measured_at,
            };
            let c = tracker.observe(obs, now).expect("finite state");
            let cmd = match stop {
                None => {
                    frozen = c.steering_rad;
                    DriveCommand {
                        steering_rad: c.steering_rad,
                        speed_mps: c.speed_mps,
                        ..Default::default()
                    }
                }
                Some(stop) => DriveCommand {
                    steering_rad: if stopping == Stopping::Frozen {
                        frozen
                    } else {
                        c.steering_rad
                    },
                    speed_mps: stop.command(now, period_s).speed_mps.min(c.speed_mps),
                    accel_limit_mps2: stop.command(now, period_s).accel_mps2,
                },
            };
            model.command(cmd);
        }
        model.step(PHYSICS);
        localizer.observe(model.now(), model.state());
        let after = model.state();
        driven += after.speed_mps * PHYSICS.as_secs_f64();
        let cross_track_m = meter.measure(after.pose.point());
        if stop.is_some() {
            samples.push(StopSample {
                t: model.now().as_secs_f64(),
                position: after.pose.point(),
                cross_track_m,
                speed_mps: after.speed_mps,
            });
            if after.speed_mps < STOPPED_BELOW_MPS {
                break;
            }
        }
    }
    StopResult {
        place,
        speed_mps: speed,
        stopping: stopping.label(),
        figures: StopFigures::measure(&samples),
    }
}

/// Runs the matrix and prints it.
pub fn run_all() -> anyhow::Result<()> {
    println!("stops on the single-track model, 0.1 s delay + 0.2 s steering lag + 0.3 s speed lag; comfortable: {} m/s², {} m/s³", StopLimits::COMFORTABLE.decel_mps2, StopLimits::COMFORTABLE.jerk_mps3);
    println!(
        "{:<9} {:>4} {:<13} | {:>9} {:>10} {:>11} {:>10} | {:>13}",
        "place", "v", "stop", "to rest s", "distance m", "peak decel", "peak jerk", "max off path"
    );
    for place in ["straight", "bend_r27"] {
        for speed in [2.8, 5.5, 8.0] {
            for stopping in [
                Stopping::Graded(StopClass::Emergency),
                Stopping::Graded(StopClass::Comfortable),
                Stopping::Frozen,
            ] {
                let r = run(place, speed, stopping);
                let f = r.figures;
                println!(
                    "{:<9} {:>4.1} {:<13} | {:>9.2} {:>10.2} {:>11.2} {:>10.1} | {:>13.3}",
                    r.place,
                    r.speed_mps,
                    r.stopping,
                    f.time_to_rest_s,
                    f.distance_m,
                    f.peak_decel_mps2,
                    f.peak_jerk_mps3,
                    f.max_deviation_m
                );
            }
        }
    }
    println!();
    println!(
        "stops from 5.5 m/s in the bend with each pose source (bound {SOURCE_BOUND_M} m off the path):"
    );
    println!(
        "{:<13} {:<13} | {:>9} {:>10} | {:>13} | target",
        "source", "stop", "to rest s", "distance m", "max off path"
    );
    for r in source_stops() {
        let f = r.result.figures;
        println!(
            "{:<13} {:<13} | {:>9.2} {:>10.2} | {:>13.3} | {}",
            r.source,
            r.result.stopping,
            f.time_to_rest_s,
            f.distance_m,
            f.max_deviation_m,
            if f.max_deviation_m <= SOURCE_BOUND_M {
                "met"
            } else {
                "MISSED"
            }
        );
    }
    Ok(())
}

/// A stop with a pose source.
pub struct SourceStop {
    pub source: &'static str,
    pub result: StopResult,
}

/// Emergency and comfortable stops from 5.5 m/s in the bend with every pose source.
pub fn source_stops() -> Vec<SourceStop> {
    let mut out = Vec::new();
    for source in crate::track::sources() {
        for class in [StopClass::Emergency, StopClass::Comfortable] {
            out.push(SourceStop {
                source: source.name,
                result: run_with("bend_r27", 5.5, Stopping::Graded(class), &source),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stops_in_the_bend_stay_on_the_path_with_every_pose_source() {
        for s in source_stops() {
            let f = s.result.figures;
            assert!(
                f.max_deviation_m <= SOURCE_BOUND_M && f.distance_m > 0.0,
                "{} {}: {:.3} m off the path",
                s.source,
                s.result.stopping,
                f.max_deviation_m
            );
        }
    }
}
