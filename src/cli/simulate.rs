use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use crate::model::simjob::SimJob;
use crate::model::trace::ReplayJob;
use crate::model::{read_artifact, write_artifact};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The job (mpicast/simjob JSON).
    #[arg(long, required_unless_present = "replay", conflicts_with = "replay")]
    job: Option<PathBuf>,
    /// A replay job (mpicast/replayjob JSON) instead.
    #[arg(long)]
    replay: Option<PathBuf>,
    /// Where to write the outcome (mpicast/simoutcome or mpicast/replay JSON); stdout when absent.
    #[arg(long)]
    out: Option<PathBuf>,
}

pub fn run(args: Args) -> Result<ExitCode> {
    if let Some(replay) = &args.replay {
        let job: ReplayJob = read_artifact(replay)?;
        let result = if job.options.analytic {
            crate::sim::analytic::run_analytic(&job)?
        } else {
            crate::sim::replay::run_replay(&job)?
        };
        match args.out {
            Some(p) => write_artifact(&p, &result)?,
            None => print!("{}", crate::model::to_json(&result)),
        }
        return Ok(ExitCode::SUCCESS);
    }
    let job: SimJob = read_artifact(
        args.job
            .as_deref()
            .expect("clap requires --job or --replay"),
    )?;
    let outcome = crate::sim::job::run_job(&job)?;
    match args.out {
        Some(p) => write_artifact(&p, &outcome)?,
        None => print!("{}", crate::model::to_json(&outcome)),
    }
    Ok(ExitCode::SUCCESS)
}
