//! The image as the viewer shows it (tonemap.wgsl): into a storage texture
//! of the engine's device for a viewer that draws there, or into words read
//! back for [`Engine::rgba8`].

use super::*;

/// tonemap.wgsl `Tonemap`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct TonemapArgs {
    pixels: u32,
    width: u32,
    pad: [u32; 2],
}

/// tonemap.wgsl `WG`.
const WG: u32 = 256;

/// The tonemap's pipelines and buffers, made on first use.
pub(super) struct Display {
    module: wgpu::ShaderModule,
    args: wgpu::Buffer,
    texture: Option<(wgpu::ComputePipeline, wgpu::BindGroupLayout)>,
    words: Option<(wgpu::ComputePipeline, wgpu::BindGroupLayout, wgpu::Buffer)>,
}

fn uniform(binding: u32) -> wgpu::BindGroupLayoutEntry {
    rt::buffer_entry(binding, wgpu::BufferBindingType::Uniform, false)
}

use rt::storage_entry as storage;

impl WgpuEngine {
    fn display(&mut self) -> TraceResult<&mut Display> {
        if self.display.is_none() {
            let dev = self.dev.clone();
            let args = TonemapArgs { pixels: self.image_pixels() as u32, width: self.gpu.width, pad: [0; 2] };
            let (module, buffer) = dev
                .scoped(
                    || "the shader trace/tonemap.wgsl".into(),
                    || {
                        use wgpu::util::DeviceExt;
                        let module = dev.device.create_shader_module(wgpu::ShaderModuleDescriptor {
                            label: Some(TONEMAP.name),
                            source: wgpu::ShaderSource::Wgsl(TONEMAP.assemble("").into()),
                        });
                        let buffer = dev.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                            label: Some("reap tonemap"),
                            contents: bytemuck::bytes_of(&args),
                            usage: wgpu::BufferUsages::UNIFORM,
                        });
                        (module, buffer)
                    },
                )
                .map_err(rt_err)?;
            self.display = Some(Display { module, args: buffer, texture: None, words: None });
        }
        self.display.as_mut().ok_or_else(|| TraceError::Settings("no display".into()))
    }

    fn tonemap_pipeline(
        dev: &Device,
        module: &wgpu::ShaderModule,
        entry: &'static str,
        entries: &[wgpu::BindGroupLayoutEntry],
    ) -> TraceResult<(wgpu::ComputePipeline, wgpu::BindGroupLayout)> {
        dev.scoped(
            || format!("the pipeline trace/tonemap.wgsl::{entry}"),
            || {
                let layout = dev
                    .device
                    .create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor { label: Some(entry), entries });
                let pl = dev.device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                    label: Some(entry),
                    bind_group_layouts: &[Some(&layout)],
                    immediate_size: 0,
                });
                let pipeline = dev.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                    label: Some(entry),
                    layout: Some(&pl),
                    module,
                    entry_point: Some(entry),
                    compilation_options: Default::default(),
                    cache: None,
                });
                (pipeline, layout)
            },
        )
        .map_err(rt_err)
    }

    /// Writes the image as the viewer shows it (each pixel's mean radiance,
    /// clamped, sRGB-encoded to 8 bits, alpha opaque: `rgba8`'s bytes) into
    /// `target`, a view of a `Rgba8Unorm` texture of exactly width x height
    /// made with `TextureUsages::STORAGE_BINDING` on this engine's device.
    /// One submission after the frames before it; nothing crosses to the host.
    pub fn tonemap_into(&mut self, target: &wgpu::TextureView) -> TraceResult<()> {
        lock(&self.pending).submit();
        let dev = self.dev.clone();
        let pixels = self.image_pixels();
        let sum = self.sum.clone();
        let d = self.display()?;
        if d.texture.is_none() {
            let tex = wgpu::BindGroupLayoutEntry {
                binding: 2,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::StorageTexture {
                    access: wgpu::StorageTextureAccess::WriteOnly,
                    format: wgpu::TextureFormat::Rgba8Unorm,
                    view_dimension: wgpu::TextureViewDimension::D2,
                },
                count: None,
            };
            let entries = [uniform(0), storage(1, true), tex];
            d.texture = Some(Self::tonemap_pipeline(&dev, &d.module, "trace_tonemap", &entries)?);
        }
        let Some((pipeline, layout)) = &d.texture else { return Ok(()) };
        let entries = [
            wgpu::BindGroupEntry { binding: 0, resource: d.args.as_entire_binding() },
            wgpu::BindGroupEntry { binding: 1, resource: sum.as_entire_binding() },
            wgpu::BindGroupEntry { binding: 2, resource: wgpu::BindingResource::TextureView(target) },
        ];
        run_tonemap(&dev, pipeline, layout, &entries, pixels)
    }

    /// The tonemapped image as RGBA words (R in the lowest byte), read back.
    pub(super) fn tonemap_words(&mut self) -> TraceResult<Vec<u32>> {
        lock(&self.pending).submit();
        let dev = self.dev.clone();
        let pixels = self.image_pixels();
        let sum = self.sum.clone();
        let rgba = self.backend.raw_buffer("the display image", pixels.max(1) * 4)?;
        let d = self.display()?;
        if d.words.is_none() {
            let entries = [uniform(0), storage(1, true), storage(3, false)];
            let (p, l) = Self::tonemap_pipeline(&dev, &d.module, "trace_tonemap_words", &entries)?;
            d.words = Some((p, l, rgba));
        }
        let Some((pipeline, layout, rgba)) = &d.words else { return Ok(Vec::new()) };
        let entries = [
            wgpu::BindGroupEntry { binding: 0, resource: d.args.as_entire_binding() },
            wgpu::BindGroupEntry { binding: 1, resource: sum.as_entire_binding() },
            wgpu::BindGroupEntry { binding: 3, resource: rgba.as_entire_binding() },
        ];
        run_tonemap(&dev, pipeline, layout, &entries, pixels)?;
        let bytes = dev.read(rgba, 0, pixels * 4, "reading the display image").map_err(rt_err)?;
        Ok(bytemuck::pod_collect_to_vec(&bytes))
    }
}

/// One dispatch over the image's pixels, submitted on its own.
fn run_tonemap(
    dev: &Device,
    pipeline: &wgpu::ComputePipeline,
    layout: &wgpu::BindGroupLayout,
    entries: &[wgpu::BindGroupEntry<'_>],
    pixels: u64,
) -> TraceResult<()> {
    let groups = pixels.div_ceil(WG as u64);
    if groups > dev.limits.max_compute_workgroups_per_dimension as u64 {
        return Err(TraceError::Settings(format!("{pixels} pixels are more than one tonemap dispatch covers")));
    }
    dev.scoped(
        || "the tonemap".into(),
        || {
            let bind = dev.device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("reap tonemap"),
                layout,
                entries,
            });
            let mut enc = dev.device.create_command_encoder(&Default::default());
            {
                let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some("tonemap"),
                    timestamp_writes: None,
                });
                pass.set_pipeline(pipeline);
                pass.set_bind_group(0, &bind, &[]);
                pass.dispatch_workgroups(groups.max(1) as u32, 1, 1);
            }
            dev.queue.submit([enc.finish()]);
        },
    )
    .map_err(rt_err)
}
