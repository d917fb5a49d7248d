//! `gemctl calibrate steering BAG... --out DIR`: the steering relation and offset fitted
//! from bags of circles and straight driving (`gem_calibrate::steering` decides which
//! samples count and fits), written as a rosparam YAML for `pacmod_bridge` and `gem_sim`
//! and a report. With `--collect`, the circles are driven first through `pacmod_bridge`'s
//! `~calibrate` service (`gem_calibrate::steering::circle_plan`) while `rosbag record`
//! records them, and the bag is fitted.

use super::args::CommonArgs;
use super::drive::topic;
use super::params::param_name;
use anyhow::{bail, ensure, Context};
use gem_calibrate::collect;
use gem_calibrate::steering::{
    circle_plan, fit, samples_from_ins, CirclePlanConfig, FitConfig, InsSample, SampleConfig,
    SteeringFit,
};
use gem_core::field;
use gem_core::gnss::pose::InsPoseConfig;
use gem_core::names;
use gem_core::pacmod::steering::SteeringRelation;
use gem_ros::params::ParamSpec;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::bag::{stamps_usable, Numbers};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    common: CommonArgs,
    /// How far the INS antenna (the point its solution describes) sits ahead of the rear
    /// axle, m: `gnss_pose`'s `~antenna_ahead_m`.
    #[arg(long, default_value_t = InsPoseConfig::DEFAULT.antenna_ahead_m)]
    antenna_ahead_m: f64,
    /// --collect: the circles' front-wheel angles, degrees, each driven left and right
    /// (through the relation the car has now, the shipped one by default).
    #[arg(long, value_delimiter = ',', default_values_t = CirclePlanConfig::default().angles_deg)]
    angles_deg: Vec<f64>,
    /// --collect: the speed held, m/s.
    #[arg(long, default_value_t = CirclePlanConfig::default().speed_mps)]
    speed_mps: f64,
    /// --collect: how long each circle is held, s.
    #[arg(long, default_value_t = CirclePlanConfig::default().circle_s)]
    circle_s: f64,
    /// --collect: the straight driving before each circle, s.
    #[arg(long, default_value_t = CirclePlanConfig::default().straight_s)]
    straight_s: f64,
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    if !args.antenna_ahead_m.is_finite() {
        bail!(
            "--antenna-ahead-m must be a number, not {}",
            args.antenna_ahead_m
        );
    }
    if args.common.collecting()? {
        let bag = collect(args)?;
        return fit_bags(args, std::slice::from_ref(&bag)).with_context(|| {
            format!(
                "the drive is kept in {}: drive more circles, or fit it with others: gemctl calibrate steering {} OTHER.bag --out {}",
                bag.display(),
                bag.display(),
                args.common.out.display()
            )
        });
    }
    fit_bags(args, &args.common.bags)
}

/// Fits `bags` and writes the YAML and the report.
fn fit_bags(args: &Args, bags: &[PathBuf]) -> anyhow::Result<()> {
    let data = read(bags)?;
    let cfg = SampleConfig {
        antenna_ahead_m: args.antenna_ahead_m,
        ..SampleConfig::DEFAULT
    };
    let samples = samples_from_ins(&data.wheel, &data.ins, &cfg);
    let fitted = fit(&samples, &FitConfig::DEFAULT)
        .context("no steering relation fitted, nothing written")?;
    std::fs::create_dir_all(&args.common.out)
        .with_context(|| format!("cannot create {}", args.common.out.display()))?;
    let yaml = args.common.out.join("steering.yaml");
    let report = args.common.out.join("steering_report.md");
    write(&yaml, &rosparam_yaml(&fitted.relation, bags))?;
    write(&report, &report_markdown(&fitted, &data, bags, args))?;
    let r = fitted.relation;
    println!(
        "steering relation: quadratic {:.5} °/°², linear {:.4} °/°, offset {:.3}° ({} of {} samples, residual RMS {:.3}°)",
        r.quadratic_deg, r.linear, r.offset_deg, fitted.used, fitted.total, fitted.residual_rms_deg
    );
    println!(
        "the relation before misses by up to {:.2}° of front wheel within ±25°",
        fitted.start_error_deg
    );
    println!("wrote {} and {}", yaml.display(), report.display());
    if let Some(file) = &args.common.params {
        for (node, values) in node_params(&fitted.relation) {
            let values: Vec<(&str, serde_yaml::Value)> =
                values.into_iter().map(|(k, v)| (k, v.into())).collect();
            super::params::merge(file, node, &values)?;
        }
        println!("the relation set in {}", file.display());
    }
    Ok(())
}

fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

/// The two series of the bags, on one clock.
struct Data {
    /// The steering reports, `(s, rad)`.
    wheel: Vec<(f64, f64)>,
    /// The INS solutions.
    ins: Vec<InsSample>,
    /// Whether the times are the messages' header stamps (else the record times).
    stamped: bool,
}

/// The steering reports and INS solutions of `bags`; a clear error when a topic or a
/// field is missing.
fn read(bags: &[PathBuf]) -> anyhow::Result<Data> {
    // The steering report (`pacmod_msgs/SystemRptFloat`: `output`, the steering wheel, rad)
    // and the GNSS/INS solution (`novatel_gps_msgs/Inspva`: `azimuth`, degrees clockwise
    // from north, `north_velocity`, `east_velocity`, m/s), as the car's drivers name them.
    let (steer_topic, ins_topic) = (topic(names::PACMOD_STEER_RPT), topic(names::INSPVA));
    let mut topics = crate::bag::read_numbers(bags, &[&steer_topic, &ins_topic])?;
    let mut take = |topic: &str, what: &str| {
        topics
            .remove(topic)
            .filter(|m| !m.is_empty())
            .with_context(|| {
                format!(
                    "no {topic} in {} ({what}); record it with `rosbag record {steer_topic} {ins_topic}`",
                    list(bags)
                )
            })
    };
    let steer = take(
        &steer_topic,
        "the steering reports, pacmod_msgs/SystemRptFloat",
    )?;
    let ins = take(
        &ins_topic,
        "the GNSS/INS solutions, novatel_gps_msgs/Inspva",
    )?;
    let stamped = stamps_usable(&steer) && stamps_usable(&ins);
    let time = |m: &Numbers| if stamped { m.time_s() } else { m.record_s };
    let wheel = steer
        .iter()
        .map(|m| Ok((time(m), m.get(&steer_topic, "output")?)))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let ins = ins
        .iter()
        .map(|m| {
            Ok(InsSample {
                t_s: time(m),
                azimuth_deg: m.get(&ins_topic, "azimuth")?,
                north_velocity_mps: m.get(&ins_topic, "north_velocity")?,
                east_velocity_mps: m.get(&ins_topic, "east_velocity")?,
            })
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let mut data = Data {
        wheel,
        ins,
        stamped,
    };
    data.wheel.sort_by(|a, b| a.0.total_cmp(&b.0));
    data.ins.sort_by(|a, b| a.t_s.total_cmp(&b.t_s));
    Ok(data)
}

fn list(bags: &[PathBuf]) -> String {
    bags.iter()
        .map(|b| b.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The relation as a rosparam YAML: `pacmod_bridge`'s parameters under `pacmod_bridge`,
/// `gem_sim`'s (its simulated car) under `gem_sim`, the nodes' names in the suite's
/// launch files.
fn rosparam_yaml(r: &SteeringRelation, bags: &[PathBuf]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# The steering relation fitted by `gemctl calibrate steering` from {}.",
        list(bags)
    );
    let _ = writeln!(
        s,
        "# SW = l·t + q·t² (odd in t), t = f − offset, degrees (docs/real-car.md#steering-relation)."
    );
    let _ = writeln!(
        s,
        "# Load it before the nodes start: `rosparam load steering.yaml` (into a namespace:"
    );
    let _ = writeln!(
        s,
        "# `rosparam load steering.yaml /ns`), or in a launch file at the top level:"
    );
    let _ = writeln!(
        s,
        "# <rosparam command=\"load\" file=\"/path/to/steering.yaml\"/>"
    );
    for (node, values) in node_params(r) {
        let _ = writeln!(s, "{node}:");
        for (name, value) in values {
            let _ = writeln!(s, "  {name}: {value:.6}");
        }
    }
    s
}

/// The relation as each node's parameters: `pacmod_bridge`'s, and `gem_sim`'s (its
/// simulated car), named as their tables name them.
fn node_params(r: &SteeringRelation) -> [(&'static str, Vec<(&'static str, f64)>); 2] {
    let values = [
        (field!(SteeringRelation.quadratic_deg), r.quadratic_deg),
        (field!(SteeringRelation.linear), r.linear),
        (field!(SteeringRelation.offset_deg), r.offset_deg),
    ];
    let of = |table: &[ParamSpec]| -> Vec<(&'static str, f64)> {
        values
            .iter()
            .map(|&(field, v)| (param_name(table, field), v))
            .collect()
    };
    [
        (
            "pacmod_bridge",
            of(&gem_nodes::pacmod_bridge::params::PARAMS),
        ),
        ("gem_sim", of(&gem_nodes::sim::params::PARAMS)),
    ]
}

/// The fit's report with where its data came from.
fn report_markdown(fitted: &SteeringFit, data: &Data, bags: &[PathBuf], args: &Args) -> String {
    let mut s = fitted.report_markdown();
    let span = |t: &mut dyn Iterator<Item = f64>| {
        let v: Vec<f64> = t.collect();
        v.last().copied().unwrap_or(0.0) - v.first().copied().unwrap_or(0.0)
    };
    let _ = writeln!(s, "\n## Data\n");
    let _ = writeln!(s, "- bags: {}", list(bags));
    let _ = writeln!(
        s,
        "- `{}`: {} reports; `{}`: {} solutions over {:.0} s",
        topic(names::PACMOD_STEER_RPT),
        data.wheel.len(),
        topic(names::INSPVA),
        data.ins.len(),
        span(&mut data.ins.iter().map(|i| i.t_s))
    );
    let _ = writeln!(
        s,
        "- times: {}",
        if data.stamped {
            "the messages' header stamps"
        } else {
            "the record times (the header stamps are missing or on another clock)"
        }
    );
    let _ = writeln!(
        s,
        "- antenna {:.3} m ahead of the rear axle; wheelbase {:.2} m",
        args.antenna_ahead_m,
        FitConfig::DEFAULT.wheelbase_m
    );
    s
}

/// Drives the circles and records them; the bag.
fn collect(args: &Args) -> anyhow::Result<PathBuf> {
    let cfg = CirclePlanConfig {
        angles_deg: args.angles_deg.clone(),
        speed_mps: args.speed_mps,
        circle_s: args.circle_s,
        straight_s: args.straight_s,
    };
    ensure!(
        cfg.angles_deg
            .iter()
            .all(|a| a.is_finite() && *a > 0.0 && *a <= 30.0),
        "--angles-deg must be within (0, 30]: {:?}",
        cfg.angles_deg
    );
    let plan = circle_plan(&FitConfig::DEFAULT.start, &cfg);
    let pause = |i: usize, step: &collect::Step| {
        (args.common.drive.pause && step.request.steering_wheel_rad == 0.0).then(|| {
            format!(
                "runs {}-{} of {}: straight, then the circle",
                i + 1,
                i + 2,
                plan.len()
            )
        })
    };
    let bag = args.common.driving("steering", &pause).run(&plan)?;
    println!("recorded {}", bag.display());
    Ok(bag)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The YAML holds each node's three parameters, by the names their tables read, with
    /// the fitted values.
    #[test]
    fn the_yaml_names_each_nodes_parameters() {
        let r = SteeringRelation {
            quadratic_deg: -0.0885,
            linear: 19.772,
            offset_deg: 1.004,
        };
        let yaml = rosparam_yaml(&r, &[PathBuf::from("circles.bag")]);
        let body: Vec<&str> = yaml.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(
            body,
            [
                "pacmod_bridge:",
                "  steering_quadratic_deg: -0.088500",
                "  steering_linear: 19.772000",
                "  steering_offset_deg: 1.004000",
                "gem_sim:",
                "  pacmod_steering_quadratic_deg: -0.088500",
                "  pacmod_steering_linear: 19.772000",
                "  pacmod_steering_offset_deg: 1.004000",
            ]
        );
        assert!(yaml.contains("from circles.bag"));
    }

    fn message(record_s: f64, stamp_s: Option<f64>) -> Numbers {
        Numbers {
            record_s,
            stamp_s,
            fields: Default::default(),
        }
    }

    #[test]
    fn header_stamps_count_only_on_the_record_clock() {
        let near = [message(10.0, Some(9.97)), message(10.1, Some(10.08))];
        assert!(stamps_usable(&near));
        // A driver stamping with GNSS time, 18 s off; or no stamp.
        assert!(!stamps_usable(&[message(10.0, Some(28.0))]));
        assert!(!stamps_usable(&[message(10.0, None)]));
    }
}
