//! The ROS names the suite's programs share: one home for every topic, service and action
//! that more than one program (a node, `gemctl`, a benchmark) uses.
//!
//! Each relative name comes twice from one literal: as the nodes use it (`SYSTEM_STATE`,
//! `system_state`, resolved in the node's namespace and open to remapping) and as the
//! launch files put it, in the root namespace, where tools that watch or record the suite
//! find it ([`global::SYSTEM_STATE`], `/system_state`). An action's name comes with its five
//! topics ([`navigate_waypoints::FEEDBACK`], [`global::navigate_waypoints::FEEDBACK`]).
//! Names that are absolute in ROS itself (`/clock`, `/tf`) have one form.
//!
//! What each node does on these names, with which type, is declared in the node's
//! interface table (`gem_nodes`, see `gem_ros::topics`).

/// Declares relative topic and service names, relative action names with their topics, and
/// the `global` module that holds each of them in the root namespace.
macro_rules! names {
    (
        relative { $( $(#[doc = $doc:literal])+ $name:ident = $text:literal; )* }
        actions { $( $(#[doc = $adoc:literal])+ $action:ident, $module:ident = $atext:literal; )* }
    ) => {
        $(
            $(#[doc = $doc])+
            pub const $name: &str = $text;
        )*
        $(
            $(#[doc = $adoc])+
            pub const $action: &str = $atext;

            #[doc = concat!("The topics of the `", $atext, "` action, relative.")]
            pub mod $module {
                names!(@action_topics "", $atext);
            }
        )*

        /// The same names in the root namespace, where the launch files run the suite.
        pub mod global {
            $(
                #[doc = concat!("`/", $text, "`: [`super::", stringify!($name), "`] in the root namespace.")]
                pub const $name: &str = concat!("/", $text);
            )*
            $(
                #[doc = concat!("`/", $atext, "`: [`super::", stringify!($action), "`] in the root namespace.")]
                pub const $action: &str = concat!("/", $atext);

                #[doc = concat!("The topics of the `/", $atext, "` action.")]
                pub mod $module {
                    names!(@action_topics "/", $atext);
                }
            )*
        }
    };
    (@action_topics $prefix:literal, $atext:literal) => {
        /// Goals, client to server.
        pub const GOAL: &str = concat!($prefix, $atext, "/goal");
        /// Cancel requests, client to server.
        pub const CANCEL: &str = concat!($prefix, $atext, "/cancel");
        /// The server's goal statuses.
        pub const STATUS: &str = concat!($prefix, $atext, "/status");
        /// The server's feedback.
        pub const FEEDBACK: &str = concat!($prefix, $atext, "/feedback");
        /// The server's results.
        pub const RESULT: &str = concat!($prefix, $atext, "/result");
    };
}

names! {
    relative {
        /// The state manager's verdict: IDLE, RUNNING or ERROR with its error bits.
        SYSTEM_STATE = "system_state";
        /// The task planner's status, an input of the state manager.
        TASK_PLANNER_STATUS = "task_planner_status";
        /// Battery charge (0..1), an input of the state manager.
        BATTERY_LEVEL = "battery_level";
        /// The e-stop button, an input of the state manager.
        ESTOP = "estop";
        /// GPS horizontal accuracy (mm), an input of the state manager.
        GPS_ACCURACY = "gps_accuracy";
        /// Radio link quality, an input of the state manager.
        SIGNAL_STRENGTH = "signal_strength";
        /// Drive-train temperature (°C), an input of the state manager.
        TEMPERATURE = "temperature";
        /// The controllers' drive commands to the vehicle.
        ACKERMANN_CMD = "gem/ackermann_cmd";
        /// The vehicle's odometry (true state, rear axle).
        ODOM = "gem/base_footprint/odom";
        /// Gazebo's model states (true state).
        MODEL_STATES = "gazebo/model_states";
        /// Gazebo's pose service, which the controllers ask every tick.
        GET_MODEL_STATE = "gazebo/get_model_state";
        /// Gazebo's teleport service.
        SET_MODEL_STATE = "gazebo/set_model_state";
        /// The task planner's service that serves a waypoint file.
        SERVE_WAYPOINTS = "serve_waypoints";
        /// The task planner's service that drops the task.
        CANCEL_TASKS = "cancel_tasks";
        /// A Novatel GNSS/INS's position, velocity and attitude (`novatel_gps_msgs/Inspva`).
        INSPVA = "novatel/inspva";
        /// A Novatel GNSS/INS's standard deviations (`novatel_gps_msgs/Insstdev`).
        INSSTDEV = "novatel/insstdev";
        /// A GNSS receiver's fix (`sensor_msgs/NavSatFix`).
        GNSS_FIX = "gnss/fix";
        /// An IMU's orientation and rates (`sensor_msgs/Imu`).
        IMU = "imu/data";
        /// pacmod_bridge's engage service (`~enable` of the node `pacmod_bridge`), which
        /// signal_sources calls on the operator's signed engage request.
        PACMOD_BRIDGE_ENABLE = "pacmod_bridge/enable";
        /// PACMod 2 driver input: engage (`std_msgs/Bool`).
        PACMOD_ENABLE_CMD = "pacmod/as_rx/enable";
        /// PACMod 2 driver input: the accelerator pedal (`PacmodCmd.f64_cmd`, fraction 0–1).
        PACMOD_ACCEL_CMD = "pacmod/as_rx/accel_cmd";
        /// PACMod 2 driver input: the brake pedal (`PacmodCmd.f64_cmd`, fraction 0–1).
        PACMOD_BRAKE_CMD = "pacmod/as_rx/brake_cmd";
        /// PACMod 2 driver input: the gear (`PacmodCmd.ui16_cmd`, `SHIFT_FORWARD` = 3).
        PACMOD_SHIFT_CMD = "pacmod/as_rx/shift_cmd";
        /// PACMod 2 driver input: the turn signal (`PacmodCmd.ui16_cmd`).
        PACMOD_TURN_CMD = "pacmod/as_rx/turn_cmd";
        /// PACMod 2 driver input: the steering wheel (`PositionWithSpeed`, rad, + left).
        PACMOD_STEER_CMD = "pacmod/as_rx/steer_cmd";
        /// PACMod 2 driver output: whether the PACMod is enabled (`std_msgs/Bool`).
        PACMOD_ENABLED = "pacmod/as_tx/enable";
        /// PACMod 2 driver output: the vehicle speed in m/s (`std_msgs/Float64`, the parsed
        /// report's mph × 0.44704).
        PACMOD_VEHICLE_SPEED = "pacmod/as_tx/vehicle_speed";
        /// PACMod 2 driver output: the parsed speed report (`VehicleSpeedRpt`, in mph).
        PACMOD_VEHICLE_SPEED_RPT = "pacmod/parsed_tx/vehicle_speed_rpt";
        /// PACMod 2 driver output: the steering report (`SystemRptFloat`, steering wheel, rad).
        PACMOD_STEER_RPT = "pacmod/parsed_tx/steer_rpt";
        /// PACMod 2 driver output: the accelerator report (`SystemRptFloat`: `command`,
        /// `output`, fractions 0–1).
        PACMOD_ACCEL_RPT = "pacmod/parsed_tx/accel_rpt";
        /// PACMod 2 driver output: the brake report (`SystemRptFloat`: `command`, `output`,
        /// fractions 0–1).
        PACMOD_BRAKE_RPT = "pacmod/parsed_tx/brake_rpt";
        /// PACMod 2 driver output: the global report (`GlobalRpt`, with `override_active`).
        PACMOD_GLOBAL_RPT = "pacmod/parsed_tx/global_rpt";
        /// The vehicle bridge's stop request: set while it brakes the car or has stopped
        /// commanding it (a fault), for the state manager.
        VEHICLE_FAULT = "vehicle/fault";
        /// The car's battery management system (`sensor_msgs/BatteryState`, `percentage`
        /// 0–1), as `gem_e2_sim` simulates it; the GEM e2 sources file reads it there
        /// (the team sets its own BMS topic).
        GEM_BMS = "gem/bms";
        /// The car's hardware e-stop button (`std_msgs/Bool`, true = pressed), as
        /// `gem_e2_sim` simulates it; the GEM e2 sources file reads it there.
        GEM_ESTOP_BUTTON = "gem/estop_button";
    }
    actions {
        /// The controllers' action: drive along waypoints.
        NAVIGATE_WAYPOINTS, navigate_waypoints = "navigate_waypoints";
    }
}

/// ROS time under sim time (absolute in ROS itself).
pub const CLOCK: &str = "/clock";
/// Transforms.
pub const TF: &str = "/tf";
/// Fixed transforms (latched).
pub const TF_STATIC: &str = "/tf_static";
/// Diagnostic statuses.
pub const DIAGNOSTICS: &str = "/diagnostics";
/// Where consumers report to a replayer how many inputs they have handled.
pub const REPLAY_READY: &str = "/replay/ready";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn global_names_are_the_relative_ones_in_the_root_namespace() {
        assert_eq!(global::SYSTEM_STATE, "/system_state");
        assert_eq!(global::ACKERMANN_CMD, "/gem/ackermann_cmd");
        assert_eq!(navigate_waypoints::FEEDBACK, "navigate_waypoints/feedback");
        assert_eq!(global::navigate_waypoints::GOAL, "/navigate_waypoints/goal");
    }
}
