// Shared snippet (no entry point) of softmax.wgsl and softmax_bwd.wgsl: the
// rows' parameters and the causal mask. Row row_base + r is query
// (row_base + r) % q_len and sees keys j <= query + key_offset.
struct Params {
  rows: u32,
  cols: u32,
  causal: u32,
  q_len: u32,
  key_offset: u32,
  row_base: u32,  // global index of this chunk's first row
  _pad0: u32,
  _pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;

// Keys [0, visible_keys(row)) of this chunk's row take part; the rest are masked.
fn visible_keys(row: u32) -> u32 {
  if (p.causal == 0u) {
    return p.cols;
  }
  return min(p.cols, (p.row_base + row) % p.q_len + p.key_offset + 1u);
}
