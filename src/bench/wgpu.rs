//! The wgpu side of the harness: the copy roofline (a buffer-to-buffer
//! copy), restores, seed 004's competitor marking
//! (shaders/bench/mark_removed.wgsl) and what results.json says of the
//! adapter, including which clock timed it.

use std::time::Duration;

use crate::bench::{Platform, Timed};
use crate::compaction::wgpu::runtime::{COMMON, NO_WORD, Params};
use crate::compaction::wgpu::{Bind, Plan, WgpuBackend, WgpuBuffer, groups_for};
use crate::compaction::{Element, Error, KeepMode, Result};
use crate::wgpu_runtime::timer::Clock;
use crate::wgpu_runtime::{Shader, wgsl_source};

/// The benchmark's marking phase for Redzone's competitors (seed 004 §5),
/// specialised by element size like the library's shaders.
pub const MARK_REMOVED: Shader = wgsl_source!("bench/mark_removed.wgsl", headers: &[COMMON]);

/// A compute-shader copy, the second roofline.
pub const COPY: Shader = wgsl_source!("bench/copy.wgsl", headers: &[COMMON]);

/// The harness's shader sources, for the validate-everything test.
pub const SOURCES: &[Shader] = &[MARK_REMOVED, COPY, crate::bench::hop::SHADER];

/// Bytes the shader copy moves for the report's line (past every cache).
const SHADER_COPY_BYTES: u64 = 512 << 20;

/// Invocations per workgroup of `mark_removed` (its `@workgroup_size`).
const MARK_WG: u32 = 256;

/// wgpu does not report the last-level cache: this covers the largest
/// (H100's 50 MiB L2, the 96 MB Infinity Cache of an RX 7900 XTX), so
/// rotated inputs are read from memory.
const CACHE_BYTES: u64 = 128 << 20;

/// Which clocks time the stages and the copy on this adapter: timestamp
/// queries where it has them (the copy needs them inside encoders), else the
/// host clock around submit and wait.
pub fn clock(b: &WgpuBackend) -> String {
    let dev = b.device();
    let stages = if dev.timestamps { Clock::Timestamps } else { Clock::Host };
    let copy = match dev.device.features().contains(::wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS) {
        true => Clock::Timestamps,
        false => Clock::Host,
    };
    match stages == copy {
        true => stages.name().to_string(),
        false => format!("{} (the copy: {})", stages.name(), copy.name()),
    }
}

/// Median time of a compute-shader copy of `bytes` bytes (`word`-byte
/// loads and stores, one an invocation: 4 or 16), after a warm-up.
pub fn shader_copy_time(b: &WgpuBackend, bytes: u64, word: u64, reps: usize) -> Result<Duration> {
    let words = (bytes / word) as u32;
    let (src, dst) = (b.raw_buffer("the copy's source", bytes)?, b.raw_buffer("the copy's target", bytes)?);
    let v = b.variant(word as usize, KeepMode::Flags, None);
    let p = b.pipeline(&COPY, &v, "shader_copy", &[("WG", 256)])?;
    let params = Params { cap: words, len_word: NO_WORD, ..Default::default() };
    let bind = Bind { src: Some(src), dst: Some(dst), ..Default::default() };
    let mut times = Vec::with_capacity(reps);
    for rep in 0..=reps {
        let mut plan = Plan::default();
        plan.stage("shader copy").dispatch(p.clone(), params, bind.clone(), groups_for(words, 256));
        let t = b.run(plan)?.span()?;
        if rep > 0 {
            times.push(t);
        }
    }
    times.sort();
    Ok(times[times.len() / 2])
}

/// The copy rates of this adapter, for the report: the buffer-to-buffer copy
/// and compute-shader copies; the faster of the first two is the roofline of "% copy".
pub fn copy_rates(b: &WgpuBackend) -> Option<String> {
    let rate = |t: Duration| 2.0 * SHADER_COPY_BYTES as f64 / t.as_secs_f64() / 1e9;
    let buffer = b.time_copy(SHADER_COPY_BYTES, 5).ok()?;
    let shader = shader_copy_time(b, SHADER_COPY_BYTES, 16, 5).ok()?;
    let scalar = shader_copy_time(b, SHADER_COPY_BYTES, 4, 5).ok()?;
    Some(format!(
        "{} MiB read + written: buffer-to-buffer copy {:.0} GB/s; compute-shader copy {:.0} GB/s with 16-byte \
         loads, {:.0} GB/s with 4-byte loads (% copy is against the faster of the first two)",
        SHADER_COPY_BYTES >> 20,
        rate(buffer),
        rate(shader),
        rate(scalar)
    ))
}

/// How the shaders' workgroup scans run on this adapter.
pub fn workgroup_scans(b: &WgpuBackend) -> String {
    let (lo, hi) = b.device().subgroup_sizes;
    match b.subgroups {
        true if lo == hi => format!("subgroup operations ({lo} wide)"),
        true => format!("subgroup operations ({lo}-{hi} wide)"),
        false => "workgroup memory".to_string(),
    }
}

/// The fastest copy of `bytes` bytes this adapter has: the buffer-to-buffer
/// copy or a compute-shader copy with 16-byte loads, whichever is faster (on
/// NVIDIA's Vulkan driver the buffer copy runs at 0.2x the shader's).
pub fn fastest_copy_time(b: &WgpuBackend, bytes: u64, reps: usize) -> Result<Duration> {
    let buffer = b.time_copy(bytes, reps)?;
    // The shader copies whole 16-byte words, one an invocation, fewer than 2^32 of them.
    if bytes < 16 || bytes % 16 != 0 || bytes / 16 > u32::MAX as u64 {
        return Ok(buffer);
    }
    Ok(buffer.min(shader_copy_time(b, bytes, 16, reps)?))
}

impl Timed for WgpuBackend {
    fn copy_time(&self, bytes: u64, reps: usize) -> Result<Duration> {
        fastest_copy_time(self, bytes, reps)
    }
    fn cache_bytes(&self) -> u64 {
        CACHE_BYTES
    }
    fn device_name(&self) -> String {
        self.name().to_string()
    }
    fn platform(&self) -> Platform {
        let info = &self.device().info;
        let driver = format!("{} {}", info.driver, info.driver_info).trim().to_string();
        Platform {
            backend: "wgpu".into(),
            device: self.device_name(),
            driver: (!driver.is_empty()).then_some(driver),
            l2_bytes: CACHE_BYTES,
            clock: Some(clock(self)),
            workgroup_scans: Some(workgroup_scans(self)),
            copy_rates: copy_rates(self),
            ..Platform::default()
        }
    }
    fn restore<T: Element>(&self, src: &WgpuBuffer<T>, dst: &mut WgpuBuffer<T>) -> Result<()> {
        if src.len() != dst.len() {
            return Err(Error::LengthMismatch { what: "restored buffer", expected: src.len(), actual: dst.len() });
        }
        let mut plan = Plan::default();
        plan.stage("restore").copy(src.raw(), 0, dst.raw(), 0, src.len() * std::mem::size_of::<T>() as u64);
        self.run(plan).map(drop)
    }
    fn mark_removed<T: Element>(&self, data: &mut WgpuBuffer<T>, removal: &WgpuBuffer<u64>) -> Result<Duration> {
        let k = removal.len();
        if k == 0 {
            return Ok(Duration::ZERO);
        }
        let v = self.variant(std::mem::size_of::<T>(), KeepMode::Sentinel, None);
        let p = self.pipeline(&MARK_REMOVED, &v, "mark_removed", &[])?;
        // `cap` is the list's length; the sentinel is every byte 0xFF, as in `bench::sentinel`.
        let params = Params { cap: k as u32, len_word: NO_WORD, sentinel: [u32::MAX; 8], ..Default::default() };
        let bind = Bind { dst: Some(data.raw().clone()), state: Some(removal.raw().clone()), ..Default::default() };
        let mut plan = Plan::default();
        plan.stage("mark").dispatch(p, params, bind, groups_for(k as u32, MARK_WG));
        Ok(self.run(plan)?.span()?)
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;
    use crate::compaction::wgpu::AdapterChoice;
    use crate::compaction::{Backend, ELEMENT_SIZES};

    /// Every variant of the harness's shaders passes naga, with no adapter.
    #[test]
    fn mark_removed_validates_for_every_element_size() {
        for es in ELEMENT_SIZES {
            for subgroups in [false, true] {
                let v = crate::compaction::wgpu::runtime::Variant::new(es, KeepMode::Sentinel, None, subgroups);
                for s in SOURCES {
                    let text = s.assemble(v.prelude());
                    crate::wgpu_runtime::pipelines::validate(s.name, &text, subgroups).unwrap();
                }
            }
        }
    }

    /// The marking writes the sentinel over the listed elements and nothing
    /// else; a restore brings the input back (skips without an adapter).
    #[test]
    fn mark_removed_marks_the_listed_elements_and_restore_undoes_it() {
        let b = match WgpuBackend::new(&AdapterChoice::Best) {
            Ok(b) => b,
            Err(e) => {
                if std::env::var("REAP_REQUIRE_WGPU").is_ok_and(|v| v == "1") {
                    panic!("REAP_REQUIRE_WGPU=1 but: {e}");
                }
                // Past the harness's capture, so the skip shows in CI's log.
                let _ = writeln!(std::io::stderr(), "SKIPPED (no usable wgpu adapter): {e}");
                return;
            }
        };
        let host: Vec<[u32; 4]> = (0..1000u32).map(|i| [i, i + 1, i + 2, i + 3]).collect();
        let list: Vec<u64> = vec![0, 7, 999, 500];
        let pristine = b.upload(&host).unwrap();
        let mut data = b.upload(&host).unwrap();
        b.mark_removed(&mut data, &b.upload(&list).unwrap()).unwrap();
        let got = b.download(&data).unwrap();
        for (i, x) in got.iter().enumerate() {
            let want = if list.contains(&(i as u64)) { [u32::MAX; 4] } else { host[i] };
            assert_eq!(*x, want, "element {i}");
        }
        b.restore(&pristine, &mut data).unwrap();
        assert_eq!(b.download(&data).unwrap(), host);
    }
}
