//! CTC: characterises a network with an MPI ping-pong (`run`), fits piecewise latency/bandwidth
//! segments to it (`fit`), derives SimGrid SMPI settings that reproduce it (with
//! `platform::smpi`; `platform::measured` writes the platform) and replays the ping-pong
//! through the project's simulator as a self-check.

pub mod bench;
pub mod fit;
pub mod run;

use std::path::Path;

use anyhow::{Context, Result};

use crate::model::network::{
    Duplex, ExchangePoint, FitQuality, IntraHost, NetworkTable, PingPongPoint, Segment, SelfCheck, SelfCheckRow,
};
use crate::model::simjob::{ActorSpec, SimAction, SimJob};
use crate::platform::{self, smpi};

/// Self-check bound: simulated vs measured one-way time, relative, at every size.
pub const SELF_CHECK_TOLERANCE: f64 = 0.05;

/// Largest break point taken for an eager/rendezvous switch.
pub const EAGER_MAX_BYTES: u64 = 1 << 20;

/// Reads a network table (schema and version checked).
pub fn load_table(path: &Path) -> Result<NetworkTable> {
    Ok(crate::model::read_artifact(path)?)
}

impl NetworkTable {
    /// Sizes below this are sent eagerly (SimGrid's smpi/send-is-detached-thresh); SimGrid's
    /// default, 65536, when no break point raises the time.
    pub fn eager_threshold(&self) -> u64 {
        self.eager_threshold_bytes.unwrap_or(65536)
    }

    /// SimGrid --cfg items, `name:value`.
    pub fn cfg_items(&self) -> &[String] {
        &self.smpi.cfg
    }

    /// The fitted one-way time of a message of `size` bytes, seconds.
    pub fn one_way_s(&self, size: u64) -> f64 {
        fit::predict(&self.segments, size)
    }

    /// The smallest-message latency of the fit, seconds.
    pub fn latency_s(&self) -> f64 {
        self.segments
            .first()
            .map(|g| g.latency_s)
            .unwrap_or(f64::NAN)
    }

    /// The bandwidth of the segment holding the largest messages, bytes/s.
    pub fn bandwidth_bytes_per_s(&self) -> f64 {
        self.segments
            .last()
            .map(|g| g.bandwidth_bytes_per_s)
            .unwrap_or(f64::NAN)
    }

    /// The ping-pong as the platform models it: the measured medians, except at the sizes set
    /// aside as implausible (`fit.outlier_sizes_bytes`), which follow the fit.
    pub fn modelled_pingpong(&self) -> Vec<PingPongPoint> {
        modelled(&self.pingpong, &self.segments, &self.fit.outlier_sizes_bytes)
    }

    /// Sizes the fit went through although [`fit::spikes`] sets them aside (a table written
    /// before the rule was as strict as it is).
    pub fn implausible_in_fit(&self) -> Vec<u64> {
        let points: Vec<(u64, f64)> = self.pingpong.iter().map(|p| (p.size_bytes, p.median_s)).collect();
        fit::spikes(&points)
            .into_iter()
            .filter(|s| !self.fit.outlier_sizes_bytes.contains(s))
            .collect()
    }

    /// What each constructor measured takes beyond what a replay simulates of it: its
    /// collectives (`simulated`: an allgather of 8 bytes and three allreduces of 4 bytes as the
    /// platform replays them, [`simulated_ctor_collectives`]; without it, as MPI ran them
    /// blocking: `ref_gather`, `ref_reduce`) and a duplicate of MPI_COMM_SELF (`self`, the
    /// machine table's comm_create), never below 0. Empty when the table has no constructor
    /// timings.
    pub fn ctor_costs(&self, simulated: Option<(f64, f64)>) -> platform::CtorCosts {
        use crate::model::trace::CtorKind;
        let of = |name: &str| self.constructors.iter().find(|c| c.name == name).map(|c| c.mean_s);
        let (Some(gather), Some(reduce), Some(own)) = (of("ref_gather"), of("ref_reduce"), of("self")) else {
            return platform::CtorCosts::default();
        };
        let (gather, reduce) = simulated.unwrap_or((gather, reduce));
        // A split with MPI_UNDEFINED is charged comm_null where its colour is the constant
        // (the front end's `mpi::ctor_op`): its own work is taken beyond that one's measure
        // (`self_null`, absent from tables measured before it).
        let null_own = of("self_null").unwrap_or(own);
        let entries = self
            .constructors
            .iter()
            .filter_map(|c| {
                let kind = CtorKind::parse(&c.name)?;
                let own = if kind == CtorKind::Split && c.members == 0 { null_own } else { own };
                let simulated = reduce + own + if kind == CtorKind::Split { gather } else { 0.0 };
                Some((kind, c.members, (c.mean_s - simulated).max(0.0)))
            })
            .collect();
        platform::CtorCosts::new(entries)
    }

    /// The SMPI settings rebuilt as factor lists (what `smpi.cfg` says), for evaluation.
    pub fn smpi_derived(&self) -> smpi::Derived {
        smpi::settings(
            &self.modelled_pingpong(),
            &self.overheads,
            &self.segments,
            self.eager_threshold_bytes,
        )
    }
}

/// The break point at or below 1 MiB with the largest upward jump (the right segment's time at
/// the break over the left segment's), when that jump is over 5%: the eager/rendezvous switch.
/// MPI eager limits are KiB-sized; larger breaks are caches running out or a busy host.
pub fn eager_threshold(segments: &[Segment]) -> Option<u64> {
    segments
        .windows(2)
        .map(|w| {
            let s = w[1].from_bytes as f64;
            let left = w[0].latency_s + s / w[0].bandwidth_bytes_per_s;
            let right = w[1].latency_s + s / w[1].bandwidth_bytes_per_s;
            (w[1].from_bytes, right / left)
        })
        .filter(|(s, r)| *r > 1.05 && *s <= EAGER_MAX_BYTES)
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(s, _)| s)
}

/// `pingpong` with the sizes in `outliers` (set aside as implausible) at the fit's value.
fn modelled(pingpong: &[PingPongPoint], segments: &[Segment], outliers: &[u64]) -> Vec<PingPongPoint> {
    let mut pp = pingpong.to_vec();
    for p in &mut pp {
        if outliers.contains(&p.size_bytes) {
            p.median_s = fit::predict(segments, p.size_bytes);
        }
    }
    pp
}

/// Builds the table from raw results: fit, held-out error, eager threshold, SMPI settings.
pub fn build_table(raw: run::RunResult, hosts: Vec<String>, duration_s: f64) -> NetworkTable {
    let points: Vec<(u64, f64)> = raw
        .pingpong
        .iter()
        .map(|p| (p.size_bytes, p.median_s))
        .collect();
    let (f, outliers) = fit::fit_segments_robust(&points);
    // The SMPI factors follow the measured medians size by size; a size set aside as implausible
    // follows the fit instead.
    let pingpong_for_smpi = modelled(&raw.pingpong, &f.segments, &outliers);
    let (heldout, errs) = fit::heldout_errors(&points);
    let fit_max = points
        .iter()
        .filter(|p| !outliers.contains(&p.0))
        .map(|&(s, t)| ((fit::predict(&f.segments, s) - t) / t).abs())
        .fold(0.0, f64::max);
    let eager = eager_threshold(&f.segments);
    let derived = smpi::settings(&pingpong_for_smpi, &raw.overheads, &f.segments, eager);
    let duplex = duplex(&raw.pingpong, &raw.exchange);
    NetworkTable {
        launch: crate::model::network::Launch {
            command: raw.command,
            hosts,
            ranks: raw.ranks,
            host0: raw.host0,
        },
        duration_s,
        pingpong: raw.pingpong,
        overheads: raw.overheads,
        collectives: raw.collectives,
        break_points_bytes: f.segments.iter().skip(1).map(|g| g.from_bytes).collect(),
        segments: f.segments,
        eager_threshold_bytes: eager,
        load: None,
        fit: FitQuality {
            heldout_sizes_bytes: heldout,
            heldout_max_rel_error: errs.iter().copied().fold(0.0, f64::max),
            heldout_mean_rel_error: if errs.is_empty() {
                0.0
            } else {
                errs.iter().sum::<f64>() / errs.len() as f64
            },
            fit_max_rel_error: fit_max,
            outlier_sizes_bytes: outliers,
        },
        smpi: derived.to_settings(),
        self_check: None,
        duplex,
        exchange: raw.exchange,
        intra_host: None,
        constructors: raw.constructors,
    }
}

/// Exchange over one-way time above which the two directions are taken to share the link.
pub const SHARED_RATIO: f64 = 1.5;

/// The sharing policy the exchange shows, at the largest size measured both ways (where the
/// bandwidth term dominates): see [`Duplex`]. The fastest exchange over the fastest one-way
/// time: noise only adds time, and a shared link cannot carry both directions in less than
/// twice one, whatever the noise (the emulated LAN's 1 MiB exchange: median 1.51x the one-way
/// median, a shared link by the medians, but its fastest 1.04x the fastest one-way: each
/// direction had its own bandwidth, and the runs measured so).
pub fn duplex(pingpong: &[PingPongPoint], exchange: &[ExchangePoint]) -> Option<Duplex> {
    let (x, p) = exchange
        .iter()
        .filter_map(|x| {
            let p = pingpong.iter().find(|p| p.size_bytes == x.size_bytes)?;
            (p.min_s > 0.0 && x.min_s > 0.0).then_some((x, p))
        })
        .max_by_key(|(x, _)| x.size_bytes)?;
    let ratio = x.min_s / p.min_s;
    Some(Duplex {
        size_bytes: x.size_bytes,
        ratio,
        sharing_policy: if ratio > SHARED_RATIO { "SHARED" } else { "SPLITDUPLEX" }.to_string(),
    })
}

/// The intra-host ping-pong fitted as the inter-host one is (implausible sizes set aside).
pub fn intra_host(raw: run::RunResult) -> IntraHost {
    let points: Vec<(u64, f64)> = raw.pingpong.iter().map(|p| (p.size_bytes, p.median_s)).collect();
    let (f, _) = fit::fit_segments_robust(&points);
    IntraHost {
        host: raw.host0,
        command: raw.command,
        pingpong: raw.pingpong,
        segments: f.segments,
    }
}

/// Calls of each reference replayed by [`simulated_ctor_collectives`].
const REFERENCE_CALLS: usize = 100;

/// What the replay makes of a constructor's collectives on `platform` at the table's rank
/// count, seconds per call: (an allgather of 8 bytes, three allreduces of 4 bytes), from a
/// replay (a child process, as predictions run it) of REFERENCE_CALLS of each, ranks
/// round-robin on the platform's hosts.
pub fn simulated_ctor_collectives(table: &NetworkTable, platform: &Path) -> Result<(f64, f64)> {
    use crate::model::trace::{Mapping, ReplayOptions, TraceAction};
    let ranks = table.launch.ranks.max(2);
    let gather = TraceAction::Allgather { bytes: 8, comm: 0 };
    let reduce = TraceAction::Allreduce { bytes: 4, comm: 0 };
    let mut per_call = [0.0; 2];
    for (k, body) in [vec![gather], vec![reduce.clone(), reduce.clone(), reduce]].into_iter().enumerate() {
        let actions: Vec<TraceAction> = (0..REFERENCE_CALLS).flat_map(|_| body.iter().cloned()).collect();
        let source = crate::sim::TraceSource::Actions(vec![actions; ranks as usize]);
        let options = ReplayOptions {
            eager_threshold_bytes: table.eager_threshold(),
            link_usage: false,
            ..ReplayOptions::default()
        };
        let res = crate::sim::replay(&source, platform, Mapping::RoundRobin, table.smpi.cfg.clone(), options)
            .with_context(|| format!("{}: replaying a constructor's collectives", platform.display()))?;
        per_call[k] = res.makespan_s / REFERENCE_CALLS as f64;
    }
    Ok((per_call[0], per_call[1]))
}

/// The simulation job of the self-check: one pair of actors per size, pair i starting at
/// i * gap so that no two exchanges overlap; each does one round trip with SMPI's overheads as
/// sleeps (the simulator's send/recv do not apply smpi/os and smpi/or themselves).
pub fn self_check_job(
    table: &NetworkTable,
    platform: &Path,
    host_a: &str,
    host_b: &str,
) -> (SimJob, f64) {
    let d = table.smpi_derived();
    let max_t = table
        .pingpong
        .iter()
        .map(|p| p.median_s)
        .fold(0.0, f64::max);
    let gap = (4.0 * max_t).max(1e-3).ceil_to_pow10();
    let mut actors = Vec::new();
    for (i, p) in table.pingpong.iter().enumerate() {
        let (a, b) = (format!("ping{i}"), format!("pong{i}"));
        let (os, or) = (d.os.eval(p.size_bytes, 0.0), d.or.eval(p.size_bytes, 0.0));
        let sleep = |s: f64| SimAction::Sleep { seconds: s };
        let mut ping = vec![sleep(i as f64 * gap)];
        ping.extend([
            sleep(os),
            SimAction::Send {
                to: b.clone(),
                bytes: p.size_bytes,
            },
            SimAction::Recv { from: b.clone() },
            sleep(or),
        ]);
        let pong = vec![
            SimAction::Recv { from: a.clone() },
            sleep(or),
            sleep(os),
            SimAction::Send {
                to: a.clone(),
                bytes: p.size_bytes,
            },
        ];
        actors.push(ActorSpec {
            name: a,
            host: host_a.to_string(),
            actions: ping,
        });
        actors.push(ActorSpec {
            name: b,
            host: host_b.to_string(),
            actions: pong,
        });
    }
    (
        SimJob {
            platform: platform.to_path_buf(),
            cfg: table.smpi.cfg.clone(),
            actors,
        },
        gap,
    )
}

trait CeilPow10 {
    fn ceil_to_pow10(self) -> f64;
}
impl CeilPow10 for f64 {
    fn ceil_to_pow10(self) -> f64 {
        10f64.powf(self.log10().ceil())
    }
}

/// Replays the ping-pong through the simulator (one child process) on `platform` and compares
/// with the measured medians.
pub fn self_check(table: &NetworkTable, platform: &Path) -> Result<SelfCheck> {
    let xml = std::fs::read_to_string(platform)
        .map_err(|e| anyhow::anyhow!("{}: cannot read: {e}", platform.display()))?;
    let hosts = platform::host_ids(&xml);
    let (a, b) = match hosts.as_slice() {
        [] => anyhow::bail!("{}: no hosts", platform.display()),
        [h] => (h.clone(), h.clone()),
        [h0, h1, ..] => (h0.clone(), h1.clone()),
    };
    let (job, gap) = self_check_job(table, platform, &a, &b);
    let out = crate::sim::child::simulate(&job)?;
    let mut rows = Vec::new();
    // Sizes set aside as implausible are checked against the fit the platform follows there.
    for (i, p) in table.modelled_pingpong().iter().enumerate() {
        let name = format!("ping{i}");
        let finish = out
            .actors
            .iter()
            .find(|x| x.name == name)
            .map(|x| x.finish_s)
            .unwrap_or(f64::NAN);
        let simulated_s = (finish - i as f64 * gap) / 2.0;
        rows.push(SelfCheckRow {
            size_bytes: p.size_bytes,
            measured_s: p.median_s,
            simulated_s,
            fitted_s: table.one_way_s(p.size_bytes),
            rel_error: ((simulated_s - p.median_s) / p.median_s).abs(),
        });
    }
    let max_rel_error = rows.iter().map(|r| r.rel_error).fold(0.0, f64::max);
    Ok(SelfCheck {
        platform: platform.display().to_string(),
        rows,
        max_rel_error,
        tolerance: SELF_CHECK_TOLERANCE,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_constructors_own_work_is_what_it_took_beyond_its_replayed_collectives() {
        let mut raw = run::RunResult::default();
        for line in [
            "pp 0 100 3e-7 3.2e-7 3.5e-7 3.2e-7 0.01",
            "pp 1024 100 6e-7 6.4e-7 7e-7 6.4e-7 0.01",
            "ctor ref_gather 0 1000 5.0e-7",
            "ctor ref_reduce 0 1000 1.5e-6",
            "ctor self 1 1000 2.0e-6",
            "ctor split 2 1000 5.6e-6",
            "ctor split 1 1000 5.4e-6",
            "ctor split 0 1000 3.0e-6",
            "ctor dup 2 1000 5.8e-6",
        ] {
            assert!(run::parse_line(line, &mut raw), "{line}");
        }
        let t = build_table(raw, Vec::new(), 1.0);
        use crate::model::trace::CtorKind::{Dup, Split};
        // Against the collectives as the replay makes them: 0.4 us and 1.2 us.
        let c = t.ctor_costs(Some((4e-7, 1.2e-6)));
        let near = |a: f64, b: f64| (a - b).abs() < 1e-12;
        assert!(near(c.seconds(Split, 2), 5.6e-6 - 4e-7 - 1.2e-6 - 2e-6), "{}", c.render());
        assert!(near(c.seconds(Split, 1), 5.4e-6 - 3.6e-6), "{}", c.render());
        // Never below zero: MPI_UNDEFINED took less than its collectives and comm_create.
        assert_eq!(c.seconds(Split, 0), 0.0);
        // A duplicate gathers nothing.
        assert!(near(c.seconds(Dup, 2), 5.8e-6 - 1.2e-6 - 2e-6), "{}", c.render());
        // As MPI ran the collectives when no replay says otherwise.
        assert!(near(t.ctor_costs(None).seconds(Split, 2), 5.6e-6 - 5e-7 - 1.5e-6 - 2e-6));
        // With a split of MPI_COMM_SELF into no communicator measured (comm_null's 0.5 us), the
        // split with MPI_UNDEFINED is taken beyond it, the others as before.
        let mut with_null = t.clone();
        with_null.constructors.push(crate::model::network::CtorPoint { name: "self_null".into(), members: 0, reps: 1000, mean_s: 5.0e-7 });
        let n = with_null.ctor_costs(Some((4e-7, 1.2e-6)));
        assert!(near(n.seconds(Split, 0), 3.0e-6 - 4e-7 - 1.2e-6 - 5e-7), "{}", n.render());
        assert!(near(n.seconds(Split, 2), c.seconds(Split, 2)) && near(n.seconds(Dup, 2), c.seconds(Dup, 2)), "{}", n.render());
        let mut old = t.clone();
        old.constructors.clear();
        assert!(old.ctor_costs(None).is_empty());
    }
}
