//! A traced run's summary as text: what `mpicast trace` prints.

use std::fmt::Write;
use std::path::Path;

use crate::model::trace::TraceMeta;

/// Where the traces are and what they hold, the run's wall clock (and the plain run's, with
/// the slowdown), the cost of timing bursts, sampling, how it was launched.
pub fn trace(m: &TraceMeta, dir: &Path, blocks: usize) -> String {
    let mut o = String::new();
    let max_bytes = m.rank_traces.iter().map(|t| t.bytes).max().unwrap_or(0);
    let events: u64 = m.rank_traces.iter().filter_map(|t| t.events).sum();
    let _ = writeln!(o,
        "mpicast: traces of {} at {} ranks in {}: {} counted block{} of {}, {} MPI events, at most {} bytes per rank",
        m.program,
        m.ranks,
        dir.display(),
        m.counted_blocks.len(),
        if m.counted_blocks.len() == 1 { "" } else { "s" },
        blocks,
        events,
        max_bytes
    );
    let _ = match m.plain_wall_s {
        Some(p) if p > 0.0 => writeln!(
            o,
            "mpicast: instrumented run {:.3} s, plain run {:.3} s (mpirun wall clock, one run each): {:.3}x",
            m.instrumented_wall_s,
            p,
            m.instrumented_wall_s / p
        ),
        _ => writeln!(o, "mpicast: instrumented run {:.3} s (mpirun wall clock)", m.instrumented_wall_s),
    };
    if m.time_blocks {
        let worst = m
            .rank_traces
            .iter()
            .filter_map(|t| t.timing_overhead_s)
            .fold(0.0, f64::max);
        let _ = writeln!(o,
            "mpicast: --time-blocks: clock reads cost about {:.3e} s on the busiest rank ({:.2}% of the run)",
            worst,
            100.0 * worst / m.instrumented_wall_s.max(1e-9)
        );
    }
    if let Some(s) = &m.sampling {
        let _ = writeln!(o,
            "mpicast: sampled {} of {} iterations of the loop {} (meta.json says so for extrapolation)",
            s.sampled_iterations, s.trip_count, s.block_id
        );
    }
    let _ = writeln!(
        o,
        "mpicast: launched as: {}",
        crate::mpi::build::show(&m.launch)
    );
    if let Some(w) = &m.work_dir {
        let _ = writeln!(o, "mpicast: work directory kept: {w}");
    }
    o
}
