#include "net_budget/link_calibrate/calibrate.h"

#include <chrono>
#include <cstring>

#include "proto/json.h"

namespace switchyard::net_budget {

Result<uint64_t> ParseByteSize(const std::string& text) {
  size_t digits = text.find_first_not_of("0123456789");
  bool unit_last = digits == std::string::npos || digits + 1 == text.size();
  if (text.empty() || digits == 0 || !unit_last || text.size() > 18) {
    return Status::InvalidArgument("bad byte size '" + text + "' (want e.g. 4096, 4K, 64M, 1G)");
  }
  uint64_t v = std::stoull(text.substr(0, digits));
  if (digits == std::string::npos) return v;
  switch (text[digits]) {
    case 'K':
    case 'k':
      return v << 10;
    case 'M':
    case 'm':
      return v << 20;
    case 'G':
    case 'g':
      return v << 30;
    default:
      return Status::InvalidArgument("bad byte size '" + text + "' (unit must be K, M or G)");
  }
}

std::vector<uint64_t> SweepSizes(uint64_t min_bytes, uint64_t max_bytes) {
  std::vector<uint64_t> out;
  if (min_bytes == 0 || max_bytes < min_bytes) return out;
  for (uint64_t s = min_bytes; s < max_bytes; s *= 4) {
    out.push_back(s);
    if (s > max_bytes / 4) break;
  }
  if (out.empty() || out.back() != max_bytes) out.push_back(max_bytes);
  return out;
}

Result<LinkFit> RunCalibration(const CalibrateOptions& options,
                               const std::function<void(const SizePercentiles&)>& on_size) {
  std::vector<uint64_t> sizes = SweepSizes(options.min_bytes, options.max_bytes);
  if (sizes.size() < 2) {
    return Status::InvalidArgument("calibrate: need --min < --max (got " +
                                   std::to_string(options.min_bytes) + ", " +
                                   std::to_string(options.max_bytes) + ")");
  }
  if (options.iters == 0) return Status::InvalidArgument("calibrate: --iters must be > 0");
  kv_store::KvStoreClientOptions co;
  co.transport = options.transport;
  co.transport_config = options.transport_config;
  co.ack_timeout = std::chrono::seconds(60);
  SY_ASSIGN_OR_RETURN(auto client, kv_store::KvStoreClient::Connect(options.address, co));
  std::unique_ptr<uint8_t[]> payload(new uint8_t[sizes.back()]);
  std::memset(payload.get(), 0x5a, sizes.back());
  std::vector<Sample> all;
  for (uint64_t size : sizes) {
    std::vector<Sample> mine;
    uint32_t iters =
        size >= (64ull << 20) ? std::max<uint32_t>(3, options.iters / 4) : options.iters;
    for (uint32_t i = 0; i < options.warmup + iters; ++i) {
      SY_ASSIGN_OR_RETURN(Duration d, client->Probe(payload.get(), size));
      if (i >= options.warmup) mine.push_back({size, ToSeconds(d)});
    }
    if (on_size) {
      auto p = PercentilesBySize(mine);
      if (p.ok() && !p->empty()) on_size(p->front());
    }
    all.insert(all.end(), mine.begin(), mine.end());
  }
  return FitAlphaBeta(all);
}

Result<std::string> CalibrationJson(const LinkFit& fit, const std::string& label) {
  v1::LinkCalibration proto = ToProto(fit);
  proto.set_transport(label);
  proto.set_calibrated_at_ms(std::chrono::duration_cast<std::chrono::milliseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count());
  return proto::ToJson(proto);
}

}  // namespace switchyard::net_budget
