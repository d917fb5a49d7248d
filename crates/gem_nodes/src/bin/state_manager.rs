//! `state_manager`: input signals → `/system_state` (see `gem_nodes::state_manager`).

fn main() -> anyhow::Result<()> {
    gem_nodes::state_manager::main()
}
