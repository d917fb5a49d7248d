//! What `gemctl calibrate pedals` writes beside the maps: a Markdown report (the filters'
//! counts, and per cell the data, the value and the error before and after) and an SVG
//! plot per map (acceleration against the pedal, one colour per speed column: the
//! samples as points, the fitted map as lines).

use crate::pedals::{pedal_name, Extracted, Fitted, Origin, Sample};
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
            "\nThe speed report is quantised to {q:.4} m/s ({:.2} km/h): accelerations are slopes over 2 s windows.",
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
            Ok(f) => cells(&mut s, f),
        }
    }
    s
}

fn cells(s: &mut String, f: &Fitted) {
    let _ = writeln!(
        s,
        "{} samples. RMS error of the samples: {:.3} m/s² with the starting map, {:.3} m/s² with the fitted map. {} of {} cells fitted to data; the others keep the starting map (\"prior\"), or move with their fitted neighbours where the map's order demands it (\"prior, moved\").\n",
        f.samples,
        f.rmse_before,
        f.rmse_after,
        f.covered().count(),
        f.cells.len()
    );
    s.push_str("| pedal | speed, m/s | samples | support | start, m/s² | fitted, m/s² | RMS before | RMS after | from |\n|---|---|---|---|---|---|---|---|---|\n");
    let rms = |r: Option<f64>| r.map_or_else(|| "-".to_owned(), |v| format!("{v:.3}"));
    for c in &f.cells {
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
            match c.origin {
                Origin::Fitted => "data",
                Origin::Prior => "prior: too little data",
                Origin::PriorMoved => "prior, moved: too little data",
            }
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
    use crate::pedals::{fit, FitConfig};
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
            dropped: vec![("jerk", 3)],
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
        assert!(md.contains("prior: too little data"), "{md}");
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
