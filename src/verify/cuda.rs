//! What the suite adds to the CUDA backend: its predicate as CUDA source and
//! buffers with a guard region, through the backend's public API only.

use crate::compaction::cuda::{CudaBackend, CudaBuffer, CudaPredicate, WORD_BELOW};
use crate::compaction::{Backend, Element, Error};
use crate::verify::Harness;

impl Harness for CudaBackend {
    fn word_below<T: Element>(&self, threshold: u64) -> Box<CudaPredicate> {
        Box::new(CudaPredicate::new(WORD_BELOW, [threshold, 0]))
    }

    fn upload_guarded<T: Element>(&self, data: &[T], len: u64) -> Result<CudaBuffer<T>, Error> {
        let mut buffer = self.upload(data)?;
        buffer.set_len(len)?;
        Ok(buffer)
    }

    fn download_guarded<T: Element>(&self, buffer: &CudaBuffer<T>) -> Result<Vec<T>, Error> {
        self.download_to_capacity(buffer)
    }
}
