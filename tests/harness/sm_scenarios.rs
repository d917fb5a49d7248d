//! State-manager scenarios on sim time, shared by the cargo tests (`tests/e2e/state_manager.rs`,
//! one fresh node per scenario) and the rostest runner (`launch/test/state_manager.test`,
//! one node for all of them).
//!
//! The [`Driver`] owns `/clock`: each [`Driver::step`] advances it, publishes every input
//! stamped with the new time (as a 10 Hz sensor would), and waits for the node's
//! `system_state` message stamped at that time, so a 20 s hold-off takes a fraction of a
//! second of wall time and every assertion is about a known ROS time. Each scenario starts
//! from a nominal, error-free state and asserts both sides of each threshold.

use gem_core::state_manager::Input;
use gem_msgs::gem_state_msgs as msg;
use gem_msgs::rosgraph_msgs::Clock;
use gem_msgs::std_msgs::Header;
use gem_testbed::check;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

type S = msg::SystemStateStamped;

/// Nanoseconds per second.
const NS: u64 = 1_000_000_000;
/// Sim-time step: 0.1 s (the node's heartbeat is 20 Hz, so every step yields a heartbeat).
pub const STEP_NS: u64 = NS / 10;
/// Wall-clock bound for one step's answer.
const STEP_TIMEOUT: Duration = Duration::from_secs(10);

/// Input values published at every step; `None` = that input is silent.
#[derive(Clone, Debug)]
pub struct Inputs {
    /// Battery fraction.
    pub battery: Option<f32>,
    /// E-stop.
    pub estop: Option<bool>,
    /// GPS accuracy, mm.
    pub gps: Option<f32>,
    /// Signal strength wire value.
    pub signal: Option<u8>,
    /// Temperature, °C.
    pub temperature: Option<f32>,
    /// Planner status wire value.
    pub planner: Option<u8>,
    /// The drive-by-wire's fault (`vehicle/fault`, a state manager with
    /// `~watch_vehicle_fault`); `None` in [`Inputs::nominal`]: no vehicle bridge.
    pub vehicle_fault: Option<bool>,
    /// Stamp inputs with zero instead of the sim time.
    pub zero_stamps: bool,
}

impl Inputs {
    /// Every input present and nominal, no task.
    pub fn nominal() -> Self {
        Inputs {
            battery: Some(0.8),
            estop: Some(false),
            gps: Some(50.0),
            signal: Some(msg::SignalStrengthStamped::CONNECTED),
            temperature: Some(30.0),
            planner: Some(msg::TaskPlannerStatus::STATUS_NO_TASK),
            vehicle_fault: None,
            zero_stamps: false,
        }
    }

    /// [`Inputs::nominal`] with a vehicle bridge reporting no fault.
    pub fn with_vehicle_fault() -> Self {
        Inputs {
            vehicle_fault: Some(false),
            ..Inputs::nominal()
        }
    }
}

/// A publisher of one input, its errors as text. (It sends the message as it is: a zero
/// header stamp stays zero, which the zero-stamp scenario needs.)
struct RawPub<T>(ros1_protocols::runtime::Publisher<T>);

impl<T: rosrust::Message> RawPub<T> {
    fn new(topic: &str) -> Result<Self, String> {
        ros1_protocols::this_node::publish(topic, 100)
            .map(RawPub)
            .map_err(|e| e.to_string())
    }

    fn send(&self, m: T) -> Result<(), String> {
        self.0.send(m).map_err(|e| e.to_string())
    }

    fn subscriber_count(&self) -> usize {
        self.0.subscriber_count()
    }
}

struct Pubs {
    clock: ros1_protocols::runtime::Publisher<Clock>,
    battery: RawPub<msg::BatteryLevelStamped>,
    estop: RawPub<msg::EstopStamped>,
    gps: RawPub<msg::GpsAccuracyStamped>,
    signal: RawPub<msg::SignalStrengthStamped>,
    temperature: RawPub<msg::TemperatureStamped>,
    planner: RawPub<msg::TaskPlannerStatus>,
    vehicle_fault: RawPub<msg::EstopStamped>,
}

/// Drives a state manager through `/clock` and its input topics.
pub struct Driver {
    pubs: Pubs,
    states: Arc<(Mutex<Vec<S>>, Condvar)>,
    _sub: ros1_protocols::direct::DirectSubscriber,
    /// Number of `~processed` acknowledgements received.
    acks: Arc<(Mutex<usize>, Condvar)>,
    _acks_sub: ros1_protocols::direct::DirectSubscriber,
    /// The namespace of the node's topics (`/sm3`, or `` for the root).
    ns: String,
    /// Current sim time, ns.
    now_ns: u64,
    /// What each step publishes.
    pub inputs: Inputs,
    /// Connected with a vehicle bridge ([`Inputs::vehicle_fault`] set): its nominal
    /// inputs include one that reports no fault.
    vehicle_bridge: bool,
}

fn header(stamp_ns: u64) -> Header {
    Header {
        seq: 0,
        stamp: rosrust::Time::from_nanos(stamp_ns as i64),
        frame_id: String::new(),
    }
}

/// `value` seconds as nanoseconds (exact for the tenths used here).
pub fn secs(value: f64) -> u64 {
    (value * NS as f64).round() as u64
}

impl Driver {
    /// Publishers for the inputs under `ns` (e.g. `/sm3`, or `` for the root) and a
    /// latched `/clock` at `t0_ns`; returns once the node in `ns` has subscribed to every
    /// input (the drive-by-wire's fault only when `inputs` carry one), so its "last good"
    /// timers start at `t0_ns`.
    pub fn connect(ns: &str, t0_ns: u64) -> Result<Driver, String> {
        Self::connect_with(ns, t0_ns, Inputs::nominal())
    }

    /// [`Driver::connect`] publishing `inputs` from the first step on.
    pub fn connect_with(ns: &str, t0_ns: u64, inputs: Inputs) -> Result<Driver, String> {
        let topic = |name: &str| format!("{ns}/{name}");
        let clock = ros1_protocols::this_node::advertise::<Clock>("/clock", 10, true)
            .map_err(|e| e.to_string())?;
        let map = |e: ros1_protocols::RosError| e.to_string();
        let pubs = Pubs {
            clock,
            battery: RawPub::new(&topic(Input::Battery.topic()))?,
            estop: RawPub::new(&topic(Input::Estop.topic()))?,
            gps: RawPub::new(&topic(Input::Gps.topic()))?,
            signal: RawPub::new(&topic(Input::Signal.topic()))?,
            temperature: RawPub::new(&topic(Input::Temperature.topic()))?,
            planner: RawPub::new(&topic(Input::PlannerStatus.topic()))?,
            vehicle_fault: RawPub::new(&topic(Input::VehicleFault.topic()))?,
        };
        pubs.clock
            .send(Clock {
                clock: rosrust::Time::from_nanos(t0_ns as i64),
            })
            .map_err(|e| e.to_string())?;
        let states: Arc<(Mutex<Vec<S>>, Condvar)> = Arc::default();
        let sink = states.clone();
        let sub = ros1_protocols::direct::subscribe(&topic("system_state"), move |m: S, _| {
            sink.0.lock().unwrap().push(m);
            sink.1.notify_all();
        })
        .map_err(map)?;
        let acks: Arc<(Mutex<usize>, Condvar)> = Arc::default();
        let sink = acks.clone();
        let acks_sub = ros1_protocols::direct::subscribe(
            &topic("state_manager/processed"),
            move |_: Header, _| {
                *sink.0.lock().unwrap() += 1;
                sink.1.notify_all();
            },
        )
        .map_err(map)?;
        let mut d = Driver {
            pubs,
            states,
            _sub: sub,
            acks,
            _acks_sub: acks_sub,
            ns: ns.to_string(),
            now_ns: t0_ns,
            vehicle_bridge: inputs.vehicle_fault.is_some(),
            inputs,
        };
        d.wait_connected()?;
        d.sync()?;
        Ok(d)
    }

    fn wait_connected(&self) -> Result<(), String> {
        let p = &self.pubs;
        let ok = gem_testbed::wait_until(Duration::from_secs(20), || {
            [
                p.battery.subscriber_count(),
                p.estop.subscriber_count(),
                p.gps.subscriber_count(),
                p.signal.subscriber_count(),
                p.temperature.subscriber_count(),
                p.planner.subscriber_count(),
                if self.vehicle_bridge {
                    p.vehicle_fault.subscriber_count()
                } else {
                    1
                },
            ]
            .iter()
            .all(|&n| n > 0)
                && self._sub.publisher_count() > 0
        });
        ok.then_some(())
            .ok_or_else(|| "the state manager did not connect within 20 s".to_string())
    }

    /// rosrust counts a publisher as connected before the TCP handshake ends, so the first
    /// `system_state` and `~processed` messages can be lost: step until both arrive.
    fn sync(&mut self) -> Result<(), String> {
        let mut heartbeat = false;
        for _ in 0..100 {
            self.now_ns += STEP_NS;
            let t = self.now_ns;
            let seen = self.received();
            self.publish_inputs(t)?;
            self.publish_clock(t)?;
            let state = self.wait_state(seen, Duration::from_millis(200), |m| stamp_ns(m) == t);
            if state.is_some() {
                heartbeat = true;
                break;
            }
        }
        if !heartbeat {
            return Err("no system_state from the state manager after 100 steps".into());
        }
        // Acknowledgements need no clock: repeat the current inputs until one comes back.
        for _ in 0..100 {
            let before = *self.acks.0.lock().unwrap();
            if self.publish_inputs(self.now_ns)? == 0
                || self.wait_acks_for(before + 1, Duration::from_millis(100))
            {
                return Ok(());
            }
        }
        Err("no ~processed acknowledgement from the state manager".into())
    }

    /// The namespace of the node's topics (`/sm3`, or `` for the root).
    pub fn ns(&self) -> &str {
        &self.ns
    }

    /// Current sim time in ns.
    pub fn now_ns(&self) -> u64 {
        self.now_ns
    }

    /// One lockstep: publishes the inputs stamped `now + step`, waits until the node has
    /// acknowledged every one of them, then advances `/clock` and returns the node's
    /// heartbeat for the new time, which therefore reflects exactly these inputs.
    pub fn step(&mut self) -> Result<S, String> {
        self.now_ns += STEP_NS;
        let t = self.now_ns;
        let acked = *self.acks.0.lock().unwrap();
        let sent = self.publish_inputs(t)?;
        self.wait_acks(acked + sent)?;
        let seen = self.received();
        self.publish_clock(t)?;
        self.wait_state(seen, STEP_TIMEOUT, |m| stamp_ns(m) == t)
            .ok_or_else(|| {
                format!(
                    "no system_state stamped {} within {STEP_TIMEOUT:?}",
                    fmt_ns(t)
                )
            })
    }

    fn publish_clock(&self, t: u64) -> Result<(), String> {
        let clock = Clock {
            clock: rosrust::Time::from_nanos(t as i64),
        };
        self.pubs.clock.send(clock).map_err(|e| e.to_string())
    }

    fn wait_acks(&self, total: usize) -> Result<(), String> {
        if self.wait_acks_for(total, STEP_TIMEOUT) {
            return Ok(());
        }
        let n = *self.acks.0.lock().unwrap();
        Err(format!(
            "the node acknowledged {n} of {total} inputs within {STEP_TIMEOUT:?}"
        ))
    }

    /// Number of `~processed` acknowledgements received so far.
    pub fn acks(&self) -> usize {
        *self.acks.0.lock().unwrap()
    }

    /// Waits (bounded, woken by each arrival) until `total` acknowledgements have come.
    pub fn wait_acks_for(&self, total: usize, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let (lock, cv) = &*self.acks;
        let mut n = lock.lock().unwrap();
        while *n < total {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                return false;
            };
            n = cv.wait_timeout(n, left).unwrap().0;
        }
        true
    }

    /// Waits (bounded, woken by each arrival) for a state received after the first `seen`
    /// ones that satisfies `pred`.
    pub fn wait_state(
        &self,
        seen: usize,
        timeout: Duration,
        pred: impl Fn(&S) -> bool,
    ) -> Option<S> {
        let deadline = Instant::now() + timeout;
        let (lock, cv) = &*self.states;
        let mut states = lock.lock().unwrap();
        loop {
            if let Some(m) = states
                .get(seen..)
                .and_then(|new| new.iter().find(|m| pred(m)))
            {
                return Some(m.clone());
            }
            let left = deadline.checked_duration_since(Instant::now())?;
            states = cv.wait_timeout(states, left).unwrap().0;
        }
    }

    /// Number of states received so far (for [`Driver::wait_state`]).
    pub fn received(&self) -> usize {
        self.states.0.lock().unwrap().len()
    }

    /// Publishes the inputs once at the current time without moving the clock.
    pub fn publish_now(&self) -> Result<(), String> {
        self.publish_inputs(self.now_ns).map(|_| ())
    }

    /// Publishes every present input stamped `t` (or zero); returns how many.
    fn publish_inputs(&self, t: u64) -> Result<usize, String> {
        let i = &self.inputs;
        let h = || header(if i.zero_stamps { 0 } else { t });
        let p = &self.pubs;
        let mut sent = 0;
        let mut count = |r: Result<(), String>| r.map(|()| sent += 1);
        if let Some(v) = i.battery {
            count(p.battery.send(msg::BatteryLevelStamped {
                header: h(),
                battery_level: v,
            }))?;
        }
        if let Some(v) = i.estop {
            count(p.estop.send(msg::EstopStamped {
                header: h(),
                enabled: v,
            }))?;
        }
        if let Some(v) = i.gps {
            count(p.gps.send(msg::GpsAccuracyStamped {
                header: h(),
                accuracy: v,
            }))?;
        }
        if let Some(v) = i.signal {
            count(p.signal.send(msg::SignalStrengthStamped {
                header: h(),
                strength: v,
            }))?;
        }
        if let Some(v) = i.temperature {
            count(p.temperature.send(msg::TemperatureStamped {
                header: h(),
                temperature: v,
            }))?;
        }
        if let Some(v) = i.planner {
            count(p.planner.send(msg::TaskPlannerStatus {
                header: h(),
                status: v,
            }))?;
        }
        if let Some(v) = i.vehicle_fault {
            count(p.vehicle_fault.send(msg::EstopStamped {
                header: h(),
                enabled: v,
            }))?;
        }
        Ok(sent)
    }

    /// Steps until the returned state satisfies `pred`, at most `max_steps` times.
    pub fn step_until(
        &mut self,
        max_steps: u32,
        what: &str,
        pred: impl Fn(&S) -> bool,
    ) -> Result<S, String> {
        for _ in 0..max_steps {
            let m = self.step()?;
            if pred(&m) {
                return Ok(m);
            }
        }
        Err(format!(
            "{what}: not reached within {max_steps} steps (now {})",
            fmt_ns(self.now_ns)
        ))
    }

    /// Steps until sim time reaches `t_ns` (a multiple of the step) and returns that state.
    pub fn step_to(&mut self, t_ns: u64) -> Result<S, String> {
        let mut last = None;
        while self.now_ns < t_ns {
            last = Some(self.step()?);
        }
        last.ok_or_else(|| format!("already at {} >= {}", fmt_ns(self.now_ns), fmt_ns(t_ns)))
    }

    /// Restores nominal inputs (with a vehicle bridge reporting no fault when connected
    /// with one) and steps until the node reports IDLE without errors.
    pub fn nominal(&mut self) -> Result<(), String> {
        self.inputs = if self.vehicle_bridge {
            Inputs::with_vehicle_fault()
        } else {
            Inputs::nominal()
        };
        self.step_until(50, "nominal IDLE", |m| {
            m.state == S::STATE_IDLE && m.error_code == 0
        })?;
        Ok(())
    }

    /// Publishes `/clock` = `t_ns` without inputs (a clock reset or jump) and returns the
    /// first state stamped at `t_ns`.
    pub fn jump_clock(&mut self, t_ns: u64) -> Result<S, String> {
        self.now_ns = t_ns - STEP_NS;
        self.step()
    }

    /// Every `system_state` received so far.
    pub fn history(&self) -> Vec<S> {
        self.states.0.lock().unwrap().clone()
    }
}

/// A message's stamp in ns.
pub fn stamp_ns(m: &S) -> u64 {
    m.header.stamp.nanos() as u64
}

/// Formats ns as seconds.
pub fn fmt_ns(t: u64) -> String {
    format!("{}.{:03} s", t / NS, (t % NS) / 1_000_000)
}

/// Checks `m` has exactly `bits` (and ERROR state when any bit is set).
pub fn expect_bits(m: &S, bits: u8, what: &str) -> Result<(), String> {
    let state = if bits == 0 {
        None
    } else {
        Some(S::STATE_ERROR)
    };
    if m.error_code != bits || state.is_some_and(|s| s != m.state) {
        return Err(format!(
            "{what}: expected error_code {bits} at {}, got error_code {} state {}",
            fmt_ns(m.header.stamp.nanos() as u64),
            m.error_code,
            m.state
        ));
    }
    Ok(())
}

/// A scenario: name and body.
pub type Scenario = (&'static str, fn(&mut Driver) -> Result<(), String>);

/// Every scenario, in the order the rostest runner plays them.
pub const ALL: [Scenario; 9] = [
    ("battery_ramp", battery_ramp),
    ("temperature", temperature),
    ("gps_hold_off", gps_hold_off),
    ("network_low_connected_not_connected", network),
    ("estop", estop),
    ("staleness", staleness),
    ("planner_status", planner_status),
    ("bad_values", bad_values),
    ("zero_stamps", zero_stamps),
];

/// Battery 0.8 → 0.6 → 0.51 → 0.5 (fine) → 0.49 (BATTERY_LOW) → 0.5 (clears).
pub fn battery_ramp(d: &mut Driver) -> Result<(), String> {
    d.nominal()?;
    for level in [0.6, 0.51, 0.5] {
        d.inputs.battery = Some(level);
        for _ in 0..3 {
            expect_bits(&d.step()?, 0, &format!("battery {level}"))?;
        }
    }
    d.inputs.battery = Some(0.49);
    let m = d.step_until(20, "BATTERY_LOW at 0.49", |m| m.error_code != 0)?;
    expect_bits(&m, S::ERROR_BATTERY_LOW, "battery 0.49")?;
    d.inputs.battery = Some(0.5);
    d.step_until(20, "battery 0.5 clears BATTERY_LOW", |m| m.error_code == 0)?;
    Ok(())
}

/// Temperature 55.0 (fine) → 55.01 (TEMPERATURE_HIGH) → 55.0 (clears).
pub fn temperature(d: &mut Driver) -> Result<(), String> {
    d.nominal()?;
    d.inputs.temperature = Some(55.0);
    for _ in 0..3 {
        expect_bits(&d.step()?, 0, "temperature 55.0")?;
    }
    d.inputs.temperature = Some(55.01);
    let m = d.step_until(20, "TEMPERATURE_HIGH at 55.01", |m| m.error_code != 0)?;
    expect_bits(&m, S::ERROR_TEMPERATURE_HIGH, "temperature 55.01")?;
    d.inputs.temperature = Some(55.0);
    d.step_until(20, "55.0 clears TEMPERATURE_HIGH", |m| m.error_code == 0)?;
    Ok(())
}

/// Last good fix at t; 200.1 mm afterwards: no error at t + 14.9 s (nor 15.0), GPS_LOST at
/// t + 15.1 s; a good fix clears it.
pub fn gps_hold_off(d: &mut Driver) -> Result<(), String> {
    d.nominal()?;
    d.inputs.gps = Some(200.0); // 200 is still a good fix
    d.step()?;
    let last_good = d.now_ns();
    d.inputs.gps = Some(200.1);
    expect_bits(&d.step_to(last_good + secs(14.9))?, 0, "GPS bad for 14.9 s")?;
    expect_bits(
        &d.step_to(last_good + secs(15.0))?,
        0,
        "GPS bad for exactly 15.0 s",
    )?;
    expect_bits(
        &d.step_to(last_good + secs(15.1))?,
        S::ERROR_GPS_LOST,
        "GPS bad for 15.1 s",
    )?;
    d.inputs.gps = Some(150.0);
    d.step_until(20, "good fix clears GPS_LOST", |m| m.error_code == 0)?;
    Ok(())
}

/// The original network scenario: LOW (no error before 20 s since CONNECTED, SIGNAL_LOW
/// after) → CONNECTED (clears) → NOT_CONNECTED (no error before 10 s, SIGNAL_LOST after).
pub fn network(d: &mut Driver) -> Result<(), String> {
    d.nominal()?;
    let connected = d.now_ns();
    d.inputs.signal = Some(msg::SignalStrengthStamped::LOW_SIGNAL);
    expect_bits(&d.step_to(connected + secs(19.9))?, 0, "LOW for 19.9 s")?;
    expect_bits(
        &d.step_to(connected + secs(20.1))?,
        S::ERROR_SIGNAL_LOW,
        "LOW for 20.1 s",
    )?;
    d.inputs.signal = Some(msg::SignalStrengthStamped::CONNECTED);
    d.step_until(20, "CONNECTED clears SIGNAL_LOW", |m| m.error_code == 0)?;
    let connected = d.now_ns();
    d.inputs.signal = Some(msg::SignalStrengthStamped::NOT_CONNECTED);
    expect_bits(
        &d.step_to(connected + secs(9.9))?,
        0,
        "NOT_CONNECTED for 9.9 s",
    )?;
    expect_bits(
        &d.step_to(connected + secs(10.1))?,
        S::ERROR_SIGNAL_LOST,
        "NOT_CONNECTED for 10.1 s",
    )?;
    d.inputs.signal = Some(msg::SignalStrengthStamped::CONNECTED);
    d.step_until(20, "CONNECTED clears SIGNAL_LOST", |m| m.error_code == 0)?;
    Ok(())
}

/// E-stop pressed → ESTOP at once; released → clears.
pub fn estop(d: &mut Driver) -> Result<(), String> {
    d.nominal()?;
    d.inputs.estop = Some(true);
    let m = d.step_until(20, "ESTOP", |m| m.error_code != 0)?;
    expect_bits(&m, S::ERROR_ESTOP, "e-stop pressed")?;
    d.inputs.estop = Some(false);
    d.step_until(20, "e-stop released", |m| m.error_code == 0)?;
    Ok(())
}

/// With `~state_timeout_ms: 1000`: the temperature stops at t; no error at t + 0.9 s,
/// STALE_DATA at t + 1.1 s; it comes back → clears.
pub fn staleness(d: &mut Driver) -> Result<(), String> {
    d.nominal()?;
    let last = d.now_ns();
    d.inputs.temperature = None;
    expect_bits(
        &d.step_to(last + secs(0.9))?,
        0,
        "temperature silent for 0.9 s",
    )?;
    expect_bits(
        &d.step_to(last + secs(1.1))?,
        S::ERROR_STALE_DATA,
        "temperature silent for 1.1 s",
    )?;
    d.inputs.temperature = Some(30.0);
    d.step_until(20, "temperature back clears STALE_DATA", |m| {
        m.error_code == 0
    })?;
    Ok(())
}

/// Planner RUNNING → RUNNING; PAUSED → still RUNNING; NO_TASK → IDLE; a dead planner
/// (silent) → STALE_DATA, not RUNNING forever.
pub fn planner_status(d: &mut Driver) -> Result<(), String> {
    d.nominal()?;
    d.inputs.planner = Some(msg::TaskPlannerStatus::STATUS_RUNNING_TASK);
    d.step_until(20, "planner RUNNING → RUNNING", |m| {
        m.state == S::STATE_RUNNING
    })?;
    d.inputs.planner = Some(msg::TaskPlannerStatus::STATUS_PAUSED_TASK);
    for _ in 0..5 {
        let m = d.step()?;
        check(m.state == S::STATE_RUNNING && m.error_code == 0, || {
            format!("PAUSED must stay RUNNING: {m:?}")
        })?;
    }
    d.inputs.planner = Some(msg::TaskPlannerStatus::STATUS_NO_TASK);
    d.step_until(20, "planner NO_TASK → IDLE", |m| m.state == S::STATE_IDLE)?;
    d.inputs.planner = Some(msg::TaskPlannerStatus::STATUS_RUNNING_TASK);
    d.step_until(20, "RUNNING again", |m| m.state == S::STATE_RUNNING)?;
    let last = d.now_ns();
    d.inputs.planner = None;
    let m = d.step_to(last + secs(1.1))?;
    expect_bits(&m, S::ERROR_STALE_DATA, "planner silent for 1.1 s")?;
    d.inputs.planner = Some(msg::TaskPlannerStatus::STATUS_NO_TASK);
    d.step_until(20, "planner back", |m| {
        m.state == S::STATE_IDLE && m.error_code == 0
    })?;
    Ok(())
}

/// NaN battery → BATTERY_LOW; infinite temperature → TEMPERATURE_HIGH; strength 7 counts
/// as NOT_CONNECTED (SIGNAL_LOST after 10 s, not before). The node keeps running.
pub fn bad_values(d: &mut Driver) -> Result<(), String> {
    d.nominal()?;
    d.inputs.battery = Some(f32::NAN);
    let m = d.step_until(20, "NaN battery", |m| m.error_code != 0)?;
    expect_bits(&m, S::ERROR_BATTERY_LOW, "NaN battery")?;
    d.inputs.battery = Some(0.8);
    d.inputs.temperature = Some(f32::INFINITY);
    let m = d.step_until(20, "inf temperature", |m| {
        m.error_code == S::ERROR_TEMPERATURE_HIGH
    })?;
    expect_bits(&m, S::ERROR_TEMPERATURE_HIGH, "inf temperature")?;
    d.nominal()?;
    let connected = d.now_ns();
    d.inputs.signal = Some(7);
    expect_bits(
        &d.step_to(connected + secs(9.9))?,
        0,
        "strength 7 for 9.9 s",
    )?;
    expect_bits(
        &d.step_to(connected + secs(10.1))?,
        S::ERROR_SIGNAL_LOST,
        "strength 7 for 10.1 s",
    )?;
    d.nominal()
}

/// Inputs with zero stamps are taken at their receive time: nothing goes stale.
pub fn zero_stamps(d: &mut Driver) -> Result<(), String> {
    d.nominal()?;
    d.inputs.zero_stamps = true;
    for _ in 0..25 {
        expect_bits(&d.step()?, 0, "zero-stamped inputs")?;
    }
    d.nominal()
}
