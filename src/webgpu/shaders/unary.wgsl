// Elementwise unary ops over f32: out[i] = f(x[i]).
// OP: 0 scale by alpha. Preceded by elementwise_block.wgsl.
override OP: u32 = 0u;

struct Params {
  count: u32,
  alpha: f32,
  _pad0: u32,
  _pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let first = ew_first(wg, nwg, lid);
  var v: array<f32, EW_PER>;
  for (var e = 0u; e < EW_PER; e++) {
    let i = first + 256u * e;
    if (i < p.count) {
      v[e] = x[i];
    }
  }
  for (var e = 0u; e < EW_PER; e++) {
    let i = first + 256u * e;
    if (i < p.count) {
      out[i] = v[e] * p.alpha;  // OP 0, the only one
    }
  }
}
