//! Real-time scheduling (`SCHED_FIFO`) for the nodes on the fault chain.
//!
//! On a busy machine a normally scheduled thread that becomes runnable waits for the
//! time slices of everything else runnable on its CPU; a `SCHED_FIFO` thread preempts
//! them at once. `integration_run.launch` (`rt_priority`) gives the nodes a fault travels
//! through a real-time priority through [`ENV`]: the signal sources highest (a message
//! reaches all its subscribers before any of them runs), then the state manager and the
//! controller's safety gate, then the planner. It needs root, `CAP_SYS_NICE` or an
//! `rtprio` limit; without it the node runs normally and says so. The kernel's real-time
//! throttling (by default 5 % of every second stays with normal threads) bounds what a
//! runaway thread could take.

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

/// Puts every thread of this process at `SCHED_FIFO` `priority`; returns how many threads
/// were set. Threads started later inherit the policy (they must: the runtime and
/// [`ros1_protocols::direct`] start a thread per link, and those threads carry the fault chain).
/// Not set with `SCHED_RESET_ON_FORK`: the kernel applies that flag to new threads as
/// well as to new processes, which would leave every later thread normally scheduled.
/// Programs the process starts afterwards should go through [`run_normally`].
pub fn set_fifo(priority: i32) -> Result<usize, String> {
    let tasks =
        std::fs::read_dir("/proc/self/task").map_err(|e| format!("/proc/self/task: {e}"))?;
    let mut set = 0;
    for tid in tasks
        .flatten()
        .filter_map(|t| t.file_name().to_str()?.parse().ok())
    {
        match set_thread_fifo(tid, priority) {
            Ok(()) => set += 1,
            // A thread that ended since it was listed is skipped.
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
            Err(e) => return Err(fifo_refused(priority, &e)),
        }
    }
    Ok(set)
}

/// Puts the thread `tid` (0: the calling thread) at `SCHED_FIFO` `priority`.
pub fn set_thread_fifo(tid: libc::pid_t, priority: i32) -> std::io::Result<()> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: sched_setscheduler reads `param` during the call only.
    match unsafe { libc::sched_setscheduler(tid, libc::SCHED_FIFO, &param) } {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}

/// What to tell the user when the kernel refused `SCHED_FIFO` `priority`.
pub fn fifo_refused(priority: i32, err: &std::io::Error) -> String {
    format!(
        "SCHED_FIFO {priority} refused ({err}): needs root, CAP_SYS_NICE or an rtprio limit \
         (ulimit -r)"
    )
}

/// Makes a program started through `cmd` run at normal scheduling and nice 0, whatever
/// this process runs at ([`set_fifo`] or a raised nice value are inherited otherwise).
pub fn run_normally(cmd: &mut std::process::Command) -> &mut std::process::Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: between fork and exec the closure only makes two async-signal-safe system
    // calls on the child itself and allocates nothing.
    unsafe {
        cmd.pre_exec(|| {
            // Leaving SCHED_FIFO and raising a negative nice value to 0 need no privilege.
            let param = libc::sched_param { sched_priority: 0 };
            if libc::sched_setscheduler(0, libc::SCHED_OTHER, &param) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::getpriority(libc::PRIO_PROCESS, 0) < 0
                && libc::setpriority(libc::PRIO_PROCESS, 0, 0) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    }
}

/// The scheduling policy of process `pid`'s main thread, as `chrt -p` names it, and its
/// real-time priority (0 for normal policies); from `/proc/<pid>/stat`.
pub fn policy_of(pid: u32) -> Option<(&'static str, u32)> {
    policy_in(&format!("/proc/{pid}/stat"))
}

/// [`policy_of`] for every thread of process `pid`, in `/proc/<pid>/task` order.
pub fn thread_policies(pid: u32) -> Vec<(&'static str, u32)> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|t| policy_in(&format!("{}/stat", t.path().display())))
        .collect()
}

/// How process `pid`'s threads are scheduled, for a report: `SCHED_OTHER` or
/// `SCHED_FIFO 20` when every thread runs so, else each policy with its thread count.
pub fn describe(pid: u32) -> String {
    let mut counts: Vec<((&str, u32), usize)> = Vec::new();
    for p in thread_policies(pid) {
        match counts.iter_mut().find(|(q, _)| *q == p) {
            Some((_, n)) => *n += 1,
            None => counts.push((p, 1)),
        }
    }
    let name = |(policy, priority): (&str, u32)| match priority {
        0 => policy.to_string(),
        p => format!("{policy} {p}"),
    };
    match counts.as_slice() {
        [] => "unknown".into(),
        [(p, _)] => name(*p),
        many => format!(
            "mixed ({})",
            many.iter()
                .map(|(p, n)| {
                    let threads = if *n == 1 { "thread" } else { "threads" };
                    format!("{n} {threads} {}", name(*p))
                })
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn policy_in(stat_file: &str) -> Option<(&'static str, u32)> {
    let f = crate::procfs::stat_fields(stat_file)?;
    // rt_priority and policy: fields 40 and 41.
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
    fn programs_started_through_run_normally_leave_sched_fifo_behind() {
        // On a thread of its own, so the other tests keep normal scheduling.
        std::thread::spawn(|| {
            let param = libc::sched_param { sched_priority: 1 };
            // SAFETY: changes only this (the calling) thread's policy.
            let granted = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } == 0;
            let policy_of_child = |cmd: &mut std::process::Command| {
                let mut child = cmd.arg("30").spawn().expect("sleep runs");
                let policy = policy_of(child.id());
                child.kill().ok();
                child.wait().ok();
                policy
            };
            let plain = policy_of_child(&mut std::process::Command::new("sleep"));
            let normal = policy_of_child(run_normally(&mut std::process::Command::new("sleep")));
            assert_eq!(normal, Some(("SCHED_OTHER", 0)));
            if granted {
                // Without it the program inherits the thread's policy.
                assert_eq!(plain, Some(("SCHED_FIFO", 1)));
                let here = describe(std::process::id());
                assert!(
                    here.starts_with("mixed (") && here.contains("1 thread SCHED_FIFO 1"),
                    "{here}"
                );
                let param = libc::sched_param { sched_priority: 0 };
                // SAFETY: as above.
                unsafe { libc::sched_setscheduler(0, libc::SCHED_OTHER, &param) };
            } else {
                assert_eq!(plain, Some(("SCHED_OTHER", 0)));
            }
        })
        .join()
        .unwrap();
    }

    #[test]
    fn this_process_reads_as_normally_scheduled() {
        assert_eq!(policy_of(std::process::id()), Some(("SCHED_OTHER", 0)));
        let threads = thread_policies(std::process::id());
        assert!(!threads.is_empty());
        // Another test may hold one of this process's threads at SCHED_FIFO for a moment.
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        assert_eq!(describe(child.id()), "SCHED_OTHER");
        child.kill().ok();
        child.wait().ok();
        assert_eq!(describe(u32::MAX), "unknown");
    }
}
