//! The car's calibration as a rosparam YAML keyed by node name, for `calibration:=FILE`
//! (`vehicle.launch` loads it before the nodes start): what `gemctl calibrate` writes and
//! the controller's steering learner persists. The one home of which parameters carry the
//! steering motor's figures.

use gem_core::config::Field;
use gem_core::field;
use gem_core::pacmod::bridge::BridgeConfig;
use gem_core::pacmod::plant::PlantConfig;
use gem_core::vehicle::actuator::MAX_STEERING_WHEEL_RATE_RAD_S;
use gem_core::vehicle::identify::Motor;
use gem_ros::params::ParamSpec;
use std::fmt::Write as _;

/// The parameter of `table` that feeds `field`: the YAML's keys are the nodes' own names.
pub fn param_name(table: &[ParamSpec], field: Field) -> &'static str {
    table
        .iter()
        .find(|p| p.feeds.contains(&field))
        .map_or_else(|| panic!("no parameter feeds {field}"), |p| p.name)
}

/// The parameter of `table` named `name`: for a parameter that feeds no configuration
/// field directly (the tests of each caller pin the names).
pub fn param_named(table: &[ParamSpec], name: &str) -> &'static str {
    table
        .iter()
        .find(|p| p.name == name)
        .map_or_else(|| panic!("no parameter {name}"), |p| p.name)
}

/// The controller's parameters of the steering motor, by name (they feed no configuration
/// field directly; the controller's tests pin them to its table).
pub const CONTROLLER_MOTOR: [&str; 3] = [
    "pacmod_steering_wheel_rate_rad_s",
    "pacmod_steering_lag_s",
    "pacmod_steering_dead_time_s",
];

/// `motor` as each node's parameters: `pacmod_bridge`'s, the controller's and `gem_sim`'s
/// (its simulated car). The rate sent and planned with is the slower way's, at most the
/// fastest the steering wheel turns.
pub fn motor_params(m: &Motor) -> [(&'static str, Vec<(&'static str, f64)>); 3] {
    let rate = m
        .rate_left_rad_s
        .min(m.rate_right_rad_s)
        .min(MAX_STEERING_WHEEL_RATE_RAD_S);
    let figures = |names: [&'static str; 3]| {
        vec![
            (names[0], rate),
            (names[1], m.lag_s),
            (names[2], m.dead_time_s),
        ]
    };
    let bridge = &crate::pacmod_bridge::params::PARAMS;
    let sim = &crate::sim::params::PARAMS;
    [
        (
            "pacmod_bridge",
            figures([
                param_name(bridge, field!(BridgeConfig.steering_rate_rad_s)),
                param_name(bridge, field!(BridgeConfig.steering_lag_s)),
                param_name(bridge, field!(BridgeConfig.steering_dead_time_s)),
            ]),
        ),
        ("controller", figures(CONTROLLER_MOTOR)),
        (
            "gem_sim",
            figures([
                param_name(sim, field!(PlantConfig.max_wheel_rate_rad_s)),
                param_name(sim, field!(PlantConfig.steering_lag_s)),
                param_name(sim, field!(PlantConfig.steering_dead_time_s)),
            ]),
        ),
    ]
}

/// `motor` as the YAML's node mappings (the caller adds its comment lines).
pub fn motor_yaml(m: &Motor) -> String {
    let mut s = String::new();
    for (node, values) in motor_params(m) {
        let _ = writeln!(s, "{node}:");
        for (name, value) in values {
            let _ = writeln!(s, "  {name}: {value:.4}");
        }
    }
    s
}

/// Writes `text` to `path` through a temporary file in the same directory, so a reader
/// never sees half a file.
pub fn write_atomically(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}

/// The motor a calibration file gives the controller, if it gives all three figures; an
/// error for text that is no such file.
pub fn read_motor(text: &str) -> Result<Option<Motor>, String> {
    let v: serde_yaml::Value = serde_yaml::from_str(text).map_err(|e| e.to_string())?;
    let figure = |name: &str| {
        v.get("controller")
            .and_then(|c| c.get(name))
            .and_then(|x| x.as_f64())
    };
    Ok(match CONTROLLER_MOTOR.map(figure) {
        [Some(rate), Some(lag), Some(dead)] => Some(Motor::symmetric(rate, lag, dead)),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_figures_are_named_for_each_node_and_read_back() {
        let m = Motor {
            rate_left_rad_s: 2.1,
            rate_right_rad_s: 2.0,
            lag_s: 0.3,
            dead_time_s: 0.2,
        };
        let yaml = motor_yaml(&m);
        assert_eq!(
            yaml.lines().collect::<Vec<_>>(),
            [
                "pacmod_bridge:",
                "  steering_rate_rad_s: 2.0000",
                "  steering_lag_s: 0.3000",
                "  steering_dead_time_s: 0.2000",
                "controller:",
                "  pacmod_steering_wheel_rate_rad_s: 2.0000",
                "  pacmod_steering_lag_s: 0.3000",
                "  pacmod_steering_dead_time_s: 0.2000",
                "gem_sim:",
                "  pacmod_max_wheel_rate_rad_s: 2.0000",
                "  pacmod_steering_lag_s: 0.3000",
                "  pacmod_steering_dead_time_s: 0.2000",
            ]
        );
        let back = read_motor(&yaml).unwrap().unwrap();
        assert_eq!(
            (back.rate_left_rad_s, back.lag_s, back.dead_time_s),
            (2.0, 0.3, 0.2)
        );
        assert_eq!(
            read_motor("pacmod_bridge: {steering_linear: 20}").unwrap(),
            None
        );
        assert!(read_motor(": : :").is_err());
    }
}
