// f32 GEMMs through oneDNN's matmul where it has a brgemm kernel (CPUs with
// AVX-512), for the shape classes where they beat OpenBLAS on the machines
// measured (docs/runtime.md, "Matmul"): products by a constant weight, which
// is reordered once into the blocked layout the kernel reads (OpenBLAS packs
// the same weight again on every call), and products by a matrix read in
// place. bf16 GEMMs through oneDNN where the CPU has bf16 instructions.
#ifndef DISTRT_SRC_GEMM_ONEDNN_H_
#define DISTRT_SRC_GEMM_ONEDNN_H_

#include <cstdint>
#include <memory>
#include <string>

#include "kernel.h"

namespace distrt {

// oneDNN is built in and DISTRT_GEMM is not "openblas" (which sends every
// GEMM to OpenBLAS, for comparisons).
bool OneDnnEnabled();

// C[m x n] = op(A)[m x k] * op(B)[k x n], row-major with leading
// dimensions, op transposing the stored matrix when ta / tb; read in place. False when it did
// not run (no oneDNN, or oneDNN failed): the caller multiplies otherwise.
bool OneDnnGemm(const float* a, int64_t lda, bool ta, const float* b, int64_t ldb, bool tb,
                float* c, int64_t ldc, int64_t m, int64_t k, int64_t n);

// Whether bf16 products run in bf16 through oneDNN (f32 accumulation, one
// rounding of the result) instead of widened to f32: by default where the
// CPU has bf16 instructions (AVX512-BF16, AMX); DISTRT_BF16_GEMM=onednn
// asks for it anywhere (on other CPUs oneDNN's reference kernel: for
// tests), DISTRT_BF16_GEMM=f32 never (to compare).
bool OneDnnBF16Gemms();

// C[m x n] = op(A)[m x k] * op(B)[k x n] in bf16, as OneDnnGemm lays them
// out. An error when oneDNN cannot (or is not built in).
Status OneDnnGemmBF16(const uint16_t* a, int64_t lda, bool ta, const uint16_t* b, int64_t ldb,
                      bool tb, uint16_t* c, int64_t ldc, int64_t m, int64_t k, int64_t n);

// The oneDNN kernel bf16 products run on ("" when they run through f32).
std::string OneDnnBF16GemmName();

// op(B) [k x n] in oneDNN's layout, split into column slabs so that several
// threads can each multiply by their own columns (few rows, many columns).
// f32, or bf16 where bf16 products run in bf16 (OneDnnBF16Gemms).
class PackedWeights {
 public:
  ~PackedWeights();

  // Whether packing pays for op(B) of this shape and dtype on this CPU:
  // oneDNN has a blocked (brgemm) kernel for it and the blocked copy is at
  // most a quarter larger than the weight (a narrow n is padded to a whole
  // block).
  static bool Worthwhile(int64_t k, int64_t n, DType dtype = DType::kF32);

  // Packs op(B), where B (of `dtype`) is stored row-major with leading
  // dimension ldb and op transposes it when `tb`, into `slabs` column
  // blocks. The bytes are counted by `tracker`.
  static Status Create(const void* b, DType dtype, int64_t ldb, bool tb, int64_t k, int64_t n,
                       int slabs, std::shared_ptr<MemoryTracker> tracker,
                       std::unique_ptr<PackedWeights>* out);

  // Packs new contents of the same weight (a training step updated it).
  Status Repack(const void* b);

  int slabs() const;
  int64_t slab_begin(int s) const;  // first column of slab s
  int64_t slab_end(int s) const;

  // C[rows x slab columns] = A[rows x k] * slab s; A and C (of the weight's
  // dtype) row-major with leading dimensions lda and ldc (C points at the
  // slab's first column). Safe to call from several threads at once.
  Status Multiply(int s, const void* a, int64_t lda, int64_t rows, void* c, int64_t ldc) const;

  // The oneDNN kernel packed products run on ("" without oneDNN).
  static std::string KernelName();

 private:
  PackedWeights();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace distrt

#endif  // DISTRT_SRC_GEMM_ONEDNN_H_
