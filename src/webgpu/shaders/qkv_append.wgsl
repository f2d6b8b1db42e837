// qkv_append (forge/ops/gather.h): one invocation per element of a packed
// qkv row block [tokens, 3C] (q, k and v side by side, GPT-2's c_attn
// output): q's third copied to q [tokens, C], k's and v's to their cache
// slots, so a decode step splits and appends in one dispatch. With `rows`
// (continuous batching: one token of each cache row, seq = 1) token i goes to
// row i at its own slot rows_at[i].
struct Params {
  tokens: u32,       // B * T
  seq: u32,          // T: token b * T + t goes to cache slot at + t of sequence b
  width: u32,        // C = nh * hd
  cap: u32,          // cache positions per sequence
  at: u32,
  cache_first: u32,  // elements of the cache bindings before sequence 0's slot 0
  rows: u32,         // 1: slots from rows_at
  _pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> qkv: array<f32>;        // [tokens, 3C]
@group(0) @binding(2) var<storage, read_write> q: array<f32>;    // [tokens, C]
@group(0) @binding(3) var<storage, read_write> kc: array<f32>;   // [B, cap, C] from cache_first
@group(0) @binding(4) var<storage, read_write> vc: array<f32>;
@group(0) @binding(5) var<storage, read> rows_at: array<u32>;  // [tokens] (rows), else unused

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wg.y * nwg.x + wg.x) * 256u + lid;
  if (i >= p.tokens * 3u * p.width) {
    return;
  }
  let tok = i / (3u * p.width);
  let e = i % (3u * p.width);
  if (e < p.width) {
    q[tok * p.width + e] = qkv[i];
    return;
  }
  var pos = p.at + tok % p.seq;
  if (p.rows != 0u) {
    pos = rows_at[tok];
  }
  let slot = p.cache_first + ((tok / p.seq) * p.cap + pos) * p.width;
  if (e < 2u * p.width) {
    kc[slot + e - p.width] = qkv[i];
  } else {
    vc[slot + e - 2u * p.width] = qkv[i];
  }
}
