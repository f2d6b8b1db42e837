// AdamW over a flat buffer of many parameters, in place, elementwise. Element
// i (of the whole buffer: base + the index in this dispatch's chunk) is
// updated when a segment (begin, end, decay) holds it, found by binary
// search; elements outside every segment are left alone. With clip = 1 the
// gradient is first scaled by clip_grad_by_norm's factor from the squared
// norm on the device. The update is adamw_update.wgsl's (prepended by the
// host), as in adamw.wgsl.
struct Params {
  count: u32,  // elements in this chunk
  base: u32,   // index of the chunk's first element in the buffer
  nseg: u32,
  clip: u32,   // 1: scale the gradient by min(1, max_norm / (sqrt(norm_sq[0]) + 1e-6))
  max_norm: f32,
  decay: f32,  // 1 - lr * weight_decay, in segments that decay
  beta1: f32,
  one_minus_beta1: f32,
  beta2: f32,
  one_minus_beta2: f32,
  step_size: f32,  // lr / (1 - beta1^step)
  sqrt_bias_c2: f32,  // sqrt(1 - beta2^step)
  eps: f32,
  _pad0: u32,
  _pad1: u32,
  _pad2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> param: array<f32>;
@group(0) @binding(2) var<storage, read> grad: array<f32>;
@group(0) @binding(3) var<storage, read_write> m: array<f32>;
@group(0) @binding(4) var<storage, read_write> v: array<f32>;
@group(0) @binding(5) var<storage, read> segs: array<u32>;  // [nseg, 3]
@group(0) @binding(6) var<storage, read> norm_sq: array<f32>;  // [1]

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wg.y * nwg.x + wg.x) * 256u + lid;
  if (i >= p.count) {
    return;
  }
  let gi = p.base + i;
  // The number of segments that begin at or before gi; the last of them may hold it.
  var lo = 0u;
  var hi = p.nseg;
  while (lo < hi) {
    let mid = (lo + hi) / 2u;
    if (segs[3u * mid] <= gi) {
      lo = mid + 1u;
    } else {
      hi = mid;
    }
  }
  if (lo == 0u || gi >= segs[3u * (lo - 1u) + 1u]) {
    return;
  }
  let decay = select(1.0, p.decay, segs[3u * (lo - 1u) + 2u] != 0u);
  var coef = 1.0;
  if (p.clip != 0u) {
    coef = min(1.0, p.max_norm / (sqrt(norm_sq[0]) + 1e-6));
  }
  adamw_update(i, grad[i] * coef, decay);
}
