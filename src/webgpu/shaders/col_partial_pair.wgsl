// col_partial of two inputs at once, src and src2 into dst and dst2 (a
// norm's two weight gradients: one dispatch, twice the loads in flight).
// Follows reduce.wgsl (its Params, bindings 0-2, TILE, LANES and store).
@group(0) @binding(3) var<storage, read> src2: array<f32>;
@group(0) @binding(4) var<storage, read_write> dst2: array<f32>;

var<workgroup> red2: array<f32, WG>;

fn store2(i: u32, v: f32) {
  if (p.accumulate != 0u) {
    dst2[i] += v;
  } else {
    dst2[i] = v;
  }
}

@compute @workgroup_size(TILE, LANES)
fn col_partial_pair(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
                    @builtin(local_invocation_id) lid: vec3u) {
  let col = (wg.y * nwg.x + wg.x) * TILE + lid.x;
  let g = wg.z;
  let per = (p.rows + p.groups - 1u) / p.groups;
  let end = min(p.rows, (g + 1u) * per);
  var acc = 0.0;
  var acc2 = 0.0;
  if (col < p.cols) {
    for (var r = g * per + lid.y; r < end; r += LANES) {
      acc += src[r * p.cols + col];
      acc2 += src2[r * p.cols + col];
    }
  }
  red[lid.y * TILE + lid.x] = acc;
  red2[lid.y * TILE + lid.x] = acc2;
  workgroupBarrier();
  if (lid.y == 0u && col < p.cols) {
    var s = red[lid.x];
    var s2 = red2[lid.x];
    for (var l = 1u; l < LANES; l++) {
      s += red[l * TILE + lid.x];
      s2 += red2[l * TILE + lid.x];
    }
    store(g * p.cols + col, s);
    store2(g * p.cols + col, s2);
  }
}
