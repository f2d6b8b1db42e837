// Flash attention backward, pass 1: per query row (b, h, i) the pair
// (lse, delta = grad_out . out) the other two passes read. One invocation per
// row. Preceded by flash_params.
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> out: array<f32>;
@group(0) @binding(2) var<storage, read> dout: array<f32>;
@group(0) @binding(3) var<storage, read> lse: array<f32>;         // [B, H, Sq]
@group(0) @binding(4) var<storage, read_write> stats: array<f32>; // [B, H, Sq, 2]

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let rr = (wg.y * nwg.x + wg.x) * 64u + lid;  // (b * H + h) * Sq + i
  if (rr >= p.batch * p.heads * p.seq_q) {
    return;
  }
  let i = rr % p.seq_q;
  let h = (rr / p.seq_q) % p.heads;
  let b = rr / (p.seq_q * p.heads);
  let base = ((b * p.seq_q + i) * p.heads + h) * HEAD_DIM;
  var delta = 0.0;
  for (var d = 0u; d < HEAD_DIM; d++) {
    delta += dout[base + d] * out[base + d];
  }
  stats[2u * rr] = lse[rr];
  stats[2u * rr + 1u] = delta;
}
