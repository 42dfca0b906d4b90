//! Mutation fuzzing without nightly: cargo-fuzz needs a nightly toolchain, so these
//! are ignored tests that mutate a seed corpus for a while and catch panics in-process.
//!
//!     MPICAST_FUZZ_SECS=600 cargo test --release --test integration fuzz:: -- --ignored --test-threads=1
//!     MPICAST_FUZZ_SECS=600 cargo test --release --test integration fuzz_trace -- --ignored
//!
//! (`make fuzz` runs every target.) Targets: `fuzz_trace` (trace line parser, TraceReader and
//! validate_dir on a file), `fuzz_frontend` (C/C++ front end on a file), `fuzz_json` (every
//! artifact reader, machine and network table loaders) and `fuzz_expr` (formula parser, printing
//! and evaluation). Seeds: tests/fuzz-corpus/{trace,c,json,expr}/. Mutations: bit flips, random
//! bytes, insertions and deletions, chunk duplication (deep nesting), splices with other inputs,
//! interesting numbers and tokens from a per-target dictionary, stacked 1 to 8 at a time. Inputs
//! that give an outcome not seen before (a new error message shape) join the pool.
//!
//! A panic is caught, its input saved to target/fuzz-crashes/<target>-<hash>.in (message in
//! .msg) and the test fails at the end. An input that runs longer than MPICAST_FUZZ_SLOW_SECS
//! (default 2 s) is saved as -slow; one still running after MPICAST_FUZZ_HANG_SECS (default 30)
//! is saved as -hang and the process exits. What cannot be caught (stack overflow, abort) leaves
//! the input in target/fuzz-crashes/<target>-current.in.

use std::collections::{HashMap, HashSet};
use std::io::{Seek, SeekFrom, Write};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::util::{children_run_this_mpicast, root};

fn env_secs(name: &str, default: f64) -> f64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

// ---- random numbers (splitmix64) ----------------------------------------------------------------

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

// ---- mutations ----------------------------------------------------------------------------------

const NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "7",
    "255",
    "256",
    "65535",
    "65536",
    "2147483647",
    "2147483648",
    "-2147483648",
    "4294967295",
    "4294967296",
    "9007199254740993",
    "9223372036854775807",
    "18446744073709551615",
    "18446744073709551616",
    "170141183460469231731687303715884105727",
    "340282366920938463463374607431768211456",
    "1e308",
    "1e309",
    "-1e308",
    "1e-320",
    "0.5",
    "-0.0",
    "nan",
    "inf",
    "-inf",
    "1e",
    "0x10",
    "16777216",
    "1000000000000000000",
    "99999999999999999999999999999999",
];

fn mutate(input: &[u8], pool: &[Vec<u8>], dict: &[&str], rng: &mut Rng, max_len: usize) -> Vec<u8> {
    let mut v = input.to_vec();
    let rounds = 1 + rng.below(8);
    for _ in 0..rounds {
        let len = v.len();
        match rng.below(13) {
            0 if len > 0 => {
                let i = rng.below(len);
                v[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let i = rng.below(len);
                v[i] = rng.next() as u8;
            }
            2 => {
                let i = rng.below(len + 1);
                let n = 1 + rng.below(8);
                for _ in 0..n {
                    v.insert(i, rng.next() as u8);
                }
            }
            3 if len > 0 => {
                let i = rng.below(len);
                let n = 1 + rng.below((len - i).min(64));
                v.drain(i..i + n);
            }
            4 | 5 => {
                let t = dict[rng.below(dict.len())].as_bytes();
                let i = rng.below(len + 1);
                v.splice(i..i, t.iter().copied());
            }
            6 => {
                // Replace a run of digits (or insert) with an interesting number.
                let t = NUMBERS[rng.below(NUMBERS.len())].as_bytes();
                match (0..len)
                    .map(|k| (k + rng.below(len.max(1))) % len.max(1))
                    .find(|&k| v[k].is_ascii_digit())
                {
                    Some(i) => {
                        let mut j = i;
                        while j < len && (v[j].is_ascii_digit() || v[j] == b'.') {
                            j += 1;
                        }
                        let mut s = i;
                        while s > 0 && v[s - 1].is_ascii_digit() {
                            s -= 1;
                        }
                        v.splice(s..j, t.iter().copied());
                    }
                    None => {
                        let i = rng.below(len + 1);
                        v.splice(i..i, t.iter().copied());
                    }
                }
            }
            7 if len > 0 => {
                // Duplicate a chunk many times: deep nesting, long lines, big counts.
                let i = rng.below(len);
                let n = 1 + rng.below((len - i).min(32));
                let chunk: Vec<u8> = v[i..i + n].to_vec();
                let times = [2, 4, 16, 100, 1000, 5000][rng.below(6)];
                let at = rng.below(len + 1);
                let rep: Vec<u8> = chunk.iter().copied().cycle().take(n * times).collect();
                v.splice(at..at, rep);
            }
            8 if !pool.is_empty() => {
                // Splice: a prefix of this input and a suffix of another.
                let other = &pool[rng.below(pool.len())];
                let cut = rng.below(len + 1);
                let from = rng.below(other.len() + 1);
                v.truncate(cut);
                v.extend_from_slice(&other[from..]);
            }
            9 if !pool.is_empty() => {
                // Insert a chunk of another input.
                let other = &pool[rng.below(pool.len())];
                if !other.is_empty() {
                    let i = rng.below(other.len());
                    let n = 1 + rng.below((other.len() - i).min(256));
                    let at = rng.below(len + 1);
                    v.splice(at..at, other[i..i + n].iter().copied());
                }
            }
            10 if len > 0 => {
                // Truncate (a crashed writer).
                v.truncate(rng.below(len));
            }
            11 if len > 1 => {
                // Swap two lines.
                let lines: Vec<&[u8]> = v.split(|&b| b == b'\n').collect();
                if lines.len() > 1 {
                    let (a, b) = (rng.below(lines.len()), rng.below(lines.len()));
                    let mut ls: Vec<Vec<u8>> = lines.iter().map(|l| l.to_vec()).collect();
                    ls.swap(a, b);
                    v = ls.join(&b'\n');
                }
            }
            12 => {
                let special: &[&[u8]] = &[
                    b"\0",
                    b"\xff",
                    b"\xc3",
                    b"\xe2\x82",
                    b"\r\n",
                    b"\t",
                    b"\n",
                    b" ",
                    b"\\",
                ];
                let t = special[rng.below(special.len())];
                let i = rng.below(len + 1);
                v.splice(i..i, t.iter().copied());
            }
            _ => {}
        }
        if v.len() > max_len {
            v.truncate(max_len);
        }
    }
    v
}

// ---- the loop -----------------------------------------------------------------------------------

thread_local! {
    static LAST_PANIC: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

fn install_quiet_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            let msg = match info.payload().downcast_ref::<&str>() {
                Some(s) => s.to_string(),
                None => info
                    .payload()
                    .downcast_ref::<String>()
                    .cloned()
                    .unwrap_or_default(),
            };
            let loc = info
                .location()
                .map(|l| format!("{}:{}", l.file(), l.line()))
                .unwrap_or_default();
            LAST_PANIC.with(|p| *p.borrow_mut() = Some(format!("{loc}: {msg}")));
        }));
    });
}

fn fnv(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &x| {
        (h ^ u64::from(x)).wrapping_mul(0x100_0000_01b3)
    })
}

fn crash_dir() -> PathBuf {
    let d = root().join("target/fuzz-crashes");
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The shape of an outcome: its text with numbers and quoted parts removed, so that "line 3" and
/// "line 7" count as one outcome.
fn shape(outcome: &str) -> String {
    let mut out = String::new();
    let mut in_quote = false;
    let mut escaped = false;
    let mut last_digit = false;
    for c in outcome.chars() {
        if out.len() >= 120 {
            break;
        }
        if in_quote {
            // Debug-formatted text: skip it, escapes included.
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_quote = false,
                _ => {}
            }
            continue;
        }
        if c == '"' {
            in_quote = true;
            out.push_str("\"\"");
            continue;
        }
        if c.is_ascii_digit() {
            if !last_digit {
                out.push('#');
            }
            last_digit = true;
        } else {
            last_digit = false;
            out.push(c);
        }
    }
    out
}

struct Stats {
    target: &'static str,
    execs: u64,
    seconds: f64,
    pool: usize,
    outcomes: usize,
    crashes: Vec<String>,
    slow: Vec<String>,
}

/// Mutates the seeds for MPICAST_FUZZ_SECS (default 30) seconds, running `run` on each input; `run`
/// returns an outcome text (used to grow the pool) and may panic.
fn fuzz(
    target: &'static str,
    seeds: Vec<Vec<u8>>,
    dict: &[&str],
    max_len: usize,
    mut run: impl FnMut(&[u8]) -> String,
) -> Stats {
    install_quiet_panic_hook();
    assert!(!seeds.is_empty(), "{target}: no seeds");
    let secs = env_secs("MPICAST_FUZZ_SECS", 30.0);
    let slow_after = Duration::from_secs_f64(env_secs("MPICAST_FUZZ_SLOW_SECS", 2.0));
    let hang_after = env_secs("MPICAST_FUZZ_HANG_SECS", 30.0);
    let seed: u64 = std::env::var("MPICAST_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
        });
    let mut rng = Rng(seed ^ fnv(target.as_bytes()));
    let dir = crash_dir();
    let current_path = dir.join(format!("{target}-current.in"));
    let mut current = std::fs::File::create(&current_path).unwrap();

    // Watchdog: an input still running after hang_after seconds is saved and the process ends.
    let started_ms = Arc::new(AtomicU64::new(0));
    let epoch = Instant::now();
    let done = Arc::new(AtomicU64::new(0));
    {
        let (started_ms, done) = (started_ms.clone(), done.clone());
        let (current_path, dir) = (current_path.clone(), dir.clone());
        std::thread::spawn(move || loop {
            std::thread::sleep(Duration::from_millis(500));
            if done.load(Ordering::SeqCst) == 1 {
                return;
            }
            let s = started_ms.load(Ordering::SeqCst);
            let now = epoch.elapsed().as_millis() as u64;
            if s > 0 && now.saturating_sub(s) as f64 > hang_after * 1000.0 {
                let bytes = std::fs::read(&current_path).unwrap_or_default();
                let out = dir.join(format!("{target}-hang-{:016x}.in", fnv(&bytes)));
                let _ = std::fs::write(&out, &bytes);
                eprintln!(
                    "fuzz {target}: an input ran for more than {hang_after} s: saved to {}",
                    out.display()
                );
                std::process::exit(3);
            }
        });
    }

    let mut pool: Vec<Vec<u8>> = seeds.clone();
    let mut seen: HashSet<String> = HashSet::new();
    let mut crashes: HashMap<String, String> = HashMap::new();
    let mut slow = Vec::new();
    let t0 = Instant::now();
    let mut execs = 0u64;
    let mut exec = |input: &[u8], execs: &mut u64| -> Option<String> {
        current.set_len(0).ok();
        current.seek(SeekFrom::Start(0)).ok();
        current.write_all(input).ok();
        started_ms.store(epoch.elapsed().as_millis().max(1) as u64, Ordering::SeqCst);
        let t = Instant::now();
        let r = catch_unwind(AssertUnwindSafe(|| run(input)));
        let took = t.elapsed();
        started_ms.store(0, Ordering::SeqCst);
        *execs += 1;
        if took > slow_after {
            let out = dir.join(format!("{target}-slow-{:016x}.in", fnv(input)));
            let _ = std::fs::write(&out, input);
            slow.push(format!("{:.1} s: {}", took.as_secs_f64(), out.display()));
        }
        match r {
            Ok(outcome) => Some(outcome),
            Err(_) => {
                let msg = LAST_PANIC
                    .with(|p| p.borrow_mut().take())
                    .unwrap_or_else(|| "panic".into());
                let key = msg.split(": ").next().unwrap_or("").to_string();
                let out = dir.join(format!("{target}-{:016x}.in", fnv(input)));
                let _ = std::fs::write(&out, input);
                let _ = std::fs::write(out.with_extension("msg"), &msg);
                crashes
                    .entry(key)
                    .or_insert_with(|| format!("{msg}\n    input: {}", out.display()));
                None
            }
        }
    };
    for s in &seeds {
        if let Some(o) = exec(s, &mut execs) {
            seen.insert(shape(&o));
        }
    }
    while t0.elapsed().as_secs_f64() < secs {
        let base = pool[rng.below(pool.len())].clone();
        let input = mutate(&base, &pool, dict, &mut rng, max_len);
        if let Some(o) = exec(&input, &mut execs) {
            if seen.insert(shape(&o)) && pool.len() < 5000 {
                pool.push(input);
            }
        }
    }
    done.store(1, Ordering::SeqCst);
    let _ = std::fs::remove_file(&current_path);
    let stats = Stats {
        target,
        execs,
        seconds: t0.elapsed().as_secs_f64(),
        pool: pool.len(),
        outcomes: seen.len(),
        crashes: crashes.into_values().collect(),
        slow,
    };
    eprintln!(
        "fuzz {}: {} executions in {:.0} s ({:.0}/s), seed {seed}, pool {} inputs, {} outcome shapes, {} distinct crashes, {} slow inputs",
        stats.target,
        stats.execs,
        stats.seconds,
        stats.execs as f64 / stats.seconds,
        stats.pool,
        stats.outcomes,
        stats.crashes.len(),
        stats.slow.len()
    );
    if std::env::var_os("MPICAST_FUZZ_SHAPES").is_some() {
        for s in seen.iter().take(40) {
            eprintln!("  shape: {s}");
        }
    }
    for s in stats.slow.iter().take(10) {
        eprintln!("  slow: {s}");
    }
    stats
}

fn finish(stats: Stats) {
    assert!(
        stats.crashes.is_empty(),
        "fuzz {}: {} distinct crashes:\n{}",
        stats.target,
        stats.crashes.len(),
        stats.crashes.join("\n")
    );
}

/// Seeds of a target: tests/fuzz-corpus/<kind>/, and for C also the front end's fixtures and the
/// examples, read where they are rather than copied.
fn seeds(kind: &str) -> Vec<Vec<u8>> {
    let mut dirs = vec![root().join("tests/fuzz-corpus").join(kind)];
    if kind == "c" {
        dirs.push(root().join("tests/fixtures/c"));
        dirs.push(root().join("examples"));
    }
    let mut files: Vec<PathBuf> = Vec::new();
    for dir in &dirs {
        files.extend(
            std::fs::read_dir(dir)
                .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
                .map(|e| e.unwrap().path())
                .filter(|p| p.is_file() && (kind != "c" || p.extension().is_some_and(|x| x == "c" || x == "cpp"))),
        );
    }
    files.sort();
    let mut seeds: Vec<Vec<u8>> = files.iter().map(|f| std::fs::read(f).unwrap()).collect();
    seeds.extend(extra_seeds(kind));
    seeds
}

/// Extra seeds from MPICAST_FUZZ_EXTRA (directories separated by ':', searched recursively),
/// e.g. the external corpus (`~/.cache/mpicast/corpus`: its sources, traces and artifacts):
/// C and C++ files for the front end, `*.trace` files for traces, `*.json` for artifacts; files
/// over 256 KiB are left out (each input must run in well under the 2 s slow limit).
fn extra_seeds(kind: &str) -> Vec<Vec<u8>> {
    let Some(dirs) = std::env::var_os("MPICAST_FUZZ_EXTRA") else {
        return Vec::new();
    };
    let wanted = |p: &Path| -> bool {
        let ext = p.extension().and_then(|e| e.to_str()).unwrap_or("");
        match kind {
            "c" => matches!(ext, "c" | "cpp" | "cc" | "cxx" | "h"),
            "trace" => ext == "trace",
            "json" => ext == "json",
            _ => false,
        }
    };
    let mut files = Vec::new();
    let mut stack: Vec<PathBuf> = std::env::split_paths(&dirs).collect();
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for e in entries.flatten() {
            let p = e.path();
            let Ok(meta) = std::fs::symlink_metadata(&p) else { continue };
            if meta.is_dir() {
                stack.push(p);
            } else if meta.is_file() && meta.len() <= 256 << 10 && wanted(&p) {
                files.push(p);
            }
        }
    }
    files.sort();
    eprintln!("fuzz {kind}: {} extra seeds from MPICAST_FUZZ_EXTRA", files.len());
    files.iter().filter_map(|f| std::fs::read(f).ok()).collect()
}

fn text(input: &[u8]) -> String {
    String::from_utf8_lossy(input).into_owned()
}

// ---- targets ------------------------------------------------------------------------------------

const TRACE_DICT: &[&str] = &[
    "compute ",
    "compute blocks ",
    "compute flops=",
    "comm ",
    "send ",
    "recv ",
    "isend ",
    "irecv ",
    "wait ",
    "waitall",
    "test ",
    "sendrecv ",
    "barrier",
    "bcast ",
    "reduce ",
    "allreduce ",
    "gather ",
    "gatherv ",
    "scatter ",
    "scatterv ",
    "allgather ",
    "allgatherv ",
    "alltoall ",
    "alltoallv ",
    "reduce_scatter ",
    "scan ",
    "loop ",
    "end",
    "\nend\n",
    "loop 3\n",
    "loop 1000000\n",
    " any",
    " tag=",
    " tag=any",
    " comm=",
    " comm=1",
    " root=",
    " counts=",
    " send=",
    " recv=",
    " stag=",
    " rtag=",
    " time=",
    "x",
    "x16777216",
    ",",
    "-",
    "0-3",
    "#",
    "\n",
    " ",
    "=",
    "mpicast-trace 1 rank 0 size 1\n",
    "mpicast-trace 2 rank 0 size 1\n",
    "1e-3",
    "12x100",
];

/// Parses every line; a parsed action must print and parse back to itself.
/// Entries of an action's rank and count lists: `counts=40x4294967` on 1,000 lines is four
/// billion of them, which a reader refuses per file but this harness's loops must bound too.
fn list_entries(a: &mpicast::model::trace::TraceAction) -> usize {
    use mpicast::model::trace::TraceAction::*;
    match a {
        CommDef { ranks, .. } => ranks.runs().len(),
        Gatherv { counts, .. } | Scatterv { counts, .. } | Allgatherv { counts, .. } | ReduceScatter { counts, .. } => counts.len(),
        Alltoallv { send, recv, .. } => send.len() + recv.len(),
        _ => 0,
    }
}

fn trace_lines(input: &[u8]) -> String {
    use mpicast::trace::{format_action, parse_line, Line};
    let t = text(input);
    let mut last = String::from("empty");
    // `comm 1 0-7483648` is 17 bytes and 7 million ranks: a reader stops at the first such line
    // (no world has that many ranks), this loop parses them all, so it stops after 2^25.
    let mut entries = 0usize;
    for l in t.lines().take(2_000) {
        if entries > 1 << 25 {
            break;
        }
        match parse_line(l) {
            Ok(Some(Line::Action(a))) => {
                entries += list_entries(&a);
                let printed = format_action(&a);
                if printed.len() > 1 << 16 {
                    // `comm 1 0-16777215` expands to 16M ranks: printing them all back is slow,
                    // not wrong.
                    last = "long action".into();
                    continue;
                }
                match parse_line(&printed) {
                    Ok(Some(Line::Action(b))) => {
                        assert_eq!(a, b, "format_action round trip: {l:?} -> {printed:?}");
                    }
                    other => panic!(
                        "format_action output does not parse back: {l:?} -> {printed:?}: {other:?}"
                    ),
                }
                last = format!("action {}", printed.split_whitespace().next().unwrap_or(""));
            }
            Ok(Some(other)) => last = format!("{other:?}"),
            Ok(None) => {}
            Err(e) => last = e,
        }
    }
    last
}

/// Writes the input as rank 0 of a 1-rank (or 2-rank) trace directory, validates it and reads
/// it with loops unfolded (at most 100,000 actions).
fn trace_files(input: &[u8], dir: &Path) -> String {
    let _ = std::fs::remove_file(dir.join("rank-1.trace"));
    std::fs::write(dir.join("rank-0.trace"), input).unwrap();
    // Rank 1 joins when the header asks for two ranks.
    if text(input).contains("size 2") {
        std::fs::write(dir.join("rank-1.trace"), "mpicast-trace 1 rank 1 size 2\n").unwrap();
    }
    let n = match mpicast::trace::discover(dir) {
        Ok(n) => n,
        Err(e) => return format!("discover: {e}"),
    };
    let v = match mpicast::trace::validate_dir(dir, n) {
        Ok(()) => "valid".to_string(),
        Err(e) => e.msg,
    };
    let mut rd = match mpicast::trace::TraceReader::open(&mpicast::trace::rank_file(dir, 0)) {
        Ok(r) => r,
        Err(e) => return format!("{v} / open: {}", e.msg),
    };
    let (mut k, mut entries) = (0, 0usize);
    loop {
        match rd.next_action() {
            Ok(Some((a, _))) if k < 100_000 && entries < 1 << 25 => {
                k += 1;
                entries += list_entries(&a);
            }
            Ok(_) => break,
            Err(e) => return format!("{v} / read: {}", e.msg),
        }
    }
    if v == "valid" && k < 100_000 {
        // What validates also exports to SimGrid's format without a panic.
        let out = dir.join("smpi");
        let _ = mpicast::trace::smpi::export_dir(dir, n, &out);
    }
    v
}

#[test]
#[ignore]
fn fuzz_trace() {
    let tmp = tempfile::tempdir().unwrap();
    let mut flip = 0u64;
    let stats = fuzz("trace", seeds("trace"), TRACE_DICT, 64 << 10, |input| {
        flip += 1;
        if flip % 4 == 0 {
            trace_files(input, tmp.path())
        } else {
            trace_lines(input)
        }
    });
    finish(stats);
}

const C_DICT: &[&str] = &[
    "for (int i = 0; i < n; i++) ",
    "for (;;)",
    "while (",
    "do ",
    "if (",
    "else ",
    "switch (x) { case 1: ",
    "default:",
    "break;",
    "continue;",
    "return ",
    "goto l;",
    "l: ",
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    ";",
    ",",
    "*",
    "&",
    "->",
    ".",
    "?",
    ":",
    "==",
    "<=",
    ">=",
    "<",
    ">",
    "!=",
    "+=",
    "-=",
    "*=",
    "/=",
    "%=",
    "<<",
    ">>",
    "++",
    "--",
    "&&",
    "||",
    "int ",
    "long ",
    "double ",
    "float ",
    "char ",
    "unsigned ",
    "const ",
    "static ",
    "struct s ",
    "typedef ",
    "enum { A = 1 << 40, B }",
    "sizeof(",
    "(double)",
    "MPI_Send(buf, n, MPI_DOUBLE, (rank + 1) % size, 0, MPI_COMM_WORLD);",
    "MPI_Recv(buf, n, MPI_DOUBLE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);",
    "MPI_Allreduce(&a, &b, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);",
    "MPI_Comm_rank(MPI_COMM_WORLD, &rank);",
    "MPI_Comm_size(MPI_COMM_WORLD, &size);",
    "atoi(argv[1])",
    "#define N ",
    "#if ",
    "#ifdef X\n",
    "#else\n",
    "#endif\n",
    "#include <mpi.h>\n",
    "\n",
    "/*",
    "*/",
    "//",
    "\"",
    "'",
    "\\",
    "0x",
    "1e308",
    "n / 0",
    "n % 0",
    "f(f(f(",
    "i * i * i * i",
    "n >> 70",
    "1 << 127",
    "extern \"C\" {",
    "namespace a {",
    "template <typename T> ",
    "[](){ return 1; }",
    "({ 1; })",
    "__attribute__((unused)) ",
    "int main(int argc, char **argv) {",
];

#[test]
#[ignore]
fn fuzz_frontend() {
    let tmp = tempfile::tempdir().unwrap();
    let mut k = 0u64;
    let opts = mpicast::frontend::Options::default();
    let stats = fuzz("frontend", seeds("c"), C_DICT, 64 << 10, |input| {
        k += 1;
        let p = tmp
            .path()
            .join(if k % 5 == 0 { "input.cpp" } else { "input.c" });
        std::fs::write(&p, input).unwrap();
        let model = mpicast::frontend::analyze(&[p], &opts);
        // What analyze writes must read back.
        let json = mpicast::model::to_json(&model);
        if let Err(e) = mpicast::model::parse_artifact::<mpicast::model::analysis::ProgramModel>(
            &json, "analysis",
        ) {
            panic!("the analysis does not read back: {e}");
        }
        format!(
            "{} blocks {} comm {}",
            model.blocks.len().min(3),
            model.comm.len().min(2),
            model
                .diagnostics
                .iter()
                .map(|d| shape(&d.message))
                .collect::<HashSet<_>>()
                .into_iter()
                .collect::<Vec<_>>()
                .join("|")
        )
    });
    finish(stats);
}

const JSON_DICT: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    "\"",
    ":",
    ",",
    "null",
    "true",
    "false",
    "\"schema\"",
    "\"version\"",
    "\"mpicast/machine\"",
    "\"mpicast/network\"",
    "\"mpicast/analysis\"",
    "\"mpicast/simjob\"",
    "\"mpicast/simoutcome\"",
    "\"mpicast/replayjob\"",
    "\"mpicast/replay\"",
    "\"expr\"",
    "\"count\"",
    "\"status\"",
    "\"exact\"",
    "\"needs_trace\"",
    "\"(n^2 - n)/2\"",
    "\"floor(n/size)\"",
    "\"sum(i, 0, n, i)\"",
    "\"logcount(1, n, 2)\"",
    "\"kind\"",
    "\"round_robin\"",
    "\"hosts\"",
    "\"op\"",
    "\"compute\"",
    "\"int_add\"",
    "1e999",
    "-0",
    "\\u0000",
    "\\ud800",
    "\"\\u00e9\"",
    "[[[[[[[[",
    "]]]]]]]]",
];

fn json_run(input: &[u8], file: &Path) -> String {
    use mpicast::model::{
        analysis::ProgramModel, machine::MachineTable, network::NetworkTable, read_artifact,
    };
    use mpicast::model::{
        simjob::SimJob, simjob::SimOutcome, trace::ReplayJob, trace::ReplayResult,
    };
    std::fs::write(file, input).unwrap();
    let mut out = Vec::new();
    macro_rules! try_read {
        ($t:ty) => {
            match read_artifact::<$t>(file) {
                Ok(a) => {
                    // A file that reads writes and reads back the same.
                    let again = mpicast::model::to_json(&a);
                    if let Err(e) = mpicast::model::parse_artifact::<$t>(&again, "again") {
                        panic!("{} read, written, does not read back: {e}", stringify!($t));
                    }
                    out.push(format!("{} ok", stringify!($t)));
                }
                Err(e) => out.push(e.to_string()),
            }
        };
    }
    try_read!(MachineTable);
    try_read!(NetworkTable);
    try_read!(ProgramModel);
    try_read!(SimJob);
    try_read!(SimOutcome);
    try_read!(ReplayJob);
    try_read!(ReplayResult);
    if let Err(e) = mpicast::machine::load_table(file) {
        out.push(mpicast::cli::one_line(&e));
    }
    if let Ok(t) = mpicast::network::load_table(file) {
        // The table's derived figures must not panic either.
        let _ = (
            t.eager_threshold(),
            t.latency_s(),
            t.bandwidth_bytes_per_s(),
            t.one_way_s(1024),
        );
    }
    out.into_iter().min_by_key(|s| s.len()).unwrap_or_default()
}

#[test]
#[ignore]
fn fuzz_json() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("artifact.json");
    let stats = fuzz("json", seeds("json"), JSON_DICT, 256 << 10, |input| {
        json_run(input, &file)
    });
    finish(stats);
}

const EXPR_DICT: &[&str] = &[
    "floor(",
    "ceil(",
    "mod(",
    "min(",
    "max(",
    "ifpos(",
    "sum(i, ",
    "logcount(",
    ", ",
    "(",
    ")",
    "+",
    "-",
    "*",
    "/",
    "^",
    "^2",
    "^1024",
    "n",
    "rank",
    "size",
    "i",
    "cart_dims0",
    "0",
    "1",
    "2",
    "3",
    "10",
    "1000000",
    "170141183460469231731687303715884105727",
    "/0",
    "/7",
    "*n*n*n*n",
];

fn expr_run(input: &[u8]) -> String {
    use mpicast::model::expr::Expr;
    let t = text(input);
    match Expr::parse(&t) {
        Ok(e) => {
            let printed = e.to_string();
            match Expr::parse(&printed) {
                Ok(again) => {
                    assert_eq!(printed, again.to_string(), "printing is not stable: {t:?}")
                }
                // Printing adds parentheses: at the limits the printed form may be refused.
                Err(err)
                    if ["nested deeper", "expands to more", "exponent"]
                        .iter()
                        .any(|w| err.what.contains(w)) => {}
                Err(err) => panic!("printed formula does not parse: {t:?} -> {printed:?}: {err}"),
            }
            // Evaluation with small values, and symbolic summation over one of the variables.
            let vars: Vec<String> = e.vars().into_iter().collect();
            let env: HashMap<String, f64> = vars
                .iter()
                .enumerate()
                .map(|(k, v)| (v.clone(), (k % 5) as f64 + 1.0))
                .collect();
            let _ = e.eval_map(&env);
            if let Some(v) = vars.first() {
                let s = mpicast::model::expr::sum(v, &Expr::int(0), &Expr::var("n"), &e);
                let _ = s.to_string();
                let mut env2 = env.clone();
                env2.insert("n".into(), 4.0);
                let _ = s.eval_map(&env2);
            }
            // Through JSON, as analysis files carry formulas.
            let j = serde_json::to_string(&e).unwrap();
            let _: Result<Expr, _> = serde_json::from_str(&j);
            let funcs: Vec<&str> = [
                "floor(",
                "ceil(",
                "mod(",
                "min(",
                "max(",
                "ifpos(",
                "sum(",
                "logcount(",
                "^",
                "/",
            ]
            .into_iter()
            .filter(|f| printed.contains(f))
            .collect();
            format!("ok {} {}", funcs.join(""), vars.len().min(3))
        }
        Err(e) => e
            .what
            .split(['\'', '"', '('])
            .next()
            .unwrap_or("")
            .to_string(),
    }
}

#[test]
#[ignore]
fn fuzz_expr() {
    let mut seeds = seeds("expr");
    // One formula per line in the corpus files: each line is a seed.
    seeds = seeds
        .iter()
        .flat_map(|s| {
            s.split(|&b| b == b'\n')
                .filter(|l| !l.is_empty())
                .map(|l| l.to_vec())
                .collect::<Vec<_>>()
        })
        .collect();
    let stats = fuzz("expr", seeds, EXPR_DICT, 4 << 10, expr_run);
    finish(stats);
}

/// Replays every saved crash input (target/fuzz-crashes/*.in) through its target: a regression
/// check after a fix. `MPICAST_FUZZ_SECS` is not used.
#[test]
#[ignore]
fn fuzz_replay_crashes() {
    install_quiet_panic_hook();
    let dir = crash_dir();
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("artifact.json");
    let mut failed = Vec::new();
    let mut n = 0;
    let mut entries: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "in"))
    {
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        let input = std::fs::read(&p).unwrap();
        let t = Instant::now();
        let r = catch_unwind(AssertUnwindSafe(|| {
            match name.split('-').next().unwrap_or("") {
                "trace" => {
                    trace_lines(&input);
                    trace_files(&input, tmp.path());
                }
                "frontend" => {
                    let c = tmp.path().join("input.c");
                    std::fs::write(&c, &input).unwrap();
                    mpicast::frontend::analyze(&[c], &mpicast::frontend::Options::default());
                }
                "json" => {
                    json_run(&input, &file);
                }
                "expr" => {
                    expr_run(&input);
                }
                _ => {}
            }
        }));
        n += 1;
        let took = t.elapsed().as_secs_f64();
        match r {
            Err(_) => failed.push(format!(
                "{name}: {}",
                LAST_PANIC
                    .with(|p| p.borrow_mut().take())
                    .unwrap_or_default()
            )),
            Ok(()) if took > 10.0 => failed.push(format!("{name}: {took:.1} s")),
            Ok(()) => {}
        }
    }
    eprintln!("replayed {n} saved inputs, {} still fail", failed.len());
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// Rewrites the JSON seeds from the current artifact types (run after a schema change):
/// `cargo test --test integration write_json_seeds -- --ignored`. Needs mpicc (machine table) and SimGrid.
#[test]
#[ignore]
fn write_json_seeds() {
    use mpicast::model::to_json;
    let out = root().join("tests/fuzz-corpus/json");
    std::fs::create_dir_all(&out).unwrap();
    children_run_this_mpicast();
    // Analyses: a loop nest and an MPI program.
    for (name, src) in [
        ("analysis_triangular.json", "tests/fixtures/c/triangular.c"),
        ("analysis_jacobi2d.json", "examples/jacobi2d.c"),
    ] {
        let m =
            mpicast::frontend::analyze(&[root().join(src)], &mpicast::frontend::Options::default());
        std::fs::write(out.join(name), to_json(&m)).unwrap();
    }
    // A network table from the recorded shared-memory ping-pong, and its self-check job.
    let text =
        std::fs::read_to_string(root().join("tests/fixtures/network/pingpong_shm.txt")).unwrap();
    let mut raw = mpicast::network::run::RunResult {
        command: vec!["mpirun".into()],
        ranks: 2,
        ..Default::default()
    };
    for line in text.lines() {
        mpicast::network::run::parse_line(line, &mut raw);
    }
    let table = mpicast::network::build_table(raw, vec![], 1.0);
    std::fs::write(out.join("network_shm.json"), to_json(&table)).unwrap();
    let platform = crate::util::two_hosts();
    let (mut job, _) = mpicast::network::self_check_job(&table, &platform, "h0", "h1");
    job.actors.truncate(6);
    std::fs::write(out.join("simjob.json"), to_json(&job)).unwrap();
    let outcome = mpicast::sim::child::simulate(&job).unwrap();
    std::fs::write(out.join("simoutcome.json"), to_json(&outcome)).unwrap();
    // A replay job and its result on the golden 2x2 halo exchange.
    let traces = root().join("traces/golden/halo_2x2");
    let cluster = root().join("tests/fixtures/traces/cluster16.xml");
    let rjob = mpicast::model::trace::ReplayJob {
        trace_dir: traces.clone(),
        ranks: 4,
        platform: cluster.clone(),
        mapping: mpicast::model::trace::Mapping::RoundRobin,
        cfg: vec!["smpi/bw-factor:0:1".into()],
        options: mpicast::model::trace::ReplayOptions {
            timeline: true,
            ..Default::default()
        },
    };
    std::fs::write(out.join("replayjob.json"), to_json(&rjob)).unwrap();
    let result = mpicast::sim::replay(
        &mpicast::sim::TraceSource::Dir(traces),
        &cluster,
        mpicast::model::trace::Mapping::RoundRobin,
        vec![],
        mpicast::model::trace::ReplayOptions::default(),
    )
    .unwrap();
    std::fs::write(out.join("replay_halo.json"), to_json(&result)).unwrap();
    // A quick machine table (one sample per kernel).
    let t = mpicast::machine::measure(&mpicast::machine::Options {
        quick: true,
        samples: Some(1),
        progress: false,
        ..Default::default()
    })
    .unwrap();
    std::fs::write(out.join("machine_quick.json"), to_json(&t)).unwrap();
    // Paths relative to the repository, not this checkout.
    let prefix = format!("{}/", root().display());
    for e in std::fs::read_dir(&out).unwrap() {
        let p = e.unwrap().path();
        let text = std::fs::read_to_string(&p).unwrap();
        std::fs::write(&p, text.replace(&prefix, "")).unwrap();
    }
}
