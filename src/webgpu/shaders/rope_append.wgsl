// rope_append (forge/ops/llama.h): one invocation per element pair of q and k
// (rotated in place as rope.wgsl rotates, the (cos, sin) of each position and
// pair from the same host-built table; k also written to its cache slot) and
// per element of v (copied to its cache slot). Per token, invocation i covers
// q's pairs, then k's, then v's elements. With `rows` (continuous batching:
// one token of each cache row, seq = 1) token i takes table row i and goes to
// row i at its own slot rows_at[i]. With `packed` (a prefill's joined q/k/v
// product) q, k and v are read from one row [nh * hd | kd | kd] a token, in
// the binding of v, and q is written to its own binding; k then goes to the
// cache only.
struct Params {
  tokens: u32,     // B * T
  seq: u32,        // T: token b * T + t is at table row t and cache slot at + t
  nh: u32,
  nkv: u32,
  head_dim: u32,
  cap: u32,        // cache positions per sequence
  at: u32,
  cache_first: u32,  // elements of the cache bindings before sequence 0's slot 0
  rows: u32,         // 1: table rows by token, slots from rows_at
  packed: u32,       // 1: q, k and v side by side in v's binding
  _pad1: u32,
  _pad2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> q: array<f32>;   // [tokens, nh * hd]
@group(0) @binding(2) var<storage, read_write> k: array<f32>;   // [tokens, nkv * hd] (unused when packed)
@group(0) @binding(3) var<storage, read> v: array<f32>;         // [tokens, nkv * hd], or packed [tokens, nh * hd + 2 kd]
@group(0) @binding(4) var<storage, read> cs: array<f32>;        // [>= seq, hd / 2, 2]
@group(0) @binding(5) var<storage, read_write> kc: array<f32>;  // [B, cap, nkv * hd] from cache_first
@group(0) @binding(6) var<storage, read_write> vc: array<f32>;
@group(0) @binding(7) var<storage, read> rows_at: array<u32>;   // [tokens] (rows), else unused

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let half = p.head_dim / 2u;
  let qp = p.nh * half;               // q pairs per token
  let kp = p.nkv * half;              // k pairs per token
  let kd = p.nkv * p.head_dim;        // k and v elements per token
  let per = qp + kp + kd;
  let i = (wg.y * nwg.x + wg.x) * 256u + lid;
  if (i >= p.tokens * per) {
    return;
  }
  let tok = i / per;
  let r = i % per;
  var t = tok % p.seq;  // the table row
  var pos = p.at + t;
  if (p.rows != 0u) {
    t = tok;
    pos = rows_at[tok];
  }
  let slot = p.cache_first + ((tok / p.seq) * p.cap + pos) * kd;
  let qd = p.nh * p.head_dim;
  let packed = p.packed != 0u;
  let src = tok * (qd + 2u * kd);  // the token's packed row
  if (r >= qp + kp) {
    let e = r - qp - kp;
    vc[slot + e] = v[select(tok * kd + e, src + qd + kd + e, packed)];
    return;
  }
  let is_q = r < qp;
  var pr = r;
  if (!is_q) {
    pr = r - qp;
  }
  let j = pr % half;
  let c = cs[(t * half + j) * 2u];
  let sn = cs[(t * half + j) * 2u + 1u];
  let e = (pr / half) * p.head_dim + j;  // element of the first of the pair within the token's row
  if (is_q) {
    let at_q = tok * qd + e;
    var a: f32;
    var b: f32;
    if (packed) {
      a = v[src + e];
      b = v[src + e + half];
    } else {
      a = q[at_q];
      b = q[at_q + half];
    }
    q[at_q] = a * c - b * sn;
    q[at_q + half] = b * c + a * sn;
  } else {
    let at_k = tok * kd + e;
    var a: f32;
    var b: f32;
    if (packed) {
      a = v[src + qd + e];
      b = v[src + qd + e + half];
    } else {
      a = k[at_k];
      b = k[at_k + half];
    }
    let ra = a * c - b * sn;
    let rb = b * c + a * sn;
    if (!packed) {
      k[at_k] = ra;
      k[at_k + half] = rb;
    }
    kc[slot + e] = ra;
    kc[slot + e + half] = rb;
  }
}
