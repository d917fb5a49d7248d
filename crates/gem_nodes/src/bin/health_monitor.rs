//! `health_monitor`: any topic, any type, on /diagnostics (see `gem_nodes::health_monitor`).

fn main() -> anyhow::Result<()> {
    gem_nodes::health_monitor::main()
}
