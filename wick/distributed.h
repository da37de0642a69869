#pragma once
// The distributed package (built unless WICK_DISTRIBUTED=OFF): communicators, the control
// channel, data parallelism, DASO and pipelines. <wick/wick.h> includes it when present.
#include <wick/distributed/comm/communicator.h>
#include <wick/distributed/control/control_channel.h>
#include <wick/distributed/control/control_client.h>
#include <wick/distributed/control/control_environment.h>
#include <wick/distributed/control/control_options.h>
#include <wick/distributed/control/environment_timeouts.h>
#include <wick/distributed/control/control_server.h>
#include <wick/distributed/data_parallel/daso.h>
#include <wick/distributed/data_parallel/daso_schedule.h>
#include <wick/distributed/data_parallel/distributed_data_parallel.h>
#include <wick/distributed/data_parallel/data_parallel_sync.h>
#include <wick/distributed/data_parallel/distributed_training.h>
#include <wick/distributed/data_parallel/sharded_sync.h>
#include <wick/distributed/comm/gloo_communicator.h>
#include <wick/distributed/comm/host_staged_communicator.h>
#include <wick/distributed/control/in_process_control.h>
#include <wick/distributed/comm/in_process_store.h>
#include <wick/distributed/control/launcher_environment.h>
#include <wick/distributed/comm/metered_communicator.h>
#include <wick/distributed/comm/nccl_communicator.h>
#include <wick/distributed/pipeline/pipeline.h>
#include <wick/distributed/process_group.h>
#include <wick/distributed/comm/store.h>
#include <wick/distributed/comm/subgroup.h>
#include <wick/distributed/comm/throttled_communicator.h>
