//! From accumulated sums to the 8-bit image people look at: the one
//! definition of the display curve. Each pixel's mean radiance is clamped to
//! [0, 1] (no tone curve, so a furnace stays exactly white), sRGB-encoded and
//! rounded to 8 bits. The viewer shows these bytes as they are
//! (`shaders/display.wgsl`), `reap render` writes them as PNG, and
//! `kernels/trace/tonemap.cu` computes the same on the GPU so that the
//! viewer reads back 4 bytes a pixel instead of 16.
//!
//! Keep in sync with `kernels/trace/tonemap.cu`: the same operations in the
//! same order (that kernel is compiled without FMA contraction), so the two
//! differ at most where the GPU's `powf` rounds differently from the CPU's,
//! by one step of 255.

use rayon::prelude::*;

/// sRGB encoding of a linear value, clamped, rounded to 8 bits. A NaN gives 0.
#[inline]
pub fn srgb8(linear: f32) -> u8 {
    let c = linear.clamp(0.0, 1.0);
    let s = if c <= 0.0031308 { 12.92 * c } else { 1.055 * c.powf(1.0 / 2.4) - 0.055 };
    (s * 255.0 + 0.5) as u8
}

/// Mean radiance of one pixel's sum (A = samples); black before any sample.
#[inline]
pub fn mean(sum: [f32; 4]) -> [f32; 3] {
    // A reciprocal then products: the kernel computes it the same way.
    let w = if sum[3] > 0.0 { 1.0 / sum[3] } else { 0.0 };
    [sum[0] * w, sum[1] * w, sum[2] * w]
}

/// One pixel: `trace_tonemap` for one thread. Alpha is opaque.
#[inline]
pub fn trace_tonemap(sum: [f32; 4]) -> [u8; 4] {
    let [r, g, b] = mean(sum);
    [srgb8(r), srgb8(g), srgb8(b), 255]
}

/// Every pixel, in parallel: the CPU twin of the `trace_tonemap` launch.
/// `rgba` holds one entry per sum.
pub fn tonemap(sum: &[[f32; 4]], rgba: &mut [[u8; 4]]) {
    rgba.par_iter_mut().zip(sum).for_each(|(out, &s)| *out = trace_tonemap(s));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_curve_keeps_its_ends_and_its_linear_toe() {
        assert_eq!(srgb8(0.0), 0);
        assert_eq!(srgb8(-1.0), 0);
        assert_eq!(srgb8(f32::NAN), 0);
        assert_eq!(srgb8(1.0), 255);
        assert_eq!(srgb8(7.5), 255);
        assert_eq!(srgb8(f32::INFINITY), 255);
        // Linear toe: 12.92 * 0.003 * 255 = 9.88.
        assert_eq!(srgb8(0.003), 10);
        // Mid grey: 0.5 encodes to 0.7354, i.e. 188.
        assert_eq!(srgb8(0.5), 188);
        // Monotone over the whole range.
        let steps: Vec<u8> = (0..=4096).map(|i| srgb8(i as f32 / 4096.0)).collect();
        assert!(steps.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn pixels_are_means_of_their_sums_and_opaque() {
        // Four samples summing to (2, 0.5, 8): mean (0.5, 0.125, 2) clamps the blue.
        assert_eq!(trace_tonemap([2.0, 0.5, 8.0, 4.0]), [srgb8(0.5), srgb8(0.125), 255, 255]);
        // No sample yet: black, not NaN.
        assert_eq!(trace_tonemap([0.0; 4]), [0, 0, 0, 255]);
        let sums = vec![[1.0, 1.0, 1.0, 1.0], [0.0; 4], [3.0, 0.0, 0.0, 2.0]];
        let mut rgba = vec![[9u8; 4]; 3];
        tonemap(&sums, &mut rgba);
        assert_eq!(rgba, [[255, 255, 255, 255], [0, 0, 0, 255], [255, 0, 0, 255]]);
    }
}
