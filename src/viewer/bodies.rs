//! The collision view's 3D pass: `shaders/collide.wgsl` draws the bodies as
//! instanced meshes with a depth buffer, then the container's outline, into
//! the part of the window left of the overlay. The engine's `Body` records
//! are the instance data as they are; spheres and boxes are only grouped so
//! each mesh draws its own run of instances: on the CPU where the bodies
//! were read back, on the device (`shaders/collide_group.wgsl`) where a wgpu
//! engine holds them on the view's own device, so they never come back.

use std::mem::offset_of;

use glam::Mat4;

use super::gpu;
use super::mesh::{self, LineVertex, Mesh, Vertex};
use crate::collide::Body;
use crate::collide::layout::SPHERE;

/// The pass's uniform. Keep in sync with `shaders/collide.wgsl` `Scene`.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct SceneUniform {
    view_proj: [[f32; 4]; 4],
    light: [f32; 4],
    hot_speed: f32,
    encode_srgb: u32,
    pad: [u32; 2],
}

/// What one frame of the view looks like from where.
#[derive(Clone, Copy, Debug)]
pub struct SceneFrame {
    pub view_proj: Mat4,
    /// x, y, width, height in framebuffer pixels.
    pub viewport: [f32; 4],
    pub background: [f32; 4],
    /// A body this fast (world units per second) is drawn in the hottest colour.
    pub hot_speed: f32,
}

/// Above these many spheres coarser icospheres (320, 80, 20 triangles) draw
/// them: lavapipe and small GPUs keep their frame rate, and at those counts
/// each sphere is a few pixels anyway.
const SPHERE_DETAIL: [u32; 2] = [1_000, 30_000];
const DEPTH: wgpu::TextureFormat = wgpu::TextureFormat::Depth32Float;

struct MeshBuffers {
    vertices: wgpu::Buffer,
    indices: wgpu::Buffer,
    count: u32,
}

impl MeshBuffers {
    fn new(device: &wgpu::Device, label: &str, m: &Mesh) -> Self {
        use wgpu::util::DeviceExt;
        let vertices = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some(label),
            contents: bytemuck::cast_slice(&m.vertices),
            usage: wgpu::BufferUsages::VERTEX,
        });
        // u16 indices, padded to an even count: buffer sizes are multiples of 4.
        let mut idx = m.indices.clone();
        if idx.len() % 2 == 1 {
            idx.push(0);
        }
        let indices = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some(label),
            contents: bytemuck::cast_slice(&idx),
            usage: wgpu::BufferUsages::INDEX,
        });
        MeshBuffers { vertices, indices, count: m.indices.len() as u32 }
    }
}

/// A vertex buffer that grows (by doubling) to hold what is written to it.
struct Growing {
    label: &'static str,
    usage: wgpu::BufferUsages,
    buffer: Option<wgpu::Buffer>,
}

impl Growing {
    fn new(label: &'static str, usage: wgpu::BufferUsages) -> Self {
        Growing { label, usage: usage | wgpu::BufferUsages::VERTEX | wgpu::BufferUsages::COPY_DST, buffer: None }
    }

    /// The buffer, grown to hold at least `bytes`.
    fn reserve(&mut self, device: &wgpu::Device, bytes: u64) -> &wgpu::Buffer {
        let need = bytes.next_multiple_of(wgpu::COPY_BUFFER_ALIGNMENT).max(wgpu::COPY_BUFFER_ALIGNMENT);
        if self.buffer.as_ref().is_some_and(|b| b.size() < need) {
            self.buffer = None;
        }
        self.buffer.get_or_insert_with(|| {
            let size = need.next_power_of_two().min(device.limits().max_buffer_size).max(need);
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(self.label),
                size,
                usage: self.usage,
                mapped_at_creation: false,
            })
        })
    }

    fn write(&mut self, device: &wgpu::Device, queue: &wgpu::Queue, bytes: &[u8]) {
        if !bytes.is_empty() {
            queue.write_buffer(self.reserve(device, bytes.len() as u64), 0, bytes);
        }
    }
}

/// `shaders/collide_group.wgsl`'s uniform.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct GroupUniform {
    n: u32,
    spheres: u32,
    pad: [u32; 2],
}

/// Groups a wgpu engine's bodies by shape into the view's instances, on the
/// device (one dispatch a frame).
struct Grouping {
    pipeline: wgpu::ComputePipeline,
    layout: wgpu::BindGroupLayout,
    uniform: wgpu::Buffer,
    placed: wgpu::Buffer,
    /// The bind group of the last (engine buffer, instance buffer) pair.
    bound: Option<(wgpu::Buffer, wgpu::Buffer, wgpu::BindGroup)>,
}

impl Grouping {
    const WG: u32 = 256;

    fn new(device: &wgpu::Device) -> Self {
        let module = gpu::shader(device, "collide_group.wgsl", include_str!("../../shaders/collide_group.wgsl"));
        use crate::wgpu_runtime::storage_entry as storage;
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("collide group"),
            entries: &[
                gpu::uniform_entry::<GroupUniform>(0, wgpu::ShaderStages::COMPUTE),
                storage(1, true),
                storage(2, false),
                storage(3, false),
            ],
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("collide group"),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some("collide group"),
            layout: Some(&pipeline_layout),
            module: &module,
            entry_point: Some("group_by_shape"),
            compilation_options: Default::default(),
            cache: None,
        });
        let placed = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("collide group placed"),
            size: 8,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let uniform = gpu::uniform_buffer::<GroupUniform>(device, "collide group uniform");
        Grouping { pipeline, layout, uniform, placed, bound: None }
    }

    /// Records the grouping of the first `n` bodies (`spheres` of them
    /// spheres) of `bodies` into `instances`.
    #[allow(clippy::too_many_arguments)]
    fn record(
        &mut self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        encoder: &mut wgpu::CommandEncoder,
        bodies: &wgpu::Buffer,
        instances: &wgpu::Buffer,
        n: u32,
        spheres: u32,
    ) {
        queue.write_buffer(&self.uniform, 0, bytemuck::bytes_of(&GroupUniform { n, spheres, pad: [0; 2] }));
        encoder.clear_buffer(&self.placed, 0, None);
        let bound = match &self.bound {
            Some((b, i, bg)) if b == bodies && i == instances => bg.clone(),
            _ => {
                let bg = device.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some("collide group"),
                    layout: &self.layout,
                    entries: &[
                        wgpu::BindGroupEntry { binding: 0, resource: self.uniform.as_entire_binding() },
                        wgpu::BindGroupEntry { binding: 1, resource: bodies.as_entire_binding() },
                        wgpu::BindGroupEntry { binding: 2, resource: instances.as_entire_binding() },
                        wgpu::BindGroupEntry { binding: 3, resource: self.placed.as_entire_binding() },
                    ],
                });
                self.bound = Some((bodies.clone(), instances.clone(), bg.clone()));
                bg
            }
        };
        let mut pass = encoder
            .begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("collide group"), timestamp_writes: None });
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, &bound, &[]);
        let groups = n.div_ceil(Self::WG);
        let x = groups.min(65_535);
        pass.dispatch_workgroups(x, groups.div_ceil(x), 1);
    }
}

pub struct BodiesPass {
    body_pipeline: wgpu::RenderPipeline,
    line_pipeline: wgpu::RenderPipeline,
    uniform: wgpu::Buffer,
    bind_group: wgpu::BindGroup,
    /// Icospheres of 2, 1 and 0 subdivisions.
    spheres_lod: [MeshBuffers; 3],
    cube: MeshBuffers,
    instances: Growing,
    /// Made on the first frame of a wgpu engine's bodies.
    grouping: Option<Grouping>,
    /// The bodies grouped: spheres, then boxes.
    grouped: Vec<Body>,
    spheres: u32,
    boxes: u32,
    lines: Growing,
    line_vertices: u32,
    depth: Option<(wgpu::TextureView, u32, u32)>,
    encode_srgb: bool,
}

impl BodiesPass {
    pub fn new(device: &wgpu::Device, format: wgpu::TextureFormat) -> Self {
        let module = gpu::shader(device, "collide.wgsl", include_str!("../../shaders/collide.wgsl"));
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("collide"),
            entries: &[gpu::uniform_entry::<SceneUniform>(0, wgpu::ShaderStages::VERTEX_FRAGMENT)],
        });
        let uniform = gpu::uniform_buffer::<SceneUniform>(device, "collide uniform");
        let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("collide"),
            layout: &layout,
            entries: &[wgpu::BindGroupEntry { binding: 0, resource: uniform.as_entire_binding() }],
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("collide"),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });

        let mesh_attrs = wgpu::vertex_attr_array![0 => Float32x3, 1 => Float32x3];
        let attr = |format, offset: usize, shader_location| wgpu::VertexAttribute {
            format,
            offset: offset as u64,
            shader_location,
        };
        use wgpu::VertexFormat as F;
        // Every field of `Body` the shader reads (the padding is skipped).
        let body_attrs = [
            attr(F::Float32x3, offset_of!(Body, pos), 2),
            attr(F::Uint32, offset_of!(Body, shape), 3),
            attr(F::Float32x3, offset_of!(Body, vel), 4),
            attr(F::Float32, offset_of!(Body, inv_mass), 5),
            attr(F::Float32x3, offset_of!(Body, half), 6),
            attr(F::Float32x4, offset_of!(Body, rot), 7),
        ];
        let line_attrs = wgpu::vertex_attr_array![0 => Float32x3, 1 => Float32x4];
        let depth = |write: bool| {
            Some(wgpu::DepthStencilState {
                format: DEPTH,
                depth_write_enabled: Some(write),
                depth_compare: Some(wgpu::CompareFunction::LessEqual),
                stencil: Default::default(),
                bias: Default::default(),
            })
        };
        let pipeline = |label: &str,
                        vs: &str,
                        fs: &str,
                        buffers: &[Option<wgpu::VertexBufferLayout<'_>>],
                        primitive: wgpu::PrimitiveState,
                        write_depth: bool| {
            device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
                label: Some(label),
                layout: Some(&pipeline_layout),
                vertex: wgpu::VertexState {
                    module: &module,
                    entry_point: Some(vs),
                    buffers,
                    compilation_options: Default::default(),
                },
                primitive,
                depth_stencil: depth(write_depth),
                multisample: wgpu::MultisampleState::default(),
                fragment: Some(wgpu::FragmentState {
                    module: &module,
                    entry_point: Some(fs),
                    targets: &[Some(wgpu::ColorTargetState {
                        format,
                        blend: None,
                        write_mask: wgpu::ColorWrites::ALL,
                    })],
                    compilation_options: Default::default(),
                }),
                multiview_mask: None,
                cache: None,
            })
        };
        let body_pipeline = pipeline(
            "collide bodies",
            "vs_body",
            "fs_body",
            &[
                Some(wgpu::VertexBufferLayout {
                    array_stride: size_of::<Vertex>() as u64,
                    step_mode: wgpu::VertexStepMode::Vertex,
                    attributes: &mesh_attrs,
                }),
                Some(wgpu::VertexBufferLayout {
                    array_stride: size_of::<Body>() as u64,
                    step_mode: wgpu::VertexStepMode::Instance,
                    attributes: &body_attrs,
                }),
            ],
            wgpu::PrimitiveState { cull_mode: Some(wgpu::Face::Back), ..Default::default() },
            true,
        );
        let line_pipeline = pipeline(
            "collide outline",
            "vs_line",
            "fs_line",
            &[Some(wgpu::VertexBufferLayout {
                array_stride: size_of::<LineVertex>() as u64,
                step_mode: wgpu::VertexStepMode::Vertex,
                attributes: &line_attrs,
            })],
            wgpu::PrimitiveState { topology: wgpu::PrimitiveTopology::LineList, ..Default::default() },
            false,
        );
        BodiesPass {
            body_pipeline,
            line_pipeline,
            uniform,
            bind_group,
            spheres_lod: [2, 1, 0].map(|k| MeshBuffers::new(device, "icosphere", &mesh::icosphere(k))),
            cube: MeshBuffers::new(device, "cube", &mesh::cube()),
            instances: Growing::new("bodies", wgpu::BufferUsages::STORAGE),
            grouping: None,
            grouped: Vec::new(),
            spheres: 0,
            boxes: 0,
            lines: Growing::new("outline", wgpu::BufferUsages::empty()),
            line_vertices: 0,
            depth: None,
            encode_srgb: !format.is_srgb(),
        }
    }

    /// The bodies (on the host) and the outline to draw from now on.
    pub fn upload(&mut self, device: &wgpu::Device, queue: &wgpu::Queue, bodies: &[Body], lines: &[LineVertex]) {
        let bodies = &bodies[..bodies.len().min(fit(device) as usize)];
        self.grouped.clear();
        self.grouped.extend(bodies.iter().filter(|b| b.shape == SPHERE));
        self.spheres = self.grouped.len() as u32;
        self.grouped.extend(bodies.iter().filter(|b| b.shape != SPHERE));
        self.boxes = self.grouped.len() as u32 - self.spheres;
        self.instances.write(device, queue, bytemuck::cast_slice(&self.grouped));
        self.set_lines(device, queue, lines);
    }

    /// The first `count` bodies of `bodies` (a wgpu engine's buffer on this
    /// device, `spheres` of them spheres) and the outline to draw from now
    /// on: grouped on the device, never read back.
    pub fn group_from(
        &mut self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        bodies: &wgpu::Buffer,
        count: u32,
        spheres: u32,
        lines: &[LineVertex],
    ) {
        let stride = size_of::<Body>() as u64;
        let n = count.min(fit(device)).min((bodies.size() / stride) as u32);
        if n > 0 {
            let instances = self.instances.reserve(device, n as u64 * stride).clone();
            let grouping = self.grouping.get_or_insert_with(|| Grouping::new(device));
            let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("bodies") });
            grouping.record(device, queue, &mut encoder, bodies, &instances, n, spheres.min(n));
            queue.submit([encoder.finish()]);
        }
        self.spheres = spheres.min(n);
        self.boxes = n - self.spheres;
        self.set_lines(device, queue, lines);
    }

    fn set_lines(&mut self, device: &wgpu::Device, queue: &wgpu::Queue, lines: &[LineVertex]) {
        self.lines.write(device, queue, bytemuck::cast_slice(lines));
        self.line_vertices = lines.len() as u32;
    }

    /// Makes the depth buffer match the target's size; before [`Self::draw`].
    pub fn prepare(&mut self, device: &wgpu::Device, queue: &wgpu::Queue, size: (u32, u32), frame: &SceneFrame) {
        if self.depth.as_ref().is_none_or(|(_, w, h)| (*w, *h) != size) {
            let texture = gpu::texture_2d(device, "collide depth", size, DEPTH, wgpu::TextureUsages::RENDER_ATTACHMENT);
            self.depth = Some((texture.create_view(&Default::default()), size.0, size.1));
        }
        let light = glam::Vec3::new(0.4, 1.0, 0.6).normalize();
        let u = SceneUniform {
            view_proj: frame.view_proj.to_cols_array_2d(),
            light: [light.x, light.y, light.z, 0.0],
            hot_speed: frame.hot_speed.max(1e-6),
            encode_srgb: u32::from(self.encode_srgb),
            pad: [0; 2],
        };
        queue.write_buffer(&self.uniform, 0, bytemuck::bytes_of(&u));
    }

    /// Clears `view` and draws the bodies and the outline into the frame's viewport.
    pub fn draw(&self, encoder: &mut wgpu::CommandEncoder, view: &wgpu::TextureView, frame: &SceneFrame) {
        let Some((depth, w, h)) = &self.depth else { return };
        let [r, g, b, a] = frame.background.map(f64::from);
        let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("collide"),
            color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                view,
                resolve_target: None,
                ops: wgpu::Operations {
                    load: wgpu::LoadOp::Clear(wgpu::Color { r, g, b, a }),
                    store: wgpu::StoreOp::Store,
                },
                depth_slice: None,
            })],
            depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                view: depth,
                depth_ops: Some(wgpu::Operations { load: wgpu::LoadOp::Clear(1.0), store: wgpu::StoreOp::Discard }),
                stencil_ops: None,
            }),
            timestamp_writes: None,
            occlusion_query_set: None,
            multiview_mask: None,
        });
        // The viewport must lie inside the target.
        let [x, y, vw, vh] = frame.viewport;
        let (x, y) = (x.clamp(0.0, *w as f32 - 1.0), y.clamp(0.0, *h as f32 - 1.0));
        let (vw, vh) = (vw.min(*w as f32 - x).max(1.0), vh.min(*h as f32 - y).max(1.0));
        pass.set_viewport(x, y, vw, vh, 0.0, 1.0);
        pass.set_bind_group(0, &self.bind_group, &[]);
        if let Some(instances) = &self.instances.buffer {
            pass.set_pipeline(&self.body_pipeline);
            let stride = size_of::<Body>() as u64;
            let lod = SPHERE_DETAIL.iter().filter(|n| self.spheres > **n).count();
            let sphere = &self.spheres_lod[lod];
            // Each mesh reads its run of the instance buffer through a slice:
            // a non-zero first instance is not available on every adapter.
            for (mesh, first, count) in [(sphere, 0, self.spheres), (&self.cube, self.spheres, self.boxes)] {
                if count == 0 {
                    continue;
                }
                let start = first as u64 * stride;
                pass.set_vertex_buffer(0, mesh.vertices.slice(..));
                pass.set_vertex_buffer(1, instances.slice(start..start + count as u64 * stride));
                pass.set_index_buffer(mesh.indices.slice(..), wgpu::IndexFormat::Uint16);
                pass.draw_indexed(0..mesh.count, 0, 0..count);
            }
        }
        if let (Some(lines), true) = (&self.lines.buffer, self.line_vertices > 0) {
            pass.set_pipeline(&self.line_pipeline);
            pass.set_vertex_buffer(0, lines.slice(..self.line_vertices as u64 * size_of::<LineVertex>() as u64));
            pass.draw(0..self.line_vertices, 0..1);
        }
    }
}

/// As many bodies as one buffer, and one storage binding of it, may hold
/// (millions even on small limits).
fn fit(device: &wgpu::Device) -> u32 {
    let l = device.limits();
    let bytes = l.max_buffer_size.min(l.max_storage_buffer_binding_size);
    (bytes / size_of::<Body>() as u64).min(u32::MAX as u64) as u32
}
