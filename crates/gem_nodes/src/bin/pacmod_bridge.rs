//! `pacmod_bridge`: drive commands → the PACMod 2 (see `gem_nodes::pacmod_bridge`).

fn main() -> anyhow::Result<()> {
    gem_nodes::pacmod_bridge::main()
}
