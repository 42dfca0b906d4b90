//! The machine table (`mpicast/machine`, version 1): what each op class costs on one host, with
//! one compiler and one set of flags, as measured by `mpicast bench machine` (src/machine).
//! docs/FORMATS.md describes the fields; docs/OPS.md the classes.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::ops::OpClass;
use super::Artifact;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MachineTable {
    pub host: HostInfo,
    pub compiler: CompilerInfo,
    pub timer: TimerInfo,
    pub settings: BenchSettings,
    /// Per op class: throughput and latency variants. Keys are the class names (docs/OPS.md).
    pub classes: BTreeMap<OpClass, ClassCost>,
    /// Loads and stores by working set (L1, L2, L3, DRAM), streaming and random.
    pub memory: Vec<MemoryCost>,
    /// Costs fitted "in context" on the calibration kernels; absent when not run.
    pub fit: Option<FitResult>,
    /// Seconds since the Unix epoch, and the same instant as `YYYY-MM-DDTHH:MM:SSZ`.
    pub created_unix_s: u64,
    pub created_utc: String,
    pub mpicast_version: String,
    /// Seconds the whole measurement took (compilation included).
    pub duration_s: f64,
    /// Other processes' CPU use while it was measured (absent in tables written before it was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<super::load::HostLoad>,
    /// The calibration kernels with every core running one (absent in older tables and on one
    /// core): how much slower a core computes when all of them do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub co_run: Option<CoRun>,
    /// The regime the host spent most of the measurement in, which every cost is taken in
    /// (absent in older tables and where the probe kernel did not run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regime: Option<Regime>,
    /// How long llvm-mca's cycles take on this host where a loop body is bound by the core's
    /// resources (absent in older tables, without llvm-mca, or with too few such kernels).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub core_resources: Option<CoreResources>,
}

/// The calibration kernels' loop bodies as llvm-mca schedules them against their measured
/// times: llvm-mca's CPU model runs a body on the whole core, and a core shared with a
/// sibling's work (a VM's) runs a resource-bound body slower, a dependent chain not.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CoreResources {
    /// Median measured / scheduled time over the resource-bound kernels: what one of
    /// llvm-mca's resource-bound cycles takes, in `core_cycle`s.
    pub factor: f64,
    pub kernels: Vec<CoreResourceKernel>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CoreResourceKernel {
    pub name: String,
    /// llvm-mca's cycles per iteration of the kernel's innermost loop (one body), and the part
    /// its resources alone bound.
    pub cycles: f64,
    pub throughput_cycles: f64,
    /// The body's measured ns (the fit's median) and cycles x core_cycle.
    pub measured_ns: f64,
    pub scheduled_ns: f64,
    /// Counted in the factor: resources bound it (throughput_cycles at least 0.8 of cycles).
    pub resource_bound: bool,
}

/// A shared host computes at more than one speed (a core whose sibling runs another tenant's
/// work); a probe timed before every sample tells them apart (src/machine/measure.rs).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Regime {
    /// The probe: a calibration kernel, about a millisecond before every sample.
    pub probe_kernel: String,
    /// The probe's median ns per iteration over the measurement: the host's typical speed.
    pub probe_ns: f64,
    /// A sample is in the regime when its probe ran within this factor of `probe_ns`.
    pub band: f64,
    /// Share of the samples of the rounds whose probe fell in the regime.
    pub share: f64,
    /// The probe's fastest and slowest runs: far apart when the host changed regime.
    pub probe_min_ns: f64,
    pub probe_max_ns: f64,
    /// Samples taken beyond the rounds so that every kernel had 3 in the regime.
    pub extra_samples: u32,
    /// Kernels that still had fewer (their costs use every sample in the regime, or every
    /// sample where none was).
    pub kernels_short: u32,
}

impl Regime {
    /// Whether a probe of `probe_ns` per iteration ran in this regime.
    pub fn contains(&self, probe_ns: f64) -> bool {
        probe_ns >= self.probe_ns / self.band && probe_ns <= self.probe_ns * self.band
    }
}

/// Compute with every core busy: each calibration kernel timed on the wall clock alone and with
/// one companion per other core running the same kernel.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CoRun {
    /// The cores that ran at once (the host's).
    pub cores: u32,
    /// Median over the kernels of (time with every core busy) / (time alone).
    pub factor: f64,
    pub kernels: Vec<CoRunKernel>,
    /// The same ratio for the class kernels of independent adds and multiplies (registers
    /// only) and of dependent chains; 0 in tables written before they existed. On the 2-core
    /// development VM: 1.01 and 1.00, while loop bodies over arrays in L1 ran up to 2x slower
    /// (vCPUs that share a core's caches).
    #[serde(default)]
    pub throughput_factor: f64,
    #[serde(default)]
    pub latency_factor: f64,
}

impl CoRun {
    /// The factors a prediction uses: loop bodies bound by their resources (the calibration
    /// kernels' median) and dependent chains (the chain kernels', the overall one where a
    /// table lacks it).
    pub fn factors(&self) -> (f64, f64) {
        let lat = if self.latency_factor >= 1.0 { self.latency_factor } else { self.factor };
        (self.factor.max(1.0), lat.max(1.0))
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CoRunKernel {
    pub name: String,
    /// Wall ns per body, alone and with every core running it (medians).
    pub alone_ns: f64,
    pub all_cores_ns: f64,
}

impl Artifact for MachineTable {
    const SCHEMA: &'static str = "mpicast/machine";
    const VERSION: u32 = 1;
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct HostInfo {
    pub hostname: String,
    pub cpu_model: String,
    /// Online logical CPUs.
    pub cores: u32,
    pub caches: Vec<CacheLevel>,
    pub os: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CacheLevel {
    pub level: u32,
    /// "Data", "Instruction" or "Unified", as /sys says.
    pub kind: String,
    pub size_bytes: u64,
    /// Its sets and line size, as /sys says (absent in older tables, or where /sys does not
    /// say): a constant stride of a power of two lines uses only some of the sets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sets: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line_bytes: Option<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CompilerInfo {
    /// The compiler command, e.g. "mpicc".
    pub cc: String,
    pub cflags: Vec<String>,
    /// First line of `cc --version`.
    pub version: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TimerInfo {
    /// "perf_event" (cycles and instructions counted as well as time) or "clock" (time only:
    /// the counters were not available; `fallback_reason` says why).
    pub source: String,
    /// The clock times come from: "thread_cpu_time" (CLOCK_THREAD_CPUTIME_ID of the kernel
    /// driver: time spent descheduled while others use the core is left out).
    pub clock: String,
    /// Share of wall time the driver spent descheduled over all samples (how loaded the host
    /// was: another process wanted its core).
    pub descheduled_fraction: f64,
    /// Why the counters were not used, when they were not.
    pub fallback_reason: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BenchSettings {
    pub quick: bool,
    /// Samples per kernel (each one call of the kernel, calibrated to `min_sample_ms`).
    pub samples: u32,
    pub min_sample_ms: f64,
    /// Ops per loop iteration in the class kernels.
    pub unroll: u32,
    /// Empty-loop cost subtracted from every class kernel, ns per iteration (median).
    pub empty_loop_ns: f64,
    /// Classes asked for with --classes (empty: all).
    pub only_classes: Vec<OpClass>,
}

/// One figure with its spread over the samples.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct Measure {
    /// Median over the samples.
    pub ns_per_op: f64,
    pub min_ns: f64,
    pub max_ns: f64,
    /// (max - min) / median of the raw kernel times (before the empty loop is subtracted).
    pub spread: f64,
    pub samples: u32,
    /// Per op, when the perf-event counters were usable.
    pub cycles_per_op: Option<f64>,
    pub instructions_per_op: Option<f64>,
    /// The subtraction left nothing measurable; ns_per_op was raised to the floor (0.005 ns).
    pub clamped: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ClassCost {
    /// Independent ops (8 chains): what an op costs among others in a loop body.
    pub throughput: Measure,
    /// One dependent chain: what an op costs when it waits for the one before.
    pub latency: Measure,
    /// False when the class has no natural dependent chain and `latency` is a single stream.
    pub latency_is_chain: bool,
    /// The kernels that gave these figures.
    pub kernels: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MemoryCost {
    /// "L1", "L2", "L2+" (just past L2), "L3" (a quarter of L3), "DRAM"; tables measured
    /// before "L2+" existed have "L3" at twice L2.
    pub level: String,
    pub working_set_bytes: u64,
    /// "stream", "random", or "stride" (loads a page and a line apart: a constant stride the
    /// prefetchers do not follow).
    pub pattern: String,
    /// "load" or "store".
    pub access: String,
    /// 8-byte accesses; for random loads, independent chases (throughput).
    pub throughput: Measure,
    /// Random loads: one dependent pointer chase. Absent elsewhere.
    pub latency: Option<Measure>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FitResult {
    /// How the fit was made (method, regularisation, which counts).
    pub method: String,
    /// Weight of the pull towards the raw throughput costs (relative units).
    pub lambda: f64,
    /// Fitted ns per op for every class; classes no kernel uses keep their raw throughput.
    pub ns_per_op: BTreeMap<OpClass, f64>,
    pub kernels: Vec<CalibrationKernel>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CalibrationKernel {
    pub name: String,
    /// Op counts of one loop body, as declared in microbench/mtc_calib.c.
    pub counts: BTreeMap<OpClass, f64>,
    pub measured: Measure,
    /// Formula (1) with the raw throughput costs, ns per body.
    pub predicted_raw_ns: f64,
    /// Formula (1) with the fitted costs, ns per body.
    pub predicted_fit_ns: f64,
    /// (predicted - measured) / measured.
    pub error_raw: f64,
    pub error_fit: f64,
}

/// Which of a class's costs to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    Throughput,
    Latency,
    /// Fitted on the calibration kernels (falls back to throughput when there is no fit).
    Fitted,
}

impl MachineTable {
    /// What one op of `class` costs in ns, throughput variant: loop bodies are mostly
    /// independent ops that the core overlaps, which is what the throughput kernels measure.
    /// None when the table does not have the class (a --classes table).
    pub fn ns_per_op(&self, class: OpClass) -> Option<f64> {
        self.cost(class, Variant::Throughput)
    }

    pub fn cost(&self, class: OpClass, variant: Variant) -> Option<f64> {
        if let Some(m) = self.derived(class) {
            return Some(m.ns_per_op);
        }
        let c = self.classes.get(&class)?;
        Some(match variant {
            Variant::Throughput => c.throughput.ns_per_op,
            Variant::Latency => c.latency.ns_per_op,
            Variant::Fitted => self
                .fit
                .as_ref()
                .and_then(|f| f.ns_per_op.get(&class).copied())
                .unwrap_or(c.throughput.ns_per_op),
        })
    }

    /// The measure a derived class costs (`OpClass::DERIVED`), whatever the variant: a core
    /// cycle is the int_add latency kernel's figure (a chain of dependent adds, one cycle each
    /// on every x86-64 core).
    pub fn derived(&self, class: OpClass) -> Option<&Measure> {
        match class {
            OpClass::CoreCycle => self.classes.get(&OpClass::IntAdd).map(|c| &c.latency),
            _ => None,
        }
    }

    /// Every time the table holds multiplied by its class's factor (a host that now computes
    /// slower or faster than when it was measured: `machine::speed`): each class's throughput
    /// and latency and its fitted cost by `factor(Some(class))`, the memory figures by the load
    /// or store class's, the calibration kernels' measures by `factor(None)`. Ratios (the
    /// co-run factors and kernels, spreads) and counted cycles stay.
    pub fn scale_times(&mut self, factor: &dyn Fn(Option<OpClass>) -> f64) {
        let scale = |m: &mut Measure, f: f64| {
            m.ns_per_op *= f;
            m.min_ns *= f;
            m.max_ns *= f;
        };
        for (c, cost) in self.classes.iter_mut() {
            let f = factor(Some(*c));
            scale(&mut cost.throughput, f);
            scale(&mut cost.latency, f);
        }
        for m in &mut self.memory {
            let f = factor(Some(if m.access == "store" { OpClass::Store } else { OpClass::Load }));
            scale(&mut m.throughput, f);
            if let Some(l) = &mut m.latency {
                scale(l, f);
            }
        }
        if let Some(fit) = &mut self.fit {
            for (c, v) in fit.ns_per_op.iter_mut() {
                *v *= factor(Some(*c));
            }
            let f = factor(None);
            for k in &mut fit.kernels {
                scale(&mut k.measured, f);
                k.predicted_raw_ns *= f;
                k.predicted_fit_ns *= f;
            }
        }
    }

    /// The memory figure for a level ("L1".."DRAM"), pattern and access, if measured.
    pub fn memory_cost(&self, level: &str, pattern: &str, access: &str) -> Option<&MemoryCost> {
        self.memory
            .iter()
            .find(|m| m.level == level && m.pattern == pattern && m.access == access)
    }
}
