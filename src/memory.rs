//! The one place that sizes memory: how much a request needs, how much the
//! machine can give (host: available memory; device: the caller reads the
//! device's free memory), and fallible allocation of the big buffers.
//!
//! Why: a size from the command line (pixels, element counts, frontier
//! slots) must be refused with an error naming the size, the limit and the
//! flag to change *before* anything is allocated; Rust's infallible `vec!`
//! aborts the process instead, and on Linux an overcommitted allocation is
//! only killed later, while it is being filled.

use std::fmt;

/// Fraction of the available host memory a request may take: the rest is
/// left to the system and to reap's own smaller buffers.
const HOST_SHARE: f64 = 0.9;

/// The host limit where /proc/meminfo cannot be read (not Linux).
const HOST_FALLBACK_BYTES: u64 = 16 << 30;

/// Where a request's memory lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    Host,
    Device,
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Place::Host => "host",
            Place::Device => "GPU",
        })
    }
}

/// How much memory a request may take, and where that number comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limit {
    pub bytes: u64,
    pub place: Place,
    /// Said after the number in an error ("available (MemAvailable, less 10%)").
    pub source: &'static str,
}

impl Limit {
    /// The host's available memory, less a margin (Linux: MemAvailable from
    /// /proc/meminfo; elsewhere a fixed 16 GiB).
    /// Under an address-space limit (`ulimit -v`), what is left below it
    /// bounds this too: an allocation past it fails, whatever is free.
    pub fn host() -> Limit {
        let meminfo = std::fs::read_to_string("/proc/meminfo").ok();
        let available = match meminfo.as_deref().and_then(mem_available) {
            Some(bytes) => Limit {
                bytes: (bytes as f64 * HOST_SHARE) as u64,
                place: Place::Host,
                source: "available (MemAvailable less 10%)",
            },
            None => Limit { bytes: HOST_FALLBACK_BYTES, place: Place::Host, source: "allowed (fixed cap)" },
        };
        let limits = std::fs::read_to_string("/proc/self/limits").ok();
        let status = std::fs::read_to_string("/proc/self/status").ok();
        let left = limits.as_deref().and_then(address_space_limit).zip(status.as_deref().and_then(address_space_used));
        match left {
            Some((limit, used)) => {
                let bytes = (limit.saturating_sub(used) as f64 * HOST_SHARE) as u64;
                let source = "left under the address-space limit (ulimit -v) less 10%";
                let capped = Limit { bytes, place: Place::Host, source };
                if bytes < available.bytes { capped } else { available }
            }
            None => available,
        }
    }

    /// A device with `free` bytes free (cudarc's `mem_get_info`).
    pub fn device(free: u64) -> Limit {
        Limit { bytes: free, place: Place::Device, source: "free on the device" }
    }
}

/// MemAvailable of /proc/meminfo's text, in bytes.
pub fn mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let mut words = line.split_whitespace().skip(1);
    let value: u64 = words.next()?.parse().ok()?;
    let scale = match words.next() {
        Some("kB") => 1024,
        None => 1,
        Some(_) => return None,
    };
    value.checked_mul(scale)
}

/// The soft "Max address space" of /proc/self/limits' text, in bytes;
/// `None` when unlimited.
pub fn address_space_limit(limits: &str) -> Option<u64> {
    let line = limits.lines().find(|l| l.starts_with("Max address space"))?;
    line["Max address space".len()..].split_whitespace().next()?.parse().ok()
}

/// VmSize of /proc/self/status' text, in bytes: the address space in use.
pub fn address_space_used(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmSize:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// A request that cannot be met.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    #[error(
        "{what} needs {} of {} memory, more than the {} {}: {change}",
        bytes(*need), limit.place, bytes(Some(limit.bytes)), limit.source
    )]
    TooLarge { what: String, need: Bytes, limit: Limit, change: String },
    #[error("allocating {} of host memory for {what} failed: {change}", bytes(*need))]
    AllocationFailed { what: String, need: Bytes, change: String },
}

/// A byte count, or `None` where it overflows u64.
pub type Bytes = Option<u64>;

/// `count × size` bytes, `None` on overflow.
pub fn times(count: u64, size: u64) -> Bytes {
    count.checked_mul(size)
}

/// Sum of byte counts, `None` if any is `None` or the sum overflows.
pub fn sum(parts: impl IntoIterator<Item = Bytes>) -> Bytes {
    parts.into_iter().try_fold(0u64, |acc, b| acc.checked_add(b?))
}

/// Bytes for people: `68.7 GB (68719476736 bytes)`.
pub fn bytes(b: Bytes) -> String {
    match b {
        None => "more than 2^64 bytes".into(),
        Some(b) if b < 1 << 20 => format!("{b} bytes"),
        Some(b) if b < 1 << 30 => format!("{:.1} MiB ({b} bytes)", b as f64 / (1u64 << 20) as f64),
        Some(b) => format!("{:.1} GiB ({b} bytes)", b as f64 / (1u64 << 30) as f64),
    }
}

/// Ok when `need` fits `limit`; else the error naming what, the size, the
/// limit and `change` (what the user should do).
pub fn check(what: impl Into<String>, need: Bytes, limit: Limit, change: &str) -> Result<(), MemoryError> {
    match need {
        Some(n) if n <= limit.bytes => Ok(()),
        _ => Err(MemoryError::TooLarge { what: what.into(), need, limit, change: change.into() }),
    }
}

/// A vector of `len` copies of `value`, checked against the host limit and
/// allocated fallibly: the big buffers go through here so that a size no
/// machine holds is an error, not an abort.
pub fn filled_vec<T: Clone>(len: u64, value: T, what: &str, change: &str) -> Result<Vec<T>, MemoryError> {
    vec_with(len, times(len, std::mem::size_of::<T>() as u64), what, change, || value.clone())
}

/// A vector of `len` items from `item`, as [`filled_vec`] makes one, but
/// checked for `need` bytes: what the buffer brings with it (a list whose
/// slots each stand for more memory elsewhere), or items that are not Clone.
pub fn vec_with<T>(
    len: u64,
    need: Bytes,
    what: &str,
    change: &str,
    item: impl FnMut() -> T,
) -> Result<Vec<T>, MemoryError> {
    check(what, need, Limit::host(), change)?;
    let failed = || MemoryError::AllocationFailed { what: what.into(), need, change: change.into() };
    let len = usize::try_from(len).map_err(|_| failed())?;
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| failed())?;
    v.resize_with(len, item);
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    fn host(bytes: u64) -> Limit {
        Limit { bytes, place: Place::Host, source: "available" }
    }

    #[test]
    fn item2_meminfo_is_read_in_kilobytes() {
        let text = "MemTotal:       24000000 kB\nMemFree:   100 kB\nMemAvailable:   21000000 kB\n";
        assert_eq!(mem_available(text), Some(21_000_000 * 1024));
        assert_eq!(mem_available("MemTotal: 5 kB\n"), None);
        assert_eq!(mem_available("MemAvailable: lots kB\n"), None);
    }

    #[test]
    fn issue33_an_address_space_limit_is_read_with_what_is_used() {
        let head = "Limit                     Soft Limit           Hard Limit           Units     \n";
        let limited = format!("{head}Max address space         8000000000           unlimited            bytes     \n");
        assert_eq!(address_space_limit(&limited), Some(8_000_000_000));
        let unlimited =
            format!("{head}Max address space         unlimited            unlimited            bytes     \n");
        assert_eq!(address_space_limit(&unlimited), None);
        assert_eq!(address_space_used("Name:\treap\nVmPeak:\t  9 kB\nVmSize:\t    3892 kB\n"), Some(3892 * 1024));
        assert_eq!(address_space_used("VmRSS:\t 5 kB\n"), None);
    }

    #[test]
    fn item2_a_request_past_the_limit_names_size_limit_and_fix() {
        assert!(check("x", Some(GIB), host(GIB), "lower it").is_ok());
        let e = check("the image", Some(GIB + 1), host(GIB), "lower --width").unwrap_err().to_string();
        assert!(e.contains("the image needs 1.0 GiB (1073741825 bytes) of host memory"), "{e}");
        assert!(e.contains("1.0 GiB (1073741824 bytes) available"), "{e}");
        assert!(e.ends_with("lower --width"), "{e}");
    }

    #[test]
    fn item2_sizes_that_overflow_u64_are_refused() {
        assert_eq!(times(u64::MAX, 2), None);
        assert_eq!(sum([Some(u64::MAX), Some(1)]), None);
        assert_eq!(sum([Some(3), times(4, 5)]), Some(23));
        let e = check("x", times(u64::MAX, 16), host(u64::MAX), "less").unwrap_err().to_string();
        assert!(e.contains("more than 2^64 bytes"), "{e}");
    }

    #[test]
    fn item2_a_huge_vector_is_an_error_not_an_abort() {
        let e = filled_vec(1u64 << 60, 0u64, "the test buffer", "ask for less").unwrap_err().to_string();
        assert!(e.contains("the test buffer needs") && e.contains("ask for less"), "{e}");
        assert_eq!(filled_vec(3, 7u8, "small", "").unwrap(), vec![7, 7, 7]);
    }
}
