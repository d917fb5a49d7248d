//! `--params FILE`: what a calibration fitted, merged into one rosparam YAML file keyed by
//! node name, for `calibration:=FILE` on the launch command line (`vehicle.launch` loads
//! it before the nodes start). Each command sets only its own keys and keeps the rest, so
//! the pedal maps and the steering relation end up in one file, whichever ran first.
//! Also the atomic write every calibration output goes through.

use anyhow::{anyhow, Context};
pub use gem_nodes::calibration_file::param_name;
use serde_yaml::{Mapping, Value};
use std::path::Path;

/// Sets `node`'s `values` in `file` (created if absent), keeping everything else.
pub fn merge(file: &Path, node: &str, values: &[(&str, Value)]) -> anyhow::Result<()> {
    let mut root = match std::fs::read_to_string(file) {
        Ok(text) if !text.trim().is_empty() => match serde_yaml::from_str::<Value>(&text)
            .with_context(|| format!("{} is not YAML", file.display()))?
        {
            Value::Mapping(m) => m,
            _ => return Err(anyhow!("{} is not a mapping of node names", file.display())),
        },
        Ok(_) => Mapping::new(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Mapping::new(),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", file.display())),
    };
    let key = Value::String(node.to_owned());
    let entry = root
        .entry(key)
        .or_insert_with(|| Value::Mapping(Mapping::new()));
    let Value::Mapping(params) = entry else {
        return Err(anyhow!(
            "{}: `{node}` is not a mapping of parameters",
            file.display()
        ));
    };
    for (k, v) in values {
        params.insert(Value::String((*k).to_owned()), v.clone());
    }
    let text = serde_yaml::to_string(&Value::Mapping(root))?;
    if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    write_atomically(file, &text)
}

/// Writes `text` to `path` atomically (`gem_nodes::calibration_file::write_atomically`),
/// the error naming the file.
pub fn write_atomically(path: &Path, text: &str) -> anyhow::Result<()> {
    gem_nodes::calibration_file::write_atomically(path, text)
        .with_context(|| format!("cannot write {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_command_keeps_the_others_keys() {
        let dir = std::env::temp_dir().join(format!("gemctl_params_{}", std::process::id()));
        let file = dir.join("calibration.yaml");
        let _ = std::fs::remove_file(&file);
        merge(
            &file,
            "pacmod_bridge",
            &[("accelerator_map_file", Value::from("/a.csv"))],
        )
        .unwrap();
        merge(
            &file,
            "pacmod_bridge",
            &[("steering_linear", Value::from(19.8))],
        )
        .unwrap();
        merge(
            &file,
            "gem_sim",
            &[("pacmod_steering_linear", Value::from(19.8))],
        )
        .unwrap();
        merge(
            &file,
            "pacmod_bridge",
            &[("accelerator_map_file", Value::from("/b.csv"))],
        )
        .unwrap();
        let v: Value = serde_yaml::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(
            v["pacmod_bridge"]["accelerator_map_file"],
            Value::from("/b.csv")
        );
        assert_eq!(v["pacmod_bridge"]["steering_linear"], Value::from(19.8));
        assert_eq!(v["gem_sim"]["pacmod_steering_linear"], Value::from(19.8));
        std::fs::write(&file, "- a list\n").unwrap();
        let e = merge(&file, "x", &[]).unwrap_err();
        assert!(
            e.to_string().ends_with("is not a mapping of node names"),
            "{e}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
