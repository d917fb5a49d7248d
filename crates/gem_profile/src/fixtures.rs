//! Synthetic runs for the tests of what reads them (the report here, the figures in
//! `gem_plot`, with the `fixtures` feature).

use crate::{Direction, Link, RunRecord, Stamp};
use gem_core::faults::FaultKind;
use gem_core::time::Time;

/// A complete run of round `index` whose chain starts at wall `10 × index` s and whose
/// links come `step_ms` apart (sim time standing still).
pub fn evenly_spaced(
    kind: FaultKind,
    direction: Direction,
    index: usize,
    step_ms: f64,
) -> RunRecord {
    let wall_s = |i: u32| 10.0 * index as f64 + step_ms * 1e-3 * f64::from(i);
    let at: Vec<(Link, Stamp)> = (direction.links().iter().zip(0..))
        .map(|(&link, i)| {
            (
                link,
                Stamp {
                    wall_s: wall_s(i),
                    sim: Time::ZERO,
                },
            )
        })
        .collect();
    RunRecord::new(kind, direction, index, None, &at)
}
