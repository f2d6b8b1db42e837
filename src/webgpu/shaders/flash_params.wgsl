// Shared snippet (no entry point): the parameter block of every flash
// attention kernel (mirrored by FlashParams in webgpu/attention.cpp) and the
// constants they share. Layouts: q, out, grad_out [B, Sq, H, D]; k, v
// [B, Sk, Hkv, D]; lse [B, H, Sq]. flash_fwd_tiled and flash_bwd_scores read
// q, k and v at the token strides q_row / kv_row (columns of a joined
// projection); the other kernels are given them dense.
struct Params {
  batch: u32,
  seq_q: u32,
  seq_k: u32,
  heads: u32,
  kv_heads: u32,
  head_dim: u32,
  kv_offset: u32,   // position of query 0
  window: u32,      // 0 = unlimited
  causal: u32,
  has_mask: u32,
  mask_sb: u32,     // mask strides in elements; 0 broadcasts
  mask_sh: u32,
  mask_si: u32,
  mask_sj: u32,
  dropout: u32,
  threshold: u32,   // kept when the Philox word >= threshold
  k0: u32,          // the seed's low and high words
  k1: u32,
  scale: f32,
  drop_scale: f32,
  tile: u32,        // rows per workgroup-memory tile
  splits: u32,      // decode: key splits per query row
  split_len: u32,   // decode: keys per split
  neg_inf: f32,     // -inf, passed in (WGSL has no infinite literal)
  q_row: u32,       // elements between tokens of q / grad_q (heads * D when dense)
  kv_row: u32,      // of k, v and their gradients (kv_heads * D when dense)
  p_row: u32,      // flash_bwd_scores: elements between rows of P and dS (Sk made a multiple of 4)
  pad1: u32,
}

// head_dim (= Params.head_dim) as a pipeline constant, so that the loops
// over it have a fixed trip count the compiler can unroll, keeping the
// per-invocation rows in registers.
override HEAD_DIM: u32;
const MAX_D: u32 = 128u;        // largest HEAD_DIM: the register rows' size
const MASKED: f32 = -1e30;      // scores at or below are masked out
const NEG: f32 = -3.0e38;       // finite stand-in for -inf in running maxima
