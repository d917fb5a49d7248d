//! A thermal source's reader: the chosen sensors' files under the sysfs root, read when
//! due (ROS time), the hottest reading as the temperature; a failure logged once per
//! change of reason.

use gem_core::signal_sources::thermal::{self, ThermalSource};
use gem_core::time::Time;
use std::path::{Path, PathBuf};

/// A thermal source's reader: its sensor files, when it is next due, the last outcome
/// (logged on a change only).
pub(super) struct Thermal {
    source: ThermalSource,
    files: Vec<(String, PathBuf)>,
    next: Time,
    last_error: Option<String>,
}

impl Thermal {
    pub(super) fn new(source: ThermalSource, sysfs: &Path) -> Thermal {
        let files = source
            .sensors
            .iter()
            .map(|s| {
                let file = thermal::sensor_file(sysfs, s).expect("names checked with the file");
                (s.clone(), file)
            })
            .collect();
        Thermal {
            source,
            files,
            next: Time::ZERO,
            last_error: None,
        }
    }

    /// Reads the sensors when due: the hottest reading, °C, and how long it stays fresh.
    pub(super) fn read(&mut self, now: Time) -> Option<(f64, std::time::Duration)> {
        if now < self.next {
            return None;
        }
        self.next = now.saturating_add(self.source.period);
        let readings: Vec<_> = self
            .files
            .iter()
            .map(|(name, file)| match std::fs::read_to_string(file) {
                Ok(text) => thermal::parse_millidegrees(name, &text),
                Err(e) => Err(thermal::SensorError {
                    sensor: name.clone(),
                    reason: format!("{}: {e}", file.display()),
                }),
            })
            .collect();
        match thermal::hottest(&readings) {
            Ok(c) => {
                if self.last_error.take().is_some() {
                    tracing::info!("temperature: the sensors read again ({c:.1} °C)");
                }
                Some((c, self.source.stale_after))
            }
            Err(e) => {
                if self.last_error.as_ref() != Some(&e) {
                    tracing::error!("temperature: no sensor gives a reading: {e}");
                    self.last_error = Some(e);
                }
                None
            }
        }
    }
}
