//! Conversions between message types and core types (the core never sees a message).

use crate::time::to_core;
use gem_core::gnss::source::Solution;
use gem_core::state_manager::{ErrorBits, SystemState};
use gem_core::time::Time;
use gem_msgs::gem_state_msgs::SystemStateStamped;
use gem_msgs::novatel_gps_msgs::Inspva;
use gem_msgs::std_msgs::Header;

/// The core time of a message header's stamp (zero stays zero: the core decides).
pub fn stamp(header: &Header) -> Time {
    to_core(header.stamp)
}

/// The solution of a NovAtel `INSPVA` message: the antenna's position, heading (azimuth)
/// and east/north velocity with the receiver's status, stamped with the measurement time.
/// It gives no yaw rate and no position sigma (the pose source estimates the one and
/// judges the fix by its status).
pub fn inspva_solution(m: &Inspva) -> Solution {
    Solution {
        stamp: stamp(&m.header),
        status: m.status.clone(),
        lat_deg: m.latitude,
        lon_deg: m.longitude,
        azimuth_deg: m.azimuth,
        velocity_en_mps: Some([m.east_velocity, m.north_velocity]),
        yaw_rate_rad_s: None,
        horizontal_sigma_m: None,
    }
}

/// A `SystemStateStamped` for `state` and `errors`, stamped `now`.
pub fn system_state(state: SystemState, errors: ErrorBits, now: Time) -> SystemStateStamped {
    SystemStateStamped {
        header: Header {
            seq: 0,
            stamp: crate::time::to_ros(now),
            frame_id: String::new(),
        },
        error_code: errors.bits(),
        state: state.as_u8(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_state_carries_the_wire_values() {
        let m = system_state(
            SystemState::Error,
            ErrorBits::ESTOP,
            Time::from_sec_nsec(5, 7),
        );
        assert_eq!(m.state, SystemStateStamped::STATE_ERROR);
        assert_eq!(m.error_code, SystemStateStamped::ERROR_ESTOP);
        assert_eq!((m.header.stamp.sec, m.header.stamp.nsec), (5, 7));
    }

    #[test]
    fn core_error_bits_match_the_message_constants() {
        type S = SystemStateStamped;
        let pairs = [
            (ErrorBits::BATTERY_LOW, S::ERROR_BATTERY_LOW),
            (ErrorBits::ESTOP, S::ERROR_ESTOP),
            (ErrorBits::GPS_LOST, S::ERROR_GPS_LOST),
            (ErrorBits::SIGNAL_LOST, S::ERROR_SIGNAL_LOST),
            (ErrorBits::SIGNAL_LOW, S::ERROR_SIGNAL_LOW),
            (ErrorBits::TEMPERATURE_HIGH, S::ERROR_TEMPERATURE_HIGH),
            (ErrorBits::STALE_DATA, S::ERROR_STALE_DATA),
        ];
        for (core, wire) in pairs {
            assert_eq!(core.bits(), wire);
        }
        assert_eq!(SystemState::Idle.as_u8(), S::STATE_IDLE);
        assert_eq!(SystemState::Running.as_u8(), S::STATE_RUNNING);
        assert_eq!(SystemState::Error.as_u8(), S::STATE_ERROR);
    }
}
