// Token choice from a row of logits: greedy (Argmax) and seeded sampling (Sample). Both
// are deterministic: the same logits and seed give the same token on every call.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <span>

namespace switchyard::cpu_engine {

// The index of the largest logit; the lowest index among equal maxima (NaN never wins).
// -1 for an empty span.
int32_t Argmax(std::span<const float> logits);

// Samples from softmax(logits / temperature), restricted to the smallest set of most
// probable tokens whose probability reaches top_p when 0 < top_p < 1 (ties by lower
// index). The draw is splitmix64(seed): callers pass a seed mixed with the step number
// (e.g. MixSeed(request_seed, step)) to be deterministic given (seed, step).
// temperature <= 0 means greedy (Argmax).
int32_t Sample(std::span<const float> logits, double temperature, double top_p, uint64_t seed);

// A seed for step `step` of a request seeded with `seed` (splitmix64 of both).
uint64_t MixSeed(uint64_t seed, uint64_t step);

}  // namespace switchyard::cpu_engine
