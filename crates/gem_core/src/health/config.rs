//! The supervisor's YAML configuration, checked completely before anything is monitored.
//!
//! ```yaml
//! topics:
//!   - topic: /battery_level                      # absolute name
//!     type: gem_state_msgs/BatteryLevelStamped   # optional: any other type is ERROR
//!     timeout_s: 1.0                             # optional, default 1 s: silence → STALE; 0: none
//!     rate_hz: [15, 25]                          # optional band: outside → WARN
//!     rules:                                     # optional, see `health::rule`
//!       - battery_level in 0..1
//! ```
//!
//! Every error names the line it comes from: serde's own for the structure, the line the
//! offending rule or entry is written on for the rest.

use super::rule::Rule;
use super::TopicSpec;
use serde::Deserialize;
use std::time::Duration;
use thiserror::Error;

/// Why a configuration is refused.
#[derive(Debug, Error, PartialEq)]
#[error("line {line}: {reason}")]
pub struct ConfigFileError {
    /// 1-based line (0 when unknown).
    pub line: usize,
    /// What is wrong.
    pub reason: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    topics: Vec<Entry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    topic: String,
    #[serde(rename = "type")]
    type_name: Option<String>,
    timeout_s: Option<f64>,
    rate_hz: Option<(f64, f64)>,
    #[serde(default)]
    rules: Vec<String>,
}

/// The default silence limit.
const DEFAULT_TIMEOUT_S: f64 = 1.0;

/// Parses and checks a configuration.
pub fn parse(text: &str) -> Result<Vec<TopicSpec>, ConfigFileError> {
    let file: File = serde_yaml::from_str(text).map_err(|e| ConfigFileError {
        line: e.location().map_or(0, |l| l.line()),
        reason: e.to_string(),
    })?;
    if file.topics.is_empty() {
        return Err(ConfigFileError {
            line: line_of(text, "topics"),
            reason: "no topics to monitor".into(),
        });
    }
    let mut specs: Vec<TopicSpec> = Vec::new();
    for e in file.topics {
        let line = line_of(text, &e.topic);
        let fail = |reason: String| ConfigFileError { line, reason };
        if !e.topic.starts_with('/') {
            return Err(fail(format!(
                "topic {:?} must be an absolute name",
                e.topic
            )));
        }
        if specs.iter().any(|s| s.topic == e.topic) {
            return Err(fail(format!("topic {} is listed twice", e.topic)));
        }
        let timeout_s = e.timeout_s.unwrap_or(DEFAULT_TIMEOUT_S);
        if !(timeout_s.is_finite() && timeout_s >= 0.0) {
            return Err(fail(format!(
                "{}: timeout_s = {timeout_s} must be ≥ 0 (0: no timeout)",
                e.topic
            )));
        }
        if let Some((lo, hi)) = e.rate_hz {
            if !(lo.is_finite() && hi.is_finite() && 0.0 <= lo && lo <= hi) {
                return Err(fail(format!(
                    "{}: rate_hz = [{lo}, {hi}] must be 0 ≤ min ≤ max",
                    e.topic
                )));
            }
        }
        let rules = e
            .rules
            .iter()
            .map(|r| {
                Rule::parse(r).map_err(|err| ConfigFileError {
                    line: line_of(text, r),
                    reason: err.to_string(),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        specs.push(TopicSpec {
            topic: e.topic,
            type_name: e.type_name,
            timeout: (timeout_s > 0.0).then(|| Duration::from_secs_f64(timeout_s)),
            rate_hz: e.rate_hz,
            rules,
        });
    }
    check_references(text, &specs)?;
    Ok(specs)
}

/// A rule may only read topics that are monitored (else it could never see them).
fn check_references(text: &str, specs: &[TopicSpec]) -> Result<(), ConfigFileError> {
    for s in specs {
        for r in &s.rules {
            if let Some(t) = r
                .topics()
                .into_iter()
                .find(|t| !specs.iter().any(|s| &s.topic == t))
            {
                return Err(ConfigFileError {
                    line: line_of(text, r.text()),
                    reason: format!("rule `{}` reads {t}, which is not monitored", r.text()),
                });
            }
        }
    }
    Ok(())
}

/// The first line containing `needle` (1-based), 0 if none.
fn line_of(text: &str, needle: &str) -> usize {
    text.lines()
        .position(|l| l.contains(needle))
        .map_or(0, |i| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "\
topics:
  - topic: /battery_level
    type: gem_state_msgs/BatteryLevelStamped
    timeout_s: 0.5
    rate_hz: [15, 25]
    rules:
      - battery_level in 0..1
  - topic: /estop
";

    #[test]
    fn parses_every_field_and_defaults() {
        let specs = parse(GOOD).unwrap();
        assert_eq!(specs.len(), 2);
        assert_eq!(specs[0].timeout, Some(Duration::from_millis(500)));
        assert_eq!(specs[0].rate_hz, Some((15.0, 25.0)));
        assert_eq!(specs[0].rules.len(), 1);
        assert_eq!(specs[1].timeout, Some(Duration::from_secs(1)));
        assert_eq!(specs[1].type_name, None);
    }

    #[test]
    fn a_bad_rule_or_an_unknown_key_names_its_line() {
        // (what GOOD says, what it says instead, the line, a word of the reason)
        for (good, bad, line, reason) in [
            (
                "battery_level in 0..1",
                "battery_level in 1..0",
                7,
                "empty range",
            ),
            ("timeout_s: 0.5", "timeout: 0.5", 4, "timeout"),
        ] {
            let e = parse(&GOOD.replace(good, bad)).unwrap_err();
            assert_eq!(e.line, line, "{bad}: {e}");
            assert!(e.reason.contains(reason), "{bad}: {e}");
        }
    }

    #[test]
    fn yaml_syntax_error_names_its_line() {
        let e = parse("topics:\n  - topic: /a\n    rules: [x > 1\n").unwrap_err();
        assert!(e.line >= 3, "{e}");
    }

    #[test]
    fn relative_duplicate_and_nonpositive_timeouts_are_refused() {
        assert!(parse("topics:\n  - topic: estop\n")
            .unwrap_err()
            .reason
            .contains("absolute"));
        let dup = "topics:\n  - topic: /a\n  - topic: /a\n";
        assert!(parse(dup).unwrap_err().reason.contains("twice"));
        let negative = "topics:\n  - topic: /a\n    timeout_s: -1\n";
        assert_eq!(parse(negative).unwrap_err().line, 2);
        let zero = "topics:\n  - topic: /a\n    timeout_s: 0\n";
        assert_eq!(parse(zero).unwrap()[0].timeout, None);
        let band = "topics:\n  - topic: /a\n    rate_hz: [5, 1]\n";
        assert!(parse(band).unwrap_err().reason.contains("min ≤ max"));
    }

    #[test]
    fn rule_reading_an_unmonitored_topic_is_refused() {
        let text = "topics:\n  - topic: /cmd\n    rules:\n      - speed != 0 || /estop:enabled\n";
        let e = parse(text).unwrap_err();
        assert_eq!(e.line, 4);
        assert!(e.reason.contains("/estop, which is not monitored"), "{e}");
    }

    #[test]
    fn empty_topic_list_is_refused() {
        assert!(parse("topics: []\n")
            .unwrap_err()
            .reason
            .contains("no topics"));
    }
}
