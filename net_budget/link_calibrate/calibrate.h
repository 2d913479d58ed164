// Link calibration: measures a link and fits its alpha-beta model (net_budget/link_model.h).
// A message-size sweep through the real transport against a KV store (a `switchyard
// worker`), reduced to P50/P95/P99 per size and an alpha-beta fit that the planner reads
// as a v1::LinkCalibration. Its own library beside net_budget (which does no I/O), as it
// needs a transport and the KV-store client.
//
// Each sample is one probe (kv_store/kv_store_protocol.h kProbeHeader + payload,
// sent by a KvStoreClient and acked by the store after the payload is received completely,
// without commit), timed from post to ack; so alpha includes one control round trip, as
// every real put pays it.
//
// Thread-safety: RunCalibration is a blocking call; it uses its own connection.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "kv_store/kv_store_client.h"
#include "net_budget/link_model.h"

namespace switchyard::net_budget {

struct CalibrateOptions {
  std::string address;  // "HOST:PORT" of a KV store (`switchyard worker`)
  std::string transport = "ucx";
  transport::TransportConfig transport_config;
  uint64_t min_bytes = 4096;
  uint64_t max_bytes = 256ull << 20;
  uint32_t iters = 10;  // timed probes per size (large sizes: at least 3)
  uint32_t warmup = 2;  // untimed probes per size
};

// "4096", "4K", "64M", "1G" (binary units) -> bytes; InvalidArgument naming the text.
Result<uint64_t> ParseByteSize(const std::string& text);

// Sizes of the sweep: powers of 4 from min to max, max always included.
std::vector<uint64_t> SweepSizes(uint64_t min_bytes, uint64_t max_bytes);

// Runs the sweep; `on_size` (optional) sees each size's percentiles as they are measured.
Result<LinkFit> RunCalibration(
    const CalibrateOptions& options,
    const std::function<void(const SizePercentiles&)>& on_size = nullptr);

// The stored form: a v1::LinkCalibration in JSON, with the transport label and time.
Result<std::string> CalibrationJson(const LinkFit& fit, const std::string& label);

}  // namespace switchyard::net_budget
