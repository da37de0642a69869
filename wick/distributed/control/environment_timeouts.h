#pragma once
// The timeouts a job's environment may set, as the library's defaults (so a program of one's
// own honours them as wick's examples do, without reading them itself):
//   WICK_RENDEZVOUS_TIMEOUT     ControlOptions::rendezvous_timeout (else 60 s): every rank
//                               must join within it, else rank 0 fails naming the missing
//                               ranks and the others stop trying to connect
//   WICK_COLLECTIVE_TIMEOUT     the collective timeout of ProcessGroup::from_environment
//                               (else 300 s): one Gloo/NCCL collective waiting for a peer
//   WICK_DATA_PARALLEL_TIMEOUT  DataParallelOptions::timeout (else 600 s): the data-parallel
//                               loop waiting for the driver's next command or the replies
// Values are seconds (a decimal number, e.g. 1 or 0.5, rounded up to whole milliseconds),
// positive and at most 1e8. A value set in code wins over the variable; an empty variable
// is unset; anything else throws wick::Error naming the variable and its value.
#include <functional>

#include <wick/distributed/comm/store.h>

namespace wick::distributed {

inline constexpr Milliseconds kDefaultRendezvousTimeout{60'000};
inline constexpr Milliseconds kDefaultCollectiveTimeout{300'000};
inline constexpr Milliseconds kDefaultDataParallelTimeout{600'000};

// `variable` read as above, or `fallback` when it is unset or empty.
Milliseconds timeout_from_environment(const char* variable, Milliseconds fallback);
// The same through `lookup` (returns nullptr for unset), for tests.
Milliseconds timeout_from_environment(const char* variable, Milliseconds fallback,
                                      const std::function<const char*(const char*)>& lookup);

}  // namespace wick::distributed
