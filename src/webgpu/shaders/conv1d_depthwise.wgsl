// Depthwise 1-D convolution, kernel 3, zero padding 1: one invocation per
// output element of rows of `seq` values; row r is channel (first_row + r) %
// dim. out = b + w0 x[s - 1] + w1 x[s] + w2 x[s + 1], in that order (as the
// CPU kernel).
struct Params {
  count: u32,      // elements in this dispatch
  first_row: u32,  // row of the dispatch's first element
  dim: u32,
  seq: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;  // [rows, seq]
@group(0) @binding(2) var<storage, read> w: array<f32>;  // [dim, 3]
@group(0) @binding(3) var<storage, read> b: array<f32>;  // [dim]
@group(0) @binding(4) var<storage, read_write> out: array<f32>;  // [rows, seq]

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wg.y * nwg.x + wg.x) * 256u + lid;
  if (i >= p.count) {
    return;
  }
  let s = i % p.seq;
  let d = (p.first_row + i / p.seq) % p.dim;
  var left = 0.0;
  if (s > 0u) {
    left = x[i - 1u];
  }
  var right = 0.0;
  if (s + 1u < p.seq) {
    right = x[i + 1u];
  }
  var acc = b[d];
  acc += w[3u * d] * left;
  acc += w[3u * d + 1u] * x[i];
  acc += w[3u * d + 2u] * right;
  out[i] = acc;
}
