//! Writing a run's files: every file goes to a temporary name beside its
//! target and is renamed into place, so an interrupted run never leaves a
//! half-written file.

use std::path::Path;

use crate::bench::{BenchError, BenchResult, Named, Platform, Row, Settings, cub::PeerStatus};
use crate::input::{self, InputError, InputKind};
use crate::report::{Fixed, csv_rows, fixed};

// The one atomic writer and the build information, re-exported for the
// binary's bench command, which names them through here.
pub use crate::build_info::GIT_COMMIT;
pub use crate::files::write_atomically;

/// Everything results.json holds.
#[derive(serde::Serialize)]
pub struct Results<'a> {
    pub reap_version: &'static str,
    pub reap_commit: &'static str,
    /// Seconds since the Unix epoch when the run ended.
    pub finished_unix_s: u64,
    /// False when the run was stopped (Ctrl-C) before every row was measured.
    pub complete: bool,
    /// The command line that measured this run.
    pub command: &'a str,
    pub platform: &'a Platform,
    /// Backends timed in the same run on the same configurations beside
    /// `platform`'s (the CUDA backend beside wgpu on an NVIDIA GPU).
    pub beside: &'a [Platform],
    pub cub_peer: &'a PeerStatus,
    pub presets: &'a [String],
    pub settings: &'a [Settings],
    pub rows: &'a [Row],
}

pub fn now_unix_s() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

pub fn results_json(r: &Results<'_>) -> BenchResult<String> {
    Ok(serde_json::to_string_pretty(r)?)
}

/// What `reap bench report` reads back from a results.json to draw the
/// report and plots again (after a report-writer fix, say) without measuring.
#[derive(serde::Deserialize)]
pub struct Stored {
    pub complete: bool,
    #[serde(default)]
    pub command: Option<String>,
    pub platform: Platform,
    #[serde(default)]
    pub beside: Vec<Platform>,
    pub cub_peer: PeerStatus,
    pub presets: Vec<String>,
    pub rows: Vec<Row>,
}

/// An `f64` that a JSON file may hold as `null` (serde_json writes NaN and
/// infinities so): read back as NaN (the report prints `NaN`).
pub fn nan_if_null<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(<Option<f64> as serde::Deserialize>::deserialize(d)?.unwrap_or(f64::NAN))
}

pub fn read_results(dir: &Path) -> BenchResult<Stored> {
    let path = dir.join("results.json");
    let bytes = input::read(&path, InputKind::Json).map_err(|e| match e {
        InputError::Io { source, .. } => BenchError::Read { path: path.display().to_string(), source },
        refused => BenchError::Input(refused),
    })?;
    serde_json::from_slice(&bytes)
        .map_err(|e| BenchError::Parse { path: path.display().to_string(), why: e.to_string() })
}

/// One line of results.csv: a [`Row`] with its numbers at fixed digits and
/// its phases as `name=ms` pairs in one column.
#[derive(Default, serde::Serialize)]
struct CsvRow<'a> {
    preset: &'a str,
    backend: &'a str,
    device: &'a str,
    algorithm: &'a str,
    operation: &'a str,
    element_bytes: usize,
    n: u64,
    /// Rust's shortest form (`1`, `0.5`), as the column always had.
    density: String,
    kept: u64,
    median_ms: Fixed,
    min_ms: Fixed,
    max_ms: Fixed,
    bytes: u64,
    copy_ms: Fixed,
    pct_of_copy: Fixed,
    cub_ms: Option<Fixed>,
    vs_cub: Option<Fixed>,
    phases: String,
}

impl<'a> CsvRow<'a> {
    fn of(r: &'a Row) -> Self {
        CsvRow {
            preset: &r.preset,
            backend: r.backend.name(),
            device: &r.device,
            algorithm: r.algorithm.name(),
            operation: r.operation.name(),
            element_bytes: r.element_bytes,
            n: r.n,
            density: r.density.to_string(),
            kept: r.kept,
            median_ms: fixed(r.median_ms, 6),
            min_ms: fixed(r.min_ms, 6),
            max_ms: fixed(r.max_ms, 6),
            bytes: r.bytes,
            copy_ms: fixed(r.copy_ms, 6),
            pct_of_copy: fixed(r.pct_of_copy, 2),
            cub_ms: r.cub_ms.map(|v| fixed(v, 6)),
            vs_cub: r.vs_cub.map(|v| fixed(v, 3)),
            phases: r.phases.iter().map(|(n, t)| format!("{n}={t:.6}")).collect::<Vec<_>>().join(";"),
        }
    }
}

/// The rows as CSV (phases as `name=ms` pairs in one column).
pub fn csv(rows: &[Row]) -> std::result::Result<String, csv::Error> {
    let bytes = csv_rows(rows.iter().map(CsvRow::of))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::{BenchBackend, RowAlgorithm, RowOperation};
    use crate::compaction::Algorithm;

    fn rows() -> Vec<Row> {
        let row = Row {
            preset: "billeter".into(),
            backend: BenchBackend::Cuda,
            device: "NVIDIA H100, 80 GB".into(),
            algorithm: RowAlgorithm::Catalog(Algorithm::Lookback),
            operation: RowOperation::Select,
            element_bytes: 4,
            n: 1 << 20,
            density: 0.5,
            kept: 524_288,
            median_ms: 0.123_456_78,
            min_ms: 0.1,
            max_ms: 1.0 / 3.0,
            phases: vec![("count".into(), 0.05), ("scatter".into(), 2.0 / 3.0)],
            bytes: 6 << 20,
            copy_ms: 0.2,
            pct_of_copy: 87.654,
            cub_ms: Some(0.111),
            vs_cub: Some(1.11222),
        };
        let plain = Row {
            preset: String::new(),
            backend: BenchBackend::Cpu,
            algorithm: RowAlgorithm::Catalog(Algorithm::Horn),
            operation: RowOperation::SortKeys,
            density: 1.0,
            phases: vec![],
            cub_ms: None,
            vs_cub: None,
            ..row.clone()
        };
        vec![row, plain]
    }

    /// A size-0 row written before size 0 was refused holds `"pct_of_copy": null` (0/0): it must read back.
    #[test]
    fn item5_a_null_share_of_copy_reads_back_as_nan() {
        let row = Row { n: 0, kept: 0, bytes: 0, pct_of_copy: f64::NAN, ..rows()[0].clone() };
        let json = serde_json::to_string(&row).unwrap();
        assert!(json.contains("\"pct_of_copy\":null"), "{json}");
        let back: Row = serde_json::from_str(&json).expect("an old file with null reads");
        assert!(back.pct_of_copy.is_nan());
        assert_eq!(
            serde_json::from_str::<Row>(&serde_json::to_string(&rows()[0]).unwrap()).unwrap().pct_of_copy,
            87.654
        );
    }

    /// The header, column order and number formats of results.csv, pinned.
    #[test]
    fn csv_keeps_its_columns_and_formats() {
        let want = concat!(
            "preset,backend,device,algorithm,operation,element_bytes,n,density,kept,median_ms,min_ms,max_ms,bytes,copy_ms,pct_of_copy,cub_ms,vs_cub,phases\n",
            "billeter,cuda,\"NVIDIA H100, 80 GB\",lookback,select,4,1048576,0.5,524288,0.123457,0.100000,0.333333,6291456,0.200000,87.65,0.111000,1.112,count=0.050000;scatter=0.666667\n",
            ",cpu,\"NVIDIA H100, 80 GB\",horn,sort-keys,4,1048576,1,524288,0.123457,0.100000,0.333333,6291456,0.200000,87.65,,,\n",
        );
        assert_eq!(csv(&rows()).unwrap(), want);
    }
}

/// results.json and results.csv as reap wrote them before the row's columns
/// were typed: a reap row, a seed-004 row and the CUB peer's rows.
#[cfg(test)]
mod stored {
    use crate::bench::Row;

    const ROWS: &str = concat!(
        r#"[{"preset":"004-fig4","backend":"cuda","device":"d","algorithm":"lookback","operation":"mark+select","#,
        r#""element_bytes":4,"n":1024,"density":0.25,"kept":768,"median_ms":0.5,"min_ms":0.25,"max_ms":1.0,"#,
        r#""phases":[["mark",0.125]],"bytes":7168,"copy_ms":0.0625,"pct_of_copy":12.5,"cub_ms":0.75,"vs_cub":0.5},"#,
        r#"{"preset":"","backend":"cub","device":"d","algorithm":"cub-select-if","operation":"select_if","#,
        r#""element_bytes":4,"n":1024,"density":0.75,"kept":768,"median_ms":0.625,"min_ms":0.5,"max_ms":1.0,"#,
        r#""phases":[],"bytes":7168,"copy_ms":0.0625,"pct_of_copy":50.0,"cub_ms":0.625,"vs_cub":1.0},"#,
        r#"{"preset":"","backend":"cub","device":"d","algorithm":"cub-scan","operation":"scan","#,
        r#""element_bytes":4,"n":1024,"density":1.0,"kept":1024,"median_ms":0.25,"min_ms":0.25,"max_ms":0.25,"#,
        r#""phases":[],"bytes":8192,"copy_ms":0.0625,"pct_of_copy":25.0,"cub_ms":0.25,"vs_cub":1.0}]"#,
    );

    #[test]
    fn rows_of_an_earlier_results_json_read_back_and_write_the_same_bytes() {
        let rows: Vec<Row> = serde_json::from_str(ROWS).unwrap();
        assert_eq!(serde_json::to_string(&rows).unwrap(), ROWS);
        let want = concat!(
            "preset,backend,device,algorithm,operation,element_bytes,n,density,kept,median_ms,min_ms,max_ms,bytes,copy_ms,pct_of_copy,cub_ms,vs_cub,phases\n",
            "004-fig4,cuda,d,lookback,mark+select,4,1024,0.25,768,0.500000,0.250000,1.000000,7168,0.062500,12.50,0.750000,0.500,mark=0.125000\n",
            ",cub,d,cub-select-if,select_if,4,1024,0.75,768,0.625000,0.500000,1.000000,7168,0.062500,50.00,0.625000,1.000,\n",
            ",cub,d,cub-scan,scan,4,1024,1,1024,0.250000,0.250000,0.250000,8192,0.062500,25.00,0.250000,1.000,\n",
        );
        assert_eq!(super::csv(&rows).unwrap(), want);
    }

    #[test]
    fn an_unknown_name_in_results_json_is_an_error_that_quotes_it() {
        for (from, to, quoted) in [
            (r#""operation":"select_if""#, r#""operation":"select_maybe""#, "unknown operation `select_maybe`"),
            (r#""algorithm":"lookback""#, r#""algorithm":"lookforward""#, "unknown algorithm `lookforward`"),
            (r#""backend":"cuda""#, r#""backend":"opencl""#, "unknown backend `opencl`"),
        ] {
            let e = serde_json::from_str::<Vec<Row>>(&ROWS.replacen(from, to, 1)).unwrap_err().to_string();
            assert!(e.contains(quoted), "{e}");
        }
    }
}

#[cfg(test)]
mod empty {
    #[test]
    fn no_rows_give_the_header_alone() {
        let text = super::csv(&[]).unwrap();
        assert!(text.starts_with("preset,backend,device,algorithm") && text.ends_with("phases\n"), "{text}");
        assert_eq!(text.lines().count(), 1);
    }
}
