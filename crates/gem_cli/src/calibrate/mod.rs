//! `gemctl calibrate actuator|pedals|steering`: the car's steering motor and pedal
//! delays, pedal maps and steering relation fitted from drives. The fitting is `gem_calibrate`'s; this module reads the bags, drives the
//! calibration runs through `pacmod_bridge` (`--collect`) and writes the files.

mod actuator;
mod args;
mod drive;
mod params;
mod pedals;
mod steering;

#[derive(clap::Subcommand)]
pub enum Command {
    /// The steering motor's top rate each way, lag and dead time, and the pedals'
    /// command-to-report delays: drive the identification runs (`--collect`), or fit them
    /// from bags holding the PACMod's steering, accelerator and brake commands and reports.
    Actuator(actuator::Args),
    /// The accelerator and brake maps: drive calibration runs (`--collect`), or fit the
    /// maps from bags of such runs or of ordinary driving.
    Pedals(pedals::Args),
    /// The steering relation and offset: drive circles (`--collect`), or fit them from bags
    /// of circles and straight driving holding `/pacmod/parsed_tx/steer_rpt` and
    /// `/novatel/inspva` (`rosbag record /pacmod/parsed_tx/steer_rpt /novatel/inspva`).
    Steering(steering::Args),
}

pub fn run(cmd: &Command) -> anyhow::Result<()> {
    match cmd {
        Command::Actuator(args) => actuator::run(args),
        Command::Pedals(args) => pedals::run(args),
        Command::Steering(args) => steering::run(args),
    }
}
