//! Lists as aligned columns.

use crate::escape;

/// Rows of cells under a header, each column as wide as its widest cell. A cell is one line:
/// a server's value cannot break it into a row of its own.
#[derive(Debug)]
pub(crate) struct Table {
    rows: Vec<Vec<String>>,
}

impl Table {
    pub(crate) fn new(header: &[&str]) -> Self {
        Self {
            rows: vec![header.iter().map(|cell| (*cell).to_owned()).collect()],
        }
    }

    pub(crate) fn row(&mut self, cells: Vec<String>) {
        let cells = cells
            .into_iter()
            .map(|cell| escape::field(&cell).into_owned())
            .collect();
        self.rows.push(cells);
    }

    /// The table, or `none` when it has no row under its header.
    pub(crate) fn render(&self, none: &str) -> String {
        if self.rows.len() == 1 {
            return format!("{none}\n");
        }
        let columns = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        let mut widths = vec![0; columns];
        for row in &self.rows {
            for (width, cell) in widths.iter_mut().zip(row) {
                *width = (*width).max(cell.chars().count());
            }
        }
        let mut out = String::new();
        for row in &self.rows {
            let mut line = String::new();
            for (index, cell) in row.iter().enumerate() {
                if index + 1 == row.len() {
                    line.push_str(cell);
                } else {
                    let pad = widths[index] - cell.chars().count();
                    line.push_str(cell);
                    line.push_str(&" ".repeat(pad + 2));
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

/// The first paragraph of `text` on one line, cut to at most `max` characters.
pub(crate) fn one_line(text: &str, max: usize) -> String {
    let paragraph = text.split("\n\n").next().unwrap_or_default();
    let joined = paragraph.split_whitespace().collect::<Vec<_>>().join(" ");
    if joined.chars().count() <= max {
        return joined;
    }
    let mut cut: String = joined.chars().take(max.saturating_sub(1)).collect();
    if let Some(space) = cut.rfind(' ') {
        cut.truncate(space);
    }
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::{Table, one_line};

    #[test]
    fn columns_are_aligned_on_the_widest_cell() {
        let mut table = Table::new(&["NAME", "DESCRIPTION"]);
        table.row(vec!["a".into(), "first".into()]);
        table.row(vec!["longer_name".into(), "second".into()]);
        assert_eq!(
            table.render("none"),
            "NAME         DESCRIPTION\na            first\nlonger_name  second\n"
        );
        assert_eq!(Table::new(&["NAME"]).render("(no tools)"), "(no tools)\n");
    }

    #[test]
    fn a_cell_stays_on_its_row() {
        let mut table = Table::new(&["NAME", "DESCRIPTION"]);
        table.row(vec!["a\nforged  row".into(), "\x1b[2J".into()]);
        assert_eq!(
            table.render("none"),
            "NAME            DESCRIPTION\na\\nforged  row  \\x1b[2J\n"
        );
    }

    #[test]
    fn descriptions_fit_one_line() {
        assert_eq!(one_line("Short.\n\nMore.", 72), "Short.");
        assert_eq!(one_line("aaa bbb ccc", 9), "aaa bbb…");
    }
}
