#pragma once
// InProcessControl: the control channel for ranks that are threads of one process, with the
// same behaviour as ControlServer/ControlClient: commands in order, gather with a timeout,
// a shared store, and an endpoint that is destroyed (its thread finished or threw) counts
// as a disconnected peer, so the other side's next call throws naming the rank.
//
//   InProcessControl control(world_size);
//   std::unique_ptr<DriverChannel> driver = control.driver();            // for rank 0's thread
//   std::unique_ptr<FollowerChannel> follower = control.follower(rank);  // one per other thread
//
// The endpoints share state with the hub, so they may outlive the InProcessControl object.
#include <memory>

#include <wick/distributed/control/control_channel.h>

namespace wick::distributed {

class InProcessControl {
 public:
  explicit InProcessControl(int world_size);
  ~InProcessControl();
  InProcessControl(const InProcessControl&) = delete;
  InProcessControl& operator=(const InProcessControl&) = delete;

  int world_size() const;
  // Each endpoint can be taken once; taking it twice throws wick::Error.
  std::unique_ptr<DriverChannel> driver();
  std::unique_ptr<FollowerChannel> follower(int rank);
  // Rank r's end, whichever it is (the driver's for rank 0), for a thread that runs the
  // same code as the others; taken once like the two above.
  struct Endpoint {
    std::unique_ptr<DriverChannel> driver;
    std::unique_ptr<FollowerChannel> follower;
    ControlEndpoint get() const { return {driver.get(), follower.get()}; }
  };
  Endpoint endpoint(int rank);
  Store& store();

  struct State;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace wick::distributed
