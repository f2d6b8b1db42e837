// The reduction of a split-K matmul: C[row, col] = sum over s of
// part[s, row, col] (+ bias[col]), the splits summed in order, so the result
// is the same on every run (no float atomics). part holds S partial products
// [S, m, n] (alpha already applied) of k-slices computed by matmul_vec4.wgsl
// as a batch; C is written with its row stride and offset (a column block of
// a wider result). An invocation takes EW_PER outputs 256 apart
// (elementwise_block.wgsl), all their partials loaded before any is stored:
// one output an invocation left too few loads in flight (on an H100, two
// slices of [8192, 768]: 46 -> 35 us). GELU and RESIDUAL
// as matmul_vec4.wgsl's epilogues (C dense); preceded by gelu.wgsl,
// matmul_epilogue.wgsl, matmul_partials.wgsl and elementwise_block.wgsl.
@group(0) @binding(1) var<storage, read> part: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let first = ew_first(wg, nwg, lid);
  let mn = p.m * p.n;
  var s: array<f32, EW_PER>;
  for (var e = 0u; e < EW_PER; e++) {
    let i = first + 256u * e;
    s[e] = select(0.0, part[min(i, mn - 1u)], i < mn);
  }
  for (var z = 1u; z < p.splits; z++) {
    for (var e = 0u; e < EW_PER; e++) {
      let i = first + 256u * e;
      if (i < mn) {
        s[e] += part[z * mn + i];
      }
    }
  }
  for (var e = 0u; e < EW_PER; e++) {
    let i = first + 256u * e;
    if (i < mn) {
      let row = i / p.n;
      let col = i % p.n;
      store_c(p.c_offset + row * p.ldc + col, epilogue(s[e], row, col));
    }
  }
}
