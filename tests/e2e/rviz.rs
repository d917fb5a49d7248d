//! Stock RViz shows the suite, in a real window (docs/rviz.md): `roslaunch gem_bringup
//! integration_run.launch rviz:=true` (RViz with `launch/rviz/gem.rviz`) on an X server of
//! its own (Xvfb, Mesa's software OpenGL), the GEM track at speed-up. Screenshots of the
//! screen (ImageMagick's `import`) are read pixel by pixel inside RViz's render area (the
//! region of its background colour): the car body's colour at the centre (the view follows
//! `base_footprint`), the served path's colour and the state's colour beside the car; after
//! an e-stop pressed with `dynparam`, the state's colour turns to ERROR's. The Displays
//! panel shows no Warn or Error status colour, and RViz's output holds no ERROR. The screenshots are kept in `build/rviz/`.
//!
//! Needs Debian's `rviz`, `xvfb` and `imagemagick` (`runners/setup.sh` installs them).

use gem_core::overlay::{Rgba, BODY_COLOUR, ERROR_COLOUR, RUNNING_COLOUR};
use gem_msgs::gem_controller_action::NavigateWaypointsActionFeedback;
use gem_msgs::gem_state_msgs::SystemStateStamped as Sys;
use gem_testbed::{repo_root, ros_alone, wait_until, Collector, NodeBuilder, NodeProc};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The screen, as large as the layout's window.
const SCREEN: (usize, usize) = (1400, 900);
/// Wall time for RViz to come up and draw, and for a drawn change to show.
const DRAWN_WITHIN: Duration = Duration::from_secs(90);
/// "Beside the car": within this many pixels of the body's centre (20 px per metre).
const NEAR_PX: f64 = 200.0;
/// The text colours of RViz's Warn and Error statuses in its Displays panel (a display
/// with a problem, and "Global Status", turn to them).
const STATUS_WARN: Rgba = [192.0 / 255.0, 128.0 / 255.0, 0.0, 1.0];
const STATUS_ERROR: Rgba = [192.0 / 255.0, 32.0 / 255.0, 32.0 / 255.0, 1.0];
/// Status-coloured pixels in the panel that mean a flagged display: one word in a status
/// colour ("Global Status: Warn") has over 40; the anti-aliased edges of other text a few.
const FLAGGED: usize = 20;

/// An X server of the test's own, killed when dropped.
struct Xvfb {
    child: Child,
    display: String,
}

impl Xvfb {
    fn start() -> Xvfb {
        let n = (90..200)
            .find(|n| {
                !Path::new(&format!("/tmp/.X11-unix/X{n}")).exists()
                    && !Path::new(&format!("/tmp/.X{n}-lock")).exists()
            })
            .expect("a free X display number");
        let display = format!(":{n}");
        let child = Command::new("Xvfb")
            .args([
                &display,
                "-screen",
                "0",
                &format!("{}x{}x24", SCREEN.0, SCREEN.1),
                "-nolisten",
                "tcp",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("Xvfb (Debian package xvfb; runners/setup.sh installs it)");
        let socket = PathBuf::from(format!("/tmp/.X11-unix/X{n}"));
        assert!(
            wait_until(Duration::from_secs(20), || socket.exists()),
            "Xvfb {display} did not open its socket"
        );
        Xvfb { child, display }
    }
}

impl Drop for Xvfb {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A screenshot as 8-bit RGB.
struct Shot {
    width: usize,
    height: usize,
    rgb: Vec<u8>,
}

impl Shot {
    /// The whole screen of `display`, saved to `file` (PNG) and read back.
    fn take(display: &str, file: &Path) -> Result<Shot, String> {
        let out = Command::new("import")
            .args(["-display", display, "-window", "root"])
            .arg(file)
            .output()
            .map_err(|e| format!("import (Debian package imagemagick): {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "import: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        let out = Command::new("convert")
            .arg(file)
            .arg("ppm:-")
            .output()
            .map_err(|e| format!("convert: {e}"))?;
        Shot::from_ppm(&out.stdout)
    }

    /// Parses a binary PPM (P6, maxval 255).
    fn from_ppm(data: &[u8]) -> Result<Shot, String> {
        let mut fields = Vec::new();
        let mut at = 0;
        while fields.len() < 4 {
            while at < data.len() && data[at].is_ascii_whitespace() {
                at += 1;
            }
            let start = at;
            while at < data.len() && !data[at].is_ascii_whitespace() {
                at += 1;
            }
            if start == at {
                return Err("truncated PPM header".into());
            }
            fields.push(String::from_utf8_lossy(&data[start..at]).into_owned());
        }
        let num = |i: usize| fields[i].parse::<usize>().map_err(|e| e.to_string());
        if fields[0] != "P6" || num(3)? != 255 {
            return Err(format!("not an 8-bit P6 PPM: {fields:?}"));
        }
        let (width, height) = (num(1)?, num(2)?);
        let rgb = data[at + 1..].to_vec();
        if rgb.len() != width * height * 3 {
            return Err(format!("PPM has {} bytes for {width}×{height}", rgb.len()));
        }
        Ok(Shot { width, height, rgb })
    }

    fn pixel(&self, x: usize, y: usize) -> [u8; 3] {
        let i = 3 * (y * self.width + x);
        [self.rgb[i], self.rgb[i + 1], self.rgb[i + 2]]
    }

    /// RViz's render area (x0, y0, x1, y1): the columns and rows mostly of `background`
    /// (the layout's background colour; RViz's panels have next to none of it, the path
    /// and the car cover little of it).
    fn render_area(&self, background: [u8; 3]) -> Option<(usize, usize, usize, usize)> {
        let (mut cols, mut rows) = (vec![0usize; self.width], vec![0usize; self.height]);
        for (y, row) in rows.iter_mut().enumerate() {
            for (x, col) in cols.iter_mut().enumerate() {
                if self.pixel(x, y) == background {
                    *col += 1;
                    *row += 1;
                }
            }
        }
        let span = |counts: &[usize], of: usize| {
            let mostly = |c: &usize| *c > of / 3;
            Some((
                counts.iter().position(mostly)?,
                counts.iter().rposition(mostly)?,
            ))
        };
        let (x0, x1) = span(&cols, self.height)?;
        let (y0, y1) = span(&rows, self.width)?;
        Some((x0, y0, x1, y1))
    }

    /// Pixels within `area` whose colour is within `tolerance` (per channel, 0..255) of
    /// `rgba`.
    fn matching(
        &self,
        area: (usize, usize, usize, usize),
        rgba: Rgba,
        tolerance: i32,
    ) -> Vec<(f64, f64)> {
        let want = rgba.map(|c| (c * 255.0).round() as i32);
        let mut hits = Vec::new();
        for y in area.1..=area.3 {
            for x in area.0..=area.2 {
                let p = self.pixel(x, y);
                if (0..3).all(|i| (i32::from(p[i]) - want[i]).abs() <= tolerance) {
                    hits.push((x as f64, y as f64));
                }
            }
        }
        hits
    }
}

/// What one screenshot shows around the car.
#[derive(Debug)]
struct View {
    /// Body pixels.
    body: usize,
    /// Distance of the body's centre from the render area's centre, px.
    off_centre_px: f64,
    /// Path, RUNNING and ERROR pixels within [`NEAR_PX`] of the body's centre.
    path_near: usize,
    running_near: usize,
    error_near: usize,
    /// Pixels of RViz's Warn and Error status colours in the Displays panel (left of the
    /// render area).
    panel_flagged: usize,
}

/// A display's `r; g; b` colour setting.
fn rgb(v: &serde_yaml::Value) -> [u8; 3] {
    let c: Vec<u8> = v
        .as_str()
        .expect("a colour")
        .split(';')
        .map(|c| c.trim().parse().expect("a colour channel"))
        .collect();
    [c[0], c[1], c[2]]
}

/// The colours the layout sets: its background (RViz's render area) and the served path's.
struct Layout {
    background: [u8; 3],
    path: Rgba,
}

impl Layout {
    fn read(file: &Path) -> Layout {
        let config: serde_yaml::Value =
            serde_yaml::from_str(&std::fs::read_to_string(file).expect("the layout"))
                .expect("the layout is YAML");
        let manager = &config["Visualization Manager"];
        let path = manager["Displays"]
            .as_sequence()
            .expect("a display list")
            .iter()
            .find(|d| d["Class"].as_str() == Some("rviz/Path"))
            .expect("a Path display");
        let [r, g, b] = rgb(&path["Color"]).map(|c| f32::from(c) / 255.0);
        Layout {
            background: rgb(&manager["Global Options"]["Background Color"]),
            path: [r, g, b, 1.0],
        }
    }
}

fn look(shot: &Shot, layout: &Layout) -> Result<View, String> {
    let area = shot
        .render_area(layout.background)
        .ok_or("no RViz render area (its background colour) on the screen")?;
    // Lit faces of the body box are shaded; text and lines are drawn in their colour.
    let body = shot.matching(area, BODY_COLOUR, 40);
    if body.len() < 100 {
        return Err(format!(
            "{} pixels of the body's colour in the render area {area:?}",
            body.len()
        ));
    }
    let n = body.len() as f64;
    let at = (
        body.iter().map(|p| p.0).sum::<f64>() / n,
        body.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let near = |rgba: Rgba| {
        shot.matching(area, rgba, 30)
            .iter()
            .filter(|p| (p.0 - at.0).hypot(p.1 - at.1) <= NEAR_PX)
            .count()
    };
    let centre = (
        (area.0 + area.2) as f64 / 2.0,
        (area.1 + area.3) as f64 / 2.0,
    );
    let panel = (0, area.1, area.0.saturating_sub(1), area.3);
    let panel_flagged =
        shot.matching(panel, STATUS_WARN, 12).len() + shot.matching(panel, STATUS_ERROR, 12).len();
    Ok(View {
        panel_flagged,
        body: body.len(),
        off_centre_px: (at.0 - centre.0).hypot(at.1 - centre.1),
        path_near: near(layout.path),
        running_near: near(RUNNING_COLOUR),
        error_near: near(ERROR_COLOUR),
    })
}

/// Takes screenshots into `file` until one satisfies `ok` (bounded); returns that view or
/// the last reason.
fn shoot_until(
    x: &Xvfb,
    layout: &Layout,
    file: &Path,
    ok: impl Fn(&View) -> bool,
) -> Result<View, String> {
    let deadline = Instant::now() + DRAWN_WITHIN;
    let mut last = String::from("no screenshot taken");
    while Instant::now() < deadline {
        match Shot::take(&x.display, file).and_then(|s| look(&s, layout)) {
            Ok(v) if ok(&v) => return Ok(v),
            Ok(v) => last = format!("{v:?}"),
            Err(e) => last = e,
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    Err(last)
}

/// rosconsole's ERROR lines (RViz logs through rosconsole; roslaunch prints its own errors
/// the same way).
fn error_lines(launch: &NodeProc) -> Vec<String> {
    launch
        .output()
        .lines()
        .filter(|l| l.contains("[ERROR]"))
        .map(str::to_owned)
        .collect()
}

fn fail(what: String, launch: &NodeProc) -> ! {
    panic!("{what}\n--- roslaunch output ---\n{}", launch.output())
}

#[test]
fn rviz_shows_the_car_on_its_path_and_the_state_colour_follows_an_estop() {
    let layout = Layout::read(&repo_root().join("launch/rviz/gem.rviz"));
    let out = repo_root().join("build/rviz");
    std::fs::create_dir_all(&out).expect("build/rviz");
    let x = Xvfb::start();
    // The machine alone: RViz renders in software on the CPUs.
    let _ros = ros_alone();
    let state: Collector<Sys> = Collector::new("/system_state");
    let feedback: Collector<NavigateWaypointsActionFeedback> =
        Collector::new("/navigate_waypoints/feedback");
    let mut launch = NodeBuilder::new("/usr/bin/roslaunch")
        .env("DISPLAY", &x.display)
        .env("LIBGL_ALWAYS_SOFTWARE", "1")
        .name("roslaunch_rviz")
        .arg("gem_bringup")
        .arg("integration_run.launch")
        .arg("rviz:=true")
        .arg("speedup:=3")
        .arg("waypoints:=gem_track.csv")
        .arg("state_timeout_ms:=3000")
        .arg("system_state_timeout_s:=3")
        .arg("pose_timeout_s:=3")
        .arg("clock_stall_s:=3")
        .spawn();

    // The car drives the served lap (a few per cent of it), RUNNING.
    if feedback
        .wait_for(DRAWN_WITHIN, |f| f.feedback.progress >= 0.02)
        .is_none()
    {
        fail("the lap did not start".into(), &launch);
    }
    let running = shoot_until(&x, &layout, &out.join("running.png"), |v| {
        v.path_near >= 20 && v.running_near >= 20 && v.error_near == 0 && v.panel_flagged < FLAGGED
    })
    .unwrap_or_else(|e| {
        fail(
            format!("no screenshot showed the car on its path, RUNNING: {e}"),
            &launch,
        )
    });
    eprintln!("driving: {running:?}");
    assert!(
        running.off_centre_px < 60.0,
        "the car is not where the view follows it (centre of the render area): {running:?}"
    );

    // An e-stop, as an operator presses it.
    let started = Instant::now();
    gem_testbed::dynparam_set(
        "/mock_signals",
        "estop_enabled",
        "true",
        Duration::from_secs(30),
    );
    if state
        .wait_latest(Duration::from_secs(30), |m| m.state == Sys::STATE_ERROR)
        .is_none()
    {
        fail("no ERROR on /system_state after the e-stop".into(), &launch);
    }
    let stopped = shoot_until(&x, &layout, &out.join("estop.png"), |v| {
        v.error_near >= 20 && v.running_near == 0
    })
    .unwrap_or_else(|e| {
        fail(
            format!("the state's colour never turned to ERROR's: {e}"),
            &launch,
        )
    });
    eprintln!(
        "e-stop: {stopped:?}, drawn {:.1} s after dynparam was started",
        started.elapsed().as_secs_f64()
    );
    assert!(
        stopped.body > 0 && stopped.off_centre_px < 60.0,
        "{stopped:?}"
    );
    assert!(
        stopped.panel_flagged < FLAGGED,
        "a display of the layout shows a warning or an error: {stopped:?}"
    );

    let errors = error_lines(&launch);
    assert!(
        errors.is_empty(),
        "RViz (or roslaunch) logged errors:\n{}",
        errors.join("\n")
    );
    launch.interrupt(Duration::from_secs(10));
}
