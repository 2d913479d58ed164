// Safetensors checkpoints: an 8-byte little-endian header length, a JSON header
// {name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}}, then the
// data (offsets relative to its start). SafetensorsSet opens one or several shard files,
// checks every header entry against the file (offsets inside the data, byte count equal
// to the shape's, no name in two shards) and reads tensors as fp32, converting BF16 and
// F16. Errors name the file and the tensor: a truncated file, offsets out of range, a
// missing tensor, a wrong shape, an unsupported dtype.
//
// Thread-safety: Open builds the set; Read is const and may run on several threads (pread).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/status.h"
#include "cpu_engine/dtype.h"

namespace switchyard::cpu_engine {

struct TensorInfo {
  std::string file;  // the shard holding it
  std::string dtype;
  std::vector<int64_t> shape;
  uint64_t offset = 0;  // absolute byte offset in the file
  uint64_t bytes = 0;
};

class SafetensorsSet {
 public:
  ~SafetensorsSet();
  // Opens every file (in order); InvalidArgument or DataLoss naming the file on a bad one.
  static Result<std::unique_ptr<SafetensorsSet>> Open(const std::vector<std::string>& files);
  // Every *.safetensors file in `dir`, sorted by name. NotFound when there is none.
  static Result<std::unique_ptr<SafetensorsSet>> OpenDir(const std::string& dir);

  bool Has(const std::string& name) const { return tensors_.count(name) != 0; }
  const std::map<std::string, TensorInfo>& tensors() const { return tensors_; }
  // The tensor as fp32, row-major. NotFound naming the tensor if absent; InvalidArgument
  // naming file and tensor if its shape differs from `shape` or its dtype is unsupported.
  Result<std::vector<float>> Read(const std::string& name, const std::vector<int64_t>& shape) const;

 private:
  SafetensorsSet() = default;
  Status AddFile(const std::string& path);

  std::map<std::string, TensorInfo> tensors_;
  std::map<std::string, int> fds_;  // file -> open descriptor
};

// Bit conversions (round-trip exact for every f16 value; Bf16ToFloat is in dtype.h).
float F16ToFloat(uint16_t v);

}  // namespace switchyard::cpu_engine
