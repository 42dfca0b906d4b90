//! Terminal tables whose columns line up, numbers with their units: a value's unit is padded to
//! two characters (` s`, `ms`, `us`, `ns`) so right-aligned values line up on the unit as well.

/// How a column aligns its cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// A table: a header row, then rows, each cell a string; widths in characters.
#[derive(Debug, Clone)]
pub struct Table {
    columns: Vec<(String, Align)>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(columns: &[(&str, Align)]) -> Table {
        Table { columns: columns.iter().map(|(h, a)| (h.to_string(), *a)).collect(), rows: Vec::new() }
    }

    /// Adds a row; missing cells are blank, extra cells are dropped.
    pub fn row(&mut self, cells: Vec<String>) {
        let mut cells = cells;
        cells.resize(self.columns.len(), String::new());
        self.rows.push(cells);
    }

    /// The table, two spaces between columns, no trailing spaces.
    pub fn render(&self) -> String {
        let width = |s: &str| s.chars().count();
        let widths: Vec<usize> = (0..self.columns.len())
            .map(|c| self.rows.iter().map(|r| width(&r[c])).chain([width(&self.columns[c].0)]).max().unwrap_or(0))
            .collect();
        let mut o = String::new();
        let header: Vec<String> = self.columns.iter().map(|(h, _)| h.clone()).collect();
        for row in std::iter::once(&header).chain(self.rows.iter()) {
            let mut line = String::new();
            for (c, cell) in row.iter().enumerate() {
                if c > 0 {
                    line.push_str("  ");
                }
                let pad = " ".repeat(widths[c] - width(cell));
                match self.columns[c].1 {
                    Align::Left => {
                        line.push_str(cell);
                        line.push_str(&pad);
                    }
                    Align::Right => {
                        line.push_str(&pad);
                        line.push_str(cell);
                    }
                }
            }
            o.push_str(line.trim_end());
            o.push('\n');
        }
        o
    }
}

/// How seconds are written: the unit is chosen by magnitude (ns, us, ms, s).
#[derive(Clone, Copy, Debug)]
pub struct SecondsStyle {
    /// The microsecond unit: `us` on a terminal, `µs` in a page.
    pub micro: &'static str,
    /// Between the number and a one-letter unit: `" "` lines up with two-letter units.
    pub pad: &'static str,
    /// Decimals of milliseconds and microseconds (seconds have 3, nanoseconds 1).
    pub digits: usize,
    /// Nanoseconds below a microsecond; else microseconds down to zero.
    pub nanos: bool,
    /// What a value that is not finite reads as (None: Rust's own `inf`, `NaN`).
    pub not_finite: Option<&'static str>,
}

/// Terminal columns: `2.53 ms`, `687.73 us`, `4.0 ns`, `1.234  s` (units two characters wide).
pub const COLUMN: SecondsStyle = SecondsStyle { micro: "us", pad: " ", digits: 2, nanos: true, not_finite: None };
/// Terminal text: as [`COLUMN`], with `1.234 s`.
pub const TEXT: SecondsStyle = SecondsStyle { pad: "", ..COLUMN };
/// HTML pages: as [`TEXT`], with `µs`.
pub const PAGE: SecondsStyle = SecondsStyle { micro: "µs", ..TEXT };
/// Short cells (validation): one decimal, no nanoseconds, `-` for what is not a time.
pub const BRIEF: SecondsStyle = SecondsStyle { digits: 1, nanos: false, not_finite: Some("-"), ..TEXT };

/// Seconds for a terminal column ([`COLUMN`]).
pub fn seconds(s: f64) -> String {
    seconds_as(s, COLUMN)
}

/// Seconds in a style: the one formatter of times for people (terminal tables, text reports,
/// pages).
pub fn seconds_as(s: f64, style: SecondsStyle) -> String {
    let SecondsStyle { micro, pad, digits, nanos, not_finite } = style;
    let a = s.abs();
    if !s.is_finite() {
        not_finite.map_or_else(|| format!("{s}"), str::to_string)
    } else if a == 0.0 {
        format!("0 {pad}s")
    } else if nanos && a < 1e-6 {
        format!("{:.1} ns", s * 1e9)
    } else if a < 1e-3 {
        format!("{:.digits$} {micro}", s * 1e6)
    } else if a < 1.0 {
        format!("{:.digits$} ms", s * 1e3)
    } else {
        format!("{s:.3} {pad}s")
    }
}

/// A path's file name (the path itself when it has none): how reports name files.
pub fn short_path(p: &str) -> String {
    std::path::Path::new(p)
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| p.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_and_units_line_up() {
        let mut t = Table::new(&[("machine", Align::Left), ("predicted", Align::Right)]);
        t.row(vec!["a.json".into(), seconds(2.5e-3)]);
        t.row(vec!["longer-name.json".into(), seconds(1.5)]);
        t.row(vec!["c".into(), seconds(6.8773e-4)]);
        assert_eq!(
            t.render(),
            "machine           predicted\n\
             a.json              2.50 ms\n\
             longer-name.json   1.500  s\n\
             c                 687.73 us\n"
        );
    }
}
