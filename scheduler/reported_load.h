// ReportedLoad: what a worker's engine says of its own load (scheduler kWorkerLoad events,
// executors::Generation::ReportLoad). In proxy mode, an upstream's Prometheus gauges
// (upstream/upstream_load.h); placement weighs them (docs/design.md "Upstreams").
//
// Thread-safety: a value type.
#pragma once

namespace switchyard::scheduler {

// They count every request the engine runs, the scheduler's own and other clients'.
// -1: not reported.
struct ReportedLoad {
  double running = -1;   // requests in the engine's running batch
  double waiting = -1;   // requests queued for a place in it
  double kv_usage = -1;  // share of its KV cache in use, 0..1
};

}  // namespace switchyard::scheduler
