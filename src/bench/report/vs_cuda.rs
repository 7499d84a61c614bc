//! wgpu beside CUDA: every configuration both backends timed in one run (a
//! wgpu run on an NVIDIA GPU), each with its share of its own copy rate and
//! CUB's time, and the throughput ratios; then the two copies' rates.

use std::fmt::Write as _;

use super::*;

/// Whether two rows measured the same configuration.
fn same_point(a: &Row, b: &Row) -> bool {
    a.algorithm == b.algorithm
        && a.operation == b.operation
        && a.element_bytes == b.element_bytes
        && a.n == b.n
        && close(a.density, b.density)
}

/// `x`: how many times `y`'s rate (`y_ms / x_ms` for the same bytes).
fn rate_ratio(x_ms: f64, y_ms: f64) -> String {
    if x_ms > 0.0 { format!("{:.2}x", y_ms / x_ms) } else { "–".into() }
}

/// The copy's rate in GB/s: `n` elements of `es` bytes read and written.
fn copy_gbs(r: &Row) -> f64 {
    (2 * r.n * r.element_bytes as u64) as f64 / (r.copy_ms * 1e6)
}

pub(super) fn table(s: &mut String, rows: &[Row]) {
    let of = |b: BenchBackend| rows.iter().filter(move |r| r.backend == b);
    let pairs: Vec<(&Row, &Row)> = of(BenchBackend::Wgpu)
        .filter_map(|w| of(BenchBackend::Cuda).find(|c| same_point(w, c)).map(|c| (w, c)))
        .collect();
    if pairs.is_empty() {
        return;
    }
    let _ = writeln!(s, "## wgpu vs CUDA\n");
    header(
        s,
        &[
            "operation",
            "bytes/elem",
            "algorithm",
            "n",
            "density",
            "wgpu ms",
            "wgpu % copy",
            "CUDA ms",
            "CUDA % copy",
            "CUB ms",
            "wgpu rate / CUDA",
            "wgpu rate / CUB",
        ],
    );
    for (w, c) in &pairs {
        let cub = w.cub_ms.or(c.cub_ms);
        line(
            s,
            &[
                w.operation.name().into(),
                w.element_bytes.to_string(),
                w.algorithm.name().into(),
                size(w.n),
                pct(w.density),
                msf(w.median_ms),
                format!("{:.1}", w.pct_of_copy),
                msf(c.median_ms),
                format!("{:.1}", c.pct_of_copy),
                opt(cub, msf),
                rate_ratio(w.median_ms, c.median_ms),
                cub.map_or("–".into(), |cub| rate_ratio(w.median_ms, cub)),
            ],
        );
    }
    let _ = writeln!(
        s,
        "\nThe same configurations on the same GPU in the same run, wgpu first. Each \"% copy\" is a share of that \
         backend's own device-to-device copy (below). \"wgpu rate / CUDA\" is wgpu's throughput as a multiple of \
         the CUDA backend's (its time over wgpu's): above 1 is wgpu faster; likewise against CUB.\n"
    );
    copies(s, &pairs);
}

/// The two copies' rates at each (element size, n) the table holds.
fn copies(s: &mut String, pairs: &[(&Row, &Row)]) {
    let mut seen: Vec<(usize, u64)> = Vec::new();
    header(s, &["bytes/elem", "n", "wgpu copy GB/s", "CUDA copy GB/s", "wgpu / CUDA"]);
    for (w, c) in pairs {
        if seen.contains(&(w.element_bytes, w.n)) || w.copy_ms <= 0.0 || c.copy_ms <= 0.0 {
            continue;
        }
        seen.push((w.element_bytes, w.n));
        let (gw, gc) = (copy_gbs(w), copy_gbs(c));
        line(
            s,
            &[
                w.element_bytes.to_string(),
                size(w.n),
                format!("{gw:.1}"),
                format!("{gc:.1}"),
                format!("{:.2}x", gw / gc),
            ],
        );
    }
    let _ = writeln!(
        s,
        "\nwgpu's copy is a buffer-to-buffer copy in one command encoder; CUDA's a device-to-device memcpy. Both \
         count each byte read once and written once.\n"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(backend: BenchBackend, median_ms: f64, copy_ms: f64) -> Row {
        Row {
            preset: String::new(),
            backend,
            device: "GPU".into(),
            algorithm: RowAlgorithm::Catalog(Algorithm::Lookback),
            operation: RowOperation::Select,
            element_bytes: 4,
            n: 1 << 20,
            density: 0.5,
            kept: 1 << 19,
            median_ms,
            min_ms: median_ms,
            max_ms: median_ms,
            phases: Vec::new(),
            bytes: 6 << 20,
            copy_ms,
            pct_of_copy: 50.0,
            cub_ms: Some(0.1),
            vs_cub: None,
        }
    }

    #[test]
    fn wgpu_and_cuda_rows_of_one_configuration_read_side_by_side() {
        let rows = [row(BenchBackend::Wgpu, 0.2, 0.04), row(BenchBackend::Cuda, 0.1, 0.02)];
        let mut s = String::new();
        table(&mut s, &rows);
        // wgpu at half CUDA's rate and half CUB's; its copy at half CUDA's (8 MiB in 0.04 ms).
        assert!(
            s.contains(
                "| select | 4 | lookback | 1M | 50 % | 0.2000 | 50.0 | 0.1000 | 50.0 | 0.1000 | 0.50x | 0.50x |"
            ),
            "{s}"
        );
        assert!(s.contains("| 4 | 1M | 209.7 | 419.4 | 0.50x |"), "{s}");
        let mut none = String::new();
        table(&mut none, &rows[..1]);
        assert!(none.is_empty(), "no CUDA row, no section: {none}");
    }
}
