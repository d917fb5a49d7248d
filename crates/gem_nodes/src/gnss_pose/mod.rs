//! `gnss_pose`: the rear axle's pose from a GNSS/INS, served to the controllers as
//! `gazebo/get_model_state` answers them in simulation, and the solution's health as the
//! state manager's `gps_accuracy` input (`gem_core::gnss`, docs/nodes/gnss_pose.md).
//!
//! Each solution (`novatel_gps_msgs/Inspva`, or `sensor_msgs/NavSatFix` with the latest
//! `sensor_msgs/Imu`) goes to a [`PoseSource`] on the subscriber's thread; the service
//! answers from it; a loop at `~rate` (ROS time) publishes the verdict's accuracy and, at
//! 1 Hz and on a change, the node's status on `/diagnostics`.
//!
//! Its topics and services: [`INTERFACE`].

pub mod params;
pub use params::PARAMS;

use gem_core::geometry::yaw_from_quaternion;
use gem_core::gnss::geodesy::azimuth_deg_from_yaw;
use gem_core::gnss::health::{GpsVerdict, InsFault, GOOD_STATUS};
use gem_core::gnss::source::{
    ins_sigma_m, navsat_sigma_m, navsat_status, PoseSource, RearAxle, ReportedSigma, Served,
    Solution,
};
use gem_core::names;
use gem_core::state_manager::Input as SmInput;
use gem_core::time::Time;
use gem_msgs::diagnostic_msgs::{DiagnosticArray, DiagnosticStatus, KeyValue};
use gem_msgs::gazebo_msgs::{GetModelState, GetModelStateRes};
use gem_msgs::gem_state_msgs::GpsAccuracyStamped;
use gem_msgs::geometry_msgs::{Pose as PoseMsg, Twist};
use gem_msgs::novatel_gps_msgs::{Inspva, Insstdev};
use gem_msgs::sensor_msgs::{Imu, NavSatFix};
use gem_msgs::std_msgs::Header;
use gem_ros::convert::{inspva_solution, stamp};
use gem_ros::time::{self, to_ros, Ticker};
use gem_ros::topics::Decl;
use params::{Input, Params};
use ros1_protocols::direct::DirectSubscriber;
use ros1_protocols::service::Service;
use ros1_protocols::Lock;
use std::sync::{Arc, Mutex};
use std::time::Duration;

// A table of this node's own topics. Row by row it has the shape of the PACMod bridge's
// (a declaration each), which `duplicates` pairs with it; the two share no topic.
gem_ros::interface_table! {
    /// Every topic and service of the node.
    pub const INTERFACE = [
        /// The Novatel solution.
        INSPVA: Inspva = Decl::subscribes(names::INSPVA, "with `~input: inspva`: position, heading (`azimuth`), east and north velocity and `status` of the antenna, stamped with the measurement time");
        /// The Novatel solution's standard deviations.
        INSSTDEV: Insstdev = Decl::subscribes(names::INSSTDEV, "with `~input: inspva`: the solution's reported latitude and longitude deviations, whose larger is the σ of the solutions stamped within 3 s of it");
        /// A receiver's fix.
        FIX: NavSatFix = Decl::subscribes(names::GNSS_FIX, "with `~input: navsatfix`: the antenna's position, fix status and covariance, stamped with the measurement time");
        /// An IMU's heading and yaw rate.
        IMU: Imu = Decl::subscribes(names::IMU, "with `~input: navsatfix`: heading (`orientation`, east-north-up) and yaw rate (`angular_velocity.z`) for each fix");
        /// The pose, as the controllers ask for it.
        GET_MODEL_STATE: GetModelState = Decl::serves(names::GET_MODEL_STATE, "the rear axle's pose, world-frame velocity and yaw rate (NaN when not known yet) of the latest solution, stamped with its measurement time, while the solution is good; after it goes bad, the last good one (`status_message` says held, and why) until `~hold_pose_s` old, then `success: false` naming the fault. Persistent connections accepted; a model other than `~model_name`: `success: false`");
        /// The solution's health, as the state manager reads it.
        GPS: GpsAccuracyStamped = Decl::publishes(SmInput::Gps.topic(), 10, "at `~rate`, stamped now: while the solution is good its σ in mm (`inspva`: the latest `Insstdev`'s, within 3 s; `navsatfix`: the fix's covariance), 0 mm when there is none; 10⁶ mm on any fault");
        /// The node's status.
        DIAGNOSTICS: DiagnosticArray = Decl::publishes(names::DIAGNOSTICS, 10, "one status, `<node>: GNSS/INS solution`, at 1 Hz (ROS time) and at once on a change: OK while good, ERROR naming the fault (WARN before the first solution)");
    ];
}

/// What the subscribers, the service and the loop share.
struct Shared {
    source: PoseSource,
    /// The latest IMU heading (azimuth, degrees) and yaw rate, with its stamp.
    imu: Option<(Time, f64, f64)>,
    /// The INS's latest reported σ (`~input: inspva`).
    sigma: ReportedSigma,
    /// Dropped solutions since the last warning, and when it was.
    dropped: Throttle,
}

/// Warnings about dropped solutions: the first at once, then a summary at most every 5 s.
#[derive(Default)]
struct Throttle {
    since_last: u64,
    last: Option<std::time::Instant>,
}

impl Throttle {
    const EVERY: Duration = Duration::from_secs(5);

    fn note(&mut self, why: &str) {
        self.since_last += 1;
        if self.last.is_none_or(|at| at.elapsed() >= Self::EVERY) {
            tracing::warn!(
                "solution refused ({why}); {} refused since the last warning",
                self.since_last
            );
            self.since_last = 0;
            self.last = Some(std::time::Instant::now());
        }
    }
}

type SharedRef = Arc<Mutex<Shared>>;

/// `gnss_pose`'s `main`.
pub fn main() -> anyhow::Result<()> {
    crate::run_node("gnss_pose", &params::PARAMS, INTERFACE, run)
}

fn run() -> anyhow::Result<()> {
    use anyhow::Context;
    let p = Params::load().context("invalid parameters")?;
    let projection = p.projection().context("invalid parameters")?;
    let shared: SharedRef = Arc::new(Mutex::new(Shared {
        source: PoseSource::new(projection, p.pose.antenna_ahead_m, p.health.clone())
            .with_hold(p.hold_pose),
        imu: None,
        sigma: ReportedSigma::default(),
        dropped: Throttle::default(),
    }));
    if !time::wait_for_valid_time() {
        return Ok(());
    }
    let _inputs = subscribe(&p, &shared)?;
    let _service = serve(&p, &shared)?;
    let gps = GPS.publish()?;
    let mut report = Report {
        publisher: DIAGNOSTICS.publish()?,
        last: None,
        input: p.input,
        params: p.clone(),
    };
    tracing::info!(
        "gnss_pose up: {:?} input, origin {:.7}° {:.7}° {} m, antenna {} m ahead of the rear axle, stale after {} s, pose held {} s",
        p.input,
        p.pose.origin_lat_deg.unwrap_or(f64::NAN),
        p.pose.origin_lon_deg.unwrap_or(f64::NAN),
        p.pose.origin_alt_m,
        p.pose.antenna_ahead_m,
        p.stale_after().as_secs_f64(),
        p.hold_pose.as_secs_f64()
    );
    let mut ticker = Ticker::from_rate(p.rate_hz);
    let mut said: Option<String> = None;
    while let Some(now) = ticker.wait() {
        let (verdict, refused) = {
            let mut s = shared.locked();
            (s.source.verdict(now), s.source.refused())
        };
        let text = describe(&verdict);
        if said.as_deref() != Some(text.as_str()) {
            match &verdict {
                GpsVerdict::Good { .. } => tracing::info!("solution good"),
                GpsVerdict::Fault(InsFault::NoSolution) => tracing::info!("{text}"),
                GpsVerdict::Fault(_) => tracing::error!("{text}: GPS accuracy reported bad"),
            }
            said = Some(text.clone());
        }
        let msg = GpsAccuracyStamped {
            header: Header {
                seq: 0,
                stamp: to_ros(now),
                frame_id: String::new(),
            },
            accuracy: verdict.accuracy_mm(),
        };
        if let Err(e) = gps.send(msg) {
            tracing::error!("cannot publish {}: {e}", GPS.name());
        }
        report.publish(now, &verdict, refused);
    }
    Ok(())
}

fn describe(v: &GpsVerdict) -> String {
    match v {
        GpsVerdict::Good { .. } => "solution good".into(),
        GpsVerdict::Fault(f) => f.to_string(),
    }
}

/// The subscriptions `~input` selects.
fn subscribe(p: &Params, shared: &SharedRef) -> anyhow::Result<Vec<DirectSubscriber>> {
    let s = shared.clone();
    Ok(match p.input {
        Input::Inspva => {
            let stdev_shared = shared.clone();
            let stdev = crate::interface::subscribe(&INSSTDEV, move |m, _| {
                let sigma = ins_sigma_m(m.latitude_dev, m.longitude_dev);
                stdev_shared.locked().sigma.note(stamp(&m.header), sigma);
            })?;
            let solution = crate::interface::subscribe(&INSPVA, move |m, _| {
                let mut solution = inspva_solution(&m);
                solution.horizontal_sigma_m = s.locked().sigma.at(solution.stamp);
                offer(&s, solution);
            })?;
            vec![solution, stdev]
        }
        Input::NavSatFix => {
            let stale_after = p.stale_after();
            let imu_shared = shared.clone();
            let imu = crate::interface::subscribe(&IMU, move |m, _| {
                let q = &m.orientation;
                let yaw = yaw_from_quaternion(q.x, q.y, q.z, q.w);
                imu_shared.locked().imu = Some((
                    stamp(&m.header),
                    azimuth_deg_from_yaw(yaw),
                    m.angular_velocity.z,
                ));
            })?;
            let fix = crate::interface::subscribe(&FIX, move |m, _| {
                let at = stamp(&m.header);
                let heading = s.locked().imu;
                let fresh = heading.filter(|(t, _, _)| {
                    let gap = at.since(*t).or_else(|| t.since(at));
                    gap.is_some_and(|g| g <= stale_after)
                });
                let (azimuth_deg, yaw_rate) = match fresh {
                    Some((_, a, w)) => (a, Some(w)),
                    None => (f64::NAN, None),
                };
                let solution = Solution {
                    stamp: at,
                    status: navsat_status(m.status.status, fresh.is_some()).into(),
                    lat_deg: m.latitude,
                    lon_deg: m.longitude,
                    azimuth_deg,
                    velocity_en_mps: None,
                    yaw_rate_rad_s: yaw_rate,
                    horizontal_sigma_m: navsat_sigma_m(
                        m.position_covariance_type,
                        &m.position_covariance,
                    ),
                };
                offer(&s, solution);
            })?;
            vec![imu, fix]
        }
    })
}

fn offer(shared: &SharedRef, solution: Solution) {
    let now = time::now();
    let mut s = shared.locked();
    if let Err(why) = s.source.offer(solution, now) {
        s.dropped.note(&why.to_string());
    }
}

fn serve(p: &Params, shared: &SharedRef) -> anyhow::Result<Service> {
    let s = shared.clone();
    let model = p.model_name.clone();
    Ok(crate::interface::serve(&GET_MODEL_STATE, move |req| {
        if req.model_name != model {
            return Ok(crate::interface::unknown_model(&req.model_name));
        }
        let served = s.locked().source.served(time::now());
        Ok(match served {
            Ok(served) => {
                let r = served.rear_axle();
                let status_message = match &served {
                    Served::Fresh(_) => "GetModelState: got properties".into(),
                    Served::Held(_, f) => format!("GetModelState: got properties (held: {f})"),
                };
                GetModelStateRes {
                    header: Header {
                        seq: 0,
                        stamp: to_ros(r.stamp),
                        frame_id: req.relative_entity_name,
                    },
                    pose: pose_msg(&r),
                    twist: twist_msg(&r),
                    success: true,
                    status_message,
                }
            }
            Err(f) => GetModelStateRes {
                success: false,
                status_message: format!("GetModelState: no pose: {f}"),
                ..Default::default()
            },
        })
    })?)
}

fn pose_msg(r: &RearAxle) -> PoseMsg {
    let mut m = PoseMsg::default();
    m.position.x = r.pose.x;
    m.position.y = r.pose.y;
    m.orientation.z = (r.pose.yaw / 2.0).sin();
    m.orientation.w = (r.pose.yaw / 2.0).cos();
    m
}

/// The rear axle's world-frame twist, as Gazebo reports its model's.
fn twist_msg(r: &RearAxle) -> Twist {
    let mut t = Twist::default();
    t.linear.x = r.velocity_mps[0];
    t.linear.y = r.velocity_mps[1];
    t.angular.z = r.yaw_rate_rad_s;
    t
}

/// `/diagnostics`: the verdict, at 1 Hz and at once on a change.
struct Report {
    publisher: ros1_protocols::runtime::Publisher<DiagnosticArray>,
    last: Option<(Time, String)>,
    input: Input,
    params: Params,
}

impl Report {
    const PERIOD: Duration = Duration::from_secs(1);

    fn publish(&mut self, now: Time, verdict: &GpsVerdict, refused: u64) {
        let text = describe(verdict);
        let due = match &self.last {
            None => true,
            Some((at, last)) => {
                *last != text || now.saturating_since(*at) >= Self::PERIOD || now < *at
            }
        };
        if !due {
            return;
        }
        let level = match verdict {
            GpsVerdict::Good { .. } => DiagnosticStatus::OK,
            GpsVerdict::Fault(InsFault::NoSolution) => DiagnosticStatus::WARN,
            GpsVerdict::Fault(_) => DiagnosticStatus::ERROR,
        };
        let kv = |key: &str, value: String| KeyValue {
            key: key.into(),
            value,
        };
        let p = &self.params;
        let values = vec![
            kv("input", format!("{:?}", self.input)),
            kv("good status", GOOD_STATUS.into()),
            kv(
                "origin",
                format!(
                    "{:.7}, {:.7}, {} m",
                    p.pose.origin_lat_deg.unwrap_or(f64::NAN),
                    p.pose.origin_lon_deg.unwrap_or(f64::NAN),
                    p.pose.origin_alt_m
                ),
            ),
            kv(
                "antenna ahead of the rear axle, m",
                p.pose.antenna_ahead_m.to_string(),
            ),
            kv("stale after, s", p.stale_after().as_secs_f64().to_string()),
            kv("pose held for, s", p.hold_pose.as_secs_f64().to_string()),
            kv("published accuracy, mm", verdict.accuracy_mm().to_string()),
            kv("solutions refused for their stamps", refused.to_string()),
        ];
        crate::interface::publish_status(
            &self.publisher,
            now,
            "GNSS/INS solution",
            (level, text.clone()),
            values,
        );
        self.last = Some((now, text));
    }
}
