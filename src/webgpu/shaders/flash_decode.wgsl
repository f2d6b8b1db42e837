// Flash attention forward for a few queries over many keys (decode): one
// workgroup per (query row, key split), 256 invocations. They score 256 keys
// at a time (one each, the tile's max by wg_max: reduce_tree.wgsl or
// reduce_subgroup.wgsl, as the host picks); then
// invocation lid owns output columns c = lid % 64 and c + 64 over key lane
// kl = lid / 64, the tile's keys t with t % 4 == kl (VU of them at a time),
// and the four lanes' sums are added at the end. Every invocation tracks the same running max m;
// each lane its own sum l. Writes the split's partial (m, l, acc[D]) to part
// for flash_combine.wgsl; with one split (splits == 1) it writes the row's
// output to part (then the output tensor [rows, D]) and its lse as
// flash_combine.wgsl would, and no combine runs. Preceded by flash_params,
// philox, flash_common and the key's dot (flash_decode_k.wgsl, or
// flash_decode_k4.wgsl reading vec4s).
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read> mask: array<f32>;
@group(0) @binding(5) var<storage, read_write> part: array<f32>;  // [rows, splits, D + 2], or out [rows, D]
@group(0) @binding(6) var<storage, read_write> lse: array<f32>;   // [B, H, Sq] (one split only)

const WG: u32 = 256u;
const LANES: u32 = 4u;  // key lanes of the weighted sum of V: WG / 64
const VU: u32 = 4u;  // keys of a lane whose loads of V are in flight together (see below)

var<workgroup> qs: array<f32, MAX_D>;
var<workgroup> pe: array<f32, WG>;          // exp(s - m)
var<workgroup> pw: array<f32, WG>;          // exp(s - m) * dropout factor
var<workgroup> sums: array<f32, LANES * MAX_D>;  // the lanes' acc at the end
var<workgroup> lsum: array<f32, LANES>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let w = wg.y * nwg.x + wg.x;
  let r = w / p.splits;  // (b * Sq + i) * H + h
  let sp = w % p.splits;
  if (r >= p.batch * p.seq_q * p.heads) {
    return;
  }
  let row_of = query_row(r);
  let b = row_of.b;
  let i = row_of.i;
  let h = row_of.h;
  let g = row_of.g;
  let dim = HEAD_DIM;
  for (var d = lid; d < dim; d += WG) {
    qs[d] = q[r * dim + d] * p.scale;
  }
  workgroupBarrier();

  let lo = max(key_lo(i), sp * p.split_len);
  let hi = min(key_hi(i), sp * p.split_len + p.split_len);
  let kv_stride = p.kv_heads * dim;
  let kv_base = b * p.seq_k * kv_stride + g * dim;
  let c0 = lid % 64u;
  let c1 = c0 + 64u;
  let kl = lid / 64u;
  var m = NEG;
  var l = 0.0;     // this lane's sum of exp(s - m)
  var acc0 = 0.0;  // column c0, this lane's keys
  var acc1 = 0.0;  // column c1
  for (var t0 = lo; t0 < hi; t0 += WG) {
    let j = t0 + lid;
    var s = NEG;
    if (j < hi) {
      s = key_dot(kv_base + j * kv_stride) + mask_at(b, h, i, j);
      if (s <= MASKED) {
        s = NEG;
      }
    }
    let mn = max(m, wg_max(s, lid));
    var e = 0.0;
    if (s > MASKED) {
      e = exp(s - mn);
    }
    pe[lid] = e;
    pw[lid] = select(0.0, e * keep_factor(b, h, i, j), e != 0.0);
    workgroupBarrier();
    let c = exp(m - mn);
    // VU keys of a lane at a time, their loads of V in flight together; a
    // key past the tile's end, masked or dropped has weight 0 and adds
    // nothing, even where V is not finite. On the H200, GPT-2 124M decoded
    // at 1,166 / 1,185 / 1,174 / 1,186 tokens/s with 2 / 4 / 8 / 16 keys in
    // flight, SmolLM2-360M at 546 / 552 / 550 / 551; 1,025 keys took the
    // same 0.052-0.061 ms each way (an unpredicated tail one key at a time
    // had made 8 take 0.094).
    var ls = 0.0;
    var a0: array<f32, VU>;
    var a1: array<f32, VU>;
    let n = min(WG, hi - t0);
    for (var t = kl; t < n; t += VU * LANES) {
      var wv: array<f32, VU>;
      var v0: array<f32, VU>;
      var v1: array<f32, VU>;
      for (var u = 0u; u < VU; u++) {
        let tu = min(t + u * LANES, n - 1u);  // a key of the tile: its load is in bounds
        let live = t + u * LANES < n;
        ls += select(0.0, pe[tu], live);
        wv[u] = select(0.0, pw[tu], live);
        let vu = kv_base + (t0 + tu) * kv_stride;
        if (c0 < dim) {
          v0[u] = v[vu + c0];
        }
        if (c1 < dim) {
          v1[u] = v[vu + c1];
        }
      }
      for (var u = 0u; u < VU; u++) {
        a0[u] += select(0.0, wv[u] * v0[u], wv[u] != 0.0);
        a1[u] += select(0.0, wv[u] * v1[u], wv[u] != 0.0);
      }
    }
    var s0 = 0.0;
    var s1 = 0.0;
    for (var u = 0u; u < VU; u++) {
      s0 += a0[u];
      s1 += a1[u];
    }
    l = l * c + ls;
    acc0 = acc0 * c + s0;
    acc1 = acc1 * c + s1;
    m = mn;
    workgroupBarrier();  // pe and pw are rewritten by the next tile
  }

  // The lanes' sums, added in lane order.
  sums[kl * MAX_D + c0] = acc0;
  if (c1 < MAX_D) {
    sums[kl * MAX_D + c1] = acc1;
  }
  if (c0 == 0u) {
    lsum[kl] = l;
  }
  workgroupBarrier();
  if (kl != 0u) {
    return;
  }
  var o0 = 0.0;
  var o1 = 0.0;
  var total = 0.0;
  for (var a = 0u; a < LANES; a++) {
    o0 += sums[a * MAX_D + c0];
    if (c1 < MAX_D) {
      o1 += sums[a * MAX_D + c1];
    }
    total += lsum[a];
  }

  if (p.splits == 1u) {
    // flash_combine's result for one split: M = m, total = l.
    let inv = select(0.0, 1.0 / total, total > 0.0);
    if (c0 < dim) {
      part[r * dim + c0] = o0 * inv;
    }
    if (c1 < dim) {
      part[r * dim + c1] = o1 * inv;
    }
    if (lid == 0u) {
      lse[(b * p.heads + h) * p.seq_q + i] = select(p.neg_inf, m + log(total), total > 0.0);
    }
    return;
  }
  let base = (r * p.splits + sp) * (dim + 2u);
  if (lid == 0u) {
    part[base] = m;
    part[base + 1u] = total;
  }
  if (c0 < dim) {
    part[base + 2u + c0] = o0;
  }
  if (c1 < dim) {
    part[base + 2u + c1] = o1;
  }
}
