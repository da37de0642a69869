#pragma once
// Collate functions: a list of examples to one batch (an Example whose fields have a new
// dim 0 of size B).
#include <functional>
#include <string>
#include <vector>

#include <wick/data/example.h>

namespace wick {

using Collate = std::function<Example(std::vector<Example> examples)>;

// Stacks each field along a new dim 0 (torch's default_collate for tensors and numbers).
// Every example must have the same field names in the same order, and each field the same
// shape and dtype in every example; throws naming the field and the examples that differ.
Example stack_collate(std::vector<Example> examples);

// Like stack_collate, but the fields in `fields` (every field with at least one dim when
// empty) may differ in their first dim: they are padded at the end to the longest with
// `pad_value`, and a field "<name>_length" (int64 [B], each example's first dim) follows
// each of them. Their other dims must agree.
Collate pad_collate(double pad_value = 0, std::vector<std::string> fields = {});

}  // namespace wick
