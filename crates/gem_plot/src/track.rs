//! One SVG figure of a tracking run: the path and the driven trajectory on a map (with
//! labelled marks, e.g. where faults were injected), the cross-track error over the
//! distance driven and, when given, the commanded and actual speed over the same distance
//! with the stops shaded. Used by `gemctl demo` and by `gem_bench track`.

use crate::{legend, PlotResult};
use plotters::prelude::*;
use std::path::Path;

/// What to draw.
pub struct TrackPlot<'a> {
    /// Title of the map.
    pub caption: String,
    /// The reference path, (x, y) in metres.
    pub path: &'a [(f64, f64)],
    /// The driven trajectory, (x, y).
    pub driven: &'a [(f64, f64)],
    /// (distance driven, cross-track error), metres.
    pub cross_track: &'a [(f64, f64)],
    /// Labelled points on the map.
    pub marks: &'a [(String, (f64, f64))],
    /// The speed panel, if any.
    pub speed: Option<SpeedProfile<'a>>,
}

/// Speeds along the distance driven, m and m/s.
pub struct SpeedProfile<'a> {
    /// (distance driven, commanded speed).
    pub commanded: &'a [(f64, f64)],
    /// (distance driven, the car's speed).
    pub actual: &'a [(f64, f64)],
    /// Stops, shaded: (label, distance where the stop began, distance at rest).
    pub stops: &'a [(String, f64, f64)],
}

/// Writes `p` to `file` (SVG, 1200×520; 1200×820 with the speed panel, which spans the
/// width below the map and the cross-track error).
pub fn write_svg(file: &Path, p: &TrackPlot) -> PlotResult {
    const TOP: u32 = 520;
    let height = if p.speed.is_some() { TOP + 300 } else { TOP };
    let root = SVGBackend::new(file, (1200, height)).into_drawing_area();
    root.fill(&WHITE)?;
    let (top, bottom) = root.split_vertically(TOP);
    if let Some(speed) = &p.speed {
        speed_panel(&bottom, speed, distance_span(p))?;
    }
    let (left, right) = top.split_horizontally(560);
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for &(x, y) in p.path.iter().chain(p.driven) {
        (x0, x1, y0, y1) = (x0.min(x), x1.max(x), y0.min(y), y1.max(y));
    }
    let span = (x1 - x0).max(y1 - y0) * 0.55 + 1.0;
    let (cx, cy) = ((x0 + x1) / 2.0, (y0 + y1) / 2.0);
    let mut map = ChartBuilder::on(&left)
        .caption(&p.caption, ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(40)
        .build_cartesian_2d(cx - span..cx + span, cy - span..cy + span)?;
    map.configure_mesh()
        .x_desc("x (m)")
        .y_desc("y (m)")
        .draw()?;
    map.draw_series(LineSeries::new(
        p.path.iter().copied(),
        BLACK.mix(0.5).stroke_width(2),
    ))?
    .label("path")
    .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 15, y)], BLACK.mix(0.5)));
    map.draw_series(LineSeries::new(
        p.driven.iter().copied(),
        BLUE.stroke_width(1),
    ))?
    .label("driven (rear axle)")
    .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 15, y)], BLUE));
    map.draw_series(p.marks.iter().map(|(label, at)| {
        EmptyElement::at(*at)
            + Circle::new((0, 0), 5, RED.filled())
            + Text::new(label.clone(), (8, -6), ("sans-serif", 13).into_font())
    }))?;
    legend(&mut map, SeriesLabelPosition::UpperLeft, 0.8)?;
    let dmax = distance_span(p);
    let emax = p
        .cross_track
        .iter()
        .fold(0.1f64, |m, c| m.max(c.1.abs()))
        .min(5.0);
    let mut err = ChartBuilder::on(&right)
        .caption("cross-track error", ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(50)
        .build_cartesian_2d(0.0..dmax, -emax * 1.1..emax * 1.1)?;
    err.configure_mesh()
        .x_desc("distance driven (m)")
        .y_desc("error (m, + left)")
        .draw()?;
    err.draw_series(LineSeries::new(
        p.cross_track.iter().map(|c| (c.0, c.1.clamp(-emax, emax))),
        RED,
    ))?;
    root.present()?;
    Ok(())
}

/// The distance axis's end, m.
fn distance_span(p: &TrackPlot) -> f64 {
    p.cross_track.last().map_or(1.0, |c| c.0).max(1.0)
}

fn speed_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    s: &SpeedProfile,
    dmax: f64,
) -> PlotResult
where
    DB::ErrorType: 'static,
{
    let vmax = s
        .commanded
        .iter()
        .chain(s.actual)
        .fold(1.0f64, |m, c| m.max(c.1))
        * 1.15;
    let mut chart = ChartBuilder::on(area)
        .caption("speed", ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(50)
        .build_cartesian_2d(0.0..dmax, 0.0..vmax)?;
    chart
        .configure_mesh()
        .x_desc("distance driven (m)")
        .y_desc("speed (m/s)")
        .draw()?;
    chart.draw_series(s.stops.iter().map(|(_, from, to)| {
        let to = to.max(from + dmax * 0.002);
        Rectangle::new([(*from, 0.0), (to, vmax)], RED.mix(0.15).filled())
    }))?;
    chart.draw_series(s.stops.iter().map(|(label, from, _)| {
        EmptyElement::at((*from, vmax))
            + Text::new(label.clone(), (3, 3), ("sans-serif", 12).into_font())
    }))?;
    chart
        .draw_series(LineSeries::new(
            s.actual.iter().copied(),
            BLUE.mix(0.6).stroke_width(3),
        ))?
        .label("actual (rear axle)")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 15, y)], BLUE.stroke_width(3)));
    chart
        .draw_series(LineSeries::new(s.commanded.iter().copied(), BLACK))?
        .label("commanded")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 15, y)], BLACK));
    legend(&mut chart, SeriesLabelPosition::LowerRight, 0.8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_speed_panel_is_drawn_below_when_given() {
        let line: Vec<(f64, f64)> = (0..50).map(|i| (f64::from(i), 0.0)).collect();
        let speeds: Vec<(f64, f64)> = (0..50).map(|i| (f64::from(i), 2.8)).collect();
        let stops = [("e-stop".to_string(), 20.0, 21.0)];
        let dir = std::env::temp_dir().join(format!("gem_plot_{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for (speed, height, panels) in [(false, "520", 2), (true, "820", 3)] {
            let file = dir.join(format!("speed_{speed}.svg"));
            let p = TrackPlot {
                caption: "test".into(),
                path: &line,
                driven: &line,
                cross_track: &line,
                marks: &[],
                speed: speed.then_some(SpeedProfile {
                    commanded: &speeds,
                    actual: &speeds,
                    stops: &stops,
                }),
            };
            write_svg(&file, &p).unwrap();
            let svg = std::fs::read_to_string(&file).unwrap();
            assert!(svg.contains(&format!("height=\"{height}\"")), "{height}");
            let captions = ["test", "cross-track error", "speed"]
                .iter()
                .filter(|c| svg.contains(&format!("\n{c}\n</text>")))
                .count();
            assert_eq!(captions, panels);
            assert_eq!(svg.contains("\ne-stop\n</text>"), speed);
        }
    }
}
