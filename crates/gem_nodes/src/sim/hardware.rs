//! The car's hardware beside the PACMod, simulated for `gem_e2_sim` (`~interface: pacmod`):
//! what the GEM e2's sources file (`launch/config/signal_sources/gem_e2.yaml`) reads for
//! the state manager's inputs. The battery management system on `gem/bms`, the hardware
//! e-stop button on `gem/estop_button` (released), both at 10 Hz of simulated time, and,
//! with `~computer_thermal_root`, a folder standing in for the car computer's `/sys` whose
//! `thermal_zone0` holds `~computer_temperature_c`.

use super::topics::{BMS, ESTOP_BUTTON};
use gem_core::time::Time;
use gem_msgs::sensor_msgs::BatteryState;
use gem_msgs::std_msgs::{Bool, Header};
use gem_ros::time::to_ros;
use ros1_protocols::RosError;
use std::path::PathBuf;
use std::time::Duration;

/// How often the BMS and the button publish (simulated time).
const PERIOD: Duration = Duration::from_millis(100);
/// How often the thermal zone is rewritten (simulated time).
const THERMAL_PERIOD: Duration = Duration::from_secs(1);

/// The simulated hardware's settings.
#[derive(Clone, Debug)]
pub struct HardwareConfig {
    /// The BMS's state of charge, 0–1.
    pub bms_charge: f64,
    /// The folder standing in for `/sys`, if any.
    pub thermal_root: Option<PathBuf>,
    /// The computer's temperature, °C.
    pub computer_temperature_c: f64,
}

/// The publishers and when each output is next due.
pub(super) struct Hardware {
    config: HardwareConfig,
    bms: ros1_protocols::runtime::Publisher<BatteryState>,
    button: ros1_protocols::runtime::Publisher<Bool>,
    zone: Option<PathBuf>,
    next: Option<Time>,
    next_thermal: Option<Time>,
}

impl Hardware {
    pub(super) fn new(config: HardwareConfig) -> Result<Hardware, RosError> {
        let zone = match &config.thermal_root {
            Some(root) => {
                let dir = root.join("class/thermal/thermal_zone0");
                std::fs::create_dir_all(&dir).map_err(|e| {
                    RosError::new(format!("~computer_thermal_root: {}: {e}", dir.display()))
                })?;
                Some(dir.join("temp"))
            }
            None => None,
        };
        Ok(Hardware {
            config,
            bms: BMS.publish()?,
            button: ESTOP_BUTTON.publish()?,
            zone,
            next: None,
            next_thermal: None,
        })
    }

    /// Publishes (and writes) what is due at `now`.
    pub(super) fn publish_if_due(&mut self, now: Time) {
        if due(&mut self.next, now, PERIOD) {
            let header = Header {
                seq: 0,
                stamp: to_ros(now),
                frame_id: String::new(),
            };
            let _ = self.bms.send(BatteryState {
                header,
                percentage: self.config.bms_charge as f32,
                present: true,
                ..Default::default()
            });
            let _ = self.button.send(Bool { data: false });
        }
        if let Some(zone) = &self.zone {
            if due(&mut self.next_thermal, now, THERMAL_PERIOD) {
                // Written whole and renamed, so a reader never sees half a number.
                let text = format!(
                    "{}\n",
                    (self.config.computer_temperature_c * 1000.0).round()
                );
                let partial = zone.with_extension("partial");
                if let Err(e) =
                    std::fs::write(&partial, text).and_then(|()| std::fs::rename(&partial, zone))
                {
                    tracing::warn!("cannot write {}: {e}", zone.display());
                }
            }
        }
    }
}

/// Whether a period has passed since `next` was set (or time went back); moves it on.
fn due(next: &mut Option<Time>, now: Time, period: Duration) -> bool {
    match *next {
        Some(at) if now < at && at.saturating_since(now) <= period => false,
        _ => {
            *next = Some(now.saturating_add(period));
            true
        }
    }
}
