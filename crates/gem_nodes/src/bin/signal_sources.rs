//! `signal_sources`: the state manager's battery, temperature, signal and e-stop inputs from
//! the sources a YAML file declares (see `gem_nodes::signal_sources`).

fn main() -> anyhow::Result<()> {
    gem_nodes::signal_sources::main()
}
