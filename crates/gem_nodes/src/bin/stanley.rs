//! `stanley`: the Stanley controller node (see `gem_nodes::controller`).

fn main() -> anyhow::Result<()> {
    gem_nodes::controller::main("stanley", "stanley")
}
