// Flash attention backward, pass 1: per query row (b, h, i) the pair
// (lse, delta = grad_out . out) the other two passes read. LANES
// invocations a row, each reading every LANES-th value, so that a row's
// loads are contiguous across its lanes (one invocation a row read 256-byte
// rows apart, one value at a time: on an H100, GPT-2's B8 x T1024 rows
// 62 -> 32 us); ROWS rows a workgroup of 256, the lanes' sums run_sum4's.
// Preceded by flash_params; reduce_tree.wgsl or reduce_subgroup.wgsl
// follows (ReducingKernel).
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> out: array<f32>;
@group(0) @binding(2) var<storage, read> dout: array<f32>;
@group(0) @binding(3) var<storage, read> lse: array<f32>;         // [B, H, Sq]
@group(0) @binding(4) var<storage, read_write> stats: array<f32>; // [B, H, Sq, 2]

const LANES: u32 = 16u;
const ROWS: u32 = 16u;  // the host's kStatsRows

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let rr = (wg.y * nwg.x + wg.x) * ROWS + lid / LANES;  // (b * H + h) * Sq + i
  let lane = lid % LANES;
  let live = rr < p.batch * p.heads * p.seq_q;
  var delta = 0.0;
  if (live) {
    let i = rr % p.seq_q;
    let h = (rr / p.seq_q) % p.heads;
    let b = rr / (p.seq_q * p.heads);
    let base = ((b * p.seq_q + i) * p.heads + h) * HEAD_DIM;
    for (var d = lane; d < HEAD_DIM; d += LANES) {
      delta += dout[base + d] * out[base + d];
    }
  }
  // Rows past the last take part in the sums (uniform control flow), with zeros.
  let total = run_sum4(vec4f(delta, 0.0, 0.0, 0.0), lid, LANES).x;
  if (live && lane == 0u) {
    stats[2u * rr] = lse[rr];
    stats[2u * rr + 1u] = total;
  }
}
