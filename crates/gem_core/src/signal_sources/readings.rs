//! What `signal_sources` publishes, decided: each input's latest reading with its source's
//! staleness limit, the e-stop through its [`Debounce`]. A tick publishes every fresh input
//! ([`Readings::due`]); an e-stop press goes out at once, from the reading
//! ([`Readings::read`]).

use super::field::Debounce;
use super::{Fed, Latest, Source, Sources};
use crate::time::Time;
use std::collections::BTreeMap;
use std::time::Duration;

/// The latest readings of the inputs fed by topics and thermal sensors.
#[derive(Clone, Debug)]
pub struct Readings {
    latest: BTreeMap<Fed, Latest<f64>>,
    estop: Option<Debounce>,
}

impl Readings {
    /// Nothing read yet; the e-stop debounced as its source says.
    pub fn new(sources: &Sources) -> Readings {
        let estop = match sources.of(Fed::Estop) {
            Some(Source::Field(f)) => Some(Debounce::new(f.debounce)),
            _ => None,
        };
        Readings {
            latest: BTreeMap::new(),
            estop,
        }
    }

    /// A reading of `fed` at `now`, fresh for `stale_after` (a number; for the e-stop, not
    /// 0 = pressed). True when it must be published at once: an e-stop press after a reading
    /// that was not one.
    pub fn read(&mut self, fed: Fed, value: f64, now: Time, stale_after: Duration) -> bool {
        let was = self
            .latest
            .insert(fed, Latest::new(value, now, stale_after));
        match (fed, self.estop.as_mut()) {
            (Fed::Estop, Some(debounce)) => {
                let pressed = debounce.update(value != 0.0, now);
                let was_pressed = was.and_then(|l| l.fresh(now)).is_some_and(|v| v != 0.0);
                pressed == Some(true) && !was_pressed
            }
            _ => false,
        }
    }

    /// What to publish at `now`: every input whose reading is fresh, the e-stop as
    /// debounced (1 = pressed; nothing while it is unknown).
    pub fn due(&mut self, now: Time) -> Vec<(Fed, f64)> {
        let mut out = Vec::new();
        for (fed, latest) in &self.latest {
            let Some(value) = latest.fresh(now) else {
                continue;
            };
            let value = match (fed, self.estop.as_mut()) {
                (Fed::Estop, Some(debounce)) => match debounce.at(now) {
                    Some(pressed) => f64::from(u8::from(pressed)),
                    None => continue,
                },
                _ => value,
            };
            out.push((*fed, value));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sources() -> Sources {
        super::super::parse(
            "battery:\n  topic: /bms\n  field: soc\nestop:\n  topic: /button\n  field: data\n  debounce_s: 0.1\n",
        )
        .unwrap()
    }

    const FRESH: Duration = Duration::from_secs(1);

    #[test]
    fn a_reading_is_published_while_fresh_and_never_after() {
        let t = Time::from_secs_f64;
        let mut r = Readings::new(&sources());
        assert!(r.due(t(1.0)).is_empty(), "nothing read yet");
        assert!(!r.read(Fed::Battery, 0.8, t(1.0), FRESH));
        assert_eq!(r.due(t(1.5)), vec![(Fed::Battery, 0.8)]);
        assert_eq!(r.due(t(2.0)), vec![(Fed::Battery, 0.8)]);
        assert!(r.due(t(2.01)).is_empty(), "stale: not published");
    }

    #[test]
    fn an_estop_press_goes_out_at_once_and_a_release_once_held() {
        let t = Time::from_secs_f64;
        let mut r = Readings::new(&sources());
        // Released, but not yet for the debounce time: unknown, not published.
        assert!(!r.read(Fed::Estop, 0.0, t(1.0), FRESH));
        assert!(r.due(t(1.05)).is_empty());
        assert_eq!(r.due(t(1.1)), vec![(Fed::Estop, 0.0)]);
        // A press: at once, and once.
        assert!(r.read(Fed::Estop, 1.0, t(1.2), FRESH));
        assert!(!r.read(Fed::Estop, 1.0, t(1.25), FRESH));
        assert_eq!(r.due(t(1.3)), vec![(Fed::Estop, 1.0)]);
        // A release counts once it held, even without a new reading.
        assert!(!r.read(Fed::Estop, 0.0, t(1.3), FRESH));
        assert_eq!(r.due(t(1.35)), vec![(Fed::Estop, 1.0)]);
        assert_eq!(r.due(t(1.4)), vec![(Fed::Estop, 0.0)]);
        // A button that falls silent is stale, pressed or not.
        assert!(r.due(t(2.31)).is_empty());
    }
}
