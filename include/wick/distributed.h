#pragma once
// The distributed package (built unless WICK_DISTRIBUTED=OFF): communicators, the control
// channel, data parallelism, DASO and pipelines. <wick/wick.h> includes it when present.
#include <wick/distributed/communicator.h>
#include <wick/distributed/control_channel.h>
#include <wick/distributed/control_client.h>
#include <wick/distributed/control_environment.h>
#include <wick/distributed/control_options.h>
#include <wick/distributed/control_server.h>
#include <wick/distributed/daso.h>
#include <wick/distributed/daso_schedule.h>
#include <wick/distributed/distributed_data_parallel.h>
#include <wick/distributed/data_parallel_sync.h>
#include <wick/distributed/distributed_training.h>
#include <wick/distributed/gloo_communicator.h>
#include <wick/distributed/host_staged_communicator.h>
#include <wick/distributed/in_process_control.h>
#include <wick/distributed/in_process_store.h>
#include <wick/distributed/launcher_environment.h>
#include <wick/distributed/metered_communicator.h>
#include <wick/distributed/nccl_communicator.h>
#include <wick/distributed/pipeline.h>
#include <wick/distributed/process_group.h>
#include <wick/distributed/store.h>
#include <wick/distributed/subgroup.h>
#include <wick/distributed/throttled_communicator.h>
