//! Real-time scheduling (`SCHED_FIFO`) for the nodes on the fault chain.
//!
//! On a busy machine a normally scheduled thread that becomes runnable waits for the
//! time slices of everything else runnable on its CPU; a `SCHED_FIFO` thread preempts
//! them at once. The state manager and the controller's safety gate are the reason a fault
//! stops the car, so `integration_run.launch` gives them a real-time priority through
//! [`ENV`]. It needs root, `CAP_SYS_NICE` or an `rtprio` limit; without it the node runs
//! normally and says so. The kernel's real-time throttling (by default 5 % of every
//! second stays with normal threads) bounds what a runaway thread could take.

/// The environment variable naming a node's `SCHED_FIFO` priority (1–99); unset, empty
/// or `0`: normal scheduling.
pub const ENV: &str = "GEM_RT_PRIORITY";

/// What [`from_env`] did.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Not requested.
    Normal,
    /// Every thread of the process runs at `SCHED_FIFO` with this priority.
    Fifo(i32),
}

/// Reads a priority: `None` or `""` or `"0"` → 0 (off), `"1"`–`"99"` → that.
pub fn parse_priority(value: Option<&str>) -> Result<i32, String> {
    let text = value.unwrap_or("").trim();
    if text.is_empty() {
        return Ok(0);
    }
    match text.parse::<i32>() {
        Ok(p) if (0..=99).contains(&p) => Ok(p),
        _ => Err(format!(
            "{ENV}={text:?} is not a SCHED_FIFO priority (0 for normal scheduling, or 1–99)"
        )),
    }
}

/// Applies [`ENV`] to every thread of the process (threads started later inherit it).
/// Call it early, before the node starts its threads.
pub fn from_env() -> Result<Outcome, String> {
    let priority = parse_priority(std::env::var(ENV).ok().as_deref())?;
    if priority == 0 {
        return Ok(Outcome::Normal);
    }
    set_fifo(priority).map(|_| Outcome::Fifo(priority))
}

/// Puts every thread of this process at `SCHED_FIFO` `priority`, with reset-on-fork so
/// programs it starts run normally; returns how many threads were set.
pub fn set_fifo(priority: i32) -> Result<usize, String> {
    let tasks =
        std::fs::read_dir("/proc/self/task").map_err(|e| format!("/proc/self/task: {e}"))?;
    let param = libc::sched_param {
        sched_priority: priority,
    };
    let mut set = 0;
    for tid in tasks
        .flatten()
        .filter_map(|t| t.file_name().to_str()?.parse().ok())
    {
        // SAFETY: sched_setscheduler reads `param` during the call only; a thread that
        // ended since it was listed makes the call fail with ESRCH, which is skipped.
        let rc = unsafe {
            libc::sched_setscheduler(tid, libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK, &param)
        };
        if rc == 0 {
            set += 1;
            continue;
        }
        let err = std::io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::ESRCH) {
            return Err(format!(
                "SCHED_FIFO {priority} refused ({err}): needs root, CAP_SYS_NICE or an \
                 rtprio limit (ulimit -r)"
            ));
        }
    }
    Ok(set)
}

/// The scheduling policy of process `pid`'s main thread, as `chrt -p` names it, and its
/// real-time priority (0 for normal policies); from `/proc/<pid>/stat`.
pub fn policy_of(pid: u32) -> Option<(&'static str, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the parenthesised command name: rt_priority and policy are fields 40
    // and 41 of the whole line, 38 and 39 here (0-based 37, 38).
    let f: Vec<&str> = stat[stat.rfind(')')? + 2..].split_whitespace().collect();
    let rt_priority = f.get(37)?.parse().ok()?;
    let name = match f.get(38)?.parse::<i32>().ok()? {
        libc::SCHED_OTHER => "SCHED_OTHER",
        libc::SCHED_FIFO => "SCHED_FIFO",
        libc::SCHED_RR => "SCHED_RR",
        libc::SCHED_BATCH => "SCHED_BATCH",
        libc::SCHED_IDLE => "SCHED_IDLE",
        _ => "other",
    };
    Some((name, rt_priority))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priorities_parse_and_bad_ones_are_named() {
        assert_eq!(parse_priority(None), Ok(0));
        assert_eq!(parse_priority(Some(" ")), Ok(0));
        assert_eq!(parse_priority(Some("20")), Ok(20));
        for bad in ["-1", "100", "high", "2.5"] {
            let e = parse_priority(Some(bad)).unwrap_err();
            assert!(e.contains(ENV) && e.contains(bad), "{e}");
        }
    }

    #[test]
    fn this_process_reads_as_normally_scheduled() {
        assert_eq!(policy_of(std::process::id()), Some(("SCHED_OTHER", 0)));
    }
}
