// Names shared by the fronts' tests (not a test file itself).
#pragma once

namespace switchyard::testing {

// The model the fronts' test servers serve: the CPU engine's configs/models/tiny-llama-2l.
inline constexpr char kModel[] = "tiny-llama-2l";

}  // namespace switchyard::testing
