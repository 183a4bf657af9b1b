#include "gemm_onednn.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "via_f32.h"

#ifdef DISTRT_HAS_DNNL
#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace distrt {

#ifdef DISTRT_HAS_DNNL

namespace {

using dnnl::memory;
constexpr auto kF32 = memory::data_type::f32;

const dnnl::engine& Engine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// oneDNN is built with OpenMP here; each call runs on the thread that makes
// it, because distrt's own pool already splits the product. A primitive
// takes its thread count when it is made, so every entry point sets it
// first.
void UseOneThread() {
  thread_local bool done = (omp_set_num_threads(1), true);
  (void)done;
}

dnnl::stream& ThreadStream() {
  UseOneThread();
  thread_local dnnl::stream stream(Engine());
  return stream;
}

// A row-major [rows x cols] matrix with leading dimension ld; `transposed`:
// stored as its transpose ([cols x rows], leading dimension ld).
memory::desc Matrix(int64_t rows, int64_t cols, int64_t ld, bool transposed = false,
                    memory::data_type dtype = kF32) {
  return memory::desc({rows, cols}, dtype, transposed ? memory::dims{1, ld} : memory::dims{ld, 1});
}

dnnl::primitive_attr UserScratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

// The matmul oneDNN picks for [64 x k] x [k x n] with the weights' layout
// left to it.
dnnl::matmul::primitive_desc Probe(int64_t k, int64_t n, memory::data_type dtype = kF32) {
  UseOneThread();
  memory::desc any({k, n}, dtype, memory::format_tag::any);
  return dnnl::matmul::primitive_desc(
      dnnl::matmul::desc(Matrix(64, k, k, false, dtype), any, Matrix(64, n, n, false, dtype)),
      UserScratchpad(), Engine());
}

// The packed weights' element types: f32, and bf16.
memory::data_type OneDnnType(DType dtype) {
  return dtype == DType::kBF16 ? memory::data_type::bf16 : kF32;
}

std::string Message(const dnnl::error& e) { return StrCat("oneDNN: ", e.what()); }

// DISTRT_GEMM, read once: "openblas" sends every GEMM to OpenBLAS;
// "onednn" sends products read in place to oneDNN whatever its kernel (not
// its reference loop), to compare with OpenBLAS where the default leaves
// them to OpenBLAS.
enum class GemmChoice { kDefault, kOpenBlas, kOneDnn };
GemmChoice Choice() {
  static const GemmChoice choice = [] {
    const char* env = std::getenv("DISTRT_GEMM");
    if (env && std::strcmp(env, "openblas") == 0) return GemmChoice::kOpenBlas;
    if (env && std::strcmp(env, "onednn") == 0) return GemmChoice::kOneDnn;
    return GemmChoice::kDefault;
  }();
  return choice;
}
bool OneDnnForced() { return Choice() == GemmChoice::kOneDnn; }

// A matmul primitive with its operand layouts and scratch size. `fast`: a
// blocked (brgemm) kernel. oneDNN falls back to its reference loop for
// layouts its kernels do not take (a result with a row stride wider than
// its columns), and on CPUs without AVX-512 its matmul is `gemm:jit`,
// which OpenBLAS beats: on an AVX2 AMD EPYC (Zen 3) OpenBLAS was as fast or
// faster on 16 of 21 training-step products and 2.2-2.6x faster on the
// weight gradients X^T dY of 256-wide layers (bench/runtime/gemm.sh,
// docs/runtime.md "Matmul").
struct Product {
  dnnl::matmul matmul;
  memory::desc a, b, c, scratch;
  bool fast = false;
};

// Runs `p` on the calling thread with a scratchpad of that thread's.
void Execute(const Product& p, const void* a, const void* b, void* c) {
  thread_local std::vector<uint8_t> scratch;
  if (scratch.size() < p.scratch.get_size()) scratch.resize(p.scratch.get_size());
  const dnnl::engine& e = Engine();
  memory ma(p.a, e, const_cast<void*>(a)), mb(p.b, e, const_cast<void*>(b)), mc(p.c, e, c),
      ms(p.scratch, e, scratch.data());
  dnnl::stream& stream = ThreadStream();
  p.matmul.execute(
      stream,
      {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}, {DNNL_ARG_SCRATCHPAD, ms}});
  stream.wait();
}

Product MakeProduct(const memory::desc& a, const memory::desc& b, const memory::desc& c) {
  UseOneThread();
  Product p;
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), UserScratchpad(), Engine());
  p.a = a;
  p.b = b;
  p.c = c;
  p.scratch = pd.scratchpad_desc();
  p.matmul = dnnl::matmul(pd);
  const char* impl = pd.impl_info_str();
  p.fast = std::strncmp(impl, "brg", 3) == 0 ||
           (OneDnnForced() && std::strncmp(impl, "ref", 3) != 0);
  return p;
}

}  // namespace

bool OneDnnEnabled() { return Choice() != GemmChoice::kOpenBlas; }

namespace {

// The product of row-major matrices in `dtype` read in place, made once per
// geometry (a few dozen in a model) and shared by every thread; executing
// one concurrently is safe with per-thread scratchpads. Null when oneDNN
// cannot make it.
const Product* InPlaceProduct(memory::data_type dtype, int64_t lda, bool ta, int64_t ldb, bool tb,
                              int64_t ldc, int64_t m, int64_t k, int64_t n) {
  using Key = std::tuple<int, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, bool, bool>;
  static std::mutex mu;
  static std::map<Key, Product> products;
  std::lock_guard<std::mutex> lock(mu);
  const Key key{static_cast<int>(dtype), m, k, n, lda, ldb, ldc, ta, tb};
  auto it = products.find(key);
  if (it == products.end())
    it = products
             .emplace(key, MakeProduct(Matrix(m, k, lda, ta, dtype), Matrix(k, n, ldb, tb, dtype),
                                       Matrix(m, n, ldc, false, dtype)))
             .first;
  return &it->second;  // map nodes stay put
}

// Rows of each block in which a transposed A of m rows that is not dense
// is copied: blocks of equal rows (a block of a few rows may round
// otherwise), each copy within 2^20 elements or 64 rows.
int64_t DenseBlockRows(int64_t m, int64_t k) {
  const int64_t most = std::max<int64_t>(64, (int64_t{1} << 20) / std::max<int64_t>(1, k));
  const int64_t count = (m + most - 1) / most;
  return (m + count - 1) / count;
}

// C = the product `product(pc, ldpc)` writes, for a result whose rows are
// wider than its n columns (a block of columns of a larger result),
// computed into rows of its own width and copied.
template <typename T, typename F>
void IntoDenseResult(T* c, int64_t ldc, int64_t m, int64_t n, F product) {
  if (ldc == n) return product(c, n);
  thread_local std::vector<T> dense;
  dense.resize(static_cast<size_t>(m * n));
  product(dense.data(), n);
  for (int64_t r = 0; r < m; ++r)
    std::copy(dense.data() + r * n, dense.data() + (r + 1) * n, c + r * ldc);
}

// C = op(A) op(B) by `product(pa, lda, pb, ldb, pc, ldc, rows)` on dense
// operands. oneDNN 2.6's brgemm takes a matrix only when its stride is its
// own width: a transposed A of stride m, a B of stride n (transposed: k), a
// C of stride n. Otherwise it makes gemm:jit or its reference loop, slower
// and rounding otherwise; f32 products then went to OpenBLAS. A block of a
// larger product has such strides (a block of columns of a weight, a
// thread's rows of a weight gradient X^T dY), so it runs on dense copies:
// B's and C's whole, a transposed A's in blocks of rows (at most max(2^20,
// 64 k) elements). The copies cost a few percent of a block's product at
// 128 rows; at a few rows they cost more, but less than the slower kernels
// did (docs/runtime.md, "Matmul"). Each thread keeps its buffers for later
// products, outside the executor's memory count, as its scratchpad.
template <typename T, typename F>
void OnDenseOperands(const T* a, int64_t lda, bool ta, const T* b, int64_t ldb, bool tb, T* c,
                     int64_t ldc, int64_t m, int64_t k, int64_t n, F product) {
  thread_local std::vector<T> dense_a, dense_b;
  const int64_t width = tb ? k : n, lines = tb ? n : k;
  if (ldb != width) {
    dense_b.resize(static_cast<size_t>(k * n));
    for (int64_t i = 0; i < lines; ++i)
      std::copy(b + i * ldb, b + i * ldb + width, dense_b.data() + i * width);
    b = dense_b.data();
    ldb = width;
  }
  auto rows = [&](const T* pa, int64_t pa_ld, T* pc, int64_t pm) {
    IntoDenseResult(pc, ldc, pm, n,
                    [&](T* d, int64_t ldd) { product(pa, pa_ld, b, ldb, d, ldd, pm); });
  };
  if (!ta || lda == m) return rows(a, lda, c, m);
  const int64_t block = DenseBlockRows(m, k);
  for (int64_t lo = 0; lo < m; lo += block) {
    const int64_t w = std::min(block, m - lo);
    dense_a.resize(static_cast<size_t>(k * w));
    for (int64_t p = 0; p < k; ++p)
      std::copy(a + p * lda + lo, a + p * lda + lo + w, dense_a.data() + p * w);
    rows(dense_a.data(), w, c + lo * ldc, w);
  }
}

}  // namespace

bool OneDnnGemm(const float* a, int64_t lda, bool ta, const float* b, int64_t ldb, bool tb,
                float* c, int64_t ldc, int64_t m, int64_t k, int64_t n) {
  if (!OneDnnEnabled()) return false;
  try {
    // Whether brgemm runs it, asked of the layout it will run in.
    const bool copied = ta && lda != m;
    const int64_t rows = copied ? DenseBlockRows(m, k) : m;
    if (!InPlaceProduct(kF32, copied ? rows : lda, ta, tb ? k : n, tb, n, rows, k, n)->fast)
      return false;
    OnDenseOperands(a, lda, ta, b, ldb, tb, c, ldc, m, k, n,
                    [&](const float* pa, int64_t pa_ld, const float* pb, int64_t pb_ld, float* pc,
                        int64_t pc_ld, int64_t pm) {
                      Execute(*InPlaceProduct(kF32, pa_ld, ta, pb_ld, tb, pc_ld, pm, k, n), pa, pb,
                              pc);
                    });
  } catch (const dnnl::error&) {
    return false;
  }
  return true;
}

namespace {

// A bf16 product oneDNN can make here (2.6 has none on CPUs without AVX-512).
dnnl::matmul::primitive_desc ProbeBF16() {
  UseOneThread();
  const auto bf16 = memory::data_type::bf16;
  return dnnl::matmul::primitive_desc(
      dnnl::matmul::desc(Matrix(64, 768, 768, false, bf16), Matrix(768, 768, 768, false, bf16),
                         Matrix(64, 768, 768, false, bf16)),
      Engine());
}

}  // namespace

bool OneDnnBF16Gemms() {
  // Read at every call (once per instruction, when a program is loaded), so
  // that a test can set it.
  const char* env = std::getenv("DISTRT_BF16_GEMM");
  if (env && std::strcmp(env, "f32") == 0) return false;
  static const bool possible = [] {
    try {
      return OneDnnEnabled() && ProbeBF16().impl_info_str() != nullptr;
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  if (env && std::strcmp(env, "onednn") == 0) return possible;
  return possible && CpuHasHalfArithmetic(DType::kBF16);
}

Status OneDnnGemmBF16(const uint16_t* a, int64_t lda, bool ta, const uint16_t* b, int64_t ldb,
                      bool tb, uint16_t* c, int64_t ldc, int64_t m, int64_t k, int64_t n) {
  try {
    OnDenseOperands(
        a, lda, ta, b, ldb, tb, c, ldc, m, k, n,
        [&](const uint16_t* pa, int64_t pa_ld, const uint16_t* pb, int64_t pb_ld, uint16_t* pc,
            int64_t pc_ld, int64_t pm) {
          Execute(*InPlaceProduct(memory::data_type::bf16, pa_ld, ta, pb_ld, tb, pc_ld, pm, k, n),
                  pa, pb, pc);
        });
  } catch (const dnnl::error& e) {
    return InternalError(Message(e));
  }
  return OkStatus();
}

std::string OneDnnBF16GemmName() {
  if (!OneDnnBF16Gemms()) return "";
  try {
    const dnnl_version_t* v = dnnl_version();
    return StrCat("oneDNN ", v->major, ".", v->minor, ".", v->patch, " ",
                  ProbeBF16().impl_info_str());
  } catch (const dnnl::error&) {
    return "";
  }
}

struct PackedWeights::Impl {
  struct Slab {
    int64_t begin = 0, end = 0;
    memory::desc packed;
    std::shared_ptr<Buffer> bytes;
    mutable std::mutex mu;
    mutable std::map<std::tuple<int64_t, int64_t>, Product> products;  // by rows, lda
  };
  int64_t ldb = 0, k = 0, n = 0;
  bool tb = false;
  DType dtype = DType::kF32;
  std::vector<std::unique_ptr<Slab>> slabs;

  Status Pack(const void* src) {
    UseOneThread();
    const size_t es = DTypeSize(dtype);
    try {
      for (auto& s : slabs) {
        const int64_t w = s->end - s->begin;
        const uint8_t* first = static_cast<const uint8_t*>(src) +
                               static_cast<size_t>(tb ? s->begin * ldb : s->begin) * es;
        memory from(Matrix(k, w, ldb, tb, OneDnnType(dtype)), Engine(),
                    const_cast<uint8_t*>(first));
        memory to(s->packed, Engine(), s->bytes->data());
        dnnl::reorder(from, to).execute(ThreadStream(), from, to);
      }
      ThreadStream().wait();
    } catch (const dnnl::error& e) {
      return InternalError(Message(e));
    }
    return OkStatus();
  }
};

PackedWeights::PackedWeights() : impl_(new Impl()) {}
PackedWeights::~PackedWeights() = default;

bool PackedWeights::Worthwhile(int64_t k, int64_t n, DType dtype) {
  if (!OneDnnEnabled()) return false;
  if (dtype != DType::kF32 && !(dtype == DType::kBF16 && OneDnnBF16Gemms())) return false;
  static std::mutex mu;
  static std::map<std::tuple<int64_t, int64_t, DType>, bool> known;
  std::lock_guard<std::mutex> lock(mu);
  auto it = known.find({k, n, dtype});
  if (it != known.end()) return it->second;
  bool worth = false;
  try {
    dnnl::matmul::primitive_desc pd = Probe(k, n, OneDnnType(dtype));
    const std::string impl = pd.impl_info_str();
    worth = impl.rfind("brg", 0) == 0 &&
            pd.weights_desc().get_size() * 4 <= static_cast<size_t>(k * n) * DTypeSize(dtype) * 5;
  } catch (const dnnl::error&) {
    worth = false;
  }
  known[{k, n, dtype}] = worth;
  return worth;
}

Status PackedWeights::Create(const void* b, DType dtype, int64_t ldb, bool tb, int64_t k, int64_t n,
                             int slabs, std::shared_ptr<MemoryTracker> tracker,
                             std::unique_ptr<PackedWeights>* out) {
  if (dtype != DType::kF32 && dtype != DType::kBF16)
    return InvalidArgumentError("cannot pack a ", DTypeName(dtype), " weight");
  std::unique_ptr<PackedWeights> w(new PackedWeights());
  Impl& im = *w->impl_;
  im.ldb = ldb;
  im.k = k;
  im.n = n;
  im.tb = tb;
  im.dtype = dtype;
  slabs = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(slabs, n / 64)));
  try {
    for (int s = 0; s < slabs; ++s) {
      auto slab = std::make_unique<Impl::Slab>();
      // Slab edges on multiples of 64 columns (oneDNN's widest block).
      slab->begin = n * s / slabs / 64 * 64;
      slab->end = s + 1 == slabs ? n : n * (s + 1) / slabs / 64 * 64;
      slab->packed = Probe(k, slab->end - slab->begin, OneDnnType(dtype)).weights_desc();
      DISTRT_RETURN_IF_ERROR(
          Buffer::Allocate(slab->packed.get_size(), tracker, &slab->bytes, /*zero=*/true));
      im.slabs.push_back(std::move(slab));
    }
  } catch (const dnnl::error& e) {
    return InternalError(Message(e));
  }
  DISTRT_RETURN_IF_ERROR(im.Pack(b));
  *out = std::move(w);
  return OkStatus();
}

Status PackedWeights::Repack(const void* b) { return impl_->Pack(b); }

int PackedWeights::slabs() const { return static_cast<int>(impl_->slabs.size()); }
int64_t PackedWeights::slab_begin(int s) const {
  return impl_->slabs[static_cast<size_t>(s)]->begin;
}
int64_t PackedWeights::slab_end(int s) const { return impl_->slabs[static_cast<size_t>(s)]->end; }

Status PackedWeights::Multiply(int s, const void* a, int64_t lda, int64_t rows, void* c,
                               int64_t ldc) const {
  const Impl::Slab& slab = *impl_->slabs[static_cast<size_t>(s)];
  const int64_t k = impl_->k, w = slab.end - slab.begin;
  const memory::data_type type = OneDnnType(impl_->dtype);
  const size_t es = DTypeSize(impl_->dtype);
  try {
    const Product* p;
    {
      std::lock_guard<std::mutex> lock(slab.mu);
      auto key = std::make_tuple(rows, lda);
      auto it = slab.products.find(key);
      if (it == slab.products.end())
        it = slab.products
                 .emplace(key, MakeProduct(Matrix(rows, k, lda, false, type), slab.packed,
                                           Matrix(rows, w, w, false, type)))
                 .first;
      p = &it->second;  // map nodes stay put
    }
    auto run = [&](auto* pc, int64_t) { Execute(*p, a, slab.bytes->data(), pc); };
    if (es == 2)
      IntoDenseResult(static_cast<uint16_t*>(c), ldc, rows, w, run);
    else
      IntoDenseResult(static_cast<float*>(c), ldc, rows, w, run);
  } catch (const dnnl::error& e) {
    return InternalError(Message(e));
  }
  return OkStatus();
}

std::string PackedWeights::KernelName() {
  try {
    const dnnl_version_t* v = dnnl_version();
    const std::string impl = Probe(768, 768).impl_info_str();
    // Without a brgemm kernel every product goes to OpenBLAS (unless
    // DISTRT_GEMM=onednn).
    if (impl.rfind("brg", 0) != 0 && !OneDnnForced()) return "";
    return StrCat("oneDNN ", v->major, ".", v->minor, ".", v->patch, " ", impl);
  } catch (const dnnl::error&) {
    return "";
  }
}

#else  // no oneDNN: products go to OpenBLAS

bool OneDnnEnabled() { return false; }
bool OneDnnBF16Gemms() { return false; }
Status OneDnnGemmBF16(const uint16_t*, int64_t, bool, const uint16_t*, int64_t, bool, uint16_t*,
                      int64_t, int64_t, int64_t, int64_t) {
  return UnimplementedError("distrt was built without oneDNN");
}
std::string OneDnnBF16GemmName() { return ""; }
bool OneDnnGemm(const float*, int64_t, bool, const float*, int64_t, bool, float*, int64_t, int64_t,
                int64_t, int64_t) {
  return false;
}

struct PackedWeights::Impl {};
PackedWeights::PackedWeights() = default;
PackedWeights::~PackedWeights() = default;
bool PackedWeights::Worthwhile(int64_t, int64_t, DType) { return false; }
Status PackedWeights::Create(const void*, DType, int64_t, bool, int64_t, int64_t, int,
                             std::shared_ptr<MemoryTracker>, std::unique_ptr<PackedWeights>*) {
  return UnimplementedError("distrt was built without oneDNN");
}
Status PackedWeights::Repack(const void*) {
  return UnimplementedError("distrt was built without oneDNN");
}
int PackedWeights::slabs() const { return 0; }
int64_t PackedWeights::slab_begin(int) const { return 0; }
int64_t PackedWeights::slab_end(int) const { return 0; }
Status PackedWeights::Multiply(int, const void*, int64_t, int64_t, void*, int64_t) const {
  return UnimplementedError("distrt was built without oneDNN");
}
std::string PackedWeights::KernelName() { return ""; }

#endif

}  // namespace distrt
