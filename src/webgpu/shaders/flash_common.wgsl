// Shared snippet (no entry point): visibility, mask and dropout of one
// (b, h, i, j) score. Needs flash_params.wgsl and philox.wgsl, and the
// kernel's `p` uniform and `mask` binding.

// First key visible to query i by position.
fn key_lo(i: u32) -> u32 {
  if (p.window == 0u) {
    return 0u;
  }
  let pos = p.kv_offset + i;
  return select(0u, pos + 1u - p.window, pos + 1u > p.window);
}

// One past the last key visible to query i by position.
fn key_hi(i: u32) -> u32 {
  if (p.causal == 0u) {
    return p.seq_k;
  }
  return min(p.seq_k, p.kv_offset + i + 1u);
}

fn mask_at(b: u32, h: u32, i: u32, j: u32) -> f32 {
  if (p.has_mask == 0u) {
    return 0.0;
  }
  return mask[b * p.mask_sb + h * p.mask_sh + i * p.mask_si + j * p.mask_sj];
}

// 0 or 1 / (1 - p) for probability (b, h, i, j): element
// ((b * H + h) * Sq + i) * Sk + j of the probability tensor, as dropout.wgsl
// numbers the elements of a tensor (a 64-bit index as two words).
fn keep_factor(b: u32, h: u32, i: u32, j: u32) -> f32 {
  if (p.dropout == 0u) {
    return 1.0;
  }
  let row = (b * p.heads + h) * p.seq_q + i;
  let lo0 = row * p.seq_k;
  let lo = lo0 + j;
  let hi = mulhi(row, p.seq_k) + select(0u, 1u, lo < lo0);
  return select(0.0, p.drop_scale, philox_word0(lo, hi, p.k0, p.k1) >= p.threshold);
}

// Query row r = (b * Sq + i) * H + h of q [B, Sq, H, D] (the decode
// kernels' rows), and g, the kv head its head reads.
struct QueryRow {
  b: u32,
  i: u32,
  h: u32,
  g: u32,
}

fn query_row(r: u32) -> QueryRow {
  let h = r % p.heads;
  return QueryRow(r / (p.heads * p.seq_q), (r / p.heads) % p.seq_q, h, h / (p.heads / p.kv_heads));
}

// One query row's online softmax over its keys in order (flash_fwd,
// flash_decode_serial): the running max m and the sum l of exp(s - m).
struct OnlineRow {
  m: f32,
  l: f32,
}

// Takes key j's score s into the row: a masked score changes nothing; a new
// maximum rescales l and acc (the row's weighted sum of V, HEAD_DIM values).
// Returns the weight of key j's value row, 0 when masked or dropped.
fn online_take(row: ptr<function, OnlineRow>, acc: ptr<function, array<f32, MAX_D>>, s: f32,
               b: u32, h: u32, i: u32, j: u32) -> f32 {
  if (s <= MASKED) {
    return 0.0;
  }
  if (s > (*row).m) {
    let c = exp((*row).m - s);
    (*row).l *= c;
    for (var d = 0u; d < HEAD_DIM; d++) {
      (*acc)[d] *= c;
    }
    (*row).m = s;
  }
  let e = exp(s - (*row).m);
  (*row).l += e;
  return e * keep_factor(b, h, i, j);
}
