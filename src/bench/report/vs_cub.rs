//! One table of reap / CUB per operation (select, partition, scan), element
//! size, algorithm and n, so the partition and scan ratios read beside
//! select's without searching the measurements.

use std::fmt::Write as _;

use super::*;

/// The operations whose CUB counterpart is the same primitive on the same input.
const OPERATIONS: [RowOperation; 4] =
    [RowOperation::Select, RowOperation::Partition, RowOperation::PartitionReversed, RowOperation::Scan];

/// (operation, bytes per element, algorithm, n): one line of the table.
type Key = (RowOperation, usize, RowAlgorithm, u64);

pub(super) fn table(s: &mut String, rows: &[Row], primary: Option<BenchBackend>) {
    // Every ratio per key, keys in first-seen order.
    let mut groups: Vec<(Key, Vec<f64>)> = Vec::new();
    for r in rows.iter().filter(|r| is_primary(r, primary) && OPERATIONS.contains(&r.operation)) {
        let Some(x) = r.vs_cub else { continue };
        let key = (r.operation, r.element_bytes, r.algorithm, r.n);
        match groups.iter_mut().find(|g| g.0 == key) {
            Some(g) => g.1.push(x),
            None => groups.push((key, vec![x])),
        }
    }
    if groups.is_empty() {
        return;
    }
    groups.sort_by_key(|g| (OPERATIONS.iter().position(|o| *o == g.0.0), g.0.1, g.0.2.name(), g.0.3));
    let _ = writeln!(s, "## reap / CUB by operation\n");
    header(s, &["operation", "bytes/elem", "algorithm", "n", "CUB primitive", "reap / CUB (min – max over densities)"]);
    for ((op, es, alg, n), xs) in &groups {
        let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let peer = crate::bench::cub::counterparts(*op).first().map_or("–", |p| p.algorithm_name());
        let range = if close(lo, hi) { format!("{lo:.2}") } else { format!("{lo:.2} – {hi:.2}") };
        line(s, &[op.name().into(), es.to_string(), alg.name().into(), size(*n), format!("`{peer}`"), range]);
    }
    let _ = writeln!(
        s,
        "\nreap's median time over CUB's on the same configuration in the same run: below 1 is reap faster. \
         select and partition run `DeviceSelect::If` / `DevicePartition::If` with the same keep rule on the same \
         elements; scan runs `DeviceScan::ExclusiveSum` on the same u32 or u64 values. `DevicePartition::If` \
         leaves the rejected half reversed: `partition-reversed` is reap under that contract, like with like; \
         `partition` keeps both halves in input order, which costs reap a counting pass.\n"
    );
}
