//! Time and pacing: with `~publish_clock` the simulator owns `/clock` and paces its steps
//! at the speed-up (reconfigurable); otherwise it steps on ROS time like any node.

use super::outputs::{Outputs, StatePublishers};
use super::params::Params;
use super::topics::*;
use super::world::World;
use gem_core::time::Time;
use gem_core::vehicle::pacing::{Pace, Pacer};
use gem_msgs::rosgraph_msgs::Clock;
use gem_ros::time::{to_ros, Ticker};
use ros1_protocols::dynamic_reconfigure::{DynParam, Kind, Server};
use std::time::{Duration, Instant};

/// The simulator's reconfigurable values (with `~publish_clock`).
pub const DYN_PARAMS: &[DynParam] = &[DynParam {
    name: "speedup",
    kind: Kind::Double {
        default: 1.0,
        min: 0.01,
        max: 1000.0,
    },
    description: "simulated seconds per wall second",
}];

/// Owns `/clock`: step, publish the clock, sleep until the wall time this sim time is due
/// ([`Pacer`]: a stall is not made up in a burst of sim time).
pub(super) fn run_own_clock(
    p: &Params,
    world: &World,
    states: &StatePublishers,
    outputs: &mut Outputs,
) -> anyhow::Result<()> {
    let clock = CLOCK.publish()?;
    let server = Server::new(DYN_PARAMS, Box::new(|_| Ok(())))?;
    let dt = Duration::from_secs_f64(1.0 / p.rate_hz);
    let every = ((p.rate_hz / p.state_rate_hz).round() as u64).max(1);
    let mut steps = 0u64;
    let origin = Instant::now();
    let mut pacer = Pacer::new(dt, p.speedup, origin.elapsed());
    let mut behind = Behind::default();
    while ros1_protocols::this_node::is_ok() {
        let wanted = server.values().double("speedup");
        if wanted != pacer.speedup() {
            tracing::info!("speed-up {}× -> {wanted}×", pacer.speedup());
            pacer.set_speedup(wanted, origin.elapsed());
        }
        let (now, state) = {
            let mut m = world.lock();
            m.step(dt);
            (m.vehicle.now(), m.vehicle.state())
        };
        let _ = clock.send(Clock { clock: to_ros(now) });
        steps += 1;
        if steps.is_multiple_of(every) {
            states.publish(&world.name, now, &state);
        }
        outputs.publish_if_due(world, now);
        match pacer.stepped(origin.elapsed()) {
            Pace::Sleep(wait) => std::thread::sleep(wait),
            Pace::Behind { late } => behind.record(late),
        }
    }
    Ok(())
}

/// Stalls of the stepping loop, reported at most every few seconds.
#[derive(Default)]
pub(super) struct Behind {
    stalls: u32,
    lost: Duration,
    reported: Option<Instant>,
}

impl Behind {
    const REPORT_EVERY: Duration = Duration::from_secs(5);

    pub(super) fn record(&mut self, late: Duration) {
        self.stalls += 1;
        self.lost += late;
        if self
            .reported
            .is_none_or(|at| at.elapsed() >= Self::REPORT_EVERY)
        {
            tracing::warn!(
                "stepping fell behind the wall clock {} time(s), {:.0} ms in all (latest {:.0} ms): \
                 sim time runs slower than the speed-up rather than catching up in a burst",
                self.stalls,
                self.lost.as_secs_f64() * 1e3,
                late.as_secs_f64() * 1e3
            );
            *self = Behind {
                reported: Some(Instant::now()),
                ..Behind::default()
            };
        }
    }
}

/// Steps on ROS time (wall, or someone else's `/clock`).
pub(super) fn run_on_ros_time(
    p: &Params,
    world: &World,
    states: &StatePublishers,
    outputs: &mut Outputs,
) -> anyhow::Result<()> {
    let mut ticker = Ticker::from_rate(p.rate_hz);
    let mut last_state = Time::ZERO;
    let state_period = Duration::from_secs_f64(1.0 / p.state_rate_hz);
    while let Some(now) = ticker.wait() {
        let state = {
            let mut m = world.lock();
            let dt = now.saturating_since(m.vehicle.now());
            m.step(dt);
            m.vehicle.state()
        };
        if now.saturating_since(last_state) >= state_period {
            last_state = now;
            states.publish(&world.name, now, &state);
        }
        outputs.publish_if_due(world, now);
    }
    Ok(())
}
