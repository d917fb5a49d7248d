//! The one error every core configuration's `validate()` returns, naming the struct field
//! it refuses with a [`Field`] (built by [`field!`](crate::field)): the core speaks of its
//! own fields; a node maps each field to the parameter that feeds it.

use std::fmt;
use thiserror::Error;

/// A field of a core configuration struct: the struct's and the field's Rust names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Field {
    /// The configuration struct (`SpeedConfig`).
    pub config: &'static str,
    /// The field in it (`nominal_mps`).
    pub name: &'static str,
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.config, self.name)
    }
}

/// The [`Field`] `Config.field`, checked at compile time to exist: `field!(SpeedConfig.nominal_mps)`
/// (the struct must be in scope). Usable in `const` items.
#[macro_export]
macro_rules! field {
    ($config:ident . $field:ident) => {{
        #[allow(dead_code)]
        fn exists(c: &$config) {
            let _ = &c.$field;
        }
        $crate::config::Field {
            config: stringify!($config),
            name: stringify!($field),
        }
    }};
}

/// The [`Field`] `Config.field` and its value in `config`, for a check inside
/// `Config::validate`: `value!(self, SpeedConfig.nominal_mps)`.
macro_rules! value {
    ($config:ident, $ty:ident . $field:ident) => {
        ($crate::field!($ty.$field), $config.$field)
    };
}
pub(crate) use value;

/// One kind of check on several fields of one configuration, for `Config::validate`:
/// `each![positive; self; SpeedConfig: nominal_mps, creep_mps]` is
/// `[positive(value!(self, SpeedConfig.nominal_mps)), positive(value!(self, SpeedConfig.creep_mps))]`.
macro_rules! each {
    ($check:ident; $config:ident; $ty:ident: $($field:ident),+ $(,)?) => {
        [$($crate::config::$check($crate::config::value!($config, $ty.$field))),+]
    };
}
pub(crate) use each;

/// A configuration value outside its valid range: which field, its value, the limit.
#[derive(Debug, Error, PartialEq)]
#[error("{} = {value} is invalid: {limit}", field.name)]
pub struct ConfigError {
    /// The field holding the value.
    pub field: Field,
    /// The offending value, printed.
    pub value: String,
    /// The limit it breaks (`must be > 0`).
    pub limit: String,
}

impl ConfigError {
    /// An error for `field` holding `value`.
    pub fn new(field: Field, value: impl ToString, limit: impl Into<String>) -> Self {
        ConfigError {
            field,
            value: value.to_string(),
            limit: limit.into(),
        }
    }
}

/// One range check of a `validate()`: the field, its value, whether it is in range, and
/// the limit to print when it is not. Built by [`check`], [`positive`], [`non_negative`]
/// and [`within`]; a value that is not finite is always out of range.
#[derive(Clone, Copy, Debug)]
pub struct Check {
    field: Field,
    value: f64,
    ok: bool,
    limit: Limit,
}

#[derive(Clone, Copy, Debug)]
enum Limit {
    Text(&'static str),
    Within(f64, f64),
}

/// A check that the value of `(field, value)` is finite and `ok`, saying `limit` when it
/// is not.
pub fn check((field, value): (Field, f64), ok: bool, limit: &'static str) -> Check {
    Check {
        field,
        value,
        ok,
        limit: Limit::Text(limit),
    }
}

/// A check that the value of `(field, value)` is finite.
pub fn finite(fv: (Field, f64)) -> Check {
    check(fv, true, "must be finite")
}

/// A check that the value of `(field, value)` is finite and > 0.
pub fn positive(fv: (Field, f64)) -> Check {
    check(fv, fv.1 > 0.0, "must be > 0")
}

/// A check that the value of `(field, value)` is finite and >= 0.
pub fn non_negative(fv: (Field, f64)) -> Check {
    check(fv, fv.1 >= 0.0, "must be >= 0")
}

/// A check that the value of `(field, value)` is within `lo..=hi`.
pub fn within((field, value): (Field, f64), lo: f64, hi: f64) -> Check {
    Check {
        field,
        value,
        ok: (lo..=hi).contains(&value),
        limit: Limit::Within(lo, hi),
    }
}

/// The first check whose value is not finite or not in range, as an error.
pub fn first_invalid(checks: impl IntoIterator<Item = Check>) -> Result<(), ConfigError> {
    match checks.into_iter().find(|c| !(c.value.is_finite() && c.ok)) {
        None => Ok(()),
        Some(c) => Err(ConfigError::new(
            c.field,
            c.value,
            match c.limit {
                Limit::Text(text) => text.to_owned(),
                Limit::Within(lo, hi) => format!("must be within {lo}..{hi}"),
            },
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Gains {
        gain: f64,
    }

    #[test]
    fn a_field_names_its_struct_and_the_error_its_field() {
        const GAIN: Field = field!(Gains.gain);
        assert_eq!(GAIN.to_string(), "Gains.gain");
        let e = first_invalid([positive((GAIN, 0.0))]).unwrap_err();
        assert_eq!(e.field, GAIN);
        assert_eq!(e.to_string(), "gain = 0 is invalid: must be > 0");
        let nan = first_invalid([non_negative((GAIN, f64::NAN))]).unwrap_err();
        assert_eq!(nan.field, GAIN);
        let g = Gains { gain: 0.0 };
        assert_eq!(first_invalid([non_negative(value!(g, Gains.gain))]), Ok(()));
        let e = first_invalid([within((GAIN, 2.5), 0.01, 2.0)]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "gain = 2.5 is invalid: must be within 0.01..2"
        );
    }
}
