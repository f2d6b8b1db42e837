// The reduction of a split-K matmul: C[row, col] = sum over s of
// part[s, row, col] (+ bias[col]), the splits summed in order, so the result
// is the same on every run (no float atomics). part holds S partial products
// [S, m, n] (alpha already applied) of k-slices computed by matmul_vec4.wgsl
// as a batch; C is written with its row stride and offset (a column block of
// a wider result). GELU and RESIDUAL as matmul_vec4.wgsl's epilogues (C
// dense); preceded by gelu.wgsl, matmul_epilogue.wgsl and
// matmul_partials.wgsl.
@group(0) @binding(1) var<storage, read> part: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wg.y * nwg.x + wg.x) * 256u + lid;
  let mn = p.m * p.n;
  if (i >= mn) {
    return;
  }
  var s = part[i];
  for (var z = 1u; z < p.splits; z++) {
    s += part[z * mn + i];
  }
  let row = i / p.n;
  let col = i % p.n;
  store_c(p.c_offset + row * p.ldc + col, epilogue(s, row, col));
}
