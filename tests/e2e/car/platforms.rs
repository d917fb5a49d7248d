//! The car platforms' nodes: a killed controller braked by the bridge's watchdog, and each platform's settings.

use super::*;

#[test]
fn a_killed_controller_is_braked_to_rest_by_the_bridge_watchdog() {
    let _ros = ros();
    let route = Route::start("straight_300m.csv");
    let master = std::env::var("ROS_MASTER_URI").expect("the test master");
    let pid = pid_of_node("/controller", &master).expect("the controller's process");
    let v = route.speed();
    let killed_at = route.now();
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0, "kill");
    route.wait_at_rest("controller killed");
    let cfg = BridgeConfig::DEFAULT;
    let bound = cfg.command_timeout.as_secs_f64() + v / cfg.watchdog_decel_mps2 + 0.5;
    let took = route.now() - killed_at;
    assert!(
        took <= bound,
        "at rest {took:.2} s after the kill (ROS time), bound {bound:.2} s from {v:.2} m/s"
    );
    assert!(
        route
            .launch
            .output()
            .contains("=> BRAKING: braking to rest, steering held: no valid drive command"),
        "the bridge did not say why it braked\n{}",
        route.launch.output()
    );
    stop(route.launch);
}

/// `roslaunch` of `integration_run.launch` with `args`, resolved without running it
/// (`--nodes` or `--dump-params`).
fn resolved(what: &str, args: &str) -> std::process::Output {
    gem_testbed::sourced(
        "runners/env.sh",
        &format!("roslaunch {what} gem_bringup integration_run.launch {args}"),
    )
    .output()
    .expect("roslaunch")
}

#[test]
fn each_platform_starts_its_nodes_with_its_settings() {
    let nodes = |platform: &str| {
        let out = resolved("--nodes", &format!("platform:={platform}"));
        gem_testbed::succeeded(&out, platform)
            .lines()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let params = |platform: &str| {
        let out = resolved("--dump-params", &format!("platform:={platform}"));
        gem_testbed::succeeded(&out, platform)
    };
    let nodes_with = |platform: &str, extra: &str| {
        let out = resolved("--nodes", &format!("platform:={platform} {extra}"));
        gem_testbed::succeeded(&out, platform)
            .lines()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let params_with = |platform: &str, extra: &str| {
        let out = resolved("--dump-params", &format!("platform:={platform} {extra}"));
        gem_testbed::succeeded(&out, platform)
    };
    let car = ["/gnss_pose", "/pacmod_bridge"];
    let sim = nodes("sim");
    assert!(sim.iter().any(|n| n == "/gem_sim"), "{sim:?}");
    assert!(!car.iter().any(|n| sim.contains(&n.to_string())), "{sim:?}");
    for platform in ["gem_e2_sim", "gem_e2"] {
        let list = nodes(platform);
        for n in car
            .iter()
            .chain(&["/controller", "/state_manager", "/signal_sources"])
        {
            assert!(
                list.iter().any(|l| l == n),
                "{platform}: no {n} in {list:?}"
            );
        }
        assert_eq!(
            list.iter().any(|n| n == "/gem_sim"),
            platform == "gem_e2_sim",
            "{platform}: {list:?}"
        );
        let p = params(platform);
        assert!(
            !list.iter().any(|n| n == "/mock_signals"),
            "{platform}: {list:?}"
        );
        // The operator station runs beside the suite on the simulator only.
        assert_eq!(
            list.iter().any(|n| n == "/operator_station"),
            platform == "gem_e2_sim",
            "{platform}: {list:?}"
        );
        for setting in [
            "/state_manager/watch_vehicle_fault: true",
            "config/signal_sources/gem_e2.yaml",
        ] {
            assert!(p.contains(setting), "{platform}: no {setting} in\n{p}");
        }
        // The mocks come back for fault injection, without their GPS.
        let mock = nodes_with(platform, "signals:=mock");
        assert!(
            mock.iter().any(|n| n == "/mock_signals")
                && !mock
                    .iter()
                    .any(|n| n == "/signal_sources" || n == "/operator_station"),
            "{platform} signals:=mock: {mock:?}"
        );
        let p_mock = params_with(platform, "signals:=mock");
        assert!(
            p_mock.contains("/mock_signals/publish_gps: false"),
            "{p_mock}"
        );
        let sim_time = format!("/use_sim_time: {}", platform == "gem_e2_sim");
        assert!(p.contains(&sim_time), "{platform}: not {sim_time} in\n{p}");
    }
    // The car platforms steer with lqr and plan with the PACMod's steering; the
    // steering's figures, when given, reach the bridge, the controller and the simulated
    // PACMod together.
    for platform in ["gem_e2_sim", "gem_e2"] {
        let p = params(platform);
        for setting in [
            "/controller/algorithm: lqr",
            "/controller/pacmod_steering: true",
        ] {
            assert!(p.contains(setting), "{platform}: no {setting} in\n{p}");
        }
    }
    let out = resolved(
        "--dump-params",
        "platform:=gem_e2_sim steering_wheel_rate:=2.0 steering_lag_s:=0.2 steering_dead_time_s:=0.15",
    );
    let p = gem_testbed::succeeded(&out, "gem_e2_sim with the steering's figures");
    for setting in [
        "/pacmod_bridge/steering_rate_rad_s: 2.0",
        "/controller/pacmod_steering_wheel_rate_rad_s: 2.0",
        "/pacmod_bridge/steering_lag_s: 0.2",
        "/controller/pacmod_steering_lag_s: 0.2",
        "/gem_sim/pacmod_steering_lag_s: 0.2",
        "/pacmod_bridge/steering_dead_time_s: 0.15",
        "/controller/pacmod_steering_dead_time_s: 0.15",
        "/gem_sim/pacmod_steering_dead_time_s: 0.15",
    ] {
        assert!(p.contains(setting), "no {setting} in\n{p}");
    }
    let p = params("gem_e2_sim");
    for setting in ["/gem_sim/interface: pacmod", "/gem_sim/pose_output: inspva"] {
        assert!(p.contains(setting), "no {setting} in\n{p}");
    }
    // The simulated computer's thermal zone is where signal_sources reads it.
    let value = |key: &str| {
        p.lines()
            .find_map(|l| l.strip_prefix(key))
            .unwrap_or_else(|| panic!("no {key} in\n{p}"))
            .trim()
            .to_owned()
    };
    assert_eq!(
        value("/gem_sim/computer_thermal_root:"),
        value("/signal_sources/sysfs_root:")
    );
    let p = params("sim");
    assert!(p.contains("/use_sim_time: true"), "{p}");
    assert!(!p.contains("/controller/algorithm"), "{p}");
    assert!(!p.contains("publish_gps"), "{p}");
    // A platform that does not exist stops the launch, naming it.
    let out = resolved("--nodes", "platform:=gem_e3");
    let said =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success() && said.contains("gem_e3"), "{said}");
}
