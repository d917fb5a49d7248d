//! The status overlay's text (docs/spec.md §6): everything an operator needs at a glance, as the
//! lines an RViz overlay or a terminal shows. Unknown values print as `—`, never as a
//! stale number. The same facts, shorter, for a text marker beside the car
//! ([`headline`]), and the colour every status display gives the state ([`state_colour`]).
//! `gemctl status` adds where each of the state manager's inputs comes from
//! ([`render_sources`]) and, printing once, which rows stayed silent ([`Snapshot::unheard`]).

use crate::state_manager::{ErrorBits, Input, SystemState};

/// The latest known value of everything the overlay shows.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    /// System state and error bits.
    pub system: Option<(SystemState, ErrorBits)>,
    /// Planner status name (`NO_TASK`, `PAUSED`, `RUNNING`).
    pub planner: Option<&'static str>,
    /// Goal progress, 0..1.
    pub progress: Option<f64>,
    /// Commanded speed, m/s.
    pub speed_mps: Option<f64>,
    /// Battery, 0..1.
    pub battery_frac: Option<f64>,
    /// E-stop pressed.
    pub estop: Option<bool>,
    /// GPS accuracy, mm.
    pub gps_mm: Option<f64>,
    /// Signal strength name.
    pub signal: Option<&'static str>,
    /// Temperature, °C.
    pub temperature_c: Option<f64>,
}

/// The state manager's inputs among the overlay's rows, each with its row's label, in the
/// rows' order.
pub const INPUT_ROWS: [(Input, &str); 5] = [
    (Input::Battery, "battery"),
    (Input::Estop, "e-stop"),
    (Input::Gps, "gps"),
    (Input::Signal, "signal"),
    (Input::Temperature, "temp"),
];

/// The speed row's label.
pub const SPEED_ROW: &str = "speed";

impl Snapshot {
    /// The labels of the input rows ([`INPUT_ROWS`]) with no value heard yet, in the rows'
    /// order.
    pub fn silent_inputs(&self) -> Vec<&'static str> {
        let heard = [
            self.battery_frac.is_some(),
            self.estop.is_some(),
            self.gps_mm.is_some(),
            self.signal.is_some(),
            self.temperature_c.is_some(),
        ];
        INPUT_ROWS
            .iter()
            .zip(heard)
            .filter(|(_, heard)| !heard)
            .map(|((_, label), _)| *label)
            .collect()
    }

    /// The rows a one-shot status still waits for once the state and the planner are heard:
    /// the speed, when `speed_published` (something publishes the command; with nothing,
    /// no speed will come), then the silent inputs. Empty: the snapshot is complete.
    pub fn unheard(&self, speed_published: bool) -> Vec<&'static str> {
        let speed = (speed_published && self.speed_mps.is_none()).then_some(SPEED_ROW);
        speed.into_iter().chain(self.silent_inputs()).collect()
    }
}

/// A node publishing one of the inputs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Feeder {
    /// Its name.
    pub node: String,
    /// Where the node says it takes the value from (`signal_sources` stores a line per
    /// input under `~sources/<input>`); `None` when it does not say.
    pub source: Option<String>,
}

/// The `sources` block: a heading, then a row per input (its label and publishers, as
/// `rows` gives them) naming each publisher with its source, `— (no publisher)` when
/// there is none.
pub fn render_sources(rows: &[(&str, Vec<Feeder>)]) -> String {
    let mut lines = vec!["sources".to_string()];
    for (label, feeders) in rows {
        let from = if feeders.is_empty() {
            "— (no publisher)".to_string()
        } else {
            let named: Vec<String> = feeders
                .iter()
                .map(|f| match &f.source {
                    Some(source) => format!("{}: {source}", f.node),
                    None => f.node.clone(),
                })
                .collect();
            named.join("; ")
        };
        lines.push(format!("{label:<10}{from}"));
    }
    lines.join("\n")
}

/// The planner status name of a `TaskPlannerStatus.status` value.
pub fn planner_name(status: u8) -> &'static str {
    match status {
        0 => "NO_TASK",
        1 => "PAUSED",
        2 => "RUNNING",
        _ => "UNKNOWN",
    }
}

/// The signal name of a `SignalStrengthStamped.strength` value.
pub fn signal_name(strength: u8) -> &'static str {
    match strength {
        0 => "NOT_CONNECTED",
        1 => "CONNECTED",
        2 => "LOW_SIGNAL",
        _ => "INVALID",
    }
}

fn or_dash<T>(v: Option<T>, f: impl FnOnce(T) -> String) -> String {
    v.map_or_else(|| "—".to_string(), f)
}

/// The overlay text, one item per line.
pub fn render(s: &Snapshot) -> String {
    let rows = [
        ("state", state_text(s)),
        ("planner", or_dash(s.planner, str::to_string)),
        (
            "progress",
            or_dash(s.progress, |p| format!("{:.1} %", 100.0 * p)),
        ),
        ("speed", or_dash(s.speed_mps, |v| format!("{v:.2} m/s"))),
        (
            "battery",
            or_dash(s.battery_frac, |b| format!("{:.0} %", 100.0 * b)),
        ),
        (
            "e-stop",
            or_dash(s.estop, |e| {
                if e {
                    "PRESSED".into()
                } else {
                    "released".into()
                }
            }),
        ),
        ("gps", or_dash(s.gps_mm, |g| format!("{g:.0} mm"))),
        ("signal", or_dash(s.signal, str::to_string)),
        ("temp", or_dash(s.temperature_c, |t| format!("{t:.1} °C"))),
    ];
    let lines: Vec<String> = rows
        .iter()
        .map(|(label, value)| format!("{label:<10}{value}"))
        .collect();
    lines.join("\n")
}

/// A display colour: red, green, blue, alpha, each 0..1.
pub type Rgba = [f32; 4];

/// The state's colour before any `/system_state` is heard.
pub const UNKNOWN_COLOUR: Rgba = [0.7, 0.7, 0.7, 1.0];
/// IDLE: amber.
pub const IDLE_COLOUR: Rgba = [1.0, 0.75, 0.1, 1.0];
/// RUNNING: green.
pub const RUNNING_COLOUR: Rgba = [0.2, 1.0, 0.3, 1.0];
/// ERROR: red.
pub const ERROR_COLOUR: Rgba = [1.0, 0.2, 0.2, 1.0];
/// The car body in a 3-D view (the GEM e2 is white).
pub const BODY_COLOUR: Rgba = [0.95, 0.95, 0.95, 1.0];

/// The arrow on the car body that shows its heading.
pub const HEADING_COLOUR: Rgba = [0.3, 0.3, 0.35, 1.0];
/// The controller's lookahead target (magenta).
pub const TARGET_COLOUR: Rgba = [1.0, 0.2, 1.0, 1.0];

/// The colour of the state in `s`.
pub fn state_colour(s: &Snapshot) -> Rgba {
    match s.system {
        None => UNKNOWN_COLOUR,
        Some((SystemState::Idle, _)) => IDLE_COLOUR,
        Some((SystemState::Running, _)) => RUNNING_COLOUR,
        Some((SystemState::Error, _)) => ERROR_COLOUR,
    }
}

fn state_text(s: &Snapshot) -> String {
    or_dash(s.system, |(st, e)| {
        if e.is_empty() {
            st.to_string()
        } else {
            format!("{st} [{e}]")
        }
    })
}

/// Two lines for a text beside the car: the state with its error names, then the planner
/// status and the goal's progress.
pub fn headline(s: &Snapshot) -> String {
    format!(
        "{}\nplanner {} · {}",
        state_text(s),
        or_dash(s.planner, str::to_string),
        or_dash(s.progress, |p| format!("{:.1} %", 100.0 * p)),
    )
}

/// What a status display does at a frame: it follows its inputs only while someone
/// watches what it draws. Its inputs are the busiest topics of the suite (the five signals
/// and the state at 20 Hz), and every subscription costs each publisher a send per
/// message; a display nobody looks at should cost nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frame {
    /// Nobody watches and nothing is subscribed: sleep until the next frame.
    Rest,
    /// Someone started watching: subscribe the inputs; draw from the next frame on, once
    /// they had a frame's time to link and send their latest values.
    Subscribe,
    /// Someone watches: read what arrived and draw.
    Draw,
    /// The last viewer left: drop the subscriptions and the values they gave (they would
    /// be stale when someone watches again).
    Unsubscribe,
}

/// The display's step at a frame: `watched` when its output has a subscriber (or it is
/// told to follow its inputs always), `subscribed` when it holds its inputs' subscriptions.
pub fn frame(watched: bool, subscribed: bool) -> Frame {
    match (watched, subscribed) {
        (false, false) => Frame::Rest,
        (true, false) => Frame::Subscribe,
        (true, true) => Frame::Draw,
        (false, true) => Frame::Unsubscribe,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_display_follows_its_inputs_only_while_watched() {
        // Watched from the second frame to the fourth, then again at the sixth.
        let watched = [false, true, true, true, false, true];
        let mut subscribed = false;
        let mut steps = Vec::new();
        for w in watched {
            let f = frame(w, subscribed);
            subscribed = matches!(f, Frame::Subscribe | Frame::Draw);
            steps.push(f);
        }
        use Frame::*;
        assert_eq!(
            steps,
            [Rest, Subscribe, Draw, Draw, Unsubscribe, Subscribe],
            "the first watched frame subscribes and draws nothing"
        );
    }

    #[test]
    fn each_state_has_its_own_colour_distinct_from_the_body() {
        let with = |st| Snapshot {
            system: Some((st, ErrorBits::NONE)),
            ..Snapshot::default()
        };
        let colours = [
            state_colour(&Snapshot::default()),
            state_colour(&with(SystemState::Idle)),
            state_colour(&with(SystemState::Running)),
            state_colour(&with(SystemState::Error)),
            BODY_COLOUR,
            TARGET_COLOUR,
            HEADING_COLOUR,
        ];
        for (i, a) in colours.iter().enumerate() {
            for b in &colours[i + 1..] {
                let d: f32 = a.iter().zip(b).map(|(x, y)| (x - y).abs()).sum();
                assert!(d > 0.3, "{a:?} and {b:?} are too close to tell apart");
            }
        }
    }

    #[test]
    fn headline_names_state_errors_planner_and_progress() {
        let s = Snapshot {
            system: Some((SystemState::Error, ErrorBits::ESTOP)),
            planner: Some(planner_name(1)),
            progress: Some(0.25),
            ..Snapshot::default()
        };
        assert_eq!(headline(&s), "ERROR [ESTOP]\nplanner PAUSED · 25.0 %");
        assert_eq!(headline(&Snapshot::default()), "—\nplanner — · —");
    }

    #[test]
    fn empty_snapshot_shows_dashes_not_numbers() {
        let text = render(&Snapshot::default());
        assert_eq!(text.lines().count(), 9);
        assert!(text.lines().all(|l| l.ends_with('—')), "{text}");
    }

    #[test]
    fn full_snapshot_shows_every_value() {
        let s = Snapshot {
            system: Some((
                SystemState::Error,
                ErrorBits::from_bits(ErrorBits::ESTOP.bits() | ErrorBits::BATTERY_LOW.bits()),
            )),
            planner: Some(planner_name(1)),
            progress: Some(0.4567),
            speed_mps: Some(0.0),
            battery_frac: Some(0.3),
            estop: Some(true),
            gps_mm: Some(100.0),
            signal: Some(signal_name(2)),
            temperature_c: Some(30.0),
        };
        let text = render(&s);
        for part in [
            "ERROR [BATTERY_LOW|ESTOP]",
            "PAUSED",
            "45.7 %",
            "0.00 m/s",
            "30 %",
            "PRESSED",
            "100 mm",
            "LOW_SIGNAL",
            "30.0 °C",
        ] {
            assert!(text.contains(part), "{part} missing in\n{text}");
        }
    }

    #[test]
    fn silent_inputs_are_the_input_rows_without_a_value() {
        let none = Snapshot::default();
        let labels: Vec<&str> = INPUT_ROWS.iter().map(|(_, l)| *l).collect();
        assert_eq!(none.silent_inputs(), labels);
        for label in &labels {
            assert!(
                render(&none).lines().any(|l| l.starts_with(label)),
                "{label} is not a row of the overlay"
            );
        }
        let some = Snapshot {
            speed_mps: Some(1.0),
            battery_frac: Some(0.5),
            estop: Some(false),
            temperature_c: Some(20.0),
            ..Snapshot::default()
        };
        assert_eq!(some.silent_inputs(), ["gps", "signal"]);
        let all = Snapshot {
            gps_mm: Some(10.0),
            signal: Some(signal_name(1)),
            ..some.clone()
        };
        assert!(all.silent_inputs().is_empty());
    }

    #[test]
    fn the_speed_is_awaited_only_when_something_publishes_it() {
        let inputs = Snapshot {
            battery_frac: Some(0.5),
            estop: Some(false),
            gps_mm: Some(10.0),
            signal: Some(signal_name(1)),
            temperature_c: Some(20.0),
            ..Snapshot::default()
        };
        assert!(inputs.unheard(false).is_empty());
        assert_eq!(inputs.unheard(true), [SPEED_ROW]);
        let driving = Snapshot {
            speed_mps: Some(2.0),
            ..inputs
        };
        assert!(driving.unheard(true).is_empty());
        assert_eq!(
            Snapshot::default().unheard(true),
            ["speed", "battery", "e-stop", "gps", "signal", "temp"]
        );
    }

    #[test]
    fn sources_name_each_publisher_with_what_it_reads() {
        let feeder = |node: &str, source: Option<&str>| Feeder {
            node: node.into(),
            source: source.map(Into::into),
        };
        let text = render_sources(&[
            (
                "battery",
                vec![feeder("/signal_sources", Some("/gem/bms percentage"))],
            ),
            ("gps", vec![feeder("/gnss_pose", None)]),
            ("signal", vec![]),
            (
                "temp",
                vec![feeder("/mock_signals", None), feeder("/thermal", Some("x"))],
            ),
        ]);
        assert_eq!(
            text,
            "sources\n\
             battery   /signal_sources: /gem/bms percentage\n\
             gps       /gnss_pose\n\
             signal    — (no publisher)\n\
             temp      /mock_signals; /thermal: x"
        );
    }

    #[test]
    fn out_of_range_codes_are_named_as_such() {
        assert_eq!(planner_name(7), "UNKNOWN");
        assert_eq!(signal_name(9), "INVALID");
    }
}
