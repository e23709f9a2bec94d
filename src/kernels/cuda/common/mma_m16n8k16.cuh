// The bf16 tensor-core MMA every matrix kernel builds on: m16n8k16, f32 accumulators.
//
// Fragment layouts (PTX ISA, "Matrix Fragments for mma.m16n8k16"), with g = lane / 4 and
// t = lane % 4:
//   A 16x16 (4 x b32): a0 = row g, cols 2t..2t+1; a1 = row g+8, cols 2t..; a2 = row g, cols
//                      8+2t..; a3 = row g+8, cols 8+2t..
//   B 16x8  (2 x b32): b0 = rows 2t..2t+1, col g; b1 = rows 8+2t.., col g
//   C 16x8  (4 x f32): c0, c1 = row g, cols 2t, 2t+1; c2, c3 = row g+8, cols 2t, 2t+1
#pragma once

#include <cstdint>

namespace sgl::kernels::cuda {

// d[16x8] += a[16x16] * b[16x8].
__device__ __forceinline__ void mma_bf16_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                               uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

}  // namespace sgl::kernels::cuda
