//! One SVG figure of a tracking run: the path and the driven trajectory on a map (with
//! labelled marks, e.g. where faults were injected), and the cross-track error over the
//! distance driven. Used by `gemctl demo` and by `gem_bench track`.

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
}

/// Writes `p` to `file` (SVG, 1200×520).
pub fn write_svg(file: &Path, p: &TrackPlot) -> Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::new(file, (1200, 520)).into_drawing_area();
    root.fill(&WHITE)?;
    let (left, right) = root.split_horizontally(560);
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
    map.configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    let dmax = p.cross_track.last().map_or(1.0, |c| c.0).max(1.0);
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
