// Shared snippet (no entry point): GPT-2's gelu (the tanh approximation),
// evaluated as x * sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3), which
// equals 0.5 x (1 + tanh(u)) and stays finite where tanh's exp-based forms
// overflow. The activation kernel and the matrix-vector kernels' GELU
// epilogue share it, so both round alike.
const GELU_K: f32 = 0.7978845608028654;  // sqrt(2 / pi)
const GELU_C: f32 = 0.044715;

fn gelu_tanh(v: f32) -> f32 {
  let u = GELU_K * (v + GELU_C * v * v * v);
  return v / (1.0 + exp(-2.0 * u));
}
