//! `task_planner`: the task planner node (see `gem_nodes::planner`).

fn main() -> anyhow::Result<()> {
    gem_nodes::planner::main()
}
