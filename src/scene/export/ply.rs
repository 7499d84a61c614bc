//! Binary little-endian PLY meshes, one per material, for the Mitsuba and pbrt exports (both read
//! the same layout: `x y z nx ny nz u v` per vertex, a `vertex_indices` list per face). Vertices
//! are shared where all eight floats are the same bits; triangles keep the scene's order and
//! winding. uvs are written as reap reads them (v up, as OBJ's); the Mitsuba file asks its loader
//! to flip them.

use std::collections::HashMap;

use super::{ExportError, Names, Output};
use crate::scene::Scene;

/// One material's mesh in the export.
pub(super) struct Mesh {
    pub material: usize,
    /// Its file inside the export folder.
    pub file: String,
}

/// `(material, meshes/NAME.ply)` for every material that has triangles, in material order.
pub(super) fn files(scene: &Scene, names: &Names) -> Vec<(usize, String)> {
    let mut used = vec![false; scene.materials.len()];
    for &m in &scene.material_of {
        used[m as usize] = true;
    }
    (0..used.len()).filter(|&m| used[m]).map(|m| (m, format!("meshes/{}.ply", names.materials[m]))).collect()
}

/// Stages the meshes [`files`] names; returns them in material order.
pub(super) fn write_meshes(scene: &Scene, names: &Names, out: &mut Output) -> Result<Vec<Mesh>, ExportError> {
    let mut by_material = vec![Vec::new(); scene.materials.len()];
    for (t, &m) in scene.material_of.iter().enumerate() {
        by_material[m as usize].push(t);
    }
    let mut meshes = Vec::new();
    for (material, file) in files(scene, names) {
        out.write(&file, &encode(scene, &by_material[material]))?;
        meshes.push(Mesh { material, file });
    }
    Ok(meshes)
}

/// The PLY file of `triangles` (indices into the scene).
fn encode(scene: &Scene, triangles: &[usize]) -> Vec<u8> {
    let mut index: HashMap<[u32; 8], u32> = HashMap::new();
    let mut vertices: Vec<[u32; 8]> = Vec::new();
    let mut faces = Vec::with_capacity(triangles.len());
    for &t in triangles {
        let face: [u32; 3] = std::array::from_fn(|k| {
            let (p, n, uv) = (scene.triangles[t][k], scene.normals[t][k], scene.uvs[t][k]);
            let bits = [p.x, p.y, p.z, n.x, n.y, n.z, uv.x, uv.y].map(f32::to_bits);
            *index.entry(bits).or_insert_with(|| {
                vertices.push(bits);
                vertices.len() as u32 - 1
            })
        });
        faces.push(face);
    }
    let header = format!(
        "ply\nformat binary_little_endian 1.0\ncomment written by reap scene export\n\
         element vertex {}\nproperty float x\nproperty float y\nproperty float z\n\
         property float nx\nproperty float ny\nproperty float nz\nproperty float u\nproperty float v\n\
         element face {}\nproperty list uchar int vertex_indices\nend_header\n",
        vertices.len(),
        faces.len()
    );
    let mut bytes = Vec::with_capacity(header.len() + 32 * vertices.len() + 13 * faces.len());
    bytes.extend_from_slice(header.as_bytes());
    for v in &vertices {
        for x in v {
            bytes.extend_from_slice(&x.to_le_bytes());
        }
    }
    for f in &faces {
        bytes.push(3);
        for i in f {
            bytes.extend_from_slice(&i.to_le_bytes());
        }
    }
    bytes
}
