use super::*;
use gem_core::pacmod::pedal_map::{AcceleratorMap, BrakeMap};

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
    // 5.5 m/s has no data: the prior.
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
