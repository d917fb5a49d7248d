//! What `gemctl calibrate pedals` writes beside the maps: a Markdown report (the filters'
//! counts, and per cell the data, the value, the error before and after, where the value
//! comes from and, for a cell not fitted to data, why: no samples or too few, and which
//! filters dropped the reports that would have counted for it) and an SVG plot per map
//! (acceleration against the pedal, one colour per speed column: the samples as points,
//! the fitted map as lines).

use crate::pedals::{grid_shares, pedal_name, Cell, Extracted, Fitted, Origin, Sample};
use gem_core::pacmod::pedal_map::{Pedal, PedalMap};
use plotters::prelude::*;
use std::fmt::Write as _;

/// One map's outcome: fitted, or why not.
pub type Outcome<'a> = (Pedal, Result<&'a Fitted, String>);

/// The report, in Markdown.
pub fn markdown(extracted: &Extracted, outcomes: &[Outcome<'_>]) -> String {
    let mut s = String::from("# Pedal map calibration\n\n## Samples\n\n");
    let _ = writeln!(
        s,
        "{} speed reports; {} samples kept.",
        extracted.reports,
        extracted.samples.len()
    );
    if let Some(q) = extracted.quantum_mps {
        let _ = writeln!(
            s,
            "\nThe speed report is quantised to {q:.4} m/s ({:.2} km/h): accelerations are slopes over windows long enough for the speed to cross 5 steps, from the slope's window up to 2 s, and the car's last step before a stop counts up to its middle.",
            q * 3.6
        );
    }
    s.push_str("\n| filter | reports dropped |\n|---|---|\n");
    for (name, n) in &extracted.dropped {
        let _ = writeln!(s, "| {name} | {n} |");
    }
    for (pedal, outcome) in outcomes {
        let _ = writeln!(s, "\n## The {} map\n", pedal_name(*pedal));
        match outcome {
            Err(why) => {
                let _ = writeln!(s, "Not written: {why}");
            }
            Ok(f) => cells(&mut s, f, &dropped_per_cell(extracted, f)),
        }
    }
    s
}

/// Per cell of `f` (in the order of its cells), the reports each filter dropped that
/// would have counted for it, weighted by their shares as samples are.
fn dropped_per_cell(x: &Extracted, f: &Fitted) -> Vec<Vec<(&'static str, f64)>> {
    let (speeds, rows) = (f.map.speeds_mps(), f.map.pedals_frac());
    let mut out: Vec<Vec<(&'static str, f64)>> = vec![Vec::new(); f.cells.len()];
    for r in &x.rejected {
        let Some(frac) = r.counts_for(f.map.pedal()) else {
            continue;
        };
        for (k, share) in grid_shares(speeds, rows, r.speed_mps.max(0.0), frac) {
            match out[k].iter_mut().find(|(name, _)| *name == r.filter) {
                Some(sum) => sum.1 += share,
                None => out[k].push((r.filter, share)),
            }
        }
    }
    for d in &mut out {
        d.sort_by(|a, b| b.1.total_cmp(&a.1));
    }
    out
}

/// Where a cell's value comes from: `data`, or for a cell not fitted to data, its
/// origin, why (no samples or too few) and what dropped the reports near it.
fn from(c: &Cell, min_support: f64, dropped: &[(&'static str, f64)]) -> String {
    let mut s = match c.origin {
        Origin::Fitted => return "data".to_owned(),
        Origin::Sparse => format!(
            "sparse: too few samples (support {:.1} of {min_support})",
            c.support
        ),
        Origin::Prior => "prior: no samples".to_owned(),
        Origin::PriorMoved => "prior, moved: no samples".to_owned(),
    };
    let named: Vec<String> = dropped
        .iter()
        .filter(|(_, n)| *n >= 0.5)
        .take(3)
        .map(|(name, n)| format!("{name} {n:.0}"))
        .collect();
    if !named.is_empty() {
        let _ = write!(s, "; dropped near it: {}", named.join(", "));
    } else if c.origin == Origin::Sparse {
        s.push_str("; no report near it was dropped");
    } else {
        s.push_str("; no report near it: the drive never held a pedal near this row at this speed");
    }
    s
}

fn cells(s: &mut String, f: &Fitted, dropped: &[Vec<(&'static str, f64)>]) {
    let count = |o: Origin| f.cells.iter().filter(|c| c.origin == o).count();
    let _ = writeln!(
        s,
        "{} samples. RMS error of the samples: {:.3} m/s² with the starting map, {:.3} m/s² with the fitted map. {} of {} cells fitted to data (\"data\": support of at least {}, the samples' summed shares of the cell); {} sparse (\"sparse\": some data, set with the samples they share with their neighbours and their row's trend across speeds); the others keep the starting map (\"prior\"), or move with their fitted neighbours where the map's order demands it (\"prior, moved\"). For a cell not fitted, \"from\" also says why (no samples, or too few) and which filters dropped the reports that would have counted for it (weighted by their shares, as samples are).\n",
        f.samples,
        f.rmse_before,
        f.rmse_after,
        count(Origin::Fitted),
        f.cells.len(),
        f.min_support,
        count(Origin::Sparse),
    );
    if f.beyond_rows > 0 {
        let _ = writeln!(
            s,
            "{} samples left out: their pedal lies beyond the map's first or last row.\n",
            f.beyond_rows
        );
    }
    s.push_str("| pedal | speed, m/s | samples | support | start, m/s² | fitted, m/s² | RMS before | RMS after | from |\n|---|---|---|---|---|---|---|---|---|\n");
    let rms = |r: Option<f64>| r.map_or_else(|| "-".to_owned(), |v| format!("{v:.3}"));
    for (c, d) in f.cells.iter().zip(dropped) {
        let _ = writeln!(
            s,
            "| {:.2} | {:.1} | {} | {:.1} | {:+.3} | {:+.3} | {} | {} | {} |",
            c.pedal_frac,
            c.speed_mps,
            c.count,
            c.support,
            c.prior_mps2,
            c.fitted_mps2,
            rms(c.rmse_before),
            rms(c.rmse_after),
            from(c, f.min_support, d),
        );
    }
}

/// The plot of one map: its samples and its fitted curves, one colour per speed column.
pub fn svg(map: &PedalMap, samples: &[Sample]) -> Result<String, String> {
    let mine: Vec<&Sample> = samples.iter().filter(|s| s.pedal == map.pedal()).collect();
    let speeds = map.speeds_mps();
    let rows = map.pedals_frac();
    let values = || {
        rows.iter()
            .flat_map(|&p| speeds.iter().map(move |&v| map.acceleration(v, p)))
            .chain(mine.iter().map(|s| s.accel_mps2))
    };
    let lo = values().fold(f64::INFINITY, f64::min) - 0.2;
    let hi = values().fold(f64::NEG_INFINITY, f64::max) + 0.2;
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (900, 600)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!(
                    "{} map: acceleration against pedal",
                    pedal_name(map.pedal())
                ),
                ("sans-serif", 22),
            )
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..1.0_f64, lo..hi)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .x_desc("pedal (fraction)")
            .y_desc("acceleration (m/s²)")
            .draw()
            .map_err(|e| e.to_string())?;
        for (j, &v) in speeds.iter().enumerate() {
            let colour = Palette99::pick(j).to_rgba();
            let near = |s: &&&Sample| nearest(speeds, s.speed_mps) == j;
            chart
                .draw_series(
                    mine.iter()
                        .filter(near)
                        .map(|s| Circle::new((s.frac, s.accel_mps2), 2, colour.mix(0.4).filled())),
                )
                .map_err(|e| e.to_string())?;
            chart
                .draw_series(LineSeries::new(
                    rows.iter().map(|&p| (p, map.acceleration(v, p))),
                    colour.stroke_width(2),
                ))
                .map_err(|e| e.to_string())?
                .label(format!("{v} m/s"))
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 16, y)], colour.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(out)
}

fn nearest(xs: &[f64], x: f64) -> usize {
    (0..xs.len())
        .min_by(|&a, &b| (xs[a] - x).abs().total_cmp(&(xs[b] - x).abs()))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pedals::{fit, FitConfig, Rejected};
    use gem_core::pacmod::pedal_map::AcceleratorMap;

    fn samples() -> Vec<Sample> {
        let map = AcceleratorMap::default().0;
        (0..200)
            .map(|i| {
                let v = 0.5 + f64::from(i % 40) * 0.1;
                Sample {
                    pedal: Pedal::Accelerator,
                    speed_mps: v,
                    frac: 0.42,
                    accel_mps2: map.acceleration(v, 0.42) - 0.2,
                }
            })
            .collect()
    }

    #[test]
    fn the_report_names_each_cell_and_its_origin() {
        let s = samples();
        let f = fit(&AcceleratorMap::default().0, &s, &FitConfig::DEFAULT).unwrap();
        let x = Extracted {
            samples: s,
            reports: 400,
            dropped: vec![("jerk", 3), ("at rest", 20)],
            // A standing car with the accelerator at 0.30: no sample, dropped at rest.
            rejected: vec![
                Rejected {
                    filter: "at rest",
                    speed_mps: 0.0,
                    accelerator: 0.30,
                    brake: 0.0,
                };
                20
            ],
            quantum_mps: Some(1.0 / 3.6),
        };
        let md = markdown(
            &x,
            &[
                (Pedal::Accelerator, Ok(&f)),
                (Pedal::Brake, Err("no usable brake samples".into())),
            ],
        );
        assert!(md.contains("| jerk | 3 |"), "{md}");
        assert!(md.contains("quantised to 0.2778 m/s (1.00 km/h)"), "{md}");
        assert!(md.contains("| 0.42 | 1.0 |"), "{md}");
        // Row 0.42 from 0.5 to 4.4 m/s: fitted; the 5.5 m/s column gets a share of the
        // samples above 4 m/s only.
        assert!(md.contains("| 0.42 | 2.0 | 50 | 50.0 |"), "{md}");
        // A fitted cell's row ends with its origin, as tests/e2e/calibration.rs reads it.
        assert!(md.contains("| +0.700 | 0.200 | 0.000 | data |\n"), "{md}");
        assert!(
            md.contains(
                "| sparse: too few samples (support 3.3 of 15); no report near it was dropped |"
            ),
            "{md}"
        );
        // Row 0.30 has no sample; its cell at rest says what dropped its reports.
        assert!(
            md.contains("| prior: no samples; dropped near it: at rest 20 |"),
            "{md}"
        );
        assert!(
            md.contains("| prior: no samples; no report near it: the drive never held a pedal near this row at this speed |"),
            "{md}"
        );
        assert!(
            md.contains("## The brake map\n\nNot written: no usable brake samples"),
            "{md}"
        );
    }

    #[test]
    fn the_plot_is_an_svg_with_a_line_per_speed() {
        let s = samples();
        let f = fit(&AcceleratorMap::default().0, &s, &FitConfig::DEFAULT).unwrap();
        let svg = svg(&f.map, &s).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..40.min(svg.len())]);
        assert!(svg.contains("5.5 m/s"));
        assert!(svg.matches("<circle").count() >= 200);
    }
}
