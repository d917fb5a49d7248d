//! The controller nodes and `gem_sim` against a real master: Debian's Python actionlib on
//! both sides of our actionlib code, preemption and resume, bad goals, a dying simulator,
//! the safety gate, and a full lap of the GEM track driven through ROS.

use gem_core::control::closed_loop;
use gem_core::control::tracker::{Law, TrackerConfig};
use gem_core::geometry::Point;
use gem_e2e::control::{
    core_rms, cross_track_of, gem_track, goal, line, refused_at_start_up, ros_rms_bound, wait_done,
    Stack,
};
use gem_msgs::ackermann_msgs::AckermannDrive;
use gem_msgs::gazebo_msgs::ModelStates;
use gem_msgs::gem_state_msgs::SystemStateStamped;
use gem_msgs::geometry_msgs::Pose2D;
use gem_ros::action::NavigateWaypoints;
use gem_testbed::{cli, cli_background, fresh_ns, repo_root, ros, wait_until, Collector};
use ros1_protocols::actionlib::{status, ActionClient, ClientEvent, RESULT_GRACE};
use std::time::{Duration, Instant};

const T: Duration = Duration::from_secs(30);

#[test]
fn python_simple_action_client_reaches_a_short_path() {
    let ros = ros();
    let stack = Stack::start(&ros, "pure_pursuit", Some(10.0), &[]);
    let ns = stack.topic("navigate_waypoints");
    let script = repo_root().join("tests/py/nav_client.py");
    let out = cli(
        "/usr/bin/python3",
        &[
            script.to_str().unwrap(),
            &ns,
            "0,0",
            "5,0",
            "10,1",
            "15,3",
            "20,6",
            "--timeout",
            "40",
        ],
        Duration::from_secs(60),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("state SUCCEEDED") && stdout.contains("result True"),
        "{stdout}\n{}",
        stack.output()
    );
    let feedback: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("feedback "))
        .collect();
    assert!(feedback.len() > 5, "{stdout}");
    let indices: Vec<u64> = feedback
        .iter()
        .map(|l| l.split(' ').nth(1).unwrap().parse().unwrap())
        .collect();
    assert!(
        indices.windows(2).all(|w| w[0] <= w[1]),
        "target_index never goes back: {indices:?}"
    );
}

#[test]
fn preempted_goal_stops_the_car_and_resumes_forward_from_the_feedback_index() {
    let ros = ros();
    let stack = Stack::start(&ros, "stanley", Some(10.0), &[]);
    let cmds = Collector::<AckermannDrive>::new(&stack.topic("gem/ackermann_cmd"));
    let states = Collector::<ModelStates>::new(&stack.topic("gazebo/model_states"));
    let client = stack.client();
    let path = line(61, 1.0);
    let id = client.send_goal(goal(path.clone(), 0)).unwrap();
    let mut last_target = 0;
    while last_target < 20 {
        match client.next_event(T) {
            Some(ClientEvent::Feedback { feedback, .. }) => last_target = feedback.target_index,
            Some(ClientEvent::Done {
                status: s, text, ..
            }) => panic!("ended {} ({text})\n{}", status::name(s), stack.output()),
            None => panic!("no feedback\n{}", stack.output()),
        }
    }
    client.cancel(&id).unwrap();
    let (st, _, fb, _) = wait_done(&client, &id, T);
    assert_eq!(status::name(st), "PREEMPTED");
    if let Some(f) = fb.last() {
        last_target = f.target_index;
    }
    assert!(
        cmds.wait_latest(T, |c| c.speed == 0.0).is_some(),
        "no zero command after the preemption"
    );
    let x_at_stop = states.last().unwrap().pose[0].position.x;
    let id2 = client.send_goal(goal(path, last_target)).unwrap();
    let (st2, text2, fb2, _) = wait_done(&client, &id2, Duration::from_secs(60));
    assert_eq!(
        status::name(st2),
        "SUCCEEDED",
        "{text2}\n{}",
        stack.output()
    );
    assert!(
        fb2[0].target_index >= last_target,
        "resumed at {} < {last_target}",
        fb2[0].target_index
    );
    let min_x = states
        .all()
        .iter()
        .filter_map(|m| m.pose.first().map(|p| p.position.x))
        .skip_while(|x| *x < x_at_stop - 0.01)
        .fold(f64::MAX, f64::min);
    assert!(
        min_x >= x_at_stop - 0.5,
        "the car drove back from {x_at_stop} to {min_x}"
    );
    // The zero command precedes the result, but on another connection.
    assert!(
        cmds.wait_latest(T, |c| c.speed == 0.0).is_some(),
        "no zero command at the end"
    );
}

#[test]
fn bad_goals_are_aborted_with_a_reason_and_a_zero_command() {
    let ros = ros();
    let stack = Stack::start(&ros, "pure_pursuit", Some(10.0), &[]);
    let client = stack.client();
    let nan = vec![
        Pose2D {
            x: 0.0,
            y: 0.0,
            theta: 0.0,
        },
        Pose2D {
            x: f64::NAN,
            y: 1.0,
            theta: 0.0,
        },
    ];
    let same = vec![
        Pose2D {
            x: 2.0,
            y: 2.0,
            theta: 0.0
        };
        3
    ];
    let cases = [
        ("empty", goal(vec![], 0), "no waypoints"),
        ("single point", goal(line(1, 1.0), 0), "nothing to follow"),
        ("identical points", goal(same, 0), "nothing to follow"),
        (
            "start_index past the end",
            goal(line(5, 1.0), 5),
            "start_index 5 is out of range",
        ),
        ("NaN waypoint", goal(nan, 0), "waypoint 1 is not finite"),
    ];
    for (what, g, reason) in cases {
        let id = client.send_goal(g).unwrap();
        let (st, text, _, _) = wait_done(&client, &id, T);
        assert_eq!(status::name(st), "ABORTED", "{what}");
        assert!(text.contains(reason), "{what}: {text}");
    }
    // The node survived all of them and still drives a good goal.
    let id = client.send_goal(goal(line(11, 1.0), 0)).unwrap();
    let (st, text, _, _) = wait_done(&client, &id, T);
    assert_eq!(status::name(st), "SUCCEEDED", "{text}\n{}", stack.output());
}

#[test]
fn simulator_killed_mid_goal_aborts_with_a_zero_command_within_the_pose_timeout() {
    let ros = ros();
    let mut stack = Stack::start(&ros, "pure_pursuit", None, &[("pose_timeout_s", "0.5")]);
    let cmds = Collector::<AckermannDrive>::new(&stack.topic("gem/ackermann_cmd"));
    let client = stack.client();
    let id = client.send_goal(goal(line(200, 1.0), 0)).unwrap();
    assert!(
        cmds.wait_for(T, |c| c.speed > 0.5).is_some(),
        "the car never moved\n{}",
        stack.output()
    );
    stack.sim.kill();
    let killed = Instant::now();
    let (st, text, _, _) = wait_done(&client, &id, T);
    let took = killed.elapsed();
    assert_eq!(status::name(st), "ABORTED", "{text}");
    assert!(text.contains("no pose"), "{text}");
    // 0.5 s pose timeout + one 0.2 s call + a tick, plus scheduling slack on a loaded CI.
    assert!(
        took < Duration::from_secs(2),
        "aborted {took:?} after the simulator died"
    );
    assert!(
        cmds.wait_latest(T, |c| c.speed == 0.0).is_some(),
        "no zero command"
    );
}

#[test]
fn system_state_error_zeroes_the_speed_at_once() {
    let ros = ros();
    let stack = Stack::start(&ros, "pure_pursuit", Some(5.0), &[]);
    let cmds = Collector::<AckermannDrive>::new(&stack.topic("gem/ackermann_cmd"));
    let state =
        ros1_protocols::this_node::publish::<SystemStateStamped>(&stack.topic("system_state"), 10)
            .unwrap();
    assert!(wait_until(T, || state.subscriber_count() > 0));
    let client = stack.client();
    client.send_goal(goal(line(300, 1.0), 0)).unwrap();
    assert!(
        cmds.wait_for(T, |c| c.speed > 1.0).is_some(),
        "the car never got going\n{}",
        stack.output()
    );
    let before = cmds.len();
    let error = SystemStateStamped {
        error_code: SystemStateStamped::ERROR_ESTOP,
        state: SystemStateStamped::STATE_ERROR,
        ..Default::default()
    };
    state.send(error.clone()).unwrap();
    assert!(
        wait_until(T, || cmds.len() > before + 1),
        "no commands after the error"
    );
    let after: Vec<f32> = cmds.all()[before..].iter().map(|c| c.speed).collect();
    // The gate's zero is the first command after the error, or the second if a tick's
    // command was already on the wire; from then on every command is zero while ERROR.
    let first_zero = after
        .iter()
        .position(|s| *s == 0.0)
        .expect("a zero command");
    assert!(first_zero <= 1, "speeds after ERROR: {after:?}");
    state.send(error).unwrap();
    let n = cmds.len();
    assert!(wait_until(T, || cmds.len() > n + 5));
    assert!(
        cmds.all()[before + first_zero..]
            .iter()
            .all(|c| c.speed == 0.0),
        "a non-zero speed while ERROR"
    );
}

#[test]
fn rust_client_drives_a_python_simple_action_server() {
    let _ros = ros();
    let ns = format!("{}/py_nav", fresh_ns("ctl"));
    let script = repo_root().join("tests/py/nav_server.py");
    let _server = cli_background("/usr/bin/python3", &[script.to_str().unwrap(), &ns]);
    let client = ActionClient::<NavigateWaypoints>::new(&ns).unwrap();
    assert!(client.wait_for_server(T), "Python server not found");
    let id = client.send_goal(goal(line(4, 1.0), 7)).unwrap();
    let (st, text, fb, result) = wait_done(&client, &id, T);
    assert_eq!((status::name(st), text.as_str()), ("SUCCEEDED", "done"));
    assert_eq!(result.map(|r| r.success), Some(true));
    let targets: Vec<u64> = fb.iter().map(|f| f.target_index).collect();
    // The first feedback can race the feedback connection (as for Python's own client).
    assert!(
        targets.ends_with(&[9, 10]) && targets.iter().all(|t| (7..=10).contains(t)),
        "{targets:?}"
    );
    // A goal the Python server holds until cancelled.
    let id = client
        .send_goal(goal(
            vec![Pose2D {
                x: -1.0,
                y: 0.0,
                theta: 0.0,
            }],
            0,
        ))
        .unwrap();
    assert!(
        wait_until(T, || client.status_of(&id) == Some(status::ACTIVE)),
        "never ACTIVE"
    );
    client.cancel(&id).unwrap();
    let (st, _, _, _) = wait_done(&client, &id, T);
    assert_eq!(status::name(st), "PREEMPTED");
    // A goal whose result never reaches us still ends, from the status list.
    let id = client.send_goal(goal(line(2, 1.0), 999)).unwrap();
    let sent = Instant::now();
    let (st, text, _, result) = wait_done(&client, &id, T);
    assert_eq!(
        (status::name(st), text.as_str()),
        ("SUCCEEDED", "result withheld")
    );
    assert!(result.is_none(), "{result:?}");
    assert!(sent.elapsed() >= RESULT_GRACE, "ended before the grace");
}

fn full_lap(controller: &str, law: Law) {
    let ros = ros();
    let track = gem_track();
    let points: Vec<Point> = track.iter().map(|w| Point::new(w.x, w.y)).collect();
    let stack = Stack::start(&ros, controller, Some(10.0), &[]);
    let states = Collector::<ModelStates>::new(&stack.topic("gazebo/model_states"));
    let client = stack.client();
    let wall = Instant::now();
    let id = client.send_goal(goal(track.clone(), 0)).unwrap();
    let (st, text, fb, _) = wait_done(&client, &id, Duration::from_secs(120));
    let wall_s = wall.elapsed().as_secs_f64();
    assert_eq!(status::name(st), "SUCCEEDED", "{text}\n{}", stack.output());
    // The final feedback (last index, progress 1) is published just before the result,
    // on another connection: it may arrive after it.
    let mut last_fb = fb.last().cloned().expect("feedback");
    while last_fb.progress < 1.0 {
        match client.next_event(T) {
            Some(ClientEvent::Feedback { feedback, .. }) => last_fb = feedback,
            _ => panic!("no final feedback after the result"),
        }
    }
    assert_eq!(
        last_fb.target_index,
        track.len() as u64 - 1,
        "completed at the last waypoint"
    );
    let end = states.last().expect("model states").pose[0]
        .position
        .clone();
    let goal_point = points[points.len() - 1];
    assert!(
        Point::new(end.x, end.y).distance(goal_point) < 1.0,
        "stopped at ({}, {}), goal {goal_point:?}",
        end.x,
        end.y
    );
    let cte = cross_track_of(&states.all(), &points);
    let driven = cte.last().map_or(0.0, |c| c.0);
    let ros_rms = closed_loop::stats(&cte, closed_loop::CONVERGED_M).rms_after_m;
    let cfg = TrackerConfig {
        law,
        ..Default::default()
    };
    let core_rms = core_rms(cfg, &points, Default::default());
    eprintln!("{controller}: full GEM lap through ROS in {wall_s:.1} s wall (10× sim), {driven:.0} m, RMS {ros_rms:.4} m vs core {core_rms:.4} m");
    // At 10x a loaded 2-core machine delays some control ticks in sim time: allow 20 %
    // or 5 mm over the core figure, whichever is larger (a fresh-clone run measured
    // 0.0132 m against 0.0096 m once; typical runs match within 2 %).
    let bound = ros_rms_bound(core_rms);
    assert!(
        ros_rms <= bound,
        "{controller}: RMS through ROS {ros_rms:.4} m > {bound:.4} m (core figure {core_rms:.4} m)"
    );
}

#[test]
fn full_lap_pure_pursuit_through_ros() {
    full_lap("pure_pursuit", Law::PurePursuit(Default::default()));
}

#[test]
fn full_lap_stanley_through_ros() {
    full_lap("stanley", Law::Stanley(Default::default()));
}

#[test]
fn bad_vehicle_model_parameters_are_refused_at_start_up_by_name() {
    let ros = ros();
    ros.set_sim_time(false);
    for (name, value, says) in [
        ("mass_kg", "-686", "must be > 0"),
        ("cornering_stiffness_front", "0", "must be > 0"),
        ("yaw_inertia_kgm2", ".nan", "must be > 0"),
        ("model", "bicycle", "neither dynamic nor kinematic"),
        (
            "localization_position_sigma_m",
            "-0.1",
            "must be within 0..10",
        ),
    ] {
        refused_at_start_up(&ros, "gem_sim", name, value, says);
    }
}

/// The steering commands' RMS step-to-step change, rad.
fn steering_jitter(cmds: &[AckermannDrive]) -> f64 {
    let steps: Vec<f64> = cmds
        .windows(2)
        .map(|w| f64::from(w[1].steering_angle - w[0].steering_angle))
        .collect();
    (steps.iter().map(|d| d * d).sum::<f64>() / steps.len().max(1) as f64).sqrt()
}

#[test]
fn pose_noise_neither_aborts_nor_chatters() {
    let ros = ros();
    let track = gem_track();
    // The first half of the GEM track: straights and bends.
    let part: Vec<Pose2D> = track[..track.len() / 2].to_vec();
    // Each binary with its own law, and the LQR through `~algorithm`.
    for (binary, algorithm) in [
        ("pure_pursuit", "pure_pursuit"),
        ("stanley", "stanley"),
        ("pure_pursuit", "lqr"),
    ] {
        let controller = algorithm;
        let stack = Stack::start_with_sim(
            &ros,
            binary,
            Some(10.0),
            &[
                ("localization_position_sigma_m", "0.03"),
                ("localization_yaw_sigma_rad", "0.005"),
                ("localization_rate_hz", "20"),
            ],
            &[("algorithm", algorithm)],
        );
        let cmds = Collector::<AckermannDrive>::new(&stack.topic("gem/ackermann_cmd"));
        let client = stack.client();
        let id = client.send_goal(goal(part.clone(), 0)).unwrap();
        let (st, text, _, _) = wait_done(&client, &id, Duration::from_secs(60));
        assert_eq!(
            status::name(st),
            "SUCCEEDED",
            "{controller}: {text}\n{}",
            stack.output()
        );
        let all = cmds.all();
        eprintln!(
            "{controller}: {} commands, {} above 2 m/s",
            all.len(),
            all.iter().filter(|c| c.speed > 2.0).count()
        );
        // From 20 m on (the car has joined the path), at cruise speed.
        let driving: Vec<AckermannDrive> =
            all.into_iter().filter(|c| c.speed > 2.0).skip(40).collect();
        assert!(driving.len() > 200, "{}", driving.len());
        let jitter = steering_jitter(&driving);
        eprintln!("{controller}: steering jitter with pose noise {jitter:.4} rad per step");
        // Chatter (a law fighting itself or the noise) is 0.1 rad a step and more.
        assert!(
            jitter < 0.03,
            "{controller}: steering jitter {jitter:.4} rad"
        );
    }
}
