// strided_copy.wgsl's operands, an element four f32: a thread moves 16
// bytes instead of 4, nearer the memory's bandwidth (the column splits of a
// joined product, the heads' reshapes).
@group(0) @binding(1) var<storage, read> src: array<vec4f>;
@group(0) @binding(2) var<storage, read_write> dst: array<vec4f>;
