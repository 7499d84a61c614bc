//! Opening a wgpu adapter for compute: which one (`--adapter NAME|INDEX`),
//! with the features reap uses where the adapter has them (timestamp
//! queries, subgroups) and the adapter's own limits, so that buffers may be
//! as large as it allows. Validation errors are caught in scopes.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{Error, Result, block_on};

/// Which adapter to open.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum AdapterChoice {
    /// The first hardware GPU (discrete, then integrated, then virtual),
    /// else a software one (lavapipe).
    #[default]
    Best,
    /// The adapter at this position in [`adapters`]' list.
    Index(usize),
    /// The first adapter whose name contains this text (case-insensitive).
    Name(String),
}

impl std::str::FromStr for AdapterChoice {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        Ok(match s.parse::<usize>() {
            Ok(i) => AdapterChoice::Index(i),
            Err(_) if s.is_empty() || s == "best" => AdapterChoice::Best,
            Err(_) => AdapterChoice::Name(s.to_string()),
        })
    }
}

/// Which optional features to use where the adapter has them: off, the
/// fallbacks run (the host clock, workgroup-memory scans), for tests and
/// for adapters whose implementation of a feature is suspect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Features {
    pub timestamps: bool,
    pub subgroups: bool,
    /// 64-bit integers and every 64-bit atomic in storage buffers (Vulkan's
    /// shaderBufferInt64Atomics): the workloads' closest-hit keys and
    /// fixed-point sums use them natively, else emulate them with 32-bit words.
    pub int64_atomics: bool,
}

impl Default for Features {
    fn default() -> Self {
        Features { timestamps: true, subgroups: true, int64_atomics: true }
    }
}

impl Features {
    /// The defaults, less what `REAP_WGPU_TIMESTAMPS=0`, `REAP_WGPU_SUBGROUPS=0`
    /// and `REAP_WGPU_INT64=0` turn off.
    pub fn from_env() -> Self {
        let on = |var: &str| std::env::var(var).map_or(true, |v| v != "0");
        Features {
            timestamps: on("REAP_WGPU_TIMESTAMPS"),
            subgroups: on("REAP_WGPU_SUBGROUPS"),
            int64_atomics: on("REAP_WGPU_INT64"),
        }
    }
}

/// The adapter `choice` names among those wgpu finds for compute.
pub fn pick(choice: &AdapterChoice) -> Result<wgpu::Adapter> {
    let instance = instance();
    let list = all_adapters(&instance);
    let none = || Error::Unavailable {
        what: "wgpu finds no Vulkan, Metal or DX12 adapter".into(),
        how: "Install a GPU driver with Vulkan support, or Mesa's software one (Debian/Ubuntu: \
                  apt install mesa-vulkan-drivers), or use --backend cpu"
            .into(),
    };
    if list.is_empty() {
        return Err(none());
    }
    let names =
        || list.iter().enumerate().map(|(i, a)| format!("{i}: {}", a.get_info().name)).collect::<Vec<_>>().join("; ");
    let adapter = match choice {
        AdapterChoice::Best => {
            list.iter().min_by_key(|a| rank(a.get_info().device_type)).expect("the list is not empty")
        }
        AdapterChoice::Index(i) => list.get(*i).ok_or_else(|| Error::Unavailable {
            what: format!("--adapter {i}: there are {} adapters", list.len()),
            how: format!("Pick one of: {}", names()),
        })?,
        AdapterChoice::Name(n) => {
            let low = n.to_lowercase();
            list.iter().find(|a| a.get_info().name.to_lowercase().contains(&low)).ok_or_else(|| Error::Unavailable {
                what: format!("--adapter {n}: no adapter's name contains it"),
                how: format!("Pick one of: {}", names()),
            })?
        }
    };
    Ok(adapter.clone())
}

/// One adapter as [`adapters`] lists it.
#[derive(Clone, Debug)]
pub struct AdapterSummary {
    pub index: usize,
    pub name: String,
    pub backend: String,
    pub kind: String,
}

/// Compute needs Vulkan, Metal or DX12; GL has no storage-buffer atomics worth the name.
const COMPUTE_BACKENDS: wgpu::Backends =
    wgpu::Backends::VULKAN.union(wgpu::Backends::METAL).union(wgpu::Backends::DX12);

fn instance() -> wgpu::Instance {
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle_from_env();
    // Probing GL would open EGL (and complain about the display) for nothing.
    desc.backends &= COMPUTE_BACKENDS;
    wgpu::Instance::new(desc)
}

fn all_adapters(instance: &wgpu::Instance) -> Vec<wgpu::Adapter> {
    let mut list = block_on(instance.enumerate_adapters(COMPUTE_BACKENDS));
    // A stable order: the same machine lists its adapters the same way every run.
    list.sort_by_key(|a| {
        let i = a.get_info();
        (i.backend as u32, i.device_type as u32, i.name.clone(), i.device)
    });
    list
}

/// Every adapter wgpu finds for compute, in the order `--adapter INDEX` counts.
pub fn adapters() -> Vec<AdapterSummary> {
    all_adapters(&instance())
        .iter()
        .enumerate()
        .map(|(index, a)| {
            let i = a.get_info();
            AdapterSummary {
                index,
                name: i.name,
                backend: format!("{:?}", i.backend),
                kind: format!("{:?}", i.device_type),
            }
        })
        .collect()
}

fn rank(kind: wgpu::DeviceType) -> u32 {
    match kind {
        wgpu::DeviceType::DiscreteGpu => 0,
        wgpu::DeviceType::IntegratedGpu => 1,
        wgpu::DeviceType::VirtualGpu => 2,
        wgpu::DeviceType::Other => 3,
        wgpu::DeviceType::Cpu => 4,
    }
}

/// An open adapter, device and queue, with what reap learned of them.
pub struct Device {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    /// "NAME (BACKEND, KIND)".
    pub name: String,
    pub info: wgpu::AdapterInfo,
    pub limits: wgpu::Limits,
    pub timestamps: bool,
    pub subgroups: bool,
    /// Whether shaders may use `u64` and `atomic<u64>` with every atomic
    /// operation ([`Features::int64_atomics`]).
    pub int64_atomics: bool,
    /// The adapter's smallest and largest subgroup sizes (0 without subgroups).
    pub subgroup_sizes: (u32, u32),
    /// Nanoseconds per timestamp tick.
    pub timestamp_period: f32,
    /// An error wgpu raised outside every scope (kept, not panicked on).
    uncaptured: Arc<Mutex<Option<String>>>,
}

impl Device {
    /// Opens the adapter `choice` names, or says why not and what to do.
    pub fn open(choice: &AdapterChoice, use_features: Features) -> Result<Device> {
        let device = Device::on_adapter(&pick(choice)?, use_features, "reap compute")?;
        device.check_compute()?;
        Ok(device)
    }

    /// Opens a device on `adapter` (the viewer's, which must also present)
    /// with the features reap uses where it has them and its own limits.
    /// It may lack what compute needs: [`Device::check_compute`] says.
    pub fn on_adapter(adapter: &wgpu::Adapter, use_features: Features, label: &str) -> Result<Device> {
        let info = adapter.get_info();
        let name = format!("{} ({:?}, {:?})", info.name, info.backend, info.device_type);
        let have = adapter.features();
        let wanted = wgpu::Features::TIMESTAMP_QUERY
            | wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS
            | wgpu::Features::SUBGROUP;
        let int64 = wgpu::Features::SHADER_INT64 | wgpu::Features::SHADER_INT64_ATOMIC_ALL_OPS;
        let mut features = have & wanted;
        // Both or neither: a u64 without its atomics does not help.
        if use_features.int64_atomics && have.contains(int64) {
            features |= int64;
        }
        if !use_features.timestamps {
            features.remove(wgpu::Features::TIMESTAMP_QUERY | wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS);
        }
        if !use_features.subgroups {
            features.remove(wgpu::Features::SUBGROUP);
        }
        let limits = adapter.limits();
        let (device, queue) = block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some(label),
            required_features: features,
            required_limits: limits.clone(),
            ..Default::default()
        }))
        .map_err(|e| Error::Unavailable {
            what: format!("the adapter {name} would not open a device: {e}"),
            how: "Pick another adapter with --adapter, or use --backend cpu".into(),
        })?;
        let uncaptured: Arc<Mutex<Option<String>>> = Arc::default();
        let sink = uncaptured.clone();
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            let mut s = sink.lock().unwrap_or_else(|p| p.into_inner());
            s.get_or_insert_with(|| e.to_string());
        }));
        let timestamp_period = queue.get_timestamp_period();
        let subgroups = features.contains(wgpu::Features::SUBGROUP);
        let subgroup_sizes = if subgroups {
            let i = adapter.get_info();
            (i.subgroup_min_size, i.subgroup_max_size)
        } else {
            (0, 0)
        };
        Ok(Device {
            device,
            queue,
            name,
            info,
            limits,
            timestamps: features.contains(wgpu::Features::TIMESTAMP_QUERY),
            subgroups,
            int64_atomics: features.contains(int64),
            subgroup_sizes,
            timestamp_period,
            uncaptured,
        })
    }

    /// Whether the adapter is a GPU (not a software rasteriser such as lavapipe).
    pub fn is_hardware(&self) -> bool {
        self.info.device_type != wgpu::DeviceType::Cpu
    }

    /// Refuses an adapter too small for the compaction shaders.
    pub fn check_compute(&self) -> Result<()> {
        let (limits, name) = (&self.limits, self.name.clone());
        if limits.max_compute_invocations_per_workgroup < 256 || limits.max_storage_buffers_per_shader_stage < 7 {
            return Err(Error::MissingCapability {
                adapter: name,
                what: format!(
                    "compute workgroups of 256 invocations and 7 storage buffers per stage (it has {} and {})",
                    limits.max_compute_invocations_per_workgroup, limits.max_storage_buffers_per_shader_stage
                ),
                needed_by: "every compaction shader".into(),
                how: "pick another adapter with --adapter, or use --backend cpu".into(),
            });
        }
        Ok(())
    }

    /// Runs `f` inside a validation and an out-of-memory scope; what either
    /// catches, or what wgpu raised uncaught meanwhile, becomes a typed error.
    pub fn scoped<R>(&self, during: impl Fn() -> String, f: impl FnOnce() -> R) -> Result<R> {
        let oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let r = f();
        let v = block_on(validation.pop());
        let o = block_on(oom.pop());
        if let Some(e) = o {
            return Err(Error::OutOfMemory { during: during(), message: first_line(&e.to_string()) });
        }
        if let Some(e) = v {
            return Err(Error::Validation { during: during(), message: e.to_string() });
        }
        if let Some(message) = self.uncaptured.lock().unwrap_or_else(|p| p.into_inner()).take() {
            return Err(Error::Validation { during: during(), message });
        }
        Ok(r)
    }

    /// Waits for everything submitted so far.
    pub fn wait(&self, during: &str) -> Result<()> {
        self.device
            .poll(wgpu::PollType::Wait { submission_index: None, timeout: Some(Duration::from_secs(600)) })
            .map(drop)
            .map_err(|e| Error::Lost { during: during.to_string(), message: e.to_string() })
    }

    /// Checks a buffer of `bytes` bytes against the adapter's limits: every
    /// buffer of the library is bound whole as one storage binding.
    pub fn check_size(&self, what: &'static str, bytes: u64) -> Result<()> {
        let adapter = self.name.clone();
        if bytes > self.limits.max_buffer_size {
            return Err(Error::BufferTooLarge { what, bytes, limit: self.limits.max_buffer_size, adapter });
        }
        let limit = self.limits.max_storage_buffer_binding_size;
        if bytes > limit {
            return Err(Error::BindingTooLarge { what, bytes, limit, adapter });
        }
        Ok(())
    }

    /// Copies `bytes` bytes of `buffer` from `offset` to the host (waits).
    pub fn read(&self, buffer: &wgpu::Buffer, offset: u64, bytes: u64, during: &str) -> Result<Vec<u8>> {
        if bytes == 0 {
            return Ok(Vec::new());
        }
        let padded = bytes.next_multiple_of(wgpu::COPY_BUFFER_ALIGNMENT);
        let staging = self.scoped(
            || format!("a {padded}-byte staging buffer for {during}"),
            || {
                self.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("reap read-back"),
                    size: padded,
                    usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                })
            },
        )?;
        let mut enc = self.device.create_command_encoder(&Default::default());
        enc.copy_buffer_to_buffer(buffer, offset, &staging, 0, padded);
        self.queue.submit([enc.finish()]);
        self.map(&staging, during)?;
        let out = staging
            .slice(..)
            .get_mapped_range()
            .map_err(|e| Error::Lost { during: during.to_string(), message: e.to_string() })?[..bytes as usize]
            .to_vec();
        staging.unmap();
        Ok(out)
    }

    /// Maps a MAP_READ buffer whose copy was submitted, waiting for it.
    pub fn map(&self, buffer: &wgpu::Buffer, during: &str) -> Result<()> {
        let done: Arc<Mutex<Option<std::result::Result<(), wgpu::BufferAsyncError>>>> = Arc::default();
        let sink = done.clone();
        buffer.map_async(wgpu::MapMode::Read, .., move |r| {
            *sink.lock().unwrap_or_else(|p| p.into_inner()) = Some(r);
        });
        // Another thread's poll may be the one that runs the callback, just
        // after this wait returns: poll until it has run.
        let start = std::time::Instant::now();
        loop {
            self.wait(during)?;
            if let Some(r) = done.lock().unwrap_or_else(|p| p.into_inner()).take() {
                return r.map_err(|e| Error::Lost { during: during.to_string(), message: e.to_string() });
            }
            if start.elapsed() > Duration::from_secs(600) {
                return Err(Error::Lost { during: during.to_string(), message: "the map never completed".into() });
            }
            std::thread::yield_now();
        }
    }
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or("").to_string()
}
