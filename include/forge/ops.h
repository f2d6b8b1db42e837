// The ops API: every op validates its inputs (shape, dtype, device), runs on
// the device of its inputs (CPU or WebGPU), and returns its result there.
// Errors are forge::ShapeError / DTypeError / DeviceError / ValueError whose
// message starts with the op name and prints the shapes involved.
// Tensors are dense row-major f32 unless stated.
// Threads: any op may run from several threads at once, on the CPU and on the
// same WebGPU device, when no thread writes a tensor another one uses (the
// in-place ops: optimizer updates, copies into an existing tensor).
// One header per op family:
#pragma once
#include "forge/ops/core.h"       // add, scale, matmul, softmax
#include "forge/ops/nn.h"         // activations, layernorm, reductions, dropout, optimizers
#include "forge/ops/gather.h"     // embeddings, LM head, losses, head reshapes, KV cache
#include "forge/ops/sample.h"     // drawing the next token: greedy, temperature, top-k, top-p
#include "forge/ops/attention.h"  // flash attention (GQA, masks, KV cache, window, dropout) and its backward
#include "forge/ops/llama.h"      // rope, rms_norm, silu gate, elementwise backwards, top_k, conv1d
#include "forge/ops/quant.h"      // byte and MLX affine dequantization, quantized matmul
#include "forge/ops/train.h"      // sgd, adamw_update, mse/ce losses, gradient clipping, copies
