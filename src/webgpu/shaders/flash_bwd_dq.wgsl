// Flash attention backward, pass 2: grad_q. One workgroup per (batch, head,
// block of 64 queries), one query per invocation; K and V tiles through
// workgroup memory as in the forward. P is recomputed from lse:
//   P = exp(s - lse), dS = P (dO.v * z - delta), dq = scale * sum_j dS k_j
// with z the dropout factor. Preceded by flash_params, philox, flash_common, flash_rows.
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read> mask: array<f32>;
@group(0) @binding(5) var<storage, read> dout: array<f32>;
@group(0) @binding(6) var<storage, read> stats: array<f32>;  // [B, H, Sq, 2]: lse, delta
@group(0) @binding(7) var<storage, read_write> dq: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let blk = query_block(wg.y * nwg.x + wg.x);
  if (blk.bh >= p.batch * p.heads) {
    return;
  }
  let b = blk.b;
  let h = blk.h;
  let bh = blk.bh;
  let dim = HEAD_DIM;
  let i = blk.i0 + lid;
  let live = i < p.seq_q;
  let iq = min(i, p.seq_q - 1u);

  var qr: array<f32, MAX_D>;   // q * scale
  var dor: array<f32, MAX_D>;  // grad_out row
  var acc: array<f32, MAX_D>;  // sum_j dS k_j
  let qbase = ((b * p.seq_q + iq) * p.heads + h) * dim;
  for (var d = 0u; d < dim; d++) {
    qr[d] = q[qbase + d] * p.scale;
    dor[d] = dout[qbase + d];
    acc[d] = 0.0;
  }
  let lse_i = stats[2u * (bh * p.seq_q + iq)];
  let delta = stats[2u * (bh * p.seq_q + iq) + 1u];
  let my_lo = key_lo(iq);
  let my_hi = key_hi(iq);

  for (var t0 = blk.wg_lo; t0 < blk.wg_hi; t0 += p.tile) {
    let n = min(p.tile, blk.wg_hi - t0);
    stage_kv_rows(blk.kv_base, t0, n, lid);
    workgroupBarrier();
    if (live) {
      let j_end = min(t0 + n, my_hi);
      for (var j = max(t0, my_lo); j < j_end; j++) {
        let off = (j - t0) * dim;
        var dot = 0.0;
        var dpd = 0.0;
        for (var d = 0u; d < dim; d++) {
          dot += qr[d] * ks[off + d];
          dpd += dor[d] * vs[off + d];
        }
        let s = dot + mask_at(b, h, i, j);
        if (s <= MASKED) {
          continue;
        }
        let pr = exp(s - lse_i);
        let ds = pr * (dpd * keep_factor(b, h, i, j) - delta);
        for (var d = 0u; d < dim; d++) {
          acc[d] += ds * ks[off + d];
        }
      }
    }
    workgroupBarrier();
  }

  if (live) {
    let obase = ((b * p.seq_q + i) * p.heads + h) * dim;
    for (var d = 0u; d < dim; d++) {
      dq[obase + d] = acc[d] * p.scale;
    }
  }
}
