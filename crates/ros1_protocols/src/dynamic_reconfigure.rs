//! The dynamic_reconfigure server protocol, so `rosrun dynamic_reconfigure dynparam` and
//! rqt_reconfigure work against a Rust node.
//!
//! A server advertises the `~set_parameters` service (`dynamic_reconfigure/Reconfigure`)
//! and two latched topics: `~parameter_descriptions` (names, types, bounds, defaults,
//! enums; one group "Default" with id 0) and `~parameter_updates` (the current values).
//! A client sends only the values it changes; the server clamps numbers to their bounds,
//! lets the node check the result (a rejected update leaves every value as it was), copies
//! the values to the parameter server (`~name`, as the Python server does) and answers
//! with, and publishes, the full configuration.
//!
//! Start-up values come from the parameter server when set there (launch files,
//! `_name:=value`), else from the declared defaults, clamped likewise.

use crate::msgs::dynamic_reconfigure::{
    BoolParameter, Config, ConfigDescription, DoubleParameter, Group, GroupState, IntParameter,
    ParamDescription, Reconfigure, ReconfigureRes,
};
use crate::runtime::Publisher;
use crate::this_node;
use crate::Lock;
use crate::RosError;
use std::sync::{Arc, Mutex};

/// The type, default and bounds of one reconfigurable parameter.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    /// A boolean.
    Bool {
        /// Default.
        default: bool,
    },
    /// An integer in `min..=max`; `choices` (name, value, description) make it an enum.
    Int {
        /// Default.
        default: i32,
        /// Lower bound.
        min: i32,
        /// Upper bound.
        max: i32,
        /// Enum constants, empty for a plain integer.
        choices: &'static [(&'static str, i32, &'static str)],
    },
    /// A float in `min..=max`.
    Double {
        /// Default.
        default: f64,
        /// Lower bound.
        min: f64,
        /// Upper bound.
        max: f64,
    },
}

/// One reconfigurable parameter.
#[derive(Clone, Copy, Debug)]
pub struct DynParam {
    /// Name (also the private ROS parameter `~name`).
    pub name: &'static str,
    /// Type, default and bounds.
    pub kind: Kind,
    /// One line shown by rqt_reconfigure.
    pub description: &'static str,
}

/// A parameter's current value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    /// A boolean.
    Bool(bool),
    /// An integer.
    Int(i32),
    /// A float.
    Double(f64),
}

impl std::fmt::Display for Value {
    /// As `dynparam set` takes it on its command line (`true`, `49`, `0.5`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Value::Bool(v) => v.fmt(f),
            Value::Int(v) => v.fmt(f),
            Value::Double(v) => v.fmt(f),
        }
    }
}

/// The current values, in declaration order.
#[derive(Clone, Debug, PartialEq)]
pub struct Values(Vec<(&'static str, Value)>);

impl Values {
    /// The value of `name`, if declared.
    pub fn get(&self, name: &str) -> Option<Value> {
        self.0.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
    }

    /// A boolean value (false if `name` is not a declared boolean).
    pub fn bool(&self, name: &str) -> bool {
        matches!(self.get(name), Some(Value::Bool(true)))
    }

    /// An integer value (0 if `name` is not a declared integer).
    pub fn int(&self, name: &str) -> i32 {
        match self.get(name) {
            Some(Value::Int(v)) => v,
            _ => 0,
        }
    }

    /// A float value (0 if `name` is not a declared float).
    pub fn double(&self, name: &str) -> f64 {
        match self.get(name) {
            Some(Value::Double(v)) => v,
            _ => 0.0,
        }
    }
}

impl DynParam {
    /// Its default.
    pub fn default_value(&self) -> Value {
        match self.kind {
            Kind::Bool { default } => Value::Bool(default),
            Kind::Int { default, .. } => Value::Int(default),
            Kind::Double { default, .. } => Value::Double(default),
        }
    }

    /// `v` converted to this parameter's type and clamped to its bounds; `None` for a
    /// value of another type or a NaN.
    fn accept(&self, v: Value) -> Option<Value> {
        match (self.kind, v) {
            (Kind::Bool { .. }, Value::Bool(b)) => Some(Value::Bool(b)),
            (Kind::Int { min, max, .. }, Value::Int(i)) => Some(Value::Int(i.clamp(min, max))),
            (Kind::Double { min, max, .. }, Value::Double(d)) if !d.is_nan() => {
                Some(Value::Double(d.clamp(min, max)))
            }
            (Kind::Double { min, max, .. }, Value::Int(i)) => {
                Some(Value::Double(f64::from(i).clamp(min, max)))
            }
            _ => None,
        }
    }

    fn range(&self) -> String {
        match self.kind {
            Kind::Bool { .. } => "false..=true".into(),
            Kind::Int { min, max, .. } => format!("{min}..={max}"),
            Kind::Double { min, max, .. } => format!("{min}..={max}"),
        }
    }

    fn type_name(&self) -> &'static str {
        match self.kind {
            Kind::Bool { .. } => "bool",
            Kind::Int { .. } => "int",
            Kind::Double { .. } => "double",
        }
    }

    /// The Python-literal `edit_method` rqt_reconfigure evaluates for enums.
    fn edit_method(&self) -> String {
        let Kind::Int { choices, .. } = self.kind else {
            return String::new();
        };
        if choices.is_empty() {
            return String::new();
        }
        let items: Vec<String> = choices
            .iter()
            .map(|(name, value, desc)| {
                format!(
                    "{{'name': '{name}', 'type': 'int', 'value': {value}, 'srcline': 0, 'srcfile': '', 'cconsttype': 'const int', 'ctype': 'int', 'description': '{desc}'}}"
                )
            })
            .collect();
        format!(
            "{{'enum': [{}], 'enum_description': '{}'}}",
            items.join(", "),
            self.description
        )
    }
}

/// Builds a `Config` holding `values` of `params`.
fn to_config(params: &[DynParam], values: &Values) -> Config {
    config_of(
        params
            .iter()
            .filter_map(|p| values.get(p.name).map(|v| (p.name, v))),
    )
}

/// Builds a `Config` holding the named values (and the one group every server has).
fn config_of<'a>(values: impl IntoIterator<Item = (&'a str, Value)>) -> Config {
    let mut c = Config {
        groups: vec![GroupState {
            name: "Default".into(),
            state: true,
            id: 0,
            parent: 0,
        }],
        ..Default::default()
    };
    for (name, v) in values {
        let name = name.to_owned();
        match v {
            Value::Bool(value) => c.bools.push(BoolParameter { name, value }),
            Value::Int(value) => c.ints.push(IntParameter { name, value }),
            Value::Double(value) => c.doubles.push(DoubleParameter { name, value }),
        }
    }
    c
}

/// The values a `Config` carries, by name.
fn from_config(c: &Config) -> Vec<(String, Value)> {
    let bools = c
        .bools
        .iter()
        .map(|b| (b.name.clone(), Value::Bool(b.value)));
    let ints = c.ints.iter().map(|i| (i.name.clone(), Value::Int(i.value)));
    let doubles = c
        .doubles
        .iter()
        .map(|d| (d.name.clone(), Value::Double(d.value)));
    bools.chain(ints).chain(doubles).collect()
}

fn bound(params: &[DynParam], pick: impl Fn(&Kind) -> Option<Value>) -> Values {
    Values(
        params
            .iter()
            .map(|p| (p.name, pick(&p.kind).unwrap_or_else(|| p.default_value())))
            .collect(),
    )
}

fn description(params: &[DynParam]) -> ConfigDescription {
    let group = Group {
        name: "Default".into(),
        type_: String::new(),
        parameters: params
            .iter()
            .map(|p| ParamDescription {
                name: p.name.into(),
                type_: p.type_name().into(),
                level: 0,
                description: p.description.into(),
                edit_method: p.edit_method(),
            })
            .collect(),
        parent: 0,
        id: 0,
    };
    let max = bound(params, |k| match *k {
        Kind::Bool { .. } => Some(Value::Bool(true)),
        Kind::Int { max, .. } => Some(Value::Int(max)),
        Kind::Double { max, .. } => Some(Value::Double(max)),
    });
    let min = bound(params, |k| match *k {
        Kind::Bool { .. } => Some(Value::Bool(false)),
        Kind::Int { min, .. } => Some(Value::Int(min)),
        Kind::Double { min, .. } => Some(Value::Double(min)),
    });
    let dflt = bound(params, |_| None);
    ConfigDescription {
        groups: vec![group],
        max: to_config(params, &max),
        min: to_config(params, &min),
        dflt: to_config(params, &dflt),
    }
}

/// Checks a proposed configuration; `Err` rejects it with a reason.
pub type Check = dyn Fn(&Values) -> Result<(), String> + Send + Sync;

struct State {
    params: &'static [DynParam],
    values: Mutex<Values>,
    updates: Mutex<Publisher<Config>>,
    check: Box<Check>,
}

/// A running dynamic_reconfigure server.
pub struct Server {
    state: Arc<State>,
    _service: crate::service::Service,
    _descriptions: Publisher<ConfigDescription>,
}

impl Server {
    /// Starts serving `params`; `check` validates every update (and the start-up values).
    pub fn new(params: &'static [DynParam], check: Box<Check>) -> Result<Server, RosError> {
        let descriptions = this_node::advertise("~parameter_descriptions", 1, true)?;
        descriptions.send(description(params))?;
        let updates = this_node::advertise("~parameter_updates", 1, true)?;
        let mut values = bound(params, |_| None);
        let from_server: Vec<(String, Value)> = params
            .iter()
            .filter_map(|p| read_param(p).map(|v| (p.name.to_owned(), v)))
            .collect();
        if let Err(e) = apply(params, &mut values, &from_server, check.as_ref()) {
            tracing::warn!("start-up values rejected ({e}); using the defaults");
        }
        let state = Arc::new(State {
            params,
            values: Mutex::new(values),
            updates: Mutex::new(updates),
            check,
        });
        state.publish();
        let s = state.clone();
        let service = crate::service::advertise::<Reconfigure, _>("~set_parameters", move |req| {
            let (config, _) = s.reconfigure(&from_config(&req.config));
            Ok(ReconfigureRes { config })
        })?;
        Ok(Server {
            state,
            _service: service,
            _descriptions: descriptions,
        })
    }

    /// Changes values from inside the node (a scenario step) exactly as a client's
    /// request would: clamped, checked, published on `~parameter_updates`, copied to the
    /// parameter server. A rejected change leaves every value as it was.
    pub fn set(&self, changes: &[(String, Value)]) -> Result<(), String> {
        self.state.reconfigure(changes).1
    }

    /// The current values.
    pub fn values(&self) -> Values {
        self.state.values.locked().clone()
    }
}

/// How long [`Client::set`] waits for the server's answer.
pub const CALL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// A client of another node's server: what `dynparam set` does, from Rust.
pub struct Client {
    node: String,
    service: crate::service::Client<Reconfigure>,
}

impl Client {
    /// Connects to the server of `node` (e.g. `/mock_signals`), waiting up to `timeout`
    /// for its `set_parameters` service.
    pub fn new(node: &str, timeout: std::time::Duration) -> Result<Client, RosError> {
        let name = format!("{}/set_parameters", node.trim_end_matches('/'));
        this_node::wait_for_service(&name, timeout)?;
        Ok(Client {
            node: node.to_owned(),
            service: crate::service::Client::new(&name)?,
        })
    }

    /// Sends `changes`; returns the full configuration the server answered with. The
    /// server clamps numbers to their bounds and may refuse the update (then nothing
    /// changes): compare the answer with what was asked.
    pub fn set(&self, changes: &[(&str, Value)]) -> Result<Vec<(String, Value)>, RosError> {
        let req = crate::msgs::dynamic_reconfigure::ReconfigureReq {
            config: config_of(changes.iter().copied()),
        };
        let res = self
            .service
            .call(&req, CALL_TIMEOUT)
            .map_err(|e| RosError::new(format!("{}: {e}", self.node)))?;
        Ok(from_config(&res.config))
    }
}

impl State {
    fn reconfigure(&self, changes: &[(String, Value)]) -> (Config, Result<(), String>) {
        let mut values = self.values.locked();
        let result = apply(self.params, &mut values, changes, self.check.as_ref());
        match &result {
            Ok(()) => tracing::info!("reconfigured: now {:?}", values.0),
            Err(e) => tracing::warn!("reconfigure rejected, values unchanged: {e}"),
        }
        drop(values);
        (self.publish(), result)
    }

    /// Publishes the current values (and copies them to the parameter server).
    fn publish(&self) -> Config {
        let values = self.values.locked().clone();
        for (name, v) in &values.0 {
            write_param(name, *v);
        }
        let config = to_config(self.params, &values);
        if let Err(e) = self.updates.locked().send(config.clone()) {
            tracing::warn!("cannot publish ~parameter_updates: {e}");
        }
        config
    }
}

/// Checks that `name` is declared in `params` and `v` has its type and lies within its
/// bounds. Unlike a client's request nothing is clamped: this is for values written in a
/// file (a scenario), where a silent clamp would hide a typo.
pub fn check_value(params: &[DynParam], name: &str, v: Value) -> Result<(), String> {
    let p = params
        .iter()
        .find(|p| p.name == name)
        .ok_or_else(|| format!("unknown parameter {name}"))?;
    let accepted = p
        .accept(v)
        .ok_or_else(|| format!("{name}: {v:?} is not a {}", p.type_name()))?;
    let same = match (accepted, v) {
        (Value::Double(a), Value::Int(i)) => a == f64::from(i),
        (a, v) => a == v,
    };
    if same {
        Ok(())
    } else {
        Err(format!("{name}: {v:?} is outside {}", p.range()))
    }
}

/// Applies `changes` to a copy of `values`, clamped; commits it only if `check` accepts.
fn apply(
    params: &[DynParam],
    values: &mut Values,
    changes: &[(String, Value)],
    check: &Check,
) -> Result<(), String> {
    let mut next = values.clone();
    for (name, v) in changes {
        let Some(p) = params.iter().find(|p| p.name == name) else {
            return Err(format!("unknown parameter {name}"));
        };
        let accepted = p
            .accept(*v)
            .ok_or_else(|| format!("{name}: {v:?} is not a {}", p.type_name()))?;
        if let Some(slot) = next.0.iter_mut().find(|(n, _)| n == name) {
            slot.1 = accepted;
        }
    }
    check(&next)?;
    *values = next;
    Ok(())
}

fn read_param(p: &DynParam) -> Option<Value> {
    // One `getParam`: unset, unreadable and mistyped all leave the default in place.
    let raw = this_node::param(&format!("~{}", p.name))?
        .get_raw()
        .ok()??;
    match (&p.kind, raw) {
        (Kind::Bool { .. }, xml_rpc::Value::Bool(b)) => Some(Value::Bool(b)),
        (Kind::Int { .. }, xml_rpc::Value::Int(i)) => Some(Value::Int(i)),
        (Kind::Double { .. }, xml_rpc::Value::Double(d)) => Some(Value::Double(d)),
        (Kind::Double { .. }, xml_rpc::Value::Int(i)) => Some(Value::Double(f64::from(i))),
        _ => None,
    }
}

fn write_param(name: &str, v: Value) {
    let Some(param) = this_node::param(&format!("~{name}")) else {
        return;
    };
    let result = match v {
        Value::Bool(b) => param.set(&b),
        Value::Int(i) => param.set(&i),
        Value::Double(d) => param.set(&d),
    };
    if let Err(e) = result {
        tracing::warn!("cannot set ~{name}: {e}");
    }
}

/// The documentation table of `params`, one row per reconfigurable value (a node's page
/// must contain it verbatim; `gem_nodes`' tests check that).
pub fn markdown_table(params: &[DynParam]) -> String {
    let mut out = String::from(
        "| reconfigurable | type | default | range | meaning |\n|---|---|---|---|---|\n",
    );
    for p in params {
        let (kind, default, range) = match p.kind {
            Kind::Bool { default } => ("bool", default.to_string(), String::new()),
            Kind::Int {
                default, choices, ..
            } if !choices.is_empty() => {
                let names: Vec<String> =
                    choices.iter().map(|(n, v, _)| format!("{v} {n}")).collect();
                ("int enum", default.to_string(), names.join(", "))
            }
            Kind::Int {
                default, min, max, ..
            } => ("int", default.to_string(), format!("{min}–{max}")),
            Kind::Double { default, min, max } => {
                ("double", default.to_string(), format!("{min}–{max}"))
            }
        };
        out.push_str(&format!(
            "| `{}` | {kind} | {default} | {range} | {} |\n",
            p.name, p.description
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_print_as_dynparam_takes_them() {
        assert_eq!(Value::Bool(true).to_string(), "true");
        assert_eq!(Value::Int(49).to_string(), "49");
        assert_eq!(Value::Double(201.0).to_string(), "201");
        assert_eq!(Value::Double(0.5).to_string(), "0.5");
    }

    const PARAMS: &[DynParam] = &[
        DynParam {
            name: "flag",
            kind: Kind::Bool { default: false },
            description: "a flag",
        },
        DynParam {
            name: "mode",
            kind: Kind::Int {
                default: 1,
                min: 0,
                max: 2,
                choices: &[("OFF", 0, "off"), ("ON", 1, "on"), ("AUTO", 2, "auto")],
            },
            description: "mode",
        },
        DynParam {
            name: "level",
            kind: Kind::Double {
                default: 0.5,
                min: 0.0,
                max: 1.0,
            },
            description: "level",
        },
    ];

    fn accept_all(_: &Values) -> Result<(), String> {
        Ok(())
    }

    #[test]
    fn defaults_and_bounds_describe_every_parameter() {
        let d = description(PARAMS);
        assert_eq!(d.groups[0].parameters.len(), 3);
        assert_eq!(d.dflt.doubles[0].value, 0.5);
        assert_eq!(d.max.ints[0].value, 2);
        assert_eq!(d.min.doubles[0].value, 0.0);
        assert!(d.groups[0].parameters[1]
            .edit_method
            .starts_with("{'enum': [{'name': 'OFF'"));
    }

    #[test]
    fn numbers_are_clamped() {
        let mut v = bound(PARAMS, |_| None);
        apply(
            PARAMS,
            &mut v,
            &[
                ("level".into(), Value::Double(7.0)),
                ("mode".into(), Value::Int(-3)),
            ],
            &accept_all,
        )
        .unwrap();
        assert_eq!((v.double("level"), v.int("mode")), (1.0, 0));
    }

    #[test]
    fn a_wrong_type_or_unknown_name_changes_nothing() {
        let mut v = bound(PARAMS, |_| None);
        let before = v.clone();
        for bad in [
            ("flag", Value::Double(1.0)),
            ("nope", Value::Int(1)),
            ("level", Value::Double(f64::NAN)),
        ] {
            let change = [(bad.0.to_string(), bad.1)];
            assert!(
                apply(PARAMS, &mut v, &change, &accept_all).is_err(),
                "{bad:?}"
            );
        }
        assert_eq!(v, before);
    }

    #[test]
    fn a_rejected_update_changes_nothing() {
        let mut v = bound(PARAMS, |_| None);
        let no_auto = |v: &Values| {
            if v.int("mode") == 2 {
                Err("AUTO is not allowed".to_string())
            } else {
                Ok(())
            }
        };
        let changes = [
            ("flag".to_string(), Value::Bool(true)),
            ("mode".to_string(), Value::Int(2)),
        ];
        assert_eq!(
            apply(PARAMS, &mut v, &changes, &no_auto).unwrap_err(),
            "AUTO is not allowed"
        );
        assert!(!v.bool("flag"));
    }

    #[test]
    fn config_round_trip() {
        let v = bound(PARAMS, |_| None);
        let back = from_config(&to_config(PARAMS, &v));
        assert_eq!(back.len(), 3);
        assert!(back.contains(&("level".to_string(), Value::Double(0.5))));
    }

    #[test]
    fn check_value_accepts_in_range_values_of_the_right_type() {
        assert_eq!(check_value(PARAMS, "flag", Value::Bool(true)), Ok(()));
        assert_eq!(check_value(PARAMS, "mode", Value::Int(2)), Ok(()));
        assert_eq!(check_value(PARAMS, "level", Value::Int(1)), Ok(()));
    }

    #[test]
    fn check_value_refuses_instead_of_clamping() {
        let e = check_value(PARAMS, "mode", Value::Int(3)).unwrap_err();
        assert!(e.contains("outside 0..=2"), "{e}");
        let e = check_value(PARAMS, "level", Value::Double(1.5)).unwrap_err();
        assert!(e.contains("outside 0..=1"), "{e}");
    }

    #[test]
    fn check_value_refuses_unknown_names_wrong_types_and_nan() {
        assert!(check_value(PARAMS, "lvl", Value::Double(0.1))
            .unwrap_err()
            .contains("unknown parameter lvl"));
        assert!(check_value(PARAMS, "flag", Value::Int(1))
            .unwrap_err()
            .contains("not a bool"));
        assert!(check_value(PARAMS, "level", Value::Double(f64::NAN)).is_err());
    }
}
