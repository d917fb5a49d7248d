//! Typed private parameters, declared once per node in a table.
//!
//! A node lists its parameters as `const` [`ParamSpec`]s (name, type, default, unit,
//! description); a default that configures the core is read from the core's `DEFAULT`, so
//! it is written once. The same table drives reading ([`ParamSpec::f64`] and friends), the
//! node's documentation table ([`markdown_table`]) and a test that fails when the docs and
//! the code drift apart ([`check_docs`]). A missing parameter takes the default; a parameter
//! of the wrong type is an error that names it, never a silent fallback.

use std::cell::Cell;

use thiserror::Error;
use xml_rpc::Value;

/// A parameter's type and default value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Default {
    /// A floating-point parameter (an integer value is accepted too: `_rate:=20`).
    Float(f64),
    /// An integer parameter.
    Int(i64),
    /// A boolean parameter.
    Bool(bool),
    /// A string parameter.
    Str(&'static str),
}

/// One private parameter of a node.
#[derive(Clone, Copy, Debug)]
pub struct ParamSpec {
    /// Name without the `~` (e.g. `state_timeout_ms`).
    pub name: &'static str,
    /// Type and default.
    pub default: Default,
    /// Unit, or "" when dimensionless.
    pub unit: &'static str,
    /// One-line description for the documentation table.
    pub doc: &'static str,
}

/// Why a parameter could not be used.
#[derive(Debug, Error, PartialEq)]
pub enum ParamError {
    /// The parameter server holds a value of another type.
    #[error("parameter ~{name}: expected {expected}, got {got}")]
    WrongType {
        /// Parameter name.
        name: &'static str,
        /// Expected type.
        expected: &'static str,
        /// What the server returned.
        got: String,
    },
    /// The value has the right type but is out of range (from a core `validate()`).
    #[error("parameter ~{name}: {reason}")]
    Invalid {
        /// Parameter name.
        name: &'static str,
        /// What is wrong with it, naming the value and the limit.
        reason: String,
    },
    /// The master could not be asked.
    #[error("parameter ~{name}: cannot read from the parameter server: {reason}")]
    Unreachable {
        /// Parameter name.
        name: &'static str,
        /// The transport error.
        reason: String,
    },
    /// The value could not be written.
    #[error("parameter ~{name}: cannot write to the parameter server: {reason}")]
    NotStored {
        /// Parameter name.
        name: &'static str,
        /// The transport error.
        reason: String,
    },
}

impl ParamSpec {
    /// Declares a float parameter.
    pub const fn float(
        name: &'static str,
        default: f64,
        unit: &'static str,
        doc: &'static str,
    ) -> Self {
        ParamSpec {
            name,
            default: Default::Float(default),
            unit,
            doc,
        }
    }

    /// Declares an integer parameter.
    pub const fn int(
        name: &'static str,
        default: i64,
        unit: &'static str,
        doc: &'static str,
    ) -> Self {
        ParamSpec {
            name,
            default: Default::Int(default),
            unit,
            doc,
        }
    }

    /// Declares a boolean parameter.
    pub const fn bool(name: &'static str, default: bool, doc: &'static str) -> Self {
        ParamSpec {
            name,
            default: Default::Bool(default),
            unit: "",
            doc,
        }
    }

    /// Declares a string parameter.
    pub const fn str(name: &'static str, default: &'static str, doc: &'static str) -> Self {
        ParamSpec {
            name,
            default: Default::Str(default),
            unit: "",
            doc,
        }
    }

    /// Reads a float parameter (integers are widened), or its default when unset.
    pub fn f64(&self) -> Result<f64, ParamError> {
        let Default::Float(default) = self.default else {
            return Err(self.declared_as("float"));
        };
        match self.raw()? {
            None => Ok(default),
            Some(Value::Double(v)) => Ok(v),
            Some(Value::Int(v)) => Ok(v as f64),
            Some(other) => Err(self.wrong_type("float", &other)),
        }
    }

    /// Reads an integer parameter, or its default when unset.
    pub fn i64(&self) -> Result<i64, ParamError> {
        let Default::Int(default) = self.default else {
            return Err(self.declared_as("int"));
        };
        match self.raw()? {
            None => Ok(default),
            Some(Value::Int(v)) => Ok(v as i64),
            Some(other) => Err(self.wrong_type("int", &other)),
        }
    }

    /// Reads a boolean parameter, or its default when unset.
    pub fn bool_value(&self) -> Result<bool, ParamError> {
        let Default::Bool(default) = self.default else {
            return Err(self.declared_as("bool"));
        };
        match self.raw()? {
            None => Ok(default),
            Some(Value::Bool(v)) => Ok(v),
            Some(other) => Err(self.wrong_type("bool", &other)),
        }
    }

    /// Reads a string parameter, or its default when unset.
    pub fn string(&self) -> Result<String, ParamError> {
        let Default::Str(default) = self.default else {
            return Err(self.declared_as("string"));
        };
        match self.raw()? {
            None => Ok(default.to_owned()),
            Some(Value::String(v)) => Ok(v),
            Some(other) => Err(self.wrong_type("string", &other)),
        }
    }

    /// Reads a float parameter that must be finite and > 0 (rates, timeouts).
    pub fn positive_f64(&self) -> Result<f64, ParamError> {
        let v = self.f64()?;
        if v.is_finite() && v > 0.0 {
            Ok(v)
        } else {
            Err(self.invalid(format!("{v} must be finite and > 0")))
        }
    }

    /// Reads a positive duration given in seconds.
    pub fn positive_seconds(&self) -> Result<std::time::Duration, ParamError> {
        self.positive_f64().map(std::time::Duration::from_secs_f64)
    }

    /// Writes `value` to the parameter: a node stores a value it uses (a default included)
    /// where tools can read it.
    pub fn store_f64(&self, value: f64) -> Result<(), ParamError> {
        let not_stored = |reason: String| ParamError::NotStored {
            name: self.name,
            reason,
        };
        rosrust::param(&format!("~{}", self.name))
            .ok_or_else(|| not_stored("the name does not resolve".into()))?
            .set_raw(Value::Double(value))
            .map_err(|e| not_stored(e.to_string()))
    }

    /// Wraps a validation message for this parameter.
    pub fn invalid(&self, reason: impl Into<String>) -> ParamError {
        ParamError::Invalid {
            name: self.name,
            reason: reason.into(),
        }
    }

    fn raw(&self) -> Result<Option<Value>, ParamError> {
        if EVERY_DEFAULT.get() {
            return Ok(None);
        }
        raw_at(&format!("~{}", self.name)).map_err(|reason| ParamError::Unreachable {
            name: self.name,
            reason,
        })
    }

    fn wrong_type(&self, expected: &'static str, got: &Value) -> ParamError {
        ParamError::WrongType {
            name: self.name,
            expected,
            got: format!("{got:?}"),
        }
    }

    /// A programming error: the table declares another type than the code reads.
    fn declared_as(&self, read_as: &'static str) -> ParamError {
        ParamError::WrongType {
            name: self.name,
            expected: read_as,
            got: format!("a table entry declared as {:?}", self.default),
        }
    }

    fn default_text(&self) -> String {
        match self.default {
            Default::Float(v) => format!("{v}"),
            Default::Int(v) => format!("{v}"),
            Default::Bool(v) => format!("{v}"),
            Default::Str(v) => format!("\"{v}\""),
        }
    }

    fn type_text(&self) -> &'static str {
        match self.default {
            Default::Float(_) => "double",
            Default::Int(_) => "int",
            Default::Bool(_) => "bool",
            Default::Str(_) => "string",
        }
    }
}

/// Writes the default of each parameter of `params` that is not set, in the node's private
/// namespace, and returns how many it wrote. A node reads an unset parameter as its
/// default; written down, every parameter the node runs with is there for `rosparam get`
/// and `rosparam list`, as the docs list them. A parameter that is set is left as it is,
/// valid or not (reading it reports what is wrong with it). Call after `rosrust::init`.
pub fn store_defaults(params: &[ParamSpec]) -> Result<usize, ParamError> {
    if !rosrust::is_initialized() || EVERY_DEFAULT.get() {
        return Ok(0);
    }
    let mut written = 0;
    for p in params {
        let not_stored = |reason: String| ParamError::NotStored {
            name: p.name,
            reason,
        };
        let param = rosrust::param(&format!("~{}", p.name))
            .ok_or_else(|| not_stored("the name does not resolve".into()))?;
        if param.exists().map_err(|e| not_stored(e.to_string()))? {
            continue;
        }
        let value = match p.default {
            Default::Float(v) => Value::Double(v),
            Default::Int(v) => Value::Int(v as i32),
            Default::Bool(v) => Value::Bool(v),
            Default::Str(v) => Value::String(v.to_owned()),
        };
        param
            .set_raw(value)
            .map_err(|e| not_stored(e.to_string()))?;
        written += 1;
    }
    Ok(written)
}

thread_local! {
    static EVERY_DEFAULT: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with every parameter read on this thread taken as unset, without asking the
/// parameter server: what a node's settings are when nobody sets anything. Tests use it to
/// pin a node's defaults to the core's.
pub fn with_every_default<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            EVERY_DEFAULT.set(self.0);
        }
    }
    let _restore = Restore(EVERY_DEFAULT.replace(true));
    f()
}

/// The value of the parameter `name` (any graph name), `None` when unset; the error is
/// why the parameter server could not be asked.
fn raw_at(name: &str) -> Result<Option<Value>, String> {
    let param = rosrust::param(name).ok_or_else(|| "the name does not resolve".to_string())?;
    if !param.exists().map_err(|e| e.to_string())? {
        return Ok(None);
    }
    param.get_raw().map(Some).map_err(|e| e.to_string())
}

/// Why another node's parameter could not be read.
#[derive(Debug, Error, PartialEq)]
pub enum ForeignParamError {
    /// The parameter holds something other than a number.
    #[error("parameter {name}: expected a number, got {got}")]
    NotANumber {
        /// Its full name.
        name: String,
        /// What the server returned.
        got: String,
    },
    /// The master could not be asked.
    #[error("parameter {name}: cannot read from the parameter server: {reason}")]
    Unreachable {
        /// Its full name.
        name: String,
        /// The transport error.
        reason: String,
    },
}

/// Reads a number (integers widened) from the parameter `name`, e.g. another node's
/// private parameter `/state_manager/gps_lost_after_s`; `None` when it is not set.
pub fn number_at(name: &str) -> Result<Option<f64>, ForeignParamError> {
    let raw = raw_at(name).map_err(|reason| ForeignParamError::Unreachable {
        name: name.to_owned(),
        reason,
    })?;
    match raw {
        None => Ok(None),
        Some(Value::Double(v)) => Ok(Some(v)),
        Some(Value::Int(v)) => Ok(Some(f64::from(v))),
        Some(other) => Err(ForeignParamError::NotANumber {
            name: name.to_owned(),
            got: format!("{other:?}"),
        }),
    }
}

/// A core `validate()` error as the error of the parameter in `params` it names (`fallback`
/// when none has that name).
pub fn named_error(
    params: &[ParamSpec],
    fallback: &ParamSpec,
    e: gem_core::config::ConfigError,
) -> ParamError {
    let spec = params
        .iter()
        .find(|p| p.name == e.field)
        .unwrap_or(fallback);
    spec.invalid(e.to_string())
}

/// The documentation's parameter table for `params`, one row per parameter.
pub fn markdown_table(params: &[ParamSpec]) -> String {
    let mut out =
        String::from("| parameter | type | default | unit | meaning |\n|---|---|---|---|---|\n");
    for p in params {
        out.push_str(&format!(
            "| `~{}` | {} | {} | {} | {} |\n",
            p.name,
            p.type_text(),
            p.default_text(),
            p.unit,
            p.doc
        ));
    }
    out
}

/// Checks that the documentation page `page` (its text: `doc`) contains `params`' table
/// verbatim; the error shows the table it must contain.
pub fn check_docs(params: &[ParamSpec], page: &str, doc: &str) -> Result<(), String> {
    let table = markdown_table(params);
    if doc.contains(&table) {
        Ok(())
    } else {
        Err(format!(
            "the parameter table of {page} is out of date; it must contain:\n{table}"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RATE: ParamSpec = ParamSpec::float("rate", 20.0, "Hz", "publish rate");
    const TIMEOUT: ParamSpec = ParamSpec::int("state_timeout_ms", 500, "ms", "staleness");

    #[test]
    fn table_lists_each_parameter_once_with_default_and_unit() {
        let table = markdown_table(&[RATE, TIMEOUT]);
        assert!(table.contains("| `~rate` | double | 20 | Hz | publish rate |"));
        assert!(table.contains("| `~state_timeout_ms` | int | 500 | ms | staleness |"));
        assert_eq!(table.lines().count(), 4);
    }

    #[test]
    fn reading_with_the_wrong_accessor_is_an_error_naming_the_parameter() {
        let err = RATE.i64().unwrap_err();
        assert!(err.to_string().contains("~rate"), "{err}");
    }
}
