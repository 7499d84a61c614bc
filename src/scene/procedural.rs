//! Built-in scenes, chosen by name, so the tracer runs anywhere and its scaling can be shown from
//! 32 to ten million triangles without downloading a model.
//!
//! The Cornell box is an OBJ asset compiled into the binary (`include_str!`, so it loads from any
//! working directory) and goes through the same loader as a user's file. The sphereflakes reuse its
//! room and light; their millions of triangles are written in parallel, straight into the scene's
//! arrays.

use glam::{Vec2, Vec3};
use rayon::prelude::*;

use super::{Camera, Material, MaterialKind, Scene, SceneError, geometric_normal, obj};

/// The built-in scenes: `(name, one-line description)`, the default first.
pub const BUILTINS: &[(&str, &str)] = &[
    ("cornell", "the Cornell box: red and green walls, two white boxes, an area light (32 triangles)"),
    (
        "sphereflake",
        "Haines' sphereflake, 5 levels of 9 children (7,381 spheres), in the Cornell room; \
         glossy, mirror, glass and diffuse levels (928,412 triangles)",
    ),
    ("sphereflake-10m", "the sphereflake with 6 levels (66,430 spheres) and finer spheres (10,480,412 triangles)"),
    (
        "furnace",
        "white-furnace test: a diffuse sphere of albedo 1 under a uniform sky of 1, no lights; \
         every pixel must come out 1 (5,120 triangles)",
    ),
];

const CORNELL_OBJ: &str = include_str!("../../assets/cornell.obj");
const CORNELL_MTL: &str = include_str!("../../assets/cornell.mtl");

/// The camera of the published Cornell box setup: 35 mm focal length on a 25 mm film, so a
/// vertical field of view of 2·atan(12.5 / 35) = 39.3°.
const CORNELL_CAMERA: Camera = Camera {
    position: Vec3::new(278.0, 273.0, -800.0),
    target: Vec3::new(278.0, 273.0, 0.0),
    up: Vec3::Y,
    vfov_deg: 39.3,
};

/// Icosphere subdivisions of each sphereflake level, root first; the level count follows.
/// Larger spheres get finer meshes so that every level looks round at the same screen size.
const SPHEREFLAKE_1M: &[u32] = &[5, 4, 3, 2, 1];
const SPHEREFLAKE_10M: &[u32] = &[7, 6, 5, 3, 2, 1];

/// Builds the built-in scene called `name` (see [`BUILTINS`]).
pub fn builtin(name: &str) -> Result<Scene, SceneError> {
    let mut scene = match name {
        "cornell" => cornell_room(&|_| true)?,
        "sphereflake" => sphereflake(SPHEREFLAKE_1M)?,
        "sphereflake-10m" => sphereflake(SPHEREFLAKE_10M)?,
        "furnace" => furnace(),
        _ => {
            let known = BUILTINS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ");
            return Err(SceneError::UnknownScene { name: name.to_owned(), known });
        }
    };
    scene.name = name.to_owned();
    Ok(scene)
}

/// The Cornell box asset with the objects `keep_object` accepts, seen by the original camera.
fn cornell_room(keep_object: &dyn Fn(&str) -> bool) -> Result<Scene, SceneError> {
    let mtl = obj::in_memory(&[("cornell.mtl", CORNELL_MTL)]);
    let mut scene = obj::parse("assets/cornell.obj", CORNELL_OBJ.as_bytes(), u64::MAX, &mtl, keep_object)?;
    scene.camera = CORNELL_CAMERA;
    scene.environment = Vec3::ZERO;
    Ok(scene)
}

/// One sphere of the flake; its children sit on the hemisphere around `axis`.
#[derive(Clone, Copy, Debug)]
struct Sphere {
    centre: Vec3,
    radius: f32,
    axis: Vec3,
}

/// The material of each sphereflake level, root first, so every kind of surface appears.
fn flake_material(level: usize) -> Material {
    let base = |name: &str, kind, albedo| Material { kind, ..Material::diffuse(name, albedo) };
    match level {
        0 => Material { roughness: 0.2, ..base("flake gold", MaterialKind::Glossy, Vec3::new(0.9, 0.7, 0.35)) },
        1 => base("flake mirror", MaterialKind::Mirror, Vec3::splat(0.95)),
        2 => Material { ior: 1.5, ..base("flake glass", MaterialKind::Glass, Vec3::ONE) },
        3 => base("flake blue", MaterialKind::Diffuse, Vec3::new(0.2, 0.35, 0.75)),
        4 => base("flake orange", MaterialKind::Diffuse, Vec3::new(0.85, 0.45, 0.15)),
        _ => base("flake white", MaterialKind::Diffuse, Vec3::splat(0.75)),
    }
}

/// Haines' sphereflake: each sphere carries nine spheres of a third its radius, touching it, six
/// around its equator and three above, and so on for `levels` levels. Returns the spheres level by
/// level. The whole flake fits in a ball of twice the root's radius.
fn sphereflake_spheres(root: Sphere, levels: usize) -> Vec<Vec<Sphere>> {
    let mut out = vec![vec![root]];
    while out.len() < levels {
        let parents = out.last().map_or(&[][..], Vec::as_slice);
        let children = parents.iter().flat_map(|s| flake_children(*s)).collect();
        out.push(children);
    }
    out
}

fn flake_children(parent: Sphere) -> [Sphere; 9] {
    let (t, b) = parent.axis.any_orthonormal_pair();
    let radius = parent.radius / 3.0;
    let around = |degrees: f32| {
        let (sin, cos) = degrees.to_radians().sin_cos();
        t * cos + b * sin
    };
    let (up_sin, up_cos) = 60f32.to_radians().sin_cos();
    std::array::from_fn(|k| {
        let axis = if k < 6 {
            around(60.0 * k as f32)
        } else {
            (around(30.0 + 120.0 * (k - 6) as f32) * up_cos + parent.axis * up_sin).normalize()
        };
        Sphere { centre: parent.centre + axis * (parent.radius + radius), radius, axis }
    })
}

/// The sphereflake standing on the floor of the Cornell room (without its boxes), with
/// `subdivisions[level]` icosphere subdivisions per level.
fn sphereflake(subdivisions: &[u32]) -> Result<Scene, SceneError> {
    let mut scene = cornell_room(&|object| !object.ends_with("_box"))?;
    let radius = 110.0;
    let root = Sphere { centre: Vec3::new(278.0, radius, 300.0), radius, axis: Vec3::Y };
    let levels = sphereflake_spheres(root, subdivisions.len());
    let meshes: Vec<Vec<[Vec3; 3]>> = subdivisions.iter().map(|&s| icosphere(s)).collect();
    let first_material = scene.materials.len() as u32;
    scene.materials.extend((0..levels.len()).map(flake_material));

    // Triangle i of the scene: the room's first, then level by level, sphere by sphere.
    let room = scene.triangles.len();
    let mut level_start = Vec::with_capacity(levels.len());
    let mut total = room;
    for (spheres, mesh) in levels.iter().zip(&meshes) {
        level_start.push(total);
        total += spheres.len() * mesh.len();
    }
    let locate = |i: usize| {
        let level = level_start.partition_point(|&start| start <= i) - 1;
        let mesh = &meshes[level];
        let j = i - level_start[level];
        (level, levels[level][j / mesh.len()], mesh[j % mesh.len()])
    };
    let (mut triangles, mut normals) = (Vec::new(), Vec::new());
    (0..total)
        .into_par_iter()
        .map(|i| {
            if i < room {
                return (scene.triangles[i], scene.normals[i]);
            }
            let (_, sphere, unit) = locate(i);
            // On a unit sphere the smooth normal is the position itself.
            (unit.map(|v| sphere.centre + sphere.radius * v), unit)
        })
        .unzip_into_vecs(&mut triangles, &mut normals);
    let mut material_of = Vec::new();
    (0..total)
        .into_par_iter()
        .map(|i| if i < room { scene.material_of[i] } else { first_material + locate(i).0 as u32 })
        .collect_into_vec(&mut material_of);
    scene.triangles = triangles;
    scene.normals = normals;
    scene.material_of = material_of;
    scene.uvs.resize(total, [Vec2::ZERO; 3]);
    Ok(scene)
}

/// The white-furnace test: nothing but a diffuse sphere of albedo exactly 1 under a sky of 1. Every
/// path ends in the sky with weight 1, so an unbiased tracer must return 1 in every pixel. The
/// sphere is flat-shaded (shading normal = geometric normal) so the test checks the integrator, not
/// the shading-normal corrections.
fn furnace() -> Scene {
    let triangles = icosphere(4);
    let normals = triangles.iter().map(|t| [geometric_normal(t).unwrap_or(Vec3::Y); 3]).collect();
    Scene {
        name: "furnace".to_owned(),
        material_of: vec![0; triangles.len()],
        uvs: vec![[Vec2::ZERO; 3]; triangles.len()],
        triangles,
        normals,
        materials: vec![Material::diffuse("furnace white", Vec3::ONE)],
        textures: Vec::new(),
        camera: Camera { position: Vec3::new(0.0, 0.0, 4.0), target: Vec3::ZERO, up: Vec3::Y, vfov_deg: 45.0 },
        environment: Vec3::ONE,
        skipped_triangles: 0,
        warnings: Vec::new(),
        sources: Vec::new(),
    }
}

/// The regular icosahedron both unit spheres start from (this scene's and
/// the collision viewer's mesh): its 12 corners, at distance
/// `sqrt(1 + φ²)` from the centre (each caller normalizes its own way), and
/// its 20 faces, wound counter-clockwise seen from outside.
pub fn icosahedron() -> ([[f32; 3]; 12], [[u16; 3]; 20]) {
    let p = (1.0 + 5f32.sqrt()) / 2.0;
    let corners = [
        [-1.0, p, 0.0],
        [1.0, p, 0.0],
        [-1.0, -p, 0.0],
        [1.0, -p, 0.0],
        [0.0, -1.0, p],
        [0.0, 1.0, p],
        [0.0, -1.0, -p],
        [0.0, 1.0, -p],
        [p, 0.0, -1.0],
        [p, 0.0, 1.0],
        [-p, 0.0, -1.0],
        [-p, 0.0, 1.0],
    ];
    let faces = [
        [0, 11, 5],
        [0, 5, 1],
        [0, 1, 7],
        [0, 7, 10],
        [0, 10, 11],
        [1, 5, 9],
        [5, 11, 4],
        [11, 10, 2],
        [10, 7, 6],
        [7, 1, 8],
        [3, 9, 4],
        [3, 4, 2],
        [3, 2, 6],
        [3, 6, 8],
        [3, 8, 9],
        [4, 9, 5],
        [2, 4, 11],
        [6, 2, 10],
        [8, 6, 7],
        [9, 8, 1],
    ];
    (corners, faces)
}

/// A unit sphere as 20·4^`subdivisions` triangles, wound counter-clockwise seen from outside:
/// the icosahedron with each triangle split in four and the new vertices pushed out to the sphere.
/// A shared edge's midpoint is computed from the same two vertices on both sides, so the mesh has
/// no cracks.
fn icosphere(subdivisions: u32) -> Vec<[Vec3; 3]> {
    let (corners, faces) = icosahedron();
    let v = corners.map(|c| Vec3::from(c).normalize());
    let mut triangles: Vec<[Vec3; 3]> = faces.iter().map(|f| f.map(|i| v[i as usize])).collect();
    for _ in 0..subdivisions {
        triangles = triangles
            .iter()
            .flat_map(|&[a, b, c]| {
                let mid = |x: Vec3, y: Vec3| (x + y).normalize();
                let (ab, bc, ca) = (mid(a, b), mid(b, c), mid(c, a));
                [[a, ab, ca], [b, bc, ab], [c, ca, bc], [ab, bc, ca]]
            })
            .collect();
    }
    triangles
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `1234567` as `1,234,567`, the way [`BUILTINS`] writes counts.
    fn thousands(n: usize) -> String {
        let digits = n.to_string();
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(c);
        }
        out
    }

    fn description(name: &str) -> &'static str {
        BUILTINS.iter().find(|(n, _)| *n == name).map(|(_, d)| *d).unwrap()
    }

    fn check_consistent(scene: &Scene) {
        let n = scene.triangles.len();
        assert_eq!((scene.normals.len(), scene.material_of.len()), (n, n));
        assert!(scene.material_of.iter().all(|&m| (m as usize) < scene.materials.len()));
        assert!(scene.triangles.iter().all(|t| geometric_normal(t).is_some()), "every triangle renderable");
        assert!(scene.normals.iter().flatten().all(|n| n.is_normalized()));
        assert!(description(&scene.name).contains(&format!("({} triangles)", thousands(n))), "{}", scene.name);
    }

    #[test]
    fn cornell_loads_with_its_light_and_materials() {
        let scene = builtin("cornell").unwrap();
        check_consistent(&scene);
        assert_eq!(scene.triangles.len(), 32);
        let names: Vec<&str> = scene.materials.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["white", "red", "green", "light"]);
        assert!(scene.materials.iter().all(|m| m.kind == MaterialKind::Diffuse));
        assert_eq!(scene.materials[3].emission, Vec3::new(17.0, 12.0, 4.0));
        assert_eq!(scene.emitters().len(), 2, "the light is one quad");
        assert_eq!(scene.camera, CORNELL_CAMERA);
        assert_eq!(scene.environment, Vec3::ZERO);
        assert!(scene.warnings.is_empty(), "{:?}", scene.warnings);
        let (min, max) = scene.bounds();
        assert_eq!((min, max), (Vec3::ZERO, Vec3::new(556.0, 548.8, 559.2)));
    }

    #[test]
    fn sphereflake_has_about_a_million_triangles_and_every_material_kind() {
        let scene = builtin("sphereflake").unwrap();
        check_consistent(&scene);
        assert!((800_000..=1_300_000).contains(&scene.triangles.len()), "{}", scene.triangles.len());
        for kind in [MaterialKind::Diffuse, MaterialKind::Mirror, MaterialKind::Glass, MaterialKind::Glossy] {
            assert!(scene.materials.iter().any(|m| m.kind == kind), "{kind:?} missing");
        }
        assert_eq!(scene.emitters().len(), 2);
        let (min, max) = scene.bounds();
        let (room_min, room_max) = builtin("cornell").unwrap().bounds();
        assert_eq!((min, max), (room_min, room_max), "the flake stays inside the room");
    }

    #[test]
    fn sphereflake_spheres_never_overlap() {
        let root = Sphere { centre: Vec3::ZERO, radius: 1.0, axis: Vec3::Y };
        let spheres: Vec<Sphere> = sphereflake_spheres(root, 4).concat();
        assert_eq!(spheres.len(), 1 + 9 + 81 + 729);
        for (i, a) in spheres.iter().enumerate() {
            for b in &spheres[i + 1..] {
                let gap = a.centre.distance(b.centre) - a.radius - b.radius;
                assert!(gap > -1e-4, "spheres {a:?} and {b:?} overlap by {}", -gap);
            }
        }
    }

    #[test]
    #[ignore = "builds 10 million triangles; run with --release --ignored"]
    fn sphereflake_10m_has_about_ten_million_triangles() {
        let start = std::time::Instant::now();
        let scene = builtin("sphereflake-10m").unwrap();
        eprintln!("sphereflake-10m: {} triangles in {:?}", scene.triangles.len(), start.elapsed());
        check_consistent(&scene);
        assert!((8_000_000..=13_000_000).contains(&scene.triangles.len()));
    }

    #[test]
    fn furnace_is_one_white_sphere_under_a_white_sky() {
        let scene = builtin("furnace").unwrap();
        check_consistent(&scene);
        assert_eq!(scene.materials.len(), 1);
        assert_eq!((scene.materials[0].kind, scene.materials[0].albedo), (MaterialKind::Diffuse, Vec3::ONE));
        assert!(scene.emitters().is_empty());
        assert_eq!(scene.environment, Vec3::ONE);
    }

    #[test]
    fn icosphere_faces_outwards_without_degenerate_triangles() {
        for s in 0..4 {
            let triangles = icosphere(s);
            assert_eq!(triangles.len(), 20 * 4usize.pow(s));
            for t in &triangles {
                let n = geometric_normal(t).unwrap();
                assert!(n.dot(t[0] + t[1] + t[2]) > 0.0, "{t:?} faces inwards");
            }
        }
    }

    #[test]
    fn unknown_builtin_lists_the_names() {
        let message = builtin("teapot").unwrap_err().to_string();
        assert!(message.contains("`teapot`"), "{message}");
        for (name, _) in BUILTINS {
            assert!(message.contains(name), "{message} should list {name}");
        }
        let message = super::super::load("nowhere/teapot.obj").unwrap_err().to_string();
        assert!(message.contains("nowhere/teapot.obj"), "{message}");
    }
}
