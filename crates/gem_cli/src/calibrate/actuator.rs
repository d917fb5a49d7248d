//! `gemctl calibrate actuator BAG... --out DIR`: the steering motor's top rate each way,
//! lag and dead time, and the pedals' command-to-report delays, fitted from bags of an
//! identification drive (`gem_calibrate::actuator` plans the drive and fits), written as a
//! rosparam YAML for `pacmod_bridge`, the controller and `gem_sim`, a report and step
//! plots. With `--collect`, the drive runs first through `pacmod_bridge`'s `~calibrate`
//! service while `rosbag record` records it, and the bag is fitted.

use super::args::CommonArgs;
use super::drive::topic;
use crate::bag::{stamps_usable, Numbers};
use anyhow::{Context, Result};
use gem_calibrate::actuator::{
    fit, markdown, plan, step_plots_svg, ActuatorFit, Data, PedalSeries, PlanConfig,
};
use gem_core::names;
use gem_core::pacmod::bridge::BridgeConfig;
use gem_core::vehicle::identify::{Command, IdentifyConfig, Motor, Reading, Stretch};
use gem_nodes::calibration_file::{motor_params, motor_yaml};
use std::fmt::Write as _;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    common: CommonArgs,
    /// The steering wheel's rate the car is configured with now, rad/s (the report's
    /// "before"): `pacmod_bridge`'s `~steering_rate_rad_s`.
    #[arg(long, default_value_t = BridgeConfig::DEFAULT.steering_rate_rad_s)]
    configured_rate: f64,
    /// The steering's lag the car is configured with now, s.
    #[arg(long, default_value_t = BridgeConfig::DEFAULT.steering_lag_s)]
    configured_lag: f64,
    /// The steering's dead time the car is configured with now, s.
    #[arg(long, default_value_t = BridgeConfig::DEFAULT.steering_dead_time_s)]
    configured_dead_time: f64,
    /// --collect: the walking speed of the steps while moving, m/s.
    #[arg(long, default_value_t = PlanConfig::default().walking_mps)]
    walking_mps: f64,
}

/// A report gap longer than this splits the data into stretches, s.
const MAX_GAP_S: f64 = 0.5;
/// The step plots' panels, at most.
const MAX_PANELS: usize = 18;

pub fn run(args: &Args) -> Result<()> {
    if args.common.collecting()? {
        let bag = collect(args)?;
        return fit_bags(args, std::slice::from_ref(&bag)).with_context(|| {
            format!(
                "the drive is kept in {}: fit it with others: gemctl calibrate actuator {} OTHER.bag --out {}",
                bag.display(),
                bag.display(),
                args.common.out.display()
            )
        });
    }
    fit_bags(args, &args.common.bags)
}

fn collect(args: &Args) -> Result<PathBuf> {
    anyhow::ensure!(
        args.walking_mps.is_finite() && args.walking_mps > 0.0 && args.walking_mps <= 3.0,
        "--walking-mps must be within (0, 3]: {}",
        args.walking_mps
    );
    let cfg = PlanConfig {
        walking_mps: args.walking_mps,
        ..PlanConfig::default()
    };
    let plan = plan(&cfg);
    let pause = |i: usize, step: &gem_calibrate::collect::Step| {
        (args.common.drive.pause && step.start == gem_calibrate::collect::Start::AtRest).then(
            || {
                format!(
                    "run {} of {}: {}",
                    i + 1,
                    plan.len(),
                    super::drive::describe(&step.request)
                )
            },
        )
    };
    let bag = args.common.driving("actuator", &pause).run(&plan)?;
    println!("recorded {}", bag.display());
    Ok(bag)
}

fn fit_bags(args: &Args, bags: &[PathBuf]) -> Result<()> {
    let data = read(bags)?;
    let cfg = IdentifyConfig::default();
    let fitted = fit(&data, &cfg)?;
    let out = &args.common.out;
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let motor = fitted.steering.motor();
    let svg = step_plots_svg(&data.steering, &motor, &cfg, MAX_PANELS)
        .map_err(|e| anyhow::anyhow!("the step plots: {e}"))?;
    let configured = Motor {
        rate_left_rad_s: args.configured_rate,
        rate_right_rad_s: args.configured_rate,
        lag_s: args.configured_lag,
        dead_time_s: args.configured_dead_time,
    };
    let (yaml, report, plots) = (
        out.join("actuator.yaml"),
        out.join("actuator_report.md"),
        out.join("actuator_steps.svg"),
    );
    let mut text = markdown(&fitted, &configured, &["actuator_steps.svg".to_owned()]);
    let _ = writeln!(text, "\n## Data\n\n- bags: {}", list(bags));
    super::params::write_atomically(&plots, &svg)?;
    super::params::write_atomically(&report, &text)?;
    super::params::write_atomically(&yaml, &rosparam_yaml(&fitted, bags))?;
    let m = &fitted.steering;
    println!(
        "steering motor: top rate left {} rad/s, right {} rad/s, lag {} s, dead time {} s (residual RMS {:.4} rad)",
        m.rate_left, m.rate_right, m.lag, m.dead_time, m.residual_rms_rad
    );
    println!(
        "pedal delays: accelerator {} s, brake {} s",
        fitted.accelerator.delay, fitted.brake.delay
    );
    println!(
        "wrote {}, {} and {}",
        yaml.display(),
        report.display(),
        plots.display()
    );
    if let Some(file) = &args.common.params {
        for (node, values) in motor_params(&fitted.steering.motor()) {
            let values: Vec<(&str, serde_yaml::Value)> =
                values.into_iter().map(|(k, v)| (k, v.into())).collect();
            super::params::merge(file, node, &values)?;
        }
        println!("the figures set in {}", file.display());
    }
    Ok(())
}

fn list(bags: &[PathBuf]) -> String {
    bags.iter()
        .map(|b| b.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The figures as a rosparam YAML, keyed by the nodes' names in the suite's launch files
/// (`calibration:=FILE`).
fn rosparam_yaml(f: &ActuatorFit, bags: &[PathBuf]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# The steering motor measured by `gemctl calibrate actuator` from {}.",
        list(bags)
    );
    let _ = writeln!(
        s,
        "# Pedal delays (for reference; no node reads them): accelerator {} s, brake {} s.",
        f.accelerator.delay, f.brake.delay
    );
    let _ = writeln!(
        s,
        "# Launch with calibration:=THIS_FILE (docs/real-car.md#steering-motor)."
    );
    s.push_str(&motor_yaml(&f.steering.motor()));
    s
}

/// The drive's commands and reports from `bags`; a clear error for a missing topic.
fn read(bags: &[PathBuf]) -> Result<Data> {
    let t = |name: &str| topic(name);
    let (steer_cmd, steer_rpt) = (t(names::PACMOD_STEER_CMD), t(names::PACMOD_STEER_RPT));
    let (accel_cmd, accel_rpt) = (t(names::PACMOD_ACCEL_CMD), t(names::PACMOD_ACCEL_RPT));
    let (brake_cmd, brake_rpt) = (t(names::PACMOD_BRAKE_CMD), t(names::PACMOD_BRAKE_RPT));
    let wanted = [
        &steer_cmd, &steer_rpt, &accel_cmd, &accel_rpt, &brake_cmd, &brake_rpt,
    ];
    let mut topics =
        crate::bag::read_numbers(bags, &wanted.iter().map(|s| s.as_str()).collect::<Vec<_>>())?;
    let missing: Vec<&str> = wanted
        .iter()
        .filter(|w| topics.get(w.as_str()).is_none_or(|m| m.is_empty()))
        .map(|w| w.as_str())
        .collect();
    anyhow::ensure!(
        missing.is_empty(),
        "no {} in {}: record the drive with `rosbag record {}` (or drive it with --collect)",
        missing.join(", "),
        list(bags),
        wanted
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    );
    let mut take = |name: &str| topics.remove(name).unwrap_or_default();
    let series = [
        take(&steer_cmd),
        take(&steer_rpt),
        take(&accel_cmd),
        take(&accel_rpt),
        take(&brake_cmd),
        take(&brake_rpt),
    ];
    let stamped = series.iter().all(|s| stamps_usable(s));
    let time = |m: &Numbers| if stamped { m.time_s() } else { m.record_s };
    let field = |msgs: &[Numbers], topic: &str, name: &str| -> Result<Vec<(f64, f64)>> {
        msgs.iter()
            .map(|m| Ok((time(m), m.get(topic, name)?)))
            .collect()
    };
    let commands: Vec<Command> = series[0]
        .iter()
        .map(|m| {
            Ok(Command {
                t_s: time(m),
                angle_rad: m.get(&steer_cmd, "angular_position")?,
                rate_rad_s: m.get(&steer_cmd, "angular_velocity_limit")?,
            })
        })
        .collect::<Result<_>>()?;
    let reports: Vec<Reading> = field(&series[1], &steer_rpt, "output")?
        .into_iter()
        .map(|(t_s, angle_rad)| Reading { t_s, angle_rad })
        .collect();
    Ok(Data {
        steering: stretches(commands, reports),
        accelerator: PedalSeries {
            commands: field(&series[2], &accel_cmd, "f64_cmd")?,
            outputs: field(&series[3], &accel_rpt, "output")?,
        },
        brake: PedalSeries {
            commands: field(&series[4], &brake_cmd, "f64_cmd")?,
            outputs: field(&series[5], &brake_rpt, "output")?,
        },
    })
}

/// The reports cut at gaps longer than [`MAX_GAP_S`], each stretch with the commands of
/// its time (and the last one before it, the command in force at its start).
fn stretches(commands: Vec<Command>, reports: Vec<Reading>) -> Vec<Stretch> {
    let mut out: Vec<Stretch> = Vec::new();
    for r in reports {
        match out.last_mut() {
            Some(s) if s.reports.last().is_some_and(|p| r.t_s - p.t_s <= MAX_GAP_S) => {
                s.reports.push(r)
            }
            _ => out.push(Stretch {
                commands: Vec::new(),
                reports: vec![r],
            }),
        }
    }
    for s in &mut out {
        let (from, to) = (s.reports[0].t_s, s.reports[s.reports.len() - 1].t_s);
        let first = commands.partition_point(|c| c.t_s < from).saturating_sub(1);
        s.commands = commands[first..]
            .iter()
            .take_while(|c| c.t_s <= to)
            .copied()
            .collect();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gap_in_the_reports_splits_the_data_and_each_stretch_has_its_commands() {
        let c = |t_s: f64| Command {
            t_s,
            angle_rad: t_s,
            rate_rad_s: 6.0,
        };
        let r = |t_s: f64| Reading {
            t_s,
            angle_rad: 0.0,
        };
        let s = stretches(
            vec![c(0.5), c(1.5), c(3.5), c(9.0)],
            vec![r(1.0), r(1.4), r(1.8), r(3.0), r(3.3), r(3.6)],
        );
        assert_eq!(s.len(), 2);
        assert_eq!(
            s[0].commands.iter().map(|c| c.t_s).collect::<Vec<_>>(),
            [0.5, 1.5]
        );
        assert_eq!(
            s[1].commands.iter().map(|c| c.t_s).collect::<Vec<_>>(),
            [1.5, 3.5]
        );
    }

    /// The YAML is the motor's node mappings under comments naming the bags and the pedal
    /// delays.
    #[test]
    fn the_yaml_names_each_nodes_parameters() {
        use gem_calibrate::actuator::PedalDelay;
        use gem_core::vehicle::identify::{Estimate, MotorFit, Rate};
        let e = |value: f64| Estimate { value, sigma: 0.01 };
        let f = ActuatorFit {
            steering: MotorFit {
                rate_left: Rate::Measured(e(2.1)),
                rate_right: Rate::Measured(e(2.0)),
                lag: e(0.3),
                dead_time: e(0.2),
                residual_rms_rad: 0.01,
                reports_used: 100,
                reports_unusable: 0,
                steps: (4, 4),
            },
            accelerator: PedalDelay {
                delay: e(0.05),
                steps: 2,
            },
            brake: PedalDelay {
                delay: e(0.06),
                steps: 2,
            },
        };
        let yaml = rosparam_yaml(&f, &[PathBuf::from("drive.bag")]);
        let body: Vec<&str> = yaml.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(body.join("\n") + "\n", motor_yaml(&f.steering.motor()));
        assert!(
            yaml.contains("from drive.bag") && yaml.contains("brake 0.060"),
            "{yaml}"
        );
    }
}
