//! ROS 1 name resolution: how a node's relative, private and absolute names map to graph
//! names, remappings included.

use crate::RosError;

/// Resolves `name` for node `node` (its full name) as ROS 1 does: `/abs` stays, `~priv`
/// goes under the node's name, `rel` under the node's namespace; then a `from:=to`
/// remapping in `args` whose resolved `from` matches applies (its `to` resolved alike).
pub fn resolve(node: &str, name: &str, args: &[String]) -> Result<String, RosError> {
    let base = |n: &str| -> Result<String, RosError> {
        let bad = || RosError::new(format!("{n:?} is not a valid ROS name"));
        let valid = !n.is_empty()
            && n.trim_start_matches(['/', '~']).split('/').all(|part| {
                !part.is_empty() && part.chars().all(|c| c.is_alphanumeric() || c == '_')
            });
        if !valid {
            return Err(bad());
        }
        Ok(if n.starts_with('/') {
            n.to_owned()
        } else if let Some(private) = n.strip_prefix('~') {
            format!("{}/{private}", node.trim_end_matches('/'))
        } else {
            let ns = node.rsplit_once('/').map_or("", |(ns, _)| ns);
            format!("{ns}/{n}")
        })
    };
    let resolved = base(name)?;
    for arg in args {
        let Some((from, to)) = arg.split_once(":=") else {
            continue;
        };
        if from.starts_with('_') || base(from).ok().as_deref() != Some(resolved.as_str()) {
            continue;
        }
        return base(to);
    }
    Ok(resolved)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_resolve_like_ros() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let none = args(&[]);
        assert_eq!(resolve("/sm", "estop", &none).unwrap(), "/estop");
        assert_eq!(resolve("/ns/sm", "estop", &none).unwrap(), "/ns/estop");
        assert_eq!(resolve("/ns/sm", "/estop", &none).unwrap(), "/estop");
        assert_eq!(resolve("/ns/sm", "~in", &none).unwrap(), "/ns/sm/in");
        assert_eq!(resolve("/ns/sm", "a/b", &none).unwrap(), "/ns/a/b");
        let remaps = args(&[
            "_rate:=3",
            "__ns:=/ns",
            "estop:=/hw/estop",
            "/ns/gps:=other",
        ]);
        assert_eq!(resolve("/ns/sm", "estop", &remaps).unwrap(), "/hw/estop");
        assert_eq!(resolve("/ns/sm", "gps", &remaps).unwrap(), "/ns/other");
        assert_eq!(resolve("/ns/sm", "rate", &remaps).unwrap(), "/ns/rate");
        for bad in ["", "a b", "a//b", "/"] {
            assert!(resolve("/sm", bad, &none).is_err(), "{bad:?}");
        }
    }
}
