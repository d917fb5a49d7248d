//! `rosmsg_include!` reads the .msg files while the macro expands; Cargo does not know about
//! them, so tell it to re-run (and re-expand) when a vendored definition changes.
fn main() {
    println!("cargo:rerun-if-changed=../../msg/std");
    println!("cargo:rerun-if-env-changed=ROSRUST_MSG_PATH");
    println!("cargo:rerun-if-env-changed=CMAKE_PREFIX_PATH");
}
