//! `gemctl calibrate pedals`: with `--collect`, drives the calibration runs of
//! `gem_calibrate::collect::pedal_plan` through `pacmod_bridge`'s `~calibrate` service
//! while `rosbag record` records the PACMod topics; with bags, fits the accelerator and
//! brake maps (`gem_calibrate::pedals`) and writes them, a report and a plot per map.

use super::args::CommonArgs;
use super::drive::topic;
use super::params::{self, write_atomically};
use crate::bag::{read_numbers, Numbers};
use anyhow::{anyhow, bail, ensure, Context};
use gem_calibrate::collect::{self, PlanConfig, Start};
use gem_calibrate::pedal_report;
use gem_calibrate::pedals::{self, Drive as Series, ExtractConfig, Extracted, FitConfig};
use gem_core::names;
use gem_core::pacmod::pedal_map::{AcceleratorMap, BrakeMap, Pedal, PedalMap};
use std::path::{Path, PathBuf};

/// `pacmod_bridge`'s map parameters (pinned to its table by a test below).
const BRIDGE_ACCELERATOR_MAP: &str = "accelerator_map_file";
const BRIDGE_BRAKE_MAP: &str = "brake_map_file";

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    common: CommonArgs,
    /// The starting accelerator map, CSV (default: the shipped one). Its grid is the
    /// fitted map's, and its rows are the fractions a drive holds.
    #[arg(long)]
    accelerator_map: Option<PathBuf>,
    /// The starting brake map, CSV (default: the shipped one).
    #[arg(long)]
    brake_map: Option<PathBuf>,
    /// Pedal-to-acceleration delay, s.
    #[arg(long, default_value_t = ExtractConfig::DEFAULT.delay_s)]
    delay_s: f64,
    /// Window of the speed's slope, s (for a quantised speed, as long as the acceleration
    /// needs to cross 5 steps of the report, up to twice this and at least 2 s).
    #[arg(long, default_value_t = ExtractConfig::DEFAULT.window_s)]
    window_s: f64,
    /// Largest steering wheel of a sample, rad.
    #[arg(long, default_value_t = ExtractConfig::DEFAULT.max_steering_wheel_rad)]
    max_steering_wheel_rad: f64,
    /// --collect: the highest speed of a run, m/s.
    #[arg(long, default_value_t = PlanConfig::DEFAULT.top_speed_mps)]
    top_speed_mps: f64,
    /// --collect: the longest run, m (the straight's usable length).
    #[arg(long, default_value_t = PlanConfig::DEFAULT.distance_m)]
    distance_m: f64,
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let (accelerator, brake) = priors(args)?;
    if args.common.collecting()? {
        return collect(args, &accelerator, &brake);
    }
    fit(args, &accelerator, &brake)
}

/// The starting maps: the files given, or the shipped ones.
fn priors(args: &Args) -> anyhow::Result<(PedalMap, PedalMap)> {
    let read = |p: &Option<PathBuf>, pedal: Pedal| -> anyhow::Result<PedalMap> {
        match p {
            None => Ok(match pedal {
                Pedal::Accelerator => AcceleratorMap::default().0,
                Pedal::Brake => BrakeMap::default().0,
            }),
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("cannot read {}", path.display()))?;
                PedalMap::parse(pedal, &text).map_err(|e| anyhow!("{}: {e}", path.display()))
            }
        }
    };
    Ok((
        read(&args.accelerator_map, Pedal::Accelerator)?,
        read(&args.brake_map, Pedal::Brake)?,
    ))
}

fn fit(args: &Args, accelerator: &PedalMap, brake: &PedalMap) -> anyhow::Result<()> {
    let cfg = ExtractConfig {
        delay_s: args.delay_s,
        window_s: args.window_s,
        max_steering_wheel_rad: args.max_steering_wheel_rad,
        ..ExtractConfig::DEFAULT
    };
    let mut all = Extracted::default();
    for bag in &args.common.bags {
        let drive = drive_of(bag)?;
        all.merge(pedals::extract(&drive, &cfg));
    }
    let fitted: Vec<(Pedal, Result<pedals::Fitted, String>)> = [accelerator, brake]
        .into_iter()
        .map(|prior| {
            (
                prior.pedal(),
                pedals::fit(prior, &all.samples, &FitConfig::DEFAULT).map_err(|e| e.to_string()),
            )
        })
        .collect();
    ensure!(
        fitted.iter().any(|(_, f)| f.is_ok()),
        "no map could be fitted: {}",
        fitted
            .iter()
            .filter_map(|(_, f)| f.as_ref().err().cloned())
            .collect::<Vec<_>>()
            .join("; ")
    );
    std::fs::create_dir_all(&args.common.out)
        .with_context(|| format!("cannot create {}", args.common.out.display()))?;
    for (pedal, f) in &fitted {
        let name = pedals::pedal_name(*pedal);
        match f {
            Ok(f) => {
                write_atomically(&args.common.out.join(format!("{name}_map.csv")), &f.csv)?;
                let svg = pedal_report::svg(&f.map, &all.samples)
                    .map_err(|e| anyhow!("the {name} plot: {e}"))?;
                write_atomically(&args.common.out.join(format!("{name}_map.svg")), &svg)?;
                println!(
                    "{name} map: {} samples, {}/{} cells fitted, RMS error {:.3} → {:.3} m/s² → {}",
                    f.samples,
                    f.covered().count(),
                    f.cells.len(),
                    f.rmse_before,
                    f.rmse_after,
                    args.common.out.join(format!("{name}_map.csv")).display()
                );
            }
            Err(why) => eprintln!("{name} map not written: {why}"),
        }
    }
    let outcomes: Vec<pedal_report::Outcome<'_>> = fitted
        .iter()
        .map(|(p, f)| (*p, f.as_ref().map_err(Clone::clone)))
        .collect();
    write_atomically(
        &args.common.out.join("report.md"),
        &pedal_report::markdown(&all, &outcomes),
    )?;
    println!(
        "{} speed reports, {} samples; report: {}",
        all.reports,
        all.samples.len(),
        args.common.out.join("report.md").display()
    );
    if let Some(file) = &args.common.params {
        let dir = std::fs::canonicalize(&args.common.out)
            .with_context(|| format!("cannot resolve {}", args.common.out.display()))?;
        let values: Vec<(&str, serde_yaml::Value)> = fitted
            .iter()
            .filter(|(_, f)| f.is_ok())
            .map(|(pedal, _)| {
                let (param, name) = match pedal {
                    Pedal::Accelerator => (BRIDGE_ACCELERATOR_MAP, "accelerator_map.csv"),
                    Pedal::Brake => (BRIDGE_BRAKE_MAP, "brake_map.csv"),
                };
                (param, dir.join(name).display().to_string().into())
            })
            .collect();
        params::merge(file, "pacmod_bridge", &values)?;
        println!("pacmod_bridge's map files set in {}", file.display());
    }
    Ok(())
}

/// One bag's series. The pedals are the reported outputs when the bag has them, else the
/// commands; a bag without the speed or the pedals is refused, naming what is missing.
fn drive_of(bag: &Path) -> anyhow::Result<Series> {
    let speed = topic(names::PACMOD_VEHICLE_SPEED);
    let steer = topic(names::PACMOD_STEER_RPT);
    let (accel_rpt, brake_rpt) = (
        topic(names::PACMOD_ACCEL_RPT),
        topic(names::PACMOD_BRAKE_RPT),
    );
    let (accel_cmd, brake_cmd) = (
        topic(names::PACMOD_ACCEL_CMD),
        topic(names::PACMOD_BRAKE_CMD),
    );
    let wanted = [
        &speed, &steer, &accel_rpt, &brake_rpt, &accel_cmd, &brake_cmd,
    ];
    let topics: Vec<&str> = wanted.iter().map(|s| s.as_str()).collect();
    let data = read_numbers(&[bag.to_owned()], &topics)?;
    let series = |t: &str, field: &str| -> anyhow::Result<Option<Vec<(f64, f64)>>> {
        data.get(t)
            .map(|msgs| {
                msgs.iter()
                    .map(|m: &Numbers| Ok((m.time_s(), m.get(t, field)?)))
                    .collect::<anyhow::Result<Vec<_>>>()
            })
            .transpose()
    };
    let Some(speed_s) = series(&speed, "data")? else {
        bail!(
            "{} has no {speed} (std_msgs/Float64, m/s): record it with the pedals",
            bag.display()
        );
    };
    let pedal = |rpt: &str, cmd: &str| -> anyhow::Result<Vec<(f64, f64)>> {
        match series(rpt, "output")? {
            Some(s) => Ok(s),
            None => series(cmd, "f64_cmd")?.ok_or_else(|| {
                anyhow!(
                    "{} has neither {rpt} (pacmod_msgs/SystemRptFloat) nor {cmd} (pacmod_msgs/PacmodCmd)",
                    bag.display()
                )
            }),
        }
    };
    let accelerator = pedal(&accel_rpt, &accel_cmd)?;
    let brake = pedal(&brake_rpt, &brake_cmd)?;
    let steering_wheel = series(&steer, "output")?.unwrap_or_else(|| {
        eprintln!(
            "note: {} has no {steer}: samples are not filtered on the steering",
            bag.display()
        );
        Vec::new()
    });
    Ok(Series {
        speed: speed_s,
        accelerator,
        brake,
        steering_wheel,
    })
}

fn collect(args: &Args, accelerator: &PedalMap, brake: &PedalMap) -> anyhow::Result<()> {
    let plan = collect::pedal_plan(
        accelerator,
        brake,
        &PlanConfig {
            top_speed_mps: args.top_speed_mps,
            distance_m: args.distance_m,
            ..PlanConfig::DEFAULT
        },
    );
    let pause = |i: usize, step: &collect::Step| {
        (args.common.drive.pause && step.start == Start::AtRest).then(|| {
            format!(
                "run {}/{}: {}",
                i + 1,
                plan.len(),
                super::drive::describe(&step.request)
            )
        })
    };
    let bag = args.common.driving("pedals", &pause).run(&plan)?;
    println!(
        "recorded {}; fit it with: gemctl calibrate pedals {} --out {}",
        bag.display(),
        bag.display(),
        args.common.out.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_map_parameters_are_the_bridges() {
        let names: Vec<&str> = gem_nodes::pacmod_bridge::PARAMS
            .iter()
            .map(|p| p.name)
            .collect();
        assert!(names.contains(&BRIDGE_ACCELERATOR_MAP), "{names:?}");
        assert!(names.contains(&BRIDGE_BRAKE_MAP), "{names:?}");
    }
}
