//! mpicast: predicts the run time of C/MPI programs. See docs/ARCHITECTURE.md for the map.

#![deny(unsafe_code)]

pub mod cli;
pub mod frontend;
pub mod instrument;
pub mod machine;
pub mod network;
pub mod objcode;
pub mod platform;
pub mod predict;
pub mod report;
pub mod scale;
pub mod model;
pub mod mpi;
pub mod sim;
pub mod trace;
pub mod validate;
