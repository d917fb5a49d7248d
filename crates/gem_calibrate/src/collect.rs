//! The calibration drives: the sequence of `pacmod_bridge` calibration runs that
//! `gemctl calibrate pedals --collect` asks for, one after the other.
//!
//! Pedals ([`pedal_plan`]), on a straight, the steering wheel centred:
//!
//! 1. for each accelerator row above 0, from rest: the accelerator held until the top
//!    speed, the distance or the time limit; then, at whatever speed it reached, the
//!    accelerator released for [`COAST_S`] (the pedal-0 row, coasting); then one of the
//!    brake rows until rest;
//! 2. twice for each brake row above 0: the speed loop to just below the top speed, then
//!    that brake row until rest (a strong row stops the car in a second or two).
//!
//! So every row of both maps is held at the speeds a straight allows, each brake row at
//! least once from speed. A step either follows the previous run at once ([`Start::Chained`],
//! the car still moving) or waits until the bridge has brought the car to rest
//! ([`Start::AtRest`]).

use gem_core::pacmod::calibration::{Hold, RunRequest};
use gem_core::pacmod::pedal_map::PedalMap;
use std::time::Duration;

/// How long a coasting run lasts, s.
pub const COAST_S: f64 = 3.0;

/// When a step starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Start {
    /// As soon as the previous run ends (the car still moving).
    Chained,
    /// Once the car is at rest and the bridge ready.
    AtRest,
}

/// One run of a drive.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    /// The run.
    pub request: RunRequest,
    /// When it starts.
    pub start: Start,
}

/// The limits of a calibration drive.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanConfig {
    /// The highest speed of a run, m/s.
    pub top_speed_mps: f64,
    /// The longest run, m: the straight's usable length.
    pub distance_m: f64,
    /// The longest run, s.
    pub run_s: f64,
}

impl PlanConfig {
    /// The defaults: 4.5 m/s, 100 m, 25 s.
    pub const DEFAULT: PlanConfig = PlanConfig {
        top_speed_mps: 4.5,
        distance_m: 100.0,
        run_s: 25.0,
    };
}

impl Default for PlanConfig {
    fn default() -> Self {
        PlanConfig::DEFAULT
    }
}

/// The pedal drive for the rows of `accelerator` and `brake` (module documentation).
pub fn pedal_plan(accelerator: &PedalMap, brake: &PedalMap, cfg: &PlanConfig) -> Vec<Step> {
    let run = |hold: Hold, secs: f64, start: Start| Step {
        request: RunRequest {
            hold,
            steering_wheel_rad: 0.0,
            steering_rate_rad_s: None,
            duration: Duration::from_secs_f64(secs),
            distance_m: cfg.distance_m,
            // A little room above the top speed: the end is the top speed, not a fault.
            max_speed_mps: cfg.top_speed_mps,
        },
        start,
    };
    let brakes: Vec<f64> = brake
        .pedals_frac()
        .iter()
        .copied()
        .filter(|&b| b > 0.0)
        .collect();
    let mut steps = Vec::new();
    for (k, &p) in accelerator
        .pedals_frac()
        .iter()
        .filter(|&&p| p > 0.0)
        .enumerate()
    {
        steps.push(run(Hold::Accelerator(p), cfg.run_s, Start::AtRest));
        steps.push(run(Hold::Accelerator(0.0), COAST_S, Start::Chained));
        if let Some(&b) = brakes.get(k % brakes.len().max(1)) {
            steps.push(run(Hold::Brake(b), cfg.run_s, Start::Chained));
        }
    }
    // Twice from speed, the strong rows being short.
    let cruise = (cfg.top_speed_mps - 0.3).max(0.5 * cfg.top_speed_mps);
    for &b in brakes.iter().chain(&brakes) {
        // Long enough to reach the speed at 0.5 m/s² and settle.
        steps.push(run(Hold::Speed(cruise), cruise / 0.5 + 3.0, Start::AtRest));
        steps.push(run(Hold::Brake(b), cfg.run_s, Start::Chained));
    }
    steps
}

/// What a collecting program last heard of the bridge (its `/diagnostics` status).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BridgeSeen {
    /// The state's name (`READY`, `CALIBRATING`, `DISENGAGED`, …).
    pub state: String,
    /// The status message.
    pub message: String,
    /// The calibration run under way or last ended, by number.
    pub run: Option<u32>,
    /// Why that run ended (`duration reached`, `fault: …`), once it has.
    pub ended: Option<String>,
}

/// What to do next.
#[derive(Clone, Debug, PartialEq)]
pub enum Next {
    /// Keep waiting.
    Wait,
    /// Ask for the step's run now.
    Start,
    /// Stop the drive: the text says why.
    Abort(String),
}

/// Whether the step that starts `start` may start, given our last run (`None` before
/// the first), what the bridge reports and the state manager's error, if any. A drive
/// stops the moment the state manager reports ERROR, the bridge is not engaged (the
/// safety driver took over, or the PACMod dropped out), or one of our runs ended on a
/// fault.
pub fn next(
    start: Start,
    ours: Option<u32>,
    seen: &BridgeSeen,
    system_error: Option<&str>,
) -> Next {
    if let Some(e) = system_error {
        return Next::Abort(format!("the state manager reports ERROR ({e})"));
    }
    if matches!(seen.state.as_str(), "DISENGAGED" | "WAITING_FOR_ENABLE") {
        return Next::Abort(format!("the bridge is {}: {}", seen.state, seen.message));
    }
    let ours_ended = match ours {
        None => Some(None),
        Some(id) if seen.run == Some(id) => seen.ended.as_ref().map(Some),
        // Our run is not the one reported yet (the status is on its way).
        Some(_) => None,
    };
    match ours_ended {
        Some(Some(end)) if end.starts_with("fault") => {
            Next::Abort(format!("run {} ended on a {end}", ours.unwrap_or_default()))
        }
        None => Next::Wait,
        // Still selecting forward with the brake held: it refuses a run until it is engaged.
        Some(_) if seen.state == "ENGAGING" => Next::Wait,
        Some(_) => match start {
            Start::Chained => Next::Start,
            Start::AtRest if seen.state != "CALIBRATING" => Next::Start,
            Start::AtRest => Next::Wait,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_run_starts_while_the_bridge_is_still_engaging() {
        let engaging = seen("ENGAGING", None, None);
        assert_eq!(next(Start::AtRest, None, &engaging, None), Next::Wait);
        assert_eq!(next(Start::Chained, None, &engaging, None), Next::Wait);
        let engaged = seen("READY", None, None);
        assert_eq!(next(Start::AtRest, None, &engaged, None), Next::Start);
        // A run of ours that ended on a fault stops the drive, engaging again or not.
        let faulted = seen("ENGAGING", Some(2), Some("fault: override"));
        assert!(matches!(
            next(Start::Chained, Some(2), &faulted, None),
            Next::Abort(_)
        ));
    }

    fn seen(state: &str, run: Option<u32>, ended: Option<&str>) -> BridgeSeen {
        BridgeSeen {
            state: state.into(),
            message: "why".into(),
            run,
            ended: ended.map(Into::into),
        }
    }

    #[test]
    fn a_step_waits_for_its_start() {
        // The first run starts from an engaged bridge.
        assert_eq!(
            next(Start::AtRest, None, &seen("BRAKING", None, None), None),
            Next::Start
        );
        // Chained: once our run has ended, at speed.
        let holding = seen("CALIBRATING", Some(3), None);
        let stopping = seen("CALIBRATING", Some(3), Some("duration reached"));
        assert_eq!(next(Start::Chained, Some(3), &holding, None), Next::Wait);
        assert_eq!(next(Start::Chained, Some(3), &stopping, None), Next::Start);
        // At rest: once the bridge has left the run.
        assert_eq!(next(Start::AtRest, Some(3), &stopping, None), Next::Wait);
        let ready = seen("READY", Some(3), Some("at rest"));
        assert_eq!(next(Start::AtRest, Some(3), &ready, None), Next::Start);
        // The status still shows the run before ours.
        assert_eq!(next(Start::Chained, Some(4), &stopping, None), Next::Wait);
    }

    #[test]
    fn a_drive_stops_on_an_override_a_fault_or_an_error() {
        let taken = seen(
            "DISENGAGED",
            Some(3),
            Some("fault: driver override on the PACMod"),
        );
        assert_eq!(
            next(Start::Chained, Some(3), &taken, None),
            Next::Abort("the bridge is DISENGAGED: why".into())
        );
        let lost = seen(
            "BRAKING",
            Some(3),
            Some("fault: no speed report within the timeout"),
        );
        assert_eq!(
            next(Start::AtRest, Some(3), &lost, None),
            Next::Abort("run 3 ended on a fault: no speed report within the timeout".into())
        );
        let fine = seen("CALIBRATING", Some(3), None);
        assert_eq!(
            next(Start::Chained, Some(3), &fine, Some("ESTOP")),
            Next::Abort("the state manager reports ERROR (ESTOP)".into())
        );
    }

    use gem_core::pacmod::pedal_map::{AcceleratorMap, BrakeMap};

    #[test]
    fn every_row_is_held_and_every_brake_row_from_speed() {
        let (a, b) = (AcceleratorMap::default().0, BrakeMap::default().0);
        let plan = pedal_plan(&a, &b, &PlanConfig::DEFAULT);
        let held = |h: Hold| plan.iter().filter(|s| s.request.hold == h).count();
        for &p in a.pedals_frac() {
            assert!(held(Hold::Accelerator(p)) >= 1, "accelerator {p}");
        }
        for &p in b.pedals_frac().iter().filter(|&&p| p > 0.0) {
            assert!(held(Hold::Brake(p)) >= 1, "brake {p}");
            let i = plan
                .iter()
                .position(|s| s.request.hold == Hold::Brake(p))
                .unwrap();
            assert_eq!(plan[i].start, Start::Chained, "brake {p} starts at speed");
        }
        assert_eq!(plan[0].start, Start::AtRest);
        for s in &plan {
            assert!(s.request.max_speed_mps <= 4.5);
            assert!(s.request.duration.as_secs_f64() <= 25.0);
            assert_eq!(s.request.steering_wheel_rad, 0.0);
        }
    }
}
