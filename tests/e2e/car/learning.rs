//! The controller learns the car's steering while it laps (`~learn_steering`, on with the
//! car's platform): a simulated car whose steering motor (2.0 rad/s, 0.3 s lag, 0.2 s dead
//! time), offset (0.8°) and steering ratio (20.0 where the bridge is told 21.775) are none
//! of what the suite is told. `/diagnostics` carries the learned figures, and a WARN that
//! names each configured figure outside them with the command that measures it; the learned
//! motor is written to `learned_file:=`.

use super::*;
use gem_msgs::diagnostic_msgs::DiagnosticArray;

/// The simulated car's truth.
const RATE: f64 = 2.0;
const LAG: f64 = 0.3;
const DEAD: f64 = 0.2;
const OFFSET_DEG: f64 = 0.8;
const LINEAR: f64 = 20.0;
/// A motor near the slowest the bridge's check accepts of the defaults, rad/s.
const SLOW: f64 = 1.8;

/// A scratch directory for `tag` and, in it, a `sim_car:=` file giving the simulated car
/// a steering motor of `rate` rad/s with [`LAG`] and [`DEAD`], and the gem_sim
/// parameters of `more` (YAML lines).
fn car_with_motor(tag: &str, rate: f64, more: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("gem_e2e_{tag}_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sim_car = dir.join("sim_car.yaml");
    std::fs::write(
        &sim_car,
        format!("pacmod_max_wheel_rate_rad_s: {rate}\npacmod_steering_lag_s: {LAG}\npacmod_steering_dead_time_s: {DEAD}\n{more}"),
    )
    .unwrap();
    (dir, sim_car)
}

/// How far along the track the poses have come, m.
fn driven_m(poses: &Collector<ModelStates>) -> f64 {
    cross_track_of(track_path(), &poses.all())
        .last()
        .map_or(0.0, |s| s.0)
}

/// The first number of a status value ("2.013 ± 0.004").
fn number(v: &str) -> f64 {
    v.trim_start_matches("≥ ")
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(f64::NAN)
}

#[test]
fn a_lap_teaches_the_controller_a_steering_it_was_not_told_and_it_says_so() {
    let _ros = ros();
    let (dir, sim_car) = car_with_motor(
        "learn",
        RATE,
        &format!("pacmod_steering_offset_deg: {OFFSET_DEG}\npacmod_steering_linear: {LINEAR}\n"),
    );
    let learned = dir.join("learned.yaml");
    let diagnostics = Collector::<DiagnosticArray>::new(names::DIAGNOSTICS);
    let mut extra = gem_e2e::platform::spawn_at(&waypoint_rows("gem_track.csv").0);
    extra.push(format!("sim_car:={}", sim_car.display()));
    extra.push(format!("learned_file:={}", learned.display()));
    let launch = launch_with("gem_e2_sim", "gem_track.csv", &extra);
    // The latest status of the learner with a fitted motor and a relation.
    let status = || {
        diagnostics
            .all()
            .iter()
            .rev()
            .flat_map(|a| a.status.clone())
            .filter(|s| s.name.ends_with("controller: steering learned"))
            .filter(|s| s.values.iter().any(|v| v.key == "relation scale"))
            .find(|s| s.values.iter().any(|v| v.key == "lag, s"))
    };
    let value = |s: &gem_msgs::diagnostic_msgs::DiagnosticStatus, key: &str| {
        s.values
            .iter()
            .find(|v| v.key == key)
            .map_or(f64::NAN, |v| number(&v.value))
    };
    let close = |s: &gem_msgs::diagnostic_msgs::DiagnosticStatus| {
        (value(s, "lag, s") - LAG).abs() <= 0.15 * LAG
            && (value(s, "dead time, s") - DEAD).abs() <= 0.15 * DEAD
            && (value(s, "offset, deg of front wheel") - OFFSET_DEG).abs() <= 0.2
            && (value(s, "relation scale") - 21.775 / LINEAR).abs() <= 0.15 * 21.775 / LINEAR
    };
    let learnt = wait_until(Duration::from_secs(200), || {
        status().is_some_and(|s| close(&s))
    });
    let said = launch.output();
    stop(launch);
    let s = status().unwrap_or_else(|| panic!("no learned steering on /diagnostics\n{said}"));
    let values: Vec<String> = s
        .values
        .iter()
        .map(|v| format!("{}: {}", v.key, v.value))
        .collect();
    println!("learned: {}; {}", values.join("; "), s.message);
    assert!(learnt, "not within bounds: {values:?}\n{said}");
    // The scale: the front wheels turn 21.775 / 20 as far as commanded, near the centre.
    let scale = value(&s, "relation scale");
    assert!(
        (scale - 21.775 / LINEAR).abs() <= 0.15 * 21.775 / LINEAR,
        "{values:?}"
    );
    // The rate, where the motor set the pace; a bound otherwise, never above the truth.
    let rate = s
        .values
        .iter()
        .find(|v| v.key.starts_with("rate left"))
        .unwrap();
    if rate.value.starts_with('≥') {
        assert!(number(&rate.value) <= RATE * 1.15, "{values:?}");
    } else {
        assert!(
            (number(&rate.value) - RATE).abs() <= 0.15 * RATE,
            "{values:?}"
        );
    }
    // The WARN names the configured lag and dead time, and the offset, with their fix.
    assert_eq!(
        s.level,
        gem_msgs::diagnostic_msgs::DiagnosticStatus::WARN,
        "{}",
        s.message
    );
    for named in [
        "steering lag configured 0.100",
        "steering dead time configured 0.100",
        "steering offset configured 0.000",
    ] {
        assert!(s.message.contains(named), "{named}: {}", s.message);
    }
    assert!(
        s.message.contains("gemctl calibrate actuator --collect"),
        "{}",
        s.message
    );
    // The learned motor, as a calibration file.
    let file = std::fs::read_to_string(&learned).expect("the learned file");
    let motor = gem_nodes::calibration_file::read_motor(&file)
        .unwrap()
        .expect("the motor");
    assert!((motor.lag_s - LAG).abs() <= 0.15 * LAG, "{file}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Told the defaults on a steering motor far slower and later than them (2.0 rad/s, 0.3 s
/// lag, 0.2 s dead time), every law the car accepts joins from 2 m beside the path and
/// drives on without a growing swing and without the bridge stopping the car: the
/// bridge's check accepts the motor, and the controller plans with what it learns.
#[test]
fn told_the_defaults_on_a_slow_late_motor_every_law_joins_and_drives_on() {
    let _ros = ros();
    let (dir, sim_car) = car_with_motor("slow", RATE, "");
    for law in ["lqr", "pure_pursuit", "mpc"] {
        let poses = Collector::<ModelStates>::new(names::global::MODEL_STATES);
        let extra = vec![
            format!("algorithm:={law}"),
            format!("sim_car:={}", sim_car.display()),
        ];
        let launch = launch_with("gem_e2_sim", "gem_track.csv", &extra);
        let driven = || driven_m(&poses);
        let drove = wait_until(Duration::from_secs(150), || driven() > 150.0);
        let said = launch.output();
        stop(launch);
        assert!(
            drove,
            "{law}: the car did not drive 150 m ({:.1} m)\n{said}",
            driven()
        );
        let samples = cross_track_of(track_path(), &poses.all());
        let peak = |from: f64, to: f64| {
            samples
                .iter()
                .filter(|(s, _)| *s >= from && *s < to)
                .map(|(_, e)| e.abs())
                .fold(0.0, f64::max)
        };
        // Joined: first within 0.1 m of the path.
        let joined = samples.iter().find(|(_, e)| e.abs() < 0.1).map(|s| s.0);
        let (early, late) = (peak(40.0, 90.0), peak(90.0, 150.0));
        println!(
            "{law} told the defaults on {RATE}/{LAG}/{DEAD}: joined after {joined:?} m, peak 40-90 m {early:.3} m, 90-150 m {late:.3} m"
        );
        assert!(
            joined.is_some_and(|c| c <= 40.0),
            "{law}: joined after {joined:?} m\n{said}"
        );
        assert!(
            late <= (1.5 * early).max(0.15),
            "{law}: the swing grows: {early:.3} m, then {late:.3} m\n{said}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A motor near the slowest the bridge's steering check accepts of the told defaults
/// (1.8 rad/s against 3.5, 0.3 s lag, 0.2 s dead time): the bridge learns it from its own
/// commands and builds its check on it, the controller plans with it, and the car drives
/// on; the bridge's status says which motor its check is built on. (A motor below the
/// check's margins can still latch it in the seconds before the first fit.)
#[test]
fn the_bridge_builds_its_check_on_the_motor_it_learns() {
    let _ros = ros();
    let (dir, sim_car) = car_with_motor("bridge_learns", SLOW, "");
    let poses = Collector::<ModelStates>::new(names::global::MODEL_STATES);
    let diagnostics = Collector::<DiagnosticArray>::new(names::DIAGNOSTICS);
    let extra = vec![format!("sim_car:={}", sim_car.display())];
    let launch = launch_with("gem_e2_sim", "gem_track.csv", &extra);
    let driven = || driven_m(&poses);
    let drove = wait_until(Duration::from_secs(150), || driven() > 150.0);
    let said = launch.output();
    stop(launch);
    let bridge: Vec<_> = diagnostics
        .all()
        .iter()
        .flat_map(|a| a.status.clone())
        .filter(|s| s.name.ends_with("pacmod_bridge: PACMod"))
        .collect();
    let mismatch = bridge
        .iter()
        .find(|s| s.message.contains("steering wheel at"));
    assert!(
        mismatch.is_none(),
        "{:?}\n{said}",
        mismatch.map(|s| &s.message)
    );
    assert!(
        drove,
        "the car did not drive 150 m ({:.1} m)\n{said}",
        driven()
    );
    let built_on = bridge
        .iter()
        .rev()
        .flat_map(|s| s.values.iter())
        .find(|v| v.key == "steering check built on")
        .map(|v| v.value.clone())
        .unwrap_or_default();
    println!("the bridge's check built on: {built_on}");
    assert!(
        built_on.ends_with("(following the learned motor)"),
        "{built_on}"
    );
    let rate: f64 = built_on.split_whitespace().next().unwrap().parse().unwrap();
    assert!((rate - SLOW).abs() <= 0.15 * SLOW, "{built_on}");
    let _ = std::fs::remove_dir_all(&dir);
}
