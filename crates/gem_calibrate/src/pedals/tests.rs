use super::*;
use crate::pedal_report;
use gem_core::geometry::Pose;
use gem_core::pacmod::pedal_map::{AcceleratorMap, BrakeMap};
use gem_core::pacmod::plant::{Flags, Plant, PlantConfig};
use gem_core::pacmod::SHIFT_FORWARD;
use gem_core::time::Time;
use gem_core::vehicle::{VehicleModel, VehicleParams};
use std::time::Duration;

fn shipped_accelerator() -> PedalMap {
    AcceleratorMap::default().0
}

/// A map 30 % weaker than the shipped accelerator map above coasting, its pedal rows
/// moved up (a wider dead zone).
fn weaker_accelerator() -> PedalMap {
    "truth, 0.0, 1.0, 2.0, 3.0, 4.0, 5.5
0.00, -0.10, -0.15, -0.20, -0.25, -0.30, -0.35
0.34, -0.10, -0.15, -0.20, -0.25, -0.30, -0.35
0.40, 0.39, 0.30, 0.22, 0.14, 0.05, -0.10
0.45, 0.81, 0.69, 0.57, 0.41, 0.23, -0.05
0.48, 1.23, 1.07, 0.92, 0.70, 0.44, 0.04"
        .parse::<AcceleratorMap>()
        .unwrap()
        .0
}

/// Samples of `truth` at each of `rows`, at speeds 0.2 to 4.4 m/s, with a deterministic
/// noise of ±`noise` m/s².
fn samples_of(truth: &PedalMap, rows: &[f64], noise: f64) -> Vec<Sample> {
    let mut out = Vec::new();
    let mut k = 0u32;
    for &p in rows {
        for step in 0..=42 {
            let v = 0.2 + 0.1 * f64::from(step);
            for _ in 0..10 {
                k += 1;
                let e = noise * ((f64::from(k) * 0.618_034).fract() * 2.0 - 1.0);
                out.push(Sample {
                    pedal: truth.pedal(),
                    speed_mps: v,
                    frac: p,
                    accel_mps2: truth.acceleration(v, p) + e,
                });
            }
        }
    }
    out
}

#[test]
fn a_fit_recovers_the_truth_on_the_cells_the_data_cover() {
    let truth = weaker_accelerator();
    let prior = shipped_accelerator();
    let rows = prior.pedals_frac().to_vec();
    let samples = samples_of(&truth, &rows, 0.1);
    let f = fit(&prior, &samples, &FitConfig::DEFAULT).unwrap();
    let rms = rms_against(&f, &truth).unwrap();
    assert!(rms < 0.05, "rms {rms}");
    assert!(
        f.rmse_after < f.rmse_before,
        "{} {}",
        f.rmse_after,
        f.rmse_before
    );
    // 5.5 m/s has only a share of the samples above 4 m/s: not fitted.
    let top: Vec<&Cell> = f.cells.iter().filter(|c| c.speed_mps == 5.5).collect();
    assert!(top.iter().all(|c| c.origin != Origin::Fitted), "{top:?}");
    // The map reads back with the bridge's own loader.
    assert_eq!(f.csv.parse::<AcceleratorMap>().unwrap().0, f.map);
}

#[test]
fn outliers_do_not_move_a_robust_fit() {
    let truth = weaker_accelerator();
    let prior = shipped_accelerator();
    let rows = prior.pedals_frac().to_vec();
    let mut samples = samples_of(&truth, &rows, 0.05);
    // Every tenth sample 3 m/s² off (a bump, a bad report).
    for s in samples.iter_mut().step_by(10) {
        s.accel_mps2 += 3.0;
    }
    let f = fit(&prior, &samples, &FitConfig::DEFAULT).unwrap();
    let rms = rms_against(&f, &truth).unwrap();
    assert!(rms < 0.08, "rms {rms}");
}

#[test]
fn a_cell_with_too_little_data_keeps_the_prior_and_says_so() {
    let truth = weaker_accelerator();
    let prior = shipped_accelerator();
    // Data for the 0.42 row only.
    let samples = samples_of(&truth, &[0.42], 0.0);
    let f = fit(&prior, &samples, &FitConfig::DEFAULT).unwrap();
    let row_036: Vec<&Cell> = f.cells.iter().filter(|c| c.pedal_frac == 0.36).collect();
    assert!(row_036.iter().all(|c| c.origin != Origin::Fitted));
    // Where the prior of 0.36 is above the truth of 0.42 it moves down with it.
    let moved = row_036
        .iter()
        .filter(|c| c.origin == Origin::PriorMoved)
        .count();
    assert!(moved >= 1, "{row_036:?}");
    for c in row_036.iter().filter(|c| c.origin == Origin::Prior) {
        assert!((c.fitted_mps2 - c.prior_mps2).abs() < 1e-3, "{c:?}");
    }
    // The fitted row is the truth's.
    for c in f
        .cells
        .iter()
        .filter(|c| c.pedal_frac == 0.42 && c.origin == Origin::Fitted)
    {
        let t = truth.acceleration(c.speed_mps, 0.42);
        assert!((c.fitted_mps2 - t).abs() < 0.05, "{c:?} vs {t}");
    }
}

#[test]
fn data_against_the_pedal_still_give_a_valid_map() {
    // A row that measures weaker than the row below it: the constraints keep the order.
    let prior = shipped_accelerator();
    let mut samples = samples_of(&prior, &[0.36], 0.0);
    samples.extend(
        samples_of(&prior, &[0.42], 0.0)
            .into_iter()
            .map(|s| Sample {
                accel_mps2: s.accel_mps2 - 1.0,
                ..s
            }),
    );
    let f = fit(&prior, &samples, &FitConfig::DEFAULT).unwrap();
    for c in f.cells.iter().filter(|c| c.pedal_frac == 0.42) {
        let below = f.map.acceleration(c.speed_mps, 0.36);
        assert!(c.fitted_mps2 >= below - 1e-4, "{c:?} below {below}");
    }
}

#[test]
fn a_table_that_breaks_the_rules_is_refused() {
    let speeds = [0.0, 2.0];
    let rows = [0.0, 0.5];
    // The second row below the first at 2 m/s: the loader refuses it.
    let mut x = [-0.1, -0.2, 0.5, -0.5];
    let e = checked(Pedal::Accelerator, &speeds, &rows, &mut x).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("the fitted accelerator map breaks the map rules"),
        "{e}"
    );
    let mut nan = [-0.1, -0.2, f64::NAN, 0.5];
    assert!(checked(Pedal::Accelerator, &speeds, &rows, &mut nan).is_err());
    // No samples.
    let e = fit(&shipped_accelerator(), &[], &FitConfig::DEFAULT).unwrap_err();
    assert!(matches!(e, FitError::NoSamples("accelerator")));
}

#[test]
fn the_brake_map_runs_the_other_way() {
    let prior = BrakeMap::default().0;
    let truth: PedalMap = "t, 0.0, 1.0, 2.0, 3.0, 4.0, 5.5
0.00, -0.10, -0.15, -0.20, -0.25, -0.30, -0.35
0.30, -0.30, -0.40, -0.50, -0.55, -0.60, -0.65
1.00, -2.80, -3.00, -3.20, -3.30, -3.30, -3.40"
        .parse::<BrakeMap>()
        .unwrap()
        .0;
    let rows = prior.pedals_frac().to_vec();
    let f = fit(&prior, &samples_of(&truth, &rows, 0.1), &FitConfig::DEFAULT).unwrap();
    assert!(rms_against(&f, &truth).unwrap() < 0.05);
}

/// A drive: from rest, the accelerator at 0.42 for 8 s, then released for 4 s, then the
/// brake at 0.4 until rest; the speed reported at 30 Hz, quantised to `quantum`.
fn drive(truth: &PedalMap, brake: &PedalMap, quantum: f64) -> Drive {
    let dt = 1.0 / 300.0;
    let mut d = Drive::default();
    let (mut v, mut t) = (0.0_f64, 0.0_f64);
    let mut next_report = 0.0;
    while t < 25.0 {
        let (a_frac, b_frac) = if t < 8.0 {
            (0.42, 0.0)
        } else if t < 12.0 {
            (0.0, 0.0)
        } else {
            (0.0, 0.4)
        };
        if t >= next_report {
            let rep = if quantum > 0.0 {
                (v / quantum).round() * quantum
            } else {
                v
            };
            d.speed.push((t, rep));
            d.accelerator.push((t, a_frac));
            d.brake.push((t, b_frac));
            d.steering_wheel.push((t, 0.0));
            next_report += 1.0 / 30.0;
        }
        let a = truth.acceleration(v, a_frac) + brake.acceleration(v, b_frac)
            - brake.acceleration(v, 0.0);
        v = (v + a * dt).max(0.0);
        t += dt;
    }
    d
}

#[test]
fn samples_follow_the_drive_and_skip_pedal_steps() {
    let truth = shipped_accelerator();
    let brake = BrakeMap::default().0;
    let x = extract(&drive(&truth, &brake, 0.0), &ExtractConfig::DEFAULT);
    assert_eq!(x.quantum_mps, None);
    assert!(x.samples.len() > 300, "{}", x.samples.len());
    let acc: Vec<&Sample> = x
        .samples
        .iter()
        .filter(|s| s.pedal == Pedal::Accelerator && s.frac == 0.42)
        .collect();
    assert!(!acc.is_empty());
    for s in &acc {
        let t = truth.acceleration(s.speed_mps, 0.42);
        assert!((s.accel_mps2 - t).abs() < 0.05, "{s:?} vs {t}");
    }
    let changing = x
        .dropped
        .iter()
        .find(|(n, _)| *n == "pedal changing")
        .unwrap()
        .1;
    assert!(changing > 0);
    // At rest with the brake held at the end: dropped, never a sample.
    let at_rest = x.dropped.iter().find(|(n, _)| *n == "at rest").unwrap().1;
    assert!(at_rest > 0);
}

#[test]
fn a_speed_in_whole_km_per_h_still_gives_the_acceleration() {
    let truth = shipped_accelerator();
    let brake = BrakeMap::default().0;
    let x = extract(&drive(&truth, &brake, 1.0 / 3.6), &ExtractConfig::DEFAULT);
    let q = x.quantum_mps.unwrap();
    assert!((q - 1.0 / 3.6).abs() < 1e-6, "{q}");
    let acc: Vec<&Sample> = x
        .samples
        .iter()
        .filter(|s| s.pedal == Pedal::Accelerator && s.frac == 0.42)
        .collect();
    assert!(acc.len() > 60, "{}", acc.len());
    let mean_err = acc
        .iter()
        .map(|s| s.accel_mps2 - truth.acceleration(s.speed_mps, 0.42))
        .sum::<f64>()
        / acc.len() as f64;
    assert!(mean_err.abs() < 0.05, "mean error {mean_err}");
}

#[test]
fn the_steering_filter_drops_bends() {
    let truth = shipped_accelerator();
    let brake = BrakeMap::default().0;
    let mut d = drive(&truth, &brake, 0.0);
    for s in d.steering_wheel.iter_mut() {
        s.1 = 3.0;
    }
    let x = extract(&d, &ExtractConfig::DEFAULT);
    assert!(x.samples.is_empty());
    assert!(x.dropped.iter().find(|(n, _)| *n == "steering").unwrap().1 > 300);
}

#[test]
fn a_pedal_between_rows_counts_for_both_rows() {
    let speeds = [0.0, 1.0, 2.0];
    let rows = [0.0, 0.4, 0.6];
    // Pedal 0.45: a quarter on row 0.6; speed 1.5: half on each column.
    let w = grid_shares(&speeds, &rows, 1.5, 0.45);
    let close = |k: usize, x: f64| w.iter().any(|&(i, v)| i == k && (v - x).abs() < 1e-12);
    assert_eq!(w.len(), 4, "{w:?}");
    assert!(close(4, 0.375) && close(5, 0.375) && close(7, 0.125) && close(8, 0.125));
    // On a row and a column: one cell; beyond the table: its edge.
    assert_eq!(grid_shares(&speeds, &rows, 1.0, 0.4), vec![(4, 1.0)]);
    assert_eq!(grid_shares(&speeds, &rows, 9.0, 0.7), vec![(8, 1.0)]);
}

/// `map` with every value passed through `f`.
fn mapped(map: &PedalMap, f: impl Fn(f64) -> f64) -> PedalMap {
    let (speeds, rows) = (map.speeds_mps(), map.pedals_frac());
    let x: Vec<f64> = rows
        .iter()
        .flat_map(|&p| speeds.iter().map(move |&v| (p, v)))
        .map(|(p, v)| f(map.acceleration(v, p)))
        .collect();
    PedalMap::parse(map.pedal(), &to_csv(map.pedal(), speeds, rows, &x)).unwrap()
}

/// A person's drive of the simulated car (the plant with `cfg`'s report noise and
/// resolution, the shipped maps as its truth): for each brake hold, from rest the
/// accelerator pressed to 0.48 over 0.3 s and held to 6.8 m/s, released over 0.2 s,
/// a coast to 6.5 m/s, then the brake pressed to the hold over 0.3 s and held until
/// 1 s after the car stopped, then released over 0.2 s. The plant reports at 30 Hz; the
/// pedals are its reported outputs.
struct HandHeld {
    drive: Drive,
    /// Each speed report with the brake held for at least 0.5 s that shows the car
    /// moving (at or above 0.05 m/s): the car's true speed and the brake.
    settled: Vec<(f64, f64)>,
}

fn hand_held(cfg: PlantConfig, holds: &[f64]) -> HandHeld {
    let on = Flags {
        enable: true,
        clear: false,
    };
    let mut plant = Plant::new(cfg, AcceleratorMap::default(), BrakeMap::default());
    plant.enable_command(true);
    plant.shift_command(SHIFT_FORWARD, on);
    let dt = Duration::from_millis(10);
    let mut car = VehicleModel::new(
        VehicleParams::default().kinematic(),
        Pose::default(),
        Time::from_secs_f64(1.0),
    );
    let mut out = HandHeld {
        drive: Drive::default(),
        settled: Vec::new(),
    };
    let mut next_report = 1.0;
    // One 10 ms step with the pedals at `(accelerator, brake)`; `held_s`: how long the
    // brake has been at its hold.
    let mut step = |car: &mut VehicleModel, out: &mut HandHeld, a: f64, b: f64, held_s: f64| {
        plant.accel_command(a, on);
        plant.brake_command(b, on);
        let (now, v) = (car.now(), car.state().speed_mps);
        let t = now.as_secs_f64();
        if t >= next_report - 1e-9 {
            let r = plant.report(now, v);
            let d = &mut out.drive;
            d.speed.push((t, r.speed_mps));
            d.accelerator.push((t, r.pedal_outputs.0));
            d.brake.push((t, r.pedal_outputs.1));
            d.steering_wheel.push((t, r.wheel_rad));
            if held_s >= 0.5 && r.speed_mps >= 0.05 {
                out.settled.push((v, r.pedal_outputs.1));
            }
            next_report += 1.0 / 30.0;
        }
        let act = plant.step(dt, v);
        car.drive_by_acceleration(act.front_wheel_rad, act.accel_mps2);
        car.step(dt);
    };
    let ramp = |k: u32, steps: u32| (f64::from(k) / f64::from(steps)).min(1.0);
    for &hold in holds {
        let mut k = 0;
        while car.state().speed_mps < 6.8 {
            step(&mut car, &mut out, 0.48 * ramp(k, 30), 0.0, 0.0);
            k += 1;
        }
        for k in 0..20 {
            step(&mut car, &mut out, 0.48 * (1.0 - ramp(k + 1, 20)), 0.0, 0.0);
        }
        while car.state().speed_mps > 6.5 {
            step(&mut car, &mut out, 0.0, 0.0, 0.0);
        }
        let (mut k, mut stopped) = (0, 0);
        while stopped < 100 {
            let held_s = f64::from(k.max(30) - 30) * 0.01;
            step(&mut car, &mut out, 0.0, hold * ramp(k, 30), held_s);
            k += 1;
            if car.state().speed_mps <= 0.0 {
                stopped += 1;
            }
        }
        for k in 0..20 {
            step(&mut car, &mut out, 0.0, hold * (1.0 - ramp(k + 1, 20)), 0.0);
        }
    }
    out
}

/// The cells of `map` a drive covers: those to which its `settled` reports give shares
/// worth two thirds of a second (20 reports at 30 Hz), each report shared between the
/// cells around its true speed and its pedal as a sample is. The fit needs 15 of them
/// to come through the filters as samples.
fn covered_cells(map: &PedalMap, settled: &[(f64, f64)]) -> Vec<usize> {
    let (speeds, rows) = (map.speeds_mps(), map.pedals_frac());
    let mut reports = vec![0.0; speeds.len() * rows.len()];
    for &(v, p) in settled {
        for (k, share) in grid_shares(speeds, rows, v, p) {
            reports[k] += share;
        }
    }
    (0..reports.len()).filter(|&k| reports[k] >= 20.0).collect()
}

const HOLDS: [f64; 4] = [0.10, 0.20, 0.30, 0.45];

/// The hand-held drive's fit from `prior_brake` (and the accelerator prior scaled by
/// 0.6): checks every covered brake cell, the map at the held pedals, the accelerator
/// map and the report; prints the figures.
fn check_hand_held(cfg: PlantConfig, prior_brake: PedalMap, what: &str) {
    let truth_a = AcceleratorMap::default().0;
    let truth_b = BrakeMap::default().0;
    let run = hand_held(cfg, &HOLDS);
    let x = extract(&run.drive, &ExtractConfig::DEFAULT);
    let fb = fit(&prior_brake, &x.samples, &FitConfig::DEFAULT).unwrap();
    let fa = fit(
        &mapped(&truth_a, |a| 0.6 * a),
        &x.samples,
        &FitConfig::DEFAULT,
    )
    .unwrap();
    let covered = covered_cells(&truth_b, &run.settled);
    let err = |c: &Cell| c.fitted_mps2 - truth_b.acceleration(c.speed_mps, c.pedal_frac);
    println!(
        "{what}: {} reports, {} samples, dropped {:?}",
        x.reports,
        x.samples.len(),
        x.dropped
    );
    for (k, c) in fb.cells.iter().enumerate() {
        println!(
            "  brake {:.2} @ {:.1} m/s: truth {:+.3} prior {:+.3} fitted {:+.3} error {:+.3} support {:5.1} {:?}{}",
            c.pedal_frac,
            c.speed_mps,
            truth_b.acceleration(c.speed_mps, c.pedal_frac),
            c.prior_mps2,
            c.fitted_mps2,
            err(c),
            c.support,
            c.origin,
            if covered.contains(&k) { " covered" } else { "" }
        );
    }
    let rms = |e: &[f64]| (e.iter().map(|e| e * e).sum::<f64>() / e.len() as f64).sqrt();
    let errors: Vec<f64> = covered.iter().map(|&k| err(&fb.cells[k])).collect();
    let covered_rms = rms(&errors);
    let prior_rms = rms(&covered
        .iter()
        .map(|&k| fb.cells[k].prior_mps2 - fb.cells[k].fitted_mps2 + err(&fb.cells[k]))
        .collect::<Vec<_>>());
    // The map at the held pedals, at each speed column the holds passed through.
    let at_holds: Vec<f64> = HOLDS
        .iter()
        .flat_map(|&p| truth_b.speeds_mps().iter().map(move |&v| (p, v)))
        .filter(|&(_, v)| v <= 5.5)
        .map(|(p, v)| fb.map.acceleration(v, p) - truth_b.acceleration(v, p))
        .collect();
    let ra = rms_against(&fa, &truth_a).unwrap();
    let rb = rms_against(&fb, &truth_b).unwrap();
    for c in &fa.cells {
        if c.origin != Origin::Prior {
            println!(
                "  accelerator {:.2} @ {:.1} m/s: truth {:+.3} fitted {:+.3} support {:5.1} {:?}",
                c.pedal_frac,
                c.speed_mps,
                truth_a.acceleration(c.speed_mps, c.pedal_frac),
                c.fitted_mps2,
                c.support,
                c.origin
            );
        }
    }
    println!(
        "  {} brake cells covered: RMS {covered_rms:.3} m/s² (prior {prior_rms:.3}), largest {:.3}; {} fitted: RMS {rb:.3}; at the held pedals RMS {:.3}; accelerator: {} cells fitted, RMS {ra:.3}",
        covered.len(),
        errors.iter().fold(0.0_f64, |m, e| m.max(e.abs())),
        fb.covered().count(),
        rms(&at_holds),
        fa.covered().count(),
    );
    // Rows 0 and 0.2 at every speed (row 0: half of each 0.10 sample; at rest only
    // where the report shows the last of a stop), row 0.4 from 1 to 4 m/s (it has half
    // of each 0.30 sample and three quarters of each 0.45 one).
    assert!(covered.len() >= 15, "{what}: {covered:?}");
    for &k in &covered {
        assert_eq!(
            fb.cells[k].origin,
            Origin::Fitted,
            "{what}: {:?}",
            fb.cells[k]
        );
    }
    assert!(covered_rms <= 0.15, "{what}: covered RMS {covered_rms}");
    assert!(rb <= 0.15, "{what}: fitted RMS {rb}");
    assert!(
        prior_rms >= 0.3,
        "{what}: the prior is not clearly wrong: {prior_rms}"
    );
    assert!(rms(&at_holds) <= 0.15, "{what}: {at_holds:?}");
    assert!(ra <= 0.15, "{what}: accelerator {ra}");
    // The accelerator's top row, from where the car has moved off after the press.
    let top_row = fa
        .cells
        .iter()
        .filter(|c| c.pedal_frac == 0.48 && c.speed_mps >= 1.0);
    assert!(
        top_row.clone().all(|c| c.origin == Origin::Fitted),
        "{what}"
    );
    // The report marks each cell: the covered ones fitted to data, the rows the drive
    // never reached with no samples, and what dropped the reports at rest.
    let md = pedal_report::markdown(
        &x,
        &[(Pedal::Brake, Ok(&fb)), (Pedal::Accelerator, Ok(&fa))],
    );
    for &k in &covered {
        let c = &fb.cells[k];
        let line = format!("| {:.2} | {:.1} |", c.pedal_frac, c.speed_mps);
        let row = md.lines().find(|l| l.starts_with(&line)).unwrap();
        assert!(row.ends_with("| data |"), "{what}: {row}");
    }
    let row_1 = md
        .lines()
        .find(|l| l.starts_with("| 1.00 | 2.0 |"))
        .unwrap();
    assert!(row_1.contains("| prior"), "{what}: {row_1}");
    assert!(row_1.contains("no samples"), "{what}: {row_1}");
    let at_rest = md
        .lines()
        .find(|l| l.starts_with("| 0.40 | 0.0 |"))
        .unwrap();
    assert!(at_rest.contains("at rest"), "{what}: {at_rest}");
}

#[test]
fn hand_held_brake_stops_fit_every_brake_cell_they_cover() {
    let truth = BrakeMap::default().0;
    check_hand_held(
        PlantConfig {
            speed_sigma_mps: 0.02,
            seed: 7,
            ..PlantConfig::default()
        },
        mapped(&truth, |a| 0.6 * a),
        "noisy speed, prior 0.6 × truth",
    );
}

#[test]
fn hand_held_brake_stops_fit_from_a_shifted_prior() {
    let truth = BrakeMap::default().0;
    check_hand_held(
        PlantConfig {
            speed_sigma_mps: 0.02,
            seed: 11,
            ..PlantConfig::default()
        },
        mapped(&truth, |a| a + 0.8),
        "noisy speed, prior truth + 0.8 m/s²",
    );
}

#[test]
fn hand_held_brake_stops_fit_with_a_speed_in_whole_km_per_h() {
    let truth = BrakeMap::default().0;
    check_hand_held(
        PlantConfig {
            speed_sigma_mps: 0.02,
            speed_quantum_mps: 1.0 / 3.6,
            seed: 7,
            ..PlantConfig::default()
        },
        mapped(&truth, |a| 0.6 * a),
        "speed in whole km/h, prior 0.6 × truth",
    );
}

/// The drive of [`drive`] with a NaN in every 20th speed report, time, pedal and
/// steering report.
fn with_nans() -> (Drive, usize) {
    let mut d = drive(&shipped_accelerator(), &BrakeMap::default().0, 0.0);
    let mut bad = 0;
    for (k, s) in d.speed.iter_mut().enumerate() {
        match k % 40 {
            0 => s.1 = f64::NAN,
            20 => s.0 = f64::NAN,
            _ => continue,
        }
        bad += 1;
    }
    for series in [&mut d.accelerator, &mut d.brake, &mut d.steering_wheel] {
        for s in series.iter_mut().skip(7).step_by(20) {
            s.1 = f64::NAN;
        }
    }
    (d, bad)
}

#[test]
fn nan_reports_are_counted_and_skipped_never_a_panic() {
    let (d, bad) = with_nans();
    let x = extract(&d, &ExtractConfig::DEFAULT);
    let nan = x
        .dropped
        .iter()
        .find(|(n, _)| *n == "not a number")
        .unwrap()
        .1;
    assert_eq!(nan, bad);
    assert!(x
        .samples
        .iter()
        .all(|s| s.speed_mps.is_finite() && s.frac.is_finite() && s.accel_mps2.is_finite()));
    let truth = shipped_accelerator();
    let f = fit(
        &mapped(&truth, |a| 0.6 * a),
        &x.samples,
        &FitConfig::DEFAULT,
    )
    .unwrap();
    assert!(rms_against(&f, &truth).unwrap() < 0.05);
    // Nothing but NaN: no samples, and the fit says so.
    let mut d = d;
    for s in &mut d.speed {
        s.1 = f64::NAN;
    }
    let x = extract(&d, &ExtractConfig::DEFAULT);
    assert!(x.samples.is_empty());
    assert_eq!(x.dropped[0], ("not a number", d.speed.len()));
    let e = fit(&BrakeMap::default().0, &x.samples, &FitConfig::DEFAULT).unwrap_err();
    assert!(matches!(e, FitError::NoSamples("brake")), "{e}");
    assert!(e.to_string().starts_with("no usable brake samples"), "{e}");
    // NaN samples handed to the fit directly are left out.
    let nan_samples = vec![
        Sample {
            pedal: Pedal::Brake,
            speed_mps: f64::NAN,
            frac: 0.2,
            accel_mps2: -0.5,
        },
        Sample {
            pedal: Pedal::Brake,
            speed_mps: 1.0,
            frac: 0.2,
            accel_mps2: f64::NAN,
        },
    ];
    assert!(fit(&BrakeMap::default().0, &nan_samples, &FitConfig::DEFAULT).is_err());
}

#[test]
fn a_drive_without_brake_reports_gives_a_clear_error() {
    let mut d = drive(&shipped_accelerator(), &BrakeMap::default().0, 0.0);
    d.brake.clear();
    let x = extract(&d, &ExtractConfig::DEFAULT);
    assert!(x.samples.is_empty());
    let none = x
        .dropped
        .iter()
        .find(|(n, _)| *n == "no pedal report")
        .unwrap()
        .1;
    assert_eq!(none, d.speed.len());
    for prior in [shipped_accelerator(), BrakeMap::default().0] {
        let e = fit(&prior, &x.samples, &FitConfig::DEFAULT).unwrap_err();
        assert!(
            e.to_string().contains("every sample was filtered out"),
            "{e}"
        );
    }
    let md = pedal_report::markdown(&x, &[(Pedal::Brake, Err("no usable brake samples".into()))]);
    assert!(
        md.contains(&format!("| no pedal report | {} |", d.speed.len())),
        "{md}"
    );
    // An empty drive: nothing to look at, the same error.
    let x = extract(&Drive::default(), &ExtractConfig::DEFAULT);
    assert_eq!((x.reports, x.samples.len()), (0, 0));
    assert!(fit(&BrakeMap::default().0, &x.samples, &FitConfig::DEFAULT).is_err());
    // A drive that never brakes: the brake map's coasting row only.
    let mut d = drive(&shipped_accelerator(), &BrakeMap::default().0, 0.0);
    d.brake.iter_mut().for_each(|s| s.1 = 0.0);
    d.speed.truncate(12 * 30);
    let x = extract(&d, &ExtractConfig::DEFAULT);
    let f = fit(&BrakeMap::default().0, &x.samples, &FitConfig::DEFAULT).unwrap();
    assert!(f
        .cells
        .iter()
        .all(|c| c.pedal_frac == 0.0 || c.origin != Origin::Fitted));
}
