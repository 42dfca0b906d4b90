//! `mpicast trace` (being built).

use std::process::ExitCode;

use anyhow::{bail, Result};

#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(_args: Args) -> Result<ExitCode> {
    bail!("trace: not built yet")
}
