//! `mpicast report FILE -o OUT.html`: the HTML report of a prediction or a sweep.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Result};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// A prediction (mpicast/prediction) or sweep (mpicast/sweep) JSON file.
    input: PathBuf,
    /// The HTML file to write.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: PathBuf,
}

pub fn run(args: Args) -> Result<ExitCode> {
    let _ = (&args.input, &args.output);
    bail!("mpicast report is not built yet")
}
