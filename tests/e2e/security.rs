//! Who may command the car, across network namespaces (`gem_e2e::hosts`): the car
//! (`vehicle`, 10.231.0.3) runs `platform:=gem_e2_sim` with a trust file and a keyed,
//! pinned operator link; the operator's laptop (`master`, 10.231.0.1: the master and the
//! keyed `gemctl operator`) engages it; host B (`supervisor`, 10.231.0.2) has no key and
//! tries everything else:
//!
//! - `rosservice call /pacmod_bridge/enable`: refused; the keyed station's engage works;
//! - `rostopic pub /gem/ackermann_cmd`: never linked, the car stays at rest, and
//!   `/diagnostics` names B; `rostopic echo /system_state` from B still works;
//! - the slave API's `shutdown` to every node of the suite: no node ends;
//! - wire fuzz on the link (truncated, oversized, wrong-version, bit-flipped datagrams, the
//!   old text protocol), from B and from the laptop: no crash, the link stays up;
//! - with the real station frozen: an unkeyed `gemctl operator`, a station built from the
//!   docs (unsigned, and signing with a key of its own) and a replay of the captured
//!   datagrams (from B and from the pinned laptop): SIGNAL_LOST on time all the same.
//!
//! Without root or iproute2 the scenario writes `skipped: <reason>`; under `CI=true` it
//! fails naming what is missing. `cargo test --release --test e2e security::` runs it.

use gem_core::state_manager::ErrorBits;
use gem_e2e::hosts::{available, HostProc, Hosts, Role};
use gem_e2e::lap::{ev, num, wall_now, Observer, SPEEDUP};
use gem_testbed::wait_until;
use serde_json::Value;
use std::path::PathBuf;
use std::time::Duration;

const T: Duration = Duration::from_secs(30);
/// The operator link's port on the car.
const PORT: u16 = gem_core::signal_sources::link::DEFAULT_PORT;
/// The suite's nodes on the car (the slave-API `shutdown` is sent to each).
const CAR_NODES: &[&str] = &[
    "/gem_sim",
    "/pacmod_bridge",
    "/gnss_pose",
    "/controller",
    "/signal_sources",
    "/state_manager",
    "/task_planner",
];

scenario_tests! { on_a_guarded_car:
    only_the_keyed_operator_engages_and_keeps_the_car_and_no_other_host_commands_it => guarded,
}

/// The car, the laptop and B, and what each runs.
struct Guarded {
    hosts: Hosts,
    dir: PathBuf,
    procs: std::sync::Mutex<Vec<HostProc>>,
    view: Observer,
}

impl crate::Deployment for Guarded {
    fn dump(&self) {
        let procs = self.procs.lock().unwrap_or_else(|e| e.into_inner());
        for p in procs.iter().chain([&self.view.proc]) {
            eprintln!("--- {} ({}) ---\n{}", p.label, p.log.display(), p.output());
        }
    }

    fn no_panics(&self) -> Result<(), String> {
        let procs = self.procs.lock().unwrap_or_else(|e| e.into_inner());
        let logs: String = procs.iter().map(HostProc::output).collect();
        gem_e2e::lap::no_panics(&logs)
    }
}

/// The test's trust file: the car computer may do anything; the master's host (the
/// laptop here) may call the node API the master needs (`publisherUpdate`,
/// `paramUpdate`), not `shutdown`, and nothing else. Every other host may only subscribe.
fn trust_file(dir: &std::path::Path) -> PathBuf {
    let path = dir.join("trust.yaml");
    let yaml = format!(
        "hosts:\n  car: [self]\n  master: [{}]\nrules:\n  - hosts: [car]\n    publish: ['*']\n    call: ['*']\n    serve: ['*']\n    node_api: true\n    shutdown: true\n  - hosts: [master]\n    node_api: true\n",
        Role::Master.ip()
    );
    std::fs::write(&path, yaml).expect("a trust file");
    path
}

/// The car's sources file (the shipped one), its link keyed with `key` and pinned to the
/// laptop.
fn sources_file(dir: &std::path::Path, key: &std::path::Path) -> Result<PathBuf, String> {
    let shipped = gem_testbed::repo_root().join("launch/config/signal_sources/gem_e2.yaml");
    let text = std::fs::read_to_string(&shipped).map_err(|e| e.to_string())?;
    let keyed = text.replacen(
        "  operator: {}",
        &format!(
            "  operator: {{key_file: {}, station: {}}}",
            key.display(),
            Role::Master.ip()
        ),
        1,
    );
    if keyed == text {
        return Err(format!("{}: no `operator: {{}}` line", shipped.display()));
    }
    let path = dir.join("sources.yaml");
    std::fs::write(&path, keyed).map_err(|e| e.to_string())?;
    Ok(path)
}

fn on_a_guarded_car(check: fn(&Guarded) -> Result<(), String>) {
    crate::scenario(available, || {
        crate::on_lap(
            || {
                let hosts = Hosts::build()?;
                let dir = hosts.dir.clone();
                let key = dir.join("operator.key");
                let (ok, out) = hosts.run(
                    Role::Master,
                    "gemctl",
                    &["operator", "keygen", "--out", &key.to_string_lossy()],
                    T,
                );
                if !ok {
                    return Err(format!("gemctl operator keygen: {out}"));
                }
                let master = hosts.start_master(T)?;
                let args: Vec<String> = vec![
                    "--wait".into(),
                    "gem_bringup".into(),
                    "integration_run.launch".into(),
                    "platform:=gem_e2_sim".into(),
                    "operator_station:=false".into(),
                    "engage_at_start:=false".into(),
                    format!("trust:={}", trust_file(&dir).display()),
                    format!("sources_file:={}", sources_file(&dir, &key)?.display()),
                    format!("speedup:={SPEEDUP}"),
                ];
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                let suite = hosts.spawn(Role::Vehicle, "roslaunch", &args);
                // The car's side of the wire, recorded while the real station starts.
                let capture = hosts.spawn(
                    Role::Vehicle,
                    "/usr/bin/python3",
                    &[
                        "tests/py/operator_spoof.py",
                        "capture",
                        "--port",
                        &PORT.to_string(),
                        "--seconds",
                        "30",
                        "--out",
                        &dir.join("captured.hex").to_string_lossy(),
                    ],
                );
                let station = hosts.spawn(
                    Role::Master,
                    "gemctl",
                    &[
                        "operator",
                        "--car",
                        Role::Vehicle.ip(),
                        "--key",
                        &key.to_string_lossy(),
                        "--engage-after",
                        "15",
                    ],
                );
                let view = Observer::on(&hosts, Role::Vehicle);
                let car = Guarded {
                    hosts,
                    dir,
                    procs: std::sync::Mutex::new(vec![master, suite, capture, station]),
                    view,
                };
                car.view
                    .wait(T, |e| ev(e) == "ready")
                    .ok_or("the observer never subscribed")?;
                Ok(car)
            },
            check,
        )
    });
}

impl Guarded {
    /// Runs `script` under bash on `role`'s host, at most `timeout`.
    fn sh(&self, role: Role, script: &str, timeout: Duration) -> (bool, String) {
        self.hosts.run(role, "bash", &["-c", script], timeout)
    }

    /// Starts `operator_spoof.py args` on `role`'s host.
    fn spoof(&self, role: Role, args: &[&str]) -> HostProc {
        let mut all = vec!["tests/py/operator_spoof.py"];
        all.extend_from_slice(args);
        self.hosts.spawn(role, "/usr/bin/python3", &all)
    }

    /// Starts `rostopic pub -r 10 topic ty msg` on `role`'s host: `msg` at 10 Hz until the
    /// process is dropped.
    fn rostopic_pub(&self, role: Role, topic: &str, ty: &str, msg: &str) -> HostProc {
        let args = ["pub", "-r", "10", topic, ty, msg];
        self.hosts.spawn(role, "rostopic", &args)
    }

    /// Writes `script` to `file` in the scratch directory and runs it with python3 on
    /// `role`'s host, at most `timeout`.
    fn python(
        &self,
        role: Role,
        file: &str,
        script: &str,
        timeout: Duration,
    ) -> Result<(bool, String), String> {
        let path = self.dir.join(file);
        std::fs::write(&path, script).map_err(|e| e.to_string())?;
        let args = [&*path.to_string_lossy()];
        Ok(self.hosts.run(role, "/usr/bin/python3", &args, timeout))
    }

    /// The first status after `w` (waiting at most [`T`]) that `pred` accepts and whose
    /// `refused (trust file)` value names B's address and `what`.
    fn refused_b(&self, w: f64, what: &str, pred: impl Fn(&Value) -> bool) -> Option<Value> {
        self.view.after(w, "status", T, |e| {
            pred(e)
                && e["values"]["refused (trust file)"]
                    .as_str()
                    .is_some_and(|v| v.contains(B.ip()) && v.contains(what))
        })
    }

    fn keep(&self, p: HostProc) {
        self.procs.lock().unwrap_or_else(|e| e.into_inner()).push(p);
    }

    /// The output of the kept process labelled `label`.
    fn output_of(&self, label: &str) -> String {
        let procs = self.procs.lock().unwrap_or_else(|e| e.into_inner());
        procs
            .iter()
            .filter(|p| p.label.ends_with(label))
            .map(HostProc::output)
            .collect()
    }

    /// The operator link's latest status event after `w`, waiting for one that `pred`
    /// accepts.
    fn link_status(&self, w: f64, pred: impl Fn(&Value) -> bool) -> Option<Value> {
        self.view.after(w, "status", T, |e| {
            e["name"]
                .as_str()
                .is_some_and(|n| n.ends_with(": operator link"))
                && pred(e)
        })
    }

    /// Whether the bridge commands the PACMod (its enable command flows), seen from the
    /// car within `within`.
    fn engaged_within(&self, within: Duration) -> bool {
        let script = format!(
            "timeout {} rostopic echo -n 1 /pacmod/as_rx/enable | grep -q 'data: True'",
            within.as_secs()
        );
        self.sh(Role::Vehicle, &script, within + Duration::from_secs(10))
            .0
    }
}

const SIGNAL_LOST: u64 = ErrorBits::SIGNAL_LOST.bits() as u64;
const B: Role = Role::Supervisor;
const LAPTOP: Role = Role::Master;

fn dropped(e: &Value, kind: &str) -> f64 {
    e["values"][format!("dropped {kind}")]
        .as_str()
        .and_then(|v| v.parse().ok())
        .unwrap_or(f64::NAN)
}

fn guarded(car: &Guarded) -> Result<(), String> {
    let car_at = format!("{}:{PORT}", Role::Vehicle.ip());
    // The keyed station is heard.
    let up = car
        .link_status(0.0, |e| e["message"] == "Connected")
        .ok_or("the keyed station never connected")?;
    println!(
        "[security] keyed, pinned link CONNECTED {:.1} s into the run",
        num(&up, "w") - num(&car.view.events()[0], "w")
    );

    // B's enable is refused, naming B; the car stays disengaged.
    let (ok, out) = car.sh(
        B,
        "rosservice call /pacmod_bridge/enable 2>&1",
        Duration::from_secs(20),
    );
    if ok || !out.contains("refused") || !out.contains(B.ip()) {
        return Err(format!("B's enable was not refused: {out}"));
    }
    println!(
        "[security] B: rosservice call /pacmod_bridge/enable -> {}",
        out.trim()
    );
    if car.engaged_within(Duration::from_secs(4)) {
        return Err("the car engaged on B's request".into());
    }

    // The signed engage from the keyed station (sent 15 s after its first heartbeat).
    if !car.engaged_within(Duration::from_secs(30)) {
        return Err(format!(
            "the keyed station's engage did not engage the car:\n{}",
            car.output_of(":gemctl")
        ));
    }
    if !car
        .output_of(":gemctl")
        .contains("car took the engage request")
    {
        return Err(format!(
            "the station was not told: {}",
            car.output_of(":gemctl")
        ));
    }
    println!("[security] the keyed station's signed engage engaged the car");

    // B commands the car: never linked, the car stays at rest, /diagnostics names B.
    let pub_w = wall_now();
    let b_pub = car.rostopic_pub(
        B,
        "/gem/ackermann_cmd",
        "ackermann_msgs/AckermannDrive",
        "{steering_angle: 0.3, speed: 3.0, acceleration: 1.0}",
    );
    let named = car
        .refused_b(pub_w, "/gem/ackermann_cmd", |_| true)
        .ok_or("no /diagnostics status names B's refused publisher")?;
    let moving = car.view.after(pub_w, "odom", Duration::from_secs(8), |e| {
        num(e, "speed") > 0.05
    });
    drop(b_pub);
    if let Some(m) = moving {
        return Err(format!("the car moved on B's command: {m}"));
    }
    println!(
        "[security] B's /gem/ackermann_cmd: the car stayed at rest; {} says {}",
        named["name"], named["values"]["refused (trust file)"]
    );

    // B presses the e-stop on the state manager's input: refused, and the state manager,
    // which has no status of its own, says so on a latched status.
    let estop_w = wall_now();
    let b_estop = car.rostopic_pub(
        B,
        "/estop",
        "gem_state_msgs/EstopStamped",
        "{enabled: true}",
    );
    let named = car
        .refused_b(estop_w, "publish /estop", |e| {
            e["name"] == "/state_manager: trust file"
        })
        .ok_or("no /diagnostics status of the state manager names B's e-stop")?;
    let estop_bit = ErrorBits::ESTOP.bits() as u64;
    let obeyed = car
        .view
        .after(estop_w, "state", Duration::from_secs(3), |e| {
            (num(e, "errors") as u64) & estop_bit != 0
        });
    drop(b_estop);
    if let Some(e) = obeyed {
        return Err(format!("the state manager took B's e-stop: {e}"));
    }
    println!(
        "[security] B's /estop: not taken; {} says {}",
        named["name"], named["message"]
    );

    // B may still watch.
    let (ok, out) = car.sh(B, "rostopic echo -n 1 /system_state", T);
    if !ok || !out.contains("state") {
        return Err(format!("B cannot echo /system_state: {out}"));
    }

    // RViz on B (software OpenGL on an X server of its own) links to the car's publishers.
    let rviz = car.hosts.spawn(
        B,
        "bash",
        &[
            "-c",
            "LIBGL_ALWAYS_SOFTWARE=1 exec xvfb-run -a -s '-screen 0 1400x900x24' rviz -d launch/rviz/gem.rviz",
        ],
    );
    let links = format!(
        "import time, xmlrpc.client as x\nm = x.ServerProxy('{}')\nend = time.time() + 120\nwhile time.time() < end:\n    uri = m.lookupNode('/b', '/status_overlay')[2]\n    topics = sorted({{c[4] for c in x.ServerProxy(uri).getBusInfo('/b')[2] if 'rviz' in c[1]}})\n    if topics:\n        print('rviz linked:', ' '.join(topics))\n        break\n    time.sleep(0.5)\n",
        car.hosts.master_uri()
    );
    let (_, out) = car.python(B, "rviz_links.py", &links, Duration::from_secs(150))?;
    drop(rviz);
    if !out.contains("rviz linked:") {
        return Err(format!("RViz on B never linked to the overlay: {out}"));
    }
    println!(
        "[security] B: rostopic echo /system_state works; RViz on B {}",
        out.trim()
    );

    // B's slave-API shutdown to every node: none ends.
    let shutdown = format!(
        "import xmlrpc.client as x\nm = x.ServerProxy('{}')\nfor n in {:?}:\n    code, msg, uri = m.lookupNode('/b', n)\n    print(n, x.ServerProxy(uri).shutdown('/b', 'B says stop'))\n",
        car.hosts.master_uri(),
        CAR_NODES
    );
    let (ok, out) = car.python(B, "shutdown.py", &shutdown, T)?;
    if !ok || out.lines().filter(|l| l.contains("refused")).count() != CAR_NODES.len() {
        return Err(format!("B's shutdown calls were not all refused:\n{out}"));
    }
    let (_, alive) = car.sh(
        LAPTOP,
        &format!(
            "for n in {}; do rosnode ping -c 1 $n >/dev/null 2>&1 && echo alive $n; done",
            CAR_NODES.join(" ")
        ),
        T,
    );
    if alive.lines().count() != CAR_NODES.len() {
        return Err(format!("a node ended on B's shutdown: {alive}"));
    }
    println!(
        "[security] B's slave-API shutdown refused by all {} nodes; all alive",
        CAR_NODES.len()
    );

    // B registers a node under the bridge's name: the master tells the bridge to shut
    // down (from the master's host, which may not), the bridge refuses, registers again
    // and stays the one the master lists.
    let bump = format!(
        "import time, xmlrpc.client as x\nm = x.ServerProxy('{}')\nprint(m.registerSubscriber('/pacmod_bridge', '/b_topic', 'std_msgs/String', 'http://{}:9/'))\nend = time.time() + 20\nwhile time.time() < end:\n    uri = m.lookupNode('/b', '/pacmod_bridge')[2]\n    if '{}' in uri:\n        print('listed again at', uri)\n        break\n    time.sleep(0.2)\n",
        car.hosts.master_uri(),
        B.ip(),
        Role::Vehicle.ip()
    );
    let (_, out) = car.python(B, "bump.py", &bump, T)?;
    let (alive, _) = car.sh(LAPTOP, "rosnode ping -c 1 /pacmod_bridge", T);
    if !alive || !out.contains("listed again at") {
        return Err(format!(
            "the bridge did not survive B's registration of its name (alive: {alive}):\n{out}"
        ));
    }
    println!("[security] B registered /pacmod_bridge's name: the bridge refused the master's shutdown and is {}", out.lines().last().unwrap_or_default());

    // The capture (30 s from the start) holds the station's hellos, echoes and its engage.
    if !wait_until(T, || car.output_of(":python3").contains("captured")) {
        return Err("the capture did not end".into());
    }
    let captured = car.dir.join("captured.hex");
    let kinds: Vec<u8> = std::fs::read_to_string(&captured)
        .map_err(|e| e.to_string())?
        .lines()
        .filter_map(|l| u8::from_str_radix(l.get(14..16)?, 16).ok())
        .collect();
    let of = |k: u8| kinds.iter().filter(|&&x| x == k).count();
    if of(1) == 0 || of(3) == 0 || of(4) == 0 {
        return Err(format!(
            "the capture lacks hellos, echoes or the engage: {} hellos, {} echoes, {} engages",
            of(1),
            of(3),
            of(4)
        ));
    }
    println!(
        "[security] captured from the real station: {} hellos, {} echoes, {} engage",
        of(1),
        of(3),
        of(4)
    );

    // Wire fuzz, from B and from the pinned laptop: nothing changes.
    let fuzz_w = wall_now();
    for from in [B, LAPTOP] {
        let (ok, out) = car.hosts.run(
            from,
            "/usr/bin/python3",
            &[
                "tests/py/operator_spoof.py",
                "fuzz",
                "--file",
                &captured.to_string_lossy(),
                "--car",
                &car_at,
                "--count",
                "2000",
            ],
            T,
        );
        if !ok {
            return Err(format!("fuzz from {}: {out}", from.name()));
        }
    }
    let counted = car
        .link_status(fuzz_w, |e| {
            dropped(e, "malformed") + dropped(e, "forged") >= 3000.0
        })
        .ok_or("the fuzzed datagrams were not counted on the link's status")?;
    if counted["message"] != "Connected" {
        return Err(format!("the link fell during the fuzz: {counted}"));
    }
    if let Some(e) = car.view.after(fuzz_w, "state", Duration::ZERO, |e| {
        (num(e, "errors") as u64) & SIGNAL_LOST != 0
    }) {
        return Err(format!("SIGNAL_LOST during the fuzz: {e}"));
    }
    println!(
        "[security] 4000 fuzzed datagrams: link CONNECTED, dropped by kind {}",
        counted["values"]
    );

    // The real station freezes; everyone else tries to keep the link up.
    let (ok, out) = car.sh(LAPTOP, "pkill -STOP -f 'gemctl operator --car .* --key'", T);
    if !ok {
        return Err(format!("cannot freeze the station: {out}"));
    }
    let freeze_w = wall_now();
    let seconds = "25";
    let captured_file = captured.to_string_lossy();
    let replay = |from| {
        let args = [
            "replay",
            "--file",
            &captured_file,
            "--car",
            &car_at,
            "--seconds",
            seconds,
        ];
        car.spoof(from, &args)
    };
    for p in [
        car.hosts
            .spawn(B, "gemctl", &["operator", "--car", Role::Vehicle.ip()]),
        car.spoof(B, &["mimic", "--car", &car_at, "--seconds", seconds]),
        car.spoof(
            B,
            &["mimic", "--car", &car_at, "--seconds", seconds, "--forge"],
        ),
        replay(B),
        replay(LAPTOP),
        car.spoof(LAPTOP, &["mimic", "--car", &car_at, "--seconds", seconds]),
    ] {
        car.keep(p);
    }
    let (lost, lost_after, bound) = car
        .view
        .signal_lost_after(freeze_w, "the freeze, with the spoofers running")?;
    let during = car
        .link_status(num(&lost, "w"), |e| {
            dropped(e, "replayed") > 0.0 && dropped(e, "unkeyed") > 0.0
        })
        .ok_or("the spoofers' datagrams were not counted as replayed and unkeyed")?;
    if during["message"] == "Connected" {
        return Err(format!("the spoofers kept the link up: {during}"));
    }
    // Nor does it come back while they go on (25 s from the freeze): watched to their end.
    let spoofing_left = Duration::from_secs_f64((freeze_w + 24.0 - wall_now()).max(0.0));
    let back = car
        .view
        .after(num(&lost, "w"), "status", spoofing_left, |e| {
            e["name"]
                .as_str()
                .is_some_and(|n| n.ends_with(": operator link"))
                && e["message"] != "NotConnected"
        });
    if let Some(up) = back {
        return Err(format!("the spoofers brought the link back: {up}"));
    }
    println!(
        "[security] station frozen: SIGNAL_LOST after {lost_after:.2} s (bound {bound:.2}) with an unkeyed gemctl operator, two mimics and two replays running; dropped {}",
        during["values"]
    );
    let _ = car.sh(LAPTOP, "pkill -CONT -f 'gemctl operator --car .* --key'", T);
    Ok(())
}
