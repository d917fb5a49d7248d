//! The bridge driving the simulated PACMod and the car in one process, in core time: what
//! the `pacmod_bridge` node and `gem_sim`'s PACMod mode do across topics, for benchmarks
//! and tests.
//!
//! - A drive command reaches the bridge when it is given ([`Rig::command`]), as the node
//!   hands each `gem/ackermann_cmd` to the core on arrival.
//! - Every `report_period` (the simulator's `~pacmod_report_rate`) the plant's report
//!   reaches the bridge: enabled, override, the speed in m/s, the steering wheel.
//! - Every `tick_period` (the bridge's `~rate`) the bridge's output is carried out on the
//!   plant as the node sends it: enable, the two pedals in [`Pedals::send_order`], the
//!   gear, the steering wheel. A silent tick sends nothing; the plant keeps the last
//!   commands, as the driver does.
//! - Then the plant moves the steering wheel and hands the car its front-wheel angle and
//!   acceleration ([`VehicleModel::drive_by_acceleration`]).
//!
//! Reports and ticks keep to their grids on the car's clock, quantised to its steps. A
//! report and a tick due at the same step come in that order: the bridge acts on the
//! freshest report, which the nodes, whose phases are independent, do only by chance.
//!
//! The rig records what the plant applied: each pedal's peak, and how often both pedals
//! were pressed at once, checked after every pedal command and at every step.
//!
//! [`Pedals::send_order`]: super::longitudinal::Pedals::send_order

use super::bridge::{Bridge, Event, Output, PacmodCommand, StateName};
use super::calibration::{Request, RunError};
use super::pedal_map::Pedal;
use super::plant::{Flags, Plant, Report};
use super::SHIFT_FORWARD;
use crate::control::closed_loop::CommandPath;
use crate::time::{Grid, Time};
use crate::vehicle::{DriveCommand, VehicleModel};
use std::time::Duration;

/// How often the plant reports and the bridge ticks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RigConfig {
    /// Between two reports of the plant.
    pub report_period: Duration,
    /// Between two ticks of the bridge.
    pub tick_period: Duration,
}

impl RigConfig {
    /// The nodes' defaults: the simulator reports and the bridge ticks at 30 Hz.
    pub const DEFAULT: RigConfig = RigConfig {
        report_period: Duration::from_nanos(1_000_000_000 / 30),
        tick_period: Duration::from_nanos(1_000_000_000 / 30),
    };
}

impl Default for RigConfig {
    fn default() -> Self {
        RigConfig::DEFAULT
    }
}

/// What the plant applied of the pedals.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PedalRecord {
    /// The largest accelerator position, fraction.
    pub peak_accelerator_frac: f64,
    /// The largest brake position, fraction.
    pub peak_brake_frac: f64,
    /// Checks that found both pedals pressed.
    pub both_pressed: u64,
    /// Checks made.
    pub checks: u64,
}

/// How long [`Rig::engage`] waits for the bridge to be ready before it gives up.
pub const ENGAGE_WITHIN: Duration = Duration::from_secs(10);

/// The bridge, the plant and their clocks (see the module documentation).
#[derive(Clone, Debug)]
pub struct Rig {
    bridge: Bridge,
    plant: Plant,
    reports: Grid,
    ticks: Grid,
    record: PedalRecord,
    /// The plant's last report and when it was made.
    last_report: Option<(Time, Report)>,
    /// The last command sent to the plant and when.
    last_sent: Option<(Time, PacmodCommand)>,
}

impl Rig {
    /// A rig of `bridge` in front of `plant`.
    pub fn new(bridge: Bridge, plant: Plant, cfg: RigConfig) -> Self {
        Rig {
            bridge,
            plant,
            reports: Grid::new(cfg.report_period),
            ticks: Grid::new(cfg.tick_period),
            record: PedalRecord::default(),
            last_report: None,
            last_sent: None,
        }
    }

    /// The bridge.
    pub fn bridge(&self) -> &Bridge {
        &self.bridge
    }

    /// The plant.
    pub fn plant(&self) -> &Plant {
        &self.plant
    }

    /// What the plant applied of the pedals since the last [`Rig::take_record`].
    pub fn take_record(&mut self) -> PedalRecord {
        std::mem::take(&mut self.record)
    }

    /// The plant's last report (what the driver published) and when it was made.
    pub fn last_report(&self) -> Option<(Time, Report)> {
        self.last_report
    }

    /// The last command the bridge sent the plant (what the node published) and when.
    pub fn last_sent(&self) -> Option<(Time, PacmodCommand)> {
        self.last_sent
    }

    /// A calibration request, arrived at `now` ([`Bridge::calibrate`]).
    pub fn calibrate(&mut self, request: Request, now: Time) -> Result<u32, RunError> {
        self.bridge.calibrate(request, now)
    }

    /// A drive command, arrived at `now`.
    pub fn command(&mut self, cmd: DriveCommand, now: Time) {
        self.bridge.handle(Event::Command(cmd), now);
    }

    /// An operator's enable request at `now`.
    pub fn request_enable(&mut self, now: Time) {
        self.bridge.handle(Event::EnableRequest, now);
    }

    /// Steps `car` by `dt` through the rig, `steps` times.
    pub fn drive(&mut self, car: &mut VehicleModel, dt: Duration, steps: usize) {
        for _ in 0..steps {
            self.actuate(car, dt);
            car.step(dt);
        }
    }

    /// Asks for the enable and steps `car` by `dt` until the bridge is ready to drive, at
    /// most [`ENGAGE_WITHIN`]; whether it is.
    pub fn engage(&mut self, car: &mut VehicleModel, dt: Duration) -> bool {
        self.request_enable(car.now());
        let until = car.now().saturating_add(ENGAGE_WITHIN);
        while self.bridge.state().name() != StateName::Ready && car.now() < until && !dt.is_zero() {
            self.drive(car, dt, 1);
        }
        self.bridge.state().name() == StateName::Ready
    }

    /// What is due at `car.now()` before the car steps `dt`: the report, the tick, the
    /// plant's step and the car's actuators.
    pub fn actuate(&mut self, car: &mut VehicleModel, dt: Duration) {
        let now = car.now();
        let speed_mps = car.state().speed_mps;
        if self.reports.due(now) {
            let r = self.plant.report(now, speed_mps);
            self.last_report = Some((now, r));
            for event in [
                Event::Enabled(r.enabled),
                Event::Override(r.override_active),
                Event::Speed(r.speed_mps),
                Event::SteeringReport(r.wheel_rad),
            ] {
                self.bridge.handle(event, now);
            }
        }
        if self.ticks.due(now) {
            if let Output::Command(c) = self.bridge.tick(now).output {
                self.send(c);
                self.last_sent = Some((now, c));
            }
        }
        let a = self.plant.step(dt, speed_mps);
        self.check_pedals();
        car.drive_by_acceleration(a.front_wheel_rad, a.accel_mps2);
    }

    /// A command carried out on the plant, as the node publishes it.
    fn send(&mut self, c: PacmodCommand) {
        let flags = Flags {
            enable: c.enable,
            clear: c.clear_override,
        };
        self.plant.enable_command(c.enable);
        for (pedal, frac) in c.pedals.send_order() {
            match pedal {
                Pedal::Accelerator => self.plant.accel_command(frac, flags),
                Pedal::Brake => self.plant.brake_command(frac, flags),
            }
            self.check_pedals();
        }
        if c.forward {
            self.plant.shift_command(SHIFT_FORWARD, flags);
        }
        if let Some(s) = c.steer {
            self.plant
                .steer_command(s.angle_rad, s.rate_limit_rad_s, flags);
        }
    }

    fn check_pedals(&mut self) {
        let (accel, brake) = self.plant.applied_pedals();
        let r = &mut self.record;
        r.peak_accelerator_frac = r.peak_accelerator_frac.max(accel);
        r.peak_brake_frac = r.peak_brake_frac.max(brake);
        r.both_pressed += u64::from(accel > 0.0 && brake > 0.0);
        r.checks += 1;
    }
}

/// Steps of the engagement in [`CommandPath::engage`].
const ENGAGE_STEP: Duration = Duration::from_millis(5);

impl CommandPath for Rig {
    fn engage(&mut self, model: &mut VehicleModel) {
        Rig::engage(self, model, ENGAGE_STEP);
    }

    fn command(&mut self, model: &mut VehicleModel, cmd: DriveCommand) {
        Rig::command(self, cmd, model.now());
    }

    fn before_step(&mut self, model: &mut VehicleModel, dt: Duration) {
        self.actuate(model, dt);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::Pose;
    use crate::pacmod::bridge::BridgeConfig;
    use crate::pacmod::longitudinal::{Longitudinal, LongitudinalConfig};
    use crate::pacmod::pedal_map::{AcceleratorMap, BrakeMap};
    use crate::pacmod::plant::PlantConfig;
    use crate::vehicle::VehicleParams;

    const DT: Duration = Duration::from_millis(10);

    fn rig(every: Duration) -> (Rig, VehicleModel) {
        let l = Longitudinal::new(
            LongitudinalConfig::DEFAULT,
            AcceleratorMap::default(),
            BrakeMap::default(),
        );
        let plant = Plant::new(
            PlantConfig::default(),
            AcceleratorMap::default(),
            BrakeMap::default(),
        );
        let cfg = RigConfig {
            report_period: every,
            tick_period: every,
        };
        let car = VehicleModel::new(
            VehicleParams::default(),
            Pose::default(),
            Time::from_secs_f64(10.0),
        );
        (
            Rig::new(Bridge::new(BridgeConfig::DEFAULT, l), plant, cfg),
            car,
        )
    }

    /// Runs `secs`, `cmd` given every 50 ms when there is one; the speeds at each step.
    fn run(
        rig: &mut Rig,
        car: &mut VehicleModel,
        secs: f64,
        cmd: Option<DriveCommand>,
    ) -> Vec<f64> {
        let mut speeds = Vec::new();
        for i in 0..(secs / DT.as_secs_f64()).round() as u64 {
            if let (Some(c), 0) = (cmd, i % 5) {
                rig.command(c, car.now());
            }
            rig.drive(car, DT, 1);
            speeds.push(car.state().speed_mps);
        }
        speeds
    }

    /// The bridge driving the plant and the car: engaged, a step to 2 m/s tracked, a stop
    /// at the command's deceleration, and a silence stopped by the watchdog; the two pedals
    /// never pressed at once.
    #[test]
    fn the_bridge_drives_the_plant_in_closed_loop() {
        let (mut r, mut car) = rig(Duration::from_millis(30));
        assert!(r.engage(&mut car, DT));
        let held = run(&mut r, &mut car, 1.0, None);
        assert_eq!(r.bridge().state().name(), StateName::Ready);
        assert!(held.iter().all(|v| *v == 0.0));
        let go = DriveCommand {
            steering_rad: 0.1,
            speed_mps: 2.0,
            accel_limit_mps2: 0.0,
        };
        let step = run(&mut r, &mut car, 15.0, Some(go));
        assert_eq!(r.bridge().state().name(), StateName::Driving);
        let peak = step.iter().copied().fold(0.0, f64::max);
        assert!(peak < 2.2, "overshoot: {peak}");
        let last = step[step.len() - 1];
        assert!((last - 2.0).abs() < 0.03, "{last}");
        let stop = DriveCommand {
            speed_mps: 0.0,
            accel_limit_mps2: 1.0,
            ..go
        };
        let stopping = run(&mut r, &mut car, 4.0, Some(stop));
        let at = |v: f64| stopping.iter().position(|s| *s <= v).unwrap() as f64 * 0.01;
        let decel = (1.6 - 0.4) / (at(0.4) - at(1.6));
        assert!((decel - 1.0).abs() < 0.1, "{decel} m/s²");
        assert_eq!(*stopping.last().unwrap(), 0.0);
        run(&mut r, &mut car, 10.0, Some(go));
        let silent = run(&mut r, &mut car, 3.0, None);
        assert_eq!(r.bridge().state().name(), StateName::Braking);
        let stopped = silent.iter().position(|v| *v == 0.0).unwrap() as f64 * 0.01;
        // 0.2 s of timeout plus 2 m/s at 2 m/s², with a tick's margin either side.
        assert!((1.0..1.4).contains(&stopped), "{stopped} s");
        let rec = r.take_record();
        assert_eq!(rec.both_pressed, 0);
        assert!(rec.checks > 3000);
        assert!(rec.peak_accelerator_frac > 0.3 && rec.peak_brake_frac >= 0.4);
        assert_eq!(r.take_record(), PedalRecord::default());
    }

    #[test]
    fn engaging_takes_the_handshake_and_gives_up_without_a_pacmod() {
        let (mut r, mut car) = rig(RigConfig::DEFAULT.report_period);
        let start = car.now();
        assert!(r.engage(&mut car, DT));
        let took = car.now().saturating_since(start);
        // Enabled at the first report, then the shift's settling time.
        assert!(took >= BridgeConfig::DEFAULT.shift_settle, "{took:?}");
        assert!(took < BridgeConfig::DEFAULT.shift_settle + Duration::from_millis(100));
        let (mut r, mut car) = rig(RigConfig::DEFAULT.report_period);
        r.plant.set_override(true);
        let start = car.now();
        assert!(!r.engage(&mut car, DT));
        assert_eq!(car.now().saturating_since(start), ENGAGE_WITHIN);
        assert!(!r.engage(&mut car, Duration::ZERO), "no step: no wait");
    }
}
