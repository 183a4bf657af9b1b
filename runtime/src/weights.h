#ifndef DISTRT_SRC_WEIGHTS_H_
#define DISTRT_SRC_WEIGHTS_H_

#include <vector>

#include "distrt/program.h"

namespace distrt {

// Materialises every weight and constant of `program` into `values`
// (indexed by dense value index; other entries untouched). Weights are read
// through a memory map, copying only this rank's slice; zeros weights are
// allocated zero-filled.
Status LoadWeightsAndConstants(const Program& program, std::shared_ptr<MemoryTracker> tracker,
                               std::vector<Tensor>* values);

}  // namespace distrt

#endif  // DISTRT_SRC_WEIGHTS_H_
