//! Typed private parameters, declared once per node in a table.
//!
//! A node lists its parameters with [`param_table!`](crate::param_table): each entry a
//! [`ParamSpec`] with name, type, default, the check a value must pass, unit and
//! description, and the core configuration fields it feeds. A default that configures the
//! core is read from the core's `DEFAULT`, so it is written once. The same table drives
//! reading ([`ParamSpec::f64`] and friends apply the check), naming the parameter behind a
//! core `validate()` error ([`config_error`], through the fields each entry feeds), the
//! node's documentation table ([`markdown_table`]) and a test that fails when the docs and
//! the code drift apart ([`check_docs`]). A missing parameter takes the default; a
//! parameter of the wrong type or out of range is an error that names it, never a silent
//! fallback.

use std::cell::{Cell, RefCell};

use gem_core::config::{ConfigError, Field};
use thiserror::Error;
use xml_rpc::Value;

/// A parameter's type and default value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ParamValue {
    /// A floating-point parameter (an integer value is accepted too: `_rate:=20`).
    Float(f64),
    /// An integer parameter.
    Int(i64),
    /// A boolean parameter.
    Bool(bool),
    /// A string parameter.
    Str(&'static str),
}

impl ParamValue {
    /// As the parameter server holds it.
    fn value(self) -> Value {
        match self {
            ParamValue::Float(v) => Value::Double(v),
            ParamValue::Int(v) => Value::Int(v as i32),
            ParamValue::Bool(v) => Value::Bool(v),
            ParamValue::Str(v) => Value::String(v.to_owned()),
        }
    }
}

/// What a value must be, checked when it is read. A number outside [`Check::Any`] must
/// also be finite. The default always passes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Check {
    /// Anything of the right type (a core `validate()` may still refuse it).
    Any,
    /// A finite number.
    Finite,
    /// A number > 0.
    Positive,
    /// A number >= 0.
    NonNegative,
    /// A number within `lo..=hi`.
    Within(f64, f64),
    /// One of these strings.
    OneOf(&'static [&'static str]),
}

impl Check {
    fn accepts(&self, v: f64) -> bool {
        let in_range = match *self {
            Check::Any => return true,
            Check::Finite | Check::OneOf(_) => true,
            Check::Positive => v > 0.0,
            Check::NonNegative => v >= 0.0,
            Check::Within(lo, hi) => (lo..=hi).contains(&v),
        };
        v.is_finite() && in_range
    }

    /// What a refused number breaks, as an error says it.
    fn limit(&self) -> String {
        match *self {
            Check::Any | Check::Finite | Check::OneOf(_) => "must be finite".into(),
            Check::Positive => "must be > 0".into(),
            Check::NonNegative => "must be >= 0".into(),
            Check::Within(lo, hi) => format!("must be within {lo}..{hi}"),
        }
    }

    /// The check as the documentation's table shows it ("" for none).
    fn text(&self) -> String {
        match *self {
            Check::Any => String::new(),
            Check::Finite => "finite".into(),
            Check::Positive => "> 0".into(),
            Check::NonNegative => "≥ 0".into(),
            Check::Within(lo, hi) => format!("{lo}..{hi}"),
            Check::OneOf(values) => or_list(values, "`", " or "),
        }
    }
}

/// `a`, `b` and `c` with each value between `quote`s and `last` before the last one.
fn or_list(values: &[&str], quote: &str, last: &str) -> String {
    let quoted: Vec<String> = values
        .iter()
        .map(|v| format!("{quote}{v}{quote}"))
        .collect();
    match quoted.split_last() {
        None => String::new(),
        Some((end, [])) => end.clone(),
        Some((end, rest)) => format!("{}{last}{end}", rest.join(", ")),
    }
}

/// One private parameter of a node.
#[derive(Clone, Copy, Debug)]
pub struct ParamSpec {
    /// Name without the `~` (e.g. `state_timeout_ms`).
    pub name: &'static str,
    /// Type and default.
    pub default: ParamValue,
    /// What a value must be.
    pub check: Check,
    /// Unit, or "" when dimensionless.
    pub unit: &'static str,
    /// One-line description for the documentation table.
    pub doc: &'static str,
    /// The core configuration fields the value is written to: a core `validate()` error
    /// naming one of them is this parameter's error.
    pub feeds: &'static [Field],
}

/// Declares a node's parameter table: each entry `NAME = spec;` (optionally with
/// attributes and a visibility) becomes a `const NAME: ParamSpec`, and the table a `const`
/// array of every entry in order (the order of the documentation's table).
///
/// ```
/// use gem_ros::params::ParamSpec;
/// gem_ros::param_table! {
///     /// Every parameter.
///     pub const PARAMS = [
///         RATE = ParamSpec::float("rate", 20.0, "Hz", "publish rate").positive();
///         FRAME = ParamSpec::str("frame", "map", "frame of the markers");
///     ];
/// }
/// assert_eq!(PARAMS.len(), 2);
/// assert_eq!(RATE.name, "rate");
/// ```
#[macro_export]
macro_rules! param_table {
    ($(#[$meta:meta])* $vis:vis const $table:ident = [$($(#[$m:meta])* $evis:vis $name:ident = $spec:expr;)*];) => {
        $($(#[$m])* $evis const $name: $crate::params::ParamSpec = $spec;)*
        $(#[$meta])*
        $vis const $table: [$crate::params::ParamSpec; [$(stringify!($name)),*].len()] =
            [$($name),*];
    };
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
    /// The value has the right type but is out of range (the table's check, or a core
    /// `validate()`).
    #[error("parameter ~{name}: {reason}")]
    Invalid {
        /// Parameter name.
        name: &'static str,
        /// What is wrong with it, naming the value and the limit.
        reason: String,
    },
    /// A core `validate()` refused a field no parameter feeds.
    #[error("invalid settings: {0}")]
    Config(ConfigError),
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
    const fn new(
        name: &'static str,
        default: ParamValue,
        unit: &'static str,
        doc: &'static str,
    ) -> Self {
        ParamSpec {
            name,
            default,
            check: Check::Any,
            unit,
            doc,
            feeds: &[],
        }
    }

    /// Declares a float parameter.
    pub const fn float(
        name: &'static str,
        default: f64,
        unit: &'static str,
        doc: &'static str,
    ) -> Self {
        ParamSpec::new(name, ParamValue::Float(default), unit, doc)
    }

    /// Declares an integer parameter.
    pub const fn int(
        name: &'static str,
        default: i64,
        unit: &'static str,
        doc: &'static str,
    ) -> Self {
        ParamSpec::new(name, ParamValue::Int(default), unit, doc)
    }

    /// Declares a boolean parameter.
    pub const fn bool(name: &'static str, default: bool, doc: &'static str) -> Self {
        ParamSpec::new(name, ParamValue::Bool(default), "", doc)
    }

    /// Declares a string parameter.
    pub const fn str(name: &'static str, default: &'static str, doc: &'static str) -> Self {
        ParamSpec::new(name, ParamValue::Str(default), "", doc)
    }

    /// With the check `check`.
    pub const fn check(self, check: Check) -> Self {
        ParamSpec { check, ..self }
    }

    /// Must be finite.
    pub const fn finite(self) -> Self {
        self.check(Check::Finite)
    }

    /// Must be > 0.
    pub const fn positive(self) -> Self {
        self.check(Check::Positive)
    }

    /// Must be >= 0.
    pub const fn non_negative(self) -> Self {
        self.check(Check::NonNegative)
    }

    /// Must be within `lo..=hi`.
    pub const fn within(self, lo: f64, hi: f64) -> Self {
        self.check(Check::Within(lo, hi))
    }

    /// Must be one of `values` (or the default).
    pub const fn one_of(self, values: &'static [&'static str]) -> Self {
        self.check(Check::OneOf(values))
    }

    /// Written to the core fields `fields`.
    pub const fn feeds(self, fields: &'static [Field]) -> Self {
        ParamSpec {
            feeds: fields,
            ..self
        }
    }

    /// Reads a float parameter (integers are widened), or its default when unset, and
    /// applies the check.
    pub fn f64(&self) -> Result<f64, ParamError> {
        let ParamValue::Float(default) = self.default else {
            return Err(self.declared_as("float"));
        };
        let v = match self.raw()? {
            None => default,
            Some(Value::Double(v)) => v,
            Some(Value::Int(v)) => f64::from(v),
            Some(other) => return Err(self.wrong_type("float", &other)),
        };
        self.checked(v)
    }

    /// Reads an integer parameter, or its default when unset, and applies the check.
    pub fn i64(&self) -> Result<i64, ParamError> {
        let ParamValue::Int(default) = self.default else {
            return Err(self.declared_as("int"));
        };
        let v = match self.raw()? {
            None => default,
            Some(Value::Int(v)) => i64::from(v),
            Some(other) => return Err(self.wrong_type("int", &other)),
        };
        self.checked(v as f64).map(|_| v)
    }

    /// Reads a boolean parameter, or its default when unset.
    pub fn bool_value(&self) -> Result<bool, ParamError> {
        let ParamValue::Bool(default) = self.default else {
            return Err(self.declared_as("bool"));
        };
        match self.raw()? {
            None => Ok(default),
            Some(Value::Bool(v)) => Ok(v),
            Some(other) => Err(self.wrong_type("bool", &other)),
        }
    }

    /// Reads a string parameter, or its default when unset, and applies the check.
    pub fn string(&self) -> Result<String, ParamError> {
        let ParamValue::Str(default) = self.default else {
            return Err(self.declared_as("string"));
        };
        let v = match self.raw()? {
            None => return Ok(default.to_owned()),
            Some(Value::String(v)) => v,
            Some(other) => return Err(self.wrong_type("string", &other)),
        };
        match self.check {
            Check::OneOf(values) if v != default && !values.contains(&v.as_str()) => {
                let what = match values.len() {
                    2 => format!("neither {}", or_list(values, "", " nor ")),
                    _ => format!("none of {}", or_list(values, "", " and ")),
                };
                Err(self.invalid(format!("\"{v}\" is {what}")))
            }
            _ => Ok(v),
        }
    }

    /// Reads a duration given in seconds (its check must keep it finite and >= 0).
    pub fn seconds(&self) -> Result<std::time::Duration, ParamError> {
        let v = self.f64()?;
        if v.is_finite() && v >= 0.0 {
            Ok(std::time::Duration::from_secs_f64(v))
        } else {
            Err(self.invalid(format!(
                "{v} is invalid: must be a duration (finite and >= 0)"
            )))
        }
    }

    fn checked(&self, v: f64) -> Result<f64, ParamError> {
        if self.check.accepts(v) {
            Ok(v)
        } else {
            Err(self.invalid(format!("{v} is invalid: {}", self.check.limit())))
        }
    }

    /// Writes `value` to the parameter: a node stores a value it uses (a default included)
    /// where tools can read it.
    pub fn store_f64(&self, value: f64) -> Result<(), ParamError> {
        let not_stored = |reason: String| ParamError::NotStored {
            name: self.name,
            reason,
        };
        ros1_protocols::this_node::param(&format!("~{}", self.name))
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
            return Ok(OVERRIDES.with_borrow(|o| {
                o.iter()
                    .find(|(n, _)| *n == self.name)
                    .map(|(_, v)| v.clone())
            }));
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
            ParamValue::Float(v) => format!("{v}"),
            ParamValue::Int(v) => format!("{v}"),
            ParamValue::Bool(v) => format!("{v}"),
            ParamValue::Str(v) => format!("\"{v}\""),
        }
    }

    fn valid_text(&self) -> String {
        let mut configs: Vec<&str> = Vec::new();
        for f in self.feeds {
            if !configs.contains(&f.config) {
                configs.push(f.config);
            }
        }
        match (self.check, configs.is_empty()) {
            (Check::Any, false) => format!("by {}", or_list(&configs, "`", " and ")),
            (check, _) => check.text(),
        }
    }

    fn type_text(&self) -> &'static str {
        match self.default {
            ParamValue::Float(_) => "double",
            ParamValue::Int(_) => "int",
            ParamValue::Bool(_) => "bool",
            ParamValue::Str(_) => "string",
        }
    }
}

/// Writes the default of each parameter of `params` that is not set, in the node's private
/// namespace, and returns how many it wrote. A node reads an unset parameter as its
/// default; written down, every parameter the node runs with is there for `rosparam get`
/// and `rosparam list`, as the docs list them. A parameter that is set is left as it is,
/// valid or not (reading it reports what is wrong with it). Call once the node runs.
pub fn store_defaults(params: &[ParamSpec]) -> Result<usize, ParamError> {
    if !ros1_protocols::this_node::is_initialized() || EVERY_DEFAULT.get() {
        return Ok(0);
    }
    let mut written = 0;
    for p in params {
        let not_stored = |reason: String| ParamError::NotStored {
            name: p.name,
            reason,
        };
        let param = ros1_protocols::this_node::param(&format!("~{}", p.name))
            .ok_or_else(|| not_stored("the name does not resolve".into()))?;
        if param.exists().map_err(|e| not_stored(e.to_string()))? {
            continue;
        }
        param
            .set_raw(p.default.value())
            .map_err(|e| not_stored(e.to_string()))?;
        written += 1;
    }
    Ok(written)
}

thread_local! {
    static EVERY_DEFAULT: Cell<bool> = const { Cell::new(false) };
    static OVERRIDES: RefCell<Vec<(&'static str, Value)>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f` with every parameter read on this thread taken as unset, without asking the
/// parameter server: what a node's settings are when nobody sets anything. Tests use it to
/// pin a node's defaults to the core's.
pub fn with_every_default<R>(f: impl FnOnce() -> R) -> R {
    with_values(&[], f)
}

/// Runs `f` with the parameters read on this thread set to `values` (by name, without the
/// `~`; each a type and value) and every other one unset, without asking the parameter
/// server. Tests use it to see which parameter a node names for a value.
pub fn with_values<R>(values: &[(&'static str, ParamValue)], f: impl FnOnce() -> R) -> R {
    struct Restore(bool, Vec<(&'static str, Value)>);
    impl Drop for Restore {
        fn drop(&mut self) {
            EVERY_DEFAULT.set(self.0);
            OVERRIDES.set(std::mem::take(&mut self.1));
        }
    }
    let _restore = Restore(
        EVERY_DEFAULT.replace(true),
        OVERRIDES.replace(values.iter().map(|&(n, v)| (n, v.value())).collect()),
    );
    f()
}

/// The value of the parameter `name` (any graph name), `None` when unset; the error is
/// why the parameter server could not be asked.
fn raw_at(name: &str) -> Result<Option<Value>, String> {
    ros1_protocols::this_node::param(name)
        .ok_or_else(|| "the name does not resolve".to_string())?
        .get_raw()
        .map_err(|e| e.to_string())
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

/// A core `validate()` error as the error of the parameter in `params` that feeds the
/// field it names; [`ParamError::Config`] when none does.
pub fn config_error(params: &[ParamSpec], e: ConfigError) -> ParamError {
    match params.iter().find(|p| p.feeds.contains(&e.field)) {
        Some(spec) => spec.invalid(e.to_string()),
        None => ParamError::Config(e),
    }
}

/// The documentation's parameter table for `params`, one row per parameter. The `valid`
/// column shows the table's check, or the core configurations that check the value.
pub fn markdown_table(params: &[ParamSpec]) -> String {
    let columns = ["parameter", "type", "default", "valid", "unit", "meaning"];
    crate::docs::markdown_table(&columns, params, |p| {
        let name = format!("`~{}`", p.name);
        let (unit, doc) = (p.unit.to_owned(), p.doc.to_owned());
        vec![
            name,
            p.type_text().to_owned(),
            p.default_text(),
            p.valid_text(),
            unit,
            doc,
        ]
    })
}

/// Checks that the documentation page `page` (its text: `doc`) contains `params`' table
/// verbatim; the error shows the table it must contain.
pub fn check_docs(params: &[ParamSpec], page: &str, doc: &str) -> Result<(), String> {
    crate::docs::check_page("parameter", &markdown_table(params), page, doc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gem_core::field;

    #[allow(dead_code)]
    struct Gains {
        gain: f64,
        other: f64,
    }

    crate::param_table! {
        const TABLE = [
            RATE = ParamSpec::float("rate", 20.0, "Hz", "publish rate").positive();
            TIMEOUT = ParamSpec::int("state_timeout_ms", 500, "ms", "staleness").non_negative();
            LAW = ParamSpec::str("law", "", "the law").one_of(&["pid", "lqr", "mpc"]);
            MODEL = ParamSpec::str("model", "a", "the model").one_of(&["a", "b"]);
            GAIN = ParamSpec::float("gain", 1.0, "", "a gain").feeds(&[field!(Gains.gain)]);
        ];
    }

    #[test]
    fn table_lists_each_parameter_once_with_default_check_and_unit() {
        let table = markdown_table(&TABLE);
        assert!(table.contains("| `~rate` | double | 20 | > 0 | Hz | publish rate |"));
        assert!(table.contains("| `~state_timeout_ms` | int | 500 | ≥ 0 | ms | staleness |"));
        assert!(table.contains("| `~law` | string | \"\" | `pid`, `lqr` or `mpc` |  | the law |"));
        assert!(table.contains("| `~gain` | double | 1 | by `Gains` |  | a gain |"));
        assert_eq!(table.lines().count(), 7);
    }

    #[test]
    fn reading_with_the_wrong_accessor_is_an_error_naming_the_parameter() {
        let err = RATE.i64().unwrap_err();
        assert!(err.to_string().contains("~rate"), "{err}");
    }

    #[test]
    fn reading_applies_the_check_and_names_the_parameter() {
        let read = |values: &[(&'static str, ParamValue)]| {
            with_values(values, || {
                [
                    RATE.f64().err(),
                    TIMEOUT.i64().err(),
                    LAW.string().err(),
                    MODEL.string().err(),
                ]
            })
        };
        assert_eq!(read(&[]), [None, None, None, None]);
        let errors = read(&[
            ("rate", ParamValue::Float(f64::NAN)),
            ("state_timeout_ms", ParamValue::Int(-1)),
            ("law", ParamValue::Str("pd")),
            ("model", ParamValue::Str("c")),
        ]);
        let text: Vec<String> = errors.iter().flatten().map(|e| e.to_string()).collect();
        assert_eq!(
            text,
            [
                "parameter ~rate: NaN is invalid: must be > 0",
                "parameter ~state_timeout_ms: -1 is invalid: must be >= 0",
                "parameter ~law: \"pd\" is none of pid, lqr and mpc",
                "parameter ~model: \"c\" is neither a nor b",
            ]
        );
    }

    #[test]
    fn a_core_error_is_the_error_of_the_parameter_feeding_its_field() {
        let e = ConfigError::new(field!(Gains.gain), 0, "must be > 0");
        assert_eq!(
            config_error(&TABLE, e).to_string(),
            "parameter ~gain: gain = 0 is invalid: must be > 0"
        );
        let unfed = ConfigError::new(field!(Gains.other), 0, "must be > 0");
        assert_eq!(
            config_error(&TABLE, unfed).to_string(),
            "invalid settings: other = 0 is invalid: must be > 0"
        );
    }
}
