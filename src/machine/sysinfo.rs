//! What the host is: name, CPU model, cores, cache sizes (from /proc and /sys).

use crate::model::machine::{CacheLevel, HostInfo};

pub fn host_info() -> HostInfo {
    let (hostname, cpu_model, cores) = identity();
    HostInfo {
        hostname,
        cpu_model,
        cores,
        caches: caches(),
        os: std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| format!("{} {}", std::env::consts::OS, s.trim()))
            .unwrap_or_else(|_| std::env::consts::OS.to_string()),
    }
}

/// Whether a table's host is this one: the same name, CPU model and core count. A name alone
/// is not enough: virtual machines are often all called alike (a 16-core machine and a 2-core
/// one here were both "vm"), and a table carried from one to the other must not be taken for
/// this host's own.
pub fn is_this_host(h: &HostInfo) -> bool {
    let (hostname, cpu_model, cores) = identity();
    h.hostname == hostname && h.cpu_model == cpu_model && h.cores == cores
}

/// This host's name, CPU model and online CPUs.
fn identity() -> (String, String, u32) {
    let hostname = crate::model::hostname_or("unknown");
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu_model = cpuinfo
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            matches!(k.trim(), "model name" | "Model" | "cpu model").then(|| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into());
    let cores = std::thread::available_parallelism()
        .map(|n| n.get() as u32)
        .unwrap_or(1);
    (hostname, cpu_model, cores)
}

fn caches() -> Vec<CacheLevel> {
    let mut out = Vec::new();
    for i in 0..8 {
        let dir = format!("/sys/devices/system/cpu/cpu0/cache/index{i}");
        let read = |f: &str| {
            std::fs::read_to_string(format!("{dir}/{f}"))
                .ok()
                .map(|s| s.trim().to_string())
        };
        let (Some(level), Some(kind), Some(size)) = (read("level"), read("type"), read("size"))
        else {
            continue;
        };
        let (Ok(level), Some(size_bytes)) = (level.parse(), parse_size(&size)) else {
            continue;
        };
        out.push(CacheLevel {
            level,
            kind,
            size_bytes,
            sets: read("number_of_sets").and_then(|v| v.parse().ok()).filter(|&v| v > 0),
            line_bytes: read("coherency_line_size").and_then(|v| v.parse().ok()).filter(|&v| v > 0),
        });
    }
    out
}

/// "48K", "1024K", "32M" -> bytes.
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mult) = match s.chars().last()? {
        'K' | 'k' => (&s[..s.len() - 1], 1024),
        'M' | 'm' => (&s[..s.len() - 1], 1024 * 1024),
        'G' | 'g' => (&s[..s.len() - 1], 1024 * 1024 * 1024),
        _ => (s, 1),
    };
    num.trim().parse::<u64>().ok().map(|n| n * mult)
}

/// Data cache size of a level (data or unified), or a usual default when /sys does not say.
pub fn data_cache_bytes(caches: &[CacheLevel], level: u32) -> u64 {
    caches
        .iter()
        .find(|c| c.level == level && c.kind != "Instruction")
        .map(|c| c.size_bytes)
        .unwrap_or(match level {
            1 => 32 << 10,
            2 => 1 << 20,
            _ => 16 << 20,
        })
}

/// Working sets measured for L1, L2, L3, DRAM. L1 and L2: half the cache. L2+: twice L2 (just
/// past L2, inside L3 even where a virtual machine sees only a slice of a shared L3), at most
/// half of L3. L3: a quarter of L3, when that is past L2+ (how much of L3 a program really
/// gets). DRAM: four times L3, at least 64 MiB.
///
/// A virtual machine is shown its host's whole L3 (480 MiB on this project's 2-core Intel VM),
/// and its quarter streams at memory speed there. Measuring L3 at 16 MiB instead (inside what a
/// core gets) was tried and undone: at 16 MiB the pure stream kernels moved 3x between tables
/// (stores 0.38 to 1.09 ns per 8 bytes) and stencil3d_torus (14 and 35 MiB) came out +26% to
/// +58%, where from the figures interpolated between L2+ and the 120 MiB point it had been
/// within 6% (docs/ACCURACY.md, 2026-12-01).
pub fn working_sets(caches: &[CacheLevel]) -> Vec<(&'static str, u64)> {
    let l1 = data_cache_bytes(caches, 1);
    let l2 = data_cache_bytes(caches, 2);
    let l3 = data_cache_bytes(caches, 3);
    let near = (2 * l2).min(l3 / 2).max(l2 + l2 / 2);
    let mut v = vec![("L1", l1 / 2), ("L2", l2 / 2), ("L2+", near)];
    if l3 / 4 > near {
        v.push(("L3", l3 / 4));
    }
    v.push(("DRAM", (4 * l3).max(64 << 20)));
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("48K"), Some(48 * 1024));
        assert_eq!(parse_size("32M"), Some(32 << 20));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size("x"), None);
    }
}
