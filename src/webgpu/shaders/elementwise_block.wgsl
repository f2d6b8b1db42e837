// Shared snippet (no entry point) of the 256-wide elementwise kernels
// (binary, the activations and scale, their gradients): a workgroup takes a
// block of 256 * EW_PER consecutive elements, each invocation EW_PER of them
// 256 apart, so that adjacent invocations still touch adjacent words; the
// kernels load all of an invocation's before they compute any. One element
// an invocation left too few loads in flight to keep a large GPU's memory
// busy (an H100's gelu over [8192, 3072]: 2 TB/s of its 3.35).
const EW_PER: u32 = 4u;

// Element e of the invocation is ew_first(...) + 256 e (the host's grid is
// elementwise_grid's: grids are 2D past the per-dim limit).
fn ew_first(wg: vec3u, nwg: vec3u, lid: u32) -> u32 {
  return (wg.y * nwg.x + wg.x) * (256u * EW_PER) + lid;
}
