//! The one error every core configuration's `validate()` returns.

use thiserror::Error;

/// A configuration value outside its valid range: which field, its value, the limit.
/// Field names are the ROS parameter names, so a node can point at the parameter.
#[derive(Debug, Error, PartialEq)]
#[error("{field} = {value} is invalid: {limit}")]
pub struct ConfigError {
    /// The field (and ROS parameter) name.
    pub field: &'static str,
    /// The offending value, printed.
    pub value: String,
    /// The limit it breaks.
    pub limit: &'static str,
}

impl ConfigError {
    /// An error for `field` holding `value`.
    pub fn new(field: &'static str, value: impl ToString, limit: &'static str) -> Self {
        ConfigError {
            field,
            value: value.to_string(),
            limit,
        }
    }
}

/// One range check of a `validate()`: the field's name, its value, whether it is in range,
/// and the limit to print when it is not.
pub type Check = (&'static str, f64, bool, &'static str);

/// The first check whose value is not finite or not in range, as an error.
pub fn first_invalid(checks: impl IntoIterator<Item = Check>) -> Result<(), ConfigError> {
    match checks
        .into_iter()
        .find(|(_, v, ok, _)| !(v.is_finite() && *ok))
    {
        Some((field, value, _, limit)) => Err(ConfigError::new(field, value, limit)),
        None => Ok(()),
    }
}
