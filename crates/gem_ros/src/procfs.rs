//! A process's (or thread's) figures from Linux's `/proc`: the scheduling report, the
//! profiler's resource sampler and the tests read the same `stat` fields through here.

use std::collections::HashMap;

/// The fields of a `/proc/<pid>/stat` (or `/proc/<pid>/task/<tid>/stat`) line after the
/// parenthesised command name, which may itself hold spaces and parentheses: index 0 is
/// the state (field 3 of the line in `proc(5)`), index `n` is field `n + 3`.
pub fn stat_fields(stat_file: &str) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(stat_file).ok()?;
    let rest = stat.get(stat.rfind(')')? + 2..)?;
    Some(rest.split_whitespace().map(str::to_owned).collect())
}

/// User plus system CPU time of process `pid` so far, in clock ticks (all its threads).
pub fn cpu_ticks(pid: u32) -> Option<u64> {
    let f = stat_fields(&format!("/proc/{pid}/stat"))?;
    // utime and stime: fields 14 and 15.
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

/// Clock ticks per second (`sysconf(_SC_CLK_TCK)`; 100 if the system does not say).
pub fn ticks_per_second() -> f64 {
    // SAFETY: sysconf only reads a system constant.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// A numeric field (`VmRSS:`, `Threads:`, `voluntary_ctxt_switches:` …) of a
/// `/proc/<pid>/status` (or a thread's) text.
pub fn status_field(status: &str, name: &str) -> Option<u64> {
    status
        .lines()
        .find(|l| l.starts_with(name))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Voluntary context switches of each thread of process `pid` so far, by thread id
/// (`voluntary_ctxt_switches` of `/proc/<pid>/task/<tid>/status`).
///
/// A node's wake-ups are counted as its threads' voluntary switches: a thread switches
/// voluntarily when it goes to sleep (it blocks in a read, an `accept`, a condition
/// variable, a sleep), and each such sleep ends in exactly one wake-up, so over a window
/// the count is the number of times the node was woken. Involuntary switches are not
/// counted: they are preemptions, a thread that wanted to run on being made to wait for
/// another (on a loaded machine, mostly the other load), so they say more of the machine
/// than of the node; the third field of `schedstat` (timeslices run) counts those
/// resumptions too, and depends on the kernel's schedstats. Threads are read one by one
/// because the process's own `status` counts its main thread only.
pub fn voluntary_switches(pid: u32) -> Option<HashMap<u32, u64>> {
    let mut threads = HashMap::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))
        .ok()?
        .flatten()
    {
        let Some(tid) = task.file_name().to_str().and_then(|t| t.parse().ok()) else {
            continue;
        };
        // A thread that ended since the directory was read has no status left.
        if let Ok(status) = std::fs::read_to_string(task.path().join("status")) {
            if let Some(n) = status_field(&status, "voluntary_ctxt_switches:") {
                threads.insert(tid, n);
            }
        }
    }
    Some(threads)
}

/// Wake-ups between two [`voluntary_switches`] readings of one process: what each thread
/// alive at the second reading did since the first (a thread started in between counts
/// whole). A thread that ended in between takes its count with it, so a node that starts
/// and ends threads within the window is counted short.
pub fn wakeups_between(before: &HashMap<u32, u64>, after: &HashMap<u32, u64>) -> u64 {
    after
        .iter()
        .map(|(tid, n)| n.saturating_sub(before.get(tid).copied().unwrap_or(0)))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_start_after_a_command_name_with_spaces_and_parentheses() {
        let dir = std::env::temp_dir().join(format!("gem_procfs_{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("stat");
        std::fs::write(&file, "42 (a (b) c) S 1 2 3 4 5 6 7 8 9 10 11 12 13\n").unwrap();
        let f = stat_fields(file.to_str().unwrap()).unwrap();
        assert_eq!(f[0], "S");
        assert_eq!(f[11], "11");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn this_process_has_cpu_time_and_a_resident_set() {
        let me = std::process::id();
        assert!(cpu_ticks(me).is_some());
        let status = std::fs::read_to_string(format!("/proc/{me}/status")).unwrap();
        assert!(status_field(&status, "VmRSS:").is_some_and(|kib| kib > 0));
        assert!(status_field(&status, "Threads:").is_some_and(|n| n >= 1));
        assert_eq!(status_field(&status, "NoSuchField:"), None);
    }

    #[test]
    fn each_sleep_of_a_thread_is_a_wake_up() {
        let me = std::process::id();
        let before = voluntary_switches(me).unwrap();
        for _ in 0..5 {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let after = voluntary_switches(me).unwrap();
        assert!(wakeups_between(&before, &after) >= 5);
        // A thread gone takes its count with it; one started in between counts whole.
        let earlier: HashMap<u32, u64> = [(1, 5), (2, 7)].into();
        let later: HashMap<u32, u64> = [(1, 9), (3, 2)].into();
        assert_eq!(wakeups_between(&earlier, &later), 4 + 2);
    }
}
