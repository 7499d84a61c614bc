//! tobj's meshes into the scene's per-triangle arrays, one array at a time.
//!
//! A large OBJ file's meshes, as tobj returns them, take about half the size of the scene built
//! from them (indices, and the vertices each mesh uses); holding both whole would peak at 1.5 times
//! the scene. So each of the scene's arrays is filled from every mesh in turn and the tobj arrays
//! it came from are freed before the next scene array is allocated.

use glam::{Vec2, Vec3};

use super::{Scene, SceneError, geometric_normal};

/// One tobj mesh on its way into the scene.
pub(super) struct Part {
    mesh: tobj::Mesh,
    material: u32,
    /// Whether the scene takes the mesh's normals and texture coordinates.
    has_normals: bool,
    has_uvs: bool,
    faces: usize,
    /// Its degenerate or non-finite faces, which the scene leaves out, in order.
    skipped: Vec<usize>,
}

impl Part {
    pub fn new(mesh: tobj::Mesh, material: u32, has_normals: bool, has_uvs: bool) -> Self {
        let faces = mesh.indices.len() / 3;
        Part { mesh, material, has_normals, has_uvs, faces, skipped: Vec::new() }
    }

    /// The faces the scene keeps, in order.
    fn kept(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.faces).filter(|face| self.skipped.binary_search(face).is_err())
    }
}

/// Moves tobj's meshes into the scene's per-triangle arrays one array at a time, freeing tobj's
/// arrays as each is moved: the scene (100 bytes a triangle) and all of tobj's meshes (about 50)
/// are never held at once, so a large file peaks near the scene's own size.
pub(super) fn fill_triangles(file: &str, scene: &mut Scene, mut parts: Vec<Part>) -> Result<(), SceneError> {
    let bad_index =
        || SceneError::Parse { file: file.to_owned(), what: "a face refers to a vertex that was not loaded".into() };
    scene.triangles.reserve_exact(parts.iter().map(|p| p.faces).sum());
    for part in &mut parts {
        let mesh = &part.mesh;
        for (face, idx) in mesh.indices.chunks_exact(3).enumerate() {
            let tri = [
                vec3(&mesh.positions, idx[0]).ok_or_else(bad_index)?,
                vec3(&mesh.positions, idx[1]).ok_or_else(bad_index)?,
                vec3(&mesh.positions, idx[2]).ok_or_else(bad_index)?,
            ];
            match geometric_normal(&tri) {
                Some(_) => scene.triangles.push(tri),
                None => part.skipped.push(face),
            }
        }
        scene.skipped_triangles += part.skipped.len();
        part.mesh.positions = Vec::new();
        part.mesh.indices = Vec::new();
    }

    let mut kept = 0;
    scene.normals.reserve_exact(scene.triangles.len());
    for part in &mut parts {
        let mesh = &part.mesh;
        for face in part.kept() {
            // Every triangle kept has a normal of its own.
            let n = geometric_normal(&scene.triangles[kept]).unwrap_or(Vec3::Z);
            kept += 1;
            let mut normals = [n; 3];
            if part.has_normals {
                for (k, normal) in normals.iter_mut().enumerate() {
                    let shading = vec3(&mesh.normals, mesh.normal_indices[3 * face + k]).ok_or_else(bad_index)?;
                    // A zero or broken normal in the file falls back to the face's own; a unit one
                    // stays as written (normalising it again may change its last bit).
                    if shading.is_finite() && (shading.length_squared() - 1.0).abs() <= 1e-6 {
                        *normal = shading;
                    } else if let Some(shading) = shading.try_normalize() {
                        *normal = shading;
                    }
                }
            }
            scene.normals.push(normals);
        }
        part.mesh.normals = Vec::new();
        part.mesh.normal_indices = Vec::new();
    }

    scene.uvs.reserve_exact(scene.triangles.len());
    for part in &mut parts {
        let mesh = &part.mesh;
        for face in part.kept() {
            let mut uvs = [Vec2::ZERO; 3];
            if part.has_uvs {
                for (k, uv) in uvs.iter_mut().enumerate() {
                    let i = 2 * mesh.texcoord_indices[3 * face + k] as usize;
                    let file_uv = mesh.texcoords.get(i..i + 2).map(Vec2::from_slice).ok_or_else(bad_index)?;
                    // A non-finite coordinate would make every texel lookup NaN.
                    if file_uv.is_finite() {
                        *uv = file_uv;
                    }
                }
            }
            scene.uvs.push(uvs);
        }
        part.mesh.texcoords = Vec::new();
        part.mesh.texcoord_indices = Vec::new();
    }

    scene.material_of.reserve_exact(scene.triangles.len());
    for part in &parts {
        scene.material_of.extend(std::iter::repeat_n(part.material, part.faces - part.skipped.len()));
    }
    Ok(())
}

fn vec3(data: &[f32], index: u32) -> Option<Vec3> {
    let i = 3 * index as usize;
    data.get(i..i + 3).map(Vec3::from_slice)
}
