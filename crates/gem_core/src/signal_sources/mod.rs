//! Where the state manager's inputs come from on a real car: the file that says, for the
//! battery, the temperature, the radio link and the e-stop, which source feeds it, checked
//! completely before anything is read.
//!
//! ```yaml
//! battery:                 # battery_level, as a fraction 0..1
//!   topic: /bms/state      # any topic: read by introspection, as the health monitor does
//!   field: soc_percent     # a flattened path into the message (`cells.2.voltage`)
//!   scale: 0.01            # published value = field × scale + offset
//!   stale_after_s: 2       # silence longer than this: nothing is published (STALE_DATA)
//! temperature:             # temperature, °C
//!   thermal: [thermal_zone0, hwmon1/temp1]  # the hottest of these Linux sensors
//! signal:                  # signal_strength, from the operator station's heartbeat
//!   operator: {}           # see `link::LinkLimits` for the keys and defaults
//! estop:                   # estop, true = stop
//!   topic: /hardware_estop
//!   field: data
//!   debounce_s: 0.05       # a release counts once it held this long; a press at once
//! ```
//!
//! Each input has exactly one source; an input the file leaves out is not published by
//! the node (another node may publish it). A topic source's field is checked against the
//! message type when the first message arrives ([`field`]).

pub mod field;
pub mod link;
pub mod readings;
pub mod thermal;

use crate::state_manager::Input;
use crate::time::Time;
use field::FieldSource;
use link::LinkLimits;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::time::Duration;
use thermal::ThermalSource;
use thiserror::Error;

/// An input a source can feed: the four the car has no mock for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Fed {
    /// `battery_level`, a fraction 0..1.
    Battery,
    /// `temperature`, °C.
    Temperature,
    /// `signal_strength`, a [`Strength`](crate::state_manager::Strength) code.
    Signal,
    /// `estop`, true = stop.
    Estop,
}

impl Fed {
    /// Every one, in the file's order.
    pub const ALL: [Fed; 4] = [Fed::Battery, Fed::Temperature, Fed::Signal, Fed::Estop];

    /// The state manager's input it feeds.
    pub fn input(self) -> Input {
        match self {
            Fed::Battery => Input::Battery,
            Fed::Temperature => Input::Temperature,
            Fed::Signal => Input::Signal,
            Fed::Estop => Input::Estop,
        }
    }

    /// Its key in the sources file.
    pub fn key(self) -> &'static str {
        match self {
            Fed::Battery => "battery",
            Fed::Temperature => "temperature",
            Fed::Signal => "signal",
            Fed::Estop => "estop",
        }
    }

    /// The one with `key`.
    pub fn from_key(key: &str) -> Option<Fed> {
        Fed::ALL.into_iter().find(|f| f.key() == key)
    }
}

/// What feeds one input.
#[derive(Clone, Debug, PartialEq)]
pub enum Source {
    /// A field of any topic's messages.
    Field(FieldSource),
    /// The computer's own temperature sensors (temperature only).
    Thermal(ThermalSource),
    /// The heartbeat exchanged with `gemctl operator` (signal only): its limits, and the
    /// operator key's file as the sources file gives it (`key_file`; none: unsigned).
    Operator(LinkLimits, Option<String>),
}

impl Source {
    /// One line saying where the value comes from (`/bms/state soc_percent × 0.01`).
    pub fn describe(&self) -> String {
        match self {
            Source::Field(f) => f.describe(),
            Source::Thermal(t) => format!("the hottest of {}", t.sensors.join(", ")),
            Source::Operator(_, None) => "the operator station's heartbeat (unsigned)".to_string(),
            Source::Operator(_, Some(_)) => {
                "the operator station's heartbeat (signed with the operator key)".to_string()
            }
        }
    }
}

/// The checked file: the source of each input it names.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sources(pub BTreeMap<Fed, Source>);

impl Sources {
    /// The source of `fed`, if the file gives one.
    pub fn of(&self, fed: Fed) -> Option<&Source> {
        self.0.get(&fed)
    }

    /// Every input with a source, in the file's order.
    pub fn iter(&self) -> impl Iterator<Item = (Fed, &Source)> {
        self.0.iter().map(|(f, s)| (*f, s))
    }
}

/// Why a file is refused: the input (its key) and the reason.
#[derive(Debug, Error, PartialEq)]
pub enum SourcesError {
    /// Not YAML of the expected shape (serde's message, with its line).
    #[error("{0}")]
    Syntax(String),
    /// A rule that cannot be used.
    #[error("`{input}`: {reason}")]
    Rule {
        /// The input's key (`battery`).
        input: String,
        /// What is wrong.
        reason: String,
    },
    /// Nothing to do.
    #[error("no source for any input: give at least one of battery, temperature, signal, estop")]
    Empty,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    topic: Option<String>,
    field: Option<String>,
    scale: Option<f64>,
    offset: Option<f64>,
    debounce_s: Option<f64>,
    stale_after_s: Option<f64>,
    thermal: Option<Vec<String>>,
    period_s: Option<f64>,
    operator: Option<link::LinkFile>,
}

/// Parses and checks a sources file.
pub fn parse(text: &str) -> Result<Sources, SourcesError> {
    let file: Option<BTreeMap<String, Entry>> =
        serde_yaml::from_str(text).map_err(|e| SourcesError::Syntax(e.to_string()))?;
    let file = file.unwrap_or_default();
    let mut sources = Sources::default();
    for (name, entry) in file {
        let fed = Fed::from_key(&name).ok_or_else(|| SourcesError::Rule {
            input: name.clone(),
            reason: "not an input a source can feed (battery, temperature, signal, estop)"
                .to_string(),
        })?;
        let fail = |reason: String| SourcesError::Rule {
            input: name.clone(),
            reason,
        };
        let source = entry_source(fed, entry).map_err(fail)?;
        sources.0.insert(fed, source);
    }
    if sources.0.is_empty() {
        return Err(SourcesError::Empty);
    }
    Ok(sources)
}

/// A positive, finite number of seconds (`what` names it), or `default`.
fn seconds(value: Option<f64>, what: &str, default: Duration) -> Result<Duration, String> {
    match value {
        None => Ok(default),
        Some(s) if s.is_finite() && s > 0.0 && s <= 3600.0 => Ok(Duration::from_secs_f64(s)),
        Some(s) => Err(format!("{what} must be within (0, 3600] s, not {s}")),
    }
}

fn entry_source(input: Fed, e: Entry) -> Result<Source, String> {
    let kinds = [e.topic.is_some(), e.thermal.is_some(), e.operator.is_some()];
    match kinds.iter().filter(|k| **k).count() {
        0 => return Err("no source: give `topic` (with `field`), `thermal` or `operator`".into()),
        1 => {}
        _ => return Err("more than one source: give one of `topic`, `thermal`, `operator`".into()),
    }
    let field_keys = [
        ("field", e.field.is_some()),
        ("scale", e.scale.is_some()),
        ("offset", e.offset.is_some()),
        ("debounce_s", e.debounce_s.is_some()),
    ];
    if let Some(topic) = e.topic {
        let field = e
            .field
            .ok_or("a topic source needs `field`, the path of the value in its messages")?;
        let stale_after = seconds(e.stale_after_s, "stale_after_s", field::DEFAULT_STALE_AFTER)?;
        if e.period_s.is_some() {
            return Err(
                "`period_s` belongs to thermal sources; a topic source reads each message".into(),
            );
        }
        let debounce = match e.debounce_s {
            None => Duration::ZERO,
            Some(_) if input != Fed::Estop => {
                return Err("`debounce_s` is for the e-stop, a boolean".into())
            }
            // 0 (the default) is allowed: a release counts at its first reading.
            Some(0.0) => Duration::ZERO,
            Some(_) => seconds(e.debounce_s, "debounce_s", Duration::ZERO)?,
        };
        let source = FieldSource::new(
            &topic,
            &field,
            e.scale.unwrap_or(1.0),
            e.offset.unwrap_or(0.0),
            debounce,
            stale_after,
        )?;
        return Ok(Source::Field(source));
    }
    if let Some((k, _)) = field_keys.iter().find(|(_, set)| *set) {
        return Err(format!("`{k}` belongs to topic sources"));
    }
    if let Some(sensors) = e.thermal {
        if input != Fed::Temperature {
            return Err("a thermal source feeds the temperature only".into());
        }
        let period = seconds(e.period_s, "period_s", thermal::DEFAULT_PERIOD)?;
        let stale_after = seconds(e.stale_after_s, "stale_after_s", 3 * period)?;
        if stale_after < period {
            return Err(format!(
                "stale_after_s ({}) is shorter than period_s ({}): every reading would be stale before the next",
                stale_after.as_secs_f64(),
                period.as_secs_f64()
            ));
        }
        return Ok(Source::Thermal(ThermalSource::new(
            sensors,
            period,
            stale_after,
        )?));
    }
    if e.period_s.is_some() || e.stale_after_s.is_some() {
        return Err(
            "`period_s` and `stale_after_s` of the operator link go under `operator:`".into(),
        );
    }
    if input != Fed::Signal {
        return Err("the operator link feeds the signal strength only".into());
    }
    let file = e.operator.unwrap_or_default();
    let key_file = file.key_file().map(str::to_owned);
    if key_file.as_ref().is_some_and(|k| k.trim().is_empty()) {
        return Err("operator key_file is empty: give the key's path, or leave it out".into());
    }
    Ok(Source::Operator(file.limits()?, key_file))
}

/// An input's latest value and when it was read: the value only while it is fresh.
/// A source that stops leaves its input unpublished, and the state manager sees it stale
/// (STALE_DATA): never a made-up value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Latest<T> {
    value: T,
    at: Time,
    stale_after: Duration,
}

impl<T: Copy> Latest<T> {
    /// `value`, read at `at`, fresh for `stale_after`.
    pub fn new(value: T, at: Time, stale_after: Duration) -> Latest<T> {
        Latest {
            value,
            at,
            stale_after,
        }
    }

    /// The value at `now`, if it is not older than its limit. A reading stamped after
    /// `now` (a clock that went back) counts as fresh only within that limit too: after a
    /// simulation restarts, an old reading never stands in for a new one.
    pub fn fresh(&self, now: Time) -> Option<T> {
        let apart = now
            .since(self.at)
            .unwrap_or_else(|| self.at.saturating_since(now));
        (apart <= self.stale_after).then_some(self.value)
    }

    /// When it was read.
    pub fn at(&self) -> Time {
        self.at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_is_given_only_while_fresh() {
        let at = Time::from_secs_f64(10.0);
        let l = Latest::new(0.8, at, Duration::from_secs(2));
        assert_eq!(l.fresh(at), Some(0.8));
        assert_eq!(
            l.fresh(at.saturating_add(Duration::from_secs(2))),
            Some(0.8)
        );
        assert_eq!(
            l.fresh(at.saturating_add(Duration::from_millis(2001))),
            None
        );
        assert_eq!(l.fresh(Time::from_secs_f64(9.0)), Some(0.8));
        assert_eq!(
            l.fresh(Time::from_secs_f64(1.0)),
            None,
            "clock went far back"
        );
    }

    #[test]
    fn keys_name_their_inputs() {
        let mut inputs = std::collections::HashSet::new();
        for f in Fed::ALL {
            assert_eq!(Fed::from_key(f.key()), Some(f));
            assert!(inputs.insert(f.input()), "{f:?}");
        }
        assert_eq!(Fed::from_key("gps"), None);
    }

    const EXAMPLE: &str = "
battery:
  topic: /bms/state
  field: soc_percent
  scale: 0.01
  stale_after_s: 2
temperature:
  thermal: [thermal_zone0, hwmon1/temp1]
signal:
  operator: {}
estop:
  topic: /hardware_estop
  field: data
  debounce_s: 0.05
";

    #[test]
    fn the_example_file_gives_every_input_its_source() {
        let s = parse(EXAMPLE).unwrap();
        assert_eq!(s.iter().count(), 4);
        match s.of(Fed::Battery) {
            Some(Source::Field(f)) => {
                assert_eq!(f.topic, "/bms/state");
                assert_eq!(f.scale, 0.01);
                assert_eq!(f.stale_after, Duration::from_secs(2));
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(s.of(Fed::Temperature), Some(Source::Thermal(_))));
        assert!(matches!(s.of(Fed::Signal), Some(Source::Operator(..))));
        match s.of(Fed::Estop) {
            Some(Source::Field(f)) => assert_eq!(f.debounce, Duration::from_millis(50)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_estop_debounce_of_zero_is_the_default_written_out() {
        let s = parse("estop:\n  topic: /a\n  field: b\n  debounce_s: 0\n").unwrap();
        match s.of(Fed::Estop) {
            Some(Source::Field(f)) => assert_eq!(f.debounce, Duration::ZERO),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_input_left_out_has_no_source() {
        let s = parse("temperature:\n  thermal: [thermal_zone0]\n").unwrap();
        assert!(s.of(Fed::Battery).is_none());
        assert!(s.of(Fed::Temperature).is_some());
    }

    fn refused(text: &str) -> String {
        parse(text).unwrap_err().to_string()
    }

    #[test]
    fn bad_files_are_refused_naming_the_input_and_the_reason() {
        for (text, says) in [
            ("", "no source for any input"),
            ("battery: [1, 2", "line 1"),
            ("battery: 3\n", "invalid type"),
            ("speed:\n  topic: /a\n  field: b\n", "`speed`: not an input"),
            (
                "battery:\n  topic: /a\n",
                "`battery`: a topic source needs `field`",
            ),
            ("battery: {}\n", "`battery`: no source"),
            (
                "battery:\n  topic: /a\n  field: b\n  thermal: [thermal_zone0]\n",
                "more than one source",
            ),
            (
                "battery:\n  thermal: [thermal_zone0]\n",
                "feeds the temperature only",
            ),
            ("estop:\n  operator: {}\n", "feeds the signal strength only"),
            (
                "battery:\n  topic: /a\n  field: b\n  debounce_s: 0.1\n",
                "`debounce_s` is for the e-stop",
            ),
            (
                "battery:\n  topic: /a\n  field: b\n  stale_after_s: 0\n",
                "stale_after_s must be within (0, 3600] s, not 0",
            ),
            (
                "battery:\n  topic: /a\n  field: b\n  scale: .nan\n",
                "scale",
            ),
            ("battery:\n  topic: a\n  field: b\n", "absolute"),
            ("battery:\n  topic: /a\n  field: 'b..c'\n", "field"),
            ("temperature:\n  thermal: []\n", "at least one sensor"),
            ("temperature:\n  thermal: ['../etc']\n", "not a sensor name"),
            (
                "temperature:\n  thermal: [thermal_zone0]\n  field: x\n",
                "`field` belongs to topic sources",
            ),
            ("signal:\n  operator: {period_s: 0}\n", "period_s"),
            (
                "temperature:\n  thermal: [thermal_zone0]\n  period_s: 2\n  stale_after_s: 1\n",
                "shorter than period_s",
            ),
            (
                "estop:\n  topic: /a\n  field: b\n  debounce_s: -0.1\n",
                "debounce_s must be within",
            ),
            (
                "battery:\n  topic: /a\n  field: b\n  colour: red\n",
                "unknown field `colour`",
            ),
        ] {
            let got = refused(text);
            assert!(got.contains(says), "{text:?}: {got}");
        }
    }
}
