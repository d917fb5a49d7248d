//! The simulated world: the vehicle model, what localization makes of it, the INS status
//! a test sets and, with `~interface: pacmod`, the PACMod in front of the car; shared by the
//! subscribers, the services and the stepping loop.

use gem_core::gnss::simulated::StatusOverride;
use gem_core::pacmod::plant::Plant;
use gem_core::vehicle::localization::Localizer;
use gem_core::vehicle::VehicleModel;
use ros1_protocols::Lock;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// The model and what localization makes of it, shared by the command subscriber, the
/// services and the stepping loop.
pub(super) struct World {
    pub(super) model: Mutex<Sim>,
    pub(super) name: String,
}

/// The world's state, behind [`World`]'s lock.
pub(super) struct Sim {
    pub(super) vehicle: VehicleModel,
    pub(super) localizer: Localizer,
    /// With `~pose_output: inspva`: the solution's status.
    pub(super) ins_status: StatusOverride,
    /// With `~interface: pacmod`: the PACMod in front of the car.
    pub(super) pacmod: Option<Plant>,
}

impl Sim {
    /// One step, and the localization's view of it.
    pub(super) fn step(&mut self, dt: Duration) {
        if let Some(plant) = &mut self.pacmod {
            let a = plant.step(dt, self.vehicle.state().speed_mps);
            self.vehicle
                .drive_by_acceleration(a.front_wheel_rad, a.accel_mps2);
        }
        self.vehicle.step(dt);
        self.localizer
            .observe(self.vehicle.now(), self.vehicle.state());
    }
}

impl World {
    pub(super) fn lock(&self) -> MutexGuard<'_, Sim> {
        self.model.locked()
    }
}
