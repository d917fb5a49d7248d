//! `gem_sim`'s topics and services, each declared once ([`INTERFACE`]).

use gem_core::names;
use gem_msgs::ackermann_msgs::AckermannDrive;
use gem_msgs::gazebo_msgs::{GetModelState, ModelStates, SetModelState};
use gem_msgs::nav_msgs::Odometry;
use gem_msgs::novatel_gps_msgs::{Inspva, Insstdev};
use gem_msgs::pacmod_msgs::{
    GlobalRpt, PacmodCmd, PositionWithSpeed, SystemRptFloat, VehicleSpeedRpt,
};
use gem_msgs::rosgraph_msgs::Clock;
use gem_msgs::sensor_msgs::BatteryState;
use gem_msgs::std_msgs::{Bool, Float64, String as StringMsg};
use gem_msgs::tf2_msgs::TFMessage;
use gem_ros::topics::Decl;

// The PACMod rows (`pacmod`) are the other end of the bridge's (`crate::pacmod_bridge`)
// where the bridge uses the topic: the same names and message types, the other direction.
// Two tables on purpose: each node declares what it does on a topic and describes it in
// its own documentation's interface table. A change to a PACMod topic is made in both.
gem_ros::interface_table! {
    /// Every topic and service of the node.
    pub const INTERFACE = [
        /// The drive commands.
        COMMAND: AckermannDrive = Decl::subscribes(names::ACKERMANN_CMD, "drive commands, each applied on the thread that read it (none dropped in a burst)");
        /// The pose, through the localization model.
        GET_MODEL_STATE: GetModelState = Decl::serves(names::GET_MODEL_STATE, "`model_state` (the default): the pose and twist as localization reports them, stamped with the measurement time; persistent connections accepted; an unknown model: `success: false` and a message. Not served with `inspva`");
        /// Teleport.
        SET_MODEL_STATE: SetModelState = Decl::serves(names::SET_MODEL_STATE, "teleports the car, which stops");
        /// The true state, as Gazebo publishes it.
        MODEL_STATES: ModelStates = Decl::publishes(names::MODEL_STATES, 10, "the true state at `~state_rate`");
        /// The true state, as odometry.
        ODOM: Odometry = Decl::publishes(names::ODOM, 10, "the true state at `~state_rate`, frame `world`, child `base_footprint`");
        /// Sim time, when the simulator owns it.
        CLOCK: Clock = Decl::latched(names::CLOCK, 10, "with `~publish_clock`: sim time after each step");
        /// The car's pose as a transform.
        TF: TFMessage = Decl::publishes(names::TF, 100, "with `~publish_tf`: `world` → `base_footprint`, at `~state_rate`");
        /// The description's fixed joints.
        TF_STATIC: TFMessage = Decl::latched(names::TF_STATIC, 1, "with `~publish_tf`: `base_footprint` → `base_link` → `center_link`, once");
        /// The GNSS/INS solution.
        INSPVA: Inspva = Decl::publishes(names::INSPVA, 10, "`inspva`: the solution of the antenna `~antenna_ahead_m` ahead of the rear axle at `~inspva_rate_hz`, published `~inspva_latency_s` after its measurement and stamped with it: `latitude`, `longitude`, `height` around `~origin_*`, `azimuth` (degrees clockwise from north), the antenna's `east_velocity`, `north_velocity`, `up_velocity`, `roll` and `pitch` 0, `status` `INS_SOLUTION_GOOD` or the one set on `~ins_status`");
        /// The solution's reported deviations.
        INSSTDEV: Insstdev = Decl::publishes(names::INSSTDEV, 10, "`inspva`: with each solution, stamped as it: `latitude_dev` and `longitude_dev` `~inspva_reported_sigma_m`, the other deviations 0");
        /// The simulated BMS.
        BMS: BatteryState = Decl::publishes(names::GEM_BMS, 10, "`pacmod`: the simulated battery management system, `percentage` = `~bms_charge`, at 10 Hz");
        /// The simulated e-stop button.
        ESTOP_BUTTON: Bool = Decl::publishes(names::GEM_ESTOP_BUTTON, 10, "`pacmod`: the simulated hardware e-stop button, released (`false`), at 10 Hz");
        /// The test's INS status.
        INS_STATUS: StringMsg = Decl::subscribes("~ins_status", "`inspva`: a non-empty string (`INS_SOLUTION_FREE`, `INS_ALIGNING`) becomes the solution's `status`, an empty one restores `INS_SOLUTION_GOOD`");
        /// PACMod: engage.
        PACMOD_ENABLE_CMD: Bool = Decl::subscribes(names::PACMOD_ENABLE_CMD, "`pacmod`: `true` enables the PACMod (a fresh one is needed after an override), `false` disables it");
        /// PACMod: accelerator.
        PACMOD_ACCEL_CMD: PacmodCmd = Decl::subscribes(names::PACMOD_ACCEL_CMD, "`pacmod`: accelerator 0–1 (applies in forward only); `clear` clears a released override");
        /// PACMod: brake.
        PACMOD_BRAKE_CMD: PacmodCmd = Decl::subscribes(names::PACMOD_BRAKE_CMD, "`pacmod`: brake 0–1; `clear` clears a released override");
        /// PACMod: gear.
        PACMOD_SHIFT_CMD: PacmodCmd = Decl::subscribes(names::PACMOD_SHIFT_CMD, "`pacmod`: the gear (`ui16_cmd`; starts in neutral, 2); `clear` clears a released override");
        /// PACMod: steering wheel.
        PACMOD_STEER_CMD: PositionWithSpeed = Decl::subscribes(names::PACMOD_STEER_CMD, "`pacmod`: the steering wheel, rad, + left, moved at the command's rate limit (at most `~pacmod_max_wheel_rate_rad_s`)");
        /// PACMod: the test's override.
        PACMOD_OVERRIDE: Bool = Decl::subscribes("~pacmod_override", "`pacmod`: `true` is a driver taking the controls (the PACMod disables and latches `override_active`), `false` letting go");
        /// PACMod: enabled.
        PACMOD_ENABLED: Bool = Decl::publishes(names::PACMOD_ENABLED, 10, "`pacmod`: whether the PACMod is enabled, at `~pacmod_report_rate`");
        /// PACMod: the speed in m/s.
        PACMOD_SPEED: Float64 = Decl::publishes(names::PACMOD_VEHICLE_SPEED, 10, "`pacmod`: the speed, m/s (the mph of `vehicle_speed_rpt` × 0.44704, as the driver computes it), at `~pacmod_report_rate`");
        /// PACMod: the speed in mph.
        PACMOD_SPEED_RPT: VehicleSpeedRpt = Decl::publishes(names::PACMOD_VEHICLE_SPEED_RPT, 10, "`pacmod`: `vehicle_speed` in mph (as the `pacmod2` driver parses it), `vehicle_speed_valid` true, at `~pacmod_report_rate`");
        /// PACMod: the steering wheel.
        PACMOD_STEER_RPT: SystemRptFloat = Decl::publishes(names::PACMOD_STEER_RPT, 10, "`pacmod`: `output` the steering wheel (rad), `command` the last command, `enabled`, `override_active`, at `~pacmod_report_rate`");
        /// The accelerator report.
        PACMOD_ACCEL_RPT: SystemRptFloat = Decl::publishes(names::PACMOD_ACCEL_RPT, 10, "`pacmod`: `command` the last accelerator command, `output` the accelerator that applies (0 while disabled), fractions, at `~pacmod_report_rate`");
        /// The brake report.
        PACMOD_BRAKE_RPT: SystemRptFloat = Decl::publishes(names::PACMOD_BRAKE_RPT, 10, "`pacmod`: `command` the last brake command, `output` the brake that applies (0 while disabled), fractions, at `~pacmod_report_rate`");
        /// PACMod: enabled and override.
        PACMOD_GLOBAL_RPT: GlobalRpt = Decl::publishes(names::PACMOD_GLOBAL_RPT, 10, "`pacmod`: `enabled` and `override_active`, at `~pacmod_report_rate`");
    ];
}
