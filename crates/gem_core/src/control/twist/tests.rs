//! The twist checks on exact arcs: a rear axle on a circle, its slip angle constant.

use super::*;

fn t(s: f64) -> Time {
    Time::from_secs_f64(100.0 + s)
}

/// What a source `x_true` ahead of the rear axle reports at `s` seconds on a circle of
/// radius `r` driven at `v` with slip angle `beta`: (pose, forward, lateral, yaw rate).
fn on_arc(s: f64, r: f64, v: f64, beta: f64, x_true: f64) -> (Pose, f64, f64, f64) {
    let omega = v / r;
    let course = omega * s;
    let pose = Pose::new(r * course.sin(), r * (1.0 - course.cos()), course - beta);
    (pose, v * beta.cos(), v * beta.sin() + omega * x_true, omega)
}

/// Feeds `seconds` of the arc at 20 Hz, the yaw rate passed through `yaw`; the last
/// rear twist.
fn drive(src: &mut TwistSource, seconds: f64, x_true: f64, yaw: impl Fn(f64) -> f64) -> RearTwist {
    let mut last = None;
    for i in 0..(seconds * 20.0) as usize {
        let s = i as f64 * 0.05;
        let (pose, u, w, omega) = on_arc(s, 27.0, 5.5, 0.01, x_true);
        last = Some(src.update(pose, u, w, yaw(omega), t(s)));
    }
    last.unwrap()
}

#[test]
fn the_twist_is_moved_to_the_rear_axle_with_the_yaw_rate() {
    let mut src = TwistSource::new(0.88);
    let r = src.update(Pose::default(), 5.0, 0.3, 0.2, t(0.0));
    assert_eq!(r.speed_mps, 5.0);
    assert!((r.lateral_speed_mps - (0.3 - 0.2 * 0.88)).abs() < 1e-12);
    assert_eq!(r.yaw_rate_rad_s, 0.2);
}

#[test]
fn a_good_source_on_an_arc_is_believed() {
    let mut src = TwistSource::new(0.88);
    let r = drive(&mut src, 20.0, 0.88, |w| w);
    assert!(src.take_news().is_empty());
    assert!(src.status().all_measured(), "{:?}", src.status());
    let v = 5.5;
    assert!((r.lateral_speed_mps - v * 0.01f64.sin()).abs() < 1e-9);
    assert!((r.yaw_rate_rad_s - v / 27.0).abs() < 1e-12);
}

#[test]
fn an_absent_yaw_rate_is_taken_from_the_poses_and_said_once() {
    let mut src = TwistSource::new(0.0);
    let first = src.update(Pose::default(), 5.5, 0.0, f64::NAN, t(0.0));
    assert!(first.yaw_rate_rad_s.is_nan(), "no history yet: commanded");
    assert_eq!(src.status().yaw_rate.unwrap().0, Fallback::Commanded);
    let r = drive(&mut src, 3.0, 0.0, |_| f64::NAN);
    assert!((r.yaw_rate_rad_s - 5.5 / 27.0).abs() < 1e-3, "{r:?}");
    let news = src.take_news();
    assert_eq!(news.len(), 1, "{news:?}");
    assert_eq!(news[0].doubt, Doubt::Absent);
    assert_eq!(
        src.status().yaw_rate,
        Some((Fallback::PoseHistory, Doubt::Absent))
    );
}

#[test]
fn a_zero_yaw_rate_while_turning_is_doubted() {
    let mut src = TwistSource::new(0.0);
    let r = drive(&mut src, 3.0, 0.0, |_| 0.0);
    assert!((r.yaw_rate_rad_s - 5.5 / 27.0).abs() < 1e-3, "{r:?}");
    let news = src.take_news();
    assert_eq!(news.len(), 1);
    assert!(matches!(
        news[0].doubt,
        Doubt::ZeroWhileMoving { history } if (history - 5.5 / 27.0).abs() < 1e-3
    ));
    assert!(news[0].to_string().contains("yaw rate is exactly 0"));
    // Said once, and kept.
    drive(&mut src, 3.0, 0.0, |w| w);
    assert!(src.take_news().is_empty());
    assert!(src.status().yaw_rate.is_some());
}

#[test]
fn a_yaw_rate_off_the_poses_is_doubted_after_a_while() {
    let mut src = TwistSource::new(0.0);
    drive(&mut src, 1.4, 0.0, |w| 2.0 * w);
    assert!(src.take_news().is_empty(), "not yet: it must last 1 s");
    drive(&mut src, 3.0, 0.0, |w| 2.0 * w);
    let news = src.take_news();
    assert!(
        matches!(
            news.as_slice(),
            [News {
                component: Component::YawRate,
                doubt: Doubt::Disagrees { .. }
            }]
        ),
        "{news:?}"
    );
}

#[test]
fn a_twist_of_another_point_is_found_and_moved_from_there() {
    // The source gives the centre of mass's twist; the rear axle is configured.
    let mut src = TwistSource::new(0.0);
    let r = drive(&mut src, 10.0, 0.88, |w| w);
    let news = src.take_news();
    let [News {
        component: Component::LateralSpeed,
        doubt: Doubt::ReferencePoint { estimated_m, .. },
    }] = news.as_slice()
    else {
        panic!("{news:?}");
    };
    assert!((estimated_m - 0.88).abs() < 0.05, "{estimated_m}");
    assert!((src.estimated_reference_x_m() - 0.88).abs() < 0.01);
    assert!(
        (r.lateral_speed_mps - 5.5 * 0.01f64.sin()).abs() < 0.005,
        "{r:?}"
    );
    assert_eq!(
        src.status().lateral_speed.map(|(f, _)| f),
        Some(Fallback::EstimatedReferencePoint)
    );
    assert!(news[0].to_string().contains("twist_reference_x_m"));
}

#[test]
fn a_straight_gives_no_evidence_of_the_reference_point() {
    let mut src = TwistSource::new(0.0);
    for i in 0..400 {
        let s = i as f64 * 0.05;
        src.update(Pose::new(5.5 * s, 0.0, 0.0), 5.5, 0.0, 0.0, t(s));
    }
    assert!(src.take_news().is_empty());
    assert!(src.status().all_measured());
}

#[test]
fn a_zero_speed_while_moving_is_replaced_with_the_poses() {
    // A source whose twist is all zeros.
    let mut src = TwistSource::new(0.0);
    let mut last = None;
    for i in 0..60 {
        let s = i as f64 * 0.05;
        let (pose, ..) = on_arc(s, 27.0, 5.5, 0.0, 0.0);
        last = Some(src.update(pose, 0.0, 0.0, 0.0, t(s)));
    }
    let r = last.unwrap();
    assert!((r.speed_mps - 5.5).abs() < 0.01, "{r:?}");
    assert!((r.yaw_rate_rad_s - 5.5 / 27.0).abs() < 1e-3, "{r:?}");
    assert!(r.lateral_speed_mps.abs() < 0.01, "{r:?}");
    let components: Vec<Component> = src.take_news().iter().map(|n| n.component).collect();
    assert!(components.contains(&Component::Speed), "{components:?}");
    assert!(components.contains(&Component::YawRate), "{components:?}");
}

#[test]
fn a_held_pose_adds_nothing_and_a_jump_starts_afresh() {
    let mut src = TwistSource::new(0.0);
    // A 10 Hz fix read at 20 Hz: every pose twice, with its own stamp.
    for i in 0..40 {
        let s = (i / 2) as f64 * 0.1;
        let (pose, u, w, _) = on_arc(s, 27.0, 5.5, 0.0, 0.0);
        src.update(pose, u, w, f64::NAN, t(s));
    }
    assert_eq!(src.history.len(), 16, "1.5 s of 10 Hz poses");
    let c = src.short_chord().unwrap();
    assert!((c.span_s - 0.1).abs() < 1e-9 && (c.yaw_rate - 5.5 / 27.0).abs() < 1e-3);
    src.update(Pose::new(500.0, 0.0, 0.0), 5.5, 0.0, f64::NAN, t(2.0));
    assert_eq!(src.history.len(), 1, "a teleport");
}
