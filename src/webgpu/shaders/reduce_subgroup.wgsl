// Shared snippet (no entry point): reduce_tree.wgsl's sums and maxima by subgroup
// operations, for a device whose subgroups of SUBGROUP_SIZE lanes (at least
// 4) are runs of consecutive local invocation indices (AdapterInfo::
// subgroup_size; the host prepends `enable subgroups;` and SUBGROUP_SIZE).
// Within a subgroup, subgroupAdd, or xor shuffles for parts of one (every
// lane of a butterfly gets the same bits: each level adds the same two
// values); subgroups meet in workgroup memory once: two barriers instead of
// a tree's five to ten. Uniform control flow only.
const RED_WG: u32 = 256u;
const RED_SUBGROUPS: u32 = RED_WG / SUBGROUP_SIZE;
var<workgroup> red_f: array<f32, RED_SUBGROUPS>;
var<workgroup> red_v: array<vec4f, RED_WG>;

fn wg_sum(v: f32, lid: u32) -> f32 {
  let x = subgroupAdd(v);
  if (lid % SUBGROUP_SIZE == 0u) {
    red_f[lid / SUBGROUP_SIZE] = x;
  }
  workgroupBarrier();
  var total = 0.0;
  for (var i = 0u; i < RED_SUBGROUPS; i++) {
    total += red_f[i];
  }
  workgroupBarrier();
  return total;
}

fn wg_max(v: f32, lid: u32) -> f32 {
  let x = subgroupMax(v);
  if (lid % SUBGROUP_SIZE == 0u) {
    red_f[lid / SUBGROUP_SIZE] = x;
  }
  workgroupBarrier();
  var m = red_f[0];
  for (var i = 1u; i < RED_SUBGROUPS; i++) {
    m = max(m, red_f[i]);
  }
  workgroupBarrier();
  return m;
}

fn run_sum4(v: vec4f, lid: u32, run: u32) -> vec4f {
  var x = v;
  for (var o = 1u; o < min(run, SUBGROUP_SIZE); o <<= 1u) {
    x += subgroupShuffleXor(x, o);
  }
  if (run <= SUBGROUP_SIZE) {
    return x;
  }
  // A run spans several subgroups: each leaves its sum, the run adds them.
  if (lid % SUBGROUP_SIZE == 0u) {
    red_v[lid / SUBGROUP_SIZE] = x;
  }
  workgroupBarrier();
  let per_run = run / SUBGROUP_SIZE;
  let first = (lid / run) * per_run;
  var total = vec4f(0.0);
  for (var i = 0u; i < per_run; i++) {
    total += red_v[first + i];
  }
  workgroupBarrier();
  return total;
}

fn strided_sum4(v: vec4f, lid: u32, stride: u32) -> vec4f {
  var x = v;
  for (var o = stride; o < SUBGROUP_SIZE; o <<= 1u) {
    x += subgroupShuffleXor(x, o);
  }
  // Lanes below `stride` in each subgroup hold its sums (stride < SUBGROUP_SIZE
  // keeps them distinct; a wider stride leaves each lane its own value).
  let lane = lid % SUBGROUP_SIZE;
  let per = min(stride, SUBGROUP_SIZE);
  if (lane < per) {
    red_v[(lid / SUBGROUP_SIZE) * per + lane] = x;
  }
  workgroupBarrier();
  var total = vec4f(0.0);
  if (lid < stride) {
    for (var i = 0u; i < RED_WG / max(stride, SUBGROUP_SIZE); i++) {
      total += red_v[i * stride + lid];
    }
  }
  workgroupBarrier();
  return total;
}
