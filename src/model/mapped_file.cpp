// MappedFile: POSIX open + fstat + mmap, refusing anything but regular files.
#include "model/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace sgl::model {

Result<MappedFile> MappedFile::open(const std::filesystem::path& path) {
  const std::string name = path.string();
  // NOTE: O_NONBLOCK so that opening a FIFO returns at once (and is then refused) instead of
  // waiting for a writer; it changes nothing for regular files.
  const int fd = ::open(name.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) return not_found("no such file or directory: " + name);
    return invalid_argument("cannot open " + name + ": " + std::strerror(err));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return invalid_argument("cannot stat " + name + ": " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return invalid_argument("not a regular file: " + name);
  }
  MappedFile file;
  file.size_ = static_cast<size_t>(st.st_size);
  if (file.size_ > 0) {  // mmap of zero bytes fails; an empty file is an empty mapping.
    void* p = ::mmap(nullptr, file.size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      return invalid_argument("cannot map " + name + ": " + std::strerror(err));
    }
    file.data_ = static_cast<const uint8_t*>(p);
  }
  ::close(fd);  // the mapping keeps the file alive
  return file;
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

Result<std::string> read_small_file(const std::filesystem::path& path, uint64_t max_bytes) {
  SGL_ASSIGN_OR_RETURN(MappedFile file, MappedFile::open(path));
  if (file.size() > max_bytes) {
    return invalid_argument(path.string() + ": " + std::to_string(file.size()) +
                            " bytes, more than the " + std::to_string(max_bytes) +
                            " a file of its kind may have");
  }
  return std::string(reinterpret_cast<const char*>(file.data()), file.size());
}

}  // namespace sgl::model
