//! What the recorder refuses or leaves alone: an output it cannot write, no pose or an unhealthy one, Ctrl-C before the car moved.

use super::*;

#[test]
fn an_output_that_cannot_be_written_is_refused_before_anything_starts() {
    let dir = scratch_dir("route_out");
    let missing = dir.join("no/such/dir/route.csv");
    let locked = dir.join("locked");
    std::fs::create_dir(&locked).expect("a directory");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o555)).expect("chmod");
    // Root writes anywhere the file system allows: then a directory of the kernel's.
    let probe = locked.join("probe");
    let unwritable = if std::fs::write(&probe, "").is_ok() {
        PathBuf::from("/sys")
    } else {
        locked.clone()
    };
    for (out, says) in [
        (
            missing.clone(),
            format!(
                "the directory {} does not exist",
                dir.join("no/such/dir").display()
            ),
        ),
        (
            unwritable.join("route.csv"),
            format!("cannot create a file in {}", unwritable.display()),
        ),
        (dir.clone(), "it is a directory".to_string()),
    ] {
        // No master is asked: the check comes first, so it is quick even without one.
        let (status, said, took) = record_route_fails(
            &[out.to_str().expect("utf-8 path")],
            &[("ROS_MASTER_URI", "http://127.0.0.1:1")],
        );
        assert!(!status.success(), "{}: {said}", out.display());
        assert!(said.contains(&says), "{}: {said}", out.display());
        assert!(took < Duration::from_secs(5), "{took:?}");
        assert!(!out.is_file());
    }
}

#[test]
fn no_pose_or_a_pose_without_health_is_a_clear_error_within_the_wait() {
    let ros = ros();
    ros.set_sim_time(false);
    let dir = scratch_dir("route_sources");
    let out = dir.join("route.csv");
    let out_s = out.to_str().expect("utf-8 path");
    // Nothing serves a pose.
    let ns = gem_testbed::fresh_ns("route");
    let env = [("ROS_NAMESPACE", ns.as_str())];
    let (status, said, took) = record_route_fails(&[out_s, "--wait-s", "2"], &env);
    assert!(!status.success(), "{said}");
    assert!(
        said.contains("no pose within 2 s") && said.contains("gem_sim"),
        "{said}"
    );
    assert!(took < Duration::from_secs(10), "{took:?}");
    // gem_sim serves the pose, nothing publishes gps_accuracy.
    let _sim = ros.node("gem_sim").arg(&format!("__ns:={ns}")).spawn();
    let (status, said, took) = record_route_fails(&[out_s, "--wait-s", "2"], &env);
    assert!(!status.success(), "{said}");
    assert!(
        said.contains(&format!("no {ns}/gps_accuracy within 2 s")),
        "{said}"
    );
    assert!(took < Duration::from_secs(10), "{took:?}");
    assert!(!out.exists());
}

#[test]
fn ctrl_c_before_the_car_has_moved_writes_nothing() {
    let ros = ros();
    ros.set_sim_time(false);
    let dir = scratch_dir("route_parked");
    let out = dir.join("route.csv");
    let ns = gem_testbed::fresh_ns("parked");
    let _sim = ros.node("gem_sim").arg(&format!("__ns:={ns}")).spawn();
    let _signals = ros.node("mock_signals").arg(&format!("__ns:={ns}")).spawn();
    let mut rec = RecordRoute::start(
        &dir,
        &[out.to_str().expect("utf-8 path")],
        &[("ROS_NAMESPACE", ns.as_str())],
    );
    rec.wait_says("health good, stopped");
    let exit = rec.interrupt();
    let said = rec.said();
    assert!(!exit.success(), "{said}");
    assert!(
        said.contains("nothing written to") && said.contains("0 point(s) recorded"),
        "{said}"
    );
    let files: Vec<_> = std::fs::read_dir(&dir)
        .expect("the directory")
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .filter(|n| !n.starts_with("record."))
        .collect();
    assert!(files.is_empty(), "{files:?}");
}
