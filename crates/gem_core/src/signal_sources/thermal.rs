//! The computer's own temperature: the hottest of chosen Linux sensors, thermal zones
//! (`thermal_zone0`: `<sysfs>/class/thermal/thermal_zone0/temp`) or hwmon inputs
//! (`hwmon1/temp2`: `<sysfs>/class/hwmon/hwmon1/temp2_input`), both in millidegrees
//! Celsius. The sysfs root is the node's parameter, so a test can point it at a folder.

use std::path::{Path, PathBuf};
use std::time::Duration;
use thiserror::Error;

/// How often the sensors are read when the file does not say.
pub const DEFAULT_PERIOD: Duration = Duration::from_secs(1);

/// The sensors of a thermal source.
#[derive(Clone, Debug, PartialEq)]
pub struct ThermalSource {
    /// Sensor names (`thermal_zone0`, `hwmon1/temp2`).
    pub sensors: Vec<String>,
    /// How often they are read.
    pub period: Duration,
    /// No sensor readable for this long: nothing is published.
    pub stale_after: Duration,
}

/// The number after `prefix` in `s`, if `s` is exactly that.
fn numbered<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    s.strip_prefix(prefix)
        .filter(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
}

/// The file under the sysfs root `sysfs` that holds `sensor`'s reading, if `sensor` is a
/// sensor name.
pub fn sensor_file(sysfs: &Path, sensor: &str) -> Option<PathBuf> {
    if numbered(sensor, "thermal_zone").is_some() {
        return Some(sysfs.join("class/thermal").join(sensor).join("temp"));
    }
    let (chip, input) = sensor.split_once('/')?;
    numbered(chip, "hwmon")?;
    numbered(input, "temp")?;
    Some(
        sysfs
            .join("class/hwmon")
            .join(chip)
            .join(format!("{input}_input")),
    )
}

impl ThermalSource {
    /// Checks the sensor names.
    pub fn new(
        sensors: Vec<String>,
        period: Duration,
        stale_after: Duration,
    ) -> Result<ThermalSource, String> {
        if sensors.is_empty() {
            return Err("a thermal source needs at least one sensor".into());
        }
        if let Some(bad) = sensors
            .iter()
            .find(|s| sensor_file(Path::new("/"), s).is_none())
        {
            return Err(format!(
                "{bad:?} is not a sensor name (`thermal_zone<N>` or `hwmon<N>/temp<M>`)"
            ));
        }
        Ok(ThermalSource {
            sensors,
            period,
            stale_after,
        })
    }
}

/// Why a sensor gives no reading.
#[derive(Debug, Error, PartialEq)]
#[error("{sensor}: {reason}")]
pub struct SensorError {
    /// The sensor's name.
    pub sensor: String,
    /// What went wrong (the file unreadable, not a number, out of range).
    pub reason: String,
}

/// Readings below this (°C) are a sensor's "no value" (-273 °C and the like), not a
/// temperature; above the upper bound, a broken sensor.
const PLAUSIBLE_C: (f64, f64) = (-60.0, 200.0);

/// A sysfs reading (millidegrees Celsius, as text) in °C.
pub fn parse_millidegrees(sensor: &str, text: &str) -> Result<f64, SensorError> {
    let fail = |reason: String| SensorError {
        sensor: sensor.to_string(),
        reason,
    };
    let milli: i64 = text
        .trim()
        .parse()
        .map_err(|_| fail(format!("{:?} is not millidegrees", text.trim())))?;
    let c = milli as f64 / 1000.0;
    if !(PLAUSIBLE_C.0..=PLAUSIBLE_C.1).contains(&c) {
        return Err(fail(format!("{c} °C is not a plausible reading")));
    }
    Ok(c)
}

/// The hottest of the sensors' readings, or, when none gave one, every reason.
pub fn hottest(readings: &[Result<f64, SensorError>]) -> Result<f64, String> {
    let best = readings
        .iter()
        .filter_map(|r| r.as_ref().ok())
        .copied()
        .fold(None, |m: Option<f64>, c| Some(m.map_or(c, |m| m.max(c))));
    best.ok_or_else(|| {
        readings
            .iter()
            .filter_map(|r| r.as_ref().err().map(ToString::to_string))
            .collect::<Vec<_>>()
            .join("; ")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sensor_names_map_to_their_sysfs_files() {
        let root = Path::new("/sys");
        assert_eq!(
            sensor_file(root, "thermal_zone3"),
            Some(PathBuf::from("/sys/class/thermal/thermal_zone3/temp"))
        );
        assert_eq!(
            sensor_file(root, "hwmon1/temp2"),
            Some(PathBuf::from("/sys/class/hwmon/hwmon1/temp2_input"))
        );
        for bad in [
            "thermal_zone",
            "zone0",
            "hwmon1",
            "hwmon/temp1",
            "hwmon1/fan1",
            "../etc",
        ] {
            assert_eq!(sensor_file(root, bad), None, "{bad}");
        }
    }

    #[test]
    fn readings_are_millidegrees_and_implausible_ones_are_refused() {
        assert_eq!(parse_millidegrees("z", "45500\n").unwrap(), 45.5);
        assert_eq!(parse_millidegrees("z", "-5000").unwrap(), -5.0);
        assert!(parse_millidegrees("z", "hot")
            .unwrap_err()
            .reason
            .contains("not millidegrees"));
        assert!(parse_millidegrees("z", "-273150").is_err());
        assert!(parse_millidegrees("z", "250000").is_err());
    }

    #[test]
    fn the_hottest_readable_sensor_counts_and_none_readable_says_why() {
        let bad = || {
            Err(SensorError {
                sensor: "hwmon0/temp1".into(),
                reason: "gone".into(),
            })
        };
        assert_eq!(hottest(&[Ok(40.0), bad(), Ok(61.5)]), Ok(61.5));
        assert_eq!(hottest(&[bad()]), Err("hwmon0/temp1: gone".to_string()));
    }

    #[test]
    fn a_source_without_sensors_or_with_a_bad_name_is_refused() {
        let new = |s: &[&str]| {
            ThermalSource::new(
                s.iter().map(|s| s.to_string()).collect(),
                DEFAULT_PERIOD,
                3 * DEFAULT_PERIOD,
            )
        };
        assert!(new(&["thermal_zone0", "hwmon2/temp1"]).is_ok());
        assert!(new(&[]).unwrap_err().contains("at least one sensor"));
        assert!(new(&["cpu"]).unwrap_err().contains("not a sensor name"));
    }
}
