// Shared snippet (no entry point): sums and maxima across a workgroup of RED_WG = 256
// invocations through workgroup memory, a tree of barriers. The portable
// form of reduce_subgroup.wgsl, which defines the same functions; the host
// appends one or the other (ReducingKernel). Uniform control flow only;
// each function leaves its workgroup memory free for the next call.
const RED_WG: u32 = 256u;
var<workgroup> red_f: array<f32, RED_WG>;
var<workgroup> red_v: array<vec4f, RED_WG>;
var<workgroup> red_u: array<u32, RED_WG>;

// The sum of v over the workgroup, returned to every invocation.
fn wg_sum(v: f32, lid: u32) -> f32 {
  red_f[lid] = v;
  workgroupBarrier();
  for (var s = RED_WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) {
      red_f[lid] += red_f[lid + s];
    }
    workgroupBarrier();
  }
  let total = red_f[0];
  workgroupBarrier();
  return total;
}

// The same for whole numbers. Only here: the sampling kernel, whose float
// sums must keep this tree's order (the CPU kernel reproduces it, so both
// backends draw the same ids), composes this snippet itself.
fn wg_sum_u32(v: u32, lid: u32) -> u32 {
  red_u[lid] = v;
  workgroupBarrier();
  for (var s = RED_WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) {
      red_u[lid] += red_u[lid + s];
    }
    workgroupBarrier();
  }
  let total = red_u[0];
  workgroupBarrier();
  return total;
}

// The maximum of v over the workgroup, returned to every invocation.
fn wg_max(v: f32, lid: u32) -> f32 {
  red_f[lid] = v;
  workgroupBarrier();
  for (var s = RED_WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) {
      red_f[lid] = max(red_f[lid], red_f[lid + s]);
    }
    workgroupBarrier();
  }
  let m = red_f[0];
  workgroupBarrier();
  return m;
}

// The sums of v over runs of `run` consecutive invocations (a power of two
// up to RED_WG), valid at each run's first invocation.
fn run_sum4(v: vec4f, lid: u32, run: u32) -> vec4f {
  red_v[lid] = v;
  workgroupBarrier();
  let lane = lid % run;
  for (var s = run / 2u; s > 0u; s >>= 1u) {
    if (lane < s) {
      red_v[lid] += red_v[lid + s];
    }
    workgroupBarrier();
  }
  let total = red_v[lid];
  workgroupBarrier();
  return total;
}

// The sums of v over the invocations congruent modulo `stride` (a power of
// two below RED_WG), valid at invocations lid < stride: the first 16 rows of
// strides each add the rows 16 apart, then a tree adds those 16.
fn strided_sum4(v: vec4f, lid: u32, stride: u32) -> vec4f {
  let row = lid / stride;
  let rows = RED_WG / stride;
  red_v[lid] = v;
  workgroupBarrier();
  let first = min(16u, rows);
  if (row < first) {
    var s = red_v[lid];
    for (var j = 1u; j < rows / first; j++) {
      s += red_v[lid + j * first * stride];
    }
    red_v[lid] = s;
  }
  workgroupBarrier();
  for (var half = first / 2u; half > 0u; half >>= 1u) {
    if (row < half) {
      red_v[lid] += red_v[lid + half * stride];
    }
    workgroupBarrier();
  }
  let total = red_v[lid];
  workgroupBarrier();
  return total;
}
