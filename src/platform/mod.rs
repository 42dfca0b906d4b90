//! SimGrid platform files: the scenario templates (`mpicast platform --template`), the platform
//! written from a measured network table, the checker every simulation runs first
//! (`check_platform`), SimGrid's units (`unit_factor`); `smpi`: the SMPI factor lists a platform's
//! `<config>` carries; `edit`: what-if copies of a platform (bandwidths, latencies, hosts, cores).
//! A leaf: it depends on `src/model` alone.
//!
//! Conventions the replay relies on: every host carries `<prop id="mpicast/order" value="k"/>`
//! (rank k goes to the host of order k, wrapping around when there are more ranks than hosts),
//! host names sort in that same order, and a host's `core` attribute is its core count. Star
//! topologies use SimGrid's `routing="Cluster"` zones (one private link per host, optional
//! backbone); a host-to-host route then crosses the sender's up link and the receiver's down link.

pub mod edit;
pub mod smpi;
mod xml;

use std::fmt::Write as _;

use anyhow::{bail, Result};

use crate::model::network::{NetworkTable, Segment};
use smpi::{segment_factors, FactorList};

/// Template names, in the order `--help` lists them.
pub const TEMPLATES: &[(&str, &str)] = &[
    (
        "localhost",
        "this kind of 2-core machine, shared memory, from a measured ping-pong",
    ),
    ("cluster-gige", "hosts on one 1 Gb/s Ethernet switch"),
    (
        "cluster-ib",
        "hosts on a 100 Gb/s class (InfiniBand EDR) switch",
    ),
    (
        "lan-100m",
        "switched Fast Ethernet (100 Mb/s), as in the ChronosMix case study",
    ),
    (
        "xdsl",
        "peers on asymmetric DSL lines, tens of ms apart (dPerf's xDSL scenario)",
    ),
    (
        "grid5000",
        "clusters at several Grid'5000 sites joined by a backbone (dPerf's Table I)",
    ),
];

/// A link: bandwidth in bytes/s, latency in seconds.
#[derive(Debug, Clone, Copy)]
struct Link {
    bw: f64,
    lat: f64,
}

#[derive(Debug, Clone)]
struct HostSpec {
    name: String,
    speed_flops: f64,
    cores: u32,
    order: usize,
    /// Host to switch and switch to host; equal links are written as one SPLITDUPLEX link.
    up: Link,
    down: Link,
}

/// `1.25GBps`-style bandwidth.
pub fn fmt_bw(bytes_per_s: f64) -> String {
    let (v, u) = if bytes_per_s >= 1e9 {
        (bytes_per_s / 1e9, "GBps")
    } else if bytes_per_s >= 1e6 {
        (bytes_per_s / 1e6, "MBps")
    } else if bytes_per_s >= 1e3 {
        (bytes_per_s / 1e3, "kBps")
    } else {
        (bytes_per_s, "Bps")
    };
    format!("{}{u}", num(v))
}

/// `50us`-style latency.
pub fn fmt_lat(s: f64) -> String {
    let (v, u) = if s >= 1.0 {
        (s, "s")
    } else if s >= 1e-3 {
        (s * 1e3, "ms")
    } else if s >= 1e-6 {
        (s * 1e6, "us")
    } else {
        (s * 1e9, "ns")
    };
    format!("{}{u}", num(v))
}

/// `2.4Gf`-style speed.
pub fn fmt_speed(flops: f64) -> String {
    if flops >= 1e9 {
        format!("{}Gf", num(flops / 1e9))
    } else {
        format!("{}Mf", num(flops / 1e6))
    }
}

/// Up to six significant digits, no trailing zeros.
fn num(v: f64) -> String {
    let digits_before = v.abs().max(1.0).log10().floor() as usize + 1;
    let keep = 6usize.saturating_sub(digits_before);
    let s = format!("{:.*}", keep, v);
    let t = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    if t.is_empty() || t == "-0" {
        "0".into()
    } else {
        t
    }
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn header(out: &mut String, comment: &str, cfg: &[String]) {
    out.push_str(
        "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n",
    );
    out.push_str("<!--");
    for line in comment.lines() {
        let _ = writeln!(out, "  {}", line.replace("--", "-"));
    }
    out.push_str("-->\n<platform version=\"4.1\">\n");
    if !cfg.is_empty() {
        out.push_str("  <config>\n");
        for item in cfg {
            let (k, v) = item.split_once(':').unwrap_or((item, ""));
            let _ = writeln!(
                out,
                "    <prop id=\"{}\" value=\"{}\"/>",
                xml_escape(k),
                xml_escape(v)
            );
        }
        out.push_str("  </config>\n");
    }
}

fn host_xml(out: &mut String, indent: &str, h: &HostSpec) {
    let core = if h.cores > 1 {
        format!(" core=\"{}\"", h.cores)
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "{indent}<host id=\"{}\" speed=\"{}\"{core}><prop id=\"mpicast/order\" value=\"{}\"/></host>",
        xml_escape(&h.name),
        fmt_speed(h.speed_flops),
        h.order
    );
}

/// A star zone: hosts, one link pair per host, an optional backbone and router (gateway).
fn star_zone(
    out: &mut String,
    id: &str,
    hosts: &[HostSpec],
    backbone: Option<Link>,
    router: Option<&str>,
    indent: &str,
) {
    let _ = writeln!(
        out,
        "{indent}<zone id=\"{}\" routing=\"Cluster\">",
        xml_escape(id)
    );
    let inner = format!("{indent}  ");
    for h in hosts {
        host_xml(out, &inner, h);
    }
    for h in hosts {
        let n = xml_escape(&h.name);
        if h.up.bw == h.down.bw && h.up.lat == h.down.lat {
            let _ = writeln!(
                out,
                "{inner}<link id=\"{n}_link\" bandwidth=\"{}\" latency=\"{}\" sharing_policy=\"SPLITDUPLEX\"/>",
                fmt_bw(h.up.bw),
                fmt_lat(h.up.lat)
            );
            let _ = writeln!(
                out,
                "{inner}<host_link id=\"{n}\" up=\"{n}_link_UP\" down=\"{n}_link_DOWN\"/>"
            );
        } else {
            let _ = writeln!(
                out,
                "{inner}<link id=\"{n}_up\" bandwidth=\"{}\" latency=\"{}\"/>",
                fmt_bw(h.up.bw),
                fmt_lat(h.up.lat)
            );
            let _ = writeln!(
                out,
                "{inner}<link id=\"{n}_down\" bandwidth=\"{}\" latency=\"{}\"/>",
                fmt_bw(h.down.bw),
                fmt_lat(h.down.lat)
            );
            let _ = writeln!(
                out,
                "{inner}<host_link id=\"{n}\" up=\"{n}_up\" down=\"{n}_down\"/>"
            );
        }
    }
    if let Some(r) = router {
        let _ = writeln!(out, "{inner}<router id=\"{}\"/>", xml_escape(r));
    }
    if let Some(b) = backbone {
        let _ = writeln!(
            out,
            "{inner}<backbone id=\"{}-backbone\" bandwidth=\"{}\" latency=\"{}\"/>",
            xml_escape(id),
            fmt_bw(b.bw),
            fmt_lat(b.lat)
        );
    }
    let _ = writeln!(out, "{indent}</zone>");
}

/// One host with `cores` cores and a loopback route (messages between its processes).
fn single_host(out: &mut String, name: &str, speed_flops: f64, cores: u32, loopback: Link) {
    out.push_str("  <zone id=\"world\" routing=\"Full\">\n");
    host_xml(
        out,
        "    ",
        &HostSpec {
            name: name.into(),
            speed_flops,
            cores,
            order: 0,
            up: loopback,
            down: loopback,
        },
    );
    let _ = writeln!(
        out,
        "    <link id=\"loopback\" bandwidth=\"{}\" latency=\"{}\" sharing_policy=\"FATPIPE\"/>",
        fmt_bw(loopback.bw),
        fmt_lat(loopback.lat)
    );
    let n = xml_escape(name);
    let _ = writeln!(
        out,
        "    <route src=\"{n}\" dst=\"{n}\"><link_ctn id=\"loopback\"/></route>"
    );
    out.push_str("  </zone>\n");
}

/// Zero-padded names so that sorting by name keeps rank order.
fn padded(prefix: &str, k: usize, total: usize, suffix: &str) -> String {
    let width = total.saturating_sub(1).max(1).to_string().len();
    format!("{prefix}{k:0width$}{suffix}")
}

/// Nominal host speed: compute times come from the machine table (MTC); the replay turns seconds
/// into flops at the host's speed, so only ratios between hosts matter.
const NOMINAL_SPEED: f64 = 1e9;

/// The localhost figures: shared-memory ping-pong between 2 ranks of this 2-core machine kind
/// (OpenMPI 4.1 vader BTL), fitted by `mpicast bench network` (see LOCALHOST_ORIGIN).
const LOCALHOST_SEGMENTS: &[(u64, f64, f64)] = &[
    // (first size in bytes, latency s, bandwidth B/s), rounded from the fit of
    // tests/fixtures/network/pingpong_shm.txt (medians 0.13-0.16 us up to 256 B, 0.38 us at
    // 3 KiB, 2.3 us at 4 KiB, 85.5 us at 1 MiB, 2.76 ms at 16 MiB).
    (0, 0.15e-6, 14.6e9),
    (4096, 2.0e-6, 15.0e9),
    (393216, 0.05e-6, 11.9e9),
    (2097152, 0.05e-6, 8.9e9),
    (6291456, 0.05e-6, 6.9e9),
];
const LOCALHOST_ORIGIN: &str = "ping-pong measured on this 2-core VM kind with mpicast's CTC (OpenMPI 4.1.4, vader\nshared memory, 2 ranks, median of adaptive repetitions), recorded in tests/fixtures/network/pingpong_shm.txt";

/// Generates template `name` for `hosts` hosts (for localhost: one host with `hosts` cores).
pub fn template(name: &str, hosts: usize) -> Result<String> {
    if hosts == 0 {
        bail!("--hosts must be at least 1");
    }
    let mut out = String::new();
    match name {
        "localhost" => {
            let segs: Vec<Segment> = LOCALHOST_SEGMENTS
                .iter()
                .map(|&(from, lat, bw)| Segment {
                    from_bytes: from,
                    to_bytes: from,
                    latency_s: lat,
                    bandwidth_bytes_per_s: bw,
                })
                .collect();
            let link = Link {
                lat: segs[0].latency_s,
                bw: segs
                    .iter()
                    .map(|g| g.bandwidth_bytes_per_s)
                    .fold(0.0, f64::max),
            };
            let (lat, bw) = segment_factors(&segs[1..], link.lat, link.bw);
            let bw = with_first(bw, segs[0].bandwidth_bytes_per_s / link.bw);
            let cfg = vec![
                format!("smpi/bw-factor:{}", bw.render()),
                format!("smpi/lat-factor:{}", lat.render()),
                "smpi/send-is-detached-thresh:4096".to_string(),
                "network/crosstraffic:0".to_string(),
                "network/TCP-gamma:0".to_string(),
            ];
            let seg_text: Vec<String> = segs
                .iter()
                .map(|g| {
                    format!(
                        "  from {:>7} B: {:.2} us + s / {:.1} GB/s",
                        g.from_bytes,
                        g.latency_s * 1e6,
                        g.bandwidth_bytes_per_s / 1e9
                    )
                })
                .collect();
            header(
                &mut out,
                &format!(
                    "localhost: one {hosts}-core host; MPI processes on it talk through shared memory.\n\
                     Origin: {LOCALHOST_ORIGIN}.\n\
                     One-way time T(s) = L + s / B per segment (the 4096 B break is OpenMPI's eager limit, the\nlater ones are caches running out):\n{}\n\
                     The loopback link carries the smallest-message latency and the best bandwidth (no TCP window); the\n\
                     smpi/*-factor lists below scale them per size range. Host speed is nominal: compute\n\
                     times come from the machine table (mpicast bench machine).\n\
                     Generated by mpicast platform, template localhost, {hosts} cores.",
                    seg_text.join("\n")
                ),
                &cfg,
            );
            single_host(&mut out, "localhost", NOMINAL_SPEED, hosts as u32, link);
        }
        "cluster-gige" | "cluster-ib" | "lan-100m" => {
            let (link, backbone, cores, cfg, text) = match name {
                "cluster-gige" => (
                    Link { bw: 125e6, lat: 15e-6 },
                    Link { bw: 1.25e9, lat: 1e-6 },
                    8,
                    vec![],
                    "cluster-gige: hosts on one Gigabit Ethernet switch (1 Gb/s = 125 MB/s per host link,\n\
                     10 Gb/s backplane). Host-to-host: 15 us + 1 us + 15 us = 31 us of wire latency, before\n\
                     SMPI's factors. No smpi/* factors are set: SimGrid's default SMPI factors were\n\
                     calibrated on a Gigabit Ethernet cluster (griffon, Grid'5000 Nancy), so they apply as is.\n\
                     Origin: nominal Gigabit Ethernet figures; MPI over TCP on GigE shows 25-50 us one-way and\n\
                     about 112 MB/s (OSU latency/bandwidth on commodity switches).",
                ),
                "cluster-ib" => (
                    Link { bw: 12.5e9, lat: 0.5e-6 },
                    Link { bw: 100e9, lat: 0.1e-6 },
                    32,
                    vec![
                        "smpi/bw-factor:0:0.92".to_string(),
                        "smpi/lat-factor:0:1".to_string(),
                        "smpi/send-is-detached-thresh:12288".to_string(),
                        "network/crosstraffic:0".to_string(),
                        "network/TCP-gamma:0".to_string(),
                    ],
                    "cluster-ib: hosts on a 100 Gb/s class switch (InfiniBand EDR: 12.5 GB/s per host link).\n\
                     Host-to-host: 0.5 + 0.1 + 0.5 us = 1.1 us; 92% of the link rate is reachable (about\n\
                     11.5 GB/s), eager messages up to 12 KiB (UCX's default rendezvous threshold order).\n\
                     Origin: nominal EDR figures, typical OSU results of 1-1.5 us and 11-12 GB/s.",
                ),
                _ => (
                    Link { bw: 12.5e6, lat: 40e-6 },
                    Link { bw: 125e6, lat: 5e-6 },
                    1,
                    vec![
                        "smpi/bw-factor:0:0.92".to_string(),
                        "smpi/lat-factor:0:1".to_string(),
                        "network/crosstraffic:1".to_string(),
                    ],
                    "lan-100m: workstations on switched Fast Ethernet (100 Mb/s = 12.5 MB/s per host link,\n\
                     1 Gb/s uplink between switch ports), the network of ChronosMix's case study.\n\
                     Host-to-host: 40 + 5 + 40 us = 85 us; 92% of the wire rate reaches MPI (TCP/IP headers),\n\
                     about 11.5 MB/s. Origin: nominal Fast Ethernet figures; ping-pongs on such LANs show\n\
                     70-120 us one-way and 11-11.7 MB/s.",
                ),
            };
            header(&mut out, &format!("{text}\nHost speed is nominal (compute times come from the machine table).\nGenerated by mpicast platform, template {name}, {hosts} hosts."), &cfg);
            let hs: Vec<HostSpec> = (0..hosts)
                .map(|k| HostSpec {
                    name: padded("node-", k, hosts, ""),
                    speed_flops: NOMINAL_SPEED,
                    cores,
                    order: k,
                    up: link,
                    down: link,
                })
                .collect();
            star_zone(&mut out, name, &hs, Some(backbone), None, "  ");
        }
        "xdsl" => {
            // (name, down B/s, up B/s, line latency s): ADSL, ADSL2+, VDSL2 profiles in turn.
            let profiles = [
                ("adsl", 1.0e6, 0.125e6, 20e-3),
                ("adsl2", 2.5e6, 0.125e6, 15e-3),
                ("vdsl", 6.25e6, 1.25e6, 8e-3),
            ];
            header(
                &mut out,
                &format!(
                    "xdsl: {hosts} peers at home on DSL lines, joined through the Internet (dPerf's \"daisy\n\
                     (xDSL)\" scenario, P2PDC-style peer computing). Lines are asymmetric and cycle through\n\
                     three profiles: ADSL 8 Mb/s down / 1 Mb/s up, 20 ms; ADSL2+ 20 / 1 Mb/s, 15 ms;\n\
                     VDSL2 50 / 10 Mb/s, 8 ms. The Internet core between lines: 10 Gb/s, 10 ms. Peer to\n\
                     peer: up line + core + down line, e.g. ADSL to ADSL 20 + 10 + 20 = 50 ms one-way,\n\
                     limited by the sender's upload. TCP's window (SimGrid's network/TCP-gamma, 4 MiB)\n\
                     bounds a flow to gamma / (2 latency) as on a real line.\n\
                     Origin: nominal consumer DSL figures (sync rates and typical access latencies).\n\
                     Host speed is nominal. Generated by mpicast platform, template xdsl, {hosts} hosts."
                ),
                &["smpi/bw-factor:0:0.9".to_string(), "smpi/lat-factor:0:1".to_string(), "network/crosstraffic:1".to_string()],
            );
            let hs: Vec<HostSpec> = (0..hosts)
                .map(|k| {
                    let (p, down, up, lat) = profiles[k % profiles.len()];
                    HostSpec {
                        name: padded("peer-", k, hosts, &format!(".{p}")),
                        speed_flops: NOMINAL_SPEED,
                        cores: 1,
                        order: k,
                        up: Link { bw: up, lat },
                        down: Link { bw: down, lat },
                    }
                })
                .collect();
            star_zone(
                &mut out,
                "internet",
                &hs,
                Some(Link {
                    bw: 1.25e9,
                    lat: 10e-3,
                }),
                None,
                "  ",
            );
        }
        "grid5000" => grid5000(&mut out, hosts),
        _ => bail!(
            "unknown template {name:?}; valid: {}",
            TEMPLATES.iter().map(|t| t.0).collect::<Vec<_>>().join(", ")
        ),
    }
    out.push_str("</platform>\n");
    Ok(out)
}

/// Adds an entry for sizes above 0 with this factor when the list has none there.
fn with_first(mut f: FactorList, first: f64) -> FactorList {
    if f.entries.first().map(|e| e.0) != Some(0) {
        f.entries.insert(0, (0, vec![first]));
    }
    f
}

/// dPerf Table I: site, cluster, processor, sequential time of the obstacle problem (s).
const G5K: &[(&str, &str, &str, f64)] = &[
    ("toulouse", "pastel", "AMD 2.6 GHz", 27843.0),
    ("lyon", "sagittaire", "AMD 2.4 GHz", 32166.0),
    ("nancy", "grelon", "Intel Xeon 1.6 GHz", 32476.0),
    ("orsay", "gdx", "AMD 2.0/2.4 GHz", 34636.0),
    ("lyon", "capricorne", "AMD 2.0 GHz", 33942.0),
    ("sophia", "helios", "AMD 2.2 GHz", 33178.0),
    ("sophia", "sol", "AMD 2.6 GHz", 29400.0),
];
/// One-way latency from each site to the RENATER core.
const G5K_SITE_LAT: &[(&str, f64)] = &[
    ("toulouse", 4e-3),
    ("lyon", 2e-3),
    ("nancy", 3e-3),
    ("orsay", 2e-3),
    ("sophia", 4.5e-3),
];

fn grid5000(out: &mut String, hosts: usize) {
    // Below 256 peers dPerf used the four clusters Pastel, Sagittaire, Grelon, Gdx; beyond, all.
    let clusters = if hosts < 256 { &G5K[..4] } else { G5K };
    let nc = clusters.len().min(hosts);
    let clusters = &clusters[..nc];
    let fastest = G5K.iter().map(|c| c.3).fold(f64::INFINITY, f64::min);
    let mut table = String::new();
    for c in clusters {
        let _ = writeln!(
            table,
            "  {:<10} {:<11} {:<19} {:>6.0} s  -> {}",
            c.0,
            c.1,
            c.2,
            c.3,
            fmt_speed(4e9 * fastest / c.3)
        );
    }
    header(
        out,
        &format!(
            "grid5000: {hosts} hosts spread evenly over {nc} clusters of Grid'5000 sites, as in dPerf's\n\
             peer-to-peer experiments (equal numbers of nodes per site, one core used per node).\n\
             Host speeds follow dPerf's Table I: speed = 4 Gf x (Pastel's sequential time / the\n\
             cluster's), so ratios between clusters match the measured sequential times\n\
             (dPerf: nodes range from 2.5 to 10 Gflops):\n\
             site       cluster     processor           seq. time  -> speed\n{table}\
             Inside a cluster: Gigabit Ethernet (125 MB/s, 15 us per host link, 10 Gb/s backbone).\n\
             Between sites: each site's router reaches the RENATER core over 10 Gb/s links of\n\
             2-4.5 ms (one-way Lyon-Nancy about 5 ms); a cross-site route is site link + core + site link.\n\
             Origin: dPerf Table I for speeds; nominal Grid'5000 / RENATER figures for the network.\n\
             Generated by mpicast platform, template grid5000, {hosts} hosts."
        ),
        &[],
    );
    out.push_str("  <zone id=\"grid5000\" routing=\"Full\">\n");
    let mut order = 0;
    let mut sites = Vec::new();
    for (i, c) in clusters.iter().enumerate() {
        let count = hosts / nc + usize::from(i < hosts % nc);
        let speed = 4e9 * fastest / c.3;
        let link = Link {
            bw: 125e6,
            lat: 15e-6,
        };
        let zone = format!("{}-{}", c.1, c.0);
        let hs: Vec<HostSpec> = (0..count)
            .map(|_| {
                let h = HostSpec {
                    name: format!(
                        "{}{}",
                        padded("g", order, hosts, "-"),
                        format_args!("{}.{}", c.1, c.0)
                    ),
                    speed_flops: speed,
                    cores: 1,
                    order,
                    up: link,
                    down: link,
                };
                order += 1;
                h
            })
            .collect();
        let router = format!("{zone}-router");
        star_zone(
            out,
            &zone,
            &hs,
            Some(Link {
                bw: 1.25e9,
                lat: 1e-6,
            }),
            Some(&router),
            "    ",
        );
        sites.push((zone, router, c.0));
    }
    for (zone, _, site) in &sites {
        let lat = G5K_SITE_LAT
            .iter()
            .find(|s| s.0 == *site)
            .map(|s| s.1)
            .unwrap_or(3e-3);
        let _ = writeln!(
            out,
            "    <link id=\"{zone}-wan\" bandwidth=\"1.25GBps\" latency=\"{}\"/>",
            fmt_lat(lat)
        );
    }
    for (i, (za, ra, _)) in sites.iter().enumerate() {
        for (zb, rb, _) in sites.iter().skip(i + 1) {
            let _ = writeln!(
                out,
                "    <zoneRoute src=\"{za}\" dst=\"{zb}\" gw_src=\"{ra}\" gw_dst=\"{rb}\"><link_ctn id=\"{za}-wan\"/><link_ctn id=\"{zb}-wan\"/></zoneRoute>"
            );
        }
    }
    out.push_str("  </zone>\n");
}

/// The platform for a measured network: one host with a loopback link when the ping-pong ran on
/// one host, else a star of the given hosts whose host-to-host route has the table's link latency
/// and bandwidth; the table's SMPI settings go into `<config>`.
pub fn measured(table: &NetworkTable, cores: u32, ctors: &CtorCosts) -> String {
    let mut out = String::new();
    let st = &table.smpi;
    let segs: Vec<String> = table
        .segments
        .iter()
        .map(|g| {
            format!(
                "  from {} B: {:.3} us + s / {:.1} MB/s",
                g.from_bytes,
                g.latency_s * 1e6,
                g.bandwidth_bytes_per_s / 1e6
            )
        })
        .collect();
    let comment = format!(
        "Measured network: {}\n\
         Ping-pong of {} sizes on {} ({} ranks), {:.1} s; fitted one-way time T(s) = L + s / B:\n{}\n\
         The route's link carries the size-0 latency and the largest messages' bandwidth; the smpi/* lists in\n\
         <config> give every measured size range its own factors so that SMPI's ping-pong follows\n\
         the measured medians with the zone's mpicast/smpi-os and mpicast/smpi-or (SMPI's smpi/os\n\
         and smpi/or, MPI_Isend/MPI_Irecv post costs, which mpicast's replay applies). Host speed is\n\
         nominal: compute times come from the machine table.\n\
         Generated by mpicast bench network (double dashes in the command above are shown single:\n\
         XML comments cannot hold them).",
        table.launch.command.join(" "),
        table.pingpong.len(),
        table.launch.host0,
        table.launch.ranks,
        table.duration_s,
        segs.join("\n")
    );
    header(&mut out, &comment, &st.cfg);
    let link = Link {
        bw: st.link_bandwidth_bytes_per_s,
        lat: st.link_latency_s,
    };
    let hosts = distinct_hosts(&table.launch.hosts);
    if hosts.len() < 2 {
        single_host(&mut out, "localhost", NOMINAL_SPEED, cores, link);
    } else {
        let half = Link {
            bw: link.bw,
            lat: link.lat / 2.0,
        };
        let hs: Vec<HostSpec> = hosts
            .iter()
            .enumerate()
            .map(|(k, h)| HostSpec {
                name: h.clone(),
                speed_flops: NOMINAL_SPEED,
                cores,
                order: k,
                up: half,
                down: half,
            })
            .collect();
        let shared = table
            .duplex
            .as_ref()
            .is_some_and(|d| d.sharing_policy == "SHARED");
        let loopback = table.intra_host.as_ref().map(|intra| Link {
            lat: intra.segments.first().map(|g| g.latency_s).unwrap_or(0.0),
            bw: intra
                .segments
                .iter()
                .map(|g| g.bandwidth_bytes_per_s)
                .fold(0.0, f64::max),
        });
        if hs.len() <= MAX_ROUTED_HOSTS {
            routed_zone(&mut out, &hs, shared, loopback);
        } else {
            star_zone(&mut out, "measured", &hs, None, None, "  ");
        }
    }
    out.push_str("</platform>\n");
    zone_overheads(&mut out, &st.smpi_only_cfg, ctors);
    out
}

/// The ids of a measured platform's per-message overheads (SMPI's smpi/os and smpi/or, which
/// SimGrid registers only when SMPI itself is initialised): props of its zone, which mpicast's
/// replay applies (a sleep before each send, another after each receive).
pub const OS_PROP: &str = "mpicast/smpi-os";
pub const OR_PROP: &str = "mpicast/smpi-or";

/// Writes `smpi/os` and `smpi/or` of `items` (`name:list`) as props of the platform's first zone,
/// and the constructors' own work ([`CTOR_PROP`]) where it was measured.
fn zone_overheads(out: &mut String, items: &[String], ctors: &CtorCosts) {
    let mut props: String = items
        .iter()
        .filter_map(|i| {
            let (k, v) = i.split_once(':')?;
            let id = match k {
                "smpi/os" => OS_PROP,
                "smpi/or" => OR_PROP,
                _ => return None,
            };
            Some(format!("    <prop id=\"{id}\" value=\"{}\"/>\n", xml_escape(v)))
        })
        .collect();
    if !ctors.is_empty() {
        props.push_str(&format!("    <prop id=\"{CTOR_PROP}\" value=\"{}\"/>\n", ctors.render()));
    }
    if let Some(at) = out.find("  <zone ").and_then(|z| out[z..].find('\n').map(|e| z + e + 1)) {
        out.insert_str(at, &props);
    }
}

/// The per-message overheads a platform file carries ([`OS_PROP`], [`OR_PROP`]): sender's and
/// receiver's, empty lists where it has none. The error is one line, `LINE: what is wrong`.
pub fn message_overheads(text: &str) -> std::result::Result<(smpi::FactorList, smpi::FactorList), String> {
    let mut lists = (smpi::FactorList::default(), smpi::FactorList::default());
    if !text.contains(OS_PROP) && !text.contains(OR_PROP) {
        return Ok(lists);
    }
    let readable = xml::readable(text);
    let doc = xml::parse(&readable).map_err(|(line, m)| format!("{line}: {m}"))?;
    for n in doc.descendants().filter(|n| n.has_tag_name("prop")) {
        let slot = match n.attribute("id") {
            Some(OS_PROP) => &mut lists.0,
            Some(OR_PROP) => &mut lists.1,
            _ => continue,
        };
        let v = n.attribute("value").unwrap_or("");
        let line = doc.text_pos_at(n.range().start).row;
        *slot = smpi::FactorList::parse(v).ok_or_else(|| {
            format!("{line}: <prop id=\"{}\"> value {v:?} is not a list of size:seconds[:seconds per byte] entries, sizes ascending", n.attribute("id").unwrap_or(""))
        })?;
    }
    Ok(lists)
}

/// The `<prop>` entries of a platform's `<config>` sections, by id (a later one wins). The error
/// is one line, `LINE: what is wrong`.
pub fn config_props(text: &str) -> std::result::Result<std::collections::HashMap<String, String>, String> {
    let mut props = std::collections::HashMap::new();
    if !text.contains("<config") {
        return Ok(props);
    }
    let readable = xml::readable(text);
    let doc = xml::parse(&readable).map_err(|(line, m)| format!("{line}: {m}"))?;
    for n in doc.descendants().filter(|n| n.has_tag_name("prop") && n.parent().is_some_and(|p| p.has_tag_name("config"))) {
        if let (Some(id), Some(v)) = (n.attribute("id"), n.attribute("value")) {
            props.insert(id.to_string(), v.to_string());
        }
    }
    Ok(props)
}

/// The id of a measured platform's communicator constructors' own work ([`CtorCosts`]): a prop
/// of its zone, which mpicast's replay charges at each `ctor` action.
pub const CTOR_PROP: &str = "mpicast/comm-ctor";

/// What a communicator constructor costs each member of a parent of several ranks beyond what
/// a replay simulates of it (its collectives, called blocking, and the machine table's
/// comm_create op): OpenMPI's context-id agreement through nonblocking collectives and the
/// collective modules it selects for the new communicator, measured by `mpicast bench
/// network` at its rank count. Entries `KIND:MEMBERS:SECONDS`, the new communicator's size;
/// a constructor takes its kind's entry with the largest MEMBERS up to its own.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CtorCosts {
    entries: Vec<(crate::model::trace::CtorKind, u32, f64)>,
}

impl CtorCosts {
    pub fn new(mut entries: Vec<(crate::model::trace::CtorKind, u32, f64)>) -> CtorCosts {
        entries.sort_by_key(|e| (e.0 as u8, e.1));
        CtorCosts { entries }
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Seconds of own work for a constructor of `kind` that made a communicator of `members`
    /// ranks (0: none); 0 where the platform says nothing.
    pub fn seconds(&self, kind: crate::model::trace::CtorKind, members: u32) -> f64 {
        self.entries
            .iter()
            .filter(|e| e.0 == kind && e.1 <= members)
            .last()
            .map_or(0.0, |e| e.2)
    }

    /// `split:0:1.2e-7 split:2:3.9e-6 ...`.
    pub fn render(&self) -> String {
        self.entries
            .iter()
            .map(|(k, m, s)| format!("{}:{m}:{s:.4e}", k.as_str()))
            .collect::<Vec<_>>()
            .join(" ")
    }

    pub fn parse(v: &str) -> Option<CtorCosts> {
        let mut entries = Vec::new();
        for w in v.split_whitespace() {
            let mut f = w.split(':');
            let kind = crate::model::trace::CtorKind::parse(f.next()?)?;
            let members: u32 = f.next()?.parse().ok()?;
            let secs: f64 = f.next()?.parse().ok()?;
            if f.next().is_some() || !secs.is_finite() || secs < 0.0 {
                return None;
            }
            entries.push((kind, members, secs));
        }
        Some(CtorCosts::new(entries))
    }
}

/// The constructors' own work a platform file carries ([`CTOR_PROP`]; empty where it has none).
/// The error is one line, `LINE: what is wrong`.
pub fn ctor_costs(text: &str) -> std::result::Result<CtorCosts, String> {
    if !text.contains(CTOR_PROP) {
        return Ok(CtorCosts::default());
    }
    let readable = xml::readable(text);
    let doc = xml::parse(&readable).map_err(|(line, m)| format!("{line}: {m}"))?;
    let mut costs = CtorCosts::default();
    for n in doc.descendants().filter(|n| n.has_tag_name("prop") && n.attribute("id") == Some(CTOR_PROP)) {
        let v = n.attribute("value").unwrap_or("");
        let line = doc.text_pos_at(n.range().start).row;
        costs = CtorCosts::parse(v).ok_or_else(|| {
            format!("{line}: <prop id=\"{CTOR_PROP}\"> value {v:?} is not a list of split|dup:MEMBERS:SECONDS entries")
        })?;
    }
    Ok(costs)
}

/// Most hosts written as explicit routes (one per ordered pair of hosts).
pub const MAX_ROUTED_HOSTS: usize = 64;

/// Hosts joined by a link each (split duplex, or one shared by both directions), every pair
/// routed through the two hosts' links, and each host's own processes (co-located ranks,
/// messages to oneself) through a loopback link of the intra-host ping-pong's latency and
/// bandwidth; without one, through the host's link out and back as a cluster routes them.
fn routed_zone(out: &mut String, hosts: &[HostSpec], shared: bool, loopback: Option<Link>) {
    out.push_str("  <zone id=\"measured\" routing=\"Full\">\n");
    for h in hosts {
        host_xml(out, "    ", h);
    }
    for h in hosts {
        let n = xml_escape(&h.name);
        let policy = if shared { "SHARED" } else { "SPLITDUPLEX" };
        let _ = writeln!(
            out,
            "    <link id=\"{n}_link\" bandwidth=\"{}\" latency=\"{}\" sharing_policy=\"{policy}\"/>",
            fmt_bw(h.up.bw),
            fmt_lat(h.up.lat)
        );
        if let Some(l) = loopback {
            let _ = writeln!(
                out,
                "    <link id=\"{n}_loopback\" bandwidth=\"{}\" latency=\"{}\" sharing_policy=\"FATPIPE\"/>",
                fmt_bw(l.bw),
                fmt_lat(l.lat)
            );
        }
    }
    let ctn = |n: &str, dir: &str| {
        if shared {
            format!("<link_ctn id=\"{n}_link\"/>")
        } else {
            format!("<link_ctn id=\"{n}_link\" direction=\"{dir}\"/>")
        }
    };
    for a in hosts {
        let na = xml_escape(&a.name);
        for b in hosts {
            let nb = xml_escape(&b.name);
            if a.name == b.name && loopback.is_some() {
                let _ = writeln!(
                    out,
                    "    <route src=\"{na}\" dst=\"{na}\"><link_ctn id=\"{na}_loopback\"/></route>"
                );
            } else if a.name == b.name && shared {
                let _ = writeln!(out, "    <route src=\"{na}\" dst=\"{na}\">{}</route>", ctn(&na, ""));
            } else {
                let _ = writeln!(
                    out,
                    "    <route src=\"{na}\" dst=\"{nb}\" symmetrical=\"NO\">{}{}</route>",
                    ctn(&na, "UP"),
                    ctn(&nb, "DOWN")
                );
            }
        }
    }
    out.push_str("  </zone>\n");
}

/// Hosts in first-seen order without repeats.
pub fn distinct_hosts(hosts: &[String]) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for h in hosts {
        if !v.contains(h) {
            v.push(h.clone());
        }
    }
    v
}

/// Host ids of a platform file in `mpicast/order` order (declaration order when absent); none
/// when the file is not well-formed XML (`check_platform` says why).
pub fn host_ids(xml: &str) -> Vec<String> {
    let readable = xml::readable(xml);
    let Ok(doc) = xml::parse(&readable) else {
        return Vec::new();
    };
    let mut hosts: Vec<(usize, String)> = doc
        .descendants()
        .filter(|n| n.has_tag_name("host"))
        .enumerate()
        .map(|(i, h)| {
            let order = h
                .children()
                .find(|p| p.has_tag_name("prop") && p.attribute("id") == Some("mpicast/order"))
                .and_then(|p| p.attribute("value"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(i);
            (order, h.attribute("id").unwrap_or("").to_string())
        })
        .collect();
    hosts.sort_by_key(|h| h.0);
    hosts.into_iter().map(|h| h.1).collect()
}

// ---- checking a platform file before SimGrid reads it ------------------------------------------
//
// SimGrid aborts its process on a malformed platform without saying which file or line (its parse
// errors are C++ exceptions that cannot cross into Rust). This reading catches what hand-edited
// and truncated files usually get wrong, with the file and line, before a simulation starts: XML
// syntax (tags, quotes, nesting; `xml` reads it with roxmltree), the DOCTYPE SimGrid's parser
// needs, the element and attribute names and required attributes of SimGrid's DTD 4.1, values
// with units (speeds, bandwidths, latencies, cores), duplicate host ids, links and route ends
// that are not declared, and a platform with no host.

/// Element -> (required attributes, optional attributes), from SimGrid's DTD 4.1 (SimGrid 3.32).
const PLATFORM_ELEMENTS: &[(&str, &[&str], &[&str])] = &[
    ("platform", &[], &["version"]),
    ("include", &["file"], &[]),
    ("trace", &["id", "periodicity"], &["file"]),
    (
        "random",
        &["id", "min", "max", "mean", "std_deviation"],
        &["seed", "radical", "generator"],
    ),
    ("trace_connect", &["trace", "element"], &["kind"]),
    ("AS", &["id", "routing"], &[]),
    ("zone", &["id", "routing"], &[]),
    ("storage_type", &["id", "size"], &["model", "content"]),
    ("storage", &["id", "typeId", "attach"], &["content"]),
    ("mount", &["storageId", "name"], &[]),
    (
        "host",
        &["id", "speed"],
        &[
            "core",
            "speed_file",
            "availability_file",
            "state_file",
            "coordinates",
            "pstate",
        ],
    ),
    ("disk", &["read_bw", "write_bw"], &["id"]),
    ("host_link", &["id", "up", "down"], &[]),
    (
        "cluster",
        &["id", "prefix", "suffix", "radical", "speed", "bw", "lat"],
        &[
            "core",
            "sharing_policy",
            "topology",
            "topo_parameters",
            "bb_bw",
            "bb_lat",
            "bb_sharing_policy",
            "router_id",
            "limiter_link",
            "loopback_bw",
            "loopback_lat",
        ],
    ),
    (
        "cabinet",
        &["id", "prefix", "suffix", "radical", "speed", "bw", "lat"],
        &[],
    ),
    (
        "peer",
        &["id", "speed", "bw_in", "bw_out"],
        &[
            "lat",
            "coordinates",
            "speed_file",
            "availability_file",
            "state_file",
        ],
    ),
    ("router", &["id"], &["coordinates"]),
    ("backbone", &["id", "bandwidth", "latency"], &[]),
    (
        "link",
        &["id", "bandwidth"],
        &[
            "bandwidth_file",
            "latency",
            "latency_file",
            "state_file",
            "sharing_policy",
        ],
    ),
    ("route", &["src", "dst"], &["symmetrical"]),
    (
        "ASroute",
        &["src", "dst", "gw_src", "gw_dst"],
        &["symmetrical"],
    ),
    (
        "zoneRoute",
        &["src", "dst", "gw_src", "gw_dst"],
        &["symmetrical"],
    ),
    ("bypassASroute", &["src", "dst", "gw_src", "gw_dst"], &[]),
    ("bypassZoneRoute", &["src", "dst", "gw_src", "gw_dst"], &[]),
    ("bypassRoute", &["src", "dst"], &[]),
    ("link_ctn", &["id"], &["direction"]),
    (
        "process",
        &["host", "function"],
        &["start_time", "kill_time", "on_failure"],
    ),
    (
        "actor",
        &["host", "function"],
        &["start_time", "kill_time", "on_failure"],
    ),
    ("argument", &["value"], &[]),
    ("config", &[], &["id"]),
    ("prop", &["id", "value"], &[]),
    ("model_prop", &["id", "value"], &[]),
];

/// The hosts a platform file declares: by name (`<host>`, `<peer>`) or as a cluster's or
/// cabinet's prefix + number + suffix for each number of its radical.
#[derive(Debug, Clone, Default)]
pub struct PlatformHosts {
    /// A compiled (.so) platform: its hosts are not known before SimGrid loads it.
    opaque: bool,
    names: Vec<String>,
    /// (prefix, suffix, inclusive number ranges)
    ranges: Vec<(String, String, Vec<(u64, u64)>)>,
}

impl PlatformHosts {
    /// How many hosts the platform has.
    pub fn count(&self) -> u64 {
        let ranged: u64 = self
            .ranges
            .iter()
            .flat_map(|(_, _, r)| r.iter().map(|(a, b)| b - a + 1))
            .fold(0u64, u64::saturating_add);
        (self.names.len() as u64).saturating_add(ranged)
    }

    /// Whether `name` is one of the platform's hosts.
    pub fn contains(&self, name: &str) -> bool {
        if self.opaque || self.names.iter().any(|n| n == name) {
            return true;
        }
        self.ranges.iter().any(|(prefix, suffix, ranges)| {
            let Some(mid) = name
                .strip_prefix(prefix.as_str())
                .and_then(|r| r.strip_suffix(suffix.as_str()))
            else {
                return false;
            };
            // SimGrid writes the number without padding.
            let canonical = !mid.is_empty() && (mid == "0" || !mid.starts_with('0'));
            match mid.parse::<u64>() {
                Ok(k) if canonical && mid.bytes().all(|b| b.is_ascii_digit()) => {
                    ranges.iter().any(|&(a, b)| (a..=b).contains(&k))
                }
                _ => false,
            }
        })
    }

    /// Up to `n` host names, for messages.
    pub fn examples(&self, n: usize) -> Vec<String> {
        let mut v: Vec<String> = self.names.iter().take(n).cloned().collect();
        'outer: for (prefix, suffix, ranges) in &self.ranges {
            for &(a, b) in ranges {
                for k in a..=b {
                    if v.len() >= n {
                        break 'outer;
                    }
                    v.push(format!("{prefix}{k}{suffix}"));
                }
            }
        }
        v
    }
}

/// Checks a SimGrid platform file before a simulation loads it; the error is one line,
/// `FILE:LINE: what is wrong`.
pub fn check_platform(path: &std::path::Path) -> Result<()> {
    platform_hosts(path).map(|_| ())
}

/// Checks a platform file (as [`check_platform`]) and returns the hosts it declares.
pub fn platform_hosts(path: &std::path::Path) -> Result<PlatformHosts> {
    let name = path.display();
    if path.extension().is_some_and(|e| e == "so") {
        // A compiled C++ platform: SimGrid loads it as a plugin; nothing to read here.
        if !path.is_file() {
            bail!("{name}: no such platform file");
        }
        return Ok(PlatformHosts {
            opaque: true,
            ..PlatformHosts::default()
        });
    }
    let bytes = std::fs::read(path)
        .map_err(|e| anyhow::anyhow!("{name}: cannot read the platform: {e}"))?;
    let text = match std::str::from_utf8(&bytes) {
        Ok(t) => t,
        Err(e) => {
            let line = 1 + bytes[..e.valid_up_to()]
                .iter()
                .filter(|&&b| b == b'\n')
                .count();
            bail!("{name}:{line}: not a SimGrid platform: invalid UTF-8 (a binary file?)");
        }
    };
    check_platform_text(text).map_err(|(line, msg)| anyhow::anyhow!("{name}:{line}: {msg}"))
}

/// strtod's number, then the rest (SimGrid's unit parser): `1.5e9f` -> (1.5e9, "f").
fn split_number(s: &str) -> Option<(f64, &str)> {
    let t = s.trim_start();
    let b = t.as_bytes();
    let mut k = 0;
    if k < b.len() && (b[k] == b'+' || b[k] == b'-') {
        k += 1;
    }
    let digits_start = k;
    while k < b.len() && b[k].is_ascii_digit() {
        k += 1;
    }
    let mut nd = k - digits_start;
    if k < b.len() && b[k] == b'.' {
        k += 1;
        let f = k;
        while k < b.len() && b[k].is_ascii_digit() {
            k += 1;
        }
        nd += k - f;
    }
    if nd == 0 {
        return None;
    }
    if k < b.len() && (b[k] == b'e' || b[k] == b'E') {
        let mut e = k + 1;
        if e < b.len() && (b[e] == b'+' || b[e] == b'-') {
            e += 1;
        }
        let es = e;
        while e < b.len() && b[e].is_ascii_digit() {
            e += 1;
        }
        if e > es {
            k = e;
        }
    }
    Some((t[..k].parse().ok()?, &t[k..]))
}

/// A quantity in a platform file.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Quantity {
    Speed,
    Bandwidth,
    Latency,
}

impl Quantity {
    /// The unit mpicast writes values in (flops, bytes per second, seconds).
    pub fn base_unit(self) -> &'static str {
        match self {
            Quantity::Speed => "f",
            Quantity::Bandwidth => "Bps",
            Quantity::Latency => "s",
        }
    }
}

/// What one `unit` is in the quantity's base unit, for the units SimGrid takes (a bare number
/// is in the base unit, as SimGrid reads it with a warning); None for any other. The platform
/// checker and the what-if edits (`--bw-scale`, `--lat-scale`) both read units here.
pub fn unit_factor(q: Quantity, unit: &str) -> Option<f64> {
    const DEC: &[&str] = &["", "k", "M", "G", "T", "P", "E", "Z", "Y"];
    const BIN: &[&str] = &["Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "Zi", "Yi"];
    const LONG: &[&str] = &["", "kilo", "mega", "giga", "tera", "peta", "exa", "zeta", "yotta"];
    let power = |list: &[&str], p: &str, base: f64, first: i32| list.iter().position(|x| *x == p).map(|i| base.powi(i as i32 + first));
    let prefix = |p: &str| power(DEC, p, 1e3, 0).or_else(|| power(BIN, p, 1024.0, 1));
    if unit.is_empty() {
        return Some(1.0);
    }
    match q {
        Quantity::Speed => match unit.strip_suffix("flops") {
            Some(p) => power(LONG, p, 1e3, 0),
            None => unit.strip_suffix('f').and_then(|p| power(DEC, p, 1e3, 0)),
        },
        Quantity::Bandwidth => match (unit.strip_suffix("Bps"), unit.strip_suffix("bps")) {
            (Some(p), _) => prefix(p),
            (_, Some(p)) => prefix(p).map(|f| f / 8.0),
            _ => None,
        },
        Quantity::Latency => Some(match unit {
            "w" => 604800.0,
            "d" => 86400.0,
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "us" => 1e-6,
            "ns" => 1e-9,
            "ps" => 1e-12,
            _ => return None,
        }),
    }
}

/// Reads a quantity attribute as SimGrid does: a number and a unit, or a list of them (speeds:
/// pstates separated by `,`; bandwidths: `,` or `;`). Returns each part's byte range in `value`
/// (from its number to its unit's end) and its size in the base unit; the error names the
/// element, the attribute and the valid units. The checker and the what-if edits both read here.
fn read_quantity(
    q: Quantity,
    value: &str,
    elem: &str,
    attr: &str,
) -> std::result::Result<Vec<(std::ops::Range<usize>, f64)>, String> {
    let (what, units) = match q {
        Quantity::Speed => ("a speed", "f, kf, Mf, Gf, Tf, ... or flops, gigaflops, ..."),
        Quantity::Bandwidth => (
            "a bandwidth",
            "Bps, kBps, MBps, GBps, KiBps, MiBps, ..., or bps, Mbps, Gbps, ...",
        ),
        Quantity::Latency => ("a time", "s, ms, us, ns, ps, m, h, d, w"),
    };
    let separators: &[char] = match q {
        Quantity::Speed => &[','],
        Quantity::Bandwidth => &[',', ';'],
        Quantity::Latency => &[],
    };
    let mut parts = Vec::new();
    let mut start = 0;
    for piece in value.split(separators) {
        let end = start + piece.len();
        let lead = piece.len() - piece.trim_start().len();
        let p = if q == Quantity::Speed { piece.trim() } else { piece };
        let read = split_number(p)
            .filter(|(v, _)| v.is_finite())
            .and_then(|(v, unit)| Some((v, unit_factor(q, unit)?)));
        let Some((v, factor)) = read else {
            return Err(format!(
                "<{elem} {attr}=\"{value}\">: {p:?} is not {what} (a number and a unit, no space: {units})"
            ));
        };
        if v < 0.0 {
            return Err(format!("<{elem} {attr}=\"{value}\">: {what} cannot be negative"));
        }
        if v == 0.0 && q != Quantity::Latency {
            return Err(format!("<{elem} {attr}=\"{value}\">: {what} of 0 never lets anything finish"));
        }
        parts.push((start + lead..start + lead + p.trim_start().len(), v * factor));
        start = end + 1;
    }
    Ok(parts)
}

/// The attributes of `elem` that hold a quantity, from SimGrid's DTD 4.1.
fn quantity_attrs(elem: &str) -> &'static [(&'static str, Quantity)] {
    match elem {
        "host" => &[("speed", Quantity::Speed)],
        "cluster" => &[
            ("speed", Quantity::Speed),
            ("bw", Quantity::Bandwidth),
            ("lat", Quantity::Latency),
            ("bb_bw", Quantity::Bandwidth),
            ("bb_lat", Quantity::Latency),
            ("loopback_bw", Quantity::Bandwidth),
            ("loopback_lat", Quantity::Latency),
            ("limiter_link", Quantity::Bandwidth),
        ],
        "cabinet" => &[
            ("speed", Quantity::Speed),
            ("bw", Quantity::Bandwidth),
            ("lat", Quantity::Latency),
        ],
        "peer" => &[
            ("speed", Quantity::Speed),
            ("bw_in", Quantity::Bandwidth),
            ("bw_out", Quantity::Bandwidth),
            ("lat", Quantity::Latency),
        ],
        "link" | "backbone" => &[
            ("bandwidth", Quantity::Bandwidth),
            ("latency", Quantity::Latency),
        ],
        "disk" => &[
            ("read_bw", Quantity::Bandwidth),
            ("write_bw", Quantity::Bandwidth),
        ],
        _ => &[],
    }
}

/// `0-15,20,22-23` -> [(0, 15), (20, 20), (22, 23)]
fn parse_radical(s: &str) -> Option<Vec<(u64, u64)>> {
    let mut out = Vec::new();
    for part in s.split(',') {
        let part = part.trim();
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a.trim().parse().ok()?, b.trim().parse().ok()?),
            None => {
                let v = part.parse().ok()?;
                (v, v)
            }
        };
        if b < a {
            return None;
        }
        out.push((a, b));
    }
    Some(out)
}

/// One element of a parsed platform: its name, attributes (entities expanded), line and parent.
struct XmlElem<'a> {
    name: &'a str,
    attrs: Vec<(&'a str, &'a str)>,
    line: usize,
    parent: Option<&'a str>,
}

fn attr<'a>(e: &XmlElem<'a>, a: &str) -> Option<&'a str> {
    e.attrs.iter().find(|(k, _)| *k == a).map(|(_, v)| *v)
}

/// The elements of a parsed platform in document order; text where only elements belong (any
/// element but `<trace>`) is an error.
fn elements<'a>(
    text: &str,
    doc: &'a roxmltree::Document,
) -> std::result::Result<Vec<XmlElem<'a>>, (usize, String)> {
    let lines = xml::Lines::new(text);
    let mut out = Vec::new();
    for n in doc.descendants() {
        let parent = n.parent_element().map(|p| p.tag_name().name());
        if n.is_text() {
            let t = n.text().unwrap_or("").trim();
            if t.is_empty() || parent == Some("trace") {
                continue;
            }
            let raw = text.get(n.range()).unwrap_or("");
            let line = lines.line(n.range().start + raw.len() - raw.trim_start().len());
            let shown: String = t.chars().take(24).collect();
            let shown = if t.chars().count() > 24 { format!("{shown}...") } else { shown };
            return Err((
                line,
                format!("text {shown:?} inside <{}> (only elements belong there)", parent.unwrap_or("")),
            ));
        }
        if n.is_element() {
            out.push(XmlElem {
                name: n.tag_name().name(),
                attrs: n.attributes().map(|a| (a.name(), a.value())).collect(),
                line: lines.line(n.range().start),
                parent,
            });
        }
    }
    Ok(out)
}

/// The DOCTYPEs SimGrid's parser (FleXML) takes, with either quote and any spacing; it reads no
/// other DOCTYPE, no internal subset, and no file without one.
const SIMGRID_DTDS: &[&str] = &[
    "https://simgrid.org/simgrid.dtd",
    "http://simgrid.gforge.inria.fr/simgrid/simgrid.dtd",
];

/// SimGrid's parser reads a platform only after one of its DOCTYPEs (`SIMGRID_DTDS`).
fn check_doctype(
    text: &str,
    doc: &roxmltree::Document,
    root_line: usize,
) -> std::result::Result<(), (usize, String)> {
    let want = format!("<!DOCTYPE platform SYSTEM \"{}\">", SIMGRID_DTDS[0]);
    let Some((at, decl)) = xml::doctype(doc) else {
        return Err((root_line, format!("no DOCTYPE before <platform>: SimGrid reads a platform only after {want}")));
    };
    let words: Vec<&str> = decl["<!DOCTYPE".len()..decl.len() - 1].split_whitespace().collect();
    let known = |url: &str| {
        ['"', '\''].iter().any(|q| {
            url.strip_prefix(*q)
                .and_then(|u| u.strip_suffix(*q))
                .is_some_and(|u| SIMGRID_DTDS.contains(&u))
        })
    };
    if matches!(words.as_slice(), ["platform", "SYSTEM", url] if known(url)) {
        return Ok(());
    }
    let shown: String = decl.split_whitespace().collect::<Vec<_>>().join(" ").chars().take(80).collect();
    Err((
        xml::Lines::new(text).line(at),
        format!("{shown:?} is not a DOCTYPE SimGrid reads: its parser takes {want} (or the gforge.inria.fr URL) and no [internal subset]"),
    ))
}

fn check_platform_text(text: &str) -> std::result::Result<PlatformHosts, (usize, String)> {
    if text.starts_with('\u{feff}') {
        return Err((1, "the file starts with a byte-order mark, which SimGrid's parser does not read (save it as UTF-8 without one)".into()));
    }
    let readable = xml::readable(text);
    let doc = xml::parse(&readable)?;
    let elems = elements(text, &doc)?;
    let root = &elems[0];
    if root.name != "platform" {
        return Err((
            root.line,
            format!("the root element is <{}>, expected <platform version=\"4.1\">: not a SimGrid platform", root.name),
        ));
    }
    // SimGrid reads the version with strtod: 4 and 4.1 are fine, 3 is too old, 4.2 too recent.
    match attr(root, "version").map(|v| (v, split_number(v).map(|(x, _)| x))) {
        None => {
            return Err((root.line, "<platform> has no version attribute (SimGrid 3.32 reads version=\"4.1\")".into()))
        }
        Some((v, Some(x))) if x < 4.0 => {
            return Err((
                root.line,
                format!("platform version {v} is too old for SimGrid 3.32, which reads 4.1 (simgrid_update_xml converts)"),
            ))
        }
        Some((v, Some(x))) if x > 4.1 + 1e-9 => {
            return Err((root.line, format!("platform version {v} is newer than SimGrid 3.32 reads (4.1)")))
        }
        Some((v, None)) => return Err((root.line, format!("platform version {v:?} is not a number (expected 4.1)"))),
        Some(_) => {}
    }
    check_doctype(text, &doc, root.line)?;
    let mut hosts = PlatformHosts::default();
    let mut host_lines: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    let mut links: std::collections::HashSet<&str> = std::collections::HashSet::new();
    let mut netpoints: std::collections::HashSet<&str> = std::collections::HashSet::new();
    let mut generated = false;
    for e in &elems {
        let Some((_, required, optional)) = PLATFORM_ELEMENTS.iter().find(|(n, _, _)| *n == e.name)
        else {
            return Err((
                e.line,
                format!("unknown element <{}> (SimGrid platform elements: zone, host, link, route, cluster, ...)", e.name),
            ));
        };
        if e.name == "platform" && e.parent.is_some() {
            return Err((e.line, "<platform> inside another element".into()));
        }
        if e.name != "platform" && e.parent.is_none() {
            return Err((
                e.line,
                format!("<{}> outside the <platform> element", e.name),
            ));
        }
        for (a, _) in &e.attrs {
            if !required.contains(a) && !optional.contains(a) {
                let mut valid: Vec<&str> =
                    required.iter().chain(optional.iter()).copied().collect();
                valid.sort_unstable();
                return Err((
                    e.line,
                    format!(
                        "<{}> has no attribute {a} (valid: {})",
                        e.name,
                        valid.join(", ")
                    ),
                ));
            }
        }
        for r in *required {
            if attr(e, r).is_none() {
                return Err((e.line, format!("<{}> lacks its {r} attribute", e.name)));
            }
        }
        let quantities = quantity_attrs(e.name);
        for (a, q) in quantities {
            if let Some(v) = attr(e, a) {
                if v.trim().is_empty() && !required.contains(a) {
                    continue;
                }
                read_quantity(*q, v, e.name, a).map_err(|m| (e.line, m))?;
            }
        }
        if let Some(c) = attr(e, "core") {
            if !c.trim().parse::<u32>().is_ok_and(|c| c > 0) {
                return Err((
                    e.line,
                    format!(
                        "<{} core=\"{c}\">: the core count must be a whole number >= 1",
                        e.name
                    ),
                ));
            }
        }
        if let (Some(r), "zone" | "AS") = (attr(e, "routing"), e.name) {
            const ROUTINGS: &[&str] = &[
                "Full",
                "Floyd",
                "Dijkstra",
                "DijkstraCache",
                "Cluster",
                "None",
                "Vivaldi",
                "Wifi",
            ];
            if !ROUTINGS.iter().any(|x| x.eq_ignore_ascii_case(r)) {
                return Err((
                    e.line,
                    format!(
                        "<{} routing=\"{r}\">: unknown routing (valid: {})",
                        e.name,
                        ROUTINGS.join(", ")
                    ),
                ));
            }
        }
        let id = attr(e, "id").unwrap_or("");
        match e.name {
            "host" | "peer" => {
                if let Some(first) = host_lines.insert(id, e.line) {
                    return Err((
                        e.line,
                        format!("host {id:?} is declared twice (first at line {first})"),
                    ));
                }
                hosts.names.push(id.to_string());
                netpoints.insert(id);
                generated |= e.name == "peer";
            }
            "cluster" | "cabinet" => {
                let radical = attr(e, "radical").unwrap_or("");
                let Some(r) = parse_radical(radical) else {
                    return Err((
                        e.line,
                        format!("<{} radical=\"{radical}\">: expected numbers and ranges such as 0-15,20", e.name),
                    ));
                };
                hosts.ranges.push((
                    attr(e, "prefix").unwrap_or("").to_string(),
                    attr(e, "suffix").unwrap_or("").to_string(),
                    r,
                ));
                generated = true;
            }
            "link" | "backbone" => {
                links.insert(id);
            }
            "router" => {
                netpoints.insert(id);
            }
            _ => {}
        }
    }
    if hosts.count() == 0 {
        return Err((
            root.line,
            "the platform declares no host (no <host>, <cluster>, <cabinet> or <peer>)".into(),
        ));
    }
    // Links and route ends must be declared; clusters, cabinets and peers create links and
    // netpoints of their own, so only files without them are checked.
    if !generated {
        let link_known = |l: &str| {
            links.contains(l)
                || l.strip_suffix("_UP").is_some_and(|b| links.contains(b))
                || l.strip_suffix("_DOWN").is_some_and(|b| links.contains(b))
        };
        for e in &elems {
            let refs: &[&str] = match e.name {
                "link_ctn" => &["id"],
                "host_link" => &["up", "down"],
                _ => &[],
            };
            for a in refs {
                let l = attr(e, a).unwrap_or("");
                if !link_known(l) {
                    return Err((
                        e.line,
                        format!("<{} {a}=\"{l}\">: no link {l:?} is declared", e.name),
                    ));
                }
            }
            if e.name == "host_link" && !netpoints.contains(attr(e, "id").unwrap_or("")) {
                let h = attr(e, "id").unwrap_or("");
                return Err((
                    e.line,
                    format!("<host_link id=\"{h}\">: no host {h:?} is declared"),
                ));
            }
            if e.name == "route" {
                for a in ["src", "dst"] {
                    let p = attr(e, a).unwrap_or("");
                    if !netpoints.contains(p) {
                        return Err((
                            e.line,
                            format!("<route {a}=\"{p}\">: no host or router {p:?} is declared"),
                        ));
                    }
                }
            }
        }
    }
    Ok(hosts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_constructor_takes_its_kinds_figure_for_the_largest_size_up_to_its_own() {
        use crate::model::trace::CtorKind::{Dup, Split};
        let c = CtorCosts::parse("dup:2:5e-6 split:2:3e-6 split:0:1e-7 split:1:2e-6").unwrap();
        assert_eq!(c.seconds(Split, 0), 1e-7);
        assert_eq!(c.seconds(Split, 1), 2e-6);
        assert_eq!(c.seconds(Split, 64), 3e-6);
        assert_eq!(c.seconds(Dup, 2), 5e-6);
        // No entry at or below the size: nothing charged.
        assert_eq!(c.seconds(Dup, 1), 0.0);
        assert_eq!(CtorCosts::parse(&c.render()), Some(c.clone()));
        for bad in ["split:2", "split:2:-1e-6", "cart:2:1e-6", "split:x:1e-6", "split:2:1e-6:3"] {
            assert_eq!(CtorCosts::parse(bad), None, "{bad}");
        }
        let body = format!("<platform version=\"4.1\">\n<zone id=\"z\" routing=\"Full\">\n<prop id=\"{CTOR_PROP}\" value=\"split:2:oops\"/>\n</zone>\n</platform>\n");
        let e = ctor_costs(&format!("{HEAD}{body}")).unwrap_err();
        assert!(e.starts_with("6: ") && e.contains("split|dup:MEMBERS:SECONDS"), "{e}");
    }

    const HEAD: &str = "<?xml version=\"1.0\"?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n<!-- a comment -->\n";

    /// The checker's (line, message) for a file of HEAD (3 lines) and `body`.
    fn check(body: &str) -> std::result::Result<PlatformHosts, (usize, String)> {
        check_platform_text(&format!("{HEAD}{body}"))
    }

    fn fails(body: &str, line: usize, says: &str) {
        match check(body) {
            Ok(_) => panic!("accepted:\n{body}"),
            Err((l, msg)) => {
                assert!(l == line && msg.contains(says), "got {l}: {msg}\nexpected {line}: ...{says}...\n{body}")
            }
        }
    }

    const ZONE: &str = "<platform version=\"4.1\">\n<zone id=\"w\" routing=\"Full\">\n";

    #[test]
    fn errors_name_the_line_and_what_is_wrong() {
        fails(&format!("{ZONE}<host id=\"a\" speed=\"1Gf\"/>\n<host id=\"b\" spe"), 7, "tag is not closed");
        fails(&format!("{ZONE}<host id=\"a\" speed=\"1Gf\"/>\n</platform>\n"), 7, "</platform> closes <zone> (opened at line 5)");
        fails(&format!("{ZONE}<host id=\"a\" speed=\"1Gf/>\n<host id=\"b\" speed=\"1Gf\"/>\n</zone></platform>\n"), 6, "contains `<` (an unclosed quote?)");
        fails(&format!("{ZONE}<hots id=\"a\" speed=\"1Gf\"/>\n</zone></platform>\n"), 6, "unknown element <hots>");
        fails(&format!("{ZONE}<host id=\"a\" speed=\"1GHz\"/>\n</zone></platform>\n"), 6, "\"1GHz\" is not a speed");
        fails(&format!("{ZONE}<host id=\"a\" speed=\"1Gf\" colour=\"red\"/>\n</zone></platform>\n"), 6, "<host> has no attribute colour (valid: ");
        fails(&format!("{ZONE}<host id=\"a\" speed=\"1Gf\"/>\n<link id=\"l\" latency=\"1us\"/>\n</zone></platform>\n"), 7, "<link> lacks its bandwidth attribute");
        fails(&format!("{ZONE}<host id=\"a\" speed=\"1Gf\"/>\n<host id=\"a\" speed=\"1Gf\"/>\n</zone></platform>\n"), 7, "host \"a\" is declared twice (first at line 6)");
        fails(&format!("{ZONE}<host id=\"a\" speed=\"1Gf\"/>\n<route src=\"a\" dst=\"a\"><link_ctn id=\"l10\"/></route>\n</zone></platform>\n"), 7, "no link \"l10\" is declared");
        fails(&format!("{ZONE}<host id=\"a\" speed=\"1Gf\"/>\n<route src=\"a\" dst=\"b\"/>\n</zone></platform>\n"), 7, "no host or router \"b\" is declared");
        fails(&format!("{ZONE}<host id=\"a\" speed=\"1Gf\" core=\"0\"/>\n</zone></platform>\n"), 6, "the core count must be a whole number >= 1");
        fails(&format!("{ZONE}<link id=\"l\" bandwidth=\"1GBps\" latency=\"5 us\"/>\n</zone></platform>\n"), 6, "\"5 us\" is not a time");
        fails(&format!("{ZONE}<link id=\"l\" bandwidth=\"0Bps\"/>\n</zone></platform>\n"), 6, "a bandwidth of 0 never lets anything finish");
        fails("<platform version=\"3\">\n<host id=\"a\" speed=\"1Gf\"/>\n</platform>\n", 4, "platform version 3 is too old");
        fails("<platform version=\"4.1\">\n<zone id=\"w\" routing=\"Full\"/>\n</platform>\n", 4, "the platform declares no host");
        fails("<platform version=\"4.1\">\n<zone id=\"w\" routing=\"Fast\"/>\n</platform>\n", 5, "unknown routing");
        fails("<platform version=\"4.1\">\n<host id=\"a\" speed=\"1Gf\">fast</host>\n</platform>\n", 5, "text \"fast\" inside <host>");
        fails("<platfrom version=\"4.1\"/>\n", 4, "the root element is <platfrom>");
        fails("<platform version=\"4.1\">\n<host id=\"a\" speed=\"1Gf\" id=\"b\"/>\n</platform>\n", 5, "attribute id given twice");
        fails("<platform version=\"4.1\"><host id=\"a\" speed=\"1Gf\"/></platform>\n<platform/>\n", 5, "after the end of the root element");
        assert_eq!(check_platform_text("This is not a platform.\nhost h0 1Gf\n").unwrap_err().0, 1);
        assert!(check_platform_text("").unwrap_err().1.contains("no XML element"));
    }

    #[test]
    fn reads_what_simgrid_reads() {
        // Single quotes, the older DTD URL, a character reference, `--` inside a comment, a CDATA
        // trace, a cluster.
        let doctype = "<!DOCTYPE platform SYSTEM 'http://simgrid.gforge.inria.fr/simgrid/simgrid.dtd'>\n";
        let x = format!(
            "<?xml version='1.0'?>\n{doctype}<!-- run with --bw-scale 2 -->\n<platform version='4.1'>\n\
             <trace id='t' periodicity='1'><![CDATA[0 1.0\n1 0.5]]></trace>\n\
             <cluster id='c' prefix='node-' suffix='.lan' radical='0-3,8' speed='1Gf' bw='&#49;25MBps' lat='50us' core='4'/>\n</platform>\n"
        );
        let hosts = check_platform_text(&x).unwrap();
        assert_eq!(hosts.count(), 5);
        assert!(hosts.contains("node-8.lan") && !hosts.contains("node-5.lan") && !hosts.contains("node-03.lan"));
        // What SimGrid's parser refuses (each one aborts it): an internal subset, another DTD,
        // no DOCTYPE, a byte-order mark, a comment that ends in `--->`.
        let refused = |text: &str, line: usize, says: &str| {
            let (l, msg) = check_platform_text(text).map(|_| ()).unwrap_err();
            assert!(l == line && msg.contains(says), "{l}: {msg}\nexpected {line}: ...{says}...");
        };
        let subset = x.replace("simgrid.dtd'>", "simgrid.dtd' [ <!ENTITY gige \"125MBps\"> ]>");
        refused(&subset, 2, "is not a DOCTYPE SimGrid reads");
        refused(&x.replace("http://simgrid.gforge.inria.fr/simgrid/", ""), 2, "is not a DOCTYPE SimGrid reads");
        refused(&x.replace(doctype, ""), 3, "no DOCTYPE before <platform>");
        refused(&format!("\u{feff}{x}"), 1, "byte-order mark");
        refused(&x.replace("2 -->", "2 --->"), 3, "a comment ends with `--->`");
    }

    /// The files mpicast writes (templates, measured platforms) pass the check and list their
    /// hosts in rank order.
    #[test]
    fn written_platforms_round_trip() {
        for (name, _) in TEMPLATES {
            for n in [1usize, 2, 16] {
                let x = template(name, n).unwrap();
                let hosts = check_platform_text(&x).unwrap_or_else(|e| panic!("{name} x{n}: {e:?}"));
                let ids = host_ids(&x);
                let expect = if *name == "localhost" { 1 } else { n };
                assert_eq!((hosts.count(), ids.len()), (expect as u64, expect), "{name} x{n}: {ids:?}");
                assert!(ids.iter().all(|h| hosts.contains(h)), "{name} x{n}: {ids:?}");
                let mut sorted = ids.clone();
                sorted.sort();
                assert_eq!(sorted, ids, "{name} x{n}: names sort in rank order");
            }
        }
        for hosts in [vec![], vec!["b".to_string(), "a".to_string()], (0..70).map(|k| format!("h{k:02}")).collect()] {
            for intra in [false, true] {
                let t = measured_table(&hosts, intra);
                let x = measured(&t, 2, &CtorCosts::default());
                let checked = check_platform_text(&x).unwrap_or_else(|e| panic!("{} hosts: {e:?}\n{x}", hosts.len()));
                let ids = host_ids(&x);
                if hosts.is_empty() {
                    assert_eq!(ids, ["localhost"]);
                } else {
                    assert_eq!(ids, hosts);
                }
                assert_eq!(checked.count(), ids.len() as u64);
            }
        }
    }

    fn measured_table(hosts: &[String], intra: bool) -> NetworkTable {
        let seg = serde_json::json!({"from_bytes": 0, "to_bytes": 0, "latency_s": 50e-6, "bandwidth_bytes_per_s": 11.5e6});
        serde_json::from_value(serde_json::json!({
            "launch": {"command": ["mpirun", "--host", "a,b"], "hosts": hosts, "ranks": 2, "host0": "a"},
            "duration_s": 1.0, "pingpong": [], "overheads": [], "collectives": [],
            "segments": [seg], "break_points_bytes": [], "eager_threshold_bytes": null,
            "fit": {"heldout_sizes_bytes": [], "heldout_max_rel_error": 0.0, "heldout_mean_rel_error": 0.0,
                    "fit_max_rel_error": 0.0, "outlier_sizes_bytes": []},
            "smpi": {"link_latency_s": 50e-6, "link_bandwidth_bytes_per_s": 11.5e6,
                     "cfg": ["smpi/bw-factor:0:0.9", "smpi/send-is-detached-thresh:65536"], "smpi_only_cfg": [],
                     "overheads_clamped": false},
            "self_check": null,
            "intra_host": if intra {
                serde_json::json!({"host": "a", "command": [], "pingpong": [], "segments": [seg]})
            } else {
                serde_json::Value::Null
            },
        }))
        .unwrap()
    }

    #[test]
    fn shipped_platforms_pass() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("platforms");
        let mut n = 0;
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "xml") {
                let hosts = platform_hosts(&p).unwrap_or_else(|e| panic!("{e:#}"));
                let text = std::fs::read_to_string(&p).unwrap();
                let ids = host_ids(&text);
                assert!(!ids.is_empty() && ids.iter().all(|h| hosts.contains(h)), "{}: {ids:?}", p.display());
                n += 1;
            }
        }
        assert!(n >= 7, "{n} platforms");
    }

    #[test]
    fn host_ids_follow_the_order_property() {
        let x = "<platform version=\"4.1\"><zone id=\"w\" routing=\"Full\">\
                 <host id=\"z\" speed=\"1Gf\"><prop id=\"mpicast/order\" value=\"0\"/></host>\
                 <host id=\"y\" speed=\"1Gf\"><prop id=\"mpicast/order\" value=\"2\"/></host>\
                 <host id=\"x\" speed=\"1Gf\"><prop id=\"mpicast/order\" value=\"1\"/></host>\
                 <!-- <host id=\"commented\" speed=\"1Gf\"/> --></zone></platform>";
        assert_eq!(host_ids(x), ["z", "x", "y"]);
        assert!(host_ids("<platform><host id=\"a\"").is_empty());
    }

    /// One unit table: every unit the checker takes scales to the same base value.
    #[test]
    fn one_unit_reader() {
        let read = |q, v: &str| read_quantity(q, v, "link", "x").map(|p| p.iter().map(|(_, b)| *b).collect::<Vec<_>>());
        assert_eq!(read(Quantity::Latency, "1d"), Ok(vec![86400.0]));
        assert_eq!(read(Quantity::Bandwidth, "1TiBps"), Ok(vec![1024f64.powi(4)]));
        assert_eq!(read(Quantity::Bandwidth, "8Gbps; 1GBps"), Ok(vec![1e9, 1e9]));
        assert_eq!(read(Quantity::Speed, "1Gf, 2gigaflops"), Ok(vec![1e9, 2e9]));
        assert!(read(Quantity::Bandwidth, "1KBps").is_err());
        assert!(read(Quantity::Latency, "1 s").is_err());
    }
}
