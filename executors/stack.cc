#include "executors/stack.h"

#include "net_budget/topology.h"

namespace switchyard::executors {

Result<Stack> BuildStack(StackSpec spec, EventLoop* loop) {
  Stack s;
  auto policy = scheduler::CreatePolicy(spec.policy);
  if (!policy.ok())
    return Status::InvalidArgument("scheduler policy: " + policy.status().message());
  s.policy = std::move(*policy);
  if (s.policy->UsesForesight() && spec.core.foresight == nullptr) {
    return Status::InvalidArgument(
        "scheduler policy: " + std::string(s.policy->name()) +
        " needs the recorded future of a replayed trace (switchyard replay or sweep); it "
        "cannot schedule live traffic");
  }
  if (!spec.cost) return Status::InvalidArgument("a stack needs the default model's cost model");
  SY_ASSIGN_OR_RETURN(v1::Topology topo_proto, scheduler::BuildClusterTopology(spec.shape));
  if (spec.edit_topology) SY_RETURN_IF_ERROR(spec.edit_topology(&topo_proto));
  SY_ASSIGN_OR_RETURN(net_budget::Topology topo, net_budget::Topology::FromProto(topo_proto));
  s.device_of = spec.device_of ? spec.device_of : scheduler::ClusterLocationMap(spec.shape);
  SY_ASSIGN_OR_RETURN(s.env,
                      scheduler::NetBudgetEnvironment::Create(std::move(topo), s.device_of, loop));
  if (spec.core.admission_watermark <= 0)
    spec.core.admission_watermark = kDefaultAdmissionWatermark;
  s.core = std::make_unique<scheduler::Core>(spec.core, s.policy.get(), s.env.get(), s.env.get(),
                                             spec.cost);
  return s;
}

Runtime* Stack::StartRuntime(EventLoop* loop, std::vector<Engine*> engines, ToolWaiter* tools,
                             KvMover* mover) {
  runtime = std::make_unique<Runtime>(loop, core.get(), std::move(engines), tools, mover);
  return runtime.get();
}

}  // namespace switchyard::executors
