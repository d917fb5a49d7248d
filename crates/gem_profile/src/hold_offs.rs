//! The hold-off windows the profile is timed by: those of the state manager that is
//! running, read from its private parameters on the parameter server; a window whose
//! parameter is not set is the state manager's default (which is then what it uses too),
//! with a warning.

use gem_core::faults::HoldOff;
use gem_core::state_manager::StateManagerConfig;
use serde::Serialize;
use std::fmt::Display;
use std::time::Duration;

/// One window as the profile used it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Used {
    /// The state manager's parameter (`gps_lost_after_s`).
    pub param: &'static str,
    /// Its length, s.
    pub seconds: f64,
    /// Where it came from: the parameter's full name, or why the default was used.
    pub source: String,
}

/// The windows: as a configuration for the profile's matching, and as stated in its report.
#[derive(Clone, Debug)]
pub struct HoldOffs {
    /// The state manager's defaults with the windows read.
    pub cfg: StateManagerConfig,
    /// Every window, with its source.
    pub used: Vec<Used>,
    /// What fell back to a default, one line each.
    pub warnings: Vec<String>,
}

impl HoldOffs {
    /// The windows of the state manager node `node` (`Err`: why it could not be found;
    /// every window is then the default), `param_of` naming the node's parameter that sets a
    /// window (without the `~`), `lookup` reading one parameter by its full name (from the
    /// parameter server: `None` when it is not set). A set value the state manager would
    /// refuse, or one that cannot be read, is an error.
    pub fn read<E: Display>(
        node: Result<&str, &str>,
        param_of: impl Fn(HoldOff) -> &'static str,
        lookup: impl Fn(&str) -> Result<Option<f64>, E>,
    ) -> Result<HoldOffs, String> {
        let mut cfg = StateManagerConfig::default();
        let (mut used, mut warnings) = (Vec::new(), Vec::new());
        for h in HoldOff::ALL {
            let param = param_of(h);
            let default = h.of(&cfg).as_secs_f64();
            let (seconds, source) = match node {
                Ok(node) => {
                    let name = format!("{}/{}", node.trim_end_matches('/'), param);
                    match lookup(&name).map_err(|e| e.to_string())? {
                        Some(v) if v.is_finite() && v > 0.0 => (v, name),
                        Some(v) => {
                            return Err(format!("{name} = {v} is not a positive number of seconds"))
                        }
                        None => {
                            warnings
                                .push(format!("{name} is not set; using the default {default} s"));
                            (default, format!("default: {name} not set"))
                        }
                    }
                }
                Err(why) => {
                    warnings.push(format!("{param}: {why}; using the default {default} s"));
                    (default, format!("default: {why}"))
                }
            };
            h.set(&mut cfg, Duration::from_secs_f64(seconds));
            used.push(Used {
                param,
                seconds,
                source,
            });
        }
        Ok(HoldOffs {
            cfg,
            used,
            warnings,
        })
    }
}

/// One line: `gps_lost_after_s 15 s (/state_manager/gps_lost_after_s), ...`.
pub fn describe(used: &[Used]) -> String {
    used.iter()
        .map(|u| format!("{} {} s ({})", u.param, u.seconds, u.source))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The state manager's names of the windows' parameters.
    fn param(h: HoldOff) -> &'static str {
        match h {
            HoldOff::GpsLost => "gps_lost_after_s",
            HoldOff::SignalLost => "signal_lost_after_s",
            HoldOff::SignalLow => "signal_low_after_s",
        }
    }

    #[test]
    fn set_parameters_are_used_and_named() {
        let h = HoldOffs::read(Ok("/sm"), param, |name| {
            Ok::<_, String>(match name {
                "/sm/gps_lost_after_s" => Some(3.0),
                "/sm/signal_lost_after_s" => Some(4.0),
                "/sm/signal_low_after_s" => Some(5.5),
                _ => None,
            })
        })
        .unwrap();
        assert!(h.warnings.is_empty(), "{:?}", h.warnings);
        assert_eq!(h.cfg.gps_lost_after, Duration::from_secs(3));
        assert_eq!(h.cfg.signal_lost_after, Duration::from_secs(4));
        assert_eq!(h.cfg.signal_low_after, Duration::from_millis(5500));
        assert_eq!(h.used[0].source, "/sm/gps_lost_after_s");
        assert!(describe(&h.used).contains("signal_low_after_s 5.5 s (/sm/signal_low_after_s)"));
    }

    #[test]
    fn unset_parameters_fall_back_to_the_defaults_with_a_warning() {
        let h = HoldOffs::read(Ok("/state_manager"), param, |name| {
            Ok::<_, String>((name == "/state_manager/gps_lost_after_s").then_some(7.0))
        })
        .unwrap();
        let d = StateManagerConfig::default();
        assert_eq!(h.cfg.gps_lost_after, Duration::from_secs(7));
        assert_eq!(h.cfg.signal_lost_after, d.signal_lost_after);
        assert_eq!(h.warnings.len(), 2);
        assert!(h.warnings[0].contains("/state_manager/signal_lost_after_s is not set"));
        assert!(h.used[2].source.starts_with("default"));
    }

    #[test]
    fn without_a_state_manager_every_window_is_the_default() {
        let h = HoldOffs::read(
            Err("no node publishes /system_state"),
            param,
            |_| -> Result<_, String> { panic!("nothing to look up") },
        )
        .unwrap();
        assert_eq!(h.cfg, StateManagerConfig::default());
        assert_eq!(h.warnings.len(), 3);
    }

    #[test]
    fn a_value_the_state_manager_would_refuse_is_an_error() {
        for bad in [0.0, -1.0, f64::NAN] {
            let e = HoldOffs::read(Ok("/sm"), param, |_| Ok::<_, String>(Some(bad))).unwrap_err();
            assert!(e.contains("/sm/gps_lost_after_s"), "{e}");
        }
        let e = HoldOffs::read(Ok("/sm"), param, |name| {
            Err(format!("{name}: expected a number, got String(\"x\")"))
        })
        .unwrap_err();
        assert!(e.contains("/sm/gps_lost_after_s: expected a number"), "{e}");
    }
}
