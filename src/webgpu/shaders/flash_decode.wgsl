// Flash attention forward for a few queries over many keys (decode): one
// workgroup per (query row, key split), the body in flash_decode_core.wgsl.
// Writes the split's partial (m, l, acc[D]) to part for flash_combine.wgsl;
// with one split (splits == 1) it writes the row's output to part (then the
// output tensor [rows, D]) and its lse as flash_combine.wgsl would, and no
// combine runs. Preceded by flash_params, philox and flash_common; followed
// by flash_decode_core.
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read> mask: array<f32>;
@group(0) @binding(5) var<storage, read_write> part: array<f32>;  // [rows, splits, D + 2], or out [rows, D]
@group(0) @binding(6) var<storage, read_write> lse: array<f32>;   // [B, H, Sq] (one split only)

fn k_elem(idx: u32) -> f32 {
  return k[idx];
}

fn v_elem(idx: u32) -> f32 {
  return v[idx];
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let w = wg.y * nwg.x + wg.x;
  let r = w / p.splits;  // (b * Sq + i) * H + h
  let sp = w % p.splits;
  if (r >= p.batch * p.seq_q * p.heads) {
    return;
  }
  let h = r % p.heads;
  let i = (r / p.heads) % p.seq_q;
  let b = r / (p.heads * p.seq_q);
  let g = h / (p.heads / p.kv_heads);
  let dim = HEAD_DIM;
  for (var d = lid; d < dim; d += WG) {
    qs[d] = q[r * dim + d] * p.scale;
  }
  workgroupBarrier();

  let lo = max(key_lo(i), sp * p.split_len);
  let hi = min(key_hi(i), sp * p.split_len + p.split_len);
  let kv_base = b * p.seq_k * p.kv_heads * dim + g * dim;
  let s = decode_attend(lid, b, h, i, lo, hi, kv_base);
  if (lid >= 64u) {
    return;
  }
  let c0 = lid;
  let c1 = lid + 64u;
  if (p.splits == 1u) {
    // flash_combine's result for one split: M = m, total = l.
    let inv = select(0.0, 1.0 / s.total, s.total > 0.0);
    if (c0 < dim) {
      part[r * dim + c0] = s.o0 * inv;
    }
    if (c1 < dim) {
      part[r * dim + c1] = s.o1 * inv;
    }
    if (lid == 0u) {
      lse[(b * p.heads + h) * p.seq_q + i] = select(p.neg_inf, s.m + log(s.total), s.total > 0.0);
    }
    return;
  }
  let base = (r * p.splits + sp) * (dim + 2u);
  if (lid == 0u) {
    part[base] = s.m;
    part[base + 1u] = s.total;
  }
  if (c0 < dim) {
    part[base + 2u + c0] = s.o0;
  }
  if (c1 < dim) {
    part[base + 2u + c1] = s.o1;
  }
}
