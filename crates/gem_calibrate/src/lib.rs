//! Calibration of the GEM e2 from drives, without ROS: samples in, fitted tables out.
//!
//! - [`actuator`]: the steering motor's rate, lag and dead time and the pedals' delays,
//!   measured in an identification drive;
//! - [`pedals`]: the accelerator and brake maps (`pacmod_bridge`'s CSV layout) from the
//!   speed and the pedals of calibration runs or of ordinary driving;
//! - [`collect`]: the calibration runs a drive asks `pacmod_bridge` for;
//! - [`pedal_report`]: the fit's report and plots;
//! - [`steering`]: the steering relation and the steering offset from circles and
//!   straight driving.
//!
//! `gemctl calibrate` reads the bags and writes the files; every decision about which
//! samples count and how a table is fitted is here, with its tests.

pub mod actuator;
pub mod collect;
pub mod pedal_report;
pub mod pedals;
pub mod steering;
