// Strided f32 copy over a logical [d0, d1, d2, d3] index space (d3
// contiguous on both sides): the attention head reshapes and the KV append.
// One thread per element of src and dst, in the order of the index space:
// the operands are declared by strided_copy_f32.wgsl (an element is one f32)
// or strided_copy_vec4.wgsl (four f32, where the host finds d3, the strides
// and the offsets multiples of 4 and counts them in vec4s). Operands over the
// binding limit are copied as boxes of the index space, each dispatch
// binding the ranges its box touches; the offsets then index into those.
struct Params {
  count: u32,  // d0 * d1 * d2 * d3
  d1: u32,
  d2: u32,
  d3: u32,
  src_s0: u32,
  src_s1: u32,
  src_s2: u32,
  src_offset: u32,
  dst_s0: u32,
  dst_s1: u32,
  dst_s2: u32,
  dst_offset: u32,
}

@group(0) @binding(0) var<uniform> p: Params;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wg.y * nwg.x + wg.x) * 256u + lid;
  if (i >= p.count) {
    return;
  }
  let i3 = i % p.d3;
  var q = i / p.d3;
  let i2 = q % p.d2;
  q = q / p.d2;
  let i1 = q % p.d1;
  let i0 = q / p.d1;
  dst[p.dst_offset + i0 * p.dst_s0 + i1 * p.dst_s1 + i2 * p.dst_s2 + i3] =
      src[p.src_offset + i0 * p.src_s0 + i1 * p.src_s1 + i2 * p.src_s2 + i3];
}
