// Softmax gradient from the forward output, one workgroup per row:
// dx = y * (dy - sum(y * dy)). A causal row (as softmax.wgsl masks it: row
// row_base + r is query (row_base + r) % q_len and sees keys j <= query +
// key_offset) reads only its visible part and writes zeros past it.
// Preceded by row_reduce.wgsl.
struct Params {
  rows: u32,
  cols: u32,
  causal: u32,
  q_len: u32,
  key_offset: u32,
  row_base: u32,  // global index of this chunk's first row
  _pad0: u32,
  _pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
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
  var visible = p.cols;
  if (p.causal != 0u) {
    visible = min(p.cols, (p.row_base + row) % p.q_len + p.key_offset + 1u);
  }
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
