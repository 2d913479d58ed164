// What the machine itself charges for a request's basic move, measured by bench_api in the
// same run as the service's figures so that they can be read against it.
//
//   LoopbackPingPong   200-byte messages back and forth over loopback TCP between two
//                      threads pinned to two given CPUs: the mean round trip and the CPU
//                      both threads used per round trip. With both on one CPU, a wake-up is
//                      a context switch; across CPUs it is also an inter-processor
//                      interrupt, and on a VM whose idle vCPUs halt, a host-side wake-up
//                      of the other vCPU. A request makes two wake-ups (the client's send
//                      wakes a server thread, the answer wakes the client), each across CPUs
//                      when the two threads sit on different ones.
#pragma once

namespace switchyard::bench {

struct PingPong {
  double round_trip_us = 0;  // wall time per round trip
  double cpu_us = 0;         // both threads' CPU time per round trip
};

// `round_trips` exchanges between a thread on `cpu_a` and one on `cpu_b`. Returns false
// (and leaves *out alone) when a CPU cannot be used or a socket call fails.
bool LoopbackPingPong(int cpu_a, int cpu_b, int round_trips, PingPong* out);

}  // namespace switchyard::bench
