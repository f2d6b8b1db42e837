// Flash attention forward for a few queries over many keys (decode): one
// workgroup per (query row, key split). The 64 invocations score 64 keys at
// a time (one each), then each owns output columns lid and lid + 64 for the
// weighted sum of V. Every invocation tracks the same running max m and sum l.
// Writes the split's partial (m, l, acc[D]) to part for flash_combine.wgsl;
// with one split (splits == 1) it writes the row's output to part (then the
// output tensor [rows, D]) and its lse as flash_combine.wgsl would, bit for
// bit, and no combine runs. Preceded by flash_params, philox and flash_common.
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read> mask: array<f32>;
@group(0) @binding(5) var<storage, read_write> part: array<f32>;  // [rows, splits, D + 2], or out [rows, D]
@group(0) @binding(6) var<storage, read_write> lse: array<f32>;   // [B, H, Sq] (one split only)

var<workgroup> qs: array<f32, MAX_D>;
var<workgroup> sc: array<f32, 64>;  // scores of the tile (NEG when masked)
var<workgroup> pe: array<f32, 64>;  // exp(s - m)
var<workgroup> pw: array<f32, 64>;  // exp(s - m) * dropout factor

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let w = wg.y * nwg.x + wg.x;
  let r = w / p.splits;  // (b * Sq + i) * H + h
  let sp = w % p.splits;
  if (r >= p.batch * p.seq_q * p.heads) {
    return;
  }
  let h = r % p.heads;
  let i = (r / p.heads) % p.seq_q;
  let b = r / (p.heads * p.seq_q);
  let g = h / (p.heads / p.kv_heads);
  let dim = HEAD_DIM;
  for (var d = lid; d < dim; d += 64u) {
    qs[d] = q[r * dim + d] * p.scale;
  }
  workgroupBarrier();

  let lo = max(key_lo(i), sp * p.split_len);
  let hi = min(key_hi(i), sp * p.split_len + p.split_len);
  let kv_stride = p.kv_heads * dim;
  let kv_base = b * p.seq_k * kv_stride + g * dim;
  var m = NEG;
  var l = 0.0;
  var acc0 = 0.0;  // column lid
  var acc1 = 0.0;  // column lid + 64
  let c1 = lid + 64u;
  for (var t0 = lo; t0 < hi; t0 += 64u) {
    let j = t0 + lid;
    var s = NEG;
    if (j < hi) {
      var dot = 0.0;
      let kb = kv_base + j * kv_stride;
      for (var d = 0u; d < dim; d++) {
        dot += qs[d] * k[kb + d];
      }
      s = dot + mask_at(b, h, i, j);
      if (s <= MASKED) {
        s = NEG;
      }
    }
    sc[lid] = s;
    workgroupBarrier();
    var tm = NEG;
    for (var t = 0u; t < 64u; t++) {
      tm = max(tm, sc[t]);
    }
    let mn = max(m, tm);
    var e = 0.0;
    if (s > MASKED) {
      e = exp(s - mn);
    }
    pe[lid] = e;
    pw[lid] = select(0.0, e * keep_factor(b, h, i, j), e != 0.0);
    workgroupBarrier();
    let c = exp(m - mn);
    var ls = 0.0;
    var a0 = 0.0;
    var a1 = 0.0;
    let n = min(64u, hi - t0);
    for (var t = 0u; t < n; t++) {
      ls += pe[t];
      let wt = pw[t];
      if (wt != 0.0) {
        let vb = kv_base + (t0 + t) * kv_stride;
        if (lid < dim) {
          a0 += wt * v[vb + lid];
        }
        if (c1 < dim) {
          a1 += wt * v[vb + c1];
        }
      }
    }
    l = l * c + ls;
    acc0 = acc0 * c + a0;
    acc1 = acc1 * c + a1;
    m = mn;
  }

  if (p.splits == 1u) {
    // flash_combine's result for one split: M = m, total = l.
    let inv = select(0.0, 1.0 / l, l > 0.0);
    if (lid < dim) {
      part[r * dim + lid] = acc0 * inv;
    }
    if (c1 < dim) {
      part[r * dim + c1] = acc1 * inv;
    }
    if (lid == 0u) {
      lse[(b * p.heads + h) * p.seq_q + i] = select(p.neg_inf, m + log(l), l > 0.0);
    }
    return;
  }
  let base = (r * p.splits + sp) * (dim + 2u);
  if (lid == 0u) {
    part[base] = m;
    part[base + 1u] = l;
  }
  if (lid < dim) {
    part[base + 2u + lid] = acc0;
  }
  if (c1 < dim) {
    part[base + 2u + c1] = acc1;
  }
}
