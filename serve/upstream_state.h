// Proxy mode's upstreams as /v1/cluster and /metrics show them: per upstream its kind,
// capabilities, sessions, the scheduler's decisions and the adapter's actions for them,
// warm-ups, the prefix-cache hits it reported, and its request counters
// (frontends::FrontCore::upstream_figures).
//
// Thread-safety: both read the front's figures at call (scrape) time; the front must
// outlive the registered metrics.
#pragma once

#include "base/metrics.h"
#include "base/status.h"
#include "frontends/front_core.h"
#include "proto/switchyard/v1/service_state.pb.h"

namespace switchyard::serve {

// Adds one UpstreamState per upstream (none outside proxy mode).
void AddUpstreamStates(const frontends::FrontCore& core, v1::ClusterState* out);
// The switchyard_upstream_* families, labelled by upstream URL.
Status RegisterUpstreamMetrics(Metrics* m, const frontends::FrontCore* core);

}  // namespace switchyard::serve
