//! Element counts on the command line, one parser for every command that
//! takes `--sizes` (verify and the compaction benchmark), so a count that one
//! accepts the other accepts too.

/// A count written plainly (`1048576`, `1_048_576`) or as a power of two (`2^20`).
pub fn parse_count(s: &str) -> Result<u64, String> {
    let s = s.trim();
    if let Some(exp) = s.strip_prefix("2^") {
        let e: u32 = exp.parse().map_err(|_| format!("`{s}`: expected 2^K"))?;
        1u64.checked_shl(e).filter(|_| e < 64).ok_or_else(|| format!("`{s}` is too large"))
    } else {
        s.replace('_', "").parse().map_err(|_| format!("`{s}`: expected a count such as 1048576 or 2^20"))
    }
}

/// Refuses, before anything runs, element counts whose input the wgpu
/// adapter cannot bind (lavapipe binds 128 MiB): `verify` and `bench
/// compaction` say it once rather than fail or stop at the first such size.
#[cfg(feature = "wgpu")]
pub fn check_wgpu(
    backend: &reap::compaction::wgpu::WgpuBackend,
    sizes: &[u64],
    element_sizes: &[usize],
) -> anyhow::Result<()> {
    use anyhow::Context;
    for &n in sizes {
        for &es in element_sizes {
            backend
                .check_elements(n, es)
                .with_context(|| format!("--sizes {n} with {es}-byte elements is too large for this adapter"))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::parse_count;

    #[test]
    fn item10_powers_of_two_and_plain_counts_parse_alike() {
        assert_eq!(parse_count("2^20"), Ok(1 << 20));
        assert_eq!(parse_count("1_048_576"), Ok(1 << 20));
        assert_eq!(parse_count("0"), Ok(0));
        assert!(parse_count("2^64").is_err());
        assert!(parse_count("lots").is_err());
    }
}
