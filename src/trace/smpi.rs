//! Export to SimGrid's time-independent trace format, so that SMPI's own replay
//! (`smpirun -replay`) can cross-check ours.
//!
//! One file per rank (`smpi-<R>.txt`, lines `<rank> <action> ...`) and an index file (`traces.txt`,
//! one per-rank file per line) that `smpirun -replay` takes. Sizes are bytes (SMPI's replay
//! datatype defaults to MPI_BYTE); compute seconds become flops at `speed_flops`.
//! Not expressible (error): communicators other than the world, ANY_SOURCE, receives without a
//! size, scan, block-count compute. Loops are unfolded.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::model::trace::{Compute, Peer, Tag, TraceAction, COMM_WORLD};

/// Exports ranks 0..n of `dir` into `out`; returns the index file to give `smpirun -replay`.
/// `reduce_flops_per_byte` sets the computation charged by reduce/allreduce/reduce_scatter
/// (SMPI charges it once, after the collective).
pub fn export_dir(dir: &Path, n: u32, out: &Path) -> Result<PathBuf> {
    export_dir_with(dir, n, out, 1e9, 0.0)
}

pub fn export_dir_with(
    dir: &Path,
    n: u32,
    out: &Path,
    speed_flops: f64,
    reduce_flops_per_byte: f64,
) -> Result<PathBuf> {
    std::fs::create_dir_all(out).with_context(|| format!("{}: cannot create", out.display()))?;
    let mut index = String::new();
    let from = crate::trace::pack::TraceDir::open(dir)?;
    for r in 0..n {
        let path = out.join(format!("smpi-{r}.txt"));
        export_rank(
            &from,
            r,
            n,
            &path,
            speed_flops,
            reduce_flops_per_byte,
        )?;
        index.push_str(&format!("{}\n", std::path::absolute(&path)?.display()));
    }
    let idx = out.join("traces.txt");
    std::fs::write(&idx, index).with_context(|| format!("{}: cannot write", idx.display()))?;
    Ok(idx)
}

fn export_rank(src: &crate::trace::pack::TraceDir, r: u32, n: u32, dst: &Path, speed: f64, fpb: f64) -> Result<()> {
    let mut rd = src.reader(r)?;
    let mut out = BufWriter::new(
        File::create(dst).with_context(|| format!("{}: cannot write", dst.display()))?,
    );
    // Outstanding requests: id -> (src, dst, tag) as SMPI's `wait` names them.
    let mut reqs: HashMap<u64, (u32, u32, i32)> = HashMap::new();
    let mut order: Vec<u64> = Vec::new();
    writeln!(out, "{r} init")?;
    while let Some((a, line)) = rd.next_action()? {
        let bad =
            |what: &str| anyhow::anyhow!("{}:{line}: cannot export to SMPI: {what}", rd.file());
        let world = |c: u32| {
            if c == COMM_WORLD {
                Ok(())
            } else {
                Err(bad("communicators other than the world"))
            }
        };
        let src_of = |p: Peer| match p {
            Peer::Rank(s) => Ok(s),
            Peer::Any => Err(bad("ANY_SOURCE")),
        };
        let tag_of = |t: Tag| match t {
            Tag::Value(v) => Ok(v),
            Tag::Any => Err(bad("ANY_TAG")),
        };
        let size_of = |b: Option<u64>| b.ok_or_else(|| bad("a receive without its size"));
        let list = |v: &[u64]| {
            v.iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(" ")
        };
        use TraceAction as A;
        match &a {
            A::Compute { compute } => {
                let flops = match compute {
                    Compute::Seconds(s) => s * speed,
                    Compute::Flops(f) => *f,
                    Compute::TimedBlocks { seconds, .. } => seconds * speed,
                    Compute::Blocks(_) => {
                        return Err(bad("block counts (estimate them into seconds first)"))
                    }
                };
                writeln!(out, "{r} compute {flops}")?;
            }
            A::CommDef { .. } => return Err(bad("communicators other than the world")),
            // A constructor's own work: SMPI's replay has no platform figure for it.
            A::Ctor { .. } => {}
            A::Send {
                to,
                bytes,
                tag,
                comm,
                ..
            } => {
                world(*comm)?;
                writeln!(out, "{r} send {to} {tag} {bytes}")?;
            }
            A::Recv {
                from,
                bytes,
                tag,
                comm,
            } => {
                world(*comm)?;
                writeln!(
                    out,
                    "{r} recv {} {} {}",
                    src_of(*from)?,
                    tag_of(*tag)?,
                    size_of(*bytes)?
                )?;
            }
            A::Arecv { .. } => return Err(bad("asynchronous receives (SMPI's replay has none)")),
            A::Isend {
                req,
                to,
                bytes,
                tag,
                comm,
            } => {
                world(*comm)?;
                writeln!(out, "{r} isend {to} {tag} {bytes}")?;
                reqs.insert(*req, (r, *to, *tag));
                order.push(*req);
            }
            A::Irecv {
                req,
                from,
                bytes,
                tag,
                comm,
            } => {
                world(*comm)?;
                let (s, t) = (src_of(*from)?, tag_of(*tag)?);
                writeln!(out, "{r} irecv {s} {t} {}", size_of(*bytes)?)?;
                reqs.insert(*req, (s, r, t));
                order.push(*req);
            }
            // SMPI's replay has no cancel: the receive is left posted (never waited for).
            A::Cancel { req } => {
                reqs.remove(req);
                order.retain(|x| x != req);
            }
            A::Wait { req } | A::Test { req } => {
                if let Some((s, d, t)) = reqs.remove(req) {
                    order.retain(|x| x != req);
                    writeln!(out, "{r} wait {s} {d} {t}")?;
                }
            }
            A::Waitall { reqs: ids } => {
                let ids: Vec<u64> = if ids.is_empty() {
                    order.clone()
                } else {
                    ids.clone()
                };
                if ids.len() == order.len() && !ids.is_empty() {
                    writeln!(out, "{r} waitall")?;
                    reqs.clear();
                    order.clear();
                } else {
                    for id in ids {
                        if let Some((s, d, t)) = reqs.remove(&id) {
                            order.retain(|x| *x != id);
                            writeln!(out, "{r} wait {s} {d} {t}")?;
                        }
                    }
                }
            }
            A::Sendrecv {
                to,
                send_bytes,
                send_tag,
                from,
                recv_bytes,
                recv_tag,
                comm,
            } => {
                world(*comm)?;
                let (s, t) = (src_of(*from)?, tag_of(*recv_tag)?);
                writeln!(out, "{r} irecv {s} {t} {}", size_of(*recv_bytes)?)?;
                writeln!(out, "{r} isend {to} {send_tag} {send_bytes}")?;
                writeln!(out, "{r} wait {s} {r} {t}")?;
                writeln!(out, "{r} wait {r} {to} {send_tag}")?;
            }
            A::Barrier { comm } => {
                world(*comm)?;
                writeln!(out, "{r} barrier")?;
            }
            A::Bcast { bytes, root, comm } => {
                world(*comm)?;
                writeln!(out, "{r} bcast {bytes} {root}")?;
            }
            A::Reduce { bytes, root, comm } => {
                world(*comm)?;
                writeln!(out, "{r} reduce {bytes} {} {root}", *bytes as f64 * fpb)?;
            }
            A::Allreduce { bytes, comm } => {
                world(*comm)?;
                writeln!(out, "{r} allreduce {bytes} {}", *bytes as f64 * fpb)?;
            }
            A::Gather { bytes, root, comm } => {
                world(*comm)?;
                writeln!(out, "{r} gather {bytes} {bytes} {root}")?;
            }
            A::Scatter { bytes, root, comm } => {
                world(*comm)?;
                writeln!(out, "{r} scatter {bytes} {bytes} {root}")?;
            }
            A::Allgather { bytes, comm } => {
                world(*comm)?;
                writeln!(out, "{r} allgather {bytes} {bytes}")?;
            }
            A::Alltoall { bytes, comm } => {
                world(*comm)?;
                writeln!(out, "{r} alltoall {bytes} {bytes}")?;
            }
            A::Gatherv { counts, root, comm } => {
                world(*comm)?;
                writeln!(
                    out,
                    "{r} gatherv {} {} {root}",
                    counts[r as usize],
                    list(counts)
                )?;
            }
            A::Scatterv { counts, root, comm } => {
                world(*comm)?;
                writeln!(
                    out,
                    "{r} scatterv {} {} {root}",
                    list(counts),
                    counts[r as usize]
                )?;
            }
            A::Allgatherv { counts, comm } => {
                world(*comm)?;
                writeln!(
                    out,
                    "{r} allgatherv {} {}",
                    counts[r as usize],
                    list(counts)
                )?;
            }
            A::Alltoallv { send, recv, comm } => {
                world(*comm)?;
                let (ss, rs): (u64, u64) = (send.iter().sum(), recv.iter().sum());
                writeln!(out, "{r} alltoallv {ss} {} {rs} {}", list(send), list(recv))?;
            }
            A::ReduceScatter { counts, comm } => {
                world(*comm)?;
                let total: u64 = counts.iter().sum();
                writeln!(
                    out,
                    "{r} reducescatter {} {}",
                    list(counts),
                    total as f64 * fpb
                )?;
            }
            A::Scan { .. } => return Err(bad("scan (SMPI's replay has no scan action)")),
        }
    }
    if !reqs.is_empty() {
        writeln!(out, "{r} waitall")?;
    }
    writeln!(out, "{r} finalize")?;
    let _ = n;
    out.flush()?;
    Ok(())
}

/// Writes an smpirun hostfile: one host per rank.
pub fn write_hostfile(path: &Path, hosts: &[String]) -> Result<()> {
    if hosts.is_empty() {
        bail!("no hosts for the hostfile");
    }
    std::fs::write(path, hosts.join("\n") + "\n")
        .with_context(|| format!("{}: cannot write", path.display()))
}
