// top_k, pass 1: one workgroup per row of n values. The k-th largest key T
// is found by a radix select over the ordered u32 keys (four passes of 8
// bits, a 256-bin histogram each); the winners (keys > T, then the lowest
// indices among keys == T up to k in all) are written in index order to
// cand[row] as (key, index), positions from a workgroup prefix count per tile
// of 256 values. top_k_place.wgsl then orders them.
struct Params {
  rows: u32,
  n: u32,
  k: u32,
  _pad0: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;            // [rows, n]
@group(0) @binding(2) var<storage, read_write> cand: array<vec2u>;  // [rows, k]: (key, index)

const WG: u32 = 256u;
var<workgroup> hist: array<atomic<u32>, WG>;
var<workgroup> scan: array<u32, WG>;
var<workgroup> state: vec2u;  // (prefix of T found so far, winners still to take at that prefix)

// Larger key = larger value; -0 < +0; positive NaNs above +inf (as the CPU).
fn key_of(v: f32) -> u32 {
  let b = bitcast<u32>(v);
  return b ^ select(0x80000000u, 0xFFFFFFFFu, (b & 0x80000000u) != 0u);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let row = wg.y * nwg.x + wg.x;
  if (row >= p.rows) {
    return;
  }
  let base = row * p.n;
  if (lid == 0u) {
    state = vec2u(0u, p.k);
  }
  var mask = 0u;
  for (var round = 0u; round < 4u; round++) {
    let shift = 24u - 8u * round;
    atomicStore(&hist[lid], 0u);
    workgroupBarrier();
    let prefix = state.x;
    for (var j = lid; j < p.n; j += WG) {
      let key = key_of(x[base + j]);
      if ((key & mask) == prefix) {
        atomicAdd(&hist[(key >> shift) & 255u], 1u);
      }
    }
    workgroupBarrier();
    if (lid == 0u) {
      var remaining = state.y;
      var above = 0u;
      var digit = 0u;
      for (var d = 255i; d >= 0i; d--) {
        let c = atomicLoad(&hist[u32(d)]);
        if (above + c >= remaining) {
          digit = u32(d);
          break;
        }
        above += c;
      }
      state = vec2u(prefix | (digit << shift), remaining - above);
    }
    workgroupBarrier();
    mask |= 255u << shift;
  }
  let t = state.x;
  let need_eq = state.y;  // keys equal to t to take, lowest indices first

  var run_gt = 0u;
  var run_eq = 0u;
  for (var tile = 0u; tile < p.n; tile += WG) {
    let j = tile + lid;
    var key = 0u;
    if (j < p.n) {
      key = key_of(x[base + j]);
    }
    let gt = j < p.n && key > t;
    let eq = j < p.n && key == t;
    let flag = select(0u, 1u, gt) | select(0u, 65536u, eq);
    scan[lid] = flag;
    workgroupBarrier();
    for (var off = 1u; off < WG; off <<= 1u) {
      var v = scan[lid];
      if (lid >= off) {
        v += scan[lid - off];
      }
      workgroupBarrier();
      scan[lid] = v;
      workgroupBarrier();
    }
    let before = scan[lid] - flag;
    let total = scan[WG - 1u];
    let gt_before = run_gt + (before & 65535u);
    let eq_before = run_eq + (before >> 16u);
    if (gt || (eq && eq_before < need_eq)) {
      cand[row * p.k + gt_before + min(eq_before, need_eq)] = vec2u(key, j);
    }
    run_gt += total & 65535u;
    run_eq += total >> 16u;
    workgroupBarrier();
  }
}
