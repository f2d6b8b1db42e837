// Row softmax over f32 with optional causal masking: one workgroup per row.
// Row r (global index row_base + local row) is query r % q_len and sees keys
// j <= query + key_offset; masked entries are exact zeros. Preceded by
// row_reduce.wgsl.
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
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

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

  var mx = -3.402823466e38;
  for (var j = lid; j < visible; j += WG) {
    mx = max(mx, x[base + j]);
  }
  mx = workgroup_max(mx, lid);

  var sum = 0.0;
  for (var j = lid; j < visible; j += WG) {
    sum += exp(x[base + j] - mx);
  }
  let inv = 1.0 / workgroup_sum(sum, lid);

  for (var j = lid; j < p.cols; j += WG) {
    var v = 0.0;
    if (j < visible) {
      v = exp(x[base + j] - mx) * inv;
    }
    y[base + j] = v;
  }
}
