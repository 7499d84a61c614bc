//! WGSL sources and the compute-pipeline cache: the twin of the NVRTC module
//! cache. A shader is a file under `shaders/` plus the headers it names;
//! WGSL has no preprocessor, so a specialisation (element type, keep rule,
//! the user's predicate) is a text prelude put before the headers, and
//! tuning numbers are `override` constants set when the pipeline is made.
//! Every (source, prelude, entry point, constants) is compiled once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::{Device, Result};

/// One WGSL file of `shaders/` and the headers it needs before it.
#[derive(Clone, Copy, Debug)]
pub struct Shader {
    pub name: &'static str,
    pub text: &'static str,
    pub headers: &'static [Shader],
}

impl Shader {
    /// The whole module text: `prelude`, then each header once (depth
    /// first, in the order named), then the file itself.
    pub fn assemble(&self, prelude: &str) -> String {
        fn walk(s: &Shader, seen: &mut Vec<&'static str>, out: &mut String) {
            for h in s.headers {
                walk(h, seen, out);
            }
            if !seen.contains(&s.name) {
                seen.push(s.name);
                out.push_str(&format!("// ---- {} ----\n", s.name));
                out.push_str(s.text);
                out.push('\n');
            }
        }
        let mut out = String::from(prelude);
        out.push('\n');
        walk(self, &mut Vec::new(), &mut out);
        out
    }
}

/// Validates a module with naga as wgpu would (no adapter needed): what the
/// GPU-free test runs over every shader variant. `subgroups` allows the
/// subgroup built-ins.
pub fn validate(name: &str, text: &str, subgroups: bool) -> std::result::Result<(), String> {
    use wgpu::naga;
    let module = naga::front::wgsl::parse_str(text).map_err(|e| format!("{name}: {}", e.emit_to_string(text)))?;
    // 64-bit integers and atomics are allowed here: a shader that uses them is
    // only built where the device has them (`Device::int64_atomics`), and its
    // 32-bit fallback is validated as a variant of its own.
    let mut caps = naga::valid::Capabilities::SHADER_INT64 | naga::valid::Capabilities::SHADER_INT64_ATOMIC_ALL_OPS;
    if subgroups {
        caps |= naga::valid::Capabilities::SUBGROUP;
    }
    let mut v = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), caps);
    if subgroups {
        v.subgroup_stages(naga::valid::ShaderStages::COMPUTE);
        v.subgroup_operations(naga::valid::SubgroupOperationSet::all());
    }
    v.validate(&module).map(drop).map_err(|e| format!("{name}: {}", e.emit_to_string(text)))
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Key {
    shader: &'static str,
    prelude: Arc<str>,
    entry: &'static str,
    constants: Vec<(&'static str, u64)>,
}

/// The bind-group layout every library shader shares, and the compiled pipelines.
pub struct Pipelines {
    pub bind_layout: wgpu::BindGroupLayout,
    layout: wgpu::PipelineLayout,
    modules: Mutex<HashMap<(&'static str, Arc<str>), wgpu::ShaderModule>>,
    pipelines: Mutex<HashMap<Key, wgpu::ComputePipeline>>,
}

/// The shared layout: binding 0 a uniform with a dynamic offset (one call's
/// parameters per dispatch), 1 and 3 read-only storage, the rest read-write.
pub const BINDINGS: u32 = 8;
const READ_ONLY: [u32; 2] = [1, 3];

/// Shaders whose every loop is bounded by construction, compiled without
/// naga's loop bounding: its counter and exit test in every loop keep NVIDIA's
/// Vulkan compiler from unrolling the per-item loops, which cost the single
/// pass a third of its time on an H200 (docs/bench/wgpu-hop-h200).
const LOOPS_BOUNDED: &[&str] = &["compaction/single_pass.wgsl", "compaction/single_pass_direct.wgsl", "bench/hop.wgsl"];

/// The runtime checks `shader` is compiled with, where they differ from
/// wgpu's defaults: no loop bounding for [`LOOPS_BOUNDED`] shaders, and none
/// of naga's checks at all with `REAP_WGPU_UNCHECKED=1` (an experiment that
/// measures their cost).
fn runtime_checks(shader: &Shader) -> Option<wgpu::ShaderRuntimeChecks> {
    if std::env::var("REAP_WGPU_UNCHECKED").is_ok_and(|v| v == "1") {
        return Some(wgpu::ShaderRuntimeChecks::unchecked());
    }
    fn bounded(s: &Shader) -> bool {
        LOOPS_BOUNDED.contains(&s.name) || s.headers.iter().any(bounded)
    }
    bounded(shader)
        .then(|| wgpu::ShaderRuntimeChecks { force_loop_bounding: false, ..wgpu::ShaderRuntimeChecks::checked() })
}

impl Pipelines {
    pub fn new(dev: &Device) -> Result<Self> {
        let entries: Vec<_> = (0..BINDINGS)
            .map(|binding| match binding {
                0 => super::buffer_entry(0, wgpu::BufferBindingType::Uniform, true),
                _ => super::storage_entry(binding, READ_ONLY.contains(&binding)),
            })
            .collect();
        let (bind_layout, layout) = dev.scoped(
            || "the library's bind-group layout".into(),
            || {
                let bind_layout = dev.device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                    label: Some("reap compaction"),
                    entries: &entries,
                });
                let layout = dev.device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                    label: Some("reap compaction"),
                    bind_group_layouts: &[Some(&bind_layout)],
                    immediate_size: 0,
                });
                (bind_layout, layout)
            },
        )?;
        Ok(Pipelines { bind_layout, layout, modules: Default::default(), pipelines: Default::default() })
    }

    /// The pipeline of `entry` in `shader` specialised by `prelude` with
    /// these override constants, compiled on first use.
    pub fn get(
        &self,
        dev: &Device,
        shader: &Shader,
        prelude: &Arc<str>,
        entry: &'static str,
        constants: &[(&'static str, u32)],
    ) -> Result<wgpu::ComputePipeline> {
        let key = Key {
            shader: shader.name,
            prelude: prelude.clone(),
            entry,
            constants: constants.iter().map(|&(k, v)| (k, v as u64)).collect(),
        };
        if let Some(p) = self.pipelines.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
            return Ok(p.clone());
        }
        let module = {
            let mut modules = self.modules.lock().unwrap_or_else(|p| p.into_inner());
            match modules.get(&(shader.name, prelude.clone())) {
                Some(m) => m.clone(),
                None => {
                    let text = shader.assemble(prelude);
                    let desc = wgpu::ShaderModuleDescriptor {
                        label: Some(shader.name),
                        source: wgpu::ShaderSource::Wgsl(text.into()),
                    };
                    let m = dev.scoped(
                        || format!("the shader {}", shader.name),
                        || match runtime_checks(shader) {
                            // SAFETY: loop bounding guards against a loop that never ends, which
                            // some drivers' compilers may treat as undefined behaviour; `shader`
                            // is one whose every loop is bounded by construction (counts fixed
                            // by override constants, every spin capped by MAX_POLLS). Without
                            // bounds checks (REAP_WGPU_UNCHECKED=1, an experiment) every index
                            // must also be in range: the verify suite checks the results.
                            Some(checks) => unsafe { dev.device.create_shader_module_trusted(desc, checks) },
                            None => dev.device.create_shader_module(desc),
                        },
                    )?;
                    modules.insert((shader.name, prelude.clone()), m.clone());
                    m
                }
            }
        };
        let consts: Vec<(&str, f64)> = constants.iter().map(|&(k, v)| (k, v as f64)).collect();
        let pipeline = dev.scoped(
            || format!("the pipeline {}::{entry}", shader.name),
            || {
                dev.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                    label: Some(entry),
                    layout: Some(&self.layout),
                    module: &module,
                    entry_point: Some(entry),
                    compilation_options: wgpu::PipelineCompilationOptions {
                        constants: &consts,
                        // Every shader initialises the workgroup memory it reads.
                        zero_initialize_workgroup_memory: false,
                    },
                    cache: None,
                })
            },
        )?;
        self.pipelines.lock().unwrap_or_else(|p| p.into_inner()).insert(key, pipeline.clone());
        Ok(pipeline)
    }
}
