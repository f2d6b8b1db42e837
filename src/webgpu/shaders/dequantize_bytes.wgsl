// Bytes of u32 words as unscaled f32 values: one invocation per word,
// out[4 i + j] = byte j of word i (byte 0 = the low 8 bits).
struct Params {
  count: u32,  // words in this dispatch
  _pad0: u32,
  _pad1: u32,
  _pad2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> words: array<u32>;    // [count]
@group(0) @binding(2) var<storage, read_write> out: array<f32>;  // [4 count]

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wg.y * nwg.x + wg.x) * 256u + lid;
  if (i >= p.count) {
    return;
  }
  let w = words[i];
  for (var j = 0u; j < 4u; j++) {
    out[4u * i + j] = f32((w >> (8u * j)) & 255u);
  }
}
