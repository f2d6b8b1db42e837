// col_partial of two inputs at once, src and src2 into dst and dst2 (a
// norm's two weight gradients: one dispatch, twice the loads in flight).
// Follows reduce.wgsl (its Params, bindings 0-2, col_block, lanes_sum, store).
@group(0) @binding(3) var<storage, read> src2: array<f32>;
@group(0) @binding(4) var<storage, read_write> dst2: array<f32>;

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
  let c = col_block(wg, nwg, lid);
  var acc = vec2f(0.0);
  if (c.col < p.cols) {
    for (var r = c.first; r < c.end; r += LANES) {
      acc += vec2f(src[r * p.cols + c.col], src2[r * p.cols + c.col]);
    }
  }
  let s = lanes_sum(acc.x, lid);
  let s2 = lanes_sum(acc.y, lid);
  if (lid.y == 0u && c.col < p.cols) {
    store(wg.z * p.cols + c.col, s);
    store2(wg.z * p.cols + c.col, s2);
  }
}
