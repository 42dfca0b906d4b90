//! The Trace Event Format export (the JSON object form that Perfetto and chrome://tracing open):
//! one process per host that runs ranks (`pid` 1, 2... in the platform's host order, named by
//! `process_name` metadata), one thread per rank (`tid` = rank, named `rank R` by `thread_name`
//! metadata), one complete event (`"ph": "X"`) per timeline event, `ts` and `dur` in
//! microseconds.

use std::collections::BTreeMap;
use std::fmt::Write;

use anyhow::{bail, Result};

use crate::model::prediction::Prediction;

/// The Chrome trace category of a timeline event kind: `compute`, `p2p` (point-to-point calls
/// and request completion) or `collective`.
pub fn category(kind: &str) -> &'static str {
    match kind {
        "compute" => "compute",
        "send" | "recv" | "isend" | "irecv" | "wait" | "waitall" | "test" | "sendrecv" => "p2p",
        _ => "collective",
    }
}

/// Microseconds from seconds, rounded to the picosecond so the numbers stay short.
fn us(s: f64) -> String {
    let v = (s * 1e12).round() / 1e6;
    if v == 0.0 {
        "0".into()
    } else {
        format!("{v}")
    }
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).expect("strings serialise")
}

pub fn trace(p: &Prediction) -> Result<String> {
    if p.timeline.is_empty() {
        bail!("the prediction has no timeline: predict with --timeline (or --html, --chrome-trace)");
    }
    // Hosts that run ranks, in the prediction's order (then any only the ranks name).
    let placed: std::collections::BTreeSet<&str> = p.ranks_detail.iter().map(|r| r.host.as_str()).collect();
    let mut pid_of: BTreeMap<&str, usize> = BTreeMap::new();
    let mut hosts: Vec<&str> = Vec::new();
    for h in p.hosts.iter().map(|h| h.name.as_str()).chain(p.ranks_detail.iter().map(|r| r.host.as_str())) {
        if placed.contains(h) && !pid_of.contains_key(h) {
            pid_of.insert(h, hosts.len() + 1);
            hosts.push(h);
        }
    }
    let rank_pid: BTreeMap<u32, usize> = p.ranks_detail.iter().map(|r| (r.rank, pid_of[r.host.as_str()])).collect();
    let mut ranks: Vec<u32> = p.ranks_detail.iter().map(|r| r.rank).chain(p.timeline.iter().map(|e| e.rank)).collect();
    ranks.sort_unstable();
    ranks.dedup();
    // Ranks the statistics do not place (none, normally) go to pid 0.
    let pid = |rank: u32| rank_pid.get(&rank).copied().unwrap_or(0);

    let mut o = String::with_capacity(p.timeline.len() * 96 + 4096);
    o.push_str("{\"traceEvents\":[\n");
    let mut first = true;
    let mut sep = |o: &mut String| {
        if !first {
            o.push_str(",\n");
        }
        first = false;
    };
    for (k, h) in hosts.iter().enumerate() {
        sep(&mut o);
        let _ = write!(o, "{{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":{},\"tid\":0,\"args\":{{\"name\":{}}}}}", k + 1, json_str(h));
        sep(&mut o);
        let _ = write!(o, "{{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":{},\"tid\":0,\"args\":{{\"sort_index\":{}}}}}", k + 1, k + 1);
    }
    if ranks.iter().any(|r| !rank_pid.contains_key(r)) {
        sep(&mut o);
        o.push_str("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":0,\"tid\":0,\"args\":{\"name\":\"unplaced ranks\"}}");
    }
    for &r in &ranks {
        sep(&mut o);
        let _ = write!(o, "{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":{},\"tid\":{r},\"args\":{{\"name\":\"rank {r}\"}}}}", pid(r));
        sep(&mut o);
        let _ = write!(o, "{{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":{},\"tid\":{r},\"args\":{{\"sort_index\":{r}}}}}", pid(r));
    }
    let mut events: Vec<&crate::model::trace::TimelineEvent> = p.timeline.iter().collect();
    events.sort_by(|a, b| a.start_s.total_cmp(&b.start_s).then(a.rank.cmp(&b.rank)));
    for e in events {
        sep(&mut o);
        let _ = write!(
            o,
            "{{\"name\":{},\"cat\":\"{}\",\"ph\":\"X\",\"ts\":{},\"dur\":{},\"pid\":{},\"tid\":{}}}",
            json_str(&e.kind),
            category(&e.kind),
            us(e.start_s),
            us((e.end_s - e.start_s).max(0.0)),
            pid(e.rank),
            e.rank
        );
    }
    o.push_str("\n],\n");
    let _ = writeln!(o, "\"displayTimeUnit\":\"{}\",", if p.predicted_s < 1e-3 { "ns" } else { "ms" });
    let other = serde_json::json!({
        "generator": format!("mpicast {}", env!("CARGO_PKG_VERSION")),
        "program": p.program,
        "args": p.args,
        "ranks": p.ranks,
        "platform": p.platform,
        "machine": p.machine.path,
        "predicted_s": p.predicted_s,
    });
    let _ = writeln!(o, "\"otherData\":{other}\n}}");
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn microseconds_are_short_and_exact_enough() {
        assert_eq!(us(0.0), "0");
        assert_eq!(us(4.026000000000001e-09), "0.004026");
        assert_eq!(us(0.0025282694997465585), "2528.2695");
        assert_eq!(category("allreduce"), "collective");
        assert_eq!(category("waitall"), "p2p");
    }
}
