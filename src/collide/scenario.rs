//! The built-in scenarios: a falling pile, a rotating drum, a uniform gas and
//! bodies tumbling down a ramp (which shows rotation plainly), each sized from the body count and drawn from a seed, so one
//! (scenario, bodies, seed) always gives the same world and the same bodies.
//!
//! Bodies are spheres (radius U(0.35, 0.5)) and, about 30 % of them, boxes
//! (half extents U(0.25, 0.45), a uniformly random orientation), density 1.
//! They spawn by random sequential addition: each body is dropped at random
//! points of its scenario's spawn region until its bounding sphere misses
//! every one placed before (a uniform grid finds the neighbours), so no two
//! bodies start in contact and every body starts inside the walls (and the
//! drum). The regions are sized so that the bounding spheres fill at most a
//! quarter of them, well below where random addition jams.

use std::f32::consts::PI;
use std::str::FromStr;

use crate::collide::layout::{BOX, Body, SPHERE, World, numbered};
use crate::collide::{CollideError, CollideResult};

/// The most bodies a scenario builds (the engines index bodies and nodes with u32).
pub const MAX_BODIES: u32 = 1 << 24;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scenario {
    Pile,
    Drum,
    Gas,
    Ramp,
}

impl Scenario {
    pub const ALL: [Scenario; 4] = [Scenario::Pile, Scenario::Drum, Scenario::Gas, Scenario::Ramp];

    pub fn name(self) -> &'static str {
        match self {
            Scenario::Pile => "pile",
            Scenario::Drum => "drum",
            Scenario::Gas => "gas",
            Scenario::Ramp => "ramp",
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Scenario::Pile => "a column of bodies falls under gravity and settles on the floor, a few layers deep",
            Scenario::Drum => "a drum rotating about the z axis, about a third full, tumbles its bodies",
            Scenario::Gas => "bodies fly at random velocities in a closed box, no gravity, elastic collisions",
            Scenario::Ramp => "bodies drop onto a fixed inclined slab (body 0), roll and tumble down it onto the floor",
        }
    }
}

impl Scenario {
    /// The solver's default (substeps, passes per substep): 6 x 2, the
    /// cheapest setting in the README's sweep that keeps both the settled 3k
    /// pile within its penetration targets and a stack of ten boxes at rest
    /// (4 x 2 meets the pile's targets but leaves the stack trembling, 4 x 1
    /// and 8 x 1 leave boxes 15-28 % of a radius deep in the pile). With the
    /// coloured passes 6 x 1 and 4 x 2 keep the pile but let the stack drift
    /// (a box 1.2-1.3 cm sideways in 600 frames).
    pub fn solver(self) -> (u32, u32) {
        (6, 2)
    }
}

impl std::fmt::Display for Scenario {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Scenario {
    type Err = CollideError;
    fn from_str(s: &str) -> CollideResult<Self> {
        Scenario::ALL.into_iter().find(|c| c.name() == s).ok_or_else(|| {
            let names: Vec<_> = Scenario::ALL.iter().map(|c| c.name()).collect();
            CollideError::Settings(format!("--scenario: unknown scenario `{s}`; use one of: {}", names.join(", ")))
        })
    }
}

/// Sphere radii.
const RADIUS: (f32, f32) = (0.35, 0.5);
/// Box half extents, per axis.
const HALF: (f32, f32) = (0.25, 0.45);
/// The share of boxes.
const BOXES: f32 = 0.3;
/// The largest bounding radius of any body: a box of the largest half extents.
const MAX_BOUND: f32 = HALF.1 * 1.7320508;
/// The mean volume of a body's bounding sphere over the mix (0.7 spheres of
/// mean r³ 0.079, 0.3 boxes of mean |h|³ 0.232), rounded up.
const BOUND_VOLUME: f32 = 0.53;
/// The mean volume of a body (density 1: its mass).
const VOLUME: f32 = 0.335;
/// ω²R/g of the drum.
const DRUM_FROUDE: f32 = 0.2;
/// How much of a spawn region the bounding spheres fill at most.
const SPAWN_FILL: f32 = 0.25;
/// Tries per body before random addition gives up (at `SPAWN_FILL`, largest
/// first, the worst of a million bodies needs under 100).
const MAX_TRIES: u32 = 100_000;

/// The world and the bodies of scenario `s` with `bodies` bodies, drawn from `seed`.
pub fn build(s: Scenario, bodies: u32, seed: u64) -> CollideResult<(World, Vec<Body>)> {
    if bodies == 0 || bodies > MAX_BODIES {
        return Err(CollideError::Settings(format!("--bodies must be between 1 and {MAX_BODIES}, not {bodies}")));
    }
    let mut rng = fastrand::Rng::with_seed(seed);
    let n = bodies as f32;
    let shapes: Vec<Body> = (0..bodies).map(|_| shape(&mut rng)).collect();
    let (world, region) = match s {
        Scenario::Pile => pile(n),
        Scenario::Drum => drum(n),
        Scenario::Gas => gas(n),
        // On a lattice over the slope, not by random addition: the ramp is
        // one body far larger than the spawn grid's cells.
        Scenario::Ramp => {
            let (world, bodies) = ramp(shapes, &mut rng);
            return Ok((world, numbered(&bodies)));
        }
    };
    let mut bodies = place(shapes, &world, region, &mut rng)?;
    if s == Scenario::Gas {
        for b in &mut bodies {
            // Uniform in a ball of radius 2 m/s.
            b.vel = loop {
                let v = [rng.f32() * 2.0 - 1.0, rng.f32() * 2.0 - 1.0, rng.f32() * 2.0 - 1.0];
                if v[0] * v[0] + v[1] * v[1] + v[2] * v[2] <= 1.0 {
                    break [2.0 * v[0], 2.0 * v[1], 2.0 * v[2]];
                }
            };
        }
    }
    Ok((world, numbered(&bodies)))
}

/// Where a scenario spawns its bodies.
#[derive(Clone, Copy, Debug)]
enum Region {
    /// An axis-aligned box.
    Cuboid { min: [f32; 3], max: [f32; 3] },
    /// The drum's inside: a cylinder about z through (x, y), z in [z0, z1].
    Cylinder { x: f32, y: f32, radius: f32, z0: f32, z1: f32 },
}

/// The world box and the solver's constants shared by every scenario.
pub(crate) fn world(min: [f32; 3], max: [f32; 3]) -> World {
    World {
        min,
        dt: 1.0 / 60.0,
        max,
        restitution: 0.2,
        gravity: [0.0, -9.81, 0.0],
        friction: 0.4,
        inv_extent: [1.0 / (max[0] - min[0]), 1.0 / (max[1] - min[1]), 1.0 / (max[2] - min[2])],
        slop: 0.002,
        // The whole depth each pass: the mass split keeps the pushes of a
        // body's contacts from adding up past it (0.5 left a settled 10k pile
        // 0.05 r deep at its deepest contact).
        baumgarte: 1.0,
        drum_radius: 0.0,
        drum_x: 0.0,
        drum_y: 0.0,
        drum_omega: 0.0,
        static_friction: 0.6,
        // Twice what gravity adds in a step: a body resting under gravity does not bounce.
        rest_speed: 2.0 * 9.81 / 60.0,
        // Over-relaxes the Jacobi step of a body in many contacts by up to
        // 1 / 0.6: with Tonge's split (1) a stack of 10 boxes sinks 0.16 in
        // 600 frames at 8 passes, with 0.6 not measurably.
        split: 0.6,
        margin: 0.02,
        bounce_passes: 1,
        colours: 16,
        contact_hertz: 0.0,
    }
}

/// A floor W x W at y = 0, sized so that the settled pile is a few layers
/// deep (4 at 1k bodies, 8 from 30k on: W grows like the cube root in between,
/// like the square root above); the bodies spawn in a column over the middle
/// 80 % of it.
fn pile(n: f32) -> (World, Region) {
    // A settled layer of these bodies is ~0.85 high and holds one per ~0.7 of floor.
    let layers = (n.cbrt() / 2.5).clamp(2.0, 8.0);
    let width = (n * 0.7 / layers).sqrt().max(4.0);
    let column = 0.8 * width;
    let height = spawn_depth(n, column, column);
    let top = height + 1.0;
    let w = world([-0.5 * width, 0.0, -0.5 * width], [0.5 * width, top, 0.5 * width]);
    let region = Region::Cuboid { min: [-0.5 * column, 0.0, -0.5 * column], max: [0.5 * column, height, 0.5 * column] };
    (w, region)
}

/// The spawn height over a `w` x `d` footprint for `n` bodies at `SPAWN_FILL`,
/// counting the margin of one bounding radius that no centre may enter.
fn spawn_depth(n: f32, w: f32, d: f32) -> f32 {
    let inner = (w - 2.0 * MAX_BOUND) * (d - 2.0 * MAX_BOUND);
    n * BOUND_VOLUME / (SPAWN_FILL * inner) + 2.0 * MAX_BOUND
}

/// A drum of radius R and length R about the z axis, sized so that the
/// bodies, settled, fill about a third of it; they spawn spread over all of
/// it. It turns at the speed that tumbles its bed (`DRUM_FROUDE`).
fn drum(n: f32) -> (World, Region) {
    // The smallest R whose inside (less the bounding margin) holds the bodies
    // at `SPAWN_FILL`; settled at ~0.6 packing they then take ~30 % of the drum.
    let holds = |r: f32| PI * (r - MAX_BOUND).powi(2) * (r - 2.0 * MAX_BOUND) * SPAWN_FILL >= n * BOUND_VOLUME;
    let mut r: f32 = 3.0;
    while !holds(r) {
        r *= 1.05;
    }
    let mut w = world([-r, -r, 0.0], [r, r, r]);
    w.drum_radius = r;
    // Froude number ω²R/g = 0.2: the bed tumbles and cascades. Near 1 it
    // would centrifuge (ω = 1 rad/s does so from R = 10 m on).
    w.drum_omega = (DRUM_FROUDE * 9.81 / r).sqrt();
    (w, Region::Cylinder { x: 0.0, y: 0.0, radius: r, z0: 0.0, z1: r })
}

/// A cube holding the bodies at a 10 % volume fraction; no gravity, elastic,
/// frictionless.
fn gas(n: f32) -> (World, Region) {
    let inner = (n * BOUND_VOLUME / SPAWN_FILL).cbrt() + 2.0 * MAX_BOUND;
    let side = (n * VOLUME / 0.1).cbrt().max(inner).max(4.0);
    let mut w = world([0.0; 3], [side; 3]);
    w.gravity = [0.0; 3];
    w.restitution = 1.0;
    w.friction = 0.0;
    w.static_friction = 0.0;
    w.rest_speed = 0.0;
    w.bounce_passes = 8;
    (w, Region::Cuboid { min: [0.0; 3], max: [side; 3] })
}

/// The ramp's slope (about 26°: spheres roll, boxes tip and slide) and its half thickness.
const RAMP_SLOPE: f32 = 0.45;
const RAMP_HALF: f32 = 0.3;
/// The lattice step of the bodies over the ramp: two of the largest
/// bounding radii and a gap, so that no two start in contact even jittered
/// by up to `RAMP_JITTER`.
const RAMP_STEP: f32 = 2.0 * MAX_BOUND + 0.1;
const RAMP_JITTER: f32 = 0.04;
/// The most lattice rows along the slope, which caps the speeds: at 28 the
/// slope drops ~29 m, and a body sliding all of it reaches ~24 m/s (0.4 m a
/// frame), what the fall through the pile's spawn column reaches at 100k
/// bodies. More bodies go into layers and width instead.
const RAMP_MAX_ALONG: u32 = 28;
/// The most layers over the slope (the top one falls ~17 m onto the rest).
const RAMP_MAX_LAYERS: f32 = 10.0;

/// Body 0 is a fixed box (inverse mass 0) tilted by `RAMP_SLOPE` about z,
/// descending towards +x from the low x wall onto the floor; the other
/// bodies (`shapes` from the second on) wait on a lattice above its upper
/// part and fall onto it at the first frame. The lattice grows in every
/// direction with the body count: more layers (up to `RAMP_MAX_LAYERS`) and
/// a square footprint (as many rows along the slope as across it) until the
/// slope reaches `RAMP_MAX_ALONG` rows; beyond that the ramp only widens
/// along z. The floor runs on past the ramp's foot, as far as the slope is
/// long, so that the bodies come to rest there (rolling spheres reach the
/// far wall anyway; a longer floor would only shrink the ramp in the
/// viewer's overview of the world).
fn ramp(mut shapes: Vec<Body>, rng: &mut fastrand::Rng) -> (World, Vec<Body>) {
    let m = shapes.len() as u32 - 1;
    let layers = ((m as f32).cbrt() / 2.5).ceil().clamp(1.0, RAMP_MAX_LAYERS) as u32;
    let per_layer = m.div_ceil(layers).max(1);
    let along = ((per_layer as f32).sqrt().ceil() as u32).clamp(1, RAMP_MAX_ALONG);
    let across = per_layer.div_ceil(along);
    let (sin, cos) = RAMP_SLOPE.sin_cos();
    // The slope's horizontal run: the lattice, a margin above it and a quarter more below.
    let run = 1.25 * along as f32 * RAMP_STEP + 2.0;
    let half_len = 0.5 * run / cos;
    let ext = [half_len * cos + RAMP_HALF * sin, half_len * sin + RAMP_HALF * cos];
    let width = across as f32 * RAMP_STEP + 1.0;
    let centre = [0.01 + ext[0], 0.001 + ext[1], 0.5 * width];
    let foot = centre[0] + ext[0];
    // The top face's height over x.
    let surface = |x: f32| centre[1] + RAMP_HALF / cos - (x - centre[0]) * sin / cos;
    // A bounding sphere clears the top face (measured square to it) by 0.05.
    let clear = (MAX_BOUND + 0.05) / cos;
    let x0 = 0.01 + 2.0 * RAMP_HALF * sin + MAX_BOUND + 0.5;
    let top = surface(x0) + clear + layers as f32 * RAMP_STEP + 1.0;
    let w = world([0.0; 3], [foot + run.max(6.0), top, width]);
    let half = RAMP_SLOPE * 0.5;
    shapes[0] = Body {
        pos: centre,
        shape: BOX,
        half: [half_len, RAMP_HALF, 0.5 * width - 0.01],
        rot: [0.0, 0.0, -half.sin(), half.cos()],
        ..Body::default()
    };
    let mut jitter = || RAMP_JITTER * (2.0 * rng.f32() - 1.0);
    for (k, b) in shapes[1..].iter_mut().enumerate() {
        let k = k as u32;
        let (layer, i, j) = (k / (along * across), k / across % along, k % across);
        let x = x0 + (i as f32 + 0.5) * RAMP_STEP + jitter();
        let y = surface(x) + clear + layer as f32 * RAMP_STEP;
        b.pos = [x, y, 0.5 + (j as f32 + 0.5) * RAMP_STEP + jitter()];
    }
    (w, shapes)
}

/// A sphere or a box at the origin, at rest, mass from its volume.
fn shape(rng: &mut fastrand::Rng) -> Body {
    let u = |rng: &mut fastrand::Rng, (lo, hi): (f32, f32)| lo + (hi - lo) * rng.f32();
    let mut b = Body {
        pos: [0.0; 3],
        shape: SPHERE,
        vel: [0.0; 3],
        inv_mass: 0.0,
        half: [0.0; 3],
        id: 0,
        rot: [0.0, 0.0, 0.0, 1.0],
        omega: [0.0; 3],
        pad2: 0.0,
    };
    if rng.f32() < BOXES {
        b.shape = BOX;
        b.half = [u(rng, HALF), u(rng, HALF), u(rng, HALF)];
        b.rot = random_rotation(rng);
        b.inv_mass = 1.0 / (8.0 * b.half[0] * b.half[1] * b.half[2]);
    } else {
        let r = u(rng, RADIUS);
        b.half = [r; 3];
        b.inv_mass = 1.0 / (4.0 / 3.0 * PI * r * r * r);
    }
    b
}

/// A uniformly distributed unit quaternion (Shoemake 1992).
fn random_rotation(rng: &mut fastrand::Rng) -> [f32; 4] {
    let (u1, u2, u3) = (rng.f64(), rng.f64() * std::f64::consts::TAU, rng.f64() * std::f64::consts::TAU);
    let (a, b) = ((1.0 - u1).sqrt(), u1.sqrt());
    let q = [a * u2.sin(), a * u2.cos(), b * u3.sin(), b * u3.cos()];
    let len = q.iter().map(|x| x * x).sum::<f64>().sqrt();
    q.map(|x| (x / len) as f32)
}

/// The radius of a sphere around the body's centre that holds it.
fn bound(b: &Body) -> f32 {
    if b.shape == SPHERE {
        b.half[0]
    } else {
        (b.half[0] * b.half[0] + b.half[1] * b.half[1] + b.half[2] * b.half[2]).sqrt()
    }
}

/// Random sequential addition: each body at the first random point of the
/// region (shrunk by its bounding radius) where its bounding sphere misses
/// those of the bodies placed so far.
///
/// The region is filled slab by slab along z, each slab taking its share of
/// the bodies: the neighbours a try looks at are then the last few thousand
/// placed, which stay in cache (a million bodies spawn in about a second
/// rather than half a minute). The z range keeps the largest bounding radius
/// from the walls so that every slab has the same volume.
fn place(mut bodies: Vec<Body>, w: &World, region: Region, rng: &mut fastrand::Rng) -> CollideResult<Vec<Body>> {
    let n = bodies.len();
    let cell = 2.0 * MAX_BOUND;
    let dims: [usize; 3] = std::array::from_fn(|k| (((w.max[k] - w.min[k]) / cell).ceil() as usize).max(1));
    // Cell lists as linked lists: head per cell (z major), next per body.
    let mut head = vec![u32::MAX; dims[0] * dims[1] * dims[2]];
    let mut next = vec![u32::MAX; n];
    // Centre and bounding radius of every body placed so far.
    let mut spheres = vec![[0.0f32; 4]; n];
    let cell_of = |p: [f32; 3]| -> [usize; 3] {
        std::array::from_fn(|k| (((p[k] - w.min[k]) / cell).max(0.0) as usize).min(dims[k] - 1))
    };
    let index = |x: usize, y: usize, z: usize| (z * dims[1] + y) * dims[0] + x;
    let (z0, z1) = match region {
        Region::Cuboid { min, max } => (min[2], max[2]),
        Region::Cylinder { z0, z1, .. } => (z0, z1),
    };
    let (lo, hi) = (z0 + MAX_BOUND, (z1 - MAX_BOUND).max(z0 + MAX_BOUND));
    let slabs = (((hi - lo) / (2.0 * cell)) as usize).max(1);
    for t in 0..slabs {
        let (a, b) = (lo + (hi - lo) * t as f32 / slabs as f32, lo + (hi - lo) * (t + 1) as f32 / slabs as f32);
        // The largest first: small bodies still find room in the gaps they leave.
        let mut order: Vec<usize> = (n * t / slabs..n * (t + 1) / slabs).collect();
        order.sort_by(|&i, &j| bound(&bodies[j]).total_cmp(&bound(&bodies[i])).then(i.cmp(&j)));
        for i in order {
            let r = bound(&bodies[i]);
            let mut placed = false;
            for _ in 0..MAX_TRIES {
                let mut p = sample(region, r, rng);
                p[2] = a + (b - a) * rng.f32();
                let c = cell_of(p);
                let mut free = true;
                'search: for z in c[2].saturating_sub(1)..(c[2] + 2).min(dims[2]) {
                    for y in c[1].saturating_sub(1)..(c[1] + 2).min(dims[1]) {
                        for x in c[0].saturating_sub(1)..(c[0] + 2).min(dims[0]) {
                            let mut j = head[index(x, y, z)];
                            while j != u32::MAX {
                                let o = spheres[j as usize];
                                let d = [o[0] - p[0], o[1] - p[1], o[2] - p[2]];
                                let reach = r + o[3];
                                if d[0] * d[0] + d[1] * d[1] + d[2] * d[2] <= reach * reach {
                                    free = false;
                                    break 'search;
                                }
                                j = next[j as usize];
                            }
                        }
                    }
                }
                if free {
                    bodies[i].pos = p;
                    spheres[i] = [p[0], p[1], p[2], r];
                    let slot = index(c[0], c[1], c[2]);
                    next[i] = head[slot];
                    head[slot] = i as u32;
                    placed = true;
                    break;
                }
            }
            if !placed {
                return Err(CollideError::Settings(format!(
                    "could not place body {i} of {n} without overlap: the spawn region is too full"
                )));
            }
        }
    }
    Ok(bodies)
}

/// A uniform point of the region at least `margin` inside its walls (z is
/// drawn again by the caller, per slab).
fn sample(region: Region, margin: f32, rng: &mut fastrand::Rng) -> [f32; 3] {
    let u = |rng: &mut fastrand::Rng, lo: f32, hi: f32| lo + margin + (hi - lo - 2.0 * margin) * rng.f32();
    match region {
        Region::Cuboid { min, max } => [u(rng, min[0], max[0]), u(rng, min[1], max[1]), 0.0],
        Region::Cylinder { x, y, radius, .. } => {
            let rho = (radius - margin) * rng.f32().sqrt();
            let phi = std::f32::consts::TAU * rng.f32();
            [x + rho * phi.cos(), y + rho * phi.sin(), 0.0]
        }
    }
}
