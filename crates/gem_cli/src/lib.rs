//! `gemctl`'s reusable parts (the benchmarks plot with them too).
#![warn(missing_docs)]

pub mod plot;
