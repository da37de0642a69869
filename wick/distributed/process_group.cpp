#include <wick/distributed/process_group.h>

#include <cstdlib>

#include <wick/distributed/control/launcher_environment.h>

namespace wick::distributed {

ProcessGroup ProcessGroup::from_environment(Device device, ControlOptions options, Milliseconds timeout) {
  ProcessGroup group;
  group.timeout = timeout;
  const EnvironmentLookup env = with_launcher_names([](const char* name) -> const char* { return std::getenv(name); });
  const char* world = env("WORLD_SIZE");
  if (world == nullptr || std::string(world) == "1") return group;
  group.config = wick::distributed::from_environment();
  if (group.config.world_size == 1) return group;
  if (group.is_driver())
    group.driver = start_driver_channel(group.config, options);
  else
    group.follower = connect_follower_channel(group.config, options);
  Store& store = group.driver ? group.driver->store() : group.follower->store();
  group.comm = make_communicator(store, group.config.rank, group.config.world_size, device, timeout);
  return group;
}

LoopState train_in_group(ProcessGroup& group, SupervisedModel& model, Optimizer& optimizer, BatchSource& train,
                         BatchSource* validation, LoopOptions options, DataParallelOptions parallel) {
  if (!group.distributed()) return fit(model, optimizer, train, validation, std::move(options));
  if (!parallel.group_timeout) parallel.group_timeout = group.timeout;
  if (group.is_driver())
    return drive_distributed_training(*group.driver, *group.comm, model, optimizer, train, validation,
                                      std::move(options), parallel);
  follow_distributed_training(*group.follower, *group.comm, model, &optimizer, train, validation, parallel);
  return {};
}

}  // namespace wick::distributed
