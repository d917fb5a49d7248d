//! A model-predictive steering law for slow steering: linear time-varying MPC on the
//! path-error model, with the steering actuator ([`crate::vehicle::actuator`]) inside the
//! model and its rate and angle limits as hard constraints.
//!
//! The GEM e2's PACMod turns the front wheels at 5–9 °/s. A law that asks for more than
//! that gets it late, and a car that joins its path with late steering swings across it.
//! This law plans the steering *rate* over a horizon of seconds, knowing how fast the
//! wheels can move, so the car turns back towards the path's heading in time.
//!
//! The model, about the path at the progress the car will have, with `v` and the path's
//! curvature `κ` known along the horizon (the speed profile is the schedule):
//!
//! ```text
//! ė_y = v·e_ψ                       e_y: rear-axle cross-track error, + left, m
//! ė_ψ = g·(δ − δ_r),  g = v/(L·cos²δ_r)   e_ψ: course − path heading, rad
//! δ̇  = (c − δ)/τ                    δ: the front wheels, rad (τ: the actuator's lag)
//! ċ  = u,  |u| ≤ δ̇_max,  |c| ≤ δ_max   c: the command, rad; u: its rate, the input
//! ```
//!
//! where `δ_r` is the steering that follows the path (`atan(L·κ)`, plus the understeer
//! the tracker adds). Each step of the horizon is discretised exactly with a zero-order
//! hold ([`super::zoh`]), its `v` and `δ_r` constant over the step. The steps grow from
//! `first_step_s` to `last_step_s`: fine where the next commands are decided, coarse where
//! only the shape of the join matters.
//!
//! The cost is Bryson's rule on `e_y`, `e_ψ`, `δ − δ_r` and `u` (each state's acceptable
//! size), the last step's state weighted `terminal_factor` times. The states are condensed
//! out, which leaves a dense QP in the `N` rates: `½·Uᵀ·P·U + qᵀ·U` subject to the rate
//! bounds and `|c₀ + Σ hⱼ·uⱼ| ≤ δ_max` at every step. It is solved by OSQP (the `osqp`
//! crate), warm-started from the last plan shifted by one control period. The problem is
//! always feasible (holding the command is), so a failure is the solver's: not converged
//! within its iterations or its time limit. The caller then falls back (see
//! [`super::tracker`]).
//!
//! The dead time is not in this model: the tracker predicts the car and the wheels through
//! the commands already sent, to the moment the next command takes effect, and hands this
//! law that state.
//!
//! Not handled: large heading errors (the model is linear in `e_ψ`), reversing.

use super::zoh::expm;
use crate::config::{check, each, first_invalid, value, within, ConfigError};
use crate::vehicle::actuator::SteeringActuator;
use nalgebra::{DMatrix, DVector, SMatrix, Vector4};
use osqp::{CscMatrix, Problem, Settings, Status};
use std::borrow::Cow;
use std::time::{Duration, Instant};
use thiserror::Error;

/// The MPC's settings.
#[derive(Clone, Debug, PartialEq)]
pub struct MpcConfig {
    /// How far ahead the plan looks, s.
    pub horizon_s: f64,
    /// The first step of the horizon, s.
    pub first_step_s: f64,
    /// The last step of the horizon, s (the steps grow linearly in between).
    pub last_step_s: f64,
    /// Acceptable cross-track error, m.
    pub lateral_m: f64,
    /// Acceptable course error, rad.
    pub heading_rad: f64,
    /// Acceptable steering beyond the path's own, rad.
    pub steering_rad: f64,
    /// Acceptable steering rate, rad/s (the smoothness of the commands).
    pub steering_rate_rad_s: f64,
    /// The last step's state weight, times the others.
    pub terminal_factor: f64,
    /// The share of the actuator's rate the plan may use (the rest absorbs the bridge's
    /// sampling and a wheel that lags its model).
    pub rate_share: f64,
    /// A solve that takes longer is late and its result is not used, s.
    pub time_limit_s: f64,
}

impl MpcConfig {
    /// The defaults, readable in `const` context: tuned with `gem_bench pacmod` on the GEM
    /// e2 single-track model at steering-wheel rates of 2.0 and 3.5 rad/s.
    pub const DEFAULT: MpcConfig = MpcConfig {
        horizon_s: 5.0,
        first_step_s: 0.1,
        last_step_s: 0.3,
        lateral_m: 0.2,
        heading_rad: 0.05,
        steering_rad: 0.1,
        steering_rate_rad_s: 0.05,
        terminal_factor: 10.0,
        rate_share: 0.9,
        time_limit_s: 0.02,
    };

    /// Checks every field; the error names it.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let weights = each![positive; self; MpcConfig:
            lateral_m, heading_rad, steering_rad, steering_rate_rad_s, terminal_factor];
        first_invalid(weights.into_iter().chain([
            within(value!(self, MpcConfig.horizon_s), 0.5, 20.0),
            within(value!(self, MpcConfig.first_step_s), 0.01, 1.0),
            check(
                value!(self, MpcConfig.last_step_s),
                self.last_step_s >= self.first_step_s && self.last_step_s <= 2.0,
                "must be within first_step_s..2 s",
            ),
            check(
                value!(self, MpcConfig.rate_share),
                self.rate_share > 0.0 && self.rate_share <= 1.0,
                "must be within (0, 1]",
            ),
            within(value!(self, MpcConfig.time_limit_s), 0.001, 1.0),
        ]))?;
        let n = steps(self).len();
        check_steps(self, n)
    }
}

impl Default for MpcConfig {
    fn default() -> Self {
        MpcConfig::DEFAULT
    }
}

/// The most steps a horizon may have (the QP's size).
pub const MAX_STEPS: usize = 200;

fn check_steps(cfg: &MpcConfig, n: usize) -> Result<(), ConfigError> {
    first_invalid([check(
        value!(cfg, MpcConfig.horizon_s),
        n <= MAX_STEPS,
        "gives more than 200 steps with first_step_s and last_step_s",
    )])
}

/// The horizon's steps, s: growing linearly from the first to the last, summing to the
/// horizon.
pub fn steps(cfg: &MpcConfig) -> Vec<f64> {
    let mean = 0.5 * (cfg.first_step_s + cfg.last_step_s);
    let n = ((cfg.horizon_s / mean).round() as usize).clamp(1, MAX_STEPS + 1);
    let raw: Vec<f64> = (0..n)
        .map(|k| {
            let f = if n > 1 {
                k as f64 / (n - 1) as f64
            } else {
                0.0
            };
            cfg.first_step_s + f * (cfg.last_step_s - cfg.first_step_s)
        })
        .collect();
    let scale = cfg.horizon_s / raw.iter().sum::<f64>();
    raw.into_iter().map(|h| h * scale).collect()
}

/// Where the plan starts: the car and the wheels when the next command takes effect.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MpcState {
    /// Rear-axle cross-track error, + left, m.
    pub cross_track_m: f64,
    /// Course minus path heading, wrapped, rad.
    pub heading_error_rad: f64,
    /// The front wheels, rad.
    pub wheels_rad: f64,
    /// The command in force (the last one sent), rad.
    pub command_rad: f64,
}

/// What the horizon holds, one entry per step: the speed and the steering that follows the
/// path.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Schedule {
    /// Speed over each step, m/s.
    pub speeds_mps: Vec<f64>,
    /// The steering that follows the path over each step, rad.
    pub path_steering_rad: Vec<f64>,
}

/// A plan: the command's rate over each step of the horizon.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// The rate over each step, rad/s.
    pub rates_rad_s: Vec<f64>,
    /// The steps, s.
    pub steps_s: Vec<f64>,
    /// Wall time of the whole solve (model, condensing, solver).
    pub solve_time: Duration,
}

impl Plan {
    /// The command rate `t` seconds into the plan (0 past its end).
    pub fn rate_at(&self, t: f64) -> f64 {
        rate_at(&self.steps_s, &self.rates_rad_s, t)
    }
}

/// Why a solve gave no plan.
#[derive(Clone, Debug, Error, PartialEq)]
pub enum MpcError {
    /// The state or the schedule holds NaN or infinity, or the schedule's length is not
    /// the horizon's.
    #[error("the MPC's input is invalid: {0}")]
    Input(&'static str),
    /// The solver stopped without a solution.
    #[error("the QP solver stopped without a solution: {0}")]
    Solver(String),
    /// The solve took longer than `time_limit_s`.
    #[error("the MPC solve took {0:?}, beyond its time limit")]
    Late(Duration),
}

/// OSQP's workspace, set up at the first solve and updated after: its matrices keep their
/// structure. A clone starts without one (the solver's memory is not copied).
#[derive(Default)]
struct Workspace(Option<Problem>);

impl Clone for Workspace {
    fn clone(&self) -> Self {
        Workspace(None)
    }
}

impl std::fmt::Debug for Workspace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Workspace(set up)"
        } else {
            "Workspace(none)"
        })
    }
}

/// The law, with its solver's workspace and the last solution (see the module
/// documentation).
#[derive(Clone, Debug)]
pub struct Mpc {
    cfg: MpcConfig,
    act: SteeringActuator,
    wheelbase_m: f64,
    max_steer_rad: f64,
    steps: Vec<f64>,
    workspace: Workspace,
    /// The last solution, for the next warm start.
    last: Option<Vec<f64>>,
}

/// Type of one step's discrete model: `x⁺ = A·x + B·u + w`.
type Step4 = (SMatrix<f64, 4, 4>, Vector4<f64>, Vector4<f64>);

impl Mpc {
    /// The law for a car of wheelbase `wheelbase_m` and steering limit `max_steer_rad`
    /// whose actuator is `act` (`cfg` and `act` valid).
    pub fn new(cfg: MpcConfig, act: SteeringActuator, wheelbase_m: f64, max_steer_rad: f64) -> Mpc {
        Mpc {
            steps: steps(&cfg),
            cfg,
            act,
            wheelbase_m,
            max_steer_rad,
            workspace: Workspace(None),
            last: None,
        }
    }

    /// The horizon's steps, s.
    pub fn steps(&self) -> &[f64] {
        &self.steps
    }

    /// The largest command rate a plan uses, rad/s.
    pub fn max_rate_rad_s(&self) -> f64 {
        self.act.rate_rad_s * self.cfg.rate_share
    }

    /// Plans from `x0` over `schedule`; `shift_s` is the time since the last plan (its
    /// solution, shifted so, warm-starts this one).
    pub fn solve(
        &mut self,
        x0: MpcState,
        schedule: &Schedule,
        shift_s: f64,
    ) -> Result<Plan, MpcError> {
        let started = Instant::now();
        let n = self.steps.len();
        if schedule.speeds_mps.len() != n || schedule.path_steering_rad.len() != n {
            return Err(MpcError::Input(
                "the schedule's length is not the horizon's",
            ));
        }
        let finite = [
            x0.cross_track_m,
            x0.heading_error_rad,
            x0.wheels_rad,
            x0.command_rad,
        ]
        .iter()
        .chain(&schedule.speeds_mps)
        .chain(&schedule.path_steering_rad)
        .all(|v| v.is_finite());
        if !finite {
            return Err(MpcError::Input("not finite"));
        }
        let (p, q) = self.cost(x0, schedule);
        let (l, u) = self.bounds(x0.command_rad);
        let warm = self.shifted(shift_s);
        let solution = self.run_solver(&p, &q, &l, &u, warm.as_deref())?;
        let solve_time = started.elapsed();
        if solve_time.as_secs_f64() > self.cfg.time_limit_s {
            self.last = None;
            return Err(MpcError::Late(solve_time));
        }
        let rate = self.max_rate_rad_s();
        let rates: Vec<f64> = solution.iter().map(|u| u.clamp(-rate, rate)).collect();
        self.last = Some(rates.clone());
        Ok(Plan {
            rates_rad_s: rates,
            steps_s: self.steps.clone(),
            solve_time,
        })
    }

    /// Forgets the last solution (a new goal, or a plan not followed).
    pub fn forget(&mut self) {
        self.last = None;
    }

    /// The last solution moved `shift_s` on, its last rate repeated.
    fn shifted(&self, shift_s: f64) -> Option<Vec<f64>> {
        let last = self.last.as_ref()?;
        let mut t = shift_s;
        Some(
            self.steps
                .iter()
                .map(|h| {
                    let u = rate_at(&self.steps, last, t + 0.5 * h);
                    t += h;
                    u
                })
                .collect(),
        )
    }

    /// One step's discrete model at speed `v`, path steering `dr`, over `h`.
    fn step_model(&self, v: f64, dr: f64, h: f64) -> Step4 {
        let l = self.wheelbase_m;
        let g = v / (l * dr.cos().powi(2));
        // A lag shorter than this is none: the wheels are the command (kept as a state so
        // the problem's shape does not depend on it).
        let tau = self.act.lag_s.max(0.01);
        let mut m = SMatrix::<f64, 6, 6>::zeros();
        // Columns: e_y, e_ψ, δ, c | u | 1.
        m[(0, 1)] = v;
        m[(1, 2)] = g;
        m[(1, 5)] = -g * dr;
        m[(2, 2)] = -1.0 / tau;
        m[(2, 3)] = 1.0 / tau;
        m[(3, 4)] = 1.0;
        let e = expm(&(m * h));
        (
            e.fixed_view::<4, 4>(0, 0).into_owned(),
            e.fixed_view::<4, 1>(0, 4).into_owned(),
            e.fixed_view::<4, 1>(0, 5).into_owned(),
        )
    }

    /// The condensed cost: `P` (dense, N × N) and `q`.
    fn cost(&self, x0: MpcState, sch: &Schedule) -> (DMatrix<f64>, DVector<f64>) {
        let n = self.steps.len();
        let models: Vec<Step4> = (0..n)
            .map(|k| self.step_model(sch.speeds_mps[k], sch.path_steering_rad[k], self.steps[k]))
            .collect();
        // The free response (all rates 0) and each rate's effect, state after each step.
        let mut free = Vec::with_capacity(n);
        let mut x = Vector4::new(
            x0.cross_track_m,
            x0.heading_error_rad,
            x0.wheels_rad,
            x0.command_rad,
        );
        for (a, _, w) in &models {
            x = a * x + w;
            free.push(x);
        }
        // gamma[(4k + i, j)]: state i after step k per unit rate over step j.
        let mut gamma = DMatrix::<f64>::zeros(4 * n, n);
        for j in 0..n {
            let mut x = models[j].1;
            gamma.fixed_view_mut::<4, 1>(4 * j, j).copy_from(&x);
            for (k, model) in models.iter().enumerate().skip(j + 1) {
                x = model.0 * x;
                gamma.fixed_view_mut::<4, 1>(4 * k, j).copy_from(&x);
            }
        }
        let c = &self.cfg;
        let q_state = [
            c.lateral_m.powi(-2),
            c.heading_rad.powi(-2),
            c.steering_rad.powi(-2),
            0.0,
        ];
        let r = c.steering_rate_rad_s.powi(-2);
        let mut weights = DVector::<f64>::zeros(4 * n);
        let mut offset = DVector::<f64>::zeros(4 * n);
        for k in 0..n {
            // The weights count per second of the horizon, so a coarse step weighs more.
            let factor = self.steps[k] * if k + 1 == n { c.terminal_factor } else { 1.0 };
            let reference = [0.0, 0.0, sch.path_steering_rad[k], 0.0];
            for i in 0..4 {
                weights[4 * k + i] = q_state[i] * factor;
                offset[4 * k + i] = free[k][i] - reference[i];
            }
        }
        let weighted = DMatrix::from_fn(4 * n, n, |row, col| gamma[(row, col)] * weights[row]);
        let mut p = gamma.transpose() * &weighted;
        for k in 0..n {
            p[(k, k)] += r * self.steps[k];
        }
        let q = weighted.transpose() * offset;
        (p, q)
    }

    /// The constraints' bounds: first the rates, then the command after each step.
    fn bounds(&self, command_rad: f64) -> (Vec<f64>, Vec<f64>) {
        let n = self.steps.len();
        let rate = self.max_rate_rad_s();
        let c0 = command_rad.clamp(-self.max_steer_rad, self.max_steer_rad);
        let mut l = vec![-rate; n];
        let mut u = vec![rate; n];
        l.extend(std::iter::repeat_n(-self.max_steer_rad - c0, n));
        u.extend(std::iter::repeat_n(self.max_steer_rad - c0, n));
        (l, u)
    }

    /// The constraint matrix `[I; H]`, `H[k][j] = h_j` for `j ≤ k` (the command's change
    /// after step k), in compressed columns.
    fn constraints(&self) -> CscMatrix<'static> {
        let n = self.steps.len();
        let mut indptr = vec![0];
        let mut indices = Vec::new();
        let mut data = Vec::new();
        for j in 0..n {
            indices.push(j);
            data.push(1.0);
            for k in j..n {
                indices.push(n + k);
                data.push(self.steps[j]);
            }
            indptr.push(indices.len());
        }
        CscMatrix {
            nrows: 2 * n,
            ncols: n,
            indptr: Cow::Owned(indptr),
            indices: Cow::Owned(indices),
            data: Cow::Owned(data),
        }
    }

    /// Sets up or updates the solver and solves; the solution.
    fn run_solver(
        &mut self,
        p: &DMatrix<f64>,
        q: &DVector<f64>,
        l: &[f64],
        u: &[f64],
        warm: Option<&[f64]>,
    ) -> Result<Vec<f64>, MpcError> {
        let p = upper_triangle(p);
        let q = q.as_slice();
        let a = self.constraints();
        let time_limit = Duration::from_secs_f64(self.cfg.time_limit_s);
        let problem = match &mut self.workspace.0 {
            Some(problem) => {
                problem.update_P(p);
                problem.update_lin_cost(q);
                problem.update_bounds(l, u);
                problem
            }
            none => {
                let settings = Settings::default()
                    .verbose(false)
                    .warm_start(true)
                    .polish(true)
                    .eps_abs(1e-5)
                    .eps_rel(1e-5)
                    .max_iter(4000)
                    .time_limit(Some(time_limit));
                let problem = Problem::new(p, q, a, l, u, &settings)
                    .map_err(|e| MpcError::Solver(format!("set-up: {e:?}")))?;
                none.insert(problem)
            }
        };
        if let Some(x) = warm {
            problem.warm_start_x(x);
        }
        let result = match problem.solve() {
            Status::Solved(s) | Status::SolvedInaccurate(s) => Ok(s.x().to_vec()),
            Status::MaxIterationsReached(_) => Err(MpcError::Solver("not converged".into())),
            Status::TimeLimitReached(_) => Err(MpcError::Solver("time limit reached".into())),
            other => Err(MpcError::Solver(format!("{other:?}"))),
        };
        match result {
            Ok(x) if !x.iter().all(|v| v.is_finite()) => {
                Err(MpcError::Solver("a solution that is not finite".into()))
            }
            r => r,
        }
    }
}

/// The rate `t` seconds into a plan of `rates` over `steps` (0 past its end).
fn rate_at(steps: &[f64], rates: &[f64], t: f64) -> f64 {
    let mut start = 0.0;
    for (h, u) in steps.iter().zip(rates) {
        if t < start + h {
            return *u;
        }
        start += h;
    }
    0.0
}

/// The upper triangle of the square `m` in compressed columns, every entry kept (the
/// structure stays the same from solve to solve).
fn upper_triangle(m: &DMatrix<f64>) -> CscMatrix<'static> {
    let n = m.nrows();
    let mut indptr = vec![0];
    let mut indices = Vec::with_capacity(n * (n + 1) / 2);
    let mut data = Vec::with_capacity(n * (n + 1) / 2);
    for col in 0..n {
        for row in 0..=col {
            indices.push(row);
            data.push(m[(row, col)]);
        }
        indptr.push(indices.len());
    }
    CscMatrix {
        nrows: n,
        ncols: n,
        indptr: Cow::Owned(indptr),
        indices: Cow::Owned(indices),
        data: Cow::Owned(data),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vehicle::actuator::Servo;

    const L: f64 = 1.75;
    const MAX: f64 = 0.61;

    /// The car's steering at 2.0 rad/s of steering wheel, 0.1 s lag.
    fn slow() -> SteeringActuator {
        SteeringActuator {
            rate_rad_s: SteeringActuator::front_rate_of_steering_wheel(2.0),
            lag_s: 0.1,
            dead_time_s: 0.0,
        }
    }

    fn straight(mpc: &Mpc, v: f64) -> Schedule {
        Schedule {
            speeds_mps: vec![v; mpc.steps().len()],
            path_steering_rad: vec![0.0; mpc.steps().len()],
        }
    }

    #[test]
    fn the_steps_grow_and_fill_the_horizon() {
        let s = steps(&MpcConfig::DEFAULT);
        assert!((s.iter().sum::<f64>() - 5.0).abs() < 1e-9);
        assert!(s.windows(2).all(|w| w[1] > w[0]));
        assert!((s[0] - 0.1).abs() < 0.01 && (s[s.len() - 1] - 0.3).abs() < 0.01);
        assert!(MpcConfig::DEFAULT.validate().is_ok());
    }

    #[test]
    fn bad_settings_are_refused_naming_them() {
        let bad = |f: &dyn Fn(&mut MpcConfig)| {
            let mut c = MpcConfig::DEFAULT;
            f(&mut c);
            c.validate().unwrap_err().field.name
        };
        assert_eq!(bad(&|c| c.horizon_s = f64::NAN), "horizon_s");
        assert_eq!(bad(&|c| c.lateral_m = 0.0), "lateral_m");
        assert_eq!(bad(&|c| c.last_step_s = 0.05), "last_step_s");
        assert_eq!(bad(&|c| c.rate_share = 1.5), "rate_share");
        assert_eq!(bad(&|c| c.first_step_s = -0.1), "first_step_s");
        assert_eq!(
            bad(&|c| {
                c.horizon_s = 19.0;
                c.first_step_s = 0.05;
                c.last_step_s = 0.05;
            }),
            "horizon_s"
        );
    }

    /// The default settings with the longest time limit: a test machine's load (a solve
    /// takes about 0.14 ms, the limit is 20 ms, but a test thread can be descheduled for
    /// longer) must not turn a plan into [`MpcError::Late`] in a test of the plan.
    fn untimed() -> MpcConfig {
        MpcConfig {
            time_limit_s: 1.0,
            ..MpcConfig::DEFAULT
        }
    }

    /// On the linearised model with the slow actuator, from 2 m beside a straight path:
    /// the plan keeps the rate and angle limits, and closing the loop on the model joins
    /// without crossing the path by more than a few centimetres.
    #[test]
    fn it_joins_a_straight_path_with_slow_steering_without_overshoot() {
        let act = slow();
        let mut mpc = Mpc::new(untimed(), act, L, MAX);
        let v = 2.8;
        let sch = straight(&mpc, v);
        let (mut y, mut psi, mut cmd) = (2.0, 0.0, 0.0);
        let mut servo = Servo::new(act, MAX, 0.0);
        let dt = 0.05;
        let mut lowest: f64 = 2.0;
        let mut rates = Vec::new();
        for _ in 0..(30.0 / dt) as usize {
            let x0 = MpcState {
                cross_track_m: y,
                heading_error_rad: psi,
                wheels_rad: servo.angle(),
                command_rad: cmd,
            };
            let plan = mpc.solve(x0, &sch, dt).expect("solved");
            let next = (cmd + plan.rates_rad_s[0] * dt).clamp(-MAX, MAX);
            rates.push((next - cmd) / dt);
            cmd = next;
            servo.command(cmd);
            for _ in 0..50 {
                let d = servo.step(0.001);
                y += v * psi.sin() * 0.001;
                psi += v * d.tan() / L * 0.001;
            }
            lowest = lowest.min(y);
        }
        assert!(y.abs() < 0.01 && psi.abs() < 0.01, "{y} {psi}");
        assert!(lowest > -0.02, "crossed the path by {lowest}");
        let fastest = rates.iter().fold(0.0f64, |m, r| m.max(r.abs()));
        assert!(fastest <= act.rate_rad_s * 0.9 + 1e-6, "{fastest}");
    }

    #[test]
    fn a_bad_input_is_an_error_not_a_command() {
        let mut mpc = Mpc::new(untimed(), slow(), L, MAX);
        let sch = straight(&mpc, 2.8);
        let x0 = MpcState {
            cross_track_m: f64::NAN,
            heading_error_rad: 0.0,
            wheels_rad: 0.0,
            command_rad: 0.0,
        };
        assert!(matches!(mpc.solve(x0, &sch, 0.05), Err(MpcError::Input(_))));
        let short = Schedule {
            speeds_mps: vec![2.8],
            path_steering_rad: vec![0.0],
        };
        let x0 = MpcState {
            cross_track_m: 1.0,
            ..x0
        };
        assert!(matches!(
            mpc.solve(x0, &short, 0.05),
            Err(MpcError::Input(_))
        ));
        // A clone has no workspace and sets one up.
        let mut copy = mpc.clone();
        assert!(copy.solve(x0, &straight(&mpc, 2.8), 0.05).is_ok());
    }

    #[test]
    fn a_plan_reads_its_rate_at_a_time() {
        let plan = Plan {
            rates_rad_s: vec![0.1, 0.2],
            steps_s: vec![0.1, 0.2],
            solve_time: Duration::ZERO,
        };
        assert_eq!(plan.rate_at(0.05), 0.1);
        assert_eq!(plan.rate_at(0.25), 0.2);
        assert_eq!(plan.rate_at(0.31), 0.0);
    }
}
