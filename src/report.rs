//! What the workloads' outputs share, below trace and collide (and the bench
//! harness): CSV rows derived with serde, numbers printed to a fixed number
//! of digits, the opening lines of a bench report and per-stage means.

use std::fmt::Write;

/// A number written with a fixed count of decimals (`{:.digits$}`): the
/// format every CSV column of reap has always used, which serde's own f64
/// output (shortest round-trip) would change.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Fixed {
    pub value: f64,
    pub digits: usize,
}

pub fn fixed(value: f64, digits: usize) -> Fixed {
    Fixed { value, digits }
}

impl serde::Serialize for Fixed {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&format_args!("{:.*}", self.digits, self.value))
    }
}

/// Numbers joined by spaces in one CSV cell (`1 3 9`).
pub fn spaced(v: &[u64]) -> String {
    v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(" ")
}

/// `rows` as CSV, the header from the row type's field names. With no rows
/// the header is still written (from `R::default()`), so an interrupted run's
/// file says what its columns would have been.
pub fn csv_rows<R: serde::Serialize + Default>(rows: impl IntoIterator<Item = R>) -> Result<Vec<u8>, csv::Error> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut any = false;
    for r in rows {
        w.serialize(r)?;
        any = true;
    }
    if !any {
        w.serialize(R::default())?;
    }
    let mut bytes = w.into_inner().map_err(|e| e.into_error())?;
    if !any {
        // Keep the header line only.
        let end = bytes.iter().position(|&b| b == b'\n').map_or(bytes.len(), |i| i + 1);
        bytes.truncate(end);
    }
    Ok(bytes)
}

/// The files [`write_bench_files`] writes into a bench run's folder.
pub const BENCH_FILES: [&str; 3] = ["results.csv", "results.json", "report.md"];

/// Writes a bench run's files into `dir`, each whole or not at all:
/// results.csv (one line a row), results.json and report.md. Every bench
/// command (render, collide) leaves the same three behind.
pub fn write_bench_files<L: serde::Serialize + Default>(
    dir: &std::path::Path,
    lines: impl IntoIterator<Item = L>,
    json: &impl serde::Serialize,
    report: &str,
) -> Result<(), crate::files::OutputError> {
    use crate::files::{fail, write_atomically};
    let [csv_name, json_name, report_name] = BENCH_FILES;
    let csv_path = dir.join(csv_name);
    let bytes = csv_rows(lines).map_err(|e| fail(&csv_path, e))?;
    write_atomically(&csv_path, &bytes)?;
    let json_path = dir.join(json_name);
    let json = serde_json::to_vec_pretty(json).map_err(|e| fail(&json_path, e))?;
    write_atomically(&json_path, &json)?;
    write_atomically(&dir.join(report_name), report.as_bytes())
}

/// `rows` as CSV like [`csv_rows`], each row followed by cells of columns
/// known only at run time (one per stage name seen, say), named by `extra`.
pub fn csv_rows_then<R: serde::Serialize + Default>(
    rows: impl IntoIterator<Item = (R, Vec<String>)>,
    extra: &[String],
) -> Result<Vec<u8>, csv::Error> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header = record(&csv_rows(std::iter::empty::<R>())?)?;
    header.extend(extra);
    w.write_record(&header)?;
    for (row, cells) in rows {
        let mut one = csv::WriterBuilder::new().has_headers(false).from_writer(Vec::new());
        one.serialize(row)?;
        let mut line = record(&one.into_inner().map_err(|e| e.into_error())?)?;
        line.extend(&cells);
        w.write_record(&line)?;
    }
    w.into_inner().map_err(|e| e.into_error().into())
}

/// The first record of CSV text: a row the writer made, read back as cells.
fn record(bytes: &[u8]) -> Result<csv::StringRecord, csv::Error> {
    let mut r = csv::ReaderBuilder::new().has_headers(false).from_reader(bytes);
    Ok(r.records().next().transpose()?.unwrap_or_default())
}

/// Mean ms per stage name over `frames` (all bounces and levels summed), in
/// first-seen order; `frames` yields each frame's (stage name, ms) pairs.
pub fn stage_means<'a, F, I>(frames: F, n: f64) -> Vec<(String, f64)>
where
    F: IntoIterator<Item = I>,
    I: IntoIterator<Item = (&'a str, f64)>,
{
    let mut stage_ms: Vec<(String, f64)> = Vec::new();
    for f in frames {
        for (name, t) in f {
            match stage_ms.iter_mut().find(|(s, _)| s == name) {
                Some((_, v)) => *v += t / n,
                None => stage_ms.push((name.to_string(), t / n)),
            }
        }
    }
    stage_ms
}

/// The distinct values of `items` in first-seen order: a report's sections
/// (scenes, body counts) come in the order the run measured them.
pub fn first_seen<T: PartialEq>(items: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut seen = Vec::new();
    for t in items {
        if !seen.contains(&t) {
            seen.push(t);
        }
    }
    seen
}

/// The opening of a bench report.md: title, command and reap's commit.
pub fn report_head(what: &str, device: &str, command: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# reap bench {what}: {device}\n");
    let _ = writeln!(s, "Command: `{command}`\n");
    let _ = writeln!(s, "reap commit `{}`.\n", crate::build_info::GIT_COMMIT);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Serialize, Default)]
    struct Row {
        name: String,
        ms: Fixed,
        share: Option<Fixed>,
    }

    #[test]
    fn rows_keep_fixed_digits_and_empty_options() {
        let rows = [
            Row { name: "a, b".into(), ms: fixed(1.0 / 3.0, 6), share: Some(fixed(12.345, 2)) },
            Row { name: "c".into(), ms: fixed(2.0, 4), share: None },
        ];
        let text = String::from_utf8(csv_rows(rows).unwrap()).unwrap();
        assert_eq!(text, "name,ms,share\n\"a, b\",0.333333,12.35\nc,2.0000,\n");
    }

    #[test]
    fn no_rows_still_give_the_header() {
        let text = String::from_utf8(csv_rows(Vec::<Row>::new()).unwrap()).unwrap();
        assert_eq!(text, "name,ms,share\n");
    }

    #[test]
    fn run_time_columns_follow_the_row_types_own() {
        let rows = [
            (Row { name: "a, b".into(), ms: fixed(1.0, 2), share: None }, vec!["x y".to_string(), "1,2".into()]),
            (Row { name: "c".into(), ms: fixed(2.0, 1), share: Some(fixed(0.5, 1)) }, vec![String::new(), "3".into()]),
        ];
        let text = String::from_utf8(csv_rows_then(rows, &["s1".into(), "s2".into()]).unwrap()).unwrap();
        assert_eq!(text, "name,ms,share,s1,s2\n\"a, b\",1.00,,x y,\"1,2\"\nc,2.0,0.5,,3\n");
    }

    #[test]
    fn first_seen_keeps_the_first_of_each() {
        assert_eq!(first_seen([3, 1, 3, 2, 1]), vec![3, 1, 2]);
    }

    #[test]
    fn stage_means_sum_repeats_in_first_seen_order() {
        let frames = [vec![("b", 1.0), ("a", 2.0), ("b", 3.0)], vec![("a", 4.0)]];
        let m = stage_means(frames.iter().map(|f| f.iter().copied()), 2.0);
        assert_eq!(m, vec![("b".to_string(), 2.0), ("a".to_string(), 3.0)]);
    }
}
