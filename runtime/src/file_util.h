// Small file helpers: whole-file reads, sizes, read-only memory maps.
#ifndef DISTRT_SRC_FILE_UTIL_H_
#define DISTRT_SRC_FILE_UTIL_H_

#include <cstdint>
#include <memory>
#include <string>

#include "distrt/status.h"

namespace distrt {

Status ReadFileToString(const std::string& path, std::string* out);
Status WriteStringToFile(const std::string& path, const std::string& data);
Status GetFileSize(const std::string& path, uint64_t* size);
// Directory part of a path ("." when there is none).
std::string DirName(const std::string& path);
// `rel` if absolute, else dir/rel.
std::string JoinPath(const std::string& dir, const std::string& rel);

// A read-only private mapping of a whole file. Pages are read on first touch,
// so copying a slice reads only the pages the slice covers.
// Maps the pages of a range in one call (MADV_POPULATE_READ/WRITE) so that
// a following copy does not fault page by page; a no-op where unsupported.
void PrefaultRange(const void* data, uint64_t bytes, bool write);

class MappedFile {
 public:
  static Status Open(const std::string& path, std::unique_ptr<MappedFile>* out);
  ~MappedFile();
  const uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // Drops the pages of [offset, offset + bytes) from this process's resident
  // set (they stay in the page cache): after a weight is copied, so a rank's
  // peak memory is its copies, not its copies plus the file.
  void Release(uint64_t offset, uint64_t bytes) const;
  // Maps the pages of [offset, offset + bytes) in one call before they are
  // read (one fault per page costs far more, in a VM especially).
  void Prefault(uint64_t offset, uint64_t bytes) const;

 private:
  MappedFile() = default;
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  std::string path_;
};

}  // namespace distrt

#endif  // DISTRT_SRC_FILE_UTIL_H_
