// Shared snippet of the tiled matmul kernels (matmul.wgsl, matmul_vec4.wgsl;
// after matmul_params.wgsl): the part of op(A) a product reads
// (MatmulOptions::a_triangle) and the part of C it computes (c_triangle).
// TRI = 1 reads A[i, j] for j <= i (lower), 2 for j >= i (upper); the other
// side is zero. A tile of rows [row0, row0 + rows) sums k over
// [tri_k_begin, tri_k_end) only: the slices wholly on the zero side are
// skipped, and the loads of the slices that cross the diagonal zero what
// lies beyond it. TRI_C (1 lower, 2 upper) stores zero outside C's
// triangle; a tile wholly outside it sums nothing.
override TRI: u32 = 0u;
override TRI_C: u32 = 0u;

// Whether (row, col) lies in the triangle `tri` (0: everything) keeps.
fn in_triangle(tri: u32, row: u32, col: u32) -> bool {
  if (tri == 1u) {
    return col <= row;
  }
  if (tri == 2u) {
    return col >= row;
  }
  return true;
}

fn tri_keeps(row: u32, col: u32) -> bool {
  return in_triangle(TRI, row, col);
}

// A tile of C at (row0, col0), rows x cols, wholly outside TRI_C's triangle.
fn tri_c_skips(row0: u32, col0: u32, rows: u32, cols: u32) -> bool {
  if (TRI_C == 1u) {
    return col0 > row0 + rows - 1u;
  }
  if (TRI_C == 2u) {
    return col0 + cols - 1u < row0;
  }
  return false;
}

fn tri_k_begin(row0: u32) -> u32 {
  if (TRI == 2u) {
    return min(row0, p.k);
  }
  return 0u;
}

fn tri_k_end(row0: u32, rows: u32) -> u32 {
  if (TRI == 1u) {
    return min(row0 + rows, p.k);
  }
  return p.k;
}

// A vec4 of A at (row, col): four columns of a row, or four rows of a column
// (`down`), with the lanes beyond the diagonal zeroed.
fn tri_mask4(v: vec4<f32>, row: u32, col: u32, down: bool) -> vec4<f32> {
  if (TRI == 0u) {
    return v;
  }
  var out = v;
  for (var e = 0u; e < 4u; e++) {
    if (!tri_keeps(select(row, row + e, down), select(col + e, col, down))) {
      out[e] = 0.0;
    }
  }
  return out;
}
