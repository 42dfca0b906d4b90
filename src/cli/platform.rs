use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};

use crate::platform::{template, TEMPLATES};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Scenario: localhost, cluster-gige, cluster-ib, lan-100m, xdsl, grid5000.
    #[arg(short, long, value_name = "NAME")]
    template: Option<String>,
    /// Number of hosts (localhost: its number of cores).
    #[arg(long, default_value_t = 2)]
    hosts: usize,
    /// Where to write the platform; standard output when absent.
    #[arg(short = 'o', long = "out", value_name = "FILE")]
    out: Option<PathBuf>,
    /// List the templates and exit.
    #[arg(long)]
    list: bool,
}

pub fn run(args: Args) -> Result<ExitCode> {
    let Some(name) = args.template.filter(|_| !args.list) else {
        for (n, what) in TEMPLATES {
            println!("{n:<14} {what}");
        }
        return Ok(ExitCode::SUCCESS);
    };
    let xml = template(&name, args.hosts)?;
    match &args.out {
        Some(p) => {
            if let Some(dir) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("{}: cannot create directory", dir.display()))?;
            }
            std::fs::write(p, xml).with_context(|| format!("{}: cannot write", p.display()))?;
        }
        None => print!("{xml}"),
    }
    Ok(ExitCode::SUCCESS)
}
