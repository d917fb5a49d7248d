//! Static checks of the Docker flow that need no Docker engine: every path the
//! Dockerfile and the runner scripts name exists in the repository, every launch argument
//! they pass is declared by the launch file, every build argument a stage uses is declared
//! in that stage, and the runners answer `--help`, refuse bad options, and fail clearly
//! when Docker or X11 is missing. (shellcheck and hadolint run in runners/test.sh.)

use std::path::PathBuf;
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

const RUNNERS: [&str; 6] = [
    "runners/docker_build.sh",
    "runners/docker_base.sh",
    "runners/launch_integration_run.sh",
    "runners/run_state_manager_rostests.sh",
    "runners/run_integration_tests.sh",
    "runners/docker_common.sh",
];

/// The Dockerfiles: the headless image's and the Gazebo image's.
const DOCKERFILES: [&str; 2] = ["docker/Dockerfile", "docker/gazebo.Dockerfile"];

/// A Dockerfile's lines with their continuation lines joined.
fn dockerfile_instructions(file: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for line in read(file).lines() {
        let t = line.trim();
        if t.starts_with('#') || (t.is_empty() && cur.is_empty()) {
            continue;
        }
        if let Some(body) = t.strip_suffix('\\') {
            cur.push_str(body);
            cur.push(' ');
        } else {
            cur.push_str(t);
            if !cur.trim().is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            cur.clear();
        }
    }
    out
}

/// Repository-relative paths mentioned in `text` (words starting with a top-level
/// directory of ours), without trailing punctuation.
fn repo_paths(text: &str) -> Vec<String> {
    const TOP: [&str; 6] = [
        "runners/", "docker/", "launch/", "msg/", "crates/", "tests/",
    ];
    text.split(|c: char| c.is_whitespace() || "\"'`()=,;|".contains(c))
        .map(|w| w.trim_start_matches("$ROOT/").trim_end_matches(['.', ':']))
        .filter(|w| TOP.iter().any(|t| w.starts_with(t)))
        .filter(|w| !w.contains('$') && !w.contains('<'))
        .map(String::from)
        .collect()
}

fn exists(rel: &str) -> bool {
    if rel.contains('*') {
        // A glob: at least one match in its directory.
        let (dir, pat) = rel.rsplit_once('/').expect("glob with a directory");
        let (pre, post) = pat.split_once('*').expect("one star");
        return std::fs::read_dir(root().join(dir)).is_ok_and(|d| {
            d.flatten().any(|e| {
                let n = e.file_name().to_string_lossy().into_owned();
                n.starts_with(pre) && n.ends_with(post)
            })
        });
    }
    root().join(rel).exists()
}

#[test]
fn every_path_the_dockerfile_and_the_runners_name_exists() {
    let mut checked = 0;
    for ins in DOCKERFILES.iter().flat_map(|f| dockerfile_instructions(f)) {
        if let Some(rest) = ins.strip_prefix("COPY ") {
            let words: Vec<&str> = rest.split_whitespace().collect();
            if words.iter().any(|w| w.starts_with("--from")) {
                continue;
            }
            let sources: Vec<&str> = words
                .iter()
                .filter(|w| !w.starts_with("--"))
                .copied()
                .collect();
            for src in &sources[..sources.len() - 1] {
                assert!(exists(src), "Dockerfile COPY of missing {src}");
                checked += 1;
            }
        }
    }
    let mut texts: Vec<(String, String)> = DOCKERFILES
        .iter()
        .map(|f| (f.to_string(), read(f)))
        .collect();
    for r in RUNNERS.iter().chain(&[
        "docker/entrypoint.sh",
        "docker/add_user.sh",
        "docker/compose.yml",
    ]) {
        texts.push((r.to_string(), read(r)));
    }
    for (file, text) in &texts {
        // The BuildKit syntax directive names an image, not a path.
        let text: String = text
            .lines()
            .filter(|l| !l.starts_with("# syntax="))
            .collect::<Vec<_>>()
            .join("\n");
        for p in repo_paths(&text) {
            assert!(
                exists(&p),
                "{file} names {p}, which is not in the repository"
            );
            checked += 1;
        }
    }
    assert!(
        checked > 15,
        "only {checked} paths found: the parser is broken"
    );
}

/// The launch files a user starts: the whole suite on one computer, and each host's part
/// (the first includes the other two and passes every argument on).
const LAUNCH_FILES: [&str; 3] = [
    "launch/launch/integration_run.launch",
    "launch/launch/vehicle.launch",
    "launch/launch/supervisor.launch",
];

/// `(name, default)` of each `<arg name="..." default="...">` declaration in `file` (an
/// `arg` with a `value` is derived or passes a value on; it declares nothing).
fn declared_args(file: &str) -> Vec<(String, String)> {
    read(file)
        .split("<arg name=\"")
        .skip(1)
        .filter_map(|s| {
            let decl = s.split("/>").next().unwrap_or_default();
            let default = decl.split("default=\"").nth(1)?.split('"').next()?;
            Some((
                decl.split('"').next().unwrap_or_default().to_string(),
                default.to_string(),
            ))
        })
        .collect()
}

/// Every argument the launch files declare.
fn launch_args() -> Vec<String> {
    LAUNCH_FILES
        .iter()
        .flat_map(|f| declared_args(f))
        .map(|(name, _)| name)
        .collect()
}

#[test]
fn an_argument_both_hosts_declare_has_one_default() {
    let vehicle = declared_args(LAUNCH_FILES[1]);
    let supervisor = declared_args(LAUNCH_FILES[2]);
    let mut shared = 0;
    for (name, default) in &vehicle {
        if let Some((_, other)) = supervisor.iter().find(|(n, _)| n == name) {
            assert_eq!(
                default, other,
                "{name}: vehicle.launch and supervisor.launch differ"
            );
            shared += 1;
        }
    }
    assert!(
        shared >= 2,
        "system_state_timeout_s and rt_priority are shared"
    );
    // integration_run.launch declares only what neither host file does.
    for (name, _) in declared_args(LAUNCH_FILES[0]) {
        assert!(
            !vehicle.iter().chain(&supervisor).any(|(n, _)| *n == name),
            "{name} is declared twice"
        );
    }
}

#[test]
fn every_launch_argument_passed_is_declared_and_every_test_file_exists() {
    let declared = launch_args();
    assert!(declared.contains(&"sim".to_string()), "{declared:?}");
    let mut texts: Vec<String> = RUNNERS.iter().map(|r| read(r)).collect();
    texts.extend(DOCKERFILES.iter().map(|f| read(f)));
    texts.push(read("docker/compose.yml"));
    let mut passed = 0;
    for text in &texts {
        for word in text.split(|c: char| c.is_whitespace() || "\"'[],".contains(c)) {
            let Some((name, _)) = word.split_once(":=") else {
                continue;
            };
            if name.is_empty() || name.starts_with('_') {
                continue;
            }
            assert!(
                declared.iter().any(|d| d == name),
                "{name}:= is not an argument of the launch files ({declared:?})"
            );
            passed += 1;
        }
        for (i, _) in text.match_indices("rostest gem_bringup ") {
            let name = text[i + "rostest gem_bringup ".len()..]
                .split(|c: char| c.is_whitespace() || "|'\"".contains(c))
                .next()
                .unwrap_or_default();
            if !name.contains('$') {
                assert!(
                    exists(&format!("launch/test/{name}")),
                    "no launch/test/{name}"
                );
            }
        }
    }
    assert!(passed >= 5, "only {passed} launch arguments found");
    // The gazebo branch exists and is guarded, so headless users never need gem_gazebo.
    let launch = read("launch/launch/vehicle.launch");
    assert!(launch.contains("<group if=\"$(eval platform == 'sim' and sim == 'gazebo')\">"));
    assert!(launch.contains("$(find gem_gazebo)/launch/gem_gazebo_rviz.launch"));
}

#[test]
fn every_build_argument_a_stage_uses_is_declared_in_it() {
    for (file, global_arg) in DOCKERFILES.iter().zip(["BASE_IMAGE", "RUST_VERSION"]) {
        let global = build_args_used_are_declared(file);
        assert!(
            global.contains(&global_arg.to_string()),
            "{file}: {global:?}"
        );
    }
}

/// Checks that every `${NAME}` of a stage is declared in it; returns the global ARGs.
fn build_args_used_are_declared(file: &str) -> Vec<String> {
    let mut declared: Vec<String> = Vec::new();
    let mut global: Vec<String> = Vec::new();
    let mut in_stage = false;
    // Shell variables a RUN sets for itself.
    const SHELL_VARS: [&str; 3] = ["PATH", "dir", "missing"];
    for ins in dockerfile_instructions(file) {
        let (kw, rest) = ins.split_once(' ').unwrap_or((&ins, ""));
        match kw {
            "FROM" => {
                for v in vars(rest) {
                    assert!(global.contains(&v), "FROM uses undeclared {v}");
                }
                in_stage = true;
                declared.clear();
            }
            "ARG" | "ENV" => {
                for def in rest.split_whitespace() {
                    let name = def.split('=').next().unwrap_or_default().to_string();
                    if in_stage {
                        declared.push(name);
                    } else {
                        global.push(name);
                    }
                }
            }
            _ => {
                for v in vars(rest) {
                    assert!(
                        declared.contains(&v) || SHELL_VARS.contains(&v.as_str()),
                        "{file}: {kw} uses {v}, not declared in its stage: {ins}"
                    );
                }
            }
        }
    }
    global
}

/// `${NAME}` references in a Dockerfile instruction.
fn vars(text: &str) -> Vec<String> {
    text.split("${")
        .skip(1)
        .filter_map(|s| s.split('}').next())
        .map(|s| s.split(':').next().unwrap_or_default().to_string())
        .collect()
}

fn run(script: &str, args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut cmd = Command::new("bash");
    cmd.arg(root().join(script)).args(args);
    // The system PATH only (a test passes its own to hide Docker).
    cmd.env("PATH", "/usr/bin:/bin").env_remove("DISPLAY");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("bash runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A PATH with every program of /usr/bin and /bin but Docker's: a machine without Docker.
fn path_without_docker() -> String {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("bin-without-docker");
    if !dir.exists() {
        let tmp = dir.with_extension("tmp");
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir_all(&tmp).expect("a scratch bin directory");
        for src in ["/bin", "/usr/bin"] {
            for e in std::fs::read_dir(src).expect("bin dir").flatten() {
                let name = e.file_name();
                if !name.to_string_lossy().starts_with("docker") {
                    let _ = std::os::unix::fs::symlink(e.path(), tmp.join(&name));
                }
            }
        }
        let _ = std::fs::rename(&tmp, &dir);
    }
    format!("{}", dir.display())
}

/// Whether a Docker engine answers here.
fn docker_answers() -> bool {
    Command::new("docker")
        .arg("info")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// `err` is one line naming `what`.
fn one_line(script: &str, err: &str, what: &str) {
    assert!(err.contains(what), "{script}: {err}");
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "{script}: one line, not:\n{err}"
    );
}

/// The user-facing runners (not docker_common.sh, which is sourced).
const SCRIPTS: [&str; 5] = [
    "runners/docker_build.sh",
    "runners/docker_base.sh",
    "runners/launch_integration_run.sh",
    "runners/run_state_manager_rostests.sh",
    "runners/run_integration_tests.sh",
];

#[test]
fn runners_answer_help_refuse_bad_options_and_name_what_is_missing() {
    for script in SCRIPTS {
        let (code, out, _) = run(script, &["--help"], &[]);
        assert_eq!(code, 0, "{script} --help");
        assert!(out.contains("Usage: runners/"), "{script}: {out}");
        let (code, _, err) = run(script, &["--bogus"], &[]);
        assert_eq!(code, 2, "{script} --bogus");
        one_line(script, &err, "unknown option '--bogus'");
        if script == "runners/docker_base.sh" {
            continue;
        }
        let (code, _, err) = run(script, &["--variant", "fast"], &[]);
        assert_eq!(code, 2, "{script} --variant fast");
        one_line(script, &err, "--variant must be prod or dev");
    }
    let (code, _, err) = run("runners/docker_build.sh", &["--target", "wasm"], &[]);
    assert_eq!(code, 2);
    one_line(
        "docker_build.sh",
        &err,
        "--target must be headless, gazebo or all",
    );
    // X11 is checked before Docker: without DISPLAY the Gazebo run names it.
    let (code, _, err) = run("runners/launch_integration_run.sh", &[], &[]);
    assert_eq!(code, 4, "{err}");
    assert!(err.contains("DISPLAY is not set"), "{err}");
    let (code, _, err) = run("runners/run_integration_tests.sh", &["--test", "nope"], &[]);
    assert_eq!(code, 2);
    one_line("run_integration_tests.sh", &err, "no launch/test/nope.test");
    for script in [
        "runners/run_state_manager_rostests.sh",
        "runners/run_integration_tests.sh",
    ] {
        let (code, _, err) = run(script, &["--repeat", "0"], &[]);
        assert_eq!(code, 2);
        one_line(script, &err, "--repeat must be a positive integer");
    }
    // Without Docker, and with a daemon that does not answer.
    let no_docker = path_without_docker();
    for (script, args) in [
        ("runners/docker_build.sh", &[][..]),
        ("runners/docker_base.sh", &[][..]),
        ("runners/launch_integration_run.sh", &["--no-gui"][..]),
        ("runners/run_state_manager_rostests.sh", &[][..]),
        ("runners/run_integration_tests.sh", &[][..]),
    ] {
        let (code, _, err) = run(script, args, &[("PATH", &no_docker)]);
        assert_eq!(code, 3, "{script}: {err}");
        one_line(script, &err, "docker not found on PATH");
        let (code, _, err) = run(
            script,
            args,
            &[("DOCKER_HOST", "unix:///nonexistent/docker.sock")],
        );
        assert_eq!(code, 3, "{script}: {err}");
        one_line(script, &err, "the Docker daemon does not answer");
    }
}

/// With a Docker engine: a missing base image, the Gazebo image's missing base, a missing
/// debootstrap and an unreachable mirror each fail at once with one line, and nothing is
/// built or tagged.
#[test]
fn docker_scripts_refuse_what_is_missing_before_building() {
    if !docker_answers() {
        crate::skip_or_fail(
            "docker_scripts_refuse_what_is_missing_before_building",
            "no Docker engine answers (docker info)",
        );
        return;
    }
    let image_id = |image: &str| {
        Command::new("docker")
            .args(["image", "inspect", "--format", "{{.Id}}", image])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let before = image_id("gem-rs:headless-dev");
    let (code, _, err) = run(
        "runners/docker_build.sh",
        &["--variant", "dev"],
        &[("GEM_BASE_IMAGE", "gem-rs/missing:0")],
    );
    assert_eq!(code, 3, "{err}");
    one_line(
        "docker_build.sh",
        &err,
        "base image gem-rs/missing:0 not found",
    );
    assert_eq!(
        image_id("gem-rs:headless-dev"),
        before,
        "an image was tagged"
    );
    if image_id("ros:noetic-ros-base-focal").is_none() {
        let (code, _, err) = run("runners/docker_build.sh", &["--target", "gazebo"], &[]);
        assert_eq!(code, 3, "{err}");
        one_line(
            "docker_build.sh",
            &err,
            "the gazebo target needs ros:noetic-ros-base-focal",
        );
    }
    for (env, says) in [
        (
            ("GEM_DEBOOTSTRAP", "/nonexistent/debootstrap"),
            "debootstrap not found",
        ),
        (
            ("GEM_DEBIAN_MIRROR", "http://127.0.0.1:9/debian"),
            "cannot be reached",
        ),
    ] {
        let (code, _, err) = run("runners/docker_base.sh", &["--force"], &[env]);
        assert_eq!(code, 3, "{err}");
        one_line("docker_base.sh", &err, says);
    }
}
