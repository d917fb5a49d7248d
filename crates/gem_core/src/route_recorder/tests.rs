use super::*;
use crate::field;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::f64::consts::{PI, TAU};

const GOOD_MM: f64 = 0.0;
const FAULT_MM: f64 = 1e6;

fn at(secs: f64) -> Time {
    Time::from_secs_f64(secs)
}

fn recorder() -> Recorder {
    Recorder::new(RecorderConfig::DEFAULT).unwrap()
}

fn spaced(spacing_m: f64) -> Recorder {
    Recorder::new(RecorderConfig {
        spacing_m,
        ..RecorderConfig::DEFAULT
    })
    .unwrap()
}

fn sample(t: f64, x: f64, y: f64) -> PoseSample {
    PoseSample {
        stamp: at(t),
        position: Point::new(x, y),
    }
}

/// A car and its INS: poses at `rate_hz` of `path(t)` with Gaussian noise of `sigma_m`
/// per axis, and a health reading with every pose.
struct Drive {
    rec: Recorder,
    t: f64,
    rate_hz: f64,
    sigma_m: f64,
    rng: StdRng,
    offers: Vec<(f64, Offer)>,
}

impl Drive {
    fn new(rec: Recorder, sigma_m: f64) -> Drive {
        Drive {
            rec,
            t: 100.0,
            rate_hz: 20.0,
            sigma_m,
            rng: StdRng::seed_from_u64(7),
            offers: Vec::new(),
        }
    }

    /// A standard normal draw (Box–Muller).
    fn gaussian(&mut self) -> f64 {
        let u1: f64 = self.rng.gen_range(f64::EPSILON..1.0);
        let u2: f64 = self.rng.gen();
        (-2.0 * u1.ln()).sqrt() * (TAU * u2).cos()
    }

    /// `secs` of poses along `path` (absolute time → position), health `mm`.
    fn run(&mut self, secs: f64, mm: f64, path: impl Fn(f64) -> Point) {
        let steps = (secs * self.rate_hz).round() as usize;
        for _ in 0..steps {
            self.t += 1.0 / self.rate_hz;
            let now = at(self.t);
            self.rec.health(mm, now);
            let p = path(self.t);
            let (nx, ny) = (self.gaussian(), self.gaussian());
            let s = sample(self.t, p.x + self.sigma_m * nx, p.y + self.sigma_m * ny);
            let offer = self.rec.pose(s, now);
            self.offers.push((self.t, offer));
        }
    }

    /// Good health readings for `secs` with the car parked at `p` (no poses).
    fn settle(&mut self, secs: f64) {
        let steps = (secs * self.rate_hz).round() as usize;
        for _ in 0..steps {
            self.t += 1.0 / self.rate_hz;
            self.rec.health(GOOD_MM, at(self.t));
        }
    }
}

/// Along +x at `v` m/s from x = 0 at time `t0`.
fn straight(t0: f64, v: f64) -> impl Fn(f64) -> Point {
    move |t| Point::new(v * (t - t0), 0.0)
}

/// A counter-clockwise circle of radius `r` around the origin at `v` m/s, at (r, 0)
/// at time `t0`.
fn circle(t0: f64, r: f64, v: f64) -> impl Fn(f64) -> Point {
    move |t| {
        let a = v * (t - t0) / r;
        Point::new(r * a.cos(), r * a.sin())
    }
}

/// A drive with good health, settled, ready to record at time 101.
fn settled(rec: Recorder, sigma_m: f64) -> Drive {
    let mut d = Drive::new(rec, sigma_m);
    d.settle(1.0);
    d
}

fn gaps(points: &[Pose]) -> Vec<f64> {
    points
        .windows(2)
        .map(|w| w[0].point().distance(w[1].point()))
        .collect()
}

// ---- configuration -------------------------------------------------------------

#[test]
fn the_defaults_are_valid_and_take_the_state_managers_gps_threshold() {
    assert_eq!(RecorderConfig::DEFAULT.validate(), Ok(()));
    let sm = crate::state_manager::StateManagerConfig::default();
    assert_eq!(
        RecorderConfig::DEFAULT.gps_bad_above_mm,
        f64::from(sm.gps_bad_above_mm)
    );
    assert_eq!(RecorderConfig::DEFAULT.close_within_m(), 1.0);
}

#[test]
fn a_bad_spacing_is_refused_naming_the_field() {
    for spacing_m in [0.0, -0.5, f64::NAN, f64::INFINITY, 100.5] {
        let cfg = RecorderConfig {
            spacing_m,
            ..RecorderConfig::DEFAULT
        };
        let e = Recorder::new(cfg).unwrap_err();
        assert_eq!(e.field, field!(RecorderConfig.spacing_m), "{spacing_m}");
    }
    let ok = RecorderConfig {
        spacing_m: 100.0,
        ..RecorderConfig::DEFAULT
    };
    assert_eq!(ok.validate(), Ok(()));
}

#[test]
fn a_zero_window_or_gap_is_refused_naming_the_field() {
    let cfg = RecorderConfig {
        smoothing_window: Duration::ZERO,
        ..RecorderConfig::DEFAULT
    };
    assert_eq!(
        cfg.validate().unwrap_err().to_string(),
        "smoothing_window = 0 is invalid: must be > 0"
    );
    let cfg = RecorderConfig {
        max_pose_gap: Duration::ZERO,
        ..RecorderConfig::DEFAULT
    };
    assert_eq!(
        cfg.validate().unwrap_err().field,
        field!(RecorderConfig.max_pose_gap)
    );
    let cfg = RecorderConfig {
        close_within_spacings: 0.5,
        ..RecorderConfig::DEFAULT
    };
    assert_eq!(
        cfg.validate().unwrap_err().field,
        field!(RecorderConfig.close_within_spacings)
    );
}

// ---- the health gate -----------------------------------------------------------

#[test]
fn unheard_pose_is_refused() {
    let mut r = recorder();
    assert_eq!(
        r.pose(sample(1.0, 0.0, 0.0), at(1.0)),
        Offer::Refused(Health::Unheard)
    );
    assert_eq!(r.status(at(1.0)).health, Health::Unheard);
}

#[test]
fn first_good_reading_poses_refused_until_good_for_then_taken() {
    let mut r = recorder();
    r.health(GOOD_MM, at(10.0));
    r.health(GOOD_MM, at(10.5));
    assert_eq!(
        r.pose(sample(10.99, 0.0, 0.0), at(10.99)),
        Offer::Refused(Health::Settling {
            good_for: Duration::from_millis(990)
        })
    );
    assert_eq!(r.pose(sample(11.0, 0.0, 0.0), at(11.0)), Offer::Taken);
    assert_eq!(r.pose(sample(11.01, 0.0, 0.0), at(11.01)), Offer::Taken);
}

#[test]
fn good_bad_reading_next_pose_refused_at_once() {
    let mut r = recorder();
    r.health(GOOD_MM, at(10.0));
    assert_eq!(r.pose(sample(11.0, 0.0, 0.0), at(11.0)), Offer::Taken);
    r.health(FAULT_MM, at(11.02));
    assert_eq!(
        r.pose(sample(11.03, 0.0, 0.0), at(11.03)),
        Offer::Refused(Health::Bad {
            accuracy_mm: FAULT_MM
        })
    );
}

#[test]
fn good_reading_at_the_threshold_is_good_above_or_nan_is_bad() {
    let cfg = RecorderConfig::DEFAULT;
    assert!(is_good(200.0, &cfg));
    assert!(!is_good(200.1, &cfg));
    assert!(!is_good(f64::NAN, &cfg));
    assert!(!is_good(FAULT_MM, &cfg));
    let mut r = recorder();
    r.health(200.0, at(1.0));
    r.health(200.0, at(2.0));
    assert_eq!(r.status(at(2.0)).health, Health::Good);
    r.health(200.1, at(2.05));
    assert_eq!(
        r.status(at(2.05)).health,
        Health::Bad { accuracy_mm: 200.1 }
    );
}

#[test]
fn good_silent_beyond_stale_after_refused() {
    let mut r = recorder();
    r.health(GOOD_MM, at(10.0));
    r.health(GOOD_MM, at(11.0));
    // The latest reading 1.0 s old: still good; 1.01 s: silent.
    assert_eq!(r.pose(sample(12.0, 0.0, 0.0), at(12.0)), Offer::Taken);
    assert_eq!(
        r.pose(sample(12.01, 0.0, 0.0), at(12.01)),
        Offer::Refused(Health::Silent {
            for_: Duration::from_millis(1010)
        })
    );
    // A reading after the silence starts the good run afresh.
    r.health(GOOD_MM, at(12.5));
    assert!(matches!(
        r.pose(sample(13.0, 0.0, 0.0), at(13.0)),
        Offer::Refused(Health::Settling { .. })
    ));
    r.health(GOOD_MM, at(13.4));
    assert_eq!(r.pose(sample(13.5, 0.0, 0.0), at(13.5)), Offer::Taken);
}

#[test]
fn bad_then_good_again_waits_good_for_again() {
    let mut r = recorder();
    r.health(GOOD_MM, at(10.0));
    r.health(FAULT_MM, at(11.0));
    r.health(GOOD_MM, at(11.1));
    r.health(GOOD_MM, at(11.6));
    assert!(matches!(
        r.pose(sample(12.09, 0.0, 0.0), at(12.09)),
        Offer::Refused(Health::Settling { .. })
    ));
    assert_eq!(r.pose(sample(12.1, 0.0, 0.0), at(12.1)), Offer::Taken);
}

// ---- stamps --------------------------------------------------------------------

#[test]
fn duplicate_and_backwards_stamps_are_dropped() {
    let mut r = recorder();
    r.health(GOOD_MM, at(10.0));
    r.health(GOOD_MM, at(11.0));
    assert_eq!(r.pose(sample(11.0, 0.0, 0.0), at(11.0)), Offer::Taken);
    assert_eq!(r.pose(sample(11.0, 5.0, 0.0), at(11.02)), Offer::Duplicate);
    assert_eq!(r.pose(sample(10.9, 5.0, 0.0), at(11.02)), Offer::Backwards);
    assert_eq!(r.pose(sample(11.05, 0.1, 0.0), at(11.05)), Offer::Taken);
}

// ---- spacing -------------------------------------------------------------------

#[test]
fn straight_drive_points_every_spacing_from_the_first_moving_pose() {
    for spacing in [0.25, 0.5, 2.0] {
        let mut d = settled(spaced(spacing), 0.0);
        let t0 = d.t;
        d.run(10.0, GOOD_MM, straight(t0, 2.0));
        let route = d.rec.finish(false).unwrap();
        let w = &route.waypoints;
        assert!(w[0].x.abs() < 0.11, "{spacing}: starts at {:?}", w[0]);
        let g = gaps(w);
        for g in &g[..g.len() - 1] {
            assert!((g - spacing).abs() < 1e-6, "{spacing}: {g}");
        }
        let last = g[g.len() - 1];
        assert!(last >= spacing / 2.0 && last <= spacing + 1e-9, "{last}");
        assert!((route.distance_m - 19.9).abs() < 1e-6, "{route:?}");
        assert!(w.iter().all(|p| p.yaw.abs() < 1e-9 && p.y.abs() < 1e-9));
    }
}

#[test]
fn the_end_is_added_from_half_a_spacing_past_the_last_point() {
    // From the first pose (x 0.1) the car drives 9.9 m and then 10.2 m: 0.4 m and
    // 0.2 m past the last point at 9.5 and 10.0 m of driving.
    for (secs, end_added) in [(5.0, true), (5.15, false)] {
        let mut d = settled(recorder(), 0.0);
        let t0 = d.t;
        d.run(secs, GOOD_MM, straight(t0, 2.0));
        let w = d.rec.finish(false).unwrap().waypoints;
        let last = w.last().unwrap().x;
        let driven = 2.0 * secs;
        assert_eq!((last - driven).abs() < 1e-6, end_added, "{secs}: {last}");
        let g = gaps(&w);
        assert!(g.iter().all(|g| *g >= 0.25 - 1e-9), "{g:?}");
    }
}

// ---- stopped -------------------------------------------------------------------

#[test]
fn parked_with_noise_records_nothing() {
    let mut d = settled(recorder(), 0.03);
    d.run(120.0, GOOD_MM, |_| Point::new(3.0, 4.0));
    let s = d.rec.status(at(d.t));
    assert_eq!((s.points, s.distance_m, s.moving), (0, 0.0, Some(false)));
    assert_eq!(
        d.rec.finish(false).unwrap_err(),
        RouteError::TooFewPoints {
            points: 0,
            distance_m: 0.0,
            spacing_m: 0.5
        }
    );
}

/// Along x: 2 m/s for 10 s, braking at 1 m/s² to rest (22 m), parked for 60 s,
/// pulling away at 1 m/s² and 2 m/s again; `t` in seconds from the start.
fn stop_and_go(t: f64) -> f64 {
    let ramp = |s: f64| s.clamp(0.0, 2.0);
    match t {
        t if t < 10.0 => 2.0 * t,
        t if t < 72.0 => {
            let s = ramp(t - 10.0);
            20.0 + 2.0 * s - 0.5 * s * s
        }
        t => {
            let s = ramp(t - 72.0);
            22.0 + 0.5 * s * s + 2.0 * (t - 74.0).max(0.0)
        }
    }
}

#[test]
fn a_stop_mid_drive_adds_no_point() {
    let mut d = settled(recorder(), 0.02);
    let t0 = d.t;
    d.run(82.0, GOOD_MM, |t| Point::new(stop_and_go(t - t0), 0.0));
    let route = d.rec.finish(false).unwrap();
    let n = route.waypoints.len();
    // 40 m less the first pose's 0.1 m: 80 points, give or take one at the stop.
    assert!((79..=81).contains(&n), "{n} points");
    // (The last gap ends at the trailing point.)
    let g = gaps(&route.waypoints);
    for (i, g) in g[..g.len() - 1].iter().enumerate() {
        assert!(
            (0.45..0.55).contains(g),
            "a gap of {g:.3} m at {:?}",
            route.waypoints[i]
        );
    }
    assert!(route.gaps.is_empty());
    assert!(
        (route.distance_m - 39.9).abs() < 0.1,
        "{}",
        route.distance_m
    );
}

// ---- smoothing and yaw ----------------------------------------------------------

#[test]
fn noisy_circle_points_lie_on_it_and_yaw_follows_its_tangent() {
    // The GEM track's tightest bend (27 m) at the cruise speed, a 20 Hz INS with 3 cm
    // of noise per axis: each point within 3 cm of the circle, about 1 cm RMS; the
    // yaw within 0.015 rad of the tangent, though no heading is given at all.
    let (r, v) = (27.0, 2.8);
    let mut d = settled(recorder(), 0.03);
    let t0 = d.t;
    d.run(0.9 * TAU * r / v, GOOD_MM, circle(t0, r, v));
    let w = d.rec.finish(false).unwrap().waypoints;
    let radial: Vec<f64> = w
        .iter()
        .map(|p| p.point().distance(Point::default()) - r)
        .collect();
    let rms = (radial.iter().map(|e| e * e).sum::<f64>() / radial.len() as f64).sqrt();
    let worst = radial.iter().fold(0.0f64, |m, e| m.max(e.abs()));
    assert!(
        worst < 0.03 && rms < 0.012,
        "max {worst:.4} m, RMS {rms:.4} m"
    );
    let yaw_err: Vec<f64> = w
        .iter()
        .map(|p| {
            let tangent = p.y.atan2(p.x) + PI / 2.0;
            crate::geometry::wrap_angle(p.yaw - tangent).abs()
        })
        .collect();
    // Within a metre of either end the chord is cut short: it is the tangent half a
    // metre in (0.02 rad on this circle) rather than at the point.
    let inner = yaw_err[2..yaw_err.len() - 2]
        .iter()
        .fold(0.0f64, |m, e| m.max(*e));
    let ends = yaw_err.iter().fold(0.0f64, |m, e| m.max(*e));
    assert!(
        inner < 0.015 && ends < 0.04,
        "yaw off the tangent by {inner:.4} rad inside, {ends:.4} rad at the ends"
    );
    for g in gaps(&w) {
        assert!((g - 0.5).abs() < 0.02, "a gap of {g:.3} m");
    }
}

#[test]
fn a_tight_bend_keeps_its_radius_through_both_smoothings() {
    // A 5 m radius at 1.5 m/s, without noise: the fits bend with it.
    let (r, v) = (5.0, 1.5);
    let mut d = settled(recorder(), 0.0);
    let t0 = d.t;
    d.run(0.9 * TAU * r / v, GOOD_MM, circle(t0, r, v));
    let w = d.rec.finish(false).unwrap().waypoints;
    let off: Vec<f64> = w
        .iter()
        .map(|p| (p.point().distance(Point::default()) - r).abs())
        .collect();
    let worst = off.iter().fold(0.0f64, |m, e| m.max(*e));
    assert!(worst < 0.003, "{worst:.4} m off the circle: {off:?}");
}

#[test]
fn yaw_is_the_chord_about_a_metre_either_side() {
    let p = [
        Point::new(0.0, 0.0),
        Point::new(1.0, 0.0),
        Point::new(2.0, 1.0),
        Point::new(2.0, 2.0),
    ];
    // Spacing 1 m: the chord from the neighbour before to the one after.
    let yaw = yaw_along(&p, false, 1.0);
    assert_eq!(yaw[0], 0.0);
    assert!((yaw[1] - 1f64.atan2(2.0)).abs() < 1e-12);
    assert!((yaw[2] - 2f64.atan2(1.0)).abs() < 1e-12);
    assert!((yaw[3] - PI / 2.0).abs() < 1e-12);
    // Spacing 0.5 m: two points either side (cut short at the ends).
    let yaw = yaw_along(&p, false, 0.5);
    assert!((yaw[0] - 1f64.atan2(2.0)).abs() < 1e-12);
    assert!((yaw[1] - 2f64.atan2(2.0)).abs() < 1e-12);
    assert!((yaw[2] - 2f64.atan2(2.0)).abs() < 1e-12);
    assert!((yaw[3] - 2f64.atan2(1.0)).abs() < 1e-12);
    // Closed: the first and last rows (one point) share the wrap-around chord.
    let square = [
        Point::new(0.0, 0.0),
        Point::new(1.0, 0.0),
        Point::new(1.0, 1.0),
        Point::new(0.0, 1.0),
        Point::new(0.0, 0.0),
    ];
    let yaw = yaw_along(&square, true, 1.0);
    assert!((yaw[0] + PI / 4.0).abs() < 1e-12, "{yaw:?}");
    assert_eq!(yaw[0], yaw[4]);
}

// ---- gaps ----------------------------------------------------------------------

#[test]
fn bad_solution_mid_drive_records_no_point_until_good_for_after() {
    // Along x at 2 m/s: bad from 10 s to 12 s of driving, good again after; the gate
    // opens 1 s later, at 13 s (x 26 m).
    let mut d = settled(recorder(), 0.0);
    let t0 = d.t;
    let path = straight(t0, 2.0);
    d.run(10.0, GOOD_MM, &path);
    d.run(2.0, FAULT_MM, &path);
    d.run(10.0, GOOD_MM, &path);
    let refused: Vec<f64> = d
        .offers
        .iter()
        .filter(|(_, o)| matches!(o, Offer::Refused(_)))
        .map(|(t, _)| t - t0)
        .collect();
    // The first bad reading comes with the pose at 10.05 s; the first good one again
    // at 12.05 s, so the gate opens at 13.05 s (x 26.1 m).
    assert!((refused[0] - 10.05).abs() < 1e-6, "{refused:?}");
    assert!((refused.last().unwrap() - 13.0).abs() < 1e-6, "{refused:?}");
    let route = d.rec.finish(false).unwrap();
    let xs: Vec<f64> = route.waypoints.iter().map(|p| p.x).collect();
    assert!(
        xs.iter().all(|x| *x <= 20.0 + 1e-6 || *x >= 26.1 - 1e-6),
        "a point inside the gap: {xs:?}"
    );
    assert!(xs.iter().any(|x| *x >= 19.5 && *x <= 20.0 + 1e-6), "{xs:?}");
    assert!(xs.iter().any(|x| (x - 26.1).abs() < 1e-6), "{xs:?}");
    assert_eq!(route.gaps.len(), 1, "{:?}", route.gaps);
    let g = route.gaps[0];
    assert_eq!(
        g.cause,
        GapCause::Health(Health::Bad {
            accuracy_mm: FAULT_MM
        })
    );
    assert!((g.join_m().unwrap() - 6.1).abs() < 1e-6, "{g:?}");
    // From the first point after the gap the spacing starts again.
    let after: Vec<f64> = xs.iter().copied().filter(|x| *x >= 26.1 - 1e-6).collect();
    for w in after[..after.len() - 1].windows(2) {
        assert!((w[1] - w[0] - 0.5).abs() < 1e-6, "{after:?}");
    }
    assert!(route.summary().contains("gap 1: solution BAD (1000000 mm)"));
}

/// Poses along x at 2 m/s from x 0 to 8.1 m, none for `silence_s`, then 5 s more.
fn silent_source(silence_s: f64, spacing_m: f64) -> Route {
    let mut d = settled(spaced(spacing_m), 0.0);
    let t0 = d.t;
    let path = straight(t0 + 0.05, 2.0);
    d.run(4.1, GOOD_MM, &path);
    // Health keeps coming, poses do not.
    let steps = (silence_s * 20.0).round() as usize - 1;
    for _ in 0..steps {
        d.t += 0.05;
        d.rec.health(GOOD_MM, at(d.t));
    }
    d.run(5.0, GOOD_MM, &path);
    d.rec.finish(false).unwrap()
}

#[test]
fn pose_silence_beyond_max_pose_gap_opens_a_gap_at_it_does_not() {
    assert!(silent_source(0.5, 0.5).gaps.is_empty());
    let route = silent_source(0.55, 0.5);
    assert_eq!(route.gaps.len(), 1);
    assert!(
        matches!(route.gaps[0].cause, GapCause::NoPose { for_ } if for_ == Duration::from_millis(550))
    );
}

#[test]
fn a_join_shorter_than_what_is_left_to_the_next_point_keeps_the_spacing() {
    // 2 m spacing, the last point at 8 m and the last pose at 8.1 m: a silence of 0.6 s
    // at 2 m/s is a 1.2 m join, and the next point comes at 10 m, after it.
    let route = silent_source(0.6, 2.0);
    assert_eq!(route.gaps.len(), 1);
    let g = gaps(&route.waypoints);
    for w in &g[..g.len() - 1] {
        assert!((w - 2.0).abs() < 1e-6, "{g:?}");
    }
}

#[test]
fn a_long_join_puts_a_point_at_its_far_end() {
    let route = silent_source(2.0, 0.5);
    let gap = route.gaps[0];
    let to = gap.to.unwrap();
    assert!(route.waypoints.iter().any(|p| p.point() == to));
    assert!(gap.from.distance(Point::new(8.1, 0.0)) < 1e-6, "{gap:?}");
    assert!((gap.join_m().unwrap() - 4.0).abs() < 1e-6, "{gap:?}");
}

#[test]
fn a_gap_while_recording_counts_once_and_shows_in_the_live_line() {
    let mut d = settled(recorder(), 0.0);
    let t0 = d.t;
    d.run(5.0, GOOD_MM, straight(t0, 2.0));
    d.run(1.0, FAULT_MM, straight(t0, 2.0));
    let s = d.rec.status(at(d.t));
    assert_eq!(s.gaps, 1);
    assert_eq!(
        s.to_string(),
        format!(
            "{:.1} m, {} points, health BAD (1000000 mm), NOT recording, gaps 1",
            s.distance_m, s.points
        )
    );
    // The recording may end inside the gap.
    let route = d.rec.finish(false).unwrap();
    assert_eq!(route.gaps[0].to, None);
    assert!(route.summary().contains("the recording ended in it"));
}

// ---- loop closing -------------------------------------------------------------

/// Points every `spacing` along a circle of radius `r` from (r, 0), over `length` m.
fn arc(r: f64, spacing: f64, length: f64) -> Vec<Point> {
    let n = (length / spacing).floor() as usize;
    (0..=n)
        .map(|i| {
            let a = i as f64 * spacing / r;
            Point::new(r * a.cos(), r * a.sin())
        })
        .collect()
}

#[test]
fn a_lap_with_overshoot_closes_at_the_start() {
    let r = 10.0;
    let lap = TAU * r;
    let mut p = arc(r, 0.5, lap + 3.0);
    let n = p.len();
    let closing = close_loop(&mut p, 1.0, 0.5);
    let LoopClosing::Closed { dropped, closing_m } = closing else {
        panic!("{closing:?}");
    };
    assert_eq!(p.first(), p.last());
    assert_eq!(p.len() + dropped, n + 1);
    assert!((0.25..=0.75).contains(&closing_m), "{closing_m}");
    // Only the overshoot went: the route still goes all the way round.
    assert!(p.len() as f64 >= lap / 0.5 - 1.0, "{}", p.len());
}

#[test]
fn an_end_at_two_spacings_closes_beyond_does_not() {
    // An open arc whose end stops `gap` from the start (chord), spacing 0.5.
    for (gap, closes) in [(0.99, true), (1.0, true), (1.01, false)] {
        let r: f64 = 10.0;
        let end_angle = TAU - 2.0 * (gap / (2.0 * r)).asin();
        let mut p = arc(r, 0.5, r * end_angle);
        p.push(Point::new(r * end_angle.cos(), r * end_angle.sin()));
        let closing = close_loop(&mut p, 1.0, 0.5);
        match (closing, closes) {
            (LoopClosing::Closed { .. }, true) => assert_eq!(p.first(), p.last()),
            (
                LoopClosing::NotMet {
                    closest_m,
                    within_m,
                },
                false,
            ) => {
                assert!((closest_m.unwrap() - gap).abs() < 1e-6);
                assert_eq!(within_m, 1.0);
            }
            (c, _) => panic!("end {gap} m from the start: {c:?}"),
        }
    }
}

#[test]
fn a_route_that_never_left_its_start_is_not_a_loop() {
    let mut p = vec![Point::new(0.0, 0.0), Point::new(0.5, 0.0)];
    assert_eq!(
        close_loop(&mut p, 1.0, 0.5),
        LoopClosing::NotMet {
            closest_m: None,
            within_m: 1.0
        }
    );
    assert_eq!(p.len(), 2);
}

#[test]
fn a_meeting_point_within_half_a_spacing_gives_way_to_the_start() {
    let mut p = vec![
        Point::new(0.0, 0.0),
        Point::new(3.0, 0.0),
        Point::new(3.0, 3.0),
        Point::new(0.0, 3.0),
        Point::new(0.0, 0.2),
        Point::new(0.0, -0.3),
    ];
    let closing = close_loop(&mut p, 1.0, 0.5);
    assert_eq!(
        closing,
        LoopClosing::Closed {
            dropped: 2,
            closing_m: 3.0
        }
    );
    assert_eq!(p.len(), 5);
    assert_eq!(p[4], Point::new(0.0, 0.0));
}

#[test]
fn a_recorded_lap_closes_and_its_ends_share_the_tangent() {
    let (r, v) = (20.0, 2.8);
    let mut d = settled(recorder(), 0.01);
    let t0 = d.t;
    d.run((TAU * r + 3.0) / v, GOOD_MM, circle(t0, r, v));
    let route = d.rec.finish(true).unwrap();
    assert!(matches!(route.closing, Some(LoopClosing::Closed { .. })));
    let (first, last) = (route.waypoints[0], *route.waypoints.last().unwrap());
    assert_eq!(first, last);
    assert!((first.yaw - PI / 2.0).abs() < 0.02, "{first:?}");
    assert!(route.summary().contains("loop closed"));
    // Not asked: the overshoot stays.
    let mut d = settled(recorder(), 0.01);
    d.run((TAU * r + 3.0) / v, GOOD_MM, circle(t0 + 1.0, r, v));
    assert_eq!(d.rec.finish(false).unwrap().closing, None);
}

// ---- finishing and the file ------------------------------------------------------

#[test]
fn fewer_than_two_points_is_an_error() {
    let mut d = settled(recorder(), 0.0);
    let t0 = d.t;
    d.run(0.1, GOOD_MM, straight(t0, 2.0));
    let e = d.rec.finish(false).unwrap_err();
    assert!(
        matches!(e, RouteError::TooFewPoints { points: 1, .. }),
        "{e:?}"
    );
    assert!(e.to_string().contains("a route needs at least 2"), "{e}");
}

#[test]
fn the_csv_reads_back_with_the_planners_loader() {
    let w = vec![
        Pose::new(1.234_567_89, -2.0, 0.123_456_789),
        Pose::new(1.734_567_89, -2.0, -3.0),
    ];
    let bytes = to_csv(&w, "out.csv").unwrap();
    let text = String::from_utf8(bytes.clone()).unwrap();
    assert!(
        text.starts_with("x,y,yaw\n1.2346,-2.0000,0.123457\n1.7346,-2.0000,-3.000000\n"),
        "{text}"
    );
    let back = waypoints::parse(&bytes, "out.csv").unwrap();
    assert_eq!(back.len(), 2);
    assert!((back[1].yaw + 3.0).abs() < 1e-9, "{back:?}");
}

#[test]
fn the_live_line_says_what_is_happening() {
    let mut r = recorder();
    assert!(r
        .status(at(1.0))
        .to_string()
        .ends_with("health not heard yet, NOT recording, gaps 0"));
    r.health(GOOD_MM, at(1.0));
    r.health(GOOD_MM, at(2.0));
    assert_eq!(
        r.status(at(2.0)).to_string(),
        "0.0 m, 0 points, health good, waiting for the car to move, gaps 0"
    );
    let mut d = settled(recorder(), 0.0);
    let t0 = d.t;
    d.run(5.0, GOOD_MM, straight(t0, 2.0));
    let s = d.rec.status(at(d.t));
    assert!(
        s.to_string().contains("points, health good, recording"),
        "{s}"
    );
    let later = at(d.t + 0.6);
    d.rec.health(GOOD_MM, later);
    assert!(d.rec.status(later).to_string().contains("no pose for 0."));
}

// ---- what the controller makes of a recording ----------------------------------

/// The time the controllers' speed profile gives a lap of `points` on the car's
/// platform (half the PACMod's steering rate for curvature changes), s.
fn profiled_lap_s(points: &[Point]) -> f64 {
    use crate::control::speed::{SpeedConfig, SpeedPlan};
    let path = crate::control::path::Path::new(points, 0.05).unwrap();
    let cfg = SpeedConfig {
        steering_rate_rad_s: 0.08,
        ..SpeedConfig::DEFAULT
    };
    let plan = SpeedPlan::new(&path, 0.0, &cfg, 1.75);
    let mut t = 0.0;
    let mut s = 0.0;
    while s < path.length() - 10.0 {
        t += 0.1 / plan.planned_at(s).max(cfg.creep_mps);
        s += 0.1;
    }
    t
}

#[test]
fn a_noisy_recording_of_the_gem_track_is_driven_as_fast_as_the_track() {
    // The GEM track (past its parked start) driven at 1 and 2.8 m/s, a 20 Hz INS with
    // 3 cm of noise: the recording lies within 3 cm of the track, and the speed
    // profile makes it no slower than the track itself (noise the smoothing left would
    // read as curvature changes, and the car would crawl).
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../launch/waypoints/gem_track.csv"
    ))
    .unwrap();
    let track: Vec<Point> = waypoints::parse(text.as_bytes(), "gem_track.csv")
        .unwrap()
        .iter()
        .skip(700)
        .map(|p| p.point())
        .collect();
    let path = crate::control::path::Path::new(&track, 0.05).unwrap();
    let track_lap = profiled_lap_s(&track);
    for v in [1.0, 2.8] {
        let mut d = settled(recorder(), 0.03);
        let t0 = d.t;
        let secs = (path.length() - 1.0) / v;
        d.run(secs, GOOD_MM, |t| path.point_at(v * (t - t0)));
        let points: Vec<Point> = d
            .rec
            .finish(false)
            .unwrap()
            .waypoints
            .iter()
            .map(|p| p.point())
            .collect();
        let off: Vec<f64> = points
            .iter()
            .map(|p| path.project(*p, 0.0, path.length()).cross_track_m.abs())
            .collect();
        let worst = off.iter().fold(0.0f64, |m, e| m.max(*e));
        let lap = profiled_lap_s(&points);
        assert!(
            worst < 0.03 && lap < 1.02 * track_lap,
            "at {v} m/s: {worst:.4} m off the track at worst, a lap of {lap:.1} s against the track's {track_lap:.1} s"
        );
    }
}
