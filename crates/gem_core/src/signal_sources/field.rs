//! A topic source: one field of a flattened message (the health monitor's [`Fields`]) made
//! into an input's value — scaled and offset, refused when it is missing or not a number,
//! and, for the e-stop, debounced.

use crate::health::rule::{Fields, Scalar};
use crate::time::Time;
use std::time::Duration;
use thiserror::Error;

/// How long a topic source may fall silent before its input goes unpublished (and the
/// state manager sees the input stale), when the file does not say.
pub const DEFAULT_STALE_AFTER: Duration = Duration::from_secs(1);

/// One field of one topic.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldSource {
    /// The topic (absolute).
    pub topic: String,
    /// The flattened path of the field (`soc_percent`, `cells.3.voltage`).
    pub path: String,
    /// Published value = field × scale + offset.
    pub scale: f64,
    /// See `scale`.
    pub offset: f64,
    /// A release of the e-stop counts once it held this long (zero: at once).
    pub debounce: Duration,
    /// Silence longer than this: nothing is published.
    pub stale_after: Duration,
}

/// Why a message's field gives no value.
#[derive(Debug, Error, PartialEq)]
pub enum FieldError {
    /// The path is not in the message type.
    #[error("{topic} ({type_name}) has no field `{path}`; its fields: {known}")]
    Missing {
        /// The topic.
        topic: String,
        /// Its message type.
        type_name: String,
        /// The path asked for.
        path: String,
        /// The first of the fields it has.
        known: String,
    },
    /// The field is a string, or a boolean where a number is needed.
    #[error("{topic} `{path}` is {value}, not a number")]
    NotANumber {
        /// The topic.
        topic: String,
        /// The path.
        path: String,
        /// What it holds.
        value: String,
    },
}

/// Is `path` a flattened field path: names and indices joined by dots?
fn valid_path(path: &str) -> bool {
    !path.is_empty()
        && path.split('.').all(|seg| {
            !seg.is_empty() && seg.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
}

impl FieldSource {
    /// Checks the parts of a topic source.
    pub fn new(
        topic: &str,
        path: &str,
        scale: f64,
        offset: f64,
        debounce: Duration,
        stale_after: Duration,
    ) -> Result<FieldSource, String> {
        if !topic.starts_with('/') || topic.len() < 2 || topic.contains(char::is_whitespace) {
            return Err(format!("topic {topic:?} must be an absolute name"));
        }
        if !valid_path(path) {
            return Err(format!(
                "field {path:?} is not a field path (names and indices joined by dots: `a.b.2.c`)"
            ));
        }
        if !(scale.is_finite() && scale != 0.0) {
            return Err(format!(
                "scale must be a finite number other than 0, not {scale}"
            ));
        }
        if !offset.is_finite() {
            return Err(format!("offset must be a finite number, not {offset}"));
        }
        Ok(FieldSource {
            topic: topic.to_string(),
            path: path.to_string(),
            scale,
            offset,
            debounce,
            stale_after,
        })
    }

    /// `/bms/state soc_percent × 0.01 + 0`.
    pub fn describe(&self) -> String {
        let mut s = format!("{} {}", self.topic, self.path);
        if self.scale != 1.0 {
            s.push_str(&format!(" × {}", self.scale));
        }
        if self.offset != 0.0 {
            s.push_str(&format!(" + {}", self.offset));
        }
        s
    }

    fn raw<'a>(&self, fields: &'a Fields, type_name: &str) -> Result<&'a Scalar, FieldError> {
        fields.get(&self.path).ok_or_else(|| FieldError::Missing {
            topic: self.topic.clone(),
            type_name: type_name.to_string(),
            path: self.path.clone(),
            known: known(fields),
        })
    }

    /// The number the field gives, scaled and offset (a battery fraction, °C). NaN and
    /// ±inf are passed on as they are: the state manager reads a non-finite battery level
    /// as BATTERY_LOW and a non-finite temperature as TEMPERATURE_HIGH, from that one
    /// message (dropping it would leave only staleness, seconds later).
    pub fn number(&self, fields: &Fields, type_name: &str) -> Result<f64, FieldError> {
        match self.raw(fields, type_name)? {
            Scalar::Num(n) => Ok(n * self.scale + self.offset),
            other => Err(FieldError::NotANumber {
                topic: self.topic.clone(),
                path: self.path.clone(),
                value: other.to_string(),
            }),
        }
    }

    /// The boolean the field gives (the e-stop pressed): a boolean as it is, a number true
    /// when, scaled and offset, it is not 0. A NaN or ±inf is a press: an e-stop that
    /// cannot say whether it is pressed stops the car.
    pub fn boolean(&self, fields: &Fields, type_name: &str) -> Result<bool, FieldError> {
        match self.raw(fields, type_name)? {
            Scalar::Bool(b) => Ok(*b),
            Scalar::Num(_) => self
                .number(fields, type_name)
                .map(|v| !v.is_finite() || v != 0.0),
            other => Err(FieldError::NotANumber {
                topic: self.topic.clone(),
                path: self.path.clone(),
                value: other.to_string(),
            }),
        }
    }
}

/// The first fields of a message, for an error.
fn known(fields: &Fields) -> String {
    const SHOWN: usize = 24;
    let mut names: Vec<&str> = fields.keys().take(SHOWN).map(String::as_str).collect();
    if fields.len() > SHOWN {
        names.push("…");
    }
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

/// A debounced e-stop: a press counts at once; a release counts once every reading for
/// `hold` said released. A bouncing contact therefore never releases the car early, and
/// never delays a stop. Until the first press, or the first release held for `hold`, the
/// state is unknown (`None`): nothing is published, rather than a made-up press or release.
#[derive(Clone, Debug)]
pub struct Debounce {
    hold: Duration,
    pressed: Option<bool>,
    released_since: Option<Time>,
}

impl Debounce {
    /// Unknown until a reading says.
    pub fn new(hold: Duration) -> Debounce {
        Debounce {
            hold,
            pressed: None,
            released_since: None,
        }
    }

    /// The debounced state after a reading `raw` (true: pressed) at `now`.
    pub fn update(&mut self, raw: bool, now: Time) -> Option<bool> {
        if raw {
            self.pressed = Some(true);
            self.released_since = None;
        } else {
            self.released_since.get_or_insert(now);
        }
        self.at(now)
    }

    /// The state at `now` without a new reading (a release held long enough counts).
    pub fn at(&mut self, now: Time) -> Option<bool> {
        if let Some(since) = self.released_since {
            if now.saturating_since(since) >= self.hold {
                self.pressed = Some(false);
            }
        }
        self.pressed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(path: &str, scale: f64, offset: f64) -> FieldSource {
        FieldSource::new(
            "/bms",
            path,
            scale,
            offset,
            Duration::ZERO,
            DEFAULT_STALE_AFTER,
        )
        .unwrap()
    }

    fn fields(pairs: &[(&str, Scalar)]) -> Fields {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    }

    #[test]
    fn a_number_is_scaled_and_offset() {
        let f = fields(&[("soc", Scalar::Num(42.0))]);
        assert_eq!(source("soc", 0.01, 0.0).number(&f, "t").unwrap(), 0.42);
        assert_eq!(source("soc", 1.0, -2.0).number(&f, "t").unwrap(), 40.0);
    }

    #[test]
    fn a_missing_field_names_the_topic_the_type_and_the_fields_it_has() {
        let f = fields(&[("data", Scalar::Num(1.0)), ("header.seq", Scalar::Num(3.0))]);
        let e = source("soc", 1.0, 0.0)
            .number(&f, "std_msgs/Float32")
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "/bms (std_msgs/Float32) has no field `soc`; its fields: data, header.seq"
        );
    }

    #[test]
    fn a_string_is_refused_and_a_non_finite_value_passed_on_or_pressed() {
        let f = fields(&[
            ("s", Scalar::Str("full".into())),
            ("n", Scalar::Num(f64::NAN)),
        ]);
        assert!(matches!(
            source("s", 1.0, 0.0).number(&f, "t"),
            Err(FieldError::NotANumber { .. })
        ));
        assert!(source("n", 1.0, 0.0).number(&f, "t").unwrap().is_nan());
        assert!(
            source("n", 1.0, 0.0).boolean(&f, "t").unwrap(),
            "NaN e-stop: pressed"
        );
        let inf = fields(&[("i", Scalar::Num(f64::NEG_INFINITY))]);
        assert!(source("i", 1.0, 0.0).boolean(&inf, "t").unwrap());
        assert_eq!(
            source("i", 1.0, 0.0).number(&inf, "t").unwrap(),
            f64::NEG_INFINITY
        );
        assert!(matches!(
            source("s", 1.0, 0.0).boolean(&f, "t"),
            Err(FieldError::NotANumber { .. })
        ));
    }

    #[test]
    fn a_boolean_is_read_as_it_is_and_a_number_as_not_zero() {
        let f = fields(&[("b", Scalar::Bool(true)), ("n", Scalar::Num(0.0))]);
        assert!(source("b", 1.0, 0.0).boolean(&f, "t").unwrap());
        assert!(!source("n", 1.0, 0.0).boolean(&f, "t").unwrap());
        assert!(source("n", 1.0, 1.0).boolean(&f, "t").unwrap());
    }

    #[test]
    fn bad_parts_are_refused() {
        let ok = |t: &str, p: &str, s: f64, o: f64| {
            FieldSource::new(t, p, s, o, Duration::ZERO, DEFAULT_STALE_AFTER)
        };
        assert!(ok("/a", "b.2.c_d", 1.0, 0.0).is_ok());
        assert!(ok("a", "b", 1.0, 0.0).unwrap_err().contains("absolute"));
        for p in ["", "b..c", ".b", "b[2]", "b c"] {
            assert!(
                ok("/a", p, 1.0, 0.0).unwrap_err().contains("field"),
                "{p:?}"
            );
        }
        assert!(ok("/a", "b", 0.0, 0.0).unwrap_err().contains("scale"));
        assert!(ok("/a", "b", 1.0, f64::INFINITY)
            .unwrap_err()
            .contains("offset"));
    }

    #[test]
    fn a_press_counts_at_once_and_a_release_only_once_it_held() {
        let t = Time::from_secs_f64;
        let mut d = Debounce::new(Duration::from_millis(50));
        assert_eq!(
            d.update(false, t(1.0)),
            None,
            "unknown until a release held"
        );
        assert_eq!(d.update(false, t(1.04)), None);
        assert_eq!(d.update(false, t(1.05)), Some(false));
        // A bounce: pressed at once, and the release starts over.
        assert_eq!(d.update(true, t(1.06)), Some(true));
        assert_eq!(d.update(false, t(1.07)), Some(true));
        assert_eq!(d.at(t(1.11)), Some(true));
        assert_eq!(d.at(t(1.12)), Some(false));
        // A first reading that presses counts at once.
        let mut pressed = Debounce::new(Duration::from_millis(50));
        assert_eq!(pressed.update(true, t(0.0)), Some(true));
        let mut at_once = Debounce::new(Duration::ZERO);
        assert_eq!(at_once.update(false, t(0.0)), Some(false));
    }
}
