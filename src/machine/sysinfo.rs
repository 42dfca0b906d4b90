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
/// half of L3. L3: a quarter of L3 (how much of L3 a program really gets), at most four times
/// L2+, when that is past L2+: a virtual machine is shown its host's whole L3 (480 MiB on this
/// project's 2-core Intel VM, whose quarter, 120 MiB, streamed at memory speed there; streams
/// fell to memory speed between 32 and 64 MiB), while 16 MiB is inside the L3 a core gets on
/// any current server. DRAM: four times L3, at least 64 MiB. With L3 at 16 MiB the pure stream
/// kernels there move up to 3x between tables (stores 0.38 to 1.09 ns per 8 bytes): the
/// kernels beside work cap them (predict::memory), without which stencil3d_torus came out
/// +26% to +58%.
pub fn working_sets(caches: &[CacheLevel]) -> Vec<(&'static str, u64)> {
    let l1 = data_cache_bytes(caches, 1);
    let l2 = data_cache_bytes(caches, 2);
    let l3 = data_cache_bytes(caches, 3);
    let near = (2 * l2).min(l3 / 2).max(l2 + l2 / 2);
    let mut v = vec![("L1", l1 / 2), ("L2", l2 / 2), ("L2+", near)];
    let share = (l3 / 4).min(4 * near);
    if share > near {
        v.push(("L3", share));
    }
    v.push(("DRAM", (4 * l3).max(64 << 20)));
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    fn cache(level: u32, size: u64) -> CacheLevel {
        CacheLevel { level, kind: if level == 1 { "Data".into() } else { "Unified".into() }, size_bytes: size, sets: None, line_bytes: None }
    }

    /// This project's Intel VM (48 KiB L1, 2 MiB L2, /sys's L3 480 MiB): L3 at 16 MiB, not a
    /// quarter of 480; a server's 32 MiB L3 keeps its quarter; a 2 MiB L3 has no L3 set.
    #[test]
    fn the_l3_working_set_stays_inside_what_a_core_gets() {
        let vm = [cache(1, 48 << 10), cache(2, 2 << 20), cache(3, 480 << 20)];
        assert_eq!(working_sets(&vm), [("L1", 24 << 10), ("L2", 1 << 20), ("L2+", 4 << 20), ("L3", 16 << 20), ("DRAM", 1920 << 20)]);
        let server = [cache(1, 32 << 10), cache(2, 1 << 20), cache(3, 32 << 20)];
        assert_eq!(working_sets(&server)[3], ("L3", 8 << 20));
        let small = [cache(1, 32 << 10), cache(2, 512 << 10), cache(3, 2 << 20)];
        assert_eq!(working_sets(&small).iter().map(|w| w.0).collect::<Vec<_>>(), ["L1", "L2", "L2+", "DRAM"]);
    }

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("48K"), Some(48 * 1024));
        assert_eq!(parse_size("32M"), Some(32 << 20));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size("x"), None);
    }
}
