// Shared snippet of matmul_vec4.wgsl: A read as vec4s, its row stride,
// batch stride and offset multiples of 4, and its contiguous dim too unless
// A_TAIL.
@group(0) @binding(1) var<storage, read> A: array<vec4<f32>>;

// A's contiguous dim (k, or m with TRANS_A) is no multiple of 4 while its
// row stride leaves room for whole vec4s (the LM head's logit gradient in
// rows padded to whole vec4s): a row's last vec4 runs into that room. Its
// lanes past k read as zero; with TRANS_A they are rows past m, which feed
// only outputs that are not stored.
override A_TAIL: bool = false;

// Logical A[row, col .. col + 3] (stored [m, k]) or A[row .. row + 3, col]
// (TRANS_A, stored [k, m]) as one vec4; zero past k. Element offsets are
// multiples of 4, so a vec4 is wholly inside or wholly outside (or, with
// A_TAIL, the row's last). A row past m reads the last one (as load_b
// clamps columns): it feeds only outputs past m.
fn load_a(base: u32, row: u32, col: u32) -> vec4<f32> {
  if (!K_WHOLE && col >= p.k) {
    return vec4<f32>(0.0);
  }
  if (TRANS_A) {
    let last = select(p.m - 4u, (p.m - 1u) & ~3u, A_TAIL);  // the last whole vec4's first row
    return A[(base + col * p.lda + min(row, last)) / 4u];
  }
  let v = A[(base + min(row, p.m - 1u) * p.lda + col) / 4u];
  if (A_TAIL) {
    return select(v, vec4<f32>(0.0), vec4<u32>(col) + vec4<u32>(0u, 1u, 2u, 3u) >= vec4<u32>(p.k));
  }
  return v;
}
