//! One results table, printed two ways: padded columns on the console and a
//! markdown table in report.md. The bench commands of both workloads (render,
//! collide) describe their columns once here instead of writing each table
//! twice, so the two prints cannot drift apart.

/// Which side of its console column a cell sits on; report.md aligns the
/// column the same way (`---` or `---:`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Left,
    Right,
}

/// How report.md marks a cell (the console prints it bare).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mark {
    Plain,
    /// `name`: an algorithm or a hash.
    Code,
    /// **value**: the number the table is about.
    Bold,
    /// A percentage: `8.1%` on the console (the sign inside the width), `8.1 %` in report.md.
    Percent,
}

/// Where a column is printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shown {
    Both,
    /// Only on the console (report.md names it in the section heading).
    Console,
    /// Only in report.md (the console has no room for it).
    Report,
}

/// One column of a results table over rows of type `R`.
pub struct Column<R> {
    head: &'static str,
    report_head: &'static str,
    side: Side,
    width: usize,
    /// Spaces before the column on the console.
    gap: usize,
    mark: Mark,
    shown: Shown,
    /// A key column names the configuration: printed even for a row that did not run.
    key: bool,
    cell: fn(&R) -> String,
}

impl<R> Column<R> {
    /// A column naming the configuration, left-aligned and `width` wide on the console.
    pub fn key(head: &'static str, width: usize, cell: fn(&R) -> String) -> Self {
        let side = Side::Left;
        Column { head, report_head: head, side, width, gap: 1, mark: Mark::Plain, shown: Shown::Both, key: true, cell }
    }

    /// A measured column, right-aligned and `width` wide on the console.
    pub fn value(head: &'static str, width: usize, cell: fn(&R) -> String) -> Self {
        Column { key: false, ..Self::key(head, width, cell).right() }
    }

    /// A column printed on the left (a measured name or hash).
    pub fn left(self) -> Self {
        Column { side: Side::Left, ..self }
    }

    /// A column printed on the right (a key that is a number).
    pub fn right(self) -> Self {
        Column { side: Side::Right, ..self }
    }

    /// Its heading in report.md, where that differs from the console's.
    pub fn reported_as(self, report_head: &'static str) -> Self {
        Column { report_head, ..self }
    }

    pub fn marked(self, mark: Mark) -> Self {
        Column { mark, ..self }
    }

    pub fn only(self, shown: Shown) -> Self {
        Column { shown, ..self }
    }

    /// A wider gap before the column on the console.
    pub fn after_gap(self, gap: usize) -> Self {
        Column { gap, ..self }
    }

    fn pad(&self, text: &str) -> String {
        match (self.side, self.mark) {
            (Side::Right, Mark::Percent) => format!("{text:>w$}%", w = self.width.saturating_sub(1)),
            (Side::Left, Mark::Percent) => format!("{:<w$}", format!("{text}%"), w = self.width),
            (Side::Right, _) => format!("{text:>w$}", w = self.width),
            (Side::Left, _) => format!("{text:<w$}", w = self.width),
        }
    }

    fn marked_cell(&self, text: &str) -> String {
        match self.mark {
            Mark::Plain => text.to_string(),
            Mark::Code => format!("`{text}`"),
            Mark::Bold => format!("**{text}**"),
            Mark::Percent => format!("{text} %"),
        }
    }
}

/// The compaction algorithm a row ran with (or `none`): a key column that
/// every bench table of the workloads prints alike.
pub fn compaction_column<R>(cell: fn(&R) -> String) -> Column<R> {
    Column::key("compaction", 27, cell).marked(Mark::Code)
}

/// A number at `digits` decimals, the text of most measured cells.
pub fn num(value: f64, digits: usize) -> String {
    format!("{value:.digits$}")
}

/// Cells joined as the console prints them, each after its column's gap.
fn join<'c, R: 'c>(cells: impl Iterator<Item = (&'c Column<R>, String)>) -> String {
    let mut s = String::new();
    for (i, (c, text)) in cells.enumerate() {
        if i > 0 {
            s.push_str(&" ".repeat(c.gap));
        }
        s.push_str(&text);
    }
    s
}

/// Why a row has no measured cells (`did not run: …`), or `None` when it has them.
pub type Failed<R> = fn(&R) -> Option<String>;

/// Why a row with `error` did not run, as [`Failed`] gives it.
pub fn did_not_run(error: &Option<String>) -> Option<String> {
    error.as_ref().map(|e| format!("did not run: {e}"))
}

/// The console table: a heading line, then one line a row; a row that
/// `failed` prints its key columns and why.
pub fn console<R>(columns: &[Column<R>], rows: &[R], failed: Failed<R>) -> String {
    let shown: Vec<&Column<R>> = columns.iter().filter(|c| c.shown != Shown::Report).collect();
    let heading = |c: &Column<R>| match c.side {
        Side::Left => format!("{:<w$}", c.head, w = c.width),
        Side::Right => format!("{:>w$}", c.head, w = c.width),
    };
    let mut out = join(shown.iter().map(|&c| (c, heading(c)))) + "\n";
    for r in rows {
        let cells = shown.iter().map(|&c| (c, c.pad(&(c.cell)(r))));
        out += &match failed(r) {
            Some(why) => format!("{} {why}\n", join(cells.filter(|(c, _)| c.key))),
            None => join(cells) + "\n",
        };
    }
    out
}

/// The report.md table: heading, alignment line and one line a row; a row
/// that `failed` gets its key cells, a dash in each measured cell and why in
/// the last.
pub fn markdown<'r, R: 'r>(columns: &[Column<R>], rows: impl IntoIterator<Item = &'r R>, failed: Failed<R>) -> String {
    let shown: Vec<&Column<R>> = columns.iter().filter(|c| c.shown != Shown::Console).collect();
    let line = |cells: Vec<String>| format!("| {} |\n", cells.join(" | "));
    let mut out = line(shown.iter().map(|c| c.report_head.to_string()).collect());
    let align = |c: &&Column<R>| match c.side {
        Side::Left => "---".to_string(),
        Side::Right => "---:".to_string(),
    };
    out += &line(shown.iter().map(align).collect());
    let last = shown.len().saturating_sub(1);
    for r in rows {
        let why = failed(r);
        let cell = |(i, c): (usize, &&Column<R>)| match &why {
            Some(why) if !c.key && i == last => why.clone(),
            Some(_) if !c.key => "–".to_string(),
            _ => c.marked_cell(&(c.cell)(r)),
        };
        out += &line(shown.iter().enumerate().map(cell).collect());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Row {
        name: &'static str,
        ms: f64,
        share: f64,
        error: Option<&'static str>,
    }

    fn columns() -> Vec<Column<Row>> {
        vec![
            Column::key("name", 6, |r: &Row| r.name.to_string()).marked(Mark::Code),
            Column::value("ms", 7, |r: &Row| num(r.ms, 3)).marked(Mark::Bold),
            Column::value("share", 6, |r: &Row| num(r.share, 1)).marked(Mark::Percent).only(Shown::Console),
            Column::value("count", 5, |r: &Row| num(r.ms * 10.0, 0)).reported_as("count per frame").after_gap(2),
        ]
    }

    fn failed(r: &Row) -> Option<String> {
        did_not_run(&r.error.map(String::from))
    }

    fn rows() -> Vec<Row> {
        vec![
            Row { name: "a", ms: 1.23456, share: 12.34, error: None },
            Row { name: "b", ms: 0.0, share: 0.0, error: Some("out of memory") },
        ]
    }

    #[test]
    fn console_pads_each_column_and_cuts_failed_rows_after_their_keys() {
        let want = concat!(
            "name        ms  share  count\n",
            "a        1.235  12.3%     12\n",
            "b      did not run: out of memory\n",
        );
        assert_eq!(console(&columns(), &rows(), failed), want);
    }

    #[test]
    fn markdown_marks_cells_and_dashes_failed_rows() {
        let want = concat!(
            "| name | ms | count per frame |\n",
            "| --- | ---: | ---: |\n",
            "| `a` | **1.235** | 12 |\n",
            "| `b` | – | did not run: out of memory |\n",
        );
        assert_eq!(markdown(&columns(), &rows(), failed), want);
    }
}
