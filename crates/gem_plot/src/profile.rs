//! The fault-latency profile's two figures (`gemctl profile`): box plots of the fault
//! chains' key latencies per failure type, and each chain's links as bars from their
//! cause's median to their own.

use crate::{legend, PlotResult};
use gem_core::faults::FaultKind;
use gem_profile::{link_samples, Direction, Link, LinkStats, RunRecord};
use plotters::prelude::*;
use std::path::Path;

/// Box plots (Tukey whiskers) of fault → ERROR and fault → braking command per failure type.
pub fn latency_boxplot(file: &Path, runs: &[RunRecord], kinds: &[FaultKind]) -> PlotResult {
    let root = SVGBackend::new(file, (900, 480)).into_drawing_area();
    root.fill(&WHITE)?;
    let names: Vec<String> = kinds.iter().map(|k| k.name().to_string()).collect();
    let series = [
        (Link::SystemError, BLUE, -14),
        (Link::BrakingCommand, RED, 14),
    ];
    let mut ymax = 0.5f32;
    let mut boxes = Vec::new();
    for (i, kind) in kinds.iter().enumerate() {
        for (link, color, offset) in series {
            let v = link_samples(runs, &[*kind], Direction::Fault, link);
            if v.is_empty() {
                continue;
            }
            let q = Quartiles::new(&v);
            ymax = ymax.max(q.values()[4]);
            boxes.push((i, q, color, offset));
        }
    }
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "fault onset → /system_state ERROR (blue) and → braking command (red), wall ms",
            ("sans-serif", 16),
        )
        .margin(12)
        .x_label_area_size(35)
        .y_label_area_size(50)
        .build_cartesian_2d(names[..].into_segmented(), 0f32..ymax * 1.15)?;
    chart
        .configure_mesh()
        .y_desc("ms (wall)")
        .x_desc("failure type")
        .draw()?;
    chart.draw_series(boxes.iter().map(|(i, q, color, offset)| {
        Boxplot::new_vertical(SegmentValue::CenterOf(&names[*i]), q)
            .width(20)
            .whisker_width(0.6)
            .style(*color)
            .offset(*offset)
    }))?;
    root.present()?;
    Ok(())
}

/// Per failure type and direction, each link as a bar from its cause's median to its own
/// median (wall ms since the chain's start).
pub fn chain_breakdown(file: &Path, stats: &[LinkStats], kinds: &[FaultKind]) -> PlotResult {
    let root = SVGBackend::new(file, (1100, 120 + 90 * kinds.len() as u32)).into_drawing_area();
    root.fill(&WHITE)?;
    let panels = root.split_evenly((1, 2));
    for (panel, direction) in panels.iter().zip([Direction::Fault, Direction::Recovery]) {
        let mine: Vec<&LinkStats> = stats.iter().filter(|s| s.direction == direction).collect();
        let xmax = mine.iter().fold(0.1f64, |m, s| m.max(s.wall_ms[0])) * 1.1;
        let links = direction.links();
        let mut chart = ChartBuilder::on(panel)
            .caption(
                format!(
                    "{} chain: median ms since its start (wall)",
                    direction.name()
                ),
                ("sans-serif", 15),
            )
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(130)
            .build_cartesian_2d(0.0..xmax, 0.0..kinds.len() as f64)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(kinds.len() * 2 + 1)
            .y_label_formatter(&|y| {
                let row = y.floor() as usize;
                if (y - y.floor() - 0.5).abs() < 0.26 && row < kinds.len() {
                    kinds[kinds.len() - 1 - row].name().to_string()
                } else {
                    String::new()
                }
            })
            .x_desc("ms")
            .draw()?;
        for (li, link) in links.iter().enumerate().skip(1) {
            let color = Palette99::pick(li).to_rgba();
            let h = 0.8 / links.len() as f64;
            let bars: Vec<Rectangle<(f64, f64)>> = kinds
                .iter()
                .enumerate()
                .filter_map(|(row, kind)| {
                    let me = mine.iter().find(|s| s.kind == *kind && s.link == *link)?;
                    let from = link
                        .cause()
                        .and_then(|c| mine.iter().find(|s| s.kind == *kind && s.link == c))
                        .map_or(0.0, |c| c.wall_ms[0]);
                    let y = (kinds.len() - 1 - row) as f64 + 0.1 + h * li as f64;
                    Some(Rectangle::new(
                        [(from, y), (me.wall_ms[0], y + h * 0.8)],
                        color.filled(),
                    ))
                })
                .collect();
            chart
                .draw_series(bars)?
                .label(link.label())
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 4), (x + 12, y + 4)], color.filled())
                });
        }
        legend(&mut chart, SeriesLabelPosition::LowerRight, 0.85)?;
    }
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use gem_profile::fixtures::evenly_spaced;
    use gem_profile::link_stats;

    #[test]
    fn both_figures_are_drawn_for_every_failure_type() {
        let kinds = [FaultKind::Estop, FaultKind::Battery];
        let runs: Vec<RunRecord> = kinds
            .iter()
            .flat_map(|&k| {
                (0..3).flat_map(move |i| {
                    [Direction::Fault, Direction::Recovery].map(|d| evenly_spaced(k, d, i, 0.5))
                })
            })
            .collect();
        let dir = std::env::temp_dir().join(format!("gem_plot_profile_{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (boxes, bars) = (dir.join("boxplot.svg"), dir.join("breakdown.svg"));
        latency_boxplot(&boxes, &runs, &kinds).unwrap();
        chain_breakdown(&bars, &link_stats(&runs), &kinds).unwrap();
        let boxes = std::fs::read_to_string(boxes).unwrap();
        let bars = std::fs::read_to_string(bars).unwrap();
        for name in ["estop", "battery"] {
            assert!(boxes.contains(name), "{name} in the box plots");
            assert!(bars.contains(&format!("\n{name}\n</text>")), "{name}'s row");
        }
        assert!(bars.contains("fault chain: median ms since its start (wall)"));
        assert!(bars.contains("\ngoal PREEMPTED\n</text>"), "the legend");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
