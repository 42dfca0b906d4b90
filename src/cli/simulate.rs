use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use crate::model::simjob::SimJob;
use crate::model::{read_artifact, write_artifact};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The job (mpicast/simjob JSON).
    #[arg(long)]
    job: PathBuf,
    /// Where to write the outcome (mpicast/simoutcome JSON); stdout when absent.
    #[arg(long)]
    out: Option<PathBuf>,
}

pub fn run(args: Args) -> Result<ExitCode> {
    let job: SimJob = read_artifact(&args.job)?;
    let outcome = crate::sim::job::run_job(&job)?;
    match args.out {
        Some(p) => write_artifact(&p, &outcome)?,
        None => print!("{}", crate::model::to_json(&outcome)),
    }
    Ok(ExitCode::SUCCESS)
}
