//! `gemctl`: the suite's command-line tool. `main` only parses and dispatches; each
//! subcommand lives in its own module.

mod bag;
mod calibrate;
mod demo;
mod operator;
mod profile;
mod record_route;
mod replay;
mod status;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "gemctl", version, about = "GEM e2 suite command-line tool")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// The suite's status (what the RViz overlay shows), refreshing in place.
    Status(status::Args),
    /// ROS 1 bags: info, CSV export.
    #[command(subcommand)]
    Bag(bag::Command),
    /// Fit the pedal maps or the steering relation from drives (and drive them).
    #[command(subcommand)]
    Calibrate(calibrate::Command),
    /// Record the route a person drives as a waypoint file for the task planner.
    RecordRoute(record_route::Args),
    /// Play a bag in lockstep with its consumers (or in real time with --rate).
    Replay(replay::Args),
    /// Drive the demo of a running headless suite: faults mid-lap, summary, plot.
    Demo(demo::Args),
    /// The operator station's heartbeat link to the car (run on the operator's computer).
    Operator(operator::Args),
    /// Measure fault and recovery latencies of every failure type, with a report.
    Profile(profile::Args),
}

fn main() -> std::process::ExitCode {
    // ROS's special arguments (`__ns:=/car`, `__name:=…`, `__log:=…`) are the node's, read
    // when it starts; they are not the command line's. Other `a:=b` words stay: they can
    // be option values (`--launch-arg waypoints:=…`).
    let args = std::env::args().filter(|a| !(a.starts_with("__") && a.contains(":=")));
    let result = match Cli::parse_from(args).command {
        Command::Status(args) => status::run(&args),
        Command::Demo(args) => demo::run(&args),
        Command::Bag(cmd) => bag::run(&cmd),
        Command::Replay(args) => replay::run(&args),
        Command::RecordRoute(args) => record_route::run(&args),
        Command::Calibrate(cmd) => calibrate::run(&cmd),
        Command::Profile(args) => profile::run(&args),
        Command::Operator(args) => operator::run(&args),
    };
    gem_ros::node::shutdown();
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gemctl: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
