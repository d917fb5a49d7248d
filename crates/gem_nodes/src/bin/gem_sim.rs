//! `gem_sim`: headless GEM e2 simulator node (see `gem_nodes::sim`).

fn main() -> anyhow::Result<()> {
    gem_nodes::sim::main()
}
