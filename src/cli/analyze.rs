//! `mpicast analyze SRC`: the analysis (blocks, op counts, execution counts) as a tree, a
//! summary or the mpicast/analysis JSON.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;


#[derive(clap::Args, Debug)]
pub struct Args {
    /// Source files or directories (searched recursively for .c .h .cc .cpp .cxx .hpp).
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    #[command(flatten)]
    build: super::flags::BuildArgs,
    /// Count data-dependent branches as taken half the time instead of asking for a trace.
    #[arg(long)]
    assume_branches: bool,
    /// Write the ProgramModel (mpicast/analysis JSON) to FILE, `-` for stdout.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Print only the summary: blocks, the fraction counted statically, per file.
    #[arg(long)]
    summary: bool,
    /// Ops from the compiled code: build the program with -g and count, per block, the
    /// instructions the compiler emitted (vectorised, hoisted, inlined) instead of the source's
    /// operators.
    #[arg(long)]
    compiled: bool,
}

pub fn run(args: Args) -> Result<ExitCode> {
    let spec = args.build.spec(&args.inputs)?;
    let analysed = crate::predict::session::analyse(&args.inputs, &spec, args.assume_branches)?;
    let (files, mut model) = (analysed.files, analysed.model);
    if args.compiled {
        match crate::objcode::build_debug(&files, &spec)? {
            Some(exe) => {
                let c = crate::objcode::compiled_ops(&model, &exe)?;
                eprintln!("mpicast: {}", c.summary());
                model = c.apply(&model, None, None, 1.0, 1.0);
            }
            None => eprintln!("mpicast: --compiled: a --build command is not rebuilt with -g; ops from the source"),
        }
    }
    if super::json_out(args.json.as_deref(), &model)? {
        return Ok(ExitCode::SUCCESS);
    }
    if args.summary {
        print!("{}", crate::report::analysis_summary(&model));
    } else {
        print!("{}", crate::report::analysis_tree(&model));
    }
    for d in &model.diagnostics {
        eprintln!("mpicast: {}:{}: {}", d.file, d.line, d.message);
    }
    Ok(ExitCode::SUCCESS)
}
