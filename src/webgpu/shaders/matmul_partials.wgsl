// Shared snippet of the passes that add a matmul's partial sums and store C
// (matmul_split_k.wgsl, matmul_pieces_fixup.wgsl): their parameter block,
// mirrored by PartialsParams in webgpu/matmul.cpp, and their bindings but
// the partial sums'. The partials hold alpha already; the epilogues are
// matmul_epilogue.wgsl's.
override GELU: bool = false;
override RESIDUAL: bool = false;
override ACCUMULATE: bool = false;
struct Params {
  m: u32,
  n: u32,
  splits: u32,      // partial sums of an output (k-slices, or pieces of a tile)
  has_bias: u32,
  ldc: u32,         // row stride of C
  c_offset: u32,    // elements of C before the first output
  split_from: u32,  // matmul_pieces_fixup.wgsl: the first tile summed in pieces
  _pad0: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(2) var<storage, read> bias: array<f32>;
@group(0) @binding(3) var<storage, read_write> C: array<f32>;
@group(0) @binding(4) var<storage, read> R: array<f32>;  // C's shape (RESIDUAL), else unused
