//! Renamer rules: index-addressed array elements become name-addressed keys, using a
//! sibling array of names. For `sensor_msgs/JointState`, the rule
//! `{from: "position.#", name: "name.#", to: "#.pos"}` turns `position.0` into
//! `first_joint.pos` when `name.0` is `first_joint`. `#` stands for the index in `from`
//! and `name`, and for the element's name in `to`; whatever follows the matched part of a
//! key is kept (`transforms.#.transform` → `#` renames `transforms.2.transform.rotation.w`
//! to `base_link.rotation.w`). Keys without a name (no such `name` entry, or not a string)
//! keep their index: nothing is dropped.

use crate::{Flat, ValueRef};
use serde::Deserialize;
use thiserror::Error;

/// A rule file that does not parse.
#[derive(Debug, Error, PartialEq)]
#[error("renamer rules: {0}")]
pub struct RenameError(String);

/// One rule, as written.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RuleSpec {
    /// Key pattern with one `#`.
    pub from: String,
    /// Key of the element's name, with one `#`.
    pub name: String,
    /// Replacement with one `#` (the name).
    pub to: String,
}

/// A checked rule.
#[derive(Clone, Debug, PartialEq)]
pub struct Renamer {
    from: (String, String),
    name: (String, String),
    to: (String, String),
}

fn split_hash(s: &str, what: &str) -> Result<(String, String), RenameError> {
    match s.split_once('#') {
        Some((a, b)) if !b.contains('#') => Ok((a.to_owned(), b.to_owned())),
        _ => Err(RenameError(format!(
            "{what} {s:?} must contain exactly one `#`"
        ))),
    }
}

impl Renamer {
    /// Checks a rule.
    pub fn new(spec: &RuleSpec) -> Result<Renamer, RenameError> {
        Ok(Renamer {
            from: split_hash(&spec.from, "from")?,
            name: split_hash(&spec.name, "name")?,
            to: split_hash(&spec.to, "to")?,
        })
    }

    /// `(index, rest)` when `key` matches `from`.
    fn matches<'k>(&self, key: &'k str) -> Option<(&'k str, &'k str)> {
        let after = key.strip_prefix(self.from.0.as_str())?;
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let (index, rest) = after.split_at(digits);
        let rest = rest.strip_prefix(self.from.1.as_str())?;
        // The match must end at a key boundary.
        (rest.is_empty() || rest.starts_with('.')).then_some((index, rest))
    }
}

/// Parses a YAML list of `{from, name, to}` rules.
pub fn parse(text: &str) -> Result<Vec<Renamer>, RenameError> {
    let specs: Vec<RuleSpec> =
        serde_yaml::from_str(text).map_err(|e| RenameError(e.to_string()))?;
    specs.iter().map(Renamer::new).collect()
}

/// Applies `rules` to `flat`'s keys (first matching rule wins).
pub fn apply(rules: &[Renamer], flat: &mut Flat) {
    for i in 0..flat.len() {
        let renamed = {
            let (key, _) = flat.entry(i);
            rules.iter().find_map(|r| {
                let (index, rest) = r.matches(key)?;
                let name_key = format!("{}{index}{}", r.name.0, r.name.1);
                match flat.get(&name_key)? {
                    ValueRef::Str(name) if !name.is_empty() => {
                        Some(format!("{}{name}{}{rest}", r.to.0, r.to.1))
                    }
                    _ => None,
                }
            })
        };
        if let Some(k) = renamed {
            flat.set_key(i, k);
        }
    }
}
