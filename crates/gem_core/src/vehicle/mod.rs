//! The GEM e2 as a kinematic bicycle, for the simulator node and the benchmarks.

pub mod kinematic;
