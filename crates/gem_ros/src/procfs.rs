//! A process's (or thread's) figures from Linux's `/proc`: the scheduling report, the
//! profiler's resource sampler and the tests read the same `stat` fields through here.

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
}
