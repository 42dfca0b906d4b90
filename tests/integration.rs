//! The integration tests, one test binary (`cargo test --test integration`): they run the real
//! mpicast binary, real SimGrid and real mpicc/mpirun. One module per subject; what several
//! modules need (paths, running mpicast, mpirun with a session directory of its own, scratch
//! directories, the examples' build) is in util.rs. One binary links once, and its tests share
//! the test threads instead of each file's binary running after the last one finished.
//!
//! A module's tests are selected by its name: `cargo test --test integration predict::`.

mod util;

mod cli;
mod examples;
mod frontend;
mod fuzz;
mod instrument;
mod machine;
mod network;
mod p2pdc;
mod predict;
mod replay;
mod report;
mod robustness;
mod scale;
mod sim;
mod trace;
mod validate;
