// Flash attention forward for a CPU driver's decode (gpu::Runtime::cpu_driver,
// e.g. SwiftShader): one invocation a query row scores the row's keys alone
// with an online softmax, with no workgroup memory and no barrier (a CPU
// driver runs each barrier as a switch between the workgroup's invocations:
// flash_decode took 2.1 ms a dispatch there over 64 keys). Writes the output
// and lse as flash_decode does with one split. Preceded by flash_params,
// philox and flash_common.
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read> mask: array<f32>;
@group(0) @binding(5) var<storage, read_write> out: array<f32>;  // [rows, D]
@group(0) @binding(6) var<storage, read_write> lse: array<f32>;  // [B, H, Sq]

const ROWS: u32 = 64u;  // rows a workgroup, one an invocation

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let r = (wg.y * nwg.x + wg.x) * ROWS + lid;  // (b * Sq + i) * H + h
  if (r >= p.batch * p.seq_q * p.heads) {
    return;
  }
  let row_of = query_row(r);
  let b = row_of.b;
  let i = row_of.i;
  let h = row_of.h;
  let g = row_of.g;
  let dim = HEAD_DIM;
  var qr: array<f32, MAX_D>;   // q * scale
  var acc: array<f32, MAX_D>;  // sum of weight * v, rescaled as m grows
  for (var d = 0u; d < dim; d++) {
    qr[d] = q[r * dim + d] * p.scale;
    acc[d] = 0.0;
  }
  let kv_stride = p.kv_heads * dim;
  let kv_base = b * p.seq_k * kv_stride + g * dim;
  var row = OnlineRow(NEG, 0.0);
  let hi = key_hi(i);
  for (var j = key_lo(i); j < hi; j++) {
    let kb = kv_base + j * kv_stride;
    var dot = 0.0;
    for (var d = 0u; d < dim; d++) {
      dot += qr[d] * k[kb + d];
    }
    let wt = online_take(&row, &acc, dot + mask_at(b, h, i, j), b, h, i, j);
    if (wt != 0.0) {
      for (var d = 0u; d < dim; d++) {
        acc[d] += wt * v[kb + d];
      }
    }
  }
  let inv = select(0.0, 1.0 / row.l, row.l > 0.0);
  for (var d = 0u; d < dim; d++) {
    out[r * dim + d] = acc[d] * inv;
  }
  lse[(b * p.heads + h) * p.seq_q + i] = select(p.neg_inf, row.m + log(row.l), row.l > 0.0);
}
