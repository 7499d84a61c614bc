//! OBJ + MTL that reap's loader reads back to the same scene, so the export renders the same image
//! hash. Triangles keep the scene's order (light sampling and tie-breaks follow it), with a
//! `usemtl` wherever the material changes; positions, normals and uvs are each written once per
//! distinct bit pattern, in Rust's shortest round-trip form. Every material is written, in the
//! scene's order (their indices stay), mapped by the loader's table in reverse (see
//! `scene/obj.rs`). The camera and environment are `# reap:` directives, which other tools read
//! as comments.

use std::collections::HashMap;
use std::fmt::Write as _;

use super::{Names, xyz};
use crate::scene::{Material, MaterialKind, Scene};

/// Index (1-based, as OBJ counts) of each distinct value, in order of first use.
struct Pool<const N: usize> {
    index: HashMap<[u32; N], usize>,
    text: String,
}

impl<const N: usize> Pool<N> {
    fn new() -> Self {
        Pool { index: HashMap::new(), text: String::new() }
    }

    /// The value's index, writing `keyword values` the first time.
    fn add(&mut self, keyword: &str, values: [f32; N]) -> usize {
        let next = self.index.len() + 1;
        *self.index.entry(values.map(f32::to_bits)).or_insert_with(|| {
            self.text.push_str(keyword);
            for v in values {
                let _ = write!(self.text, " {v}");
            }
            self.text.push('\n');
            next
        })
    }
}

pub(super) fn obj(scene: &Scene, names: &Names) -> String {
    let (mut positions, mut uvs, mut normals) = (Pool::<3>::new(), Pool::<2>::new(), Pool::<3>::new());
    let mut faces = String::new();
    let mut current = None;
    for t in 0..scene.triangles.len() {
        let material = scene.material_of[t] as usize;
        if current != Some(material) {
            let _ = writeln!(faces, "usemtl {}", names.materials[material]);
            current = Some(material);
        }
        faces.push('f');
        for k in 0..3 {
            let v = positions.add("v", scene.triangles[t][k].to_array());
            let vt = uvs.add("vt", scene.uvs[t][k].to_array());
            let vn = normals.add("vn", scene.normals[t][k].to_array());
            let _ = write!(faces, " {v}/{vt}/{vn}");
        }
        faces.push('\n');
    }
    let c = &scene.camera;
    format!(
        "# {name}, written by `reap scene export`; `reap render --scene` loads it back to the same scene.\n\
         # reap: camera position {} target {} up {} vfov {}\n\
         # reap: environment {}\n\
         mtllib scene.mtl\n{}{}{}{faces}",
        xyz(c.position, " "),
        xyz(c.target, " "),
        xyz(c.up, " "),
        c.vfov_deg,
        xyz(scene.environment, " "),
        positions.text,
        uvs.text,
        normals.text,
        name = scene.name.replace(['\n', '\r'], " "),
    )
}

pub(super) fn mtl(scene: &Scene, names: &Names) -> String {
    let mut x = String::from(
        "# Written by `reap scene export`, for reap's loader (see its table in src/scene/obj.rs):\n\
         # illum 3 = mirror (Ks), illum 7 = glass (Tf, Ni), illum 2 with a black Kd = glossy (Ks, and\n\
         # Pr = the GGX alpha exactly; Ns is the same as Phong's exponent 2/alpha^2 - 2), else diffuse.\n",
    );
    for (m, name) in scene.materials.iter().zip(&names.materials) {
        let _ = writeln!(x, "\nnewmtl {name}\n{}", material(m, names));
        if m.emission != glam::Vec3::ZERO {
            let _ = writeln!(x, "Ke {}", xyz(m.emission, " "));
        }
    }
    x
}

/// The MTL statements that the loader maps back to `m` (emission aside).
fn material(m: &Material, names: &Names) -> String {
    let rgb = |v| xyz(v, " ");
    match m.kind {
        MaterialKind::Diffuse => match m.texture {
            Some(t) => format!("illum 1\nKd {}\nmap_Kd {}", rgb(m.albedo), names.textures[t.0 as usize]),
            None => format!("illum 1\nKd {}", rgb(m.albedo)),
        },
        MaterialKind::Mirror => format!("illum 3\nKs {}", rgb(m.albedo)),
        MaterialKind::Glass => format!("illum 7\nTf {}\nNi {}", rgb(m.albedo), m.ior),
        MaterialKind::Glossy => {
            let ns = 2.0 / (m.roughness * m.roughness) - 2.0;
            format!("illum 2\nKd 0 0 0\nKs {}\nNs {ns}\nPr {}", rgb(m.albedo), m.roughness)
        }
    }
}
