//! Simulation through SimGrid: the bindings (ffi), their safe wrappers (engine), the in-process
//! job runner (job) and the child-process driver (child). The only module with unsafe code.

#![allow(unsafe_code)]

mod ffi;

pub mod child;
pub mod engine;
pub mod job;
