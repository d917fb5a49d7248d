//! The simulated PACMod's topics (`~interface: pacmod`): its command subscribers and the
//! override a test takes, and its reports at `~pacmod_report_rate`.

use super::topics::*;
use super::world::World;
use gem_core::pacmod::plant::{Flags, Plant};
use gem_core::time::Time;
use gem_msgs::pacmod_msgs::{GlobalRpt, PacmodCmd, SystemRptFloat, VehicleSpeedRpt};
use gem_msgs::std_msgs::{Bool, Float64, Header};
use gem_ros::time::to_ros;
use ros1_protocols::direct::DirectSubscriber;
use ros1_protocols::RosError;
use std::sync::Arc;
use std::time::Duration;

/// Runs `f` on the PACMod, if the simulator has one.
pub(super) fn with_plant(world: &World, f: impl FnOnce(&mut Plant)) {
    if let Some(plant) = &mut world.lock().pacmod {
        f(plant);
    }
}

/// A command's flags.
pub(super) fn flags(m: &PacmodCmd) -> Flags {
    Flags {
        enable: m.enable,
        clear: m.clear,
    }
}

/// The PACMod's command topics and the override.
pub(super) fn subscribe_pacmod(world: &Arc<World>) -> Result<Vec<DirectSubscriber>, RosError> {
    let w = world.clone();
    let enable = crate::interface::subscribe(&PACMOD_ENABLE_CMD, move |m, _| {
        with_plant(&w, |p| p.enable_command(m.data));
    })?;
    let w = world.clone();
    let accel = crate::interface::subscribe(&PACMOD_ACCEL_CMD, move |m, _| {
        with_plant(&w, |p| p.accel_command(m.f64_cmd, flags(&m)));
    })?;
    let w = world.clone();
    let brake = crate::interface::subscribe(&PACMOD_BRAKE_CMD, move |m, _| {
        with_plant(&w, |p| p.brake_command(m.f64_cmd, flags(&m)));
    })?;
    let w = world.clone();
    let shift = crate::interface::subscribe(&PACMOD_SHIFT_CMD, move |m, _| {
        with_plant(&w, |p| p.shift_command(m.ui16_cmd, flags(&m)));
    })?;
    let w = world.clone();
    let steer = crate::interface::subscribe(&PACMOD_STEER_CMD, move |m, _| {
        with_plant(&w, |p| {
            p.steer_command(
                m.angular_position,
                m.angular_velocity_limit,
                Flags::default(),
            )
        });
    })?;
    let w = world.clone();
    let takeover = crate::interface::subscribe(&PACMOD_OVERRIDE, move |m, _| {
        tracing::info!(
            "PACMod override {}",
            if m.data { "taken" } else { "let go" }
        );
        with_plant(&w, |p| p.set_override(m.data));
    })?;
    Ok(vec![enable, accel, brake, shift, steer, takeover])
}

/// The PACMod's reports, published every `period` of simulated time.
pub(super) struct PacmodReports {
    enabled: ros1_protocols::runtime::Publisher<Bool>,
    speed: ros1_protocols::runtime::Publisher<Float64>,
    speed_rpt: ros1_protocols::runtime::Publisher<VehicleSpeedRpt>,
    steer_rpt: ros1_protocols::runtime::Publisher<SystemRptFloat>,
    accel_rpt: ros1_protocols::runtime::Publisher<SystemRptFloat>,
    brake_rpt: ros1_protocols::runtime::Publisher<SystemRptFloat>,
    global_rpt: ros1_protocols::runtime::Publisher<GlobalRpt>,
    period: Duration,
    last: Option<Time>,
}

impl PacmodReports {
    pub(super) fn new(rate_hz: f64) -> Result<Self, RosError> {
        Ok(PacmodReports {
            enabled: PACMOD_ENABLED.publish()?,
            speed: PACMOD_SPEED.publish()?,
            speed_rpt: PACMOD_SPEED_RPT.publish()?,
            steer_rpt: PACMOD_STEER_RPT.publish()?,
            accel_rpt: PACMOD_ACCEL_RPT.publish()?,
            brake_rpt: PACMOD_BRAKE_RPT.publish()?,
            global_rpt: PACMOD_GLOBAL_RPT.publish()?,
            period: Duration::from_secs_f64(1.0 / rate_hz),
            last: None,
        })
    }

    /// Publishes the reports when a period has passed since the last ones (or time went
    /// back).
    pub(super) fn publish_if_due(&mut self, world: &World, now: Time) {
        let due = self
            .last
            .is_none_or(|at| now < at || now.saturating_since(at) >= self.period);
        if !due {
            return;
        }
        self.last = Some(now);
        let report = {
            let mut m = world.lock();
            let speed = m.vehicle.state().speed_mps;
            match &mut m.pacmod {
                Some(plant) => plant.report(now, speed),
                None => return,
            }
        };
        let header = Header {
            seq: 0,
            stamp: to_ros(now),
            frame_id: String::new(),
        };
        let _ = self.speed_rpt.send(VehicleSpeedRpt {
            header: header.clone(),
            vehicle_speed: report.speed_mph,
            vehicle_speed_valid: true,
            ..Default::default()
        });
        let _ = self.speed.send(Float64 {
            data: report.speed_mps,
        });
        let _ = self.steer_rpt.send(SystemRptFloat {
            header: header.clone(),
            enabled: report.enabled,
            override_active: report.override_active,
            command: report.wheel_command_rad,
            output: report.wheel_rad,
            ..Default::default()
        });
        let pedal = |(command, output): (f64, f64)| SystemRptFloat {
            header: header.clone(),
            enabled: report.enabled,
            override_active: report.override_active,
            command,
            output,
            ..Default::default()
        };
        let _ = self
            .accel_rpt
            .send(pedal((report.pedal_commands.0, report.pedal_outputs.0)));
        let _ = self
            .brake_rpt
            .send(pedal((report.pedal_commands.1, report.pedal_outputs.1)));
        let _ = self.global_rpt.send(GlobalRpt {
            header,
            enabled: report.enabled,
            override_active: report.override_active,
            ..Default::default()
        });
        let _ = self.enabled.send(Bool {
            data: report.enabled,
        });
    }
}
