//! NCCL's loader on a machine without NCCL (CI's): a file given as NCCL that
//! is not one is refused by name, with how to install NCCL. Its own test
//! binary: the loader reads REAP_NCCL once per process.
#![cfg(feature = "cuda")]

#[test]
fn a_file_that_is_not_nccl_is_refused_by_name() {
    let fake = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    // SAFETY: the only test in this binary, before anything reads the environment.
    unsafe { std::env::set_var("REAP_NCCL", fake) };
    match reap::cuda_runtime::nccl_available() {
        // A system NCCL on the loader's path is found before REAP_NCCL.
        Ok(version) => eprintln!("NOTE: NCCL is installed here ({version}); the refusal is not exercised"),
        Err(e) => {
            let msg = e.to_string();
            assert!(msg.contains("Cargo.toml") && msg.contains("did not load"), "{msg}");
            assert!(msg.contains("nvidia-nccl-cu13"), "{msg}");
        }
    }
}
