use std::process::ExitCode;

use anyhow::Result;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    what: What,
}

#[derive(clap::Subcommand, Debug)]
enum What {
    /// Measure what each op class costs on this host (MTC): writes a machine table.
    Machine(super::bench_machine::Args),
    /// Characterise a network with an MPI ping-pong (CTC): writes a network table and a platform.
    Network(super::bench_network::Args),
}

pub fn run(args: Args) -> Result<ExitCode> {
    match args.what {
        What::Machine(a) => super::bench_machine::run(a),
        What::Network(a) => super::bench_network::run(a),
    }
}
