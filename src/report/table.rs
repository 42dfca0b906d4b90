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

/// Seconds for a terminal column: `2.53 ms`, `687.73 us`, `4.0 ns`, `1.234  s` (units two
/// characters wide).
pub fn seconds(s: f64) -> String {
    seconds_in(s, "us", " ")
}

/// Seconds with a unit chosen by magnitude; `micro` spells the microsecond unit and `pad` goes
/// between the number and a one-letter unit (`" "` lines up with two-letter units).
pub fn seconds_in(s: f64, micro: &str, pad: &str) -> String {
    let a = s.abs();
    if !s.is_finite() {
        format!("{s}")
    } else if a == 0.0 {
        format!("0 {pad}s")
    } else if a < 1e-6 {
        format!("{:.1} ns", s * 1e9)
    } else if a < 1e-3 {
        format!("{:.2} {micro}", s * 1e6)
    } else if a < 1.0 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{s:.3} {pad}s")
    }
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
