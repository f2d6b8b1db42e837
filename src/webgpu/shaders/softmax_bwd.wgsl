// Softmax gradient from the forward output, one workgroup per row:
// dx = y * (dy - sum(y * dy)). A causal row reads only its visible part
// and writes zeros past it. Preceded by row_reduce.wgsl and
// softmax_mask.wgsl (the parameters and the mask, as softmax.wgsl has them).

@group(0) @binding(1) var<storage, read> y: array<f32>;   // [rows, cols]
@group(0) @binding(2) var<storage, read> dy: array<f32>;  // [rows, cols]
@group(0) @binding(3) var<storage, read_write> dx: array<f32>;  // [rows, cols]

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let row = row_index(wg, nwg);
  if (row >= p.rows) {
    return;
  }
  let visible = visible_keys(row);
  let base = row * p.cols;
  var dot = 0.0;
  for (var j = lid; j < visible; j += WG) {
    dot += y[base + j] * dy[base + j];
  }
  let total = workgroup_sum(dot, lid);
  for (var j = lid; j < p.cols; j += WG) {
    var v = 0.0;
    if (j < visible) {
      v = y[base + j] * (dy[base + j] - total);
    }
    dx[base + j] = v;
  }
}
