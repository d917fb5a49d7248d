//! `status_overlay`: the suite status as an RViz overlay (see `gem_nodes::overlay`).

fn main() -> anyhow::Result<()> {
    gem_nodes::overlay::main()
}
