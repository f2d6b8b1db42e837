// Shared snippet (no entry point) of the matrix-vector matmul kernels
// (matvec.wgsl, matvec_vec4.wgsl): the bindings and epilogue of their
// decode-step fusions, after C (binding 4). With norm_prologue.wgsl (the
// norm of A's rows, NORM) and gelu.wgsl before it:
//   NORM_BIAS: the LayerNorm's bias norm_b, added after its weight;
//   GELU:      C = gelu(alpha * A @ B + bias) (GPT-2's MLP input);
//   RESIDUAL:  C = R + (alpha * A @ B + bias), the product that feeds a
//              residual stream adding itself to it.
// Scalars: an unused binding stands in with A, which in the scalar kernels
// may be shorter than a vec4.
@group(0) @binding(5) var<storage, read> R: array<f32>;       // C's shape (RESIDUAL), else unused
@group(0) @binding(6) var<storage, read> norm_w: array<f32>;  // [k] (NORM), else unused
@group(0) @binding(7) var<storage, read> norm_b: array<f32>;  // [k] (NORM_BIAS), else unused

override RESIDUAL: bool = false;
override GELU: bool = false;
override NORM_BIAS: bool = false;

fn norm_weight(i: u32) -> vec4f {
  return vec4f(norm_w[4u * i], norm_w[4u * i + 1u], norm_w[4u * i + 2u], norm_w[4u * i + 3u]);
}

fn norm_bias(i: u32) -> vec4f {
  if (NORM_BIAS) {
    return vec4f(norm_b[4u * i], norm_b[4u * i + 1u], norm_b[4u * i + 2u], norm_b[4u * i + 3u]);
  }
  return vec4f(0.0);
}

// Value j of a row with statistics s = (mean, r), normed as normed() (the
// scalar kernel's form: one value of the weight and bias read).
fn normed1(v: f32, s: vec2f, j: u32) -> f32 {
  if (NORM == 0u) {
    return v;
  }
  if (NORM == 2u) {
    var b = 0.0;
    if (NORM_BIAS) {
      b = norm_b[j];
    }
    return ((v - s.x) * s.y) * norm_w[j] + b;
  }
  return (v * s.y) * norm_w[j];
}

// The epilogue of one output value v = alpha * A @ B (+ bias) at C's index c.
fn finish(v: f32, c: u32) -> f32 {
  var o = v;
  if (GELU) {
    o = gelu_tanh(o);
  }
  if (RESIDUAL) {
    o += R[c];
  }
  return o;
}
