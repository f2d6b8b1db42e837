// One AdamW step in place, elementwise. The scalars come from the host
// (computed in double, src/ops/nn_train.cpp); the update is adamw_update.wgsl's
// (prepended by the host).
struct Params {
  count: u32,
  decay: f32,  // 1 - lr * weight_decay
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

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wg.y * nwg.x + wg.x) * 256u + lid;
  if (i >= p.count) {
    return;
  }
  adamw_update(i, grad[i], p.decay);
}
