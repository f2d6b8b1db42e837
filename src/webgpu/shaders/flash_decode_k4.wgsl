// Shared snippet (no entry point) of flash_decode.wgsl, in place of
// flash_decode_k.wgsl for head sizes a multiple of 4 (so every key starts
// at a whole vec4): the key read as vec4s, a quarter of the loads. On an
// H100, GPT-2 124M decoded at 1,229-1,241 tokens/s against 1,183-1,187 with
// scalar loads (three calls each, one command). k's
// binding declared again with vec4 elements; flash_decode uses only this
// one (WGSL allows one binding to two variables no entry point both uses).
@group(0) @binding(2) var<storage, read> k4: array<vec4f>;

fn key_dot(kb: u32) -> f32 {
  var s = vec4f(0.0);
  for (var d = 0u; d < HEAD_DIM; d += 4u) {
    s += vec4f(qs[d], qs[d + 1u], qs[d + 2u], qs[d + 3u]) * k4[(kb + d) / 4u];
  }
  return (s.x + s.y) + (s.z + s.w);
}
