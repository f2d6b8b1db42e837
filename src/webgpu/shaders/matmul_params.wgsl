// Shared snippet (no entry point): the parameter block and bindings of the
// tiled matmul kernels (matmul.wgsl, matmul_vec4.wgsl), mirrored by
// MatmulParams in webgpu/matmul.cpp.
struct Params {
  m: u32,
  n: u32,
  k: u32,
  lda: u32,
  ldb: u32,
  a_batch_stride: u32,  // 0 broadcasts A over the batch
  b_batch_stride: u32,
  alpha: f32,
  has_bias: u32,
  ldc: u32,       // row stride of C (n for a dense result)
  c_offset: u32,  // elements of C before the first output
  a_offset: u32,  // elements of A before its first element
  // Batch item z as (outer, head) = (z / heads, z % heads): B's item at
  // outer * b_batch_stride + (head / b_group) * b_head_stride and C's at
  // c_offset + outer * c_batch_stride + head * c_head_stride (attention's
  // heads read and written token-major). heads = 1 for a plain batch.
  heads: u32,
  b_group: u32,
  b_head_stride: u32,
  c_batch_stride: u32,
  c_head_stride: u32,
  // matmul_pieces.wgsl: the tiles from split_from on are summed in `pieces`
  // k-ranges each.
  split_from: u32,
  pieces: u32,
  _pad0: u32,
}

// The first element of batch item z's B and C.
fn b_item(z: u32) -> u32 {
  let outer = z / p.heads;
  return outer * p.b_batch_stride + ((z - outer * p.heads) / p.b_group) * p.b_head_stride;
}
fn c_item(z: u32) -> u32 {
  let outer = z / p.heads;
  return p.c_offset + outer * p.c_batch_stride + (z - outer * p.heads) * p.c_head_stride;
}
