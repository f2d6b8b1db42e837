// Follows flash_bwd_dkv_tiled.wgsl where grad_q is computed as a product
// afterwards (grad_q = scale * dS K): each query tile's dS, as the kernel
// leaves it in workgroup memory (vec4 over keys tk + TK r), goes to ds [B *
// H, Sq, Sk], a row of keys per query, consecutive invocations writing
// consecutive keys. Rows the kernel never visits (queries that see no key of
// the block) are not written: the host reads ds as a lower triangle then.
@group(0) @binding(9) var<storage, read_write> ds: array<f32>;

fn store_ds(lid: u32, bh: u32, t0: u32, n: u32, j0: u32, s_off: u32) {
  let tkn = BK / 4u;
  for (var e = lid; e < BQ * BK; e += BK * BQ / 16u) {
    let t = e / BK;
    let c = e % BK;
    if (t < n && j0 + c < p.seq_k) {
      ds[(bh * p.seq_q + t0 + t) * p.seq_k + j0 + c] = sm[s_off + t * tkn + c % tkn][c / tkn];
    }
  }
}
