// Shared snippet (no entry point): RMSNorm of a product's input rows applied
// as the rows are read, so a decode step needs no separate norm dispatch
// (matvec_vec4.wgsl, matvec_multi.wgsl). Each workgroup forms a row's sum of
// squares itself (k is a model's hidden size: a few thousand values, read
// from cache), then scales what it loads as rms_norm.wgsl rounds it:
// (x * r) * w with r = inverseSqrt(mean(x^2) + eps). NORM = 0: values as read.
// The kernel binds the norm's weight [k] as norm_w: array<vec4f>.
override NORM: u32 = 0u;
override NORM_EPS: f32 = 1e-5;

const NORM_WG: u32 = 256u;  // the workgroup size of the kernels that call norm_workgroup_sum
var<workgroup> norm_red: array<f32, NORM_WG>;

// The sum of v over the workgroup, returned to every invocation (uniform
// control flow only).
fn norm_workgroup_sum(v: f32, lid: u32) -> f32 {
  norm_red[lid] = v;
  workgroupBarrier();
  for (var s = NORM_WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) {
      norm_red[lid] += norm_red[lid + s];
    }
    workgroupBarrier();
  }
  let total = norm_red[0];
  workgroupBarrier();
  return total;
}

// A row's scale r from the sum of squares of its k values.
fn norm_scale(sum_sq: f32, k: u32) -> f32 {
  return inverseSqrt(sum_sq / f32(k) + NORM_EPS);
}

// Values 4i .. 4i + 3 of a row with scale r, normed.
fn normed(v: vec4f, r: f32, i: u32) -> vec4f {
  if (NORM == 0u) {
    return v;
  }
  return (v * r) * norm_w[i];
}
