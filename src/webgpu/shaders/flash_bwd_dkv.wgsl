// Flash attention backward, pass 3: grad_k and grad_v. One workgroup per
// (batch, KV head, block of 64 keys), one key per invocation; it loops over
// every query head sharing the KV head and over tiles of their queries (q,
// grad_out and the (lse, delta) pairs through workgroup memory), so the GQA
// sum happens in registers: deterministic, no atomics.
//   dv_j = sum P z dO_i,   dk_j = scale * sum dS q_i
// Preceded by flash_params, philox and flash_common.
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read> mask: array<f32>;
@group(0) @binding(5) var<storage, read> dout: array<f32>;
@group(0) @binding(6) var<storage, read> stats: array<f32>;  // [B, H, Sq, 2]: lse, delta
@group(0) @binding(7) var<storage, read_write> dk: array<f32>;
@group(0) @binding(8) var<storage, read_write> dv: array<f32>;

const BK: u32 = 64u;
const TILE_FLOATS: u32 = 1984u;  // two tiles and the stats fit 16 KiB
var<workgroup> qs: array<f32, TILE_FLOATS>;
var<workgroup> ds_: array<f32, TILE_FLOATS>;
var<workgroup> st: array<f32, 128>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let ktiles = (p.seq_k + BK - 1u) / BK;
  let w = wg.y * nwg.x + wg.x;
  let bg = w / ktiles;
  if (bg >= p.batch * p.kv_heads) {
    return;
  }
  let b = bg / p.kv_heads;
  let g = bg % p.kv_heads;
  let group = p.heads / p.kv_heads;
  let dim = HEAD_DIM;
  let j0 = (w % ktiles) * BK;
  let j = j0 + lid;
  let live = j < p.seq_k;
  let jk = min(j, p.seq_k - 1u);
  let j_last = min(j0 + BK, p.seq_k) - 1u;

  var kr: array<f32, MAX_D>;  // k * scale
  var vr: array<f32, MAX_D>;
  var gk: array<f32, MAX_D>;
  var gv: array<f32, MAX_D>;
  let kbase = ((b * p.seq_k + jk) * p.kv_heads + g) * dim;
  for (var d = 0u; d < dim; d++) {
    kr[d] = k[kbase + d] * p.scale;
    vr[d] = v[kbase + d];
    gk[d] = 0.0;
    gv[d] = 0.0;
  }
  // Queries that can see a key of the block: causal needs pos(i) >= j0,
  // a window needs pos(i) < j_last + window.
  var i_lo = 0u;
  if (p.causal != 0u && j0 > p.kv_offset) {
    i_lo = j0 - p.kv_offset;
  }
  var i_hi = p.seq_q;
  if (p.window != 0u) {
    i_hi = select(0u, min(p.seq_q, j_last + p.window - p.kv_offset), j_last + p.window > p.kv_offset);
  }
  let q_stride = p.heads * dim;

  for (var hh = 0u; hh < group; hh++) {
    let h = g * group + hh;
    let bh = b * p.heads + h;
    for (var t0 = i_lo; t0 < i_hi; t0 += p.tile) {
      let n = min(p.tile, i_hi - t0);
      for (var e = lid; e < n * dim; e += 64u) {
        let src = (b * p.seq_q + t0 + e / dim) * q_stride + h * dim + e % dim;
        qs[e] = q[src];
        ds_[e] = dout[src];
      }
      for (var e = lid; e < 2u * n; e += 64u) {
        st[e] = stats[2u * (bh * p.seq_q + t0) + e];
      }
      workgroupBarrier();
      if (live) {
        for (var t = 0u; t < n; t++) {
          let i = t0 + t;
          if (j < key_lo(i) || j >= key_hi(i)) {
            continue;
          }
          let off = t * dim;
          var dot = 0.0;
          var dpd = 0.0;
          for (var d = 0u; d < dim; d++) {
            dot += qs[off + d] * kr[d];
            dpd += ds_[off + d] * vr[d];
          }
          let s = dot + mask_at(b, h, i, j);
          if (s <= MASKED) {
            continue;
          }
          let pr = exp(s - st[2u * t]);
          let z = keep_factor(b, h, i, j);
          let dsc = pr * (dpd * z - st[2u * t + 1u]);
          let pz = pr * z;
          for (var d = 0u; d < dim; d++) {
            gv[d] += pz * ds_[off + d];
            gk[d] += dsc * qs[off + d];
          }
        }
      }
      workgroupBarrier();
    }
  }

  if (live) {
    let obase = ((b * p.seq_k + j) * p.kv_heads + g) * dim;
    for (var d = 0u; d < dim; d++) {
      dk[obase + d] = gk[d] * p.scale;
      dv[obase + d] = gv[d];
    }
  }
}
