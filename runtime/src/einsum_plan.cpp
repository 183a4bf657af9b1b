#include "einsum_plan.h"

#include "kernel_util.h"

namespace distrt {

Status ParseEinsum(const AttrReader& attrs, const std::vector<const Shape*>& shapes,
                   EinsumSpec* e, Shape* out_shape) {
  std::string eq;
  DISTRT_RETURN_IF_ERROR(attrs.GetString("equation", "", &eq));
  const size_t arrow = eq.find("->");
  if (arrow == std::string::npos) {
    return InvalidArgumentError("einsum: equation '", eq, "' has no '->'");
  }
  e->out = eq.substr(arrow + 2);
  e->terms.clear();
  std::string lhs = eq.substr(0, arrow);
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    e->terms.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (e->terms.size() != shapes.size()) {
    return InvalidArgumentError("einsum: equation '", eq, "' has ", e->terms.size(),
                                " terms for ", shapes.size(), " inputs");
  }
  e->extent.clear();
  for (size_t i = 0; i < shapes.size(); ++i) {
    const std::string& t = e->terms[i];
    if (t.size() != shapes[i]->size()) {
      return InvalidArgumentError("einsum: term '", t, "' for input ", i, " of rank ",
                                  shapes[i]->size());
    }
    for (size_t d = 0; d < t.size(); ++d) {
      auto [it, inserted] = e->extent.insert({t[d], (*shapes[i])[d]});
      if (!inserted && it->second != (*shapes[i])[d]) {
        return InvalidArgumentError("einsum: letter '", std::string(1, t[d]), "' has extents ",
                                    it->second, " and ", (*shapes[i])[d]);
      }
    }
  }
  out_shape->clear();
  for (size_t d = 0; d < e->out.size(); ++d) {
    const char c = e->out[d];
    if (!e->extent.count(c) || e->out.find(c) != d) {
      return InvalidArgumentError("einsum: result letter '", std::string(1, c),
                                  "' is unknown or repeats");
    }
    out_shape->push_back(e->extent[c]);
  }
  return OkStatus();
}

// Strides of `shape` (row-major) summed per letter of `term`, laid out in
// the order of `letters` (0 for a letter the term lacks): a repeated letter
// walks the diagonal.
std::vector<int64_t> LetterStrides(const std::string& term, const Shape& shape,
                                   const std::string& letters) {
  std::vector<int64_t> dim_stride(term.size());
  int64_t s = 1;
  for (size_t d = term.size(); d-- > 0;) {
    dim_stride[d] = s;
    s *= shape[d];
  }
  std::vector<int64_t> out(letters.size(), 0);
  for (size_t d = 0; d < term.size(); ++d) out[letters.find(term[d])] += dim_stride[d];
  return out;
}

// The letters of a two-operand product that is a batched GEMM, or false.
// Each group keeps the order its letters have in the first operand (n: in
// the second), so that an operand already laid out as [batch, m, k] is
// read in place and copies move long contiguous runs.
bool MatmulLetters(const EinsumSpec& e, std::string* batch, std::string* m, std::string* n,
                   std::string* k) {
  if (e.terms.size() != 2) return false;
  const std::string &a = e.terms[0], &b = e.terms[1];
  for (const std::string* t : {&a, &b}) {
    for (size_t d = 0; d < t->size(); ++d) {
      if (t->find((*t)[d]) != d) return false;
    }
  }
  for (const auto& [c, s] : e.extent) {
    const bool in_a = a.find(c) != std::string::npos, in_b = b.find(c) != std::string::npos;
    if (in_a != in_b && e.out.find(c) == std::string::npos) return false;  // summed within one
  }
  for (char c : a) {
    const bool in_b = b.find(c) != std::string::npos, in_out = e.out.find(c) != std::string::npos;
    (in_b ? (in_out ? batch : k) : m)->push_back(c);
  }
  for (char c : b) {
    if (a.find(c) == std::string::npos) n->push_back(c);
  }
  return true;
}

std::string LoopLetters(const EinsumSpec& e) {
  std::string letters = e.out;
  for (const auto& [c, s] : e.extent) {
    if (letters.find(c) == std::string::npos) letters += c;
  }
  return letters;
}

int64_t Extent(const EinsumSpec& e, const std::string& letters) {
  int64_t p = 1;
  for (char c : letters) p *= e.extent.at(c);
  return p;
}

std::vector<int64_t> SizesOf(const EinsumSpec& e, const std::string& letters) {
  std::vector<int64_t> s;
  for (char c : letters) s.push_back(e.extent.at(c));
  return s;
}

}  // namespace distrt
