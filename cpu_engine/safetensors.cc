#include "cpu_engine/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "cpu_engine/internal/json_fields.h"

namespace switchyard::cpu_engine {
namespace {

using internal::Json;
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;  // the format's own limit

uint64_t DtypeBytes(const std::string& dtype) {
  if (dtype == "F32" || dtype == "I32" || dtype == "U32") return 4;
  if (dtype == "BF16" || dtype == "F16" || dtype == "I16" || dtype == "U16") return 2;
  if (dtype == "F64" || dtype == "I64" || dtype == "U64") return 8;
  if (dtype == "I8" || dtype == "U8" || dtype == "BOOL" || dtype == "F8_E4M3" || dtype == "F8_E5M2")
    return 1;
  return 0;
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

Status PreadAll(int fd, void* dst, uint64_t bytes, uint64_t offset, const std::string& what) {
  auto* p = static_cast<char*>(dst);
  while (bytes > 0) {
    ssize_t n = ::pread(fd, p, bytes, static_cast<off_t>(offset));
    if (n <= 0) return Status::DataLoss(what + ": short read (file truncated?)");
    p += n;
    bytes -= static_cast<uint64_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return Status::OK();
}

// One header entry checked against the data section [data_start, file_size).
Result<TensorInfo> ParseEntry(const std::string& path, const std::string& name, const Json& e,
                              uint64_t data_start, uint64_t file_size) {
  const std::string where = path + ": tensor '" + name + "'";
  if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") ||
      !e.contains("data_offsets") || !e["dtype"].is_string() || !e["shape"].is_array() ||
      !e["data_offsets"].is_array() || e["data_offsets"].size() != 2)
    return Status::InvalidArgument(where + ": header entry needs dtype, shape, data_offsets");
  TensorInfo t;
  t.file = path;
  t.dtype = e["dtype"].get<std::string>();
  uint64_t numel = 1;
  for (const Json& d : e["shape"]) {
    if (!d.is_number_unsigned()) return Status::InvalidArgument(where + ": bad shape");
    t.shape.push_back(d.get<int64_t>());
    numel *= d.get<uint64_t>();
  }
  const Json& off = e["data_offsets"];
  if (!off[0].is_number_unsigned() || !off[1].is_number_unsigned())
    return Status::InvalidArgument(where + ": data_offsets must be non-negative integers");
  const uint64_t begin = off[0].get<uint64_t>(), end = off[1].get<uint64_t>();
  if (begin > end || end > file_size - data_start)
    return Status::DataLoss(where + ": data_offsets [" + std::to_string(begin) + ", " +
                            std::to_string(end) + ") outside the " +
                            std::to_string(file_size - data_start) +
                            "-byte data section (file truncated?)");
  const uint64_t elem = DtypeBytes(t.dtype);
  if (elem != 0 && end - begin != numel * elem)
    return Status::InvalidArgument(where + ": " + std::to_string(end - begin) +
                                   " bytes for shape " + ShapeText(t.shape) + " of " + t.dtype);
  t.offset = data_start + begin;
  t.bytes = end - begin;
  return t;
}

}  // namespace

float F16ToFloat(uint16_t v) {
  const uint32_t sign = static_cast<uint32_t>(v & 0x8000) << 16;
  uint32_t exp = (v >> 10) & 0x1f, mant = v & 0x3ff, bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);  // inf / nan
  } else if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        mant <<= 1;
        ++e;
      } while ((mant & 0x400) == 0);
      bits = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((mant & 0x3ff) << 13);
    }
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

SafetensorsSet::~SafetensorsSet() {
  for (auto& [file, fd] : fds_) ::close(fd);
}

Result<std::unique_ptr<SafetensorsSet>> SafetensorsSet::Open(
    const std::vector<std::string>& files) {
  std::unique_ptr<SafetensorsSet> set(new SafetensorsSet());
  for (const auto& f : files) SY_RETURN_IF_ERROR(set->AddFile(f));
  return set;
}

Result<std::unique_ptr<SafetensorsSet>> SafetensorsSet::OpenDir(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.path().extension() == ".safetensors") files.push_back(e.path().string());
  if (ec) return Status::NotFound(dir + ": cannot list (" + ec.message() + ")");
  if (files.empty()) return Status::NotFound(dir + ": no *.safetensors file");
  std::sort(files.begin(), files.end());
  return Open(files);
}

Status SafetensorsSet::AddFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::NotFound(path + ": cannot open (" + std::strerror(errno) + ")");
  fds_[path] = fd;
  struct stat st;
  if (::fstat(fd, &st) != 0) return Status::DataLoss(path + ": cannot stat");
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  uint8_t len_bytes[8];
  if (size < 8) return Status::DataLoss(path + ": truncated (shorter than the header length)");
  SY_RETURN_IF_ERROR(PreadAll(fd, len_bytes, 8, 0, path));
  uint64_t len = 0;
  for (int i = 7; i >= 0; --i) len = (len << 8) | len_bytes[i];
  if (len > kMaxHeaderBytes || len > size - 8)
    return Status::DataLoss(path + ": header length " + std::to_string(len) +
                            " exceeds the file (truncated or not safetensors)");
  std::string header(len, '\0');
  SY_RETURN_IF_ERROR(PreadAll(fd, header.data(), len, 8, path));
  Json j = Json::parse(header, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return Status::InvalidArgument(path + ": header is not a JSON object");
  for (const auto& [name, entry] : j.items()) {
    if (name == "__metadata__") continue;
    SY_ASSIGN_OR_RETURN(TensorInfo t, ParseEntry(path, name, entry, 8 + len, size));
    if (tensors_.count(name))
      return Status::InvalidArgument(path + ": tensor '" + name + "' is also in " +
                                     tensors_[name].file);
    tensors_[name] = std::move(t);
  }
  return Status::OK();
}

Result<std::vector<float>> SafetensorsSet::Read(const std::string& name,
                                                const std::vector<int64_t>& shape) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) return Status::NotFound("checkpoint has no tensor '" + name + "'");
  const TensorInfo& t = it->second;
  const std::string where = t.file + ": tensor '" + name + "'";
  if (t.shape != shape)
    return Status::InvalidArgument(where + ": shape " + ShapeText(t.shape) + ", expected " +
                                   ShapeText(shape));
  const uint64_t elem = DtypeBytes(t.dtype);
  if (t.dtype != "F32" && t.dtype != "BF16" && t.dtype != "F16")
    return Status::InvalidArgument(where + ": unsupported dtype " + t.dtype +
                                   " (F32, BF16, F16 are)");
  const uint64_t n = t.bytes / elem;
  std::vector<float> out(n);
  if (t.dtype == "F32") {
    SY_RETURN_IF_ERROR(PreadAll(fds_.at(t.file), out.data(), t.bytes, t.offset, where));
    return out;
  }
  std::vector<uint16_t> raw(n);
  SY_RETURN_IF_ERROR(PreadAll(fds_.at(t.file), raw.data(), t.bytes, t.offset, where));
  const bool bf16 = t.dtype == "BF16";
  for (uint64_t i = 0; i < n; ++i) out[i] = bf16 ? Bf16ToFloat(raw[i]) : F16ToFloat(raw[i]);
  return out;
}

}  // namespace switchyard::cpu_engine
