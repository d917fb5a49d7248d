//! The GEM e2 as a kinematic bicycle, and the pacing of a simulator stepping it, for the
//! simulator node and the benchmarks.

pub mod kinematic;
pub mod pacing;
