// strided_copy.wgsl four elements at a time: the same index space and
// parameters, every extent, stride and offset counted in vec4s (the host
// takes this form when d3, the strides and the offsets are multiples of 4).
// A thread moves 16 bytes instead of 4: the column splits of a joined
// product and the head reshapes run nearer the memory's bandwidth.
struct Params {
  count: u32,  // d0 * d1 * d2 * d3, in vec4s
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
@group(0) @binding(1) var<storage, read> src: array<vec4f>;
@group(0) @binding(2) var<storage, read_write> dst: array<vec4f>;

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
