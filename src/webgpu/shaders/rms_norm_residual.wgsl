// RMS norm of a residual sum, fused: a workgroup (or a subgroup,
// row_subgroup.wgsl) to each row of `cols` values forms h = x + r, writes it to `sum` (the next residual stream of a Llama
// block) and y = (h * inverseSqrt(mean(h^2) + eps)) * w, as rms_norm.wgsl.
// Preceded by row_norm.wgsl.
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;        // [rows, cols]
@group(0) @binding(2) var<storage, read> w: array<f32>;        // [cols]
@group(0) @binding(3) var<storage, read_write> y: array<f32>;  // [rows, cols]
@group(0) @binding(4) var<storage, read> r: array<f32>;        // [rows, cols]
@group(0) @binding(5) var<storage, read_write> sum: array<f32>;  // [rows, cols]

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let at = row_at(wg, nwg, lid);
  let base = at.base;
  // Rows past the last store nothing.
  let cols_out = select(0u, p.cols, at.live);
  var sq = 0.0;
  for (var j = at.lane; j < cols_out; j += ROW_STRIDE) {
    let v = x[base + j] + r[base + j];
    sum[base + j] = v;
    sq += v * v;
  }
  let rstd = inverseSqrt(row_sum(sq, lid) / f32(p.cols) + p.eps);
  for (var j = at.lane; j < cols_out; j += ROW_STRIDE) {
    y[base + j] = (sum[base + j] * rstd) * w[j];
  }
}
