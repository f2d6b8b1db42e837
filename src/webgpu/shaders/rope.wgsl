// Rotate-half RoPE in place: one invocation per (token, head, i) pair of
// elements (i, i + head_dim / 2) of a head vector. The (cos, sin) of each
// (position, i) come from a table built on the host (src/ops/llama_rope_norm.cpp)
// that the CPU kernel reads too. inverse = 1 rotates by the negated angle
// (rope_backward).
struct Params {
  pairs: u32,        // pairs in this dispatch: tokens * hidden / 2
  first_token: u32,  // token row of the dispatch's first token
  seq: u32,          // tokens per sequence
  hidden: u32,
  head_dim: u32,
  inverse: u32,
  _pad0: u32,
  _pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> x: array<f32>;  // [tokens, hidden]
@group(0) @binding(2) var<storage, read> cs: array<f32>;       // [seq, head_dim / 2, 2]

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wg.y * nwg.x + wg.x) * 256u + lid;
  if (i >= p.pairs) {
    return;
  }
  let half = p.head_dim / 2u;
  let per_token = p.hidden / 2u;
  let t = i / per_token;
  let rem = i % per_token;
  let j = rem % half;
  let a_at = t * p.hidden + (rem / half) * p.head_dim + j;
  let s = (p.first_token + t) % p.seq;
  let c = cs[(s * half + j) * 2u];
  var sn = cs[(s * half + j) * 2u + 1u];
  if (p.inverse != 0u) {
    sn = -sn;
  }
  let a = x[a_at];
  let b = x[a_at + half];
  x[a_at] = a * c - b * sn;
  x[a_at + half] = b * c + a * sn;
}
