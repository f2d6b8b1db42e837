// Flash attention forward (prefill): one workgroup per (batch, head, block of
// 64 queries), one query per invocation. Tiles of K and V pass through
// workgroup memory; each query keeps its running max m, its sum l and its
// output accumulator in registers (online softmax), so the [Sq, Sk] score
// matrix never exists. Preceded by flash_params, philox, flash_common and
// flash_rows.
// Runs where flash_fwd_tiled does not fit (head_dim not a multiple of 4, or
// too little workgroup storage).
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read> mask: array<f32>;
@group(0) @binding(5) var<storage, read_write> out: array<f32>;
@group(0) @binding(6) var<storage, read_write> lse: array<f32>;

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
  var acc: array<f32, MAX_D>;  // sum of weight * v, rescaled as m grows
  let qbase = ((b * p.seq_q + iq) * p.heads + h) * dim;
  for (var d = 0u; d < dim; d++) {
    qr[d] = q[qbase + d] * p.scale;
    acc[d] = 0.0;
  }
  var row = OnlineRow(NEG, 0.0);
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
        for (var d = 0u; d < dim; d++) {
          dot += qr[d] * ks[off + d];
        }
        let wt = online_take(&row, &acc, dot + mask_at(b, h, i, j), b, h, i, j);
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
    let inv = select(0.0, 1.0 / row.l, row.l > 0.0);
    for (var d = 0u; d < dim; d++) {
      out[obase + d] = acc[d] * inv;
    }
    lse[bh * p.seq_q + i] = select(p.neg_inf, row.m + log(row.l), row.l > 0.0);
  }
}
