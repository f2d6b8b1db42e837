// Elementwise binary ops over f32: out[i] = a[i] (op) b[i].
// OP: 0 add, 1 sub, 2 mul. Preceded by elementwise_block.wgsl.
override OP: u32 = 0u;

struct Params {
  count: u32,
  _pad0: u32,
  _pad1: u32,
  _pad2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

fn apply(x: f32, y: f32) -> f32 {
  switch OP {
    case 1u: { return x - y; }
    case 2u: { return x * y; }
    default: { return x + y; }
  }
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let first = ew_first(wg, nwg, lid);
  var va: array<f32, EW_PER>;
  var vb: array<f32, EW_PER>;
  for (var e = 0u; e < EW_PER; e++) {
    let i = first + 256u * e;
    if (i < p.count) {
      va[e] = a[i];
      vb[e] = b[i];
    }
  }
  for (var e = 0u; e < EW_PER; e++) {
    let i = first + 256u * e;
    if (i < p.count) {
      out[i] = apply(va[e], vb[e]);
    }
  }
}
