//! The one build model: how mpicast compiles a user's program wherever it needs a binary (the
//! instrumented copy, validation's real runs, the plain run beside a trace). Either the default
//! build (mpicc -O2, mpicxx for C++, with the user's flags) or the user's own command (`--build`:
//! make, cmake --build, a script) run in a copy of the tree. `-D`, `-I` and compile_commands.json
//! flags reach every compile the same way, and the analysis sees the same macros.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

use anyhow::{bail, Context, Result};

use super::run::{describe, run_captured, Echo};

/// C++ translation units, by extension.
pub const CPP_UNITS: &[&str] = &["cc", "cpp", "cxx", "C", "c++"];
/// Every translation unit, by extension.
pub const UNITS: &[&str] = &["c", "cc", "cpp", "cxx", "C", "c++"];

pub fn ext_of(p: &Path) -> &str {
    p.extension().and_then(|e| e.to_str()).unwrap_or("")
}

pub fn is_unit(p: &Path) -> bool {
    UNITS.contains(&ext_of(p))
}

pub fn is_cpp(p: &Path) -> bool {
    CPP_UNITS.contains(&ext_of(p))
}

/// `-D NAME[=VALUE]`, as a C compiler reads it: without a value NAME is defined as 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Define {
    pub name: String,
    pub value: Option<String>,
}

impl Define {
    pub fn parse(s: &str) -> Result<Define> {
        let (name, value) = match s.split_once('=') {
            Some((n, v)) => (n.trim(), Some(v.trim().to_string())),
            None => (s.trim(), None),
        };
        let ok = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ok {
            bail!("-D {s}: `{name}` is not a C identifier (expected NAME or NAME=VALUE)");
        }
        Ok(Define { name: name.to_string(), value })
    }

    /// The compiler flag.
    pub fn flag(&self) -> String {
        match &self.value {
            Some(v) => format!("-D{}={v}", self.name),
            None => format!("-D{}", self.name),
        }
    }

    /// The value as a number, when it is one (a C integer or floating literal, with suffixes);
    /// a define without a value is 1.
    pub fn number(&self) -> Option<f64> {
        let Some(v) = &self.value else { return Some(1.0) };
        parse_c_number(v)
    }
}

/// A C integer or floating literal (`1024`, `0x10`, `1e6`, `100UL`, `-3`, `(64)`), as a number.
pub fn parse_c_number(text: &str) -> Option<f64> {
    let mut t = text.trim();
    while t.starts_with('(') && t.ends_with(')') && t.len() >= 2 {
        t = t[1..t.len() - 1].trim();
    }
    let (neg, body) = match t.strip_prefix('-') {
        Some(r) => (true, r.trim()),
        None => (false, t.strip_prefix('+').unwrap_or(t).trim()),
    };
    let v = if let Some(h) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        u64::from_str_radix(h.trim_end_matches(['u', 'U', 'l', 'L']), 16).ok()? as f64
    } else {
        let digits = if body.contains(['.', 'e', 'E']) && !body.starts_with("0x") {
            body.trim_end_matches(['f', 'F', 'l', 'L'])
        } else {
            body.trim_end_matches(['u', 'U', 'l', 'L'])
        };
        digits.parse::<f64>().ok().filter(|x| x.is_finite())?
    };
    Some(if neg { -v } else { v })
}

/// Splits an argument string as a shell would (quotes and backslashes), without expansions.
pub fn split_words(s: &str) -> Result<Vec<String>> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(x) => cur.push(x),
                        None => bail!("`{s}`: unterminated single quote"),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(x @ ('"' | '\\' | '$' | '`')) => cur.push(x),
                            Some(x) => {
                                cur.push('\\');
                                cur.push(x);
                            }
                            None => bail!("`{s}`: unterminated double quote"),
                        },
                        Some(x) => cur.push(x),
                        None => bail!("`{s}`: unterminated double quote"),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(x) = chars.next() {
                    cur.push(x);
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        out.push(cur);
    }
    Ok(out)
}

/// Shell-like text of a command, for messages and meta files.
pub fn show(cmd: &[String]) -> String {
    cmd.iter()
        .map(|a| {
            if a.is_empty() || a.chars().any(|c| c.is_whitespace() || "'\"$`\\".contains(c)) {
                format!("'{}'", a.replace('\'', "'\\''"))
            } else {
                a.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The preprocessor and language flags compile_commands.json gives each file.
#[derive(Debug, Clone, Default)]
pub struct CompileCommands {
    pub path: PathBuf,
    /// Canonical source path -> its flags (-D, -U, -I made absolute, -include, -std, -isystem).
    pub by_file: BTreeMap<PathBuf, Vec<String>>,
}

impl CompileCommands {
    /// Reads a compilation database (`bear`, CMake's CMAKE_EXPORT_COMPILE_COMMANDS).
    pub fn read(path: &Path) -> Result<CompileCommands> {
        let text = std::fs::read_to_string(path).with_context(|| format!("{}: cannot read", path.display()))?;
        let v: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| anyhow::anyhow!("{}: not JSON: {e}", path.display()))?;
        let Some(entries) = v.as_array() else {
            bail!("{}: expected a JSON array of compile commands", path.display());
        };
        let mut by_file = BTreeMap::new();
        for (k, e) in entries.iter().enumerate() {
            let field = |n: &str| e.get(n).and_then(|x| x.as_str());
            let (Some(dir), Some(file)) = (field("directory"), field("file")) else {
                bail!("{}: entry {k} has no `directory` or `file`", path.display());
            };
            let args: Vec<String> = match (e.get("arguments").and_then(|a| a.as_array()), field("command")) {
                (Some(a), _) => a.iter().filter_map(|x| x.as_str().map(String::from)).collect(),
                (None, Some(c)) => split_words(c).with_context(|| format!("{}: entry {k}", path.display()))?,
                (None, None) => bail!("{}: entry {k} has neither `arguments` nor `command`", path.display()),
            };
            let dir = Path::new(dir);
            let src = dir.join(file);
            let key = std::fs::canonicalize(&src).unwrap_or(src);
            by_file.insert(key, preprocessor_flags(&args, dir));
        }
        Ok(CompileCommands { path: path.to_path_buf(), by_file })
    }

    /// The flags of `file` (the user's original path).
    pub fn flags_for(&self, file: &Path) -> Option<&[String]> {
        let key = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf());
        self.by_file.get(&key).map(Vec::as_slice)
    }
}

/// The flags of a compile command that change what the compiler sees: -D, -U, -I (absolute),
/// -isystem, -include, -std, -f(no-)openmp.
fn preprocessor_flags(args: &[String], dir: &Path) -> Vec<String> {
    let abs = |p: &str| -> String {
        let p = Path::new(p);
        if p.is_absolute() { p.display().to_string() } else { dir.join(p).display().to_string() }
    };
    let mut out = Vec::new();
    let mut i = 1; // args[0] is the compiler
    while i < args.len() {
        let a = &args[i];
        let next = args.get(i + 1);
        if a == "-D" || a == "-U" {
            if let Some(v) = next {
                out.push(format!("{a}{v}"));
                i += 1;
            }
        } else if a.starts_with("-D") || a.starts_with("-U") || a.starts_with("-std=") || a == "-fopenmp" || a == "-pthread" {
            out.push(a.clone());
        } else if a == "-I" || a == "-isystem" || a == "-include" {
            if let Some(v) = next {
                let flag = if a == "-I" { "-I".to_string() } else { a.clone() };
                if a == "-I" {
                    out.push(format!("{flag}{}", abs(v)));
                } else {
                    out.extend([flag, abs(v)]);
                }
                i += 1;
            }
        } else if let Some(p) = a.strip_prefix("-I") {
            out.push(format!("-I{}", abs(p)));
        }
        i += 1;
    }
    out
}

/// How a program is built.
#[derive(Debug, Clone, Default)]
pub struct BuildSpec {
    /// A build command run with `sh -c` in a copy of the tree (mpicc and mpicxx on its PATH
    /// may be wrappers); None: the default build.
    pub command: Option<String>,
    /// The executable the command makes, relative to the tree.
    pub exe: Option<PathBuf>,
    /// Compiler flags after -O2.
    pub cflags: Vec<String>,
    pub defines: Vec<Define>,
    /// Include directories (absolute).
    pub includes: Vec<PathBuf>,
    /// Libraries, last on the link line.
    pub libs: Vec<String>,
    pub compile_commands: Option<CompileCommands>,
}

/// A build that failed: what failed (the command), and the compiler's last lines.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct BuildFailure {
    pub message: String,
    pub output_tail: String,
}

impl BuildSpec {
    /// The flags every compile of `unit` gets after -O2: the user's flags, -D, -I, then the
    /// compilation database's flags for the file (`original`: the user's path of the unit).
    pub fn compile_flags(&self, original: Option<&Path>) -> Vec<String> {
        let mut f = self.cflags.clone();
        f.extend(self.defines.iter().map(Define::flag));
        f.extend(self.includes.iter().map(|d| format!("-I{}", d.display())));
        if let (Some(cc), Some(o)) = (&self.compile_commands, original) {
            if let Some(extra) = cc.flags_for(o) {
                f.extend(extra.iter().cloned());
            }
        }
        f
    }

    /// The flags that change what the preprocessor produces (for `mpicc -E` and the analysis):
    /// -D, -U, -I, -include, -std, -isystem among `compile_flags`.
    pub fn preprocessor_flags(&self, original: Option<&Path>) -> Vec<String> {
        let all = self.compile_flags(original);
        let mut out = Vec::new();
        let mut i = 0;
        while i < all.len() {
            let a = &all[i];
            if (a == "-include" || a == "-isystem" || a == "-D" || a == "-U" || a == "-I") && i + 1 < all.len() {
                out.extend([a.clone(), all[i + 1].clone()]);
                i += 2;
                continue;
            }
            if ["-D", "-U", "-I", "-std=", "-f"].iter().any(|p| a.starts_with(p)) {
                out.push(a.clone());
            }
            i += 1;
        }
        out
    }

    /// Macro values every compile sees (`-D` and -D flags in --cflags and the compilation
    /// database), numbers only: what the analysis binds.
    pub fn numeric_defines(&self, files: &[PathBuf]) -> BTreeMap<String, f64> {
        let mut out = BTreeMap::new();
        let mut flags: Vec<String> = self.cflags.clone();
        if let Some(cc) = &self.compile_commands {
            for f in files {
                if let Some(x) = cc.flags_for(f) {
                    flags.extend(x.iter().cloned());
                }
            }
        }
        for a in flags {
            if let Some(d) = a.strip_prefix("-D").and_then(|d| Define::parse(d).ok()) {
                if let Some(v) = d.number() {
                    out.insert(d.name, v);
                }
            }
        }
        for d in &self.defines {
            if let Some(v) = d.number() {
                out.insert(d.name.clone(), v);
            }
        }
        out
    }

    /// One line for reports: the command, or `mpicc -O2 FLAGS ... LIBS`.
    pub fn describe(&self) -> String {
        match &self.command {
            Some(c) => format!("build command: {c}"),
            None => {
                let mut v = vec!["mpicc/mpicxx".to_string(), "-O2".into()];
                v.extend(self.compile_flags(None));
                v.extend(self.libs.iter().cloned());
                show(&v)
            }
        }
    }

    /// The default build's steps: `units` (paths to compile; `originals` the user's paths, for
    /// the compilation database) into `exe`, with `extra` objects on the link line and object
    /// files in `objdir`. Every unit's directory is on the include path.
    pub fn default_steps(&self, units: &[PathBuf], originals: &[PathBuf], exe: &Path, extra: &[PathBuf], objdir: &Path) -> Vec<Vec<String>> {
        let s = |p: &Path| p.display().to_string();
        let mut dirs: Vec<String> = Vec::new();
        for u in units {
            let d = u.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
            let flag = format!("-I{}", d.display());
            if !dirs.contains(&flag) {
                dirs.push(flag);
            }
        }
        let cpp = units.iter().any(|u| is_cpp(u));
        let per_file = self.compile_commands.is_some();
        let mut steps = Vec::new();
        if !cpp && !per_file {
            let mut c = vec!["mpicc".to_string(), "-O2".into()];
            c.extend(self.compile_flags(None));
            c.extend(dirs.iter().cloned());
            c.extend(["-o".into(), s(exe)]);
            c.extend(units.iter().map(|u| s(u)));
            c.extend(extra.iter().map(|u| s(u)));
            c.extend(self.libs.iter().cloned());
            steps.push(c);
            return steps;
        }
        let mut objs = Vec::new();
        for (k, u) in units.iter().enumerate() {
            let cc = if is_cpp(u) { "mpicxx" } else { "mpicc" };
            let stem = u.file_stem().map(|x| x.to_string_lossy().into_owned()).unwrap_or_default();
            let o = objdir.join(format!("{k}-{stem}.o"));
            let mut c = vec![cc.to_string(), "-O2".into()];
            c.extend(self.compile_flags(originals.get(k).map(PathBuf::as_path)));
            c.extend(dirs.iter().cloned());
            c.extend(["-c".into(), s(u), "-o".into(), s(&o)]);
            steps.push(c);
            objs.push(o);
        }
        let mut c = vec![if cpp { "mpicxx" } else { "mpicc" }.to_string(), "-O2".into()];
        c.extend(self.cflags.iter().cloned());
        c.extend(["-o".into(), s(exe)]);
        c.extend(objs.iter().map(|u| s(u)));
        c.extend(extra.iter().map(|u| s(u)));
        c.extend(self.libs.iter().cloned());
        steps.push(c);
        steps
    }
}

/// Wrappers named mpicc, mpicxx, mpic++ and mpiCC in `bin` for a build command (found first on
/// its PATH): every compile gets the spec's `-D`, `-I` and flags, and every link `objects`
/// (the trace runtime) as well.
pub fn write_wrappers(bin: &Path, spec: &BuildSpec, objects: &[PathBuf]) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(bin).with_context(|| format!("{}: cannot create", bin.display()))?;
    let quote = |a: &str| format!("'{}'", a.replace('\'', "'\\''"));
    let objs = objects.iter().map(|o| quote(&o.display().to_string())).collect::<Vec<_>>().join(" ");
    let flags = spec.compile_flags(None).iter().map(|f| quote(f)).collect::<Vec<_>>().join(" ");
    for name in ["mpicc", "mpicxx", "mpic++", "mpiCC"] {
        let Some(real) = super::run::which(name, Some(bin)) else {
            continue;
        };
        let real = quote(&real.display().to_string());
        let script = format!(
            "#!/bin/sh\n# mpicast: {name} with the build's flags (and the trace runtime when linking)\n\
             if [ $# -eq 0 ]; then exec {real}; fi\n\
             link=1\nfor a in \"$@\"; do case \"$a\" in -c|-E|-S|-M|-MM|--version|-dumpversion|-dumpmachine|-showme*|--showme*) link=0;; esac; done\n\
             if [ $link = 1 ]; then exec {real} {flags} \"$@\" {objs}; else exec {real} {flags} \"$@\"; fi\n"
        );
        let p = bin.join(name);
        std::fs::write(&p, script).with_context(|| format!("{}: cannot write", p.display()))?;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755))?;
    }
    Ok(())
}

/// Runs build steps in `cwd` (with `path_prefix` first on the PATH); a failing step is a
/// [`BuildFailure`] naming `what`, the command, and `note` (e.g. where the work directory is).
pub fn run_steps(steps: &[Vec<String>], cwd: &Path, path_prefix: Option<&Path>, what: &str, note: &str) -> Result<()> {
    for step in steps {
        let mut c = Command::new(&step[0]);
        c.args(&step[1..]).current_dir(cwd);
        if let Some(bin) = path_prefix {
            let path = std::env::var_os("PATH").unwrap_or_default();
            let mut paths = vec![bin.to_path_buf()];
            paths.extend(std::env::split_paths(&path));
            c.env("PATH", std::env::join_paths(paths)?);
        }
        let out = run_captured(&mut c, Echo::Quiet, None)
            .with_context(|| format!("cannot run {} (install openmpi-bin and libopenmpi-dev)", step[0]))?;
        if !out.status.success() {
            let first = out
                .tail
                .lines()
                .find(|l| l.contains("error"))
                .map(|l| format!(": {}", l.trim()))
                .unwrap_or_default();
            return Err(BuildFailure {
                message: format!("{what}: build failed ({}): `{}`{first}{note}", describe(&out.status), show(step)),
                output_tail: out.tail,
            }
            .into());
        }
    }
    Ok(())
}

/// Executables under `root` modified since `since` (a build command's product), skipping
/// directories named `skip`.
pub fn new_executables(root: &Path, since: SystemTime, skip: &str) -> Vec<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = Vec::new();
    let mut stack = vec![(root.to_path_buf(), 0)];
    while let Some((dir, depth)) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            let Ok(m) = e.metadata() else { continue };
            if m.is_dir() && depth < 16 && e.file_name() != skip {
                stack.push((p, depth + 1));
            } else if m.is_file()
                && m.permissions().mode() & 0o111 != 0
                && m.modified().is_ok_and(|t| t >= since)
                && !matches!(ext_of(&p), "o" | "so" | "a" | "sh" | "py" | "pl")
            {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The executable a build command made under `root` since `since`: `named` when given, else
/// the one new executable.
pub fn find_executable(root: &Path, since: SystemTime, named: Option<&Path>, skip: &str) -> std::result::Result<PathBuf, String> {
    if let Some(n) = named {
        let p = root.join(n);
        return if p.is_file() { Ok(p) } else { Err(format!("the build made no {}", p.display())) };
    }
    let found = new_executables(root, since, skip);
    match found.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err("the build command made no executable (name it with --exe)".into()),
        many => Err(format!(
            "the build command made several executables ({}); name one with --exe",
            many.iter().map(|p| p.strip_prefix(root).unwrap_or(p).display().to_string()).collect::<Vec<_>>().join(", ")
        )),
    }
}

/// Macros that guard MPI code in `files` (`#ifdef USE_MPI`, `#if defined(HAVE_MPI)`): when a
/// build leaves them undefined the program may build without MPI.
pub fn mpi_guard_macros(files: &[PathBuf]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for f in files {
        let Ok(text) = std::fs::read_to_string(f) else { continue };
        for line in text.lines() {
            let t = line.trim_start();
            let Some(rest) = t.strip_prefix('#') else { continue };
            let rest = rest.trim_start();
            let cond = ["ifdef", "ifndef", "if", "elif"].iter().find_map(|k| rest.strip_prefix(k));
            let Some(cond) = cond else { continue };
            for word in cond.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
                // MPI's own macros (MPI_VERSION, OMPI_..., MPICH) come from mpi.h itself.
                let own = ["MPI_", "OMPI_", "MPICH", "MPIX_"].iter().any(|p| word.starts_with(p));
                if word.to_ascii_uppercase().contains("MPI") && !own && !out.iter().any(|w| w == word) {
                    out.push(word.to_string());
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defines_read_as_a_compiler_reads_them() {
        let d = Define::parse("DOUBLE").unwrap();
        assert_eq!((d.flag(), d.number()), ("-DDOUBLE".to_string(), Some(1.0)));
        let d = Define::parse("N=0x10").unwrap();
        assert_eq!(d.number(), Some(16.0));
        let d = Define::parse("comm=MPI_COMM_WORLD").unwrap();
        assert_eq!((d.flag(), d.number()), ("-Dcomm=MPI_COMM_WORLD".to_string(), None));
        assert_eq!(Define::parse("N=100UL").unwrap().number(), Some(100.0));
        assert!(Define::parse("2x=1").is_err());
    }

    #[test]
    fn words_split_like_a_shell() {
        assert_eq!(split_words(r#"-i 2 "a b" 'c d' e\ f"#).unwrap(), ["-i", "2", "a b", "c d", "e f"]);
        assert!(split_words("'open").is_err());
        assert_eq!(split_words("  ").unwrap(), Vec::<String>::new());
    }

    #[test]
    fn compile_database_flags_are_kept_and_made_absolute() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.c"), "int main(void){return 0;}").unwrap();
        let db = dir.path().join("compile_commands.json");
        let json = format!(
            r#"[{{"directory":"{d}","file":"a.c","command":"cc -O3 -DDO_MPI -D N=8 -Iinc -c a.c -o a.o"}}]"#,
            d = dir.path().display()
        );
        std::fs::write(&db, json).unwrap();
        let cc = CompileCommands::read(&db).unwrap();
        let f = cc.flags_for(&dir.path().join("a.c")).unwrap();
        assert_eq!(f[0], "-DDO_MPI");
        assert_eq!(f[1], "-DN=8");
        assert_eq!(f[2], format!("-I{}", dir.path().join("inc").display()));
        let spec = BuildSpec { compile_commands: Some(cc), ..Default::default() };
        let n = spec.numeric_defines(&[dir.path().join("a.c")]);
        assert_eq!((n.get("DO_MPI"), n.get("N")), (Some(&1.0), Some(&8.0)));
    }

    #[test]
    fn mpi_guards_are_found() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("m.c");
        std::fs::write(&f, "#ifdef DO_MPI\n#include <mpi.h>\n#endif\n#if defined(HAVE_MPI) && X\n#endif\n").unwrap();
        assert_eq!(mpi_guard_macros(&[f]), ["DO_MPI", "HAVE_MPI"]);
    }
}

/// mpicast's own cache of built tools: `$MPICAST_CACHE_DIR`, else `$XDG_CACHE_HOME/mpicast`, else
/// `~/.cache/mpicast`.
pub fn tool_cache() -> PathBuf {
    if let Some(d) = std::env::var_os("MPICAST_CACHE_DIR") {
        return PathBuf::from(d);
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME") {
        return PathBuf::from(d).join("mpicast");
    }
    if let Some(h) = std::env::var_os("HOME") {
        return PathBuf::from(h).join(".cache").join("mpicast");
    }
    std::env::temp_dir().join("mpicast-cache")
}

/// Builds one of mpicast's own MPI sources (the ping-pong, the span library) with `mpicc` into
/// `tool_cache()/KIND/<hash of source, compiler and its -showme>/OUTPUT`, unless it is there
/// already. Locked, and written by rename: concurrent mpicast processes build it once.
pub fn build_cached(mpicc: &str, kind: &str, file: &str, source: &str, flags: &[&str], libs: &[&str], output: &str) -> Result<PathBuf> {
    use std::hash::{Hash, Hasher};
    let showme = Command::new(mpicc).arg("-showme").output().ok().map(|o| o.stdout).unwrap_or_default();
    let mut h = std::collections::hash_map::DefaultHasher::new();
    source.hash(&mut h);
    flags.hash(&mut h);
    mpicc.hash(&mut h);
    showme.hash(&mut h);
    let dir = tool_cache().join(kind).join(format!("{:016x}", h.finish()));
    let out = dir.join(output);
    if out.is_file() {
        return Ok(out);
    }
    let _lock = crate::model::CacheLock::acquire(&dir, "build")?;
    if out.is_file() {
        return Ok(out);
    }
    let src = dir.join(file);
    std::fs::write(&src, source).with_context(|| format!("{}: cannot write", src.display()))?;
    let tmp = dir.join(format!("{output}.tmp{}", std::process::id()));
    let res = Command::new(mpicc)
        .args(flags)
        .arg("-o")
        .arg(&tmp)
        .arg(&src)
        .args(libs)
        .output()
        .with_context(|| format!("cannot run {mpicc} (install openmpi-bin and libopenmpi-dev, or pass --mpicc)"))?;
    if !res.status.success() {
        bail!("{mpicc} failed to build {file}: {}", String::from_utf8_lossy(&res.stderr).trim());
    }
    std::fs::rename(&tmp, &out).with_context(|| format!("{}: cannot write", out.display()))?;
    Ok(out)
}
