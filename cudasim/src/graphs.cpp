// CUDA graphs made by stream capture (streams.cpp records the nodes): instantiate, launch,
// update and destroy. A graph here is its nodes in the order they were captured, which is an
// order their dependencies allow; a launch queues them on the launch stream in that order,
// each as the operation it would have been when captured, so a kernel node re-reads its
// pointer arguments' memory (and checks it is still live) at every launch, and a copy from
// pinned memory reads what the host has put there by then, as on a GPU.
//
// Not modelled: node handles (cudaGraphGetNodes only counts), graphs built node by node,
// memory nodes, and concurrent launches of one executable graph on two streams (CUDA orders
// them; here only launches on one stream are ordered).
#include <utility>
#include <vector>

#include "internal.h"

struct CUgraph_st {
  std::vector<cudasim::GraphNode> nodes;
};

struct CUgraphExec_st {
  std::vector<cudasim::GraphNode> nodes;
};

namespace cudasim {

cudaGraph_t new_graph(std::vector<GraphNode> nodes) { return new CUgraph_st{std::move(nodes)}; }

}  // namespace cudasim

using namespace cudasim;

extern "C" {

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags) {
  if (!exec || !graph) return record_error(cudaErrorInvalidValue, "cudaGraphInstantiate: null graph or result pointer");
  if (flags != 0) return record_error(cudaErrorInvalidValue, "cudaGraphInstantiate: cudasim supports no flags");
  *exec = new CUgraphExec_st{graph->nodes};
  return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t handle) {
  if (!exec) return record_error(cudaErrorInvalidValue, "cudaGraphLaunch: null executable graph");
  if (cudaError_t e = sticky_error(current_device())) return record_error(e);
  Stream* s = find_stream(handle);
  if (!s) return record_error(cudaErrorInvalidResourceHandle, "cudaGraphLaunch: not a live stream");
  if (cudaError_t e = capture_invalidated("cudaGraphLaunch", s)) return e;
  for (const GraphNode& n : exec->nodes) enqueue_node(s, n.what, n.work, n.function);
  return cudaSuccess;
}

// Succeeds when `graph` has the executable graph's topology (here: as many nodes, each of the
// same kind and, for kernels, the same function); the executable graph then takes the new
// graph's parameters. Otherwise the executable graph is left as it was.
cudaError_t cudaGraphExecUpdate(cudaGraphExec_t exec, cudaGraph_t graph, cudaGraphExecUpdateResultInfo* info) {
  if (!exec || !graph) return record_error(cudaErrorInvalidValue, "cudaGraphExecUpdate: null graph");
  cudaGraphExecUpdateResult result = cudaGraphExecUpdateSuccess;
  if (graph->nodes.size() != exec->nodes.size()) {
    result = cudaGraphExecUpdateErrorTopologyChanged;
  } else {
    for (size_t i = 0; i < graph->nodes.size() && result == cudaGraphExecUpdateSuccess; ++i) {
      if (graph->nodes[i].what != exec->nodes[i].what) result = cudaGraphExecUpdateErrorNodeTypeChanged;
      else if (graph->nodes[i].function != exec->nodes[i].function) result = cudaGraphExecUpdateErrorFunctionChanged;
    }
  }
  if (info) *info = cudaGraphExecUpdateResultInfo{result, nullptr, nullptr};
  if (result != cudaGraphExecUpdateSuccess)
    return record_error(cudaErrorGraphExecUpdateFailure,
                        result == cudaGraphExecUpdateErrorTopologyChanged
                            ? "cudaGraphExecUpdate: the graphs have different numbers of nodes"
                            : "cudaGraphExecUpdate: a node's kind or kernel differs");
  exec->nodes = graph->nodes;
  return cudaSuccess;
}

cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* count) {
  if (!graph || !count) return record_error(cudaErrorInvalidValue, "cudaGraphGetNodes: null graph or count");
  if (nodes) return record_error(cudaErrorNotSupported, "cudaGraphGetNodes: cudasim models no node handles");
  *count = graph->nodes.size();
  return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  if (!exec) return record_error(cudaErrorInvalidValue, "cudaGraphExecDestroy: null executable graph");
  delete exec;  // launches already queued hold their own copies of the nodes' work
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  if (!graph) return record_error(cudaErrorInvalidValue, "cudaGraphDestroy: null graph");
  delete graph;
  return cudaSuccess;
}

}  // extern "C"
