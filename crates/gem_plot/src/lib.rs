//! SVG figures of the GEM e2 suite, drawn with plotters: a tracking run (path, trajectory,
//! cross-track error, speed; `gemctl demo` and `gem_bench track`) and the fault-latency
//! profile's box plots and chain breakdown (`gemctl profile`).
#![warn(missing_docs)]

mod profile;
mod track;

pub use profile::{chain_breakdown, latency_boxplot};
pub use track::{write_svg, SpeedProfile, TrackPlot};

use plotters::coord::CoordTranslate;
use plotters::prelude::*;

/// What drawing a figure returns: any error of the backend or of the file.
pub type PlotResult = Result<(), Box<dyn std::error::Error>>;

/// The series legend of `chart` at `position`, framed, on a white background of
/// `opacity`.
fn legend<'a, DB, CT>(
    chart: &mut ChartContext<'a, DB, CT>,
    position: SeriesLabelPosition,
    opacity: f64,
) -> PlotResult
where
    DB: DrawingBackend + 'a,
    DB::ErrorType: 'static,
    CT: CoordTranslate,
{
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(opacity))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}
