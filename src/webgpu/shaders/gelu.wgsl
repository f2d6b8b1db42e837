// Shared snippet (no entry point): GPT-2's gelu (the tanh approximation),
// evaluated as x * sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3), which
// equals 0.5 x (1 + tanh(u)) and stays finite where tanh's exp-based forms
// overflow. The activation kernel and the matmul kernels' GELU epilogues
// share it, so all round alike.
const GELU_K: f32 = 0.7978845608028654;  // sqrt(2 / pi)
const GELU_C: f32 = 0.044715;

fn gelu_tanh(v: f32) -> f32 {
  let u = GELU_K * (v + GELU_C * v * v * v);
  return v / (1.0 + exp(-2.0 * u));
}

// gelu_tanh's derivative: with s = sigmoid(2u) and s' = sigmoid(-2u) = 1 - s,
// gelu'(v) = s + 2 v s s' sqrt(2/pi) (1 + 3 * 0.044715 v^2). The activation
// gradient and the matmul's GELU_GRAD epilogue share it.
fn gelu_tanh_grad(v: f32) -> f32 {
  let u = GELU_K * (v + GELU_C * v * v * v);
  let s = 1.0 / (1.0 + exp(-2.0 * u));
  let sc = 1.0 / (1.0 + exp(2.0 * u));
  return s + 2.0 * v * s * sc * GELU_K * (1.0 + 3.0 * GELU_C * v * v);
}
