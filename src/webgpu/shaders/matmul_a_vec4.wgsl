// Shared snippet of matmul_vec4.wgsl: A read as vec4s, its contiguous dim,
// strides and offset multiples of 4.
@group(0) @binding(1) var<storage, read> A: array<vec4<f32>>;

// Logical A[row, col .. col + 3] (stored [m, k]) or A[row .. row + 3, col]
// (TRANS_A, stored [k, m]) as one vec4; zero past k. Element offsets are
// multiples of 4, so a vec4 is wholly inside or wholly outside. A row past m
// reads the last one (as load_b clamps columns): it feeds only outputs past m.
fn load_a(base: u32, row: u32, col: u32) -> vec4<f32> {
  if (!K_WHOLE && col >= p.k) {
    return vec4<f32>(0.0);
  }
  if (TRANS_A) {
    return A[(base + col * p.lda + min(row, p.m - 4u)) / 4u];
  }
  return A[(base + min(row, p.m - 1u) * p.lda + col) / 4u];
}
