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
}
