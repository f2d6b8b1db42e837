// Flash attention backward, after flash_bwd_dkv_tiled with split query
// heads or after the products of the scores' gradients: grad_k and grad_v of
// each KV head as the sum, in head order, of the partials of its group's
// query heads (with one head a group, the products' head-major partials
// moved token-major). One invocation per vec4 of grad_k. Preceded by
// flash_params.
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> part_k: array<vec4f>;  // [B, Sk, H, D], HEAD_MAJOR [B, H, Sk, D]
@group(0) @binding(2) var<storage, read> part_v: array<vec4f>;
@group(0) @binding(3) var<storage, read_write> dk: array<vec4f>;  // [B, Sk, Hkv, D]
@group(0) @binding(4) var<storage, read_write> dv: array<vec4f>;

override HEAD_MAJOR: bool = false;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let d4 = HEAD_DIM / 4u;
  let x = (wg.y * nwg.x + wg.x) * 64u + lid;  // ((b * Sk + j) * Hkv + g) * D/4 + col
  if (x >= p.batch * p.seq_k * p.kv_heads * d4) {
    return;
  }
  let col = x % d4;
  let row = x / d4;  // (b * Sk + j) * Hkv + g
  let group = p.heads / p.kv_heads;
  // Head g * group of row (b, j), and the distance between heads.
  var src = row * group * d4 + col;
  var step = d4;
  if (HEAD_MAJOR) {
    let g = row % p.kv_heads;
    let j = (row / p.kv_heads) % p.seq_k;
    let b = row / (p.kv_heads * p.seq_k);
    src = ((b * p.heads + g * group) * p.seq_k + j) * d4 + col;
    step = p.seq_k * d4;
  }
  var sk = vec4f(0.0);
  var sv = vec4f(0.0);
  for (var hh = 0u; hh < group; hh++) {
    sk += part_k[src + hh * step];
    sv += part_v[src + hh * step];
  }
  dk[x] = sk;
  dv[x] = sv;
}
