// One decode step's rope, cache append and attention in one dispatch
// (forge/ops/llama.h, rope_append_attention): one workgroup per query row
// r = b * H + h (one query a sequence, one split). It rotates its q row and
// its kv head's new k row with the table's row 0 (as rope_append.wgsl, when
// ROPE), writes that k and v to cache slot p.append_at when h is the first
// head of its group, and attends over the cache with the new slot read from
// workgroup memory, not from the cache another workgroup is writing. Output
// as flash_decode.wgsl's single split, without the lse. Preceded by
// flash_params, philox and flash_common; followed by flash_decode_core.
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;        // [B, H * D], not rotated
@group(0) @binding(2) var<storage, read> k_new: array<f32>;    // [B, Hkv * D], not rotated
@group(0) @binding(3) var<storage, read> v_new: array<f32>;    // [B, Hkv * D]
@group(0) @binding(4) var<storage, read> cs: array<f32>;       // [>= 1, D / 2, 2] (ROPE)
@group(0) @binding(5) var<storage, read_write> k: array<f32>;  // cache [B, Sk, Hkv, D]
@group(0) @binding(6) var<storage, read_write> v: array<f32>;
@group(0) @binding(7) var<storage, read> mask: array<f32>;     // unused (flash_common's mask_at)
@group(0) @binding(8) var<storage, read_write> out: array<f32>;  // [B, H * D]

override ROPE: bool = true;

var<workgroup> kn: array<f32, MAX_D>;  // the new key, rotated
var<workgroup> vn: array<f32, MAX_D>;
var<private> new_at: u32;  // the flat index of the new key's first element of this kv head

fn k_elem(idx: u32) -> f32 {
  let rel = idx - new_at;  // wraps above D below new_at
  if (rel < HEAD_DIM) {
    return kn[rel];
  }
  return k[idx];
}

fn v_elem(idx: u32) -> f32 {
  let rel = idx - new_at;
  if (rel < HEAD_DIM) {
    return vn[rel];
  }
  return v[idx];
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let r = wg.y * nwg.x + wg.x;
  if (r >= p.batch * p.heads) {
    return;
  }
  let h = r % p.heads;
  let b = r / p.heads;
  let group = p.heads / p.kv_heads;
  let g = h / group;
  let dim = HEAD_DIM;
  let kv_stride = p.kv_heads * dim;
  let krow = (b * p.kv_heads + g) * dim;
  if (ROPE) {
    let half = dim / 2u;
    for (var d = lid; d < half; d += WG) {
      let c = cs[d * 2u];
      let sn = cs[d * 2u + 1u];
      let qa = q[r * dim + d];
      let qb = q[r * dim + d + half];
      qs[d] = (qa * c - qb * sn) * p.scale;
      qs[d + half] = (qb * c + qa * sn) * p.scale;
      let ka = k_new[krow + d];
      let kb = k_new[krow + d + half];
      kn[d] = ka * c - kb * sn;
      kn[d + half] = kb * c + ka * sn;
    }
  } else {
    for (var d = lid; d < dim; d += WG) {
      qs[d] = q[r * dim + d] * p.scale;
      kn[d] = k_new[krow + d];
    }
  }
  for (var d = lid; d < dim; d += WG) {
    vn[d] = v_new[krow + d];
  }
  workgroupBarrier();
  new_at = (b * p.seq_k + p.append_at) * kv_stride + g * dim;
  if (h % group == 0u) {
    for (var d = lid; d < dim; d += WG) {
      k[new_at + d] = kn[d];
      v[new_at + d] = vn[d];
    }
  }

  let s = decode_attend(lid, b, h, 0u, key_lo(0u), key_hi(0u), b * p.seq_k * kv_stride + g * dim);
  if (lid >= 64u) {
    return;
  }
  let inv = select(0.0, 1.0 / s.total, s.total > 0.0);
  if (lid < dim) {
    out[r * dim + lid] = s.o0 * inv;
  }
  if (lid + 64u < dim) {
    out[r * dim + lid + 64u] = s.o1 * inv;
  }
}
