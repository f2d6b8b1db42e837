// Shared snippet (no entry point): the body of the decode kernels
// (flash_decode.wgsl, flash_decode_append.wgsl), after the flash_params,
// philox and flash_common snippets and the kernel's bindings. 256
// invocations score 256 keys at a time (one each, the tile's max by a tree
// in workgroup memory); then invocation lid owns output columns c = lid % 64
// and c + 64 over key lane kl = lid / 64, the tile's keys t with t % 4 == kl,
// and the four lanes' sums are added at the end. Every invocation tracks the
// same running max m; each lane its own sum l. The kernel supplies
// k_elem(idx) and v_elem(idx), elements of K and V [B, Sk, Hkv, D] by flat
// index, and fills qs (the scaled query row) before decode_attend.
const WG: u32 = 256u;
const LANES: u32 = 4u;  // key lanes of the weighted sum of V: WG / 64

var<workgroup> qs: array<f32, MAX_D>;  // the scaled query row (the kernel fills it)
var<workgroup> red: array<f32, WG>;         // the tile's scores, reduced to their max
var<workgroup> pe: array<f32, WG>;          // exp(s - m)
var<workgroup> pw: array<f32, WG>;          // exp(s - m) * dropout factor
var<workgroup> sums: array<f32, LANES * MAX_D>;  // the lanes' acc at the end
var<workgroup> lsum: array<f32, LANES>;

// A row's result, in the invocations of lane 0 (lid < 64): its columns c0
// and c1 = c0 + 64 of the unnormalised sum over V, the max m and the sum l.
struct DecodeSums {
  m: f32,
  total: f32,
  o0: f32,
  o1: f32,
}

// Attention of query i of (b, h) over keys lo .. hi - 1 of one kv head
// (kv_base: the flat index of key 0's first element of that head). Call
// from uniform control flow (it has barriers), after qs is filled.
fn decode_attend(lid: u32, b: u32, h: u32, i: u32, lo: u32, hi: u32, kv_base: u32) -> DecodeSums {
  let dim = HEAD_DIM;
  let kv_stride = p.kv_heads * dim;
  let c0 = lid % 64u;
  let c1 = c0 + 64u;
  let kl = lid / 64u;
  var m = NEG;
  var l = 0.0;     // this lane's sum of exp(s - m)
  var acc0 = 0.0;  // column c0, this lane's keys
  var acc1 = 0.0;  // column c1
  for (var t0 = lo; t0 < hi; t0 += WG) {
    let j = t0 + lid;
    var s = NEG;
    if (j < hi) {
      // Four partial dots: independent loads in flight.
      let kb = kv_base + j * kv_stride;
      var d0 = 0.0;
      var d1 = 0.0;
      var d2 = 0.0;
      var d3 = 0.0;
      var d = 0u;
      for (; d + 4u <= dim; d += 4u) {
        d0 += qs[d] * k_elem(kb + d);
        d1 += qs[d + 1u] * k_elem(kb + d + 1u);
        d2 += qs[d + 2u] * k_elem(kb + d + 2u);
        d3 += qs[d + 3u] * k_elem(kb + d + 3u);
      }
      for (; d < dim; d++) {
        d0 += qs[d] * k_elem(kb + d);
      }
      s = (d0 + d1) + (d2 + d3) + mask_at(b, h, i, j);
      if (s <= MASKED) {
        s = NEG;
      }
    }
    red[lid] = s;
    workgroupBarrier();
    for (var half = WG / 2u; half > 0u; half /= 2u) {
      if (lid < half) {
        red[lid] = max(red[lid], red[lid + half]);
      }
      workgroupBarrier();
    }
    let mn = max(m, red[0]);
    var e = 0.0;
    if (s > MASKED) {
      e = exp(s - mn);
    }
    pe[lid] = e;
    pw[lid] = select(0.0, e * keep_factor(b, h, i, j), e != 0.0);
    workgroupBarrier();
    let c = exp(m - mn);
    var ls = 0.0;
    var a0 = 0.0;
    var a1 = 0.0;
    var b0 = 0.0;  // the odd steps' sums: two loads of V in flight (a zero
    // weight -- masked, dropped -- adds nothing even where V is not finite)
    var b1 = 0.0;
    let n = min(WG, hi - t0);
    var t = kl;
    for (; t + LANES < n; t += 2u * LANES) {
      ls += pe[t] + pe[t + LANES];
      let wa = pw[t];
      let wb = pw[t + LANES];
      let va = kv_base + (t0 + t) * kv_stride;
      let vb = va + LANES * kv_stride;
      if (c0 < dim) {
        a0 += select(0.0, wa * v_elem(va + c0), wa != 0.0);
        b0 += select(0.0, wb * v_elem(vb + c0), wb != 0.0);
      }
      if (c1 < dim) {
        a1 += select(0.0, wa * v_elem(va + c1), wa != 0.0);
        b1 += select(0.0, wb * v_elem(vb + c1), wb != 0.0);
      }
    }
    if (t < n) {
      ls += pe[t];
      let va = kv_base + (t0 + t) * kv_stride;
      if (c0 < dim) {
        a0 += select(0.0, pw[t] * v_elem(va + c0), pw[t] != 0.0);
      }
      if (c1 < dim) {
        a1 += select(0.0, pw[t] * v_elem(va + c1), pw[t] != 0.0);
      }
    }
    l = l * c + ls;
    acc0 = acc0 * c + (a0 + b0);
    acc1 = acc1 * c + (a1 + b1);
    m = mn;
    workgroupBarrier();  // red, pe and pw are rewritten by the next tile
  }

  // The lanes' sums, added in lane order.
  sums[kl * MAX_D + c0] = acc0;
  if (c1 < MAX_D) {
    sums[kl * MAX_D + c1] = acc1;
  }
  if (c0 == 0u) {
    lsum[kl] = l;
  }
  workgroupBarrier();
  var o0 = 0.0;
  var o1 = 0.0;
  var total = 0.0;
  for (var a = 0u; a < LANES; a++) {  // lane 0's result; the others add too, unused
    o0 += sums[a * MAX_D + c0];
    if (c1 < MAX_D) {
      o1 += sums[a * MAX_D + c1];
    }
    total += lsum[a];
  }

  return DecodeSums(m, total, o0, o1);
}
