#include "file_util.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace distrt {

namespace {
std::string ErrnoText() { return std::strerror(errno); }
}  // namespace

Status ReadFileToString(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError("cannot open '", path, "': ", ErrnoText());
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return DataLossError("error reading '", path, "'");
  *out = ss.str();
  return OkStatus();
}

Status WriteStringToFile(const std::string& path, const std::string& data) {
  std::ofstream outf(path, std::ios::binary | std::ios::trunc);
  if (!outf) return NotFoundError("cannot create '", path, "': ", ErrnoText());
  outf.write(data.data(), static_cast<std::streamsize>(data.size()));
  outf.close();
  if (!outf) return DataLossError("error writing '", path, "'");
  return OkStatus();
}

Status GetFileSize(const std::string& path, uint64_t* size) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    return NotFoundError("cannot stat '", path, "': ", ErrnoText());
  }
  if (!S_ISREG(st.st_mode)) return InvalidArgumentError("'", path, "' is not a regular file");
  *size = static_cast<uint64_t>(st.st_size);
  return OkStatus();
}

std::string DirName(const std::string& path) {
  size_t pos = path.find_last_of('/');
  if (pos == std::string::npos) return ".";
  if (pos == 0) return "/";
  return path.substr(0, pos);
}

std::string JoinPath(const std::string& dir, const std::string& rel) {
  if (rel.empty() || rel[0] == '/' || dir.empty()) return rel;
  if (dir.back() == '/') return dir + rel;
  return dir + "/" + rel;
}

Status MappedFile::Open(const std::string& path, std::unique_ptr<MappedFile>* out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NotFoundError("cannot open '", path, "': ", ErrnoText());
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    std::string err = ErrnoText();
    ::close(fd);
    return DataLossError("cannot stat '", path, "': ", err);
  }
  std::unique_ptr<MappedFile> m(new MappedFile());
  m->path_ = path;
  m->size_ = static_cast<uint64_t>(st.st_size);
  if (m->size_ > 0) {
    void* p = ::mmap(nullptr, m->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      std::string err = ErrnoText();
      ::close(fd);
      return DataLossError("cannot map '", path, "': ", err);
    }
    m->data_ = static_cast<const uint8_t*>(p);
  }
  ::close(fd);
  *out = std::move(m);
  return OkStatus();
}

void MappedFile::Release(uint64_t offset, uint64_t bytes) const {
  if (!data_ || bytes == 0 || offset >= size_) return;
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t begin = offset / page * page;
  const uint64_t end = std::min(size_, offset + bytes);
  // Advice only: a failure leaves the pages mapped, which is still correct.
  ::madvise(const_cast<uint8_t*>(data_) + begin, end - begin, MADV_DONTNEED);
}

void PrefaultRange(const void* data, uint64_t bytes, bool write) {
#if defined(MADV_POPULATE_READ) && defined(MADV_POPULATE_WRITE)
  if (bytes == 0) return;
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t begin = reinterpret_cast<uintptr_t>(data) / page * page;
  const uintptr_t end = reinterpret_cast<uintptr_t>(data) + bytes;
  // Advice only (kernels before 5.14 refuse it): faults then happen on use.
  ::madvise(reinterpret_cast<void*>(begin), end - begin,
            write ? MADV_POPULATE_WRITE : MADV_POPULATE_READ);
#else
  (void)data;
  (void)bytes;
  (void)write;
#endif
}

void MappedFile::Prefault(uint64_t offset, uint64_t bytes) const {
  if (!data_ || offset >= size_) return;
  PrefaultRange(data_ + offset, std::min(bytes, size_ - offset), /*write=*/false);
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace distrt
