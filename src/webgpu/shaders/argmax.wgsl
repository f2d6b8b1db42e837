// Shared snippet (no entry point) of the sampling kernels (sample.wgsl,
// sample_greedy.wgsl): the first index of the largest logit over a range,
// by a workgroup of WG lanes. Logits compare by order_key (an
// order-preserving u32 of the float, every NaN largest); among equal keys the
// smallest index wins, as the CPU kernel's first-maximum scan does.
const WG: u32 = 256u;
const SCAN: u32 = 4u;  // the scan's streams a lane
var<workgroup> redu: array<u32, WG>;
var<workgroup> redi: array<u32, WG>;

const KEY_POS_INF: u32 = 0xff800000u;  // order_key(+inf): a row whose largest key reaches it is not finite
const NO_TOKEN: u32 = 0xffffffffu;     // the id of such a row (kSampleNoToken)

fn order_key(x: f32) -> u32 {
  let b = bitcast<u32>(x);
  let k = select(b | 0x80000000u, ~b, (b & 0x80000000u) != 0u);
  return select(k, 0xffffffffu, (b & 0x7fffffffu) > 0x7f800000u);
}

// (key, index) of the largest key and, among lanes holding it, the smallest
// index: one tree reduction (a CPU driver pays for every barrier round).
// Lanes with nothing pass index 0xffffffff, which loses every tie.
fn argmax_key(lid: u32, key: u32, index: u32) -> vec2u {
  redu[lid] = key;
  redi[lid] = index;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) {
      let ka = redu[lid];
      let kb = redu[lid + s];
      let ib = redi[lid + s];
      let ia = redi[lid];
      // An empty lane (index 0xffffffff) never wins over a filled one.
      if (ia == 0xffffffffu || (ib != 0xffffffffu && (kb > ka || (kb == ka && ib < ia)))) {
        redu[lid] = kb;
        redi[lid] = ib;
      }
    }
    workgroupBarrier();
  }
  let r = vec2u(redu[0], redi[0]);
  workgroupBarrier();
  return r;
}

// (key, first index) of this lane's share of logits [lo, hi) at z_at(i):
// SCAN strided streams (their loads in flight together), each keeping its
// first index as i rises, then the largest key, the smallest index among
// equals. Index 0xffffffff where the lane has none.
fn lane_first_max(lid: u32, lo: u32, hi: u32) -> vec2u {
  var mks: array<u32, SCAN>;
  var firsts: array<u32, SCAN>;
  for (var u = 0u; u < SCAN; u++) {
    firsts[u] = 0xffffffffu;
  }
  for (var i0 = lo + lid; i0 < hi; i0 += SCAN * WG) {
    for (var u = 0u; u < SCAN; u++) {
      let i = i0 + u * WG;
      if (i < hi) {
        let k = order_key(z_at(i));
        if (firsts[u] == 0xffffffffu || k > mks[u]) {
          mks[u] = k;
          firsts[u] = i;
        }
      }
    }
  }
  var mk = mks[0];
  var first = firsts[0];
  for (var u = 1u; u < SCAN; u++) {
    if (firsts[u] != 0xffffffffu && (first == 0xffffffffu || mks[u] > mk || (mks[u] == mk && firsts[u] < first))) {
      mk = mks[u];
      first = firsts[u];
    }
  }
  return vec2u(mk, first);
}
