//! reap: GPU stream-compaction algorithms — every algorithm of the seed papers
//! plus the modern state of the art, each swappable at run time — and the
//! workloads that show them at work.
//!
//! The library lives in [`compaction`]; [`verify`] is the correctness suite
//! that the CLI's `reap verify` and the tests share. `gpu` (feature `cuda`) is
//! the CUDA layer under the library and the workloads.
//!
//! Features, all on by default: `cuda` (the CUDA backend), `viewer` (its
//! window), `cli` (the `reap` binary), `plot` ([`bench`]'s figures). A library
//! user takes `default-features = false, features = ["cuda"]`.
//! `docs/ARCHITECTURE.md` maps the layers, the data flow and where to add things.

pub mod bench;
pub mod build_info;
pub mod bvh;
pub mod clocks;
pub mod cluster;
pub mod collide;
pub mod compaction;
#[cfg(feature = "cuda")]
pub mod cuda_runtime;
pub mod files;
pub mod frontier;
pub mod input;
pub mod memory;
pub mod replay;
pub mod report;
pub mod scene;
pub mod table;
pub mod trace;
pub mod verify;
pub mod viewer;
#[cfg(feature = "wgpu")]
pub mod wgpu_runtime;
