//! Path tracking: the path and progress along it, three control laws, the speed profile
//! (the minimum-time profile it plans with) and the tracker that puts them together for a
//! goal.

pub mod closed_loop;
pub mod lqr;
pub mod mpc;
pub mod path;
pub mod profile;
pub mod pure_pursuit;
pub mod speed;
pub mod stanley;
pub mod stop;
pub mod tracker;
pub mod twist;
pub mod zoh;
