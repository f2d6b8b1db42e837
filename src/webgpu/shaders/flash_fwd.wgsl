// Flash attention forward (prefill): one workgroup per (batch, head, block of
// 64 queries), one query per invocation. Tiles of K and V pass through
// workgroup memory; each query keeps its running max m, its sum l and its
// output accumulator in registers (online softmax), so the [Sq, Sk] score
// matrix never exists. Preceded by flash_params, philox and flash_common.
// Runs where flash_fwd_tiled does not fit (head_dim not a multiple of 4, or
// too little workgroup storage).
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read> mask: array<f32>;
@group(0) @binding(5) var<storage, read_write> out: array<f32>;
@group(0) @binding(6) var<storage, read_write> lse: array<f32>;

const BQ: u32 = 64u;
const TILE_FLOATS: u32 = 2048u;  // p.tile * head_dim <= this
var<workgroup> ks: array<f32, TILE_FLOATS>;
var<workgroup> vs: array<f32, TILE_FLOATS>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let qtiles = (p.seq_q + BQ - 1u) / BQ;
  let w = wg.y * nwg.x + wg.x;
  let bh = w / qtiles;
  if (bh >= p.batch * p.heads) {
    return;
  }
  let b = bh / p.heads;
  let h = bh % p.heads;
  let g = h / (p.heads / p.kv_heads);
  let dim = HEAD_DIM;
  let i0 = (w % qtiles) * BQ;
  let i = i0 + lid;
  let live = i < p.seq_q;
  let iq = min(i, p.seq_q - 1u);

  var qr: array<f32, MAX_D>;   // q * scale
  var acc: array<f32, MAX_D>;  // sum of weight * v, rescaled as m grows
  let qbase = ((b * p.seq_q + iq) * p.heads + h) * dim;
  for (var d = 0u; d < dim; d++) {
    qr[d] = q[qbase + d] * p.scale;
    acc[d] = 0.0;
  }
  var m = NEG;
  var l = 0.0;
  let my_lo = key_lo(iq);
  let my_hi = key_hi(iq);
  // Keys any query of the block sees (key_lo and key_hi grow with i).
  let wg_lo = key_lo(i0);
  let wg_hi = key_hi(min(i0 + BQ, p.seq_q) - 1u);
  let kv_stride = p.kv_heads * dim;
  let kv_base = b * p.seq_k * kv_stride + g * dim;

  for (var t0 = wg_lo; t0 < wg_hi; t0 += p.tile) {
    let n = min(p.tile, wg_hi - t0);
    for (var e = lid; e < n * dim; e += 64u) {
      let src = kv_base + (t0 + e / dim) * kv_stride + e % dim;
      ks[e] = k[src];
      vs[e] = v[src];
    }
    workgroupBarrier();
    if (live) {
      let j_end = min(t0 + n, my_hi);
      for (var j = max(t0, my_lo); j < j_end; j++) {
        let off = (j - t0) * dim;
        var dot = 0.0;
        for (var d = 0u; d < dim; d++) {
          dot += qr[d] * ks[off + d];
        }
        let s = dot + mask_at(b, h, i, j);
        if (s <= MASKED) {
          continue;
        }
        if (s > m) {
          let c = exp(m - s);
          l *= c;
          for (var d = 0u; d < dim; d++) {
            acc[d] *= c;
          }
          m = s;
        }
        let e = exp(s - m);
        l += e;
        let wt = e * keep_factor(b, h, i, j);
        if (wt != 0.0) {
          for (var d = 0u; d < dim; d++) {
            acc[d] += wt * vs[off + d];
          }
        }
      }
    }
    workgroupBarrier();
  }

  if (live) {
    let obase = ((b * p.seq_q + i) * p.heads + h) * dim;
    let inv = select(0.0, 1.0 / l, l > 0.0);
    for (var d = 0u; d < dim; d++) {
      out[obase + d] = acc[d] * inv;
    }
    lse[bh * p.seq_q + i] = select(p.neg_inf, m + log(l), l > 0.0);
  }
}
