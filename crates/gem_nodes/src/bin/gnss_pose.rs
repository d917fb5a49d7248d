//! `gnss_pose`: the rear axle's pose from a GNSS/INS, served as `gazebo/get_model_state` (see `gem_nodes::gnss_pose`).

fn main() -> anyhow::Result<()> {
    gem_nodes::gnss_pose::main()
}
