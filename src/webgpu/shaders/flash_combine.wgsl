// Combines the key splits of flash_decode.wgsl: one workgroup per query row
// r = (b * Sq + i) * H + h. out = sum_s acc_s e^(m_s - M) / sum_s l_s e^(m_s - M)
// with M the largest m_s of the splits that saw a key; zeros (and lse -inf)
// when none did. Preceded by flash_params.
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> part: array<f32>;  // [rows, splits, D + 2]
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<storage, read_write> lse: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let r = wg.y * nwg.x + wg.x;
  if (r >= p.batch * p.seq_q * p.heads) {
    return;
  }
  let dim = HEAD_DIM;
  let stride = dim + 2u;
  let base = r * p.splits * stride;
  var mx = NEG;
  for (var s = 0u; s < p.splits; s++) {
    if (part[base + s * stride + 1u] > 0.0) {
      mx = max(mx, part[base + s * stride]);
    }
  }
  var total = 0.0;
  for (var s = 0u; s < p.splits; s++) {
    let ls = part[base + s * stride + 1u];
    if (ls > 0.0) {
      total += ls * exp(part[base + s * stride] - mx);
    }
  }
  let inv = select(0.0, 1.0 / total, total > 0.0);
  for (var d = lid; d < dim; d += 64u) {
    var o = 0.0;
    for (var s = 0u; s < p.splits; s++) {
      if (part[base + s * stride + 1u] > 0.0) {
        o += part[base + s * stride + 2u + d] * exp(part[base + s * stride] - mx);
      }
    }
    out[r * dim + d] = o * inv;
  }
  if (lid == 0u) {
    let h = r % p.heads;
    let i = (r / p.heads) % p.seq_q;
    let b = r / (p.heads * p.seq_q);
    lse[(b * p.heads + h) * p.seq_q + i] = select(p.neg_inf, mx + log(total), total > 0.0);
  }
}
