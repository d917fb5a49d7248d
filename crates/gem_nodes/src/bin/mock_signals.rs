//! `mock_signals`: reconfigurable stand-ins for the five input signals (see `gem_nodes::mock_signals`).

fn main() -> anyhow::Result<()> {
    gem_nodes::mock_signals::main()
}
