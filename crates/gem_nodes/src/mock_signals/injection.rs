//! How `mock_signals` injects each failure type of the core's catalogue
//! ([`gem_core::faults::CATALOGUE`]): the reconfigurable value that carries it, the faulty
//! value `gemctl profile`, `gemctl demo` and the end-to-end tests set, and the healthy one
//! that clears it, which is that value's default.
//!
//! docs/spec.md §6 shows the catalogue with these columns as [`markdown_table`] renders
//! it, and a test keeps the two equal.

use super::DYN_PARAMS;
use crate::state_manager::params::hold_off_param;
use gem_core::faults::{FaultKind, CATALOGUE};
use gem_core::state_manager::StateManagerConfig;
use ros1_protocols::dynamic_reconfigure::{Client, DynParam, Value};

/// How one failure type is injected.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Injection {
    /// The failure type.
    pub kind: FaultKind,
    /// The `mock_signals` dynamic_reconfigure value that carries it.
    pub param: &'static str,
    /// The faulty value to set.
    pub faulty: Value,
}

/// Every failure type's injection, in [`FaultKind::ALL`]'s order.
pub static INJECTIONS: [Injection; 6] = [
    Injection {
        kind: FaultKind::Estop,
        param: "estop_enabled",
        faulty: Value::Bool(true),
    },
    Injection {
        kind: FaultKind::Battery,
        param: "battery_level",
        faulty: Value::Int(49),
    },
    Injection {
        kind: FaultKind::Temperature,
        param: "temperature",
        faulty: Value::Double(60.0),
    },
    Injection {
        kind: FaultKind::Gps,
        param: "gps_accuracy",
        faulty: Value::Double(201.0),
    },
    Injection {
        kind: FaultKind::SignalLow,
        param: "signal_strength",
        faulty: Value::Int(2),
    },
    Injection {
        kind: FaultKind::SignalNotConnected,
        param: "signal_strength",
        faulty: Value::Int(0),
    },
];

impl Injection {
    /// The injection of `kind`.
    pub fn of(kind: FaultKind) -> &'static Injection {
        &INJECTIONS[kind as usize]
    }

    /// The reconfigurable value's declaration.
    pub fn dyn_param(&self) -> &'static DynParam {
        DYN_PARAMS
            .iter()
            .find(|p| p.name == self.param)
            .expect("every injection names one of DYN_PARAMS (a test checks it)")
    }

    /// The healthy value that clears the fault: the value's default.
    pub fn healthy(&self) -> Value {
        self.dyn_param().default_value()
    }

    /// Sets this injection's value to `value` (the faulty or the healthy one) on a running
    /// `mock_signals` through its reconfigure service; an error when the call fails or the
    /// node kept another value.
    pub fn set_on(&self, mock: &Client, value: Value) -> Result<(), String> {
        let param = self.param;
        let answer = mock
            .set(&[(param, value)])
            .map_err(|e| format!("mock_signals {param}: {e}"))?;
        match answer.iter().find(|(n, _)| n == param) {
            Some((_, v)) if *v == value => Ok(()),
            other => Err(format!(
                "mock_signals did not take {param} = {value:?} (now {other:?})"
            )),
        }
    }
}

/// The catalogue with its injections as the Markdown table docs/spec.md §6 contains,
/// hold-offs with the state manager's defaults.
pub fn markdown_table() -> String {
    let defaults = StateManagerConfig::default();
    let mut out = String::from(
        "| failure type | input topic | mock_signals parameter | faulty value | healthy value | error bit | hold-off |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for f in &CATALOGUE {
        let injection = Injection::of(f.kind);
        let hold_off = match f.hold_off {
            None => "none (immediate)".to_string(),
            Some(h) => format!(
                "`~{}` of `state_manager` (default {} s)",
                hold_off_param(h),
                h.of(&defaults).as_secs_f64()
            ),
        };
        out += &format!(
            "| `{}` | `{}` | `{}` | {} | {} | `{}` | {hold_off} |\n",
            f.name,
            f.input.global_topic(),
            injection.param,
            injection.faulty,
            injection.healthy(),
            f.bit
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ros1_protocols::dynamic_reconfigure::check_value;

    #[test]
    fn injections_are_in_fault_kind_order() {
        for (i, k) in FaultKind::ALL.into_iter().enumerate() {
            assert_eq!(INJECTIONS[i].kind, k);
        }
    }

    /// What the input topic carries for `param` = `v`, as `FaultKind::is_faulty` reads it.
    fn published(param: &str, v: Value) -> f64 {
        match (param, v) {
            ("battery_level", Value::Int(p)) => f64::from(crate::mock_signals::battery_fraction(p)),
            (_, Value::Bool(b)) => f64::from(u8::from(b)),
            (_, Value::Int(i)) => f64::from(i),
            (_, Value::Double(d)) => f64::from(d as f32),
        }
    }

    #[test]
    fn each_faulty_value_is_accepted_and_faulty_and_each_default_is_healthy() {
        let cfg = StateManagerConfig::default();
        for i in &INJECTIONS {
            let (faulty, healthy) = (i.faulty, i.healthy());
            check_value(DYN_PARAMS, i.param, faulty).unwrap_or_else(|e| panic!("{e}"));
            assert!(
                i.kind.is_faulty(published(i.param, faulty), &cfg),
                "{:?}: {faulty:?} is not faulty",
                i.kind
            );
            assert!(
                !i.kind.is_faulty(published(i.param, healthy), &cfg),
                "{:?}: {healthy:?} is faulty",
                i.kind
            );
        }
    }

    #[test]
    fn spec_lists_exactly_this_catalogue() {
        let spec = include_str!("../../../../docs/spec.md");
        let table = markdown_table();
        assert!(
            spec.contains(&table),
            "docs/spec.md §6 is out of date; it must contain:\n{table}"
        );
    }
}
