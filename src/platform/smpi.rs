//! SimGrid SMPI settings that reproduce a measured ping-pong.
//!
//! SMPI's network model gives a message of `s` bytes on a route of latency L and bandwidth B the
//! time lat_factor(s) L + s / (bw_factor(s) B); the MPI layer adds smpi/os(s) on the sender
//! before the transfer and smpi/or(s) on the receiver after it. A factor list `t1:v1;t2:v2;...`
//! applies v_i to sizes in (t_i, t_{i+1}] and SimGrid's default (1 for factors, 0 for overheads)
//! to sizes at or below t_1 (SimGrid 3.32, FactorSet::operator()). [`FactorList::eval`] mirrors
//! that rule.

use crate::model::network::{Overhead, PingPongPoint, Segment, SmpiSettings};

/// A SimGrid factor list: (threshold, values), thresholds ascending.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FactorList {
    pub entries: Vec<(u64, Vec<f64>)>,
}

impl FactorList {
    /// SimGrid's value for `size`: the entry with the largest threshold below `size`, else
    /// `default`. One value is a factor; two are intercept and slope (overheads).
    pub fn eval(&self, size: u64, default: f64) -> f64 {
        match self.entries.iter().rev().find(|(t, _)| size > *t) {
            Some((_, v)) if v.len() >= 2 => v[0] + v[1] * size as f64,
            Some((_, v)) => v[0],
            None => default,
        }
    }

    /// A list as [`render`](Self::render) writes it (`t:v[:v2];...`); None when an entry is
    /// not a threshold and one or two numbers, or the thresholds do not ascend.
    pub fn parse(s: &str) -> Option<FactorList> {
        let mut entries: Vec<(u64, Vec<f64>)> = Vec::new();
        for item in s.split(';').map(str::trim).filter(|i| !i.is_empty()) {
            let mut parts = item.split(':');
            let t: u64 = parts.next()?.trim().parse().ok()?;
            let vals: Vec<f64> = parts.map(|v| v.trim().parse::<f64>().ok().filter(|x| x.is_finite())).collect::<Option<_>>()?;
            if vals.is_empty() || vals.len() > 2 || entries.last().is_some_and(|(p, _)| *p >= t) {
                return None;
            }
            entries.push((t, vals));
        }
        Some(FactorList { entries })
    }

    /// `t:v[:v2];...` as SimGrid parses it.
    pub fn render(&self) -> String {
        self.entries
            .iter()
            .map(|(t, v)| {
                let vals: Vec<String> = v.iter().map(|x| format_value(*x)).collect();
                format!("{t}:{}", vals.join(":"))
            })
            .collect::<Vec<_>>()
            .join(";")
    }
}

/// Seven significant digits; plain zero for zero.
fn format_value(x: f64) -> String {
    if x == 0.0 {
        "0".into()
    } else {
        format!("{x:.6e}")
    }
}

/// What [`settings`] derives: the link, the four lists and the detached-send threshold.
#[derive(Debug, Clone)]
pub struct Derived {
    pub link_latency_s: f64,
    pub link_bandwidth_bytes_per_s: f64,
    pub lat_factor: FactorList,
    pub bw_factor: FactorList,
    pub os: FactorList,
    pub or: FactorList,
    pub detached_thresh: Option<u64>,
    pub overheads_clamped: bool,
}

impl Derived {
    /// One-way time SMPI gives a ping-pong message of `size` bytes on a route of the link's
    /// latency and bandwidth (no contention, no cross-traffic).
    pub fn one_way_s(&self, size: u64) -> f64 {
        self.os.eval(size, 0.0)
            + self.lat_factor.eval(size, 1.0) * self.link_latency_s
            + size as f64 / (self.bw_factor.eval(size, 1.0) * self.link_bandwidth_bytes_per_s)
            + self.or.eval(size, 0.0)
    }

    pub fn to_settings(&self) -> SmpiSettings {
        SmpiSettings {
            link_latency_s: self.link_latency_s,
            link_bandwidth_bytes_per_s: self.link_bandwidth_bytes_per_s,
            cfg: self.cfg(),
            smpi_only_cfg: self.smpi_only_cfg(),
            overheads_clamped: self.overheads_clamped,
        }
    }

    /// `name:value` items for --cfg that an s4u simulation accepts.
    pub fn cfg(&self) -> Vec<String> {
        let mut c = vec![
            format!("smpi/bw-factor:{}", nonempty(&self.bw_factor, "0:1")),
            format!("smpi/lat-factor:{}", nonempty(&self.lat_factor, "0:1")),
        ];
        if let Some(t) = self.detached_thresh {
            c.push(format!("smpi/send-is-detached-thresh:{t}"));
        }
        // The measured curve already holds any TCP window effect; SimGrid's TCP-gamma bound
        // (gamma / 2 L, scaled by the bw factor) would apply it a second time.
        c.push("network/crosstraffic:0".into());
        c.push("network/TCP-gamma:0".into());
        c
    }
}

impl Derived {
    /// smpi/os and smpi/or, for SMPI proper.
    pub fn smpi_only_cfg(&self) -> Vec<String> {
        vec![
            format!("smpi/os:{}", nonempty(&self.os, "0:0:0")),
            format!("smpi/or:{}", nonempty(&self.or, "0:0:0")),
        ]
    }
}

fn nonempty(f: &FactorList, empty: &str) -> String {
    if f.entries.is_empty() {
        empty.to_string()
    } else {
        f.render()
    }
}

/// Derives SMPI settings from a measured ping-pong (medians), the measured post costs and the
/// fitted segments: one factor entry per measured size range, so the simulated ping-pong matches
/// the median at every measured size; between measured sizes the segment's bandwidth applies.
pub fn settings(
    pingpong: &[PingPongPoint],
    overheads: &[Overhead],
    segments: &[Segment],
    eager: Option<u64>,
) -> Derived {
    let mut pp: Vec<(u64, f64)> = pingpong
        .iter()
        .map(|p| (p.size_bytes, p.median_s))
        .filter(|p| p.1 > 0.0)
        .collect();
    pp.sort_by_key(|p| p.0);
    let mut ov: Vec<&Overhead> = overheads.iter().collect();
    ov.sort_by_key(|o| o.size_bytes);

    // Overheads: the value measured at o_j applies to (o_{j-1}, o_j], the last one beyond.
    let mut os = FactorList::default();
    let mut or = FactorList::default();
    for w in ov.windows(2) {
        os.entries
            .push((w[0].size_bytes, vec![w[1].send_s.max(0.0), 0.0]));
        or.entries
            .push((w[0].size_bytes, vec![w[1].recv_s.max(0.0), 0.0]));
    }
    if ov.len() == 1 {
        os.entries.push((0, vec![ov[0].send_s.max(0.0), 0.0]));
        or.entries.push((0, vec![ov[0].recv_s.max(0.0), 0.0]));
    }
    // SMPI charges os + or on every message; a post cost above half the one-way time would leave
    // the network too little, so scale both down where that happens.
    let mut clamped = false;
    for (i, _) in os.entries.clone().iter().enumerate() {
        let lo = os.entries[i].0;
        let hi = os.entries.get(i + 1).map(|e| e.0).unwrap_or(u64::MAX);
        let min_t = pp
            .iter()
            .filter(|p| p.0 > lo && p.0 <= hi)
            .map(|p| p.1)
            .fold(f64::INFINITY, f64::min);
        let sum = os.entries[i].1[0] + or.entries[i].1[0];
        if min_t.is_finite() && sum > 0.5 * min_t {
            let k = 0.5 * min_t / sum;
            os.entries[i].1[0] *= k;
            or.entries[i].1[0] *= k;
            clamped = true;
        }
    }

    let net = |s: u64, t: f64| t - os.eval(s, 0.0) - or.eval(s, 0.0);
    // The link: size-0 latency (SimGrid applies factor 1 to size 0) and the bandwidth of the
    // largest messages.
    let link_latency_s = pp.first().map(|p| net(p.0, p.1)).unwrap_or(1e-6).max(1e-9);
    let link_bandwidth_bytes_per_s = segments
        .last()
        .map(|g| g.bandwidth_bytes_per_s)
        .unwrap_or(1e9)
        .max(1.0);
    let mut lat_factor = FactorList::default();
    let mut bw_factor = FactorList::default();
    for w in pp.windows(2) {
        let (prev, (s, t)) = (w[0].0, w[1]);
        let target = net(s, t);
        let seg_bw = segments
            .iter()
            .rev()
            .find(|g| g.from_bytes <= s)
            .or(segments.first())
            .map(|g| g.bandwidth_bytes_per_s)
            .unwrap_or(link_bandwidth_bytes_per_s);
        let mut bw = seg_bw;
        let mut lat = target - s as f64 / bw;
        // Keep at least 1% of the time as latency; take the rest from the bandwidth.
        if lat < 0.01 * target {
            lat = 0.01 * target;
            bw = s as f64 / (target - lat);
        }
        lat_factor.entries.push((prev, vec![lat / link_latency_s]));
        bw_factor
            .entries
            .push((prev, vec![bw / link_bandwidth_bytes_per_s]));
    }
    Derived {
        link_latency_s,
        link_bandwidth_bytes_per_s,
        lat_factor,
        bw_factor,
        os,
        or,
        detached_thresh: eager,
        overheads_clamped: clamped,
    }
}

/// Factor lists from segments alone (for templates): segment k's latency and bandwidth apply
/// from its first size on.
pub fn segment_factors(
    segments: &[Segment],
    link_latency_s: f64,
    link_bandwidth_bytes_per_s: f64,
) -> (FactorList, FactorList) {
    let mut lat = FactorList::default();
    let mut bw = FactorList::default();
    for g in segments {
        let t = g.from_bytes.saturating_sub(1);
        lat.entries.push((t, vec![g.latency_s / link_latency_s]));
        bw.entries.push((
            t,
            vec![g.bandwidth_bytes_per_s / link_bandwidth_bytes_per_s],
        ));
    }
    (lat, bw)
}
