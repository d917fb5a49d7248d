//! The `state_manager` node's topics, services and action, declared once: [`INTERFACE`].

use gem_core::names;
use gem_core::state_manager::Input;
use gem_msgs::gem_state_msgs as msg;
use gem_ros::processed;

use gem_ros::topics::Decl;

gem_ros::interface_table! {
    /// Every topic of the node: the planner's status and the sensors in, the verdict and the
    /// acknowledgements out.
    pub const INTERFACE = [
        /// The planner's status.
        PLANNER_STATUS: msg::TaskPlannerStatus = Decl::subscribes(Input::PlannerStatus.topic(), "the task planner's status (a running or paused task makes the state RUNNING)");
        /// Battery charge.
        BATTERY: msg::BatteryLevelStamped = Decl::subscribes(Input::Battery.topic(), "battery charge, 0..1");
        /// The e-stop.
        ESTOP: msg::EstopStamped = Decl::subscribes(Input::Estop.topic(), "e-stop pressed");
        /// GPS accuracy.
        GPS: msg::GpsAccuracyStamped = Decl::subscribes(Input::Gps.topic(), "GPS horizontal accuracy, mm");
        /// Link quality.
        SIGNAL: msg::SignalStrengthStamped = Decl::subscribes(Input::Signal.topic(), "radio link quality");
        /// Temperature.
        TEMPERATURE: msg::TemperatureStamped = Decl::subscribes(Input::Temperature.topic(), "drive-train temperature, °C");
        /// The drive-by-wire's fault, from the vehicle bridge (optional).
        VEHICLE_FAULT: msg::EstopStamped = Decl::subscribes(Input::VehicleFault.topic(), "with `~watch_vehicle_fault`: the drive-by-wire's fault (`pacmod_bridge`); `enabled` raises ESTOP at once, silence STALE_DATA");
        /// The verdict.
        SYSTEM_STATE: msg::SystemStateStamped = Decl::publishes(names::SYSTEM_STATE, 10, "IDLE, RUNNING or ERROR with the error bits, at `~rate` and at once on every change of state or error code");
    ] + [
        processed::PROCESSED.entry().with_doc(
        "with `~publish_processed`: topic (`frame_id`) and stamp of each handled input",
        ),
        processed::READY.entry().with_doc(
        "with `~publish_processed`: the node's name (`frame_id`) and how many inputs it has handled (`seq`), for lockstep drivers and `gemctl replay`",
        ),
    ];
}
