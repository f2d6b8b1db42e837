// Shared snippet (no entry point): row_reduce.wgsl's row layout for the norm
// kernels (row_of, row_lane, ROW_STRIDE, row_sum, row_sum2) with a subgroup
// to each row, for a device whose subgroups of SUBGROUP_SIZE lanes are runs
// of consecutive local invocation indices (the host prepends `enable
// subgroups;` and SUBGROUP_SIZE, as for reduce_subgroup.wgsl). A lane takes
// every SUBGROUP_SIZE-th column and the row's sums are subgroupAdd's: no
// workgroup memory and no barriers, where a workgroup to a row waited at a
// tree of barriers for every sum. A workgroup of WG = 256 holds 256 /
// SUBGROUP_SIZE rows (the host's row_launch, which takes this layout only
// for many rows). The kernels clamp the rows past the last rather than
// return from them: sums stay in uniform control flow.
override WG: u32 = 256u;
const ROW_STRIDE: u32 = SUBGROUP_SIZE;

fn row_of(wg: vec3u, nwg: vec3u, lid: u32) -> u32 {
  return (wg.y * nwg.x + wg.x) * (256u / SUBGROUP_SIZE) + lid / SUBGROUP_SIZE;
}
fn row_lane(lid: u32) -> u32 {
  return lid % SUBGROUP_SIZE;
}
fn row_sum(v: f32, lid: u32) -> f32 {
  return subgroupAdd(v);
}
fn row_sum2(v: vec2f, lid: u32) -> vec2f {
  return subgroupAdd(v);
}
