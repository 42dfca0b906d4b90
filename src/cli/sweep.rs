//! `mpicast sweep SRC -n 2,4,...,1024`: predictions at several rank counts and platforms.

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
    bail!("mpicast sweep is not built yet")
}
