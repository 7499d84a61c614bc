//! What the suite adds to the wgpu backend: its predicate as WGSL source and
//! buffers with a guard region, through the backend's public API only.

use crate::compaction::wgpu::runtime::WORD_BELOW;
use crate::compaction::wgpu::{WgpuBackend, WgpuBuffer, WgpuPredicate};
use crate::compaction::{Backend, Element, Error};
use crate::verify::Harness;

impl Harness for WgpuBackend {
    fn word_below<T: Element>(&self, threshold: u64) -> Box<WgpuPredicate> {
        Box::new(WgpuPredicate::new(WORD_BELOW, [threshold, 0]))
    }

    fn upload_guarded<T: Element>(&self, data: &[T], len: u64) -> Result<WgpuBuffer<T>, Error> {
        let mut buffer = self.upload(data)?;
        buffer.set_len(len)?;
        Ok(buffer)
    }

    fn download_guarded<T: Element>(&self, buffer: &WgpuBuffer<T>) -> Result<Vec<T>, Error> {
        self.download_to_capacity(buffer)
    }
}
