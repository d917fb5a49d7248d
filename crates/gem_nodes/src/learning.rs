//! The steering learner (`gem_core::vehicle::learn`) on a thread of its own, for the nodes
//! that learn the car's steering while it drives (the controller and `pacmod_bridge`, each
//! with `~learn_steering`): they feed it from their callbacks and loops, and each refit (a
//! tenth of a second or so for a minute of data) runs on the thread, never in their loops.

use gem_core::vehicle::identify::Motor;
use gem_core::vehicle::learn::{LearnConfig, SteeringLearner};
use ros1_protocols::{Lock, RosError};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// How often the thread looks whether a refit is due (wall time).
const POLL: Duration = Duration::from_millis(500);

/// The learner and its thread; the thread ends when this is dropped.
pub struct LearnerThread {
    learner: Arc<Mutex<SteeringLearner>>,
    refits: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl LearnerThread {
    /// A learner of `cfg` starting from `start`, and its thread.
    pub fn start(cfg: LearnConfig, start: Motor) -> Result<Self, RosError> {
        let learner = Arc::new(Mutex::new(SteeringLearner::new(cfg, start)));
        let refits = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (l, r, s) = (learner.clone(), refits.clone(), stop.clone());
        std::thread::Builder::new()
            .name("steering-learner".into())
            .spawn(move || {
                while !s.load(Ordering::Relaxed) {
                    std::thread::sleep(POLL);
                    let now = gem_ros::time::now().as_secs_f64();
                    // The data is taken under the lock; the fit runs without it.
                    let Some(refit) = l.locked().due(now) else {
                        continue;
                    };
                    let result = refit.run();
                    l.locked().take(result);
                    r.fetch_add(1, Ordering::Relaxed);
                }
            })
            .map_err(|e| RosError::new(format!("cannot start the learner's thread: {e}")))?;
        Ok(LearnerThread {
            learner,
            refits,
            stop,
        })
    }

    /// The learner, locked (briefly: a callback or a tick feeds or reads it).
    pub fn learner(&self) -> MutexGuard<'_, SteeringLearner> {
        self.learner.locked()
    }

    /// A handle to the learner for a callback.
    pub fn shared(&self) -> Arc<Mutex<SteeringLearner>> {
        self.learner.clone()
    }

    /// Refits finished so far.
    pub fn refits(&self) -> u64 {
        self.refits.load(Ordering::Relaxed)
    }
}

impl Drop for LearnerThread {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// A message's time: its header stamp (when the bridge sent the command, when the driver
/// measured the wheel), or the time it arrived if it has none.
pub fn stamped(stamp: rosrust::Time) -> f64 {
    let t = gem_ros::time::to_core(stamp);
    if t.is_zero() {
        gem_ros::time::now().as_secs_f64()
    } else {
        t.as_secs_f64()
    }
}
