// Shared snippet (no entry point) of the kernels that give one workgroup of
// WG invocations to each row (the norms, softmax and its backward): the row
// index and workgroup-wide sums and maxima, returned to every invocation.
// WG is set per launch (row_workgroup in webgpu/launch.h): the row length
// rounded up to a power of two, at most 256. Lanes past the row would only add
// zeros (or the lowest value) to the trees, so the results do not depend on it.
override WG: u32 = 256u;
var<workgroup> red: array<vec2f, WG>;

// The row this workgroup normalises (grids are 2D past the per-dim limit).
fn row_index(wg: vec3u, nwg: vec3u) -> u32 {
  return wg.y * nwg.x + wg.x;
}

// The row layout of the norm kernels (row_norm.wgsl), which row_subgroup.wgsl
// gives a subgroup to a row instead: an invocation's row, its first column
// and the step to its next, and the sums over its row.
override ROW_STRIDE: u32 = WG;
fn row_of(wg: vec3u, nwg: vec3u, lid: u32) -> u32 {
  return row_index(wg, nwg);
}
fn row_lane(lid: u32) -> u32 {
  return lid;
}
fn row_sum(v: f32, lid: u32) -> f32 {
  return workgroup_sum(v, lid);
}
fn row_sum2(v: vec2f, lid: u32) -> vec2f {
  return workgroup_sum2(v, lid);
}

// Both sums of v over the workgroup, returned to every invocation.
fn workgroup_sum2(v: vec2f, lid: u32) -> vec2f {
  red[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) {
      red[lid] += red[lid + s];
    }
    workgroupBarrier();
  }
  let total = red[0];
  workgroupBarrier();
  return total;
}

fn workgroup_sum(v: f32, lid: u32) -> f32 {
  return workgroup_sum2(vec2f(v, 0.0), lid).x;
}

fn workgroup_max(v: f32, lid: u32) -> f32 {
  red[lid] = vec2f(v, 0.0);
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) {
      red[lid].x = max(red[lid].x, red[lid + s].x);
    }
    workgroupBarrier();
  }
  let total = red[0].x;
  workgroupBarrier();
  return total;
}
