// RMS norm over the last dim: a workgroup (or a subgroup, row_subgroup.wgsl)
// to each row of `cols` values, y = (x * inverseSqrt(mean(x^2) + eps)) * w. rms_norm_residual.wgsl is the
// same with the residual add fused in front. Preceded by row_norm.wgsl.
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;        // [rows, cols]
@group(0) @binding(2) var<storage, read> w: array<f32>;        // [cols]
@group(0) @binding(3) var<storage, read_write> y: array<f32>;  // [rows, cols]

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let at = row_at(wg, nwg, lid);
  let base = at.base;
  // Rows past the last store nothing.
  let cols_out = select(0u, p.cols, at.live);
  let rstd = rms_rstd(base, lid);
  for (var j = at.lane; j < cols_out; j += ROW_STRIDE) {
    y[base + j] = (x[base + j] * rstd) * w[j];
  }
}
