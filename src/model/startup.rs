//! mpicast/startup: the launcher's start-up on one host, per rank count: a run's wall clock
//! less its span (MPI_Init's return to MPI_Finalize's call), which a prediction does not cover.

use serde::{Deserialize, Serialize};

use super::Artifact;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StartupTable {
    pub hostname: String,
    /// The launch settings, as reports show them (`mpirun --bind-to none ... -np N`, N left out).
    pub launcher: String,
    /// Ascending by ranks; one point per rank count.
    pub points: Vec<StartupPoint>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StartupPoint {
    pub ranks: u32,
    /// Median and min over the runs, seconds.
    pub median_s: f64,
    pub min_s: f64,
    pub runs: u32,
    /// What measured it: `validate` (the program's own runs) or `empty` (an MPI program that
    /// only calls MPI_Init and MPI_Finalize).
    pub source: String,
}

impl Artifact for StartupTable {
    const SCHEMA: &'static str = "mpicast/startup";
    const VERSION: u32 = 1;
}

impl StartupTable {
    /// The start-up at `ranks`: the point itself, else linear between the nearest points
    /// around it, else the nearest point's (beyond the measured range).
    pub fn at(&self, ranks: u32) -> Option<f64> {
        let below = self.points.iter().filter(|p| p.ranks <= ranks).max_by_key(|p| p.ranks);
        let above = self.points.iter().filter(|p| p.ranks >= ranks).min_by_key(|p| p.ranks);
        match (below, above) {
            (Some(b), Some(a)) if a.ranks == b.ranks => Some(b.median_s),
            (Some(b), Some(a)) => {
                let w = (ranks - b.ranks) as f64 / (a.ranks - b.ranks) as f64;
                Some(b.median_s + w * (a.median_s - b.median_s))
            }
            (Some(p), None) | (None, Some(p)) => Some(p.median_s),
            (None, None) => None,
        }
    }

    /// Adds or replaces the point of `p.ranks`.
    pub fn insert(&mut self, p: StartupPoint) {
        self.points.retain(|q| q.ranks != p.ranks);
        self.points.push(p);
        self.points.sort_by_key(|q| q.ranks);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(ranks: u32, median_s: f64) -> StartupPoint {
        StartupPoint { ranks, median_s, min_s: median_s, runs: 3, source: "empty".into() }
    }

    #[test]
    fn start_up_between_and_beyond_the_points() {
        let mut t = StartupTable { hostname: "h".into(), launcher: "mpirun".into(), points: Vec::new() };
        assert_eq!(t.at(4), None);
        t.insert(point(4, 0.5));
        t.insert(point(2, 0.3));
        t.insert(point(4, 0.6));
        assert_eq!(t.points.iter().map(|p| p.ranks).collect::<Vec<_>>(), vec![2, 4]);
        assert_eq!(t.at(2), Some(0.3));
        assert!((t.at(3).unwrap() - 0.45).abs() < 1e-12);
        assert_eq!(t.at(1), Some(0.3));
        assert_eq!(t.at(64), Some(0.6));
    }
}
