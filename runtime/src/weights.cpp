// Reading this rank's slice of each weight from a memory-mapped model file.
#include "weights.h"

#include <map>

#include "file_util.h"
#include "kernel_util.h"

namespace distrt {

Status LoadWeightsAndConstants(const Program& program, std::shared_ptr<MemoryTracker> tracker,
                               std::vector<Tensor>* values) {
  const proto::RankProgram& p = program.proto();
  std::map<std::string, std::unique_ptr<MappedFile>> files;  // unmapped on return
  for (int i = 0; i < p.weights_size(); ++i) {
    const proto::Weight& w = p.weights(i);
    const int idx = program.ValueIndex(w.value());
    const TensorType& vt = program.value(idx).type;
    if (w.zeros()) {  // optimizer state: no file, starts at zero
      Tensor t;
      DISTRT_RETURN_IF_ERROR(Tensor::Allocate(vt.dtype, vt.shape, &t, tracker, true));
      (*values)[static_cast<size_t>(idx)] = std::move(t);
      continue;
    }
    const std::string& path = program.WeightPath(i);
    auto it = files.find(path);
    if (it == files.end()) {
      std::unique_ptr<MappedFile> m;
      DISTRT_RETURN_IF_ERROR(MappedFile::Open(path, &m));
      it = files.emplace(path, std::move(m)).first;
    }
    const MappedFile& file = *it->second;
    SliceInfo s;
    DISTRT_RETURN_IF_ERROR(ResolveSlice(w.slice(), vt.shape, &s));
    const DType wd = static_cast<DType>(w.dtype());
    const size_t es = DTypeSize(wd);
    const uint64_t bytes = static_cast<uint64_t>(NumElements(s.global_shape)) * es;
    if (w.offset() > file.size() || bytes > file.size() - w.offset()) {  // file changed?
      return OutOfRangeError("weight '", w.name(), "' needs bytes [", w.offset(), ", ",
                             w.offset() + bytes, ") of '", path, "', which has ", file.size(),
                             " bytes");
    }
    const uint8_t* base = file.data() + w.offset();
    Tensor t;
    DISTRT_RETURN_IF_ERROR(Tensor::Allocate(vt.dtype, vt.shape, &t, tracker, false));
    // A slice's rows may be spread over the whole tensor; prefault the
    // tensor's bytes only when this rank reads most of them.
    if (static_cast<uint64_t>(t.byte_size()) * 2 >= bytes) file.Prefault(w.offset(), bytes);
    PrefaultRange(t.raw(), t.byte_size(), /*write=*/true);
    if (wd == vt.dtype) {
      CopyWindow(base, s.global_shape, s.offsets, s.sizes, es, t.data<uint8_t>());
    } else {  // f32/f16/bf16 stored as another of them: converted
      Tensor raw;
      DISTRT_RETURN_IF_ERROR(Tensor::Allocate(wd, vt.shape, &raw, nullptr, false));
      CopyWindow(base, s.global_shape, s.offsets, s.sizes, es, raw.data<uint8_t>());
      DISTRT_RETURN_IF_ERROR(CastBuffer(raw.raw(), wd, t.raw(), vt.dtype, t.num_elements()));
    }
    file.Release(w.offset(), bytes);
    (*values)[static_cast<size_t>(idx)] = std::move(t);
  }
  for (int i = 0; i < p.constants_size(); ++i) {
    const proto::Constant& c = p.constants(i);
    const int idx = program.ValueIndex(c.value());
    const TensorType& vt = program.value(idx).type;
    Tensor t;
    DISTRT_RETURN_IF_ERROR(Tensor::Allocate(vt.dtype, vt.shape, &t, tracker, false));
    if (t.byte_size()) std::memcpy(t.raw(), c.tensor().data().data(), t.byte_size());
    (*values)[static_cast<size_t>(idx)] = std::move(t);
  }
  return OkStatus();
}

}  // namespace distrt
