// Shared snippet (no entry point) of the matrix-vector matmul kernels
// (matvec.wgsl, matvec_vec4.wgsl): the bindings and epilogue of their
// decode-step fusions, after C (binding 4). With norm_prologue.wgsl (the
// norm of A's rows, NORM) and gelu.wgsl before it:
//   NORM_BIAS: the LayerNorm's bias norm_b, added after its weight;
//   GELU:      C = gelu(alpha * A @ B + bias) (GPT-2's MLP input);
//   RESIDUAL:  C = R + (alpha * A @ B + bias), the product that feeds a
//              residual stream adding itself to it.
// An unused binding is bound to a stand-in of at least one vec4.
@group(0) @binding(5) var<storage, read> R: array<f32>;         // C's shape (RESIDUAL), else unused
@group(0) @binding(6) var<storage, read> norm_w: array<vec4f>;  // [k / 4] (NORM), else unused
@group(0) @binding(7) var<storage, read> norm_b: array<vec4f>;  // [k / 4] (NORM_BIAS), else unused

override RESIDUAL: bool = false;
override GELU: bool = false;
override NORM_BIAS: bool = false;

fn norm_weight(i: u32) -> vec4f {
  return norm_w[i];
}

fn norm_bias(i: u32) -> vec4f {
  if (NORM_BIAS) {
    return norm_b[i];
  }
  return vec4f(0.0);
}

// Value j of a row with statistics s = (mean, r), normed as normed() (the
// scalar kernel's form: one value of the weight and bias read).
fn normed1(v: f32, s: vec2f, j: u32) -> f32 {
  if (NORM == 0u) {
    return v;
  }
  let w = norm_w[j / 4u][j % 4u];
  if (NORM == 2u) {
    var b = 0.0;
    if (NORM_BIAS) {
      b = norm_b[j / 4u][j % 4u];
    }
    return ((v - s.x) * s.y) * w + b;
  }
  return (v * s.y) * w;
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
