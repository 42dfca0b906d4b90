//! Flag groups shared by the subcommands that build or run the user's program (analyze, trace,
//! predict, sweep, validate): one spelling and one meaning everywhere.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};

use crate::mpi::build::{split_words, BuildSpec, CompileCommands, Define};
use crate::mpi::launch::LaunchSpec;

/// How the program is built, and the macros the analysis sees.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct BuildArgs {
    /// Build command, run with `sh -c` in a copy of the source tree (make, cmake --build, a
    /// script); the mpicc and mpicxx it finds first on its PATH add -D/-I/--cflags (and the
    /// trace runtime when tracing) [default: mpicc -O2 (mpicxx for C++) on every source].
    #[arg(long = "build", value_name = "CMD")]
    pub command: Option<String>,
    /// The executable the --build command makes, relative to the source directory [default:
    /// the one new executable it makes].
    #[arg(long, value_name = "PATH", requires = "command")]
    pub exe: Option<PathBuf>,
    /// Extra compiler flags (after -O2) for every compile.
    #[arg(long, value_name = "FLAGS", allow_hyphen_values = true)]
    pub cflags: Option<String>,
    /// Libraries for the default build's link.
    #[arg(long, value_name = "LIBS", allow_hyphen_values = true, default_value = "-lm")]
    pub libs: String,
    /// Define a macro as a C compiler does (NAME alone is 1) for every build and for the
    /// analysis; a numeric value also binds the program variable NAME (repeatable).
    #[arg(short = 'D', value_name = "NAME[=VALUE]")]
    pub define: Vec<String>,
    /// Add an include directory for every build and for the analysis (repeatable).
    #[arg(short = 'I', value_name = "DIR")]
    pub include: Vec<PathBuf>,
    /// A compilation database (compile_commands.json, e.g. from `bear -- make`): each file's
    /// -D/-I/-std flags [default: compile_commands.json in the source directory, if any].
    #[arg(long, value_name = "FILE")]
    pub compile_commands: Option<PathBuf>,
}

impl BuildArgs {
    /// The build model; `inputs` (the program's sources) locate a default compile_commands.json.
    pub fn spec(&self, inputs: &[PathBuf]) -> Result<BuildSpec> {
        let defines = self.define.iter().map(|d| Define::parse(d)).collect::<Result<Vec<_>>>()?;
        let mut includes = Vec::new();
        for d in &self.include {
            if !d.is_dir() {
                bail!("-I {}: no such directory", d.display());
            }
            includes.push(std::fs::canonicalize(d).unwrap_or_else(|_| d.clone()));
        }
        let db = match &self.compile_commands {
            Some(p) => Some(p.clone()),
            None => inputs
                .iter()
                .map(|i| if i.is_dir() { i.clone() } else { i.parent().unwrap_or(Path::new(".")).to_path_buf() })
                .map(|d| d.join("compile_commands.json"))
                .find(|p| p.is_file()),
        };
        let compile_commands = db.as_deref().map(CompileCommands::read).transpose()?;
        let cflags = match &self.cflags {
            Some(c) => split_words(c).map_err(|e| anyhow::anyhow!("--cflags {e}"))?,
            None => Vec::new(),
        };
        let libs = split_words(&self.libs).map_err(|e| anyhow::anyhow!("--libs {e}"))?;
        if let Some(e) = &self.exe {
            if e.is_absolute() {
                bail!("--exe {}: give the path relative to the source directory", e.display());
            }
        }
        Ok(BuildSpec {
            command: self.command.clone(),
            exe: self.exe.clone(),
            cflags,
            defines,
            includes,
            libs,
            compile_commands,
        })
    }

    /// The same flags as arguments of a child `mpicast` (validate's predictions).
    pub fn to_argv(&self) -> Vec<String> {
        let mut a = Vec::new();
        if let Some(c) = &self.command {
            a.extend(["--build".to_string(), c.clone()]);
        }
        if let Some(e) = &self.exe {
            a.extend(["--exe".to_string(), e.display().to_string()]);
        }
        if let Some(c) = &self.cflags {
            a.push(format!("--cflags={c}"));
        }
        a.push(format!("--libs={}", self.libs));
        for d in &self.define {
            a.extend(["-D".to_string(), d.clone()]);
        }
        for i in &self.include {
            a.extend(["-I".to_string(), i.display().to_string()]);
        }
        if let Some(c) = &self.compile_commands {
            a.extend(["--compile-commands".to_string(), c.display().to_string()]);
        }
        a
    }
}

/// How the program is launched.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct LaunchArgs {
    /// Extra mpirun options (after mpicast's own: --bind-to none, --oversubscribe, and
    /// mpi_yield_when_idle beyond this host's cores), e.g. "--mca btl self,tcp".
    #[arg(long = "mpirun-args", value_name = "ARGS", allow_hyphen_values = true)]
    pub mpirun_args: Option<String>,
    /// Replaces `mpirun ... -np N`; `{ranks}` stands for the rank count (e.g. "srun -n {ranks}").
    #[arg(long, value_name = "CMD")]
    pub launcher: Option<String>,
    /// Run on the hosts of this OpenMPI hostfile (ranks round-robin, `--map-by node`, as
    /// predictions place them).
    #[arg(long, value_name = "FILE")]
    pub hostfile: Option<PathBuf>,
}

impl LaunchArgs {
    pub fn spec(&self) -> Result<LaunchSpec> {
        if let Some(h) = &self.hostfile {
            if !h.is_file() {
                bail!("--hostfile {}: no such file", h.display());
            }
        }
        let mpirun_args = match &self.mpirun_args {
            Some(a) => split_words(a).map_err(|e| anyhow::anyhow!("--mpirun-args {e}"))?,
            None => Vec::new(),
        };
        Ok(LaunchSpec { mpirun_args, launcher: self.launcher.clone(), hostfile: self.hostfile.clone(), hosts: Vec::new() })
    }

    pub fn to_argv(&self) -> Vec<String> {
        let mut a = Vec::new();
        if let Some(m) = &self.mpirun_args {
            a.push(format!("--mpirun-args={m}"));
        }
        if let Some(l) = &self.launcher {
            a.extend(["--launcher".to_string(), l.clone()]);
        }
        if let Some(h) = &self.hostfile {
            a.extend(["--hostfile".to_string(), h.display().to_string()]);
        }
        a
    }
}

/// The machine table, which of its costs and where ops come from: the same flags for predict and
/// sweep.
#[derive(clap::Args, Debug, Clone)]
pub struct CostArgs {
    /// Machine table (default: this host with mpicc -O2, measured on first use and cached).
    #[arg(long, value_name = "FILE")]
    pub machine: Option<PathBuf>,
    /// Op costs: fitted (the bounded fit on the calibration kernels, compiled loops in context; the
    /// default) or raw (each class's throughput kernel alone). A table without a fit uses raw.
    #[arg(long, value_enum, default_value = "fitted")]
    pub costs: Costs,
    /// Where a block's instruction ops come from: compiled (the default: the program built with
    /// its compiler and flags plus -g, each instruction placed in its block by the DWARF line
    /// table: what -O2 vectorised, hoisted and inlined; library calls keep the source's counts)
    /// or source (the operators written). When the program cannot be rebuilt (a --build
    /// command, a compile error), source, with a note.
    #[arg(long, value_enum, default_value = "compiled", value_name = "FROM")]
    pub ops: Ops,
    /// This host's own machine table against the host's speed now (its calibration kernels
    /// timed again, about a second, reused for 15 minutes): rescale (the default: the table's
    /// times scaled when the host computes more than 15% slower or faster than when the table
    /// was measured), warn (the factor in the assumptions only) or off. Another host's table is
    /// never checked.
    #[arg(long, value_enum, default_value = "rescale", value_name = "HOW")]
    pub host_speed: HostSpeed,
}

/// `--host-speed`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostSpeed {
    Rescale,
    Warn,
    Off,
}

impl HostSpeed {
    pub fn session(self) -> crate::predict::session::HostSpeed {
        match self {
            HostSpeed::Rescale => crate::predict::session::HostSpeed::Rescale,
            HostSpeed::Warn => crate::predict::session::HostSpeed::Warn,
            HostSpeed::Off => crate::predict::session::HostSpeed::Off,
        }
    }
}

// The values of the flags that take one of a few words. (No doc comments on the variants: the
// flags' help says what each means.)

/// `--costs`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Costs {
    Fitted,
    Raw,
}

impl Costs {
    pub fn variant(self) -> crate::model::machine::Variant {
        match self {
            Costs::Fitted => crate::model::machine::Variant::Fitted,
            Costs::Raw => crate::model::machine::Variant::Throughput,
        }
    }
}

/// `--ops`: where a block's instruction ops come from.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ops {
    Source,
    Compiled,
}

/// `--scaling`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scaling {
    Program,
    Weak,
    Strong,
}

impl Scaling {
    pub fn mode(self) -> crate::scale::Mode {
        match self {
            Scaling::Program => crate::scale::Mode::Program,
            Scaling::Weak => crate::scale::Mode::Weak,
            Scaling::Strong => crate::scale::Mode::Strong,
        }
    }
}

/// `--compare` of validate.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compare {
    Span,
    Elapsed,
    Wall,
}

impl Compare {
    pub fn compare(self) -> crate::validate::Compare {
        match self {
            Compare::Span => crate::validate::Compare::Span,
            Compare::Elapsed => crate::validate::Compare::Elapsed,
            Compare::Wall => crate::validate::Compare::Wall,
        }
    }
}

/// The program as predict and sweep take it: sources, arguments (`--trace-args` for the traced
/// run), build and launch flags.
pub fn program_spec(
    inputs: &[PathBuf],
    build: &BuildArgs,
    launch: &LaunchArgs,
    trace_text: Option<&str>,
    program_args: &[String],
) -> Result<crate::predict::session::ProgramSpec> {
    Ok(crate::predict::session::ProgramSpec {
        inputs: inputs.to_vec(),
        args: program_args.to_vec(),
        trace_args: trace_args(trace_text, program_args)?,
        build: build.spec(inputs)?,
        defines: build.define.clone(),
        launch: launch.spec()?,
    })
}

/// `--trace-args "ARGS"`: the traced run's own arguments, when they depend on its rank count.
pub fn trace_args(text: Option<&str>, program_args: &[String]) -> Result<Vec<String>> {
    match text {
        Some(t) => split_words(t).map_err(|e| anyhow::anyhow!("--trace-args {e}")),
        None => Ok(program_args.to_vec()),
    }
}
