// Sum reductions in two passes with a fixed order (deterministic results).
//
// col_partial: column sums of src [rows, cols]. Pass 1 splits the rows into
// `groups` contiguous blocks; workgroup (column tile, block g) writes
// dst[g * cols + col], 64 columns by 4 row lanes per workgroup so that loads
// along a row are contiguous. Pass 2 is the same kernel over the partials
// [groups, cols] as one block: four lanes a column there too, where one
// invocation a column waited on each partial in turn.
// sq_partial / sq_final: the sum of squares of src [rows] (flat). Pass 1:
// `groups` workgroups stride over the values and write dst[g]; pass 2: one
// workgroup sums the partials into dst[0].
// With `accumulate` set, pass 1 adds to dst instead of overwriting it (the
// input split into several dispatches under the storage binding limit).
struct Params {
  rows: u32,
  cols: u32,
  groups: u32,
  accumulate: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read_write> dst: array<f32>;

const TILE: u32 = 64u;
const LANES: u32 = 4u;
const WG: u32 = 256u;
var<workgroup> red: array<f32, WG>;

fn store(i: u32, v: f32) {
  if (p.accumulate != 0u) {
    dst[i] += v;
  } else {
    dst[i] = v;
  }
}

// Tree sum of red[0..WG) into red[0] (red filled, barrier not yet passed).
fn tree_sum(lid: u32) {
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) {
      red[lid] += red[lid + s];
    }
    workgroupBarrier();
  }
}

// col_partial's share of the work: column `col` over rows [first, end) of
// row block wg.z, every LANES-th row from the lane's own.
struct ColBlock {
  col: u32,
  first: u32,
  end: u32,
}

fn col_block(wg: vec3u, nwg: vec3u, lid: vec3u) -> ColBlock {
  let per = (p.rows + p.groups - 1u) / p.groups;
  return ColBlock((wg.y * nwg.x + wg.x) * TILE + lid.x, wg.z * per + lid.y, min(p.rows, (wg.z + 1u) * per));
}

// The sum of the LANES lanes' partials of each column (lane 0's result):
// each writes its own into red, then lane 0 adds them in lane order.
fn lanes_sum(acc: f32, lid: vec3u) -> f32 {
  red[lid.y * TILE + lid.x] = acc;
  workgroupBarrier();
  var s = red[lid.x];
  for (var l = 1u; l < LANES; l++) {
    s += red[l * TILE + lid.x];
  }
  workgroupBarrier();  // red free for the next sum
  return s;
}

@compute @workgroup_size(TILE, LANES)
fn col_partial(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
               @builtin(local_invocation_id) lid: vec3u) {
  let c = col_block(wg, nwg, lid);
  var acc = 0.0;
  if (c.col < p.cols) {
    for (var r = c.first; r < c.end; r += LANES) {
      acc += src[r * p.cols + c.col];
    }
  }
  let s = lanes_sum(acc, lid);
  if (lid.y == 0u && c.col < p.cols) {
    store(wg.z * p.cols + c.col, s);
  }
}

@compute @workgroup_size(WG)
fn sq_partial(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  // Four independent loads in flight per round; the sums stay in a fixed order.
  let stride = p.groups * WG;
  var acc = vec4f(0.0);
  var i = wg.x * WG + lid;
  for (; i + 3u * stride < p.rows; i += 4u * stride) {
    let v = vec4f(src[i], src[i + stride], src[i + 2u * stride], src[i + 3u * stride]);
    acc += v * v;
  }
  for (; i < p.rows; i += stride) {
    let v = src[i];
    acc.x += v * v;
  }
  red[lid] = (acc.x + acc.y) + (acc.z + acc.w);
  tree_sum(lid);
  if (lid == 0u) {
    store(wg.x, red[0]);
  }
}

@compute @workgroup_size(WG)
fn sq_final(@builtin(local_invocation_index) lid: u32) {
  var acc = 0.0;
  for (var i = lid; i < p.groups; i += WG) {
    acc += src[i];
  }
  red[lid] = acc;
  tree_sum(lid);
  if (lid == 0u) {
    dst[0] = red[0];
  }
}
