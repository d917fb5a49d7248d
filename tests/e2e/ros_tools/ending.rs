//! How every node ends: on each way out, with its master stopped, killed and cleaned up, failing at start-up; and what the master lists afterwards.

use super::*;

#[test]
fn every_node_ends_at_once_and_leaves_nothing_in_the_master_on_every_way_out() {
    let ros = ros();
    // Inputs flowing the whole time: the five signals at their rate.
    let _inputs = start(
        &ros,
        "mock_signals",
        "inputs",
        &["pub /estop", "pub /battery_level"],
        &[],
    );
    let mut figures = vec![];
    for case in nodes() {
        for way in [Way::Interrupt, Way::Terminate, Way::RosnodeKill] {
            let name = case.binary;
            let mut node = start(&ros, name, name, case.up, &case.params);
            if matches!(way, Way::Interrupt) {
                check_documented_parameters(name);
            }
            let took = end(&mut node, name, way);
            let full = format!("/{name}");
            let left = entries_of(&full);
            assert!(
                left.is_empty(),
                "{name} after {way:?}: the master still lists {left:?}\n{}",
                node.output()
            );
            // A node that ended and kept a subscription to the parameter tree would be
            // sent every later parameter change. Ours subscribe to none; had one
            // subscribed, its last entry in the master's log must be a withdrawal.
            let log = master_log();
            let last = log
                .lines()
                .rfind(|l| l.ends_with(&format!("CACHEDPARAM [/] by {full}")))
                .unwrap_or_default();
            assert!(
                last.is_empty() || last.contains("-CACHEDPARAM"),
                "{name} after {way:?}: its parameter subscription is still with the master ({last:?})"
            );
            let listed = cli_ok("rosnode", &["list"], T);
            assert!(
                !listed.lines().any(|l| l.trim() == full),
                "{name} after {way:?}: rosnode list still shows it:\n{listed}"
            );
            assert!(
                matches!(way, Way::RosnodeKill) || took <= EXIT_WITHIN,
                "{name} took {took:?} to end after {way:?} (at most {EXIT_WITHIN:?})\n{}",
                node.output()
            );
            figures.push(format!("{name} {way:?} {:.0} ms", took.as_secs_f64() * 1e3));
        }
    }
    println!("time to exit after being told:\n  {}", figures.join("\n  "));
}

/// How long a node may take to end on SIGINT while its master does not answer.
const EXIT_WITHOUT_MASTER_WITHIN: Duration = Duration::from_secs(2);

#[test]
fn every_node_whose_master_stops_answering_says_so_in_time_and_still_ends_on_sigint() {
    let ros = ros();
    let own = OwnMaster::start();
    let probe = Master::new(own.uri(), "/e2e_probe", "");
    let mut running = vec![];
    for case in nodes() {
        let mut b = ros
            .node(case.binary)
            .name(case.binary)
            .env("ROS_MASTER_URI", own.uri());
        for (k, v) in &case.params {
            b = b.param(k, v);
        }
        running.push((case, b.spawn()));
    }
    // Two nodes serve /gazebo/get_model_state: the master lists only the later one.
    let contested = |e: &str| running.iter().filter(|(c, _)| c.up.contains(&e)).count() > 1;
    for (case, node) in &running {
        let full = format!("/{}", case.binary);
        let up = wait_until(T, || {
            let have = entries_at(&probe, &full);
            case.up
                .iter()
                .all(|e| contested(e) || have.iter().any(|h| h == e))
        });
        assert!(
            up,
            "{full} never registered with its master\n{}",
            node.output()
        );
    }
    own.stop();
    let stopped = Instant::now();
    // The master watch asks once a period; its call fails after the time limit.
    let told_within = MASTER_CALL_WITHIN + ros1_protocols::master::PERIOD + Duration::from_secs(3);
    let mut figures = vec![];
    for (case, node) in &mut running {
        let name = case.binary;
        let said = wait_until(told_within.saturating_sub(stopped.elapsed()), || {
            node.output()
                .lines()
                .any(|l| l.contains("unreachable") && l.contains("lookupNode"))
        });
        assert!(
            said,
            "{name} did not log its failing master call within {told_within:?} of the master stopping\n{}",
            node.output()
        );
        let told = Instant::now();
        let status = node.signal(libc::SIGINT, EXIT_WITHOUT_MASTER_WITHIN);
        let took = told.elapsed();
        assert!(
            status.is_some() && took <= EXIT_WITHOUT_MASTER_WITHIN,
            "{name} did not end within {EXIT_WITHOUT_MASTER_WITHIN:?} of SIGINT with its master stopped\n{}",
            node.output()
        );
        figures.push(format!("{name} {:.0} ms", took.as_secs_f64() * 1e3));
    }
    own.resume();
    println!(
        "master stopped: every node logged it within {:.1} s; time to exit on SIGINT:\n  {}",
        stopped.elapsed().as_secs_f64(),
        figures.join("\n  ")
    );
}

/// `rosparam get /name` shows every parameter the node's page documents (the node writes
/// the defaults of those nobody set).
fn check_documented_parameters(name: &str) {
    let documented = documented_parameters(name);
    assert!(!documented.is_empty(), "no parameter table for {name}");
    let out = cli_ok("rosparam", &["get", &format!("/{name}")], T);
    let missing: Vec<&String> = documented
        .iter()
        .filter(|p| {
            !out.lines()
                .any(|l| l.trim_start().starts_with(&format!("{p}:")))
        })
        .collect();
    assert!(
        missing.is_empty(),
        "rosparam get /{name} lacks {missing:?}:\n{out}"
    );
}

#[test]
fn rosnode_cleanup_purges_a_killed_node_and_keeps_the_live_ones() {
    let ros = ros();
    let _live = state_manager(&ros);
    let mut dead = start(
        &ros,
        "task_planner",
        "task_planner",
        &["srv /cancel_tasks"],
        &[],
    );
    // SIGKILL: no chance to withdraw anything, as a crash.
    dead.kill();
    assert!(
        !entries_of("/task_planner").is_empty(),
        "a killed node stays listed until cleanup"
    );
    let out = cli("sh", &["-c", "echo y | rosnode cleanup"], T);
    assert!(out.status.success(), "rosnode cleanup: {out:?}");
    assert!(
        entries_of("/task_planner").is_empty(),
        "after cleanup: {:?}",
        entries_of("/task_planner")
    );
    // Our live node answered cleanup's ping and keeps its registrations.
    assert!(entries_of("/state_manager").contains(&"pub /system_state".to_string()));
}

#[test]
fn a_node_that_fails_at_start_up_unregisters_what_it_had_registered() {
    let ros = ros();
    // The node registers /rosout before it reads its parameters; a rate of -1 is then
    // refused.
    let mut node = ros
        .node("state_manager")
        .name("bad_rate")
        .param("rate", -1)
        .spawn();
    let status = node.wait(T).expect("a node with a bad parameter exits");
    assert!(!status.success(), "{}", node.output());
    assert!(
        node.output().contains("rate"),
        "names the parameter:\n{}",
        node.output()
    );
    let left = entries_of("/bad_rate");
    assert!(left.is_empty(), "the master still lists {left:?}");
}
