// Helpers shared by the converters (not part of the public interface).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "replay/convert.h"

namespace switchyard::replay {

// Calls fn(line_number, line) for each non-blank line; stops at the first error.
Status ForEachLine(const std::string& text,
                   const std::function<Status(size_t, std::string_view)>& fn);
std::string TenantFor(size_t index, const ConvertOptions& o);
void SortByArrival(std::vector<v1::TraceRecord>* records);
int64_t SecondsToMs(double s);
// Sets the workflow's deadline and deadline labels under options.deadline (convert.h),
// from its tenant and arrival; `oracle_span_s` is the recorded span used by kOracleSpan.
// Applies options.token_scale and options.time_scale (convert.h "Scales") to a finished
// record and sets its scale labels; call before ApplyDeadline (the deadline counts from
// the scaled arrival).
// The token and time scales and the output cap (ConvertOptions) on one converted record.
void ApplyScales(const ConvertOptions& options, v1::TraceRecord* rec);
Status ApplyDeadline(double oracle_span_s, const ConvertOptions& options, v1::TraceRecord* rec);

}  // namespace switchyard::replay
