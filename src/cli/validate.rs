//! `mpicast validate SRC -n 1,2,4`: real runs against predictions in every mode.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Result};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Source files or directories of the program.
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
}

pub fn run(args: Args) -> Result<ExitCode> {
    let _ = &args.inputs;
    bail!("mpicast validate is not built yet")
}
