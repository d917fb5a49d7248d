//! `pure_pursuit`: the pure pursuit controller node (see `gem_nodes::controller`).

fn main() -> anyhow::Result<()> {
    gem_nodes::controller::main("pure_pursuit", "pure_pursuit")
}
