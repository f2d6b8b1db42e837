// Shared snippet (no entry point) of the kernels that give each invocation
// one query row (flash_fwd.wgsl, flash_bwd_dq.wgsl): workgroup w of the grid
// holds queries [i0, i0 + BQ) of one (batch, head), and K and V pass through
// workgroup memory in tiles of p.tile rows. Needs flash_params.wgsl and
// flash_common.wgsl, and the kernel's `k` and `v` bindings.
const BQ: u32 = 64u;
const TILE_FLOATS: u32 = 2048u;  // p.tile * head_dim <= this
var<workgroup> ks: array<f32, TILE_FLOATS>;
var<workgroup> vs: array<f32, TILE_FLOATS>;

// The block of workgroup w (uniform across the workgroup, so loops with
// barriers may depend on it). bh is past the last (batch, head) for the
// grid's spare workgroups, which return.
struct QueryBlock {
  bh: u32,       // b * heads + h
  b: u32,
  h: u32,
  i0: u32,       // the block's first query; invocation lid holds query i0 + lid
  wg_lo: u32,    // keys any query of the block sees (key_lo and key_hi grow with i)
  wg_hi: u32,
  kv_base: u32,  // element of k and v where the block's batch and kv head start
}

fn query_block(w: u32) -> QueryBlock {
  let qtiles = (p.seq_q + BQ - 1u) / BQ;
  var r: QueryBlock;
  r.bh = w / qtiles;
  r.b = r.bh / p.heads;
  r.h = r.bh % p.heads;
  r.i0 = (w % qtiles) * BQ;
  r.wg_lo = key_lo(r.i0);
  r.wg_hi = key_hi(min(r.i0 + BQ, p.seq_q) - 1u);
  let g = r.h / (p.heads / p.kv_heads);
  r.kv_base = r.b * p.seq_k * p.kv_heads * HEAD_DIM + g * HEAD_DIM;
  return r;
}

// Stages keys and values [t0, t0 + n) of the row's kv head into ks and vs,
// row-major [n, HEAD_DIM]. Callers barrier before reading them.
fn stage_kv_rows(kv_base: u32, t0: u32, n: u32, lid: u32) {
  let kv_stride = p.kv_heads * HEAD_DIM;
  for (var e = lid; e < n * HEAD_DIM; e += BQ) {
    let src = kv_base + (t0 + e / HEAD_DIM) * kv_stride + e % HEAD_DIM;
    ks[e] = k[src];
    vs[e] = v[src];
  }
}
