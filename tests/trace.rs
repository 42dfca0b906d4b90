//! `mpicast trace`: instrumented runs of the example programs under real mpicc and
//! mpirun, whose traces must hold exactly the program's communication (derived here from each
//! example's source as a function of its arguments), fold their loops, leave the user's tree
//! untouched, replay, and fail clearly (partial traces flagged incomplete, exit status 2).
//!
//! Needs mpicc, mpicxx, mpirun (Debian: openmpi-bin libopenmpi-dev) and SimGrid for the replay.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use mpicast::model::analysis::{BlockKind, CountStatus, ProgramModel};
use mpicast::model::read_artifact;
use mpicast::model::trace::{Compute, Peer, Tag, TraceAction, TraceMeta};
use mpicast::trace::TraceReader;

use crate::util::{example, exe, fixed_machine, platform, root, Scratch};

fn fixture(name: &str) -> PathBuf {
    root().join("tests/fixtures/trace").join(name)
}

struct Traced {
    out: Output,
    dir: PathBuf,
}

impl Traced {
    fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.out.stdout).into_owned()
    }
    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.out.stderr).into_owned()
    }
    fn context(&self) -> String {
        format!(
            "--- stdout ---\n{}--- stderr ---\n{}",
            self.stdout(),
            self.stderr()
        )
    }
    fn meta(&self) -> TraceMeta {
        read_artifact(&self.dir.join("meta.json"))
            .unwrap_or_else(|e| panic!("{e}\n{}", self.context()))
    }
    fn analysis(&self) -> ProgramModel {
        read_artifact(&self.dir.join("analysis.json"))
            .unwrap_or_else(|e| panic!("{e}\n{}", self.context()))
    }
    /// A `key=value` the program printed.
    fn value(&self, key: &str) -> String {
        let out = self.stdout();
        out.split_whitespace()
            .find_map(|t| t.strip_prefix(&format!("{key}=")).map(String::from))
            .unwrap_or_else(|| panic!("no {key}= in the output\n{}", self.context()))
    }
}

/// Runs `mpicast trace SOURCE -n RANKS -o DIR EXTRA -- ARGS` in the scratch directory.
fn trace(s: &Scratch, source: &Path, ranks: u32, extra: &[&str], args: &[&str]) -> Traced {
    let dir = s.path().join("traces");
    let out = Command::new(exe())
        .arg("trace")
        .arg(source)
        .args(["-n", &ranks.to_string(), "-o"])
        .arg(&dir)
        .arg("--mpirun-args")
        .arg(s.mpirun_args())
        .args(["--timeout", "120"])
        .args(extra)
        .arg("--")
        .args(args)
        .current_dir(s.path())
        .stdin(Stdio::null())
        .output()
        .expect("run mpicast");
    Traced { out, dir }
}

fn trace_ok(s: &Scratch, source: &Path, ranks: u32, extra: &[&str], args: &[&str]) -> Traced {
    let t = trace(s, source, ranks, extra, args);
    assert!(
        t.out.status.success(),
        "mpicast trace failed ({})\n{}",
        t.out.status,
        t.context()
    );
    t
}

/// `mpicast replay DIR` on the localhost platform succeeds and reports a makespan.
fn replays(dir: &Path) {
    let out = Command::new(exe())
        .arg("replay")
        .arg(dir)
        .arg("--platform")
        .arg(root().join("platforms/localhost.xml"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "replay failed:\n{text}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("makespan"), "{text}");
}

/// One rank's actions, loops unfolded.
fn actions(dir: &Path, rank: u32) -> Vec<TraceAction> {
    let path = dir.join(format!("rank-{rank}.trace"));
    let mut r = TraceReader::open(&path).unwrap_or_else(|e| panic!("{e}"));
    let mut v = Vec::new();
    while let Some((a, _)) = r.next_action().unwrap_or_else(|e| panic!("{e}")) {
        v.push(a);
    }
    v
}

/// The communication actions (compute bursts left out).
fn comm_actions(dir: &Path, rank: u32) -> Vec<TraceAction> {
    actions(dir, rank)
        .into_iter()
        .filter(|a| !matches!(a, TraceAction::Compute { .. }))
        .collect()
}

/// Total executions per block id over a rank's bursts.
fn block_totals(dir: &Path, rank: u32) -> BTreeMap<u32, u64> {
    let mut m = BTreeMap::new();
    for a in actions(dir, rank) {
        if let TraceAction::Compute { compute } = a {
            let blocks = match compute {
                Compute::Blocks(b) => b,
                Compute::TimedBlocks { blocks, .. } => blocks,
                _ => continue,
            };
            for (id, n) in blocks {
                *m.entry(id).or_insert(0) += n;
            }
        }
    }
    m
}

fn assert_actions(t: &Traced, rank: u32, expected: &[TraceAction]) {
    let got = comm_actions(&t.dir, rank);
    if got != expected {
        let first = got
            .iter()
            .zip(expected)
            .position(|(a, b)| a != b)
            .unwrap_or(got.len().min(expected.len()));
        panic!(
            "rank {rank}: {} actions, expected {}; first difference at {first}: got {:?}, expected {:?}\n{}",
            got.len(),
            expected.len(),
            got.get(first),
            expected.get(first),
            std::fs::read_to_string(t.dir.join(format!("rank-{rank}.trace"))).unwrap_or_default()
        );
    }
}

fn send(to: u32, bytes: u64, tag: i32, comm: u32) -> TraceAction {
    TraceAction::Send {
        to,
        bytes,
        tag,
        comm,
        buffered: false,
    }
}

fn recv(from: u32, bytes: u64, tag: i32, comm: u32) -> TraceAction {
    TraceAction::Recv {
        from: Peer::Rank(from),
        bytes: Some(bytes),
        tag: Tag::Value(tag),
        comm,
    }
}

/// MPI_Sendrecv with MPI_PROC_NULL (None) on either side, as the runtime writes it.
fn sendrecv(
    to: Option<u32>,
    sbytes: u64,
    from: Option<u32>,
    rbytes: u64,
    tag: i32,
    comm: u32,
) -> Option<TraceAction> {
    match (to, from) {
        (Some(to), Some(from)) => Some(TraceAction::Sendrecv {
            to,
            send_bytes: sbytes,
            send_tag: tag,
            from: Peer::Rank(from),
            recv_bytes: Some(rbytes),
            recv_tag: Tag::Value(tag),
            comm,
        }),
        (Some(to), None) => Some(send(to, sbytes, tag, comm)),
        (None, Some(from)) => Some(recv(from, rbytes, tag, comm)),
        (None, None) => None,
    }
}

/// examples' block_size / block_start.
fn block_size(n: u64, parts: u64, coord: u64) -> u64 {
    n / parts + u64::from(coord < n % parts)
}

/// jacobi2d's communication at 4 ranks (a 2x2 non-periodic grid, ranks row-major).
/// What a communicator constructor records over its parent before the new communicator: a
/// split's allgather of colour and key, then three allreduces of an int (context id and
/// activation, as OpenMPI runs them), then its own work, by the size of what it made.
fn made_over(parent: u32, split: bool, members: u32) -> Vec<TraceAction> {
    use mpicast::model::trace::CtorKind;
    let mut v = Vec::new();
    if split {
        v.push(TraceAction::Allgather { bytes: 8, comm: parent });
    }
    v.extend((0..3).map(|_| TraceAction::Allreduce { bytes: 4, comm: parent }));
    let kind = if split { CtorKind::Split } else { CtorKind::Dup };
    v.push(TraceAction::Ctor { kind, members });
    v
}

fn jacobi2d_expected(rank: u32, n: u64, iters: u64, k: u64) -> Vec<TraceAction> {
    let (c0, c1) = (rank / 2, rank % 2);
    let at =
        |r: i64, c: i64| ((0..2).contains(&r) && (0..2).contains(&c)).then_some((r * 2 + c) as u32);
    let (r, c) = (i64::from(c0), i64::from(c1));
    let (up, down, left, right) = (at(r - 1, c), at(r + 1, c), at(r, c - 1), at(r, c + 1));
    let rows = block_size(n, 2, u64::from(c0));
    let cols = block_size(n, 2, u64::from(c1));
    let mut v = made_over(0, false, 4);
    v.extend([
        TraceAction::CommDef {
            id: 1,
            ranks: vec![0, 1, 2, 3].into(),
        },
        TraceAction::Barrier { comm: 1 },
    ]);
    for it in 0..iters {
        v.extend(sendrecv(up, cols * 8, down, cols * 8, 1, 1));
        v.extend(sendrecv(down, cols * 8, up, cols * 8, 2, 1));
        v.extend(sendrecv(left, rows * 8, right, rows * 8, 3, 1));
        v.extend(sendrecv(right, rows * 8, left, rows * 8, 4, 1));
        if (it + 1) % k == 0 || it + 1 == iters {
            v.push(TraceAction::Allreduce { bytes: 8, comm: 1 });
        }
    }
    v.push(TraceAction::Reduce {
        bytes: 8,
        root: 0,
        comm: 1,
    });
    v
}

#[test]
fn jacobi2d_trace_has_the_halo_exchange_and_folds() {
    let s = Scratch::new("mpicast-trace-test");
    let (n, iters, k) = (31, 23, 5);
    let t = trace_ok(&s, &example("jacobi2d"), 4, &[], &["31", "23", "5"]);
    for rank in 0..4 {
        assert_actions(&t, rank, &jacobi2d_expected(rank, n, iters, k));
    }
    // Folded: a handful of lines, not one per event.
    let text = std::fs::read_to_string(t.dir.join("rank-0.trace")).unwrap();
    assert!(text.lines().count() < 25, "rank 0 is not folded:\n{text}");
    assert!(text.contains("loop "), "{text}");
    // The directory holds the analysis and the meta file, consistent with each other.
    let meta = t.meta();
    let model = t.analysis();
    assert_eq!(meta.program, "jacobi2d");
    assert_eq!(meta.ranks, 4);
    assert_eq!(meta.args, ["31", "23", "5"]);
    assert!(meta.complete && meta.rank_traces.iter().all(|r| r.complete && r.bytes > 0));
    assert!(meta.instrumented_wall_s > 0.0);
    assert!(meta.build.starts_with("mpicc -O2"), "{}", meta.build);
    for &b in &meta.counted_blocks {
        assert_eq!(
            model.blocks[b as usize].count.status,
            CountStatus::NeedsTrace,
            "block {b}"
        );
    }
    mpicast::trace::validate_dir(&t.dir, 4).unwrap();
}

#[test]
fn pi_dartboard_trace_is_master_worker() {
    let s = Scratch::new("mpicast-trace-test");
    let rounds = 5;
    let t = trace_ok(&s, &example("pi_dartboard"), 4, &[], &["20000", "5"]);
    let mut master = vec![TraceAction::Barrier { comm: 0 }];
    for _ in 0..rounds {
        for w in 1..4 {
            master.push(recv(w, 8, 1, 0));
        }
    }
    assert_actions(&t, 0, &master);
    for w in 1..4 {
        let mut worker = vec![TraceAction::Barrier { comm: 0 }];
        worker.extend((0..rounds).map(|_| send(0, 8, 1, 0)));
        assert_actions(&t, w, &worker);
    }
    // The data-dependent branch (a dart inside the circle) is counted: hits <= darts per round.
    let model = t.analysis();
    let totals = block_totals(&t.dir, 1);
    assert!(!totals.is_empty(), "no block counts");
    for (id, n) in totals {
        assert_eq!(
            model.blocks[id as usize].count.status,
            CountStatus::NeedsTrace
        );
        assert!(n <= 20000 * rounds, "block {id} counted {n} times");
    }
}

#[test]
fn matmul_mw_trace_sends_row_blocks() {
    let s = Scratch::new("mpicast-trace-test");
    let (n, reps) = (40u64, 3);
    let t = trace_ok(&s, &example("matmul_mw"), 4, &[], &["40", "3"]);
    let rows = |w: u64| block_size(n, 3, w);
    let mut master = vec![TraceAction::Barrier { comm: 0 }];
    for _ in 0..reps {
        master.push(TraceAction::Bcast {
            bytes: n * n * 8,
            root: 0,
            comm: 0,
        });
        for w in 1..4u32 {
            master.push(send(w, rows(u64::from(w) - 1) * n * 8, 1, 0));
        }
        for w in 1..4u32 {
            master.push(recv(w, rows(u64::from(w) - 1) * n * 8, 2, 0));
        }
    }
    assert_actions(&t, 0, &master);
    for w in 1..4u32 {
        let mine = rows(u64::from(w) - 1) * n * 8;
        let mut worker = vec![TraceAction::Barrier { comm: 0 }];
        for _ in 0..reps {
            worker.push(TraceAction::Bcast {
                bytes: n * n * 8,
                root: 0,
                comm: 0,
            });
            worker.push(recv(0, mine, 1, 0));
            worker.push(send(0, mine, 2, 0));
        }
        assert_actions(&t, w, &worker);
    }
}

#[test]
fn stencil3d_torus_trace_has_nonblocking_faces_with_reused_request_ids() {
    let s = Scratch::new("mpicast-trace-test");
    let (n, iters) = (12u64, 7);
    let t = trace_ok(&s, &example("stencil3d_torus"), 4, &[], &["12", "7"]);
    // MPI_Dims_create(4, 3) = 2x2x1, periodic, ranks row-major.
    let dims = [2u32, 2, 1];
    for rank in 0..4u32 {
        let c = [rank / 2, rank % 2, 0];
        let at = |c: [u32; 3]| c[0] * 2 + c[1];
        let shifted = |d: usize, by: i64| {
            let mut x = c;
            x[d] = ((i64::from(c[d]) + by).rem_euclid(i64::from(dims[d]))) as u32;
            at(x)
        };
        let sizes: Vec<u64> = (0..3)
            .map(|d| block_size(n, u64::from(dims[d]), u64::from(c[d])))
            .collect();
        let face = [
            sizes[1] * sizes[2] * 8,
            sizes[0] * sizes[2] * 8,
            sizes[0] * sizes[1] * 8,
        ];
        let mut v = made_over(0, false, 4);
        v.extend([
            TraceAction::CommDef {
                id: 1,
                ranks: vec![0, 1, 2, 3].into(),
            },
            TraceAction::Reduce {
                bytes: 8,
                root: 0,
                comm: 1,
            },
            TraceAction::Barrier { comm: 1 },
        ]);
        for _ in 0..iters {
            for (d, &b) in face.iter().enumerate() {
                let (lo, hi) = (shifted(d, -1), shifted(d, 1));
                let tag = 2 * d as i32;
                let req = 4 * d as u64;
                v.push(TraceAction::Irecv {
                    req,
                    from: Peer::Rank(lo),
                    bytes: Some(b),
                    tag: Tag::Value(tag),
                    comm: 1,
                });
                v.push(TraceAction::Irecv {
                    req: req + 1,
                    from: Peer::Rank(hi),
                    bytes: Some(b),
                    tag: Tag::Value(tag + 1),
                    comm: 1,
                });
                v.push(TraceAction::Isend {
                    req: req + 2,
                    to: lo,
                    bytes: b,
                    tag: tag + 1,
                    comm: 1,
                });
                v.push(TraceAction::Isend {
                    req: req + 3,
                    to: hi,
                    bytes: b,
                    tag,
                    comm: 1,
                });
            }
            v.push(TraceAction::Waitall {
                reqs: (0..12).collect(),
            });
        }
        v.push(TraceAction::Reduce {
            bytes: 16,
            root: 0,
            comm: 1,
        });
        assert_actions(&t, rank, &v);
    }
}

#[test]
fn obstacle3d_trace_follows_the_convergence_loop() {
    let s = Scratch::new("mpicast-trace-test");
    let n = 16u64;
    let t = trace_ok(&s, &example("obstacle3d"), 4, &[], &["16", "40"]);
    let iterations: u64 = t.value("iterations").parse().unwrap();
    assert!((1..=40).contains(&iterations));
    let plane = (n + 2) * (n + 2) * 8;
    for rank in 0..4u32 {
        let below = rank.checked_sub(1);
        let above = (rank < 3).then_some(rank + 1);
        let mut v = vec![TraceAction::Barrier { comm: 0 }];
        for _ in 0..iterations {
            v.extend(sendrecv(below, plane, above, plane, 1, 0));
            v.extend(sendrecv(above, plane, below, plane, 2, 0));
            v.push(TraceAction::Allreduce { bytes: 8, comm: 0 });
        }
        v.push(TraceAction::Reduce {
            bytes: 8,
            root: 0,
            comm: 0,
        });
        v.push(TraceAction::Reduce {
            bytes: 8,
            root: 0,
            comm: 0,
        });
        assert_actions(&t, rank, &v);
    }
    // The main loop's trip count is only known by running: it has a trace point, and the
    // counts say how many iterations ran.
    let model = t.analysis();
    let main_loop = model
        .blocks
        .iter()
        .position(|b| {
            b.function == "main"
                && b.kind == mpicast::model::analysis::BlockKind::Loop
                && b.line_start == 143
        })
        .expect("the iteration loop at line 143");
    assert_eq!(
        block_totals(&t.dir, 0).get(&(main_loop as u32)),
        Some(&iterations)
    );
}

#[test]
fn isort_trace_has_consistent_all_to_all_counts() {
    let s = Scratch::new("mpicast-trace-test");
    let (keys, iters) = (2048u64, 3);
    let t = trace_ok(&s, &example("isort"), 4, &[], &["2048", "3"]);
    assert_eq!(t.value("verified"), "1", "{}", t.context());
    let mut sends = Vec::new();
    let mut recvs = Vec::new();
    for rank in 0..4u32 {
        let got = comm_actions(&t.dir, rank);
        let kinds: Vec<&str> = got
            .iter()
            .map(|a| match a {
                TraceAction::Barrier { .. } => "barrier",
                TraceAction::Alltoall { bytes: 4, comm: 0 } => "alltoall",
                TraceAction::Alltoallv { .. } => "alltoallv",
                TraceAction::Allgather { bytes: 12, comm: 0 } => "allgather",
                TraceAction::Allreduce { bytes: 24, comm: 0 } => "allreduce24",
                TraceAction::Allreduce { bytes: 4, comm: 0 } => "allreduce4",
                other => panic!("rank {rank}: unexpected {other:?}"),
            })
            .collect();
        let mut want = vec!["barrier"];
        for _ in 0..iters {
            want.extend(["alltoall", "alltoallv"]);
        }
        want.extend(["allgather", "allreduce24", "allreduce4"]);
        assert_eq!(kinds, want, "rank {rank}");
        let TraceAction::Alltoallv { send, recv, .. } = &got[2] else {
            unreachable!()
        };
        assert_eq!(
            send.iter().sum::<u64>(),
            keys * 4,
            "rank {rank} sends all its keys"
        );
        sends.push(send.clone());
        recvs.push(recv.clone());
    }
    // What rank i receives from j is what j sends to i.
    for i in 0..4 {
        for j in 0..4 {
            assert_eq!(recvs[i][j], sends[j][i], "recv[{i}][{j}]");
        }
    }
}

#[test]
fn cpp_program_is_built_with_mpicxx_and_traced() {
    let s = Scratch::new("mpicast-trace-test");
    let rounds = 5;
    let t = trace_ok(&s, &fixture("ring.cpp"), 3, &["--all-blocks"], &["5"]);
    assert!(t.meta().build.contains("mpicxx"), "{}", t.meta().build);
    for rank in 0..3u32 {
        let (next, prev) = ((rank + 1) % 3, (rank + 2) % 3);
        let mut v: Vec<TraceAction> = (0..rounds)
            .filter_map(|_| sendrecv(Some(next), 800, Some(prev), 800, 7, 0))
            .collect();
        v.push(TraceAction::Allreduce { bytes: 8, comm: 0 });
        assert_actions(&t, rank, &v);
    }
}

#[test]
fn all_blocks_counts_every_construct() {
    let s = Scratch::new("mpicast-trace-test");
    let t = trace_ok(&s, &fixture("constructs.c"), 2, &["--all-blocks"], &[]);
    let model = t.analysis();
    let meta = t.meta();
    assert_eq!(
        meta.counted_blocks.len(),
        model.blocks.len(),
        "uncounted: {:?}",
        meta.uncounted_blocks
    );
    for rank in 0..2 {
        let totals = block_totals(&t.dir, rank);
        let count = |line: u32, kind: &str| -> Vec<u64> {
            let mut v: Vec<u64> = model
                .blocks
                .iter()
                .enumerate()
                .filter(|(_, b)| b.line_start == line && b.kind.name() == kind)
                .map(|(i, _)| totals.get(&(i as u32)).copied().unwrap_or(0))
                .collect();
            v.sort_unstable();
            v
        };
        assert_eq!(count(23, "loop"), [4], "the round loop");
        assert_eq!(count(24, "loop"), [24, 60], "nested non-compound for loops");
        assert_eq!(count(26, "loop"), [20], "do-while");
        assert_eq!(count(27, "loop"), [12], "while with a non-compound body");
        assert_eq!(count(29, "loop"), [32], "for (;;) left by break");
        assert_eq!(count(29, "branch"), [4], "the break");
        assert_eq!(count(10, "branch"), [1, 1, 2, 2], "if / else if / else");
        assert_eq!(count(12, "branch"), [2], "case 0");
        assert_eq!(count(13, "branch"), [1], "case 1 with braces");
        assert_eq!(count(14, "branch"), [1], "default");
        // Every block main's analysis counts exactly agrees with the trace, but those entered
        // before MPI_Init (line 21): counts start there, as the span does.
        for (i, b) in model.blocks.iter().enumerate() {
            if b.line_start <= 21 && b.line_end >= 21 {
                assert_eq!(totals.get(&(i as u32)).copied().unwrap_or(0), 0, "block {i} {} was entered before MPI_Init", b.id);
                continue;
            }
            if b.function == "main" && b.count.status == CountStatus::Exact {
                let want = b.count.value.unwrap_or(f64::NAN) as u64;
                assert_eq!(
                    totals.get(&(i as u32)).copied().unwrap_or(0),
                    want,
                    "block {i} {}",
                    b.id
                );
            }
        }
    }
}

#[test]
fn time_blocks_traces_replay_directly() {
    let s = Scratch::new("mpicast-trace-test");
    let t = trace_ok(
        &s,
        &example("jacobi2d"),
        4,
        &["--time-blocks"],
        &["31", "23", "5"],
    );
    for rank in 0..4 {
        assert_actions(&t, rank, &jacobi2d_expected(rank, 31, 23, 5));
        let timed = actions(&t.dir, rank)
            .into_iter()
            .filter(|a| {
                matches!(
                    a,
                    TraceAction::Compute {
                        compute: Compute::TimedBlocks { .. }
                    }
                )
            })
            .count();
        assert!(timed > 0, "rank {rank} has no timed bursts");
    }
    let meta = t.meta();
    assert!(meta.time_blocks);
    assert!(meta
        .rank_traces
        .iter()
        .all(|r| r.timing_overhead_s.is_some()));
    assert!(
        t.stdout().contains("--time-blocks: clock reads cost"),
        "{}",
        t.context()
    );
    replays(&t.dir);
}

/// Bursts are timed on the thread's CPU time: 200 ms asleep costs (almost) nothing, 200 ms of
/// spinning about 200 ms; the counters' measured cost per increment is in the meta.
#[test]
fn time_blocks_charge_cpu_time_not_waiting() {
    let s = Scratch::new("mpicast-trace-test");
    let t = trace_ok(&s, &fixture("sleep_burst.c"), 1, &["--time-blocks"], &[]);
    let times: Vec<f64> = actions(&t.dir, 0)
        .into_iter()
        .filter_map(|a| match a {
            TraceAction::Compute { compute: Compute::TimedBlocks { seconds, .. } } => Some(seconds),
            _ => None,
        })
        .collect();
    // Before the first barrier, between the first two (asleep), between the last two (spinning),
    // before MPI_Finalize.
    assert_eq!(times.len(), 4, "{times:?}\n{}", t.context());
    assert!(times[1] < 0.02, "the 200 ms asleep was charged {} s", times[1]);
    assert!(times[2] > 0.1 && times[2] < 0.3, "200 ms of spinning was charged {} s", times[2]);
    let meta = t.meta();
    assert!(meta.rank_traces.iter().all(|r| r.counter_ns.is_some_and(|c| (0.0..5.0).contains(&c))), "{:?}", meta.rank_traces);
    // What the cost is spread over: the spin loop's body counted on every pass.
    assert!(meta.rank_traces.iter().all(|r| r.increments.is_some_and(|n| n > 1000)), "{:?}", meta.rank_traces);
}

#[test]
fn the_users_tree_is_never_written() {
    let s = Scratch::new("mpicast-trace-test");
    let user = s.path().join("user");
    std::fs::create_dir_all(user.join("sub")).unwrap();
    std::fs::copy(example("jacobi2d"), user.join("jacobi2d.c")).unwrap();
    std::fs::copy(example("isort"), user.join("sub/isort.c")).unwrap();
    std::fs::write(user.join("notes.txt"), "not a source\n").unwrap();
    let snapshot = |dir: &Path| -> BTreeMap<PathBuf, Vec<u8>> {
        let mut m = BTreeMap::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    stack.push(p.clone());
                    m.insert(p, Vec::new());
                } else {
                    let meta = std::fs::metadata(&p).unwrap();
                    let mut v = std::fs::read(&p).unwrap();
                    v.extend(format!("{:?}", meta.modified().unwrap()).bytes());
                    m.insert(p, v);
                }
            }
        }
        m
    };
    let before = snapshot(&user);
    let t = trace_ok(
        &s,
        &user.join("jacobi2d.c"),
        2,
        &["--all-blocks"],
        &["16", "4"],
    );
    assert_eq!(before, snapshot(&user), "the user's directory changed");
    assert!(t.dir.join("rank-1.trace").is_file());
    // The default trace directory is relative to the current directory, not the source's.
    let out = Command::new(exe())
        .arg("trace")
        .arg(user.join("jacobi2d.c"))
        .args([
            "-n",
            "2",
            "--mpirun-args",
            &s.mpirun_args(),
            "--",
            "16",
            "4",
        ])
        .current_dir(s.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(s.path().join("traces/jacobi2d-n2/rank-0.trace").is_file());
    assert!(s.path().join("traces/jacobi2d-n2/meta.json").is_file());
    assert_eq!(before, snapshot(&user), "the user's directory changed");
}

/// From the corpus (NAS DT): a program whose main returns 1 after MPI_Finalize on every rank.
/// The run is whole: the traces are kept, with a warning naming the exit status.
#[test]
fn a_nonzero_exit_after_finalize_keeps_the_traces_with_a_warning() {
    let s = Scratch::new("mpicast-trace-test");
    // With --time-blocks the plain run beside the trace (for the counters' cost) exits with
    // status 1 too: a warning, not a failure.
    let t = trace(&s, &fixture("exit_status.c"), 2, &["--time-blocks"], &[]);
    assert!(t.stderr().contains("the plain run failed (exit status 1): the counters' cost is not measured"), "{}", t.context());
    assert!(t.out.status.success(), "{}", t.context());
    assert!(
        t.stderr().contains("exited with status 1 after every rank finished"),
        "{}",
        t.context()
    );
    let meta = t.meta();
    assert!(meta.complete);
    assert_eq!(meta.exit_status, Some(1));
    assert_eq!(meta.rank_traces.len(), 2);
}

#[test]
fn a_crashing_rank_leaves_flagged_partial_traces_and_exit_2() {
    let s = Scratch::new("mpicast-trace-test");
    let t = trace(&s, &fixture("crash.c"), 3, &[], &[]);
    assert_eq!(t.out.status.code(), Some(2), "{}", t.context());
    let err = t.stderr();
    let last = err.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("mpicast: crash: the run failed"),
        "last line: {last}\n{}",
        t.context()
    );
    assert!(
        last.contains("incomplete") && last.contains("work directory kept: "),
        "{last}"
    );
    assert!(err.contains("the last lines of the output"), "{err}");
    let meta = t.meta();
    assert!(!meta.complete);
    assert!(!meta.rank_traces[1].complete);
    assert_ne!(meta.exit_status, Some(0));
    let text = std::fs::read_to_string(t.dir.join("rank-1.trace")).unwrap();
    assert!(
        text.trim_end()
            .ends_with("did not reach MPI_Finalize; the trace stops at its last recorded event"),
        "{text}"
    );
    // What rank 1 did before it aborted is there.
    assert_eq!(
        comm_actions(&t.dir, 1),
        vec![TraceAction::Allreduce { bytes: 8, comm: 0 }; 3]
    );
    if let Some(work) = last.split("work directory kept: ").nth(1) {
        let _ = std::fs::remove_dir_all(work.trim());
    }
}

#[test]
fn a_build_failure_shows_the_compiler_and_exits_2() {
    let s = Scratch::new("mpicast-trace-test");
    let t = trace(&s, &fixture("broken.c"), 2, &[], &[]);
    assert_eq!(t.out.status.code(), Some(2), "{}", t.context());
    let err = t.stderr();
    let last = err.lines().last().unwrap_or_default();
    assert!(last.starts_with("mpicast: broken: build failed"), "{err}");
    assert!(last.contains("work directory kept: "), "{last}");
    assert!(
        err.contains("undeclared_variable"),
        "no compiler message:\n{err}"
    );
    if let Some(work) = last.split("work directory kept: ").nth(1) {
        let work = work.trim();
        assert!(Path::new(work).join("src/broken.c").is_file());
        let _ = std::fs::remove_dir_all(work);
    }
}

#[test]
fn sampled_iterations_run_and_are_marked_for_extrapolation() {
    let s = Scratch::new("mpicast-trace-test");
    let t = trace_ok(
        &s,
        &example("jacobi2d"),
        4,
        &["--sample-iterations", "4"],
        &["31", "20", "5"],
    );
    let sampling = t.meta().sampling.expect("sampling info in meta.json");
    assert_eq!((sampling.trip_count, sampling.sampled_iterations), (20, 4));
    assert!(
        sampling.block_id.ends_with(":loop"),
        "{}",
        sampling.block_id
    );
    // Four iterations ran (no residual reduction before the fifth), then the final reduce.
    // (The Cartesian communicator's own allreduces stay.)
    let mut expected = jacobi2d_expected(0, 31, 4, 5);
    let made = made_over(0, false, 4).len();
    let mut k = 0;
    expected.retain(|a| {
        k += 1;
        k <= made || !matches!(a, TraceAction::Allreduce { .. })
    });
    assert_actions(&t, 0, &expected);
}

#[test]
fn folding_keeps_traces_small_as_iterations_grow() {
    let s = Scratch::new("mpicast-trace-test");
    let small = trace_ok(&s, &example("jacobi2d"), 4, &[], &["31", "40", "5"]);
    let bytes = |t: &Traced| t.meta().rank_traces.iter().map(|r| r.bytes).max().unwrap();
    let b40 = bytes(&small);
    let s2 = Scratch::new("mpicast-trace-test");
    let big = trace_ok(&s2, &example("jacobi2d"), 4, &[], &["31", "400", "5"]);
    let b400 = bytes(&big);
    assert!(
        (b400 as f64) < 1.2 * b40 as f64,
        "10x more iterations: {b40} -> {b400} bytes per rank"
    );
    assert_actions(&big, 3, &jacobi2d_expected(3, 31, 400, 5));
}

#[test]
fn an_unwritable_trace_directory_does_not_stop_the_program() {
    let s = Scratch::new("mpicast-trace-test");
    let work = s.path().join("work");
    let t = trace_ok(
        &s,
        &example("pi_dartboard"),
        2,
        &["--work-dir", work.to_str().unwrap()],
        &["1000", "2"],
    );
    assert_eq!(
        t.meta().work_dir.as_deref(),
        Some(std::fs::canonicalize(&work).unwrap().to_str().unwrap())
    );
    let exe = work.join("build/pi_dartboard");
    assert!(exe.is_file());
    let not_a_dir = s.path().join("file");
    std::fs::write(&not_a_dir, "").unwrap();
    let out = Command::new("mpirun")
        .args(s.mpirun_args().split_whitespace())
        .args(["-np", "2"])
        .arg(&exe)
        .args(["1000", "2"])
        .env("MPICAST_TRACE_DIR", not_a_dir.join("traces"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("elapsed_s="), "{stdout}");
    assert!(stderr.contains("runs without a trace"), "{stderr}");
}

#[test]
fn timed_bursts_parse_and_format() {
    use mpicast::trace::{format_action, parse_line, Line};
    let a = TraceAction::Compute {
        compute: Compute::TimedBlocks {
            blocks: vec![(3, 100), (5, 2)],
            seconds: 1.23e-4,
        },
    };
    let text = format_action(&a);
    assert_eq!(text, "compute blocks 3x100 5x2 time=1.23e-4");
    assert_eq!(parse_line(&text).unwrap(), Some(Line::Action(a)));
    assert_eq!(
        parse_line("compute blocks time=2e-6").unwrap(),
        Some(Line::Action(TraceAction::Compute {
            compute: Compute::TimedBlocks {
                blocks: vec![],
                seconds: 2e-6
            }
        }))
    );
    assert!(parse_line("compute blocks").is_err());
    assert!(parse_line("compute blocks 3x1 time=-1").is_err());
}

#[test]
fn a_custom_build_command_links_the_runtime_through_its_mpicc() {
    let s = Scratch::new("mpicast-trace-test");
    let user = s.path().join("proj");
    std::fs::create_dir_all(&user).unwrap();
    std::fs::copy(example("jacobi2d"), user.join("jacobi2d.c")).unwrap();
    std::fs::write(
        user.join("Makefile"),
        "jacobi: jacobi2d.c\n\tmpicc -O2 -o jacobi jacobi2d.c -lm\n",
    )
    .unwrap();
    let t = trace_ok(&s, &user, 4, &["--build", "make"], &["31", "23", "5"]);
    assert_eq!(t.meta().build, "make");
    assert_eq!(t.meta().program, "proj");
    for rank in 0..4 {
        assert_actions(&t, rank, &jacobi2d_expected(rank, 31, 23, 5));
    }
    assert!(
        !user.join("jacobi").exists(),
        "the build ran in the user's directory"
    );
}

#[test]
fn wildcards_communicators_v_collectives_and_requests_are_recorded() {
    let s = Scratch::new("mpicast-trace-test");
    let t = trace_ok(&s, &fixture("wrappers.c"), 4, &[], &[]);
    let counts: Vec<u64> = (1..=4).map(|j| 4 * j).collect();
    for rank in 0..4u32 {
        let mut v = Vec::new();
        if rank == 0 {
            for _ in 1..4 {
                v.push(TraceAction::Recv {
                    from: Peer::Any,
                    bytes: Some(4),
                    tag: Tag::Any,
                    comm: 0,
                });
            }
        } else {
            v.push(send(0, 4, rank as i32, 0));
        }
        let half: Vec<u32> = (0..4).filter(|r| r % 2 == rank % 2).collect();
        v.extend(made_over(0, true, 2));
        v.push(TraceAction::CommDef { id: 1, ranks: half.into() });
        v.push(TraceAction::Bcast {
            bytes: 32,
            root: 0,
            comm: 1,
        });
        v.extend(made_over(0, false, 4));
        v.push(TraceAction::CommDef {
            id: 2,
            ranks: vec![0, 1, 2, 3].into(),
        });
        v.push(TraceAction::Scan { bytes: 4, comm: 2 });
        v.push(TraceAction::Gatherv {
            counts: counts.clone(),
            root: 0,
            comm: 0,
        });
        v.push(TraceAction::Scatterv {
            counts: counts.clone(),
            root: 0,
            comm: 0,
        });
        v.push(TraceAction::Allgatherv {
            counts: counts.clone(),
            comm: 0,
        });
        v.push(TraceAction::ReduceScatter {
            counts: counts.clone(),
            comm: 0,
        });
        v.push(TraceAction::Irecv {
            req: 0,
            from: Peer::Rank((rank + 3) % 4),
            bytes: Some(4),
            tag: Tag::Value(5),
            comm: 0,
        });
        v.push(TraceAction::Isend {
            req: 1,
            to: (rank + 1) % 4,
            bytes: 4,
            tag: 5,
            comm: 0,
        });
        v.push(TraceAction::Wait { req: 1 });
        v.push(TraceAction::Test { req: 0 });
        assert_actions(&t, rank, &v);
    }
    mpicast::trace::validate_dir(&t.dir, 4).unwrap();
}

/// `-D` means what it means to a compiler for every build: a program that guards its MPI code
/// with `#ifdef USE_MPI` runs serially without it (and the failure names the macro), and with
/// `-D USE_MPI -D WIDTH=7` it is built with MPI and the value.
#[test]
fn defines_reach_the_build_and_a_missing_mpi_macro_is_named() {
    let s = Scratch::new("mpicast-trace-test");
    let src = root().join("tests/fixtures/build/guarded_mpi.c");
    let t = trace(&s, &src, 2, &[], &[]);
    assert_eq!(t.out.status.code(), Some(2), "{}", t.context());
    let err = String::from_utf8_lossy(&t.out.stderr);
    assert!(err.contains("no rank called MPI_Init") && err.contains("-DUSE_MPI"), "{err}");
    let t = trace_ok(&s, &src, 2, &["-D", "USE_MPI", "-D", "WIDTH=7"], &[]);
    assert_eq!(t.value("width"), "7");
    assert_eq!(t.value("ranks"), "2");
    assert!(t.meta().build.contains("-DUSE_MPI") && t.meta().build.contains("-DWIDTH=7"), "{}", t.meta().build);
}

/// A compilation database next to the sources gives each file its flags (here -D and an
/// include directory), for the build and the analysis.
#[test]
fn compile_commands_json_gives_the_build_its_flags() {
    let s = Scratch::new("mpicast-trace-test");
    let proj = s.path().join("proj");
    std::fs::create_dir_all(proj.join("inc")).unwrap();
    let text = std::fs::read_to_string(root().join("tests/fixtures/build/guarded_mpi.c")).unwrap();
    std::fs::write(proj.join("guarded_mpi.c"), text.replace("#include <stdio.h>", "#include <stdio.h>\n#include \"width.h\"")).unwrap();
    std::fs::write(proj.join("inc/width.h"), "#define WIDTH 5\n").unwrap();
    let db = format!(
        r#"[{{"directory": "{}", "file": "guarded_mpi.c", "arguments": ["mpicc", "-DUSE_MPI", "-I", "inc", "-c", "guarded_mpi.c"]}}]"#,
        proj.display()
    );
    std::fs::write(proj.join("compile_commands.json"), db).unwrap();
    let t = trace_ok(&s, &proj, 2, &[], &[]);
    assert_eq!(t.value("width"), "5");
    assert_eq!(t.value("ranks"), "2");
}

/// From the corpus (MPICH's isendirecv): requests that share a handle keep their own ids, so
/// the waitall names every request once and the trace replays.
#[test]
fn requests_sharing_a_handle_keep_their_own_ids() {
    let s = Scratch::new("mpicast-trace-test");
    let t = trace_ok(&s, &root().join("tests/fixtures/corpus/self_isend.c"), 2, &[], &[]);
    assert_eq!(t.value("exchanged"), "4");
    for rank in 0..2 {
        let text = std::fs::read_to_string(t.dir.join(format!("rank-{rank}.trace"))).unwrap();
        let line = text.lines().find(|l| l.starts_with("waitall")).unwrap_or_else(|| panic!("no waitall\n{text}"));
        let mut ids: Vec<&str> = line.split_whitespace().skip(1).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), 4, "rank {rank}: {line}");
    }
    let out = Command::new(exe())
        .args(["replay"])
        .arg(&t.dir)
        .args(["--platform", root().join("platforms/localhost.xml").to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// HPC Challenge's RandomAccess completes its receives with MPI_Testany and cancels the ones
/// still posted at the end: every completion is a `test`, every cancel a `cancel` (the wait
/// after it is not written), and the trace replays (a cancelled receive used to stay posted
/// and the simulation deadlocked).
#[test]
fn testany_and_cancel_are_recorded_and_replay() {
    let s = Scratch::new("mpicast-trace-test");
    let size = 3u32;
    let t = trace_ok(&s, &fixture("testany_cancel.c"), size, &["--time-blocks"], &[]);
    let (nrecv, nmsg) = (3, 4);
    for rank in 0..size {
        let a = actions(&t.dir, rank);
        let count = |f: &dyn Fn(&TraceAction) -> bool| a.iter().filter(|x| f(x)).count();
        let arrivals = (nmsg + 1) * (size as usize - 1);
        assert_eq!(count(&|x| matches!(x, TraceAction::Irecv { .. })), nrecv + arrivals, "rank {rank}");
        assert_eq!(count(&|x| matches!(x, TraceAction::Test { .. })), arrivals, "rank {rank}");
        assert_eq!(count(&|x| matches!(x, TraceAction::Cancel { .. })), nrecv, "rank {rank}");
        assert_eq!(count(&|x| matches!(x, TraceAction::Wait { .. })), 0, "rank {rank}");
    }
    replays(&t.dir);
}

/// Irregular references to tables whose sizes the analysis cannot see (struct members
/// allocated in another function, sized from the command line): the run's address probes
/// measure the range each touched, and a prediction from the trace takes it as the
/// reference's reuse distance.
#[test]
fn address_probes_measure_what_irregular_references_touch() {
    let s = Scratch::new("mpicast-trace-test");
    let t = trace_ok(&s, &fixture("hidden_table.c"), 2, &[], &["100000", "65536"]);
    let model = t.analysis();
    let meta = t.meta();
    // The reference written on `line` that is probed (its block and index in `mem`).
    let probed = |line: u32, array: &str| -> (u64, f64) {
        let (b, j) = model
            .blocks
            .iter()
            .enumerate()
            .filter(|(_, b)| b.line_start == line)
            .find_map(|(i, b)| b.mem.iter().position(|m| m.array == array && !m.at.is_empty()).map(|j| (i as u32, j as u32)))
            .unwrap_or_else(|| panic!("no irregular reference to {array} on line {line}: {:?}", model.blocks.iter().filter(|b| b.line_start == line).map(|b| &b.mem).collect::<Vec<_>>()));
        meta.footprints
            .iter()
            .find(|f| f.block == b && f.mem == j)
            .map(|f| (f.bytes, f.line_reuse))
            .unwrap_or_else(|| panic!("no footprint for {array} on line {line}: {:?}", meta.footprints))
    };
    // Keys 0 and 65535 are there: 65,536 ints; `& 63`: 64 ints; halved, from the middle:
    // 32,768. At random over 4,096 lines, 64 remembered: about 1.6% found again; `small`'s
    // 4 lines always but the first time; a stream of ints, 15 of 16.
    let (bytes, reuse) = probed(39, "t.counts");
    assert_eq!(bytes, 65536 * 4);
    assert!(reuse < 0.05, "{reuse}");
    let (bytes, reuse) = probed(41, "t.small");
    assert_eq!(bytes, 64 * 4);
    assert!(reuse > 0.99, "{reuse}");
    let (bytes, reuse) = probed(45, "upper");
    assert_eq!(bytes, 32768 * 4);
    assert!(reuse < 0.05, "{reuse}");
    let (bytes, reuse) = probed(48, "t.keys");
    assert_eq!(bytes, 100_000 * 4);
    assert!((reuse - 15.0 / 16.0).abs() < 0.01, "{reuse}");
    // A prediction from the trace sees the measured sizes.
    let set = mpicast::trace::set::TraceSet::open(&t.dir).unwrap();
    let sized: Vec<i128> = set
        .model
        .blocks
        .iter()
        .flat_map(|b| b.mem.iter())
        .filter(|m| !m.at.is_empty())
        .filter_map(|m| m.reuse_bytes.as_ref().and_then(|e| e.value()).map(|v| v as i128))
        .collect();
    assert!(sized.contains(&(65536 * 4)) && sized.contains(&(32768 * 4)), "{sized:?}");
    // With --time-blocks the bursts must not hold the probes' time: none.
    let timed = trace_ok(&s, &fixture("hidden_table.c"), 1, &["--time-blocks"], &["1000", "64"]);
    assert!(timed.meta().footprints.is_empty(), "{:?}", timed.meta().footprints);
}

/// Calls into code the analysis does not see are timed in the traced run, and a prediction
/// from the trace charges them: 20 naps of 2 ms per rank through nanosleep (costed as one
/// `call` op, a few nanoseconds, without the timing). Calls that run the program's own code
/// (qsort's comparator) or do not run every time their block does are not timed, and those
/// that take under 1% of the run together (strlen here) are not charged.
#[test]
fn calls_into_libraries_are_timed_and_charged() {
    let s = Scratch::new("mpicast-trace-test");
    let t = trace_ok(&s, &fixture("library_calls.c"), 2, &["--all-blocks"], &["20"]);
    let model = t.analysis();
    let mut opaque: Vec<&str> = model.blocks.iter().flat_map(|b| b.opaque.iter().map(|c| c.func.as_str())).collect();
    opaque.sort_unstable();
    assert_eq!(opaque, ["nanosleep", "strlen"]);
    let meta = t.meta();
    let call = |f: &str| meta.calls.iter().find(|c| c.func == f).unwrap_or_else(|| panic!("{f} not timed: {:?}\n{}", meta.calls, t.context()));
    let nap = call("nanosleep");
    assert_eq!((nap.calls, nap.timed), (40, 40));
    assert!((2.0e6..5.0e7).contains(&nap.ns), "a 2 ms nap measured {} ns", nap.ns);
    // strlen's 40 calls take far less than 1% of the run: left to its call op.
    assert!(meta.calls.iter().all(|c| c.func != "strlen"), "{:?}", meta.calls);
    // The prediction charges the naps: at least 20 x 2 ms on each rank.
    let p = predicted_from(&t, "library_calls.c", "20");
    let predicted = p["predicted_s"].as_f64().unwrap();
    assert!(predicted >= 0.04 && predicted < 0.05 + 1.5 * 20.0 * nap.ns * 1e-9, "predicted {predicted} s with naps of {} ns", nap.ns);
    // With --time-blocks the bursts hold the calls' time: nothing is timed apart.
    let timed = trace_ok(&s, &fixture("library_calls.c"), 1, &["--time-blocks"], &["2"]);
    assert!(timed.meta().calls.is_empty(), "{:?}", timed.meta().calls);
}

/// `mpicast predict -n 2` of a trace fixture from its 2-rank trace (fixture table, localhost,
/// every block listed), as JSON.
fn predicted_from(t: &Traced, name: &str, arg: &str) -> serde_json::Value {
    let out = Command::new(exe())
        .args(["predict", "-n", "2", "--top", "1000", "--machine"])
        .arg(fixed_machine())
        .arg("--platform")
        .arg(platform("localhost"))
        .arg("--trace")
        .arg(&t.dir)
        .args(["--json", "-"])
        .arg(fixture(name))
        .args(["--", arg])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Polls that find nothing are charged: 20,000 failed MPI_Test on rank 0 (exactly: its peer
/// sends only when told), timed on the CPU clock and written as `compute S` after the bursts;
/// none on rank 1, and none with --time-blocks (the bursts hold them).
#[test]
fn polls_that_find_nothing_are_charged() {
    let s = Scratch::new("mpicast-trace-test");
    let t = trace_ok(&s, &fixture("polls.c"), 2, &["--all-blocks"], &["20000"]);
    let meta = t.meta();
    let (r0, r1) = (&meta.rank_traces[0], &meta.rank_traces[1]);
    assert_eq!(r0.polls, Some(20000), "{:?}\n{}", meta.rank_traces, t.context());
    assert_eq!(r1.polls, None);
    let poll_s = r0.poll_s.unwrap();
    assert!((1e-8..1e-4).contains(&(poll_s / 20000.0)), "a poll cost {} s", poll_s / 20000.0);
    let written: f64 = actions(&t.dir, 0)
        .into_iter()
        .filter_map(|a| match a {
            TraceAction::Compute { compute: Compute::Seconds(x) } => Some(x),
            _ => None,
        })
        .sum();
    assert!((written - poll_s).abs() <= 0.01 * poll_s, "the trace holds {written} s of polls, the run {poll_s} s");
    let timed = trace_ok(&s, &fixture("polls.c"), 2, &["--time-blocks"], &["2000"]);
    assert!(timed.meta().rank_traces.iter().all(|r| r.polls.is_none()), "{:?}", timed.meta().rank_traces);
}

/// A communicator's members are kept as runs: the world reversed (MPICH's harness splits it with
/// key size - rank) is one run counting down, `3-0`, printed and read back as such.
#[test]
fn a_communicator_counting_down_is_one_run() {
    use mpicast::trace::{format_action, parse_line, Line};
    let Some(Line::Action(a)) = parse_line("comm 1 1048575-0").unwrap() else { panic!("a comm line is an action") };
    let TraceAction::CommDef { ranks, .. } = &a else { panic!("a communicator") };
    assert_eq!((ranks.len(), ranks.runs().len(), ranks.position(0), ranks.first()), (1 << 20, 1, Some(1_048_575), Some(1_048_575)));
    assert_eq!(format_action(&a), "comm 1 1048575-0");
    let Some(Line::Action(b)) = parse_line("comm 1 3-0,5,6-7").unwrap() else { panic!("a comm line is an action") };
    let TraceAction::CommDef { ranks, .. } = &b else { panic!("a communicator") };
    assert_eq!(ranks.to_vec(), vec![3, 2, 1, 0, 5, 6, 7]);
    assert_eq!(format_action(&b), "comm 1 3-0,5-7");
}

/// Missed loop exits: the trace runtime's loop hook counts, on each of 2 ranks, the entries
/// whose trip differs from the one before (exactly the changes the program counts itself; the
/// first entry has none before it) and every entry of 100 trips; the analysis counts the loops
/// it can (100 trips: every entry; 8: none; a trip that follows the outer variable: every
/// entry), and its count stands where it has one; the prediction charges each missed exit one
/// `branch_miss` (8 ns in the fixture table) in the block the loop is in.
#[test]
fn missed_loop_exits_are_counted_and_charged() {
    let s = Scratch::new("mpicast-trace-test");
    let n = 1000u64;
    let t = trace_ok(&s, &fixture("loop_exits.c"), 2, &["--all-blocks"], &["1000"]);
    let changes: u64 = t.value("changes").parse().unwrap();
    let model = t.analysis();
    let meta = t.meta();
    let at = |line: u32| model.blocks.iter().position(|b| b.kind == BlockKind::Loop && b.line_start == line).unwrap_or_else(|| panic!("no loop at line {line}"));
    let exits = |line: u32| meta.loop_exits.iter().find(|l| l.block as usize == at(line)).map(|l| (l.entries, l.misses));
    assert_eq!(exits(39), Some((2 * n, 2 * changes)), "drawn trips: {:?}", meta.loop_exits);
    assert_eq!(exits(42), Some((2 * n, 2 * n)), "100 trips: {:?}", meta.loop_exits);
    assert_eq!((exits(30), exits(33), exits(36)), (Some((100, 100)), Some((100, 0)), Some((100, 98))), "{:?}", meta.loop_exits);
    let rule = |line: u32| model.blocks[at(line)].exit_misses.as_ref().map(|e| e.eval_map(&Default::default()).unwrap());
    assert_eq!((rule(30), rule(33), rule(36)), (Some(1.0), Some(0.0), Some(1.0)));
    assert_eq!((rule(39), rule(42)), (None, None), "data decides these trips");

    let p = predicted_from(&t, "loop_exits.c", "1000");
    // The outer loops (their iterations run the inner loops' entries), both ranks together.
    let miss_s = |line: u64| {
        p["blocks"].as_array().unwrap().iter().find(|b| b["kind"] == "loop" && b["line_start"] == line).map_or(0.0, |b| b["op_seconds"]["branch_miss"].as_f64().unwrap_or(0.0))
    };
    let ns = 8e-9;
    for (line, misses) in [(29, 2.0 * 50.0), (32, 0.0), (35, 2.0 * 50.0), (38, 2.0 * changes as f64), (41, 2.0 * n as f64)] {
        let want = misses * ns;
        assert!((miss_s(line) - want).abs() <= 1e-3 * want + 1e-15, "outer loop at line {line}: {} s of missed exits, {want} s expected", miss_s(line));
    }
}
