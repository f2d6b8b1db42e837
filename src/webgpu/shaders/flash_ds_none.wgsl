// Follows flash_bwd_dkv_tiled.wgsl where grad_q has its own pass
// (flash_bwd_dq.wgsl): dS stays in workgroup memory.
fn store_ds(lid: u32, bh: u32, t0: u32, n: u32, j0: u32, s_off: u32) {}
